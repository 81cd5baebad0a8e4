//! The runner's endpoints as a machine-readable env file (`.local/sophia.env`): `KEY=VALUE`
//! lines that the operator CLI, the demo and a shell (`set -a; . .local/sophia.env`) can read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "sophia.env";

/// The default location: `.local/sophia.env` in the repository (see
/// [`crate::servers::try_repo_root`]).
pub fn default_path() -> PathBuf {
    crate::servers::state_dir().join(FILE_NAME)
}

/// [`default_path`], or why there is none (not inside a checkout, no `SOPHIA_REPO_ROOT`).
pub fn try_default_path() -> Result<PathBuf, String> {
    crate::servers::try_repo_root().map(|root| root.join(".local").join(FILE_NAME))
}

/// Writes the variables, sorted, atomically (write then rename), readable only by the owner from
/// the moment the file exists: it holds the control channel's token and the offline endpoint's
/// fault token, so it is created with mode 0600 (never written first and made private after), and
/// a temporary file left by an earlier run is removed rather than reused with its old mode.
pub fn write(path: &Path, vars: &BTreeMap<String, String>) -> std::io::Result<()> {
    use std::io::Write;
    let mut text = String::from("# Written by the Sophia local runner; removed when it stops.\n");
    for (k, v) in vars {
        text.push_str(&format!("{k}={v}\n"));
    }
    let tmp = path.with_extension("env.tmp");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = create_private(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(tmp, path)
}

/// A new, empty file at `path` with mode 0600 (`open(2)` with `O_CREAT | O_EXCL` and that mode: the
/// umask can only narrow it); whatever was at `path` is removed first, never opened.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Reads `KEY=VALUE` lines (comments and blank lines ignored).
pub fn read(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let dir = std::env::temp_dir().join(format!("sophia-envfile-{}", std::process::id()));
        let path = dir.join(FILE_NAME);
        let vars = BTreeMap::from([
            ("A".to_owned(), "1".to_owned()),
            ("MONGODB_URI".to_owned(), "mongodb://127.0.0.1:1/".to_owned()),
        ]);
        write(&path, &vars).unwrap();
        assert_eq!(read(&path).unwrap(), vars);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The file holds tokens: 0600 from its creation, never a wider mode in between.
    #[cfg(unix)]
    #[test]
    fn the_file_is_created_private_and_a_stale_temporary_file_is_not_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sophia-envfile-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        // A temporary file left world-readable (an earlier run killed mid-write, or planted): it
        // must not be opened and written with its mode.
        let tmp = path.with_extension("env.tmp");
        std::fs::write(&tmp, "stale").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Private before a byte is written.
        let file = create_private(&tmp).unwrap();
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(file.metadata().unwrap().len(), 0, "a new file, not the stale one");
        drop(file);
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        let vars = BTreeMap::from([("SOPHIA_LOCAL_CONTROL_TOKEN".to_owned(), "t0ken".to_owned())]);
        write(&path, &vars).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        assert!(!tmp.exists());
        assert_eq!(read(&path).unwrap(), vars);
        // A rewrite keeps it private.
        write(&path, &vars).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
