//! A late answer to an abandoned `server/discover` probe is dropped.
//!
//! With `era = "auto"` (the default) the proxy opens a downstream server
//! with rmcp's `ClientLifecycleMode::Auto`: it sends `server/discover`
//! (2026-07-28, "Versioning and Compatibility": a client that supports
//! both eras probes first) and, when no answer comes within rmcp's probe
//! timeout (10 s), falls back to the `initialize` handshake on the same
//! connection. A server that was merely slow to start (a Python server
//! importing its SDK on a loaded machine) then answers the probe first, and
//! rmcp, waiting for the answer to `initialize`, fails the start with
//! "conflict initialized response id: expected 1, got 0"; the proxy
//! restarts the server, which can fail the same way.
//!
//! [`StaleProbeFilter`] wraps the downstream transport. It remembers the
//! ids of the `server/discover` requests sent and not yet answered; once an
//! `initialize` request is sent, those probes are abandoned and an answer
//! (result or error) to one of them is dropped, with a debug log, instead of
//! reaching rmcp. Every other message passes unchanged and in order.
//!
//! A late *result* (not an error) says the server speaks 2026-07-28. A
//! server of that era only may then refuse the `initialize` that followed
//! (the Python SDK 2.x serves the era of the first message it read): the
//! filter records the fact ([`StaleProbeFilter::new`]'s flag), and the
//! proxy's next start of that server probes with `server/discover` alone,
//! without rmcp's timeout (bounded by the start-up timeout instead), so one
//! restart puts it right.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A downstream transport that drops late answers to abandoned
/// `server/discover` probes (see the module doc).
pub(crate) struct StaleProbeFilter<T> {
    inner: T,
    /// `server/discover` requests sent, not answered, not abandoned.
    probes: Vec<RequestId>,
    /// Probes abandoned for `initialize`: their answers are dropped.
    abandoned: Vec<RequestId>,
    /// Set when an abandoned probe gets a result: the server is modern.
    answered_late: Arc<AtomicBool>,
}

impl<T> StaleProbeFilter<T> {
    /// `inner`, filtered; `answered_late` is set when an abandoned probe is
    /// answered with a result (the server speaks 2026-07-28).
    pub fn new(inner: T, answered_late: Arc<AtomicBool>) -> Self {
        StaleProbeFilter {
            inner,
            probes: Vec::new(),
            abandoned: Vec::new(),
            answered_late,
        }
    }

    /// Notes a request about to be sent.
    fn sent(&mut self, item: &TxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Request(r) = item {
            match &r.request {
                ClientRequest::DiscoverRequest(_) => self.probes.push(r.id.clone()),
                ClientRequest::InitializeRequest(_) => self.abandoned.append(&mut self.probes),
                _ => {}
            }
        }
    }

    /// Whether a received message is the late answer to an abandoned probe
    /// (then forgotten); an answer to a live probe ends that probe.
    fn is_stale(&mut self, m: &RxJsonRpcMessage<RoleClient>) -> bool {
        let id = match m {
            JsonRpcMessage::Response(r) => &r.id,
            JsonRpcMessage::Error(e) => match &e.id {
                Some(id) => id,
                None => return false,
            },
            _ => return false,
        };
        if let Some(i) = self.abandoned.iter().position(|a| a == id) {
            self.abandoned.swap_remove(i);
            if matches!(m, JsonRpcMessage::Response(_)) {
                self.answered_late.store(true, Ordering::SeqCst);
            }
            return true;
        }
        self.probes.retain(|p| p != id);
        false
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for StaleProbeFilter<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.sent(&item);
        self.inner.send(item)
    }

    /// The next message that is not a late probe answer. Cancel-safe as the
    /// inner transport is: a message is only ever dropped on purpose.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let m = self.inner.receive().await?;
            if self.is_stale(&m) {
                tracing::debug!(
                    "dropped a late answer to an abandoned server/discover probe \
                     (the server was slower to start than the probe's timeout)"
                );
                continue;
            }
            return Some(m);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        ClientJsonRpcMessage, DiscoverRequest, DiscoverRequestParams, ErrorData, InitializeRequest,
        InitializeRequestParams, ServerJsonRpcMessage, ServerResult,
    };
    use std::collections::VecDeque;

    /// A transport that answers from a script and records what was sent.
    struct Scripted {
        incoming: VecDeque<ServerJsonRpcMessage>,
    }

    impl Transport<RoleClient> for Scripted {
        type Error = std::io::Error;
        fn send(
            &mut self,
            _item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }
        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            self.incoming.pop_front()
        }
        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn discover(id: i64) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {})),
            RequestId::Number(id),
        )
    }

    fn initialize(id: i64) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(InitializeRequest::new(
                InitializeRequestParams::default(),
            )),
            RequestId::Number(id),
        )
    }

    fn answer(id: i64) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(id))
    }

    fn id_of(m: &ServerJsonRpcMessage) -> Option<RequestId> {
        match m {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_late_probe_answer_after_initialize_is_dropped() {
        let late_error = ServerJsonRpcMessage::error(
            ErrorData::method_not_found::<rmcp::model::DiscoverRequestMethod>(),
            Some(RequestId::Number(2)),
        );
        let late = Arc::new(AtomicBool::new(false));
        let mut t = StaleProbeFilter::new(
            Scripted {
                incoming: [answer(0), answer(1), late_error, answer(3)].into(),
            },
            late.clone(),
        );
        // probe 0 times out, initialize 1; probe 2 times out, initialize 3
        let _ = t.send(discover(0)).await;
        let _ = t.send(initialize(1)).await;
        assert_eq!(
            id_of(&t.receive().await.unwrap()),
            Some(RequestId::Number(1))
        );
        // a late result: the server is modern
        assert!(late.swap(false, Ordering::SeqCst));
        let _ = t.send(discover(2)).await;
        let _ = t.send(initialize(3)).await;
        assert_eq!(
            id_of(&t.receive().await.unwrap()),
            Some(RequestId::Number(3))
        );
        assert!(t.receive().await.is_none());
        // a late error says nothing of the era
        assert!(!late.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_probe_answered_in_time_and_other_answers_pass() {
        let late = Arc::new(AtomicBool::new(false));
        let mut t = StaleProbeFilter::new(
            Scripted {
                incoming: [answer(0), answer(1), answer(0)].into(),
            },
            late.clone(),
        );
        let _ = t.send(discover(0)).await;
        assert_eq!(
            id_of(&t.receive().await.unwrap()),
            Some(RequestId::Number(0))
        );
        // answered: a later initialize abandons nothing
        let _ = t.send(initialize(1)).await;
        assert_eq!(
            id_of(&t.receive().await.unwrap()),
            Some(RequestId::Number(1))
        );
        // an id reused by a later request (not a probe) still passes
        assert_eq!(
            id_of(&t.receive().await.unwrap()),
            Some(RequestId::Number(0))
        );
        assert!(!late.load(Ordering::SeqCst));
    }
}
