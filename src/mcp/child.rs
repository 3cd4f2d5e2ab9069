//! A downstream server's child process as the proxy's MCP client transport,
//! with its stdout screened for messages rmcp cannot decode.
//!
//! rmcp parses each line with serde_json, whose recursion limit is 128
//! levels of nesting; a deeper line fails as a *syntax* error, which rmcp's
//! stdio transport drops without a word (as the other MCP SDKs do with input
//! that is not JSON). An answer nested too deep (a `tools/list` with one
//! tool whose `inputSchema` nests 124 levels is enough) thus never reaches
//! the request waiting for it, which then times out ("no answer within
//! 30s") although the server did answer.
//!
//! So the proxy reads the child's stdout itself, line by line, and hands each
//! line on to rmcp unchanged, except a line that serde_json rejects for its
//! depth:
//!
//! - an answer (no `method`, with a string or number `id` at the top level)
//!   is replaced by a JSON-RPC error response to that id (`-32700`, naming
//!   the depth and the limit), so the request fails at once with the cause;
//! - anything else (a request or notification from the server, or no usable
//!   `id`) is dropped with a warning naming the server.
//!
//! Only lines that are nested at least [`SCREEN_DEPTH`] levels deep (a linear
//! byte scan) are parsed a second time to ask serde_json; a line longer than
//! [`MAX_SCREENED_LINE`] is passed on unread (rmcp discards lines over its own
//! limit, 16 MiB). The child is killed when the transport is dropped.

use std::borrow::Cow;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStdin};

use super::child_stderr::StderrTap;

/// Lines nested at least this deep are checked against serde_json's
/// recursion limit (128, which a message reaches at fewer levels of its own
/// payload: rmcp's untagged types count too); shallower lines are passed on
/// without a second parse.
pub const SCREEN_DEPTH: usize = 100;

/// Lines longer than this (bytes) are passed on without screening; rmcp's
/// stdio transport discards lines over 16 MiB itself.
pub const MAX_SCREENED_LINE: usize = 16 << 20;

/// The JSON-RPC error code of the synthesized answer: the proxy could not
/// parse the server's response.
pub const TOO_DEEP_CODE: i64 = -32700;

/// A spawned server: its stdin, and its stdout through the screen, as an
/// rmcp transport; the child is killed when this is dropped.
pub(crate) struct ChildTransport {
    inner: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
    child: Child,
    stderr: Arc<StderrTap>,
}

impl ChildTransport {
    /// Spawns `cmd`, screens its stdout for the server named `server`
    /// (used in warnings) and reads its stderr ([`StderrTap`]: copied to
    /// the proxy's stderr, held while `hold_stderr`, its last lines kept).
    /// Errors: the spawn failed.
    pub fn spawn(
        mut cmd: tokio::process::Command,
        server: &str,
        hold_stderr: bool,
    ) -> std::io::Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the child's stdio is not piped"));
        };
        let (screened, read) = tokio::io::duplex(64 << 10);
        tokio::spawn(screen(stdout, screened, server.to_string()));
        Ok(ChildTransport {
            inner: AsyncRwTransport::new_client(read, stdin),
            child,
            stderr: StderrTap::spawn(stderr, server, hold_stderr),
        })
    }

    /// The child's stderr.
    pub fn stderr(&self) -> Arc<StderrTap> {
        self.stderr.clone()
    }

    /// The child's process id (`None` once it was reaped).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    /// Closes the child's stdin (the MCP stdio shutdown), waits up to 3 s for
    /// it to exit, then kills it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await?;
        let waited =
            tokio::time::timeout(std::time::Duration::from_secs(3), self.child.wait()).await;
        if !matches!(waited, Ok(Ok(_))) {
            self.child.kill().await?;
        }
        Ok(())
    }
}

/// Copies `from` (the child's stdout) to `to` line by line through
/// [`screen_line`]; ends when either side closes.
async fn screen(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, server: String) {
    let mut reader = BufReader::new(from);
    let mut line: Vec<u8> = Vec::new();
    // past MAX_SCREENED_LINE: the rest of the line goes straight through
    let mut passing = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(c) => c,
        };
        let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        let n = part.len();
        let written = if passing {
            to.write_all(part).await
        } else if line.len() + n > MAX_SCREENED_LINE {
            passing = true;
            let r = to.write_all(&line).await;
            line.clear();
            match r {
                Ok(()) => to.write_all(part).await,
                e => e,
            }
        } else {
            line.extend_from_slice(part);
            if ends {
                let r = to.write_all(&screen_line(&line, &server)).await;
                line.clear();
                r
            } else {
                Ok(())
            }
        };
        reader.consume(n);
        if ends {
            passing = false;
        }
        if written.is_err() {
            break;
        }
    }
    if !line.is_empty() {
        let _ = to.write_all(&line).await;
    }
    let _ = to.shutdown().await;
}

/// The line to hand rmcp for one line of the child's stdout (with its
/// newline): the line itself, a JSON-RPC error answer in its place, or
/// nothing (see the module docs).
pub(crate) fn screen_line<'a>(line: &'a [u8], server: &str) -> Cow<'a, [u8]> {
    let depth = max_depth(line);
    if depth < SCREEN_DEPTH {
        return Cow::Borrowed(line);
    }
    let err = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(_) => return Cow::Borrowed(line),
        Err(e) => e,
    };
    if !err.to_string().contains("recursion limit") {
        return Cow::Borrowed(line);
    }
    let members = top_level_members(line);
    let member = |k: &str| members.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
    let id = member("id")
        .and_then(|raw| serde_json::from_slice::<serde_json::Value>(raw).ok())
        .filter(|id| id.is_string() || id.is_number());
    let why = format!(
        "the message is nested {depth} levels deep, more than the proxy's JSON decoder accepts (serde_json's recursion limit of 128 levels)"
    );
    match (id, member("method")) {
        (Some(id), None) => {
            tracing::warn!(server = %server, %id, "cannot decode the server's answer: {why}; the request fails");
            let answer = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": TOO_DEEP_CODE,
                    "message": format!("server `{server}` answered, but {why}"),
                },
            });
            let mut out = answer.to_string().into_bytes();
            out.push(b'\n');
            Cow::Owned(out)
        }
        _ => {
            tracing::warn!(server = %server, "dropped a message from the server: {why}");
            Cow::Borrowed(&[])
        }
    }
}

/// The deepest nesting of arrays and objects in `text`, strings skipped.
fn max_depth(text: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The members of the top-level object of `text`: each key (decoded) with
/// the raw text of its value, trimmed. Never recurses; what is not an object
/// gives nothing useful, and no panic.
fn top_level_members(text: &[u8]) -> Vec<(String, &[u8])> {
    let mut out = Vec::new();
    let (mut depth, mut i) = (0usize, 0usize);
    let mut key: Option<String> = None;
    let mut value_start: Option<usize> = None;
    let mut expect_key = false;
    let trim = |s: &[u8]| -> usize { s.iter().take_while(|b| b.is_ascii_whitespace()).count() };
    while i < text.len() {
        let b = text[i];
        match b {
            b'"' => {
                let start = i;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if depth == 1 && expect_key {
                    let raw = text.get(start..=i.min(text.len() - 1)).unwrap_or_default();
                    key = serde_json::from_slice::<String>(raw).ok();
                    expect_key = false;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 && b == b'{' {
                    expect_key = true;
                }
            }
            b'}' | b']' | b',' => {
                if depth == 1
                    && let (Some(k), Some(s)) = (key.take(), value_start.take())
                {
                    let raw = &text[s..i];
                    let lead = trim(raw);
                    let tail = raw
                        .iter()
                        .rev()
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
                    out.push((k, &raw[lead..raw.len().saturating_sub(tail).max(lead)]));
                }
                if b == b',' {
                    if depth == 1 {
                        expect_key = true;
                    }
                } else {
                    depth = depth.saturating_sub(1);
                }
            }
            b':' if depth == 1 && key.is_some() => value_start = Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep_answer(id: &str, levels: usize) -> Vec<u8> {
        let schema = "[".repeat(levels) + &"]".repeat(levels);
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"t","inputSchema":{{"x":{schema}}}}}]}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn shallow_lines_pass_unchanged() {
        let line = deep_answer("1", 20);
        assert!(matches!(screen_line(&line, "s"), Cow::Borrowed(l) if l == line.as_slice()));
        // deep enough to be parsed again, but within the limit: unchanged
        let line = deep_answer("1", SCREEN_DEPTH);
        assert!(serde_json::from_slice::<serde_json::Value>(&line).is_ok());
        assert_eq!(screen_line(&line, "s").as_ref(), line.as_slice());
    }

    #[test]
    fn an_answer_too_deep_becomes_an_error_answer_to_its_id() {
        for id in ["7", r#""abc""#] {
            let line = deep_answer(id, 140);
            assert!(serde_json::from_slice::<serde_json::Value>(&line).is_err());
            let out = screen_line(&line, "stub");
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(
                v["id"],
                serde_json::from_str::<serde_json::Value>(id).unwrap()
            );
            assert_eq!(v["error"]["code"], TOO_DEEP_CODE);
            let msg = v["error"]["message"].as_str().unwrap();
            assert!(
                msg.contains("stub") && msg.contains("recursion limit of 128"),
                "{msg}"
            );
            assert!(out.ends_with(b"\n"));
        }
    }

    #[test]
    fn a_request_or_an_answer_without_id_too_deep_is_dropped() {
        let deep = "[".repeat(140) + &"]".repeat(140);
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{deep}}}"#
        );
        assert!(screen_line(request.as_bytes(), "s").is_empty());
        let no_id = format!(r#"{{"jsonrpc":"2.0","result":{deep}}}"#);
        assert!(screen_line(no_id.as_bytes(), "s").is_empty());
        let bad_id = format!(r#"{{"jsonrpc":"2.0","id":{{"a":1}},"result":{deep}}}"#);
        assert!(screen_line(bad_id.as_bytes(), "s").is_empty());
    }

    #[test]
    fn top_level_members_skip_nested_and_quoted_text() {
        let text = br#"{ "a\"" : "x,}" , "n": {"id": 9, "q": [1,2]}, "id" : 12 , "m": null}"#;
        let m = top_level_members(text);
        let keys: Vec<_> = m
            .iter()
            .map(|(k, v)| (k.as_str(), String::from_utf8_lossy(v).into_owned()))
            .collect();
        assert_eq!(
            keys,
            [
                ("a\"", r#""x,}""#.to_string()),
                ("n", r#"{"id": 9, "q": [1,2]}"#.to_string()),
                ("id", "12".to_string()),
                ("m", "null".to_string())
            ]
        );
        for junk in [
            &b""[..],
            b"{",
            b"\"",
            b"}}}",
            b"{\"a",
            b"{\"a\":",
            b"[{\"id\":1}]",
        ] {
            let _ = top_level_members(junk);
            let _ = max_depth(junk);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, failure_persistence: None, ..Default::default() })]

        /// Any line: no panic; what is handed on is the line itself, nothing,
        /// or a JSON-RPC error answer.
        #[test]
        fn screen_line_never_panics(line in "\\PC{0,64}", depth in 0usize..300, id in proptest::prelude::any::<i64>(), method: bool) {
            let _ = screen_line(line.as_bytes(), "s");
            let deep = "[".repeat(depth) + &"]".repeat(depth);
            let m = if method { r#""method":"x","# } else { "" };
            let msg = format!(r#"{{"jsonrpc":"2.0",{m}"id":{id},"result":[{deep}]}}"#);
            let out = screen_line(msg.as_bytes(), "s");
            let parses = serde_json::from_str::<serde_json::Value>(&msg).is_ok();
            if parses {
                proptest::prop_assert_eq!(out.as_ref(), msg.as_bytes());
            } else if method {
                proptest::prop_assert!(out.is_empty());
            } else {
                let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
                proptest::prop_assert_eq!(&v["id"], &serde_json::json!(id));
            }
        }
    }

    #[tokio::test]
    async fn screen_copies_lines_and_replaces_the_deep_answer() {
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec();
        input.extend(deep_answer("2", 140));
        input.extend(b"\npartial");
        let (w, mut r) = tokio::io::duplex(1 << 20);
        screen(&input[..], w, "s".into()).await;
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut out)
            .await
            .unwrap();
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let v: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(v["id"], 2);
        assert_eq!(lines[2], "partial");
    }
}
