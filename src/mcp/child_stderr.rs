//! A downstream server's stderr, read by the proxy (issue 29) instead of
//! inherited, for two reasons:
//!
//! - **The `era = "auto"` probe.** An MCP 1.x server (the Python SDK)
//!   answers the `server/discover` probe by logging some 90 lines of
//!   pydantic validation errors before rmcp falls back to `initialize`;
//!   inherited, they flooded the proxy's own stderr at every start. While
//!   a server is probed, its stderr is held; when the probe ends in the
//!   handshake era, what was held (and what follows within
//!   [`PROBE_GRACE`]) is summarised as one line, "server X answered the
//!   2026-07-28 probe with errors; using the handshake era", and kept whole
//!   at `debug` level. Otherwise it is written out as it came.
//! - **A server that crashes** is named with its own last words: the last
//!   lines of its stderr ([`StderrTap::tail`], clipped) join the reason the
//!   proxy gives in the log and in `toolgate__find_tools`/`tools/call`
//!   answers ("… after it failed: exited …; its last stderr: ImportError: …").
//!
//! Every other line is copied to the proxy's stderr unchanged, as when it
//! was inherited. A held buffer is capped at [`HOLD_CAP`] bytes: past it,
//! the held lines are written out and holding stops.

use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The most bytes of stderr held while a server is probed.
pub const HOLD_CAP: usize = 256 << 10;

/// After a probe that fell back to the handshake era, lines for this long
/// still count as the probe's (a server may log its complaint after it
/// answered).
pub const PROBE_GRACE: Duration = Duration::from_millis(300);

/// How many of the last non-blank stderr lines are kept ([`StderrTap::tail`]).
pub const TAIL_LINES: usize = 3;

/// Each kept line is clipped to this many characters.
pub const TAIL_LINE_CHARS: usize = 200;

#[derive(Default)]
struct State {
    holding: bool,
    held: Vec<u8>,
    /// Lines before this instant are the probe's: logged at debug only.
    quiet_until: Option<Instant>,
    tail: VecDeque<String>,
    eof: bool,
}

/// The stderr of one child process: its last lines, and whether lines are
/// held (during the era probe) or written out.
pub(crate) struct StderrTap {
    server: String,
    state: Mutex<State>,
    closed: tokio::sync::Notify,
}

impl StderrTap {
    /// Starts reading `from` (the child's stderr) for the server named
    /// `server`; with `hold`, lines are held until [`StderrTap::release`]
    /// or [`StderrTap::probe_fell_back`].
    pub fn spawn(
        from: impl AsyncRead + Unpin + Send + 'static,
        server: &str,
        hold: bool,
    ) -> Arc<Self> {
        let tap = Arc::new(StderrTap {
            server: server.to_string(),
            state: Mutex::new(State {
                holding: hold,
                ..State::default()
            }),
            closed: tokio::sync::Notify::new(),
        });
        tokio::spawn(read(from, tap.clone()));
        tap
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes what was held out, as it came, and stops holding.
    pub fn release(&self) {
        let held = {
            let mut s = self.lock();
            s.holding = false;
            std::mem::take(&mut s.held)
        };
        write_out(&held);
    }

    /// The probe ended in the handshake era. When what the server wrote
    /// while probed names the probe's method (`server/discover`: the
    /// server complains about the probe), it is summarised as one `info`
    /// line and kept whole at `debug`, and lines within [`PROBE_GRACE`]
    /// count as the probe's too (none of them is kept as the server's last
    /// words, [`StderrTap::tail`]); anything else it wrote (a banner) is
    /// written out as it came.
    pub fn probe_fell_back(&self) {
        let held = {
            let mut s = self.lock();
            s.holding = false;
            let held = std::mem::take(&mut s.held);
            if !about_the_probe(&held) {
                drop(s);
                write_out(&held);
                return;
            }
            s.quiet_until = Some(Instant::now() + PROBE_GRACE);
            // the probe's complaint is not the server's last words: a
            // later exit is not blamed on it
            s.tail.clear();
            held
        };
        {
            let lines = held.iter().filter(|b| **b == b'\n').count().max(1);
            tracing::info!(
                server = %self.server,
                "server {} answered the 2026-07-28 probe with errors ({lines} lines on its stderr, at debug level); using the handshake era (set era = \"legacy\", or --era {}=legacy, to skip the probe)",
                self.server,
                self.server
            );
            tracing::debug!(server = %self.server, stderr = %String::from_utf8_lossy(&held), "the server's stderr during the probe");
        }
    }

    /// The last non-blank lines of the server's stderr (at most
    /// [`TAIL_LINES`], each clipped to [`TAIL_LINE_CHARS`]), oldest first.
    pub fn tail(&self) -> Vec<String> {
        self.lock().tail.iter().cloned().collect()
    }

    /// Waits until the stderr ends (the process closed it), at most `max`.
    pub async fn wait_closed(&self, max: Duration) {
        let notified = self.closed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.lock().eof {
            return;
        }
        let _ = tokio::time::timeout(max, notified).await;
    }
}

/// `reason` (why a server is down), with its last stderr lines when there
/// are any: `exited (…); its last stderr: Traceback … | ImportError: …`.
/// Waits briefly for the stderr to end first, so that a process that
/// just died has its last words read.
pub(crate) async fn with_last_words(reason: String, tap: Option<&StderrTap>) -> String {
    let Some(tap) = tap else {
        return reason;
    };
    tap.wait_closed(Duration::from_millis(500)).await;
    let tail = tap.tail();
    if tail.is_empty() {
        return reason;
    }
    format!("{reason}; its last stderr: {}", tail.join(" | "))
}

/// Whether stderr text is a complaint about the era probe: it names the
/// probe's method, as a server that failed to read the request echoes it.
fn about_the_probe(text: &[u8]) -> bool {
    text.windows(15).any(|w| w == b"server/discover")
}

fn write_out(bytes: &[u8]) {
    if !bytes.is_empty() {
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(bytes);
        let _ = e.flush();
    }
}

async fn read(from: impl AsyncRead + Unpin, tap: Arc<StderrTap>) {
    let mut r = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let trimmed = text.trim();
        let mut out: Option<Vec<u8>> = None;
        {
            let mut s = tap.lock();
            let quiet = !s.holding && s.quiet_until.is_some_and(|t| Instant::now() < t);
            if !trimmed.is_empty() && !quiet {
                if s.tail.len() == TAIL_LINES {
                    s.tail.pop_front();
                }
                s.tail
                    .push_back(crate::diag::clip_chars(trimmed, TAIL_LINE_CHARS).into_owned());
            }
            if s.holding {
                if s.held.len() + line.len() <= HOLD_CAP {
                    s.held.extend_from_slice(&line);
                    continue;
                }
                s.holding = false;
                let mut all = std::mem::take(&mut s.held);
                all.extend_from_slice(&line);
                out = Some(all);
            } else if quiet {
                tracing::debug!(server = %tap.server, line = %trimmed, "the server's stderr after the probe");
                continue;
            }
        }
        write_out(out.as_deref().unwrap_or(&line));
    }
    let held = {
        let mut s = tap.lock();
        s.eof = true;
        // a process that ended while held: what it wrote is not the
        // probe's noise but its last words
        s.holding = false;
        std::mem::take(&mut s.held)
    };
    write_out(&held);
    tap.closed.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn keeps_the_last_lines_clipped_and_sees_the_end() {
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let tap = StderrTap::spawn(r, "s", true);
        let long = "x".repeat(1000);
        w.write_all(format!("one\n\ntwo\n{long}\nImportError: boom\n").as_bytes())
            .await
            .unwrap();
        drop(w);
        tap.wait_closed(Duration::from_secs(5)).await;
        let t = tap.tail();
        assert_eq!(t.len(), TAIL_LINES);
        assert_eq!(t[0], "two");
        assert!(t[1].starts_with(&"x".repeat(TAIL_LINE_CHARS)), "{}", t[1]);
        assert!(t[1].chars().count() < TAIL_LINE_CHARS + 40, "{}", t[1]);
        assert_eq!(t[2], "ImportError: boom");
        let r = with_last_words("exited".into(), Some(&tap)).await;
        assert!(r.starts_with("exited; its last stderr: two | x"), "{r}");
        assert!(r.ends_with(" | ImportError: boom"), "{r}");
    }

    #[tokio::test]
    async fn a_probe_that_fell_back_swallows_what_was_held() {
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let tap = StderrTap::spawn(r, "s", true);
        w.write_all(b"pydantic error 1\n  input_value='server/discover'\n")
            .await
            .unwrap();
        // read, and held
        for _ in 0..100 {
            if tap.tail().len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            tap.lock().held,
            b"pydantic error 1\n  input_value='server/discover'\n"
        );
        tap.probe_fell_back();
        assert!(tap.lock().held.is_empty() && !tap.lock().holding);
        assert!(tap.lock().quiet_until.is_some());
        // nor are they the server's last words (a later exit, or a
        // shutdown, is not blamed on the probe's complaint)
        assert!(tap.tail().is_empty(), "{:?}", tap.tail());
        assert_eq!(with_last_words("exited".into(), Some(&tap)).await, "exited");
        // a banner is not the probe's: written out, nothing is kept quiet
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let tap = StderrTap::spawn(r, "s", true);
        w.write_all(b"Starting the server\n").await.unwrap();
        for _ in 0..100 {
            if !tap.tail().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tap.probe_fell_back();
        assert!(tap.lock().held.is_empty() && tap.lock().quiet_until.is_none());
    }
}
