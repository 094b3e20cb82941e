//! The input queue: user messages that arrive while the loop runs (stream-
//! json input). The loop absorbs what is queued after each tool batch,
//! before the next request; nothing queued is ever dropped — what no turn
//! consumed is reported as discarded when the session ends.

use crate::model::ImageSource;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::Notify;

/// One user message waiting to be consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedInput {
    /// The command's id, for its lifecycle lines.
    pub uuid: String,
    pub text: String,
    /// Images sent with the text; they go before it in the user message.
    pub images: Vec<ImageSource>,
}

impl QueuedInput {
    /// A message of text only.
    pub fn text(uuid: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uuid: uuid.into(),
            text: text.into(),
            images: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Inner {
    items: VecDeque<QueuedInput>,
    closed: bool,
    /// Inputs still to come from inside (a background agent's report):
    /// the queue is not finished while any is held, even once closed.
    holds: usize,
}

/// A promise of one more input (see [`InputQueue::hold`]); released when
/// dropped.
pub struct InputHold(std::sync::Arc<InputQueue>);

impl Drop for InputHold {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.0.inner.lock() {
            inner.holds = inner.holds.saturating_sub(1);
        }
        self.0.changed.notify_waiters();
    }
}

#[derive(Default)]
pub struct InputQueue {
    inner: Mutex<Inner>,
    changed: Notify,
}

impl InputQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, input: QueuedInput) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.items.push_back(input);
        }
        self.changed.notify_waiters();
    }

    /// No more input will come (stdin closed).
    /// Keeps the queue from finishing until the hold is dropped (push the
    /// promised input first).
    pub fn hold(self: &std::sync::Arc<Self>) -> InputHold {
        if let Ok(mut inner) = self.inner.lock() {
            inner.holds += 1;
        }
        InputHold(self.clone())
    }

    pub fn close(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.closed = true;
        }
        self.changed.notify_waiters();
    }

    /// Everything queued now, oldest first.
    pub fn take_all(&self) -> Vec<QueuedInput> {
        self.inner
            .lock()
            .map(|mut inner| inner.items.drain(..).collect())
            .unwrap_or_default()
    }

    /// The next message, waiting for one; `None` once closed and empty.
    pub async fn next(&self) -> Option<QueuedInput> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Ok(mut inner) = self.inner.lock() {
                if let Some(item) = inner.items.pop_front() {
                    return Some(item);
                }
                if inner.closed && inner.holds == 0 {
                    return None;
                }
            } else {
                return None;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn input(n: u32) -> QueuedInput {
        QueuedInput::text(format!("u{n}"), format!("m{n}"))
    }

    #[tokio::test]
    async fn delivers_in_order_waits_and_ends_when_closed() {
        let queue = Arc::new(InputQueue::new());
        queue.push(input(1));
        assert_eq!(queue.next().await, Some(input(1)));
        let waiter = {
            let queue = queue.clone();
            tokio::spawn(async move { queue.next().await })
        };
        tokio::task::yield_now().await;
        queue.push(input(2));
        assert_eq!(waiter.await.ok().flatten(), Some(input(2)));
        queue.push(input(3));
        queue.push(input(4));
        assert_eq!(queue.take_all(), vec![input(3), input(4)]);
        queue.close();
        assert_eq!(queue.next().await, None);
    }

    #[tokio::test]
    async fn a_held_queue_waits_for_what_is_promised_after_closing() {
        let queue = Arc::new(InputQueue::new());
        let hold = queue.hold();
        queue.close();
        let waiting = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "closed but held: not finished");
        queue.push(input(7));
        drop(hold);
        assert_eq!(waiting.await.ok().flatten(), Some(input(7)));
        assert_eq!(queue.next().await, None);
    }
}
