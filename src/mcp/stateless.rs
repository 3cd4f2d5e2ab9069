//! The modern, stateless era of MCP (protocol revision 2026-07-28): what a
//! request carries instead of a session.
//!
//! In the legacy era (the `initialize` handshake, 2024-11-05 … 2025-11-25)
//! the proxy keeps a [`SessionState`] per client session. The 2026-07-28
//! revision removes sessions (SEP-2567, SEP-2575: "Servers MUST NOT rely on
//! prior requests over the same connection to establish context"), so for a
//! modern request the proxy keeps nothing: what it must remember travels
//! with the request, signed, so that any replica with the same key can serve
//! the next one.
//!
//! Two sealed strings, both HMAC-SHA256 (rmcp's [`RequestStateCodec`], the
//! helper the revision's MRTR page asks for: "servers MUST protect its
//! integrity (e.g. HMAC or AEAD) and MUST reject state that fails
//! verification"):
//!
//! | string | what it holds | where it travels |
//! | --- | --- | --- |
//! | session handle ([`SessionHandle`]) | found tools, recent calls, usage, call keywords, the audit session id | out: `toolgate__find_tools`' `structuredContent.session` and every forwarded result's `_meta["toolgate/session"]`; in: the `session` argument of the proxy's tools, or a request's `_meta["toolgate/session"]` |
//! | confirmation state ([`PendingCall`]) | the tool, a SHA-256 digest of the exact arguments, a nonce, the downstream server's own `requestState` | the `requestState` of an `InputRequiredResult`, echoed on the client's retry |
//!
//! The handle is a server-minted handle passed as an ordinary tool
//! argument, as SEP-2567 recommends for cross-call state. Its expiry is
//! [`HANDLE_TTL`]; a confirmation's is [`ProxyConfig::confirm_ttl`](super::config::ProxyConfig::confirm_ttl).
//! A confirmation is used at most once per replica ([`Stateless::redeem`]):
//! the revision notes that a TTL alone does not make state single-use.
//!
//! The key ([`Stateless::from_config`]): the bytes of the environment
//! variable that [`ProxyConfig::state_key_env`](super::config::ProxyConfig::state_key_env)
//! names (at least 32), else 32 random bytes drawn at start; replicas behind
//! one load balancer must share it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{JsonObject, ProtocolVersion, RequestStateCodec, RequestStateError, SealOptions};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::{Found, SessionState};

/// The `_meta` key (requests and results) and the argument name of the
/// proxy's tools that carry the session handle.
pub const SESSION_META_KEY: &str = "toolgate/session";

/// The argument of `toolgate__find_tools` and `toolgate__call_tool` that
/// carries the session handle.
pub const SESSION_ARGUMENT: &str = "session";

/// The key of the confirmation in an `InputRequiredResult`'s
/// `inputRequests` (and of the answer in the retry's `inputResponses`).
pub const CONFIRM_INPUT_KEY: &str = "toolgate_confirm";

/// How long a session handle stays valid after it was issued: a day.
pub const HANDLE_TTL: Duration = Duration::from_secs(24 * 3600);

/// At most this many intent keywords from calls are kept in a handle.
const MAX_HANDLE_KEYWORDS: usize = 64;

/// Whether a request speaks the modern era: its own `_meta` names protocol
/// version 2026-07-28 or later (rmcp has checked the rest of the required
/// request metadata). A legacy session's requests carry no version.
pub fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
}

/// Whether a modern request's client declares form elicitation in its
/// per-request capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"]`):
/// an `elicitation` object with `form`, or with neither `form` nor `url`
/// (the revision's backward-compatible reading).
pub fn modern_elicits_form(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The protocol versions the proxy serves: every version rmcp knows, the
/// handshake era and 2026-07-28.
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::KNOWN_VERSIONS
}

/// Why a sealed string was refused. The messages are written for the model:
/// they say what to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum StateError {
    /// Not a string this proxy (or a replica with its key) issued, or one
    /// changed on the way.
    Invalid,
    /// Issued, but its time is up.
    Expired,
    /// A confirmation used once already (on this replica).
    Replayed,
    /// A confirmation issued for another tool or other arguments.
    OtherCall,
}

impl StateError {
    fn from_codec(e: RequestStateError) -> Self {
        match e {
            RequestStateError::Expired => StateError::Expired,
            _ => StateError::Invalid,
        }
    }
}

/// The modern era's keys and the confirmations redeemed on this replica.
pub struct Stateless {
    codec: RequestStateCodec,
    /// Whether the key came from the configuration (shared by replicas)
    /// rather than drawn at start.
    pub configured: bool,
    confirm_ttl: Duration,
    /// Redeemed confirmation nonces and when they expire (unix ms).
    redeemed: Mutex<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for Stateless {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stateless")
            .field("configured", &self.configured)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// The handle's associated data: mixed into its tag, so a confirmation state
/// can never be presented as a handle or back.
const HANDLE_AD: &[u8] = b"toolgate/session/v1";
const CONFIRM_AD: &[u8] = b"toolgate/confirm/v1";

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Stateless {
    /// The key from the environment variable `key_env` names (its bytes,
    /// at least [`RequestStateCodec::MIN_KEY_LENGTH`] = 32), or 32 random
    /// bytes when `key_env` is `None`. Errors: the variable is unset, empty
    /// or too short, or no randomness is available.
    pub fn from_config(key_env: Option<&str>, confirm_ttl: Duration) -> Result<Self, String> {
        let (key, configured) = match key_env {
            Some(var) => {
                let v = std::env::var(var).map_err(|_| {
                    format!("state_key_env: the environment variable `{var}` is not set")
                })?;
                let v = v.trim().as_bytes().to_vec();
                if v.len() < RequestStateCodec::MIN_KEY_LENGTH {
                    return Err(format!(
                        "state_key_env: `{var}` holds {} bytes; the state key needs at least {} (e.g. `openssl rand -hex 32`)",
                        v.len(),
                        RequestStateCodec::MIN_KEY_LENGTH
                    ));
                }
                (v, true)
            }
            None => {
                let mut k = vec![0u8; 32];
                getrandom::fill(&mut k).map_err(|e| format!("cannot draw a state key: {e}"))?;
                (k, false)
            }
        };
        let codec = RequestStateCodec::try_new(key).map_err(|e| format!("state key: {e}"))?;
        Ok(Stateless {
            codec,
            configured,
            confirm_ttl,
            redeemed: Mutex::new(BTreeMap::new()),
        })
    }

    /// Seals a session handle (valid for [`HANDLE_TTL`]).
    pub fn seal_handle(&self, h: &SessionHandle) -> String {
        let json = serde_json::to_vec(h).unwrap_or_default();
        self.codec.seal_with(
            &json,
            &SealOptions::new()
                .associated_data(HANDLE_AD)
                .ttl(HANDLE_TTL),
        )
    }

    /// Opens a session handle. Errors: [`StateError::Invalid`] (another key,
    /// changed, not a handle), [`StateError::Expired`].
    pub fn open_handle(&self, sealed: &str) -> Result<SessionHandle, StateError> {
        let bytes = self
            .codec
            .open_with(sealed, HANDLE_AD)
            .map_err(StateError::from_codec)?;
        serde_json::from_slice(&bytes).map_err(|_| StateError::Invalid)
    }

    /// Seals a pending call (valid for the configured confirmation time).
    pub fn seal_pending(&self, p: &PendingCall) -> String {
        let json = serde_json::to_vec(p).unwrap_or_default();
        self.codec.seal_with(
            &json,
            &SealOptions::new()
                .associated_data(CONFIRM_AD)
                .ttl(self.confirm_ttl),
        )
    }

    /// Opens the `requestState` of a retry and checks that it was issued for
    /// this `tool` (catalog name) with these exact `args`. Errors:
    /// [`StateError::Invalid`], [`StateError::Expired`],
    /// [`StateError::OtherCall`].
    pub fn open_pending(
        &self,
        sealed: &str,
        tool: &str,
        args: &Value,
    ) -> Result<PendingCall, StateError> {
        let bytes = self
            .codec
            .open_with(sealed, CONFIRM_AD)
            .map_err(StateError::from_codec)?;
        let p: PendingCall = serde_json::from_slice(&bytes).map_err(|_| StateError::Invalid)?;
        if p.tool != tool || p.digest != args_digest(args) {
            return Err(StateError::OtherCall);
        }
        Ok(p)
    }

    /// Marks a confirmation's nonce used; [`StateError::Replayed`] when it
    /// was (on this replica, within its lifetime). Forgets expired nonces.
    pub fn redeem(&self, nonce: &str) -> Result<(), StateError> {
        let now = unix_ms();
        let mut used = self.redeemed.lock().unwrap_or_else(|p| p.into_inner());
        used.retain(|_, exp| *exp > now);
        let exp = now + self.confirm_ttl.as_millis() as u64 + 1000;
        if used.insert(nonce.to_string(), exp).is_some() {
            return Err(StateError::Replayed);
        }
        Ok(())
    }

    /// A fresh random nonce (hex).
    pub fn nonce() -> String {
        let mut b = [0u8; 16];
        if getrandom::fill(&mut b).is_err() {
            // no randomness: a time-based nonce still differs per call
            let t = Instant::now().elapsed().as_nanos() ^ unix_ms() as u128;
            b.copy_from_slice(&t.to_le_bytes());
        }
        hex(&b)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The SHA-256 (hex) of `args` in canonical form: object keys sorted at
/// every level, so that the same arguments in another key order have the
/// same digest (the definition pins' canonical JSON, [`super::pins`]).
pub fn args_digest(args: &Value) -> String {
    super::pins::canonical_sha256(args)
}

/// What a modern session remembers, carried by the client (see the module
/// docs). Times are unix seconds; the lists are bounded by the catalog
/// (found, usage) and the policy (recent calls window, found limit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionHandle {
    /// Format version (1).
    pub v: u8,
    /// The audit's session id, kept across requests and replicas.
    pub sid: String,
    /// Unix time (seconds) the session began: session time counts from it.
    pub t0: f64,
    /// Found tools: (catalog name, session time found or last called,
    /// calls of other tools since).
    pub found: Vec<(String, f64, u64)>,
    /// Calls per tool (catalog name).
    pub counts: BTreeMap<String, u64>,
    /// Session time of each tool's last call.
    pub last: BTreeMap<String, f64>,
    /// The recent calls, oldest first (the policy's window).
    pub recent: Vec<String>,
    /// Keywords of the last forwarded call's arguments.
    pub kw: Vec<String>,
    /// What the `[gate.flow]` rules remember (one entry per label: bounded
    /// by the policy's labels). Absent in handles of earlier proxies.
    #[serde(
        default,
        skip_serializing_if = "crate::gate::flow::FlowHistory::is_empty"
    )]
    pub flow: crate::gate::flow::FlowHistory,
}

impl SessionHandle {
    /// A new handle for a session that begins now, with audit id `sid`.
    pub fn new(sid: String, now_unix: f64) -> Self {
        SessionHandle {
            v: 1,
            sid,
            t0: now_unix,
            ..Default::default()
        }
    }

    /// The session state this handle describes, at unix time `now_unix`.
    pub(crate) fn to_state(&self, now_unix: f64) -> SessionState {
        let age = (now_unix - self.t0).max(0.0);
        let mut st = SessionState::default();
        if let Some(start) = Instant::now().checked_sub(Duration::from_secs_f64(age.min(1e9))) {
            st.started = start;
        }
        st.found = self
            .found
            .iter()
            .map(|(tool, since, calls)| Found {
                tool: tool.clone(),
                since: *since,
                calls: *calls,
            })
            .collect();
        st.session.usage.call_counts = self.counts.clone().into_iter().collect();
        st.session.usage.last_call_at = self.last.clone().into_iter().collect();
        st.session.restore_recent(self.recent.clone());
        st.call_keywords = self.kw.clone();
        st.flow = self.flow.clone();
        st
    }

    /// The handle of `st` (a state made by [`SessionHandle::to_state`] and
    /// then used), keeping this handle's id and start.
    pub(crate) fn updated(&self, st: &SessionState) -> SessionHandle {
        SessionHandle {
            v: 1,
            sid: self.sid.clone(),
            t0: self.t0,
            found: st
                .found
                .iter()
                .map(|f| (f.tool.clone(), f.since, f.calls))
                .collect(),
            counts: st
                .session
                .usage
                .call_counts
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            last: st
                .session
                .usage
                .last_call_at
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            recent: st.session.context.recent_tool_calls.clone(),
            kw: st
                .call_keywords
                .iter()
                .take(MAX_HANDLE_KEYWORDS)
                .cloned()
                .collect(),
            flow: st.flow.clone(),
        }
    }
}

/// A call waiting for the user's answer, sealed into an
/// `InputRequiredResult`'s `requestState`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// What the retry's answer decides: `"ask"` (the gate asked),
    /// `"definition"` (a changed definition must be trusted), or
    /// `"downstream"` (the downstream server asked for input; the user's
    /// confirmation, if any, was given already).
    pub kind: String,
    /// Catalog name of the tool.
    pub tool: String,
    /// [`args_digest`] of the arguments of the first round.
    pub digest: String,
    /// Single-use nonce.
    pub nonce: String,
    /// Whether the user already confirmed this call (a downstream round
    /// after a confirmation).
    #[serde(default)]
    pub confirmed: bool,
    /// The downstream server's own `requestState`, passed back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<String>,
    /// The definition hash the user is asked to trust (`"definition"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// A changed definition (its hash) the user trusted in an earlier round
    /// of this same call: not asked again (a modern session over HTTP keeps
    /// no confirmation of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<String>,
}

/// The session handle a request carries: the `session` argument (of the
/// proxy's tools) first, then `_meta["toolgate/session"]` of the request.
/// `Ok(None)` when there is none; an error when one is there but is not a
/// string.
pub fn handle_in(
    args: Option<&JsonObject>,
    metas: &[&JsonObject],
) -> Result<Option<String>, String> {
    let found = args
        .and_then(|a| a.get(SESSION_ARGUMENT))
        .filter(|v| !v.is_null())
        .or_else(|| {
            metas
                .iter()
                .find_map(|m| m.get(SESSION_META_KEY).filter(|v| !v.is_null()))
        });
    match found {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!(
            "`{SESSION_ARGUMENT}` (or _meta[\"{SESSION_META_KEY}\"]) must be the session string a previous answer gave"
        )),
    }
}

/// The message for a refused handle or confirmation state, for the model.
pub fn refusal(e: &StateError, what: &str) -> String {
    match (e, what) {
        (StateError::Expired, "session") => "the session handle has expired; call the search tool again without `session` to start a new one".into(),
        (_, "session") => "the session handle is not valid (signed by another key, or changed); call the search tool again without `session` to start a new one".into(),
        (StateError::Expired, _) => "the confirmation has expired; call the tool again to be asked again; the call was not made".into(),
        (StateError::Replayed, _) => "this confirmation was used already; call the tool again to be asked again; the call was not made".into(),
        (StateError::OtherCall, _) => "the confirmation was given for another call (other tool or other arguments); call the tool again to be asked about these arguments; the call was not made".into(),
        (StateError::Invalid, _) => "the requestState is not valid (signed by another key, or changed); call the tool again to be asked again; the call was not made".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn st() -> Stateless {
        Stateless::from_config(None, Duration::from_secs(300)).unwrap()
    }

    #[test]
    fn a_handle_round_trips_and_refuses_another_key_and_changes() {
        let a = st();
        let b = st();
        let mut h = SessionHandle::new("x-1".into(), 1000.0);
        h.found.push(("sqlite.read_query".into(), 3.0, 0));
        h.counts.insert("sqlite.read_query".into(), 2);
        let s = a.seal_handle(&h);
        assert_eq!(a.open_handle(&s), Ok(h));
        assert_eq!(b.open_handle(&s), Err(StateError::Invalid));
        let mut t = s.clone().into_bytes();
        let k = t.len() / 2;
        t[k] = if t[k] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            a.open_handle(&String::from_utf8(t).unwrap()),
            Err(StateError::Invalid)
        );
        assert_eq!(a.open_handle("not a handle"), Err(StateError::Invalid));
    }

    #[test]
    fn a_confirmation_is_not_a_handle_and_binds_tool_and_arguments() {
        let a = st();
        let args = json!({"query": "DELETE FROM t", "n": [1, {"b": 2, "a": 1}]});
        let p = PendingCall {
            kind: "ask".into(),
            tool: "sqlite.write_query".into(),
            digest: args_digest(&args),
            nonce: Stateless::nonce(),
            confirmed: false,
            inner: None,
            hash: None,
            trusted: None,
        };
        let s = a.seal_pending(&p);
        assert_eq!(a.open_handle(&s), Err(StateError::Invalid));
        let same = json!({"n": [1, {"a": 1, "b": 2}], "query": "DELETE FROM t"});
        assert_eq!(
            a.open_pending(&s, "sqlite.write_query", &same),
            Ok(p.clone())
        );
        let other = json!({"query": "DELETE FROM u", "n": [1, {"a": 1, "b": 2}]});
        assert_eq!(
            a.open_pending(&s, "sqlite.write_query", &other),
            Err(StateError::OtherCall)
        );
        assert_eq!(
            a.open_pending(&s, "sqlite.read_query", &same),
            Err(StateError::OtherCall)
        );
        assert_eq!(a.redeem(&p.nonce), Ok(()));
        assert_eq!(a.redeem(&p.nonce), Err(StateError::Replayed));
    }

    #[test]
    fn an_expired_confirmation_is_refused() {
        let a = Stateless::from_config(None, Duration::from_millis(1)).unwrap();
        let p = PendingCall {
            kind: "ask".into(),
            tool: "t".into(),
            digest: args_digest(&json!({})),
            nonce: Stateless::nonce(),
            confirmed: false,
            inner: None,
            hash: None,
            trusted: None,
        };
        let s = a.seal_pending(&p);
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(
            a.open_pending(&s, "t", &json!({})),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn a_configured_key_must_be_long_enough() {
        // SAFETY: the variable names are this test's own.
        unsafe {
            std::env::set_var("TOOLGATE_TEST_SHORT_KEY", "short");
            std::env::set_var("TOOLGATE_TEST_GOOD_KEY", "0123456789abcdef0123456789abcdef");
        }
        let e = Stateless::from_config(Some("TOOLGATE_TEST_SHORT_KEY"), Duration::from_secs(1))
            .unwrap_err();
        assert!(e.contains("at least 32"), "{e}");
        let e = Stateless::from_config(Some("TOOLGATE_TEST_UNSET_KEY_X"), Duration::from_secs(1))
            .unwrap_err();
        assert!(e.contains("not set"), "{e}");
        let a =
            Stateless::from_config(Some("TOOLGATE_TEST_GOOD_KEY"), Duration::from_secs(1)).unwrap();
        let b =
            Stateless::from_config(Some("TOOLGATE_TEST_GOOD_KEY"), Duration::from_secs(1)).unwrap();
        assert!(a.configured);
        let h = SessionHandle::new("r".into(), 5.0);
        assert_eq!(b.open_handle(&a.seal_handle(&h)), Ok(h));
    }

    #[test]
    fn handles_come_from_the_argument_then_the_meta() {
        let mut args = JsonObject::new();
        let mut meta = JsonObject::new();
        meta.insert(SESSION_META_KEY.into(), json!("m"));
        assert_eq!(handle_in(None, &[&meta]), Ok(Some("m".into())));
        args.insert(SESSION_ARGUMENT.into(), json!("a"));
        assert_eq!(handle_in(Some(&args), &[&meta]), Ok(Some("a".into())));
        args.insert(SESSION_ARGUMENT.into(), json!(3));
        assert!(handle_in(Some(&args), &[&meta]).is_err());
        assert_eq!(handle_in(None, &[]), Ok(None));
    }
}
