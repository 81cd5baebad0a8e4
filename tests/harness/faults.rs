//! A MongoDB server a fault test can break: [`DiskMongo`], an nx-27017 of a test's own whose
//! databases live in SQLite files, so that it can be killed (SIGKILL, by PID) and restarted on the
//! same port with its committed data; a transaction open at the kill is rolled back by SQLite when
//! the files are opened again.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use sophia_local::servers::{ensure_tools_installed, state_dir};
use sophia_platform::mongo::{Mongo, MongoSettings};

use crate::mongo::{mongo_at, mongo_settings};
use crate::wait::blocking_until;

/// nx-27017 with its data in files under `.local/faults/<name>`: survives a kill and a restart.
#[derive(Debug)]
pub struct DiskMongo {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    _stdin: Option<ChildStdin>,
}

impl DiskMongo {
    /// Starts it on 127.0.0.1:`port` with a fresh data directory.
    pub fn start(port: u16) -> Self {
        ensure_tools_installed().expect("nx-27017 is installed (scripts/setup-tools)");
        let dir = state_dir().join("faults").join(crate::unique("nx"));
        std::fs::create_dir_all(&dir).expect("data directory");
        let mut server = Self { port, dir, child: None, _stdin: None };
        server.restart();
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the process again on the same port and data directory (after [`kill`](Self::kill)).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.join("server.log")).expect("log file");
        let mut child = Command::new(state_dir().join("venv/bin/python"))
            .arg(sophia_local::servers::repo_root().join("scripts/tools/nx_launcher.py"))
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .arg("--pid-file")
            .arg(self.dir.join("nx.pid"))
            .args(["--host", "127.0.0.1", "-p", &self.port.to_string()])
            .env("SOPHIA_EXIT_ON_STDIN_EOF", "1")
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("nx-27017 starts");
        self._stdin = child.stdin.take();
        self.child = Some(child);
        let what = format!("nx-27017 listens on {} (see {})", self.port, self.dir.display());
        blocking_until(&what, Duration::from_secs(30), Duration::from_millis(50), || self.accepts());
    }

    /// SIGKILL by PID (no shutdown, no flush: a crash), and waits until the port refuses.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self._stdin = None;
        blocking_until(
            &format!("port {} refuses", self.port),
            Duration::from_secs(30),
            Duration::from_millis(20),
            || !self.accepts(),
        );
    }

    fn accepts(&self) -> bool {
        TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], self.port)), Duration::from_millis(200)).is_ok()
    }

    /// A handle on database `database` with a short server-selection timeout (an unreachable
    /// server fails fast).
    pub async fn mongo(&self, database: &str) -> Mongo {
        mongo_at(&self.uri(), database).await
    }

    pub fn settings(&self, database: &str) -> MongoSettings {
        mongo_settings(&self.uri(), database)
    }
}

impl Drop for DiskMongo {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
