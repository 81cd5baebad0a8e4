//! The JSON log capture of the test process.

use std::sync::Arc;

/// JSON log lines of this test process (as the Lambda binaries log them: one object per event,
/// flattened, with the current span's fields under `span`). One global subscriber, installed on
/// first use: tracing caches each callsite's interest process-wide, so a thread-local capture
/// next to concurrently running tests can miss events. Tests select their own lines (e.g. by
/// `span.messageId`).
#[derive(Clone, Default)]
pub struct LogCapture(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogCapture {
    /// The process-wide capture.
    pub fn global() -> &'static LogCapture {
        static CAPTURE: std::sync::OnceLock<LogCapture> = std::sync::OnceLock::new();
        CAPTURE.get_or_init(|| {
            let capture = LogCapture::default();
            tracing_subscriber::fmt()
                .json()
                .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
                .with_current_span(true)
                .flatten_event(true)
                .with_writer(capture.clone())
                .try_init()
                .expect("no other global subscriber in the test process");
            capture
        })
    }

    /// Every line so far, parsed (a line that is not JSON fails the test).
    pub fn lines(&self) -> Vec<serde_json::Value> {
        let text = String::from_utf8(self.0.lock().expect("log lock").clone()).expect("UTF-8 logs");
        text.lines().map(|l| serde_json::from_str(l).expect("every log line is JSON")).collect()
    }

    /// Everything so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("log lock").clone()).expect("UTF-8 logs")
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
