//! The progress bars on stderr (publishing, then settling and reporting); hidden with
//! `--no-progress`.

/// A bar of `len` steps labelled `label` on stderr, or a hidden one.
pub(super) fn progress_bar(visible: bool, len: u64, label: &str) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>17} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(label.to_owned());
    bar
}
