//! Where the server's logs go and how they look: one line per event on stdout, filtered by
//! `RUST_LOG` (default `info`), as text or as JSON (`--logging-format`, kube-apiserver's flag:
//! `text` by default, `json` for log collectors).
//!
//! Text is coloured only when stdout is a terminal and `NO_COLOR` (https://no-color.org) is not
//! set, so a log file or a pipe gets no ANSI escapes; kube-apiserver's klog writes none either.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The format of the log lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines: time, level, target, message and fields.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `fields` with the `message`, `target`,
    /// and the spans), as tracing-subscriber's JSON formatter writes it.
    Json,
}

/// Whether text lines get ANSI colours: on a terminal only, and never when `NO_COLOR` is set
/// to a non-empty value.
pub fn colour(stdout_is_terminal: bool, no_color: Option<&str>) -> bool {
    stdout_is_terminal && no_color.is_none_or(str::is_empty)
}

/// Installs the process's subscriber; call once, before anything logs.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => {
            let no_color = std::env::var("NO_COLOR").ok();
            builder
                .with_ansi(colour(std::io::stdout().is_terminal(), no_color.as_deref()))
                .init()
        }
        // JSON never carries escapes, whatever the terminal.
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("")));
        assert!(!colour(true, Some("1")));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("")));
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(LogFormat::default(), LogFormat::Text);
        assert_eq!(LogFormat::from_str("text", false), Ok(LogFormat::Text));
        assert_eq!(LogFormat::from_str("json", false), Ok(LogFormat::Json));
        assert!(LogFormat::from_str("yaml", false).is_err());
    }

    /// A JSON line carries what collectors index: level, target and the fields, message
    /// included, with no escapes.
    #[test]
    fn json_lines_are_objects() {
        #[derive(Clone, Default)]
        struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("buffer").extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(port = 8080, "serving");
        });
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("utf-8");
        assert!(!text.contains('\u{1b}'), "{text}");
        let line: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["fields"]["message"], "serving");
        assert_eq!(line["fields"]["port"], 8080);
        assert_eq!(line["target"], "apiserver::logging::tests");
    }
}
