//! The client-side stdio transport: newline-delimited JSON-RPC on stdin and
//! stdout, answering malformed input with JSON-RPC errors.
//!
//! rmcp's own stdio transport ignores lines that are not JSON (so that two
//! peers cannot bounce errors at each other forever). This one follows
//! JSON-RPC 2.0: a line that is not JSON gets a `-32700 Parse error` response
//! with `id: null`, and JSON that is not a JSON-RPC message gets `-32600
//! Invalid Request` (with the message's `id` when it has a usable one). To
//! keep the storm risk away, at most [`MAX_ERRORS_PER_SECOND`] such error
//! responses are written per second; the rest are only logged. Nothing but
//! JSON-RPC messages is ever written to stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Error responses to malformed input written per second, at most.
pub const MAX_ERRORS_PER_SECOND: u32 = 10;

/// Longest accepted line (bytes); longer lines are discarded with an error.
pub const MAX_LINE: usize = 64 << 20;

/// A line-delimited JSON-RPC transport over any reader and writer (stdin and
/// stdout for [`LineTransport::stdio`]).
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<Option<W>>>,
    buf: Vec<u8>,
    window: (Instant, u32),
}

impl LineTransport<rmcp::transport::StdioReader, rmcp::transport::StdioWriter> {
    /// The process's stdin and stdout, through the IO reactor when they are
    /// pipes (as MCP clients start servers), which saves a thread hand-off per
    /// message (rmcp's `stdio_pipes`). Call inside a tokio runtime.
    pub fn stdio() -> Self {
        let (r, w) = rmcp::transport::stdio_pipes();
        Self::new(r, w)
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Wraps a reader and a writer.
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(Some(writer))),
            buf: Vec::new(),
            window: (Instant::now(), 0),
        }
    }

    async fn write_line(writer: &Mutex<Option<W>>, mut line: Vec<u8>) -> std::io::Result<()> {
        line.push(b'\n');
        let mut w = writer.lock().await;
        let w = w.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotConnected, "transport closed")
        })?;
        w.write_all(&line).await?;
        w.flush().await
    }

    /// Answers a malformed line, within the rate limit.
    async fn reject(&mut self, code: i64, message: String, id: Value) {
        let now = Instant::now();
        if now.duration_since(self.window.0) >= Duration::from_secs(1) {
            self.window = (now, 0);
        }
        if self.window.1 >= MAX_ERRORS_PER_SECOND {
            tracing::warn!(code, "malformed input not answered (rate limit): {message}");
            return;
        }
        self.window.1 += 1;
        tracing::warn!(code, "malformed input: {message}");
        let resp = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        if let Ok(bytes) = serde_json::to_vec(&resp) {
            let _ = Self::write_line(&self.writer, bytes).await;
        }
    }
}

/// The integer literals of a `tools/call` request's `arguments` that no
/// 64-bit integer holds, read from the request's JSON text (serde_json has
/// already replaced them by floats in the parsed request). Put in the
/// request's extensions by the stdio transport, read by the call handler,
/// which refuses the call (see `toolgate::gate::numbers`). Paths are JSON
/// pointers within `arguments`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InexactArguments(pub Vec<crate::gate::numbers::InexactInteger>);

/// Marks a `tools/call` request whose JSON text `line` holds integer
/// literals beyond the 64-bit range in its arguments.
fn mark_inexact_integers(m: &mut RxJsonRpcMessage<RoleServer>, line: &[u8]) {
    use rmcp::model::{ClientRequest, JsonRpcMessage};
    let JsonRpcMessage::Request(r) = m else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &mut r.request else {
        return;
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    let found: Vec<_> = crate::gate::numbers::inexact_integers(text)
        .into_iter()
        .filter_map(|mut x| {
            let rest = x.path.strip_prefix("/params/arguments")?;
            if !(rest.is_empty() || rest.starts_with('/')) {
                return None;
            }
            x.path = rest.to_string();
            Some(x)
        })
        .collect();
    if !found.is_empty() {
        call.extensions.insert(InexactArguments(found));
    }
}

/// Classifies a line that did not parse as a message: the error response to
/// send, if any (`None` for a malformed notification, which gets no answer).
fn classify(line: &[u8], err: &serde_json::Error) -> Option<(i64, String, Value)> {
    match serde_json::from_slice::<Value>(line) {
        Err(e) => Some((-32700, format!("Parse error: {e}"), Value::Null)),
        Ok(v) => {
            let id = v.get("id").cloned().unwrap_or(Value::Null);
            let usable_id = matches!(id, Value::String(_) | Value::Number(_));
            let is_notification = v.get("method").is_some() && v.get("id").is_none();
            if is_notification {
                tracing::warn!("malformed notification ignored: {err}");
                return None;
            }
            Some((
                -32600,
                format!("Invalid Request: {err}"),
                if usable_id { id } else { Value::Null },
            ))
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let bytes = serde_json::to_vec(&item)?;
            Self::write_line(&writer, bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // `read_until` keeps partial input in `self.buf` when this future
            // is dropped (rmcp polls receive inside a select!), so the next
            // call resumes the same line.
            match self.reader.read_until(b'\n', &mut self.buf).await {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    tracing::error!("cannot read stdin: {e}");
                    return None;
                }
            }
            if !self.buf.ends_with(b"\n") && self.buf.len() < MAX_LINE {
                // EOF in the middle of a line: nothing complete to deliver.
                return None;
            }
            let line = std::mem::take(&mut self.buf);
            if line.len() > MAX_LINE {
                self.reject(
                    -32600,
                    format!("Invalid Request: line longer than {MAX_LINE} bytes"),
                    Value::Null,
                )
                .await;
                continue;
            }
            let mut s: &[u8] = &line;
            while let Some(rest) = s.strip_suffix(b"\n").or_else(|| s.strip_suffix(b"\r")) {
                s = rest;
            }
            let s = s.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(s);
            if s.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(s) {
                Ok(mut m) => {
                    mark_inexact_integers(&mut m, s);
                    return Some(m);
                }
                Err(e) => {
                    if let Some((code, msg, id)) = classify(s, &e) {
                        self.reject(code, msg, id).await;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut w = self.writer.lock().await;
        if let Some(mut w) = w.take() {
            let _ = w.flush().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_malformed_lines() {
        let e = serde_json::from_str::<Value>("{").unwrap_err();
        assert_eq!(classify(b"not json", &e).unwrap().0, -32700);
        let (code, _, id) = classify(br#"{"id": 7, "result": 1, "error": 2}"#, &e).unwrap();
        assert_eq!((code, id), (-32600, json!(7)));
        let (_, _, id) = classify(br#"{"id": {"x": 1}}"#, &e).unwrap();
        assert_eq!(id, Value::Null);
        assert!(classify(br#"{"method": "notifications/x", "params": 3}"#, &e).is_none());
    }

    #[test]
    fn marks_tools_call_arguments_with_integers_beyond_64_bits() {
        use rmcp::model::{ClientRequest, JsonRpcMessage};
        let marks = |line: &str| {
            let mut m: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
            mark_inexact_integers(&mut m, line.as_bytes());
            let JsonRpcMessage::Request(r) = m else {
                panic!("not a request")
            };
            match r.request {
                ClientRequest::CallToolRequest(c) => c
                    .extensions
                    .get::<InexactArguments>()
                    .map(|x| x.0.iter().map(|i| i.path.clone()).collect::<Vec<_>>()),
                _ => None,
            }
        };
        let call = |args: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#
            )
        };
        // within range: not marked
        let line = call(r#"{"n": 18446744073709551615, "m": -9223372036854775808}"#);
        assert_eq!(marks(&line), None);
        let line = call(r#"{"n": 1, "a": [18446744073709551616]}"#);
        assert_eq!(marks(&line), Some(vec!["/a/0".to_string()]));
        // a literal outside `arguments` is not the arguments' business
        let line =
            call(r#"{"n": 1}"#).replace(r#""name":"t""#, r#""name":"t","_x":18446744073709551616"#);
        assert_eq!(marks(&line), None);
    }

    #[tokio::test]
    async fn answers_garbage_and_delivers_messages() {
        let input: &[u8] = b"garbage\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let (w, mut r) = tokio::io::duplex(4096);
        let mut t = LineTransport::new(input, w);
        let m = Transport::<RoleServer>::receive(&mut t).await;
        assert!(m.is_some());
        assert!(Transport::<RoleServer>::receive(&mut t).await.is_none());
        Transport::<RoleServer>::close(&mut t).await.unwrap();
        drop(t);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut out)
            .await
            .unwrap();
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["error"]["code"], -32700);
        assert_eq!(v["id"], Value::Null);
    }
}
