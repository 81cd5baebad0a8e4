//! Local stand-ins for the managed services, started as child processes bound to 127.0.0.1:
//! fauxqs (SQS) and nx-27017 (MongoDB wire protocol). Used by the local runner and by the
//! integration tests. Each server is stopped by its PID when its handle drops, and also exits by
//! itself when its parent dies (its stdin pipe closes), so nothing outlives a killed test run.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{tool} is not installed ({path} missing) and `scripts/setup-tools` failed: {reason}")]
    NotInstalled { tool: &'static str, path: String, reason: String },
    #[error("could not start {name}: {source}")]
    Spawn { name: &'static str, source: std::io::Error },
    #[error("{name} did not accept connections on 127.0.0.1:{port} within {waited:?}; log tail:\n{log_tail}")]
    NotReady { name: &'static str, port: u16, waited: Duration, log_tail: String },
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// The variable that names the repository explicitly (scripts set it); without it the checkout is
/// found from the current directory.
pub const SOPHIA_REPO_ROOT: &str = sophia_platform::env::declared("SOPHIA_REPO_ROOT");

/// Where the repository (and so its pinned tools and `.local/`) lives: `SOPHIA_REPO_ROOT`, else the
/// checkout the current directory is in (see [`find_repo_root`]). Never the checkout the binary
/// was built in: a binary copied or built elsewhere keeps its files where it is run.
pub fn try_repo_root() -> Result<PathBuf, String> {
    if let Some(root) = sophia_platform::env::var_os(SOPHIA_REPO_ROOT).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(root));
    }
    let cwd = std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    find_repo_root(&cwd).ok_or_else(|| {
        format!(
            "{} is not inside a Sophia checkout (no directory above it holds the workspace Cargo.toml with tools/local): run from the repository, or set {SOPHIA_REPO_ROOT}",
            cwd.display()
        )
    })
}

/// [`try_repo_root`], for callers that cannot go on without it (the servers, the tests).
pub fn repo_root() -> PathBuf {
    try_repo_root().unwrap_or_else(|e| panic!("{e}"))
}

/// The nearest directory at or above `start` that is a Sophia checkout: a `Cargo.toml` declaring a
/// `[workspace]`, next to `tools/local/Cargo.toml` (a `.git` alone could be any repository).
pub fn find_repo_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find(|dir| is_checkout(dir)).map(Path::to_path_buf)
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("tools/local/Cargo.toml").is_file()
        && std::fs::read_to_string(dir.join("Cargo.toml"))
            .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
}

/// The local state directory (`.local/` in the repository, gitignored).
pub fn state_dir() -> PathBuf {
    repo_root().join(".local")
}

fn venv_python() -> PathBuf {
    state_dir().join("venv/bin/python")
}

fn fauxqs_launcher() -> PathBuf {
    repo_root().join("scripts/tools/fauxqs-launcher.mjs")
}

/// Runs `scripts/setup-tools` once when the pinned servers are missing, under a file lock so
/// that concurrent test processes do not install twice.
pub fn ensure_tools_installed() -> Result<(), ServerError> {
    let installed =
        || venv_python().exists() && repo_root().join("scripts/tools/node_modules/fauxqs/package.json").exists();
    if installed() {
        return Ok(());
    }
    std::fs::create_dir_all(state_dir())?;
    let lock = File::create(state_dir().join("setup-tools.lock"))?;
    lock.lock()?;
    if installed() {
        return Ok(());
    }
    let out = Command::new("bash").arg(repo_root().join("scripts/setup-tools")).output()?;
    if !out.status.success() || !installed() {
        return Err(ServerError::NotInstalled {
            tool: "nx-27017 / fauxqs",
            path: venv_python().display().to_string(),
            reason: String::from_utf8_lossy(&out.stderr)
                .chars()
                .rev()
                .take(2000)
                .collect::<String>()
                .chars()
                .rev()
                .collect(),
        });
    }
    Ok(())
}

/// A free TCP port on 127.0.0.1 (bound and released; the kernel does not hand it out again
/// at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

/// A running local server. Dropping it stops the process by PID.
#[derive(Debug)]
pub struct LocalServer {
    name: &'static str,
    port: u16,
    child: Child,
    // Held open: when this process dies the pipe closes and the server exits by itself.
    _stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl LocalServer {
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn log_path(&self) -> &Path {
        &self.log
    }
    /// `http://127.0.0.1:<port>` for fauxqs; `mongodb://127.0.0.1:<port>/` for nx-27017.
    pub fn url(&self) -> String {
        match self.name {
            "nx-27017" => format!("mongodb://127.0.0.1:{}/", self.port),
            _ => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// Stops the server now (SIGTERM, then SIGKILL after a grace period).
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn spawn(name: &'static str, port: u16, mut cmd: Command) -> Result<Self, ServerError> {
        let logs = state_dir().join("logs");
        std::fs::create_dir_all(&logs)?;
        let log = logs.join(format!("{name}-{port}.log"));
        let out = OpenOptions::new().create(true).truncate(true).write(true).open(&log)?;
        cmd.env("SOPHIA_EXIT_ON_STDIN_EOF", "1")
            .stdin(Stdio::piped())
            .stdout(out.try_clone()?)
            .stderr(out)
            .current_dir(state_dir());
        let mut child = cmd.spawn().map_err(|source| ServerError::Spawn { name, source })?;
        let stdin = child.stdin.take();
        let mut server = LocalServer { name, port, child, _stdin: stdin, log };
        server.wait_ready(Duration::from_secs(30))?;
        Ok(server)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), ServerError> {
        let started = Instant::now();
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            let exited = !self.is_running();
            if exited || started.elapsed() > limit {
                let mut tail = String::new();
                if let Ok(mut f) = File::open(&self.log) {
                    let _ = f.read_to_string(&mut tail);
                }
                let tail: String =
                    tail.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
                self.stop();
                return Err(ServerError::NotReady {
                    name: self.name,
                    port: self.port,
                    waited: started.elapsed(),
                    log_tail: tail,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts fauxqs on 127.0.0.1:`port`.
pub fn start_fauxqs(port: u16) -> Result<LocalServer, ServerError> {
    ensure_tools_installed()?;
    let mut cmd = Command::new("node");
    cmd.arg(fauxqs_launcher()).arg(port.to_string());
    LocalServer::spawn("fauxqs", port, cmd)
}

/// Starts nx-27017 on 127.0.0.1:`port` with in-memory databases (one SQLite database per
/// MongoDB database, so tests that use their own database are isolated).
pub fn start_nx_mongo(port: u16) -> Result<LocalServer, ServerError> {
    ensure_tools_installed()?;
    // nx-27017 refuses to start while its PID file names a live process: one file per instance.
    let pid_dir = state_dir().join("run");
    std::fs::create_dir_all(&pid_dir)?;
    let mut cmd = Command::new(venv_python());
    cmd.arg(repo_root().join("scripts/tools/nx_launcher.py"))
        .args(["--data-dir", "memory", "--host", "127.0.0.1", "--pid-file"])
        .arg(pid_dir.join(format!("nx-27017-{port}.pid")))
        .arg("-p")
        .arg(port.to_string());
    LocalServer::spawn("nx-27017", port, cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sophia-root-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tools/local")).unwrap();
        std::fs::create_dir_all(dir.join("docs/deep/er")).unwrap();
        std::fs::write(dir.join("tools/local/Cargo.toml"), "[package]\nname = \"sophia-local\"\n").unwrap();
        dir
    }

    #[test]
    fn the_checkout_is_the_nearest_workspace_with_the_local_crate_above_the_directory() {
        let dir = tree("found");
        std::fs::write(dir.join("Cargo.toml"), "# comment\n[workspace]\nmembers = []\n").unwrap();
        // A member's own Cargo.toml on the way up is not the checkout.
        assert_eq!(find_repo_root(&dir.join("tools/local")), Some(dir.clone()));
        assert_eq!(find_repo_root(&dir.join("docs/deep/er")), Some(dir.clone()));
        assert_eq!(find_repo_root(&dir), Some(dir.clone()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_outside_any_checkout_has_none() {
        let dir = tree("none");
        // A Cargo.toml without [workspace] (or a workspace without tools/local) is not one.
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"other\"\n").unwrap();
        assert_eq!(find_repo_root(&dir.join("docs/deep/er")), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
