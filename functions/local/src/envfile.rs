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

/// Writes the variables, sorted, atomically (write then rename), readable only by the owner.
pub fn write(path: &Path, vars: &BTreeMap<String, String>) -> std::io::Result<()> {
    let mut text = String::from("# Written by the Sophia local runner; removed when it stops.\n");
    for (k, v) in vars {
        text.push_str(&format!("{k}={v}\n"));
    }
    let tmp = path.with_extension("env.tmp");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&tmp, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(tmp, path)
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
}
