//! Where the CLI's configuration comes from: the process environment, optionally completed by an
//! env file (`KEY=VALUE` lines, as the local runner writes `.local/sophia.env`).
//!
//! Real environment variables always win over the file. The default file is only read when the
//! environment names no endpoint, queue or database of its own, so a shell configured for a real
//! stage is never silently pointed at the local pipeline. The process environment is never
//! modified: every lookup goes through [`Env::get`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sophia_platform::config;

/// The env file the local runner writes, relative to the working directory.
pub const DEFAULT_ENV_FILE: &str = ".local/sophia.env";
pub use sophia_platform::sqs::{AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS};

/// Variables that show the shell is already configured for some deployment: the endpoints,
/// MongoDB, and every declared queue's URL and DLQ URL variable.
fn targeting_variables() -> Vec<String> {
    let mut names: Vec<String> =
        [AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, config::MONGODB_URI].into_iter().map(str::to_owned).collect();
    for q in &sophia_declarations::Declaration::embedded().queues {
        names.push(q.queue_url_env.clone());
        names.push(q.dlq_url_env());
    }
    names
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("cannot read env file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("env file {path}, line {line}: expected KEY=VALUE, got {text:?}")]
    Syntax { path: String, line: usize, text: String },
}

/// The process environment overlaid on an optional env file. `Debug` lists the file's keys,
/// never its values (`MONGODB_URI` holds a password).
#[derive(Clone, Default)]
pub struct Env {
    file: Option<PathBuf>,
    values: BTreeMap<String, String>,
    /// For tests: ignore the process environment entirely.
    isolated: bool,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("file", &self.file)
            .field("keys", &self.values.keys().collect::<Vec<_>>())
            .field("isolated", &self.isolated)
            .finish()
    }
}

impl Env {
    /// The process environment, completed by `explicit` (an error if unreadable) or, when no
    /// explicit file is given and `use_default` is set, by [`DEFAULT_ENV_FILE`] if it exists and
    /// the environment targets nothing itself.
    pub fn load(explicit: Option<&Path>, use_default: bool) -> Result<Self, EnvError> {
        let mut env = Self::default();
        match explicit {
            Some(path) => env.read_file(path)?,
            None if use_default => {
                let path = Path::new(DEFAULT_ENV_FILE);
                let targeted = targeting_variables()
                    .iter()
                    .any(|v| sophia_platform::env::var(v).is_some_and(|value| !value.trim().is_empty()));
                if path.is_file() && !targeted {
                    env.read_file(path)?;
                }
            }
            None => {}
        }
        Ok(env)
    }

    /// Only these values, no process environment (for tests and library callers).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        let values = pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        Self { file: None, values, isolated: true }
    }

    /// The env file that was read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// A set, non-blank value: the process environment first, then the file.
    pub fn get(&self, name: &str) -> Option<String> {
        let real = if self.isolated { None } else { sophia_platform::env::var(name) };
        real.or_else(|| self.values.get(name).cloned()).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// Whether `name` came from the file rather than the process environment.
    pub fn from_file(&self, name: &str) -> bool {
        let real = !self.isolated && sophia_platform::env::var(name).is_some_and(|v| !v.trim().is_empty());
        !real && self.values.contains_key(name)
    }

    fn read_file(&mut self, path: &Path) -> Result<(), EnvError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| EnvError::Read { path: shown.clone(), source })?;
        self.values = parse_env_file(&text).map_err(|(line, text)| EnvError::Syntax { path: shown, line, text })?;
        self.file = Some(path.to_path_buf());
        Ok(())
    }
}

/// `KEY=VALUE` lines; blank lines and `#` comments are skipped; an optional `export ` prefix and
/// one pair of matching quotes around the value are removed. Errors carry the 1-based line.
pub fn parse_env_file(text: &str) -> Result<BTreeMap<String, String>, (usize, String)> {
    let mut values = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err((i + 1, raw.to_owned()));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err((i + 1, raw.to_owned()));
        }
        let value = value.trim();
        let unquoted = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(open, close)| value.strip_prefix(*open).and_then(|v| v.strip_suffix(*close)))
            .unwrap_or(value);
        values.insert(key.to_owned(), unquoted.to_owned());
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_parse_with_comments_exports_and_quotes() {
        let text = "# written by the runner\n\nAWS_ENDPOINT_URL_SQS=http://127.0.0.1:4566\nexport MONGODB_DATABASE=\"sophia\"\nX='a=b'\n";
        let v = parse_env_file(text).unwrap();
        assert_eq!(v["AWS_ENDPOINT_URL_SQS"], "http://127.0.0.1:4566");
        assert_eq!(v["MONGODB_DATABASE"], "sophia");
        assert_eq!(v["X"], "a=b");
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        assert_eq!(parse_env_file("A=1\nnot a pair\n").unwrap_err().0, 2);
        assert_eq!(parse_env_file("BAD KEY=1\n").unwrap_err().0, 1);
    }

    #[test]
    fn debug_shows_keys_never_values() {
        let env = Env::from_pairs([("MONGODB_URI", "mongodb://sophia:hunter2@h/")]);
        let text = format!("{env:?}");
        assert!(text.contains("MONGODB_URI") && !text.contains("hunter2"), "{text}");
    }

    #[test]
    fn isolated_env_reads_only_its_pairs_and_ignores_blanks() {
        let env = Env::from_pairs([("PATH", "x"), ("EMPTY", "  ")]);
        assert_eq!(env.get("PATH").as_deref(), Some("x"));
        assert_eq!(env.get("EMPTY"), None);
        assert_eq!(env.get("HOME"), None);
        assert!(env.from_file("PATH"));
    }
}
