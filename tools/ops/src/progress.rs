//! Progress bars for long operations (indicatif, on stderr). Hidden with `--json`, when stderr is
//! not a terminal, and in library use unless asked for.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether progress may be drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// Never draw (library callers, tests, `--json`).
    #[default]
    Hidden,
    /// Draw on stderr if it is a terminal.
    Terminal,
}

impl ProgressMode {
    pub fn for_cli(json: bool) -> Self {
        if json || !std::io::stderr().is_terminal() { Self::Hidden } else { Self::Terminal }
    }

    /// A bar of `len` steps (a spinner when the length is unknown).
    pub fn bar(self, len: Option<u64>, message: impl Into<String>) -> ProgressBar {
        let bar = match len {
            Some(len) => ProgressBar::with_draw_target(Some(len), self.target()).with_style(
                ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} ({elapsed})")
                    .expect("valid template")
                    .progress_chars("=> "),
            ),
            None => ProgressBar::with_draw_target(None, self.target())
                .with_style(ProgressStyle::with_template("{spinner} {msg} {pos} ({elapsed})").expect("valid template")),
        };
        bar.set_message(message.into());
        if self == Self::Terminal {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        bar
    }

    fn target(self) -> ProgressDrawTarget {
        match self {
            Self::Hidden => ProgressDrawTarget::hidden(),
            Self::Terminal => ProgressDrawTarget::stderr(),
        }
    }
}
