//! Progress relayed before the answer: a downstream server's
//! `notifications/progress` for a call reach the client before the call's
//! result does.
//!
//! rmcp's service loop reads the server's messages in order, but hands each
//! notification to a task of its own and each response to the waiting
//! request at once. A server that sends three progress notifications and
//! then its result can thus have its result returned (and the call's relay
//! unregistered) before the task of the third notification has run: the
//! client saw two of three (the 2026-07-28 conformance scenario
//! `tools-call-with-progress` caught it on a loaded machine). Over Streamable
//! HTTP the request's stream closes with the result, so a notification sent
//! after it is lost.
//!
//! The same concurrency lets a later notification overtake an earlier one;
//! the relay drops a value not above the last one sent (progress must
//! increase), so the client saw fewer than were sent.
//!
//! So the proxy numbers, in transport order, the progress notifications that
//! arrive for each relayed call ([`CountingTransport`] wraps the downstream
//! transport, numbers each one as it is read, before rmcp sees it, and
//! stamps the number into the notification's extensions, which rmcp hands
//! to the handler). The handler relays notification *n* only after *n − 1*
//! ([`Order::wait_turn`]), so none overtakes another. When the answer
//! arrives every notification the server sent before it has been numbered,
//! and the call waits ([`Order::settle`]) until all of them are relayed.
//! Each wait lasts at most [`SETTLE_LIMIT`]: a relay stuck on a slow client
//! does not hold the others, or the answer, longer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{GetExtensions as _, JsonRpcMessage, ProgressToken, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{Peer, RoleClient, RoleServer};

use super::downstream::Downstream;

/// The longest a progress notification waits for the one before it, and a
/// call's answer for its progress notifications, to be relayed.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(2);

/// The transport-order number of a progress notification within its call
/// (0 for the first), stamped into the notification's extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProgressSeq(pub u64);

/// The order of one call's progress notifications: how many were read from
/// the transport, and the number of the next one to relay.
#[derive(Debug, Default)]
pub(crate) struct Order {
    arrived: AtomicU64,
    turn: AtomicU64,
    moved: tokio::sync::Notify,
}

impl Order {
    /// A notification was read from the transport: its number.
    pub fn arrive(&self) -> u64 {
        self.arrived.fetch_add(1, Ordering::SeqCst)
    }

    /// Waits until every notification numbered below `seq` was relayed, at
    /// most [`SETTLE_LIMIT`]. Returns whether it came to its turn in time.
    pub async fn wait_turn(&self, seq: u64) -> bool {
        self.wait_for(seq, SETTLE_LIMIT).await
    }

    /// Notification `seq` was relayed (or dropped): the next one's turn.
    pub fn done(&self, seq: u64) {
        self.turn.fetch_max(seq + 1, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    /// Waits until every notification read so far was relayed, at most
    /// [`SETTLE_LIMIT`]. Returns whether it settled in time.
    pub async fn settle(&self) -> bool {
        self.settle_within(SETTLE_LIMIT).await
    }

    /// [`Order::settle`] with another limit.
    async fn settle_within(&self, limit: Duration) -> bool {
        self.wait_for(self.arrived.load(Ordering::SeqCst), limit)
            .await
    }

    async fn wait_for(&self, turn: u64, limit: Duration) -> bool {
        let wait = async {
            loop {
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.turn.load(Ordering::SeqCst) >= turn {
                    return;
                }
                moved.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

/// Where a call's progress goes: the client session and its token; the last
/// progress value sent (a value not above it is dropped, as progress must
/// increase); the order of the call's notifications.
pub(crate) struct Relay {
    /// The client session that made the call.
    pub client: Peer<RoleServer>,
    /// The client's own progress token.
    pub token: ProgressToken,
    /// The last progress value relayed.
    pub last: tokio::sync::Mutex<Option<f64>>,
    /// Transport order of the call's notifications.
    pub order: Order,
}

impl Relay {
    /// A relay to `client` under the client's `token`, nothing seen yet.
    pub fn new(client: Peer<RoleServer>, token: ProgressToken) -> Self {
        Relay {
            client,
            token,
            last: tokio::sync::Mutex::new(None),
            order: Order::default(),
        }
    }
}

/// A downstream transport that numbers each progress notification of a
/// relayed call as it is read, in the server's order, and stamps the number
/// ([`ProgressSeq`]) into the notification's extensions.
pub(crate) struct CountingTransport<T> {
    inner: T,
    server: Arc<Downstream>,
}

impl<T> CountingTransport<T> {
    /// `inner`, numbering for the relays of `server`.
    pub fn new(inner: T, server: Arc<Downstream>) -> Self {
        CountingTransport { inner, server }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for CountingTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    /// The inner transport's next message, numbered after it is read (no
    /// await after the inner one: as cancel-safe as the inner transport).
    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let server = self.server.clone();
        let next = self.inner.receive();
        async move {
            let mut m = next.await;
            if let Some(JsonRpcMessage::Notification(n)) = &mut m
                && let ServerNotification::ProgressNotification(p) = &n.notification
                && let Some(relay) = server.relay(&p.params.progress_token)
            {
                let seq = relay.order.arrive();
                n.notification.extensions_mut().insert(ProgressSeq(seq));
            }
            m
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_notification_waits_for_the_one_before_it() {
        let order = Arc::new(Order::default());
        let (a, b) = (order.arrive(), order.arrive());
        assert_eq!((a, b), (0, 1));
        let o = order.clone();
        let second = tokio::spawn(async move {
            let in_time = o.wait_turn(1).await;
            (in_time, o.turn.load(Ordering::SeqCst))
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "the second went before the first");
        assert!(order.wait_turn(0).await);
        order.done(0);
        assert_eq!(second.await.unwrap(), (true, 1));
    }

    #[tokio::test]
    async fn the_answer_waits_until_every_notification_read_is_relayed() {
        let order = Arc::new(Order::default());
        for _ in 0..3 {
            order.arrive();
        }
        let o = order.clone();
        let answer = tokio::spawn(async move { o.settle().await });
        order.done(0);
        order.done(1);
        tokio::task::yield_now().await;
        assert!(
            !answer.is_finished(),
            "answered with one notification unrelayed"
        );
        order.done(2);
        assert!(answer.await.unwrap());
        // nothing read: settles at once
        assert!(Order::default().settle().await);
    }

    #[tokio::test]
    async fn a_stuck_relay_holds_the_answer_no_longer_than_the_limit() {
        let order = Order::default();
        order.arrive();
        let limit = Duration::from_millis(50);
        let started = std::time::Instant::now();
        assert!(!order.settle_within(limit).await);
        assert!(started.elapsed() >= limit);
        // the next one goes after the limit too, and a late `done` of the
        // stuck one does not move the turn back
        order.arrive();
        assert!(!order.wait_for(1, limit).await);
        order.done(1);
        order.done(0);
        assert!(order.settle_within(limit).await);
    }
}
