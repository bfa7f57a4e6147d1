//! The soak's watch streams on the server's loopback port, every failure a value (the soak
//! counts failures; it never panics on one). Its plain requests go through
//! [`crate::https::Redial`].
//!
//! Bytes are gathered into a buffer and the head and the chunked framing are cut from it, so
//! the short read timeout that lets a reader look at its deadline never loses a partial line.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long the server may take to answer a watch's request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a watch reader wakes to look at its deadline.
const WATCH_POLL: Duration = Duration::from_millis(250);

fn connect(port: u16) -> Result<TcpStream, String> {
    let stream = crate::https::tcp(port).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(WATCH_POLL))
        .map_err(|e| format!("read timeout: {e}"))?;
    Ok(stream)
}

struct Head {
    status: u16,
    chunked: bool,
}

/// Reads more bytes into `buf`; a read timeout only checks the deadline.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> Result<(), String> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Err("the server closed the connection".into()),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return Ok(());
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err("timed out reading the answer".into());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>, deadline: Instant) -> Result<Head, String> {
    let end = loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            break end;
        }
        fill(stream, buf, deadline)?;
    };
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.drain(..end + 4);
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line in {text:?}"))?;
    let chunked = lines.any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    Ok(Head { status, chunked })
}

/// Moves the whole chunks in `buf` into `body`; true once the last (empty) chunk was read.
fn take_chunks(buf: &mut Vec<u8>, body: &mut Vec<u8>) -> Result<bool, String> {
    loop {
        let Some(line_end) = find(buf, b"\r\n") else {
            return Ok(false);
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a bad chunk size {size_text:?}"))?;
        if size == 0 {
            // The last chunk; no trailers are sent.
            if buf.len() < line_end + 4 {
                return Ok(false);
            }
            buf.drain(..line_end + 4);
            return Ok(true);
        }
        let whole = line_end + 2 + size + 2;
        if buf.len() < whole {
            return Ok(false);
        }
        body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
        buf.drain(..whole);
    }
}

/// How a watch ended.
pub enum WatchEnd {
    /// The server ended it (its `timeoutSeconds`).
    Ended,
    /// We dropped it while it was open.
    Abandoned,
}

/// What a watch saw.
pub struct Watched {
    pub events: u64,
    /// The `ERROR` events' objects.
    pub errors: Vec<String>,
    pub end: WatchEnd,
}

/// Opens a watch at `path` (with its query) and reads its events until the server ends it, or
/// until `abandon_after` when given (then the connection is dropped mid-stream). A watch the
/// server does not end by `limit` is an error.
pub fn watch(
    port: u16,
    path: &str,
    abandon_after: Option<Duration>,
    limit: Duration,
) -> Result<Watched, String> {
    let mut stream = connect(port)?;
    let head =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let started = Instant::now();
    let mut buf = Vec::new();
    let head = read_head(&mut stream, &mut buf, started + REQUEST_TIMEOUT)?;
    if head.status != 200 {
        let mut body = Vec::new();
        if head.chunked {
            let _ = take_chunks(&mut buf, &mut body);
        } else {
            body = buf;
        }
        return Err(format!(
            "watch {path}: {} {}",
            head.status,
            String::from_utf8_lossy(&body)
        ));
    }
    let mut watched = Watched {
        events: 0,
        errors: Vec::new(),
        end: WatchEnd::Ended,
    };
    let mut body = Vec::new();
    loop {
        let ended = take_chunks(&mut buf, &mut body)?;
        // Whole lines are whole events.
        while let Some(end) = body.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = body.drain(..=end).collect();
            let event: serde_json::Value = serde_json::from_slice(&line)
                .map_err(|e| format!("watch {path}: an event that is not JSON ({e})"))?;
            watched.events += 1;
            if event["type"] == "ERROR" {
                watched.errors.push(event["object"].to_string());
            }
        }
        if ended {
            return Ok(watched);
        }
        // Reads wake every WATCH_POLL; the deadline is the abandon time, or the limit.
        match fill(
            &mut stream,
            &mut buf,
            started + abandon_after.unwrap_or(limit),
        ) {
            Ok(()) => {}
            Err(e) if e.starts_with("timed out") => {
                if abandon_after.is_some() {
                    // Dropped without a word, as a client that goes away does.
                    watched.end = WatchEnd::Abandoned;
                    return Ok(watched);
                }
                return Err(format!(
                    "watch {path}: not ended by the server within {limit:?}"
                ));
            }
            Err(e) => return Err(format!("watch {path}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::take_chunks;

    #[test]
    fn chunks_are_cut_whole_across_reads() {
        let mut body = Vec::new();
        let mut buf = b"5\r\nhel".to_vec();
        assert_eq!(take_chunks(&mut buf, &mut body), Ok(false));
        assert!(body.is_empty(), "half a chunk is left in the buffer");
        buf.extend_from_slice(b"lo\r\n3;ext=1\r\n wo\r\n0\r\n");
        assert_eq!(take_chunks(&mut buf, &mut body), Ok(false));
        assert_eq!(body, b"hello wo");
        buf.extend_from_slice(b"\r\nnext");
        assert_eq!(take_chunks(&mut buf, &mut body), Ok(true));
        assert_eq!(buf, b"next", "what follows the last chunk stays");
        assert!(take_chunks(&mut b"zz\r\n".to_vec(), &mut body).is_err());
    }
}
