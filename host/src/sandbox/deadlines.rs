//! Call deadlines kept by the epoch thread.
//!
//! A tokio timer per call costs more than a small call: while the runtime's
//! timer driver is parked with no timer pending, registering one must wake
//! it (an eventfd write, a thread woken) so that it parks again with a
//! timeout. The epoch thread already wakes every tick to interrupt spinning
//! guests; it also wakes each call whose deadline has passed, so a call's
//! deadline costs a lock and a push. Deadlines fire within a tick of their
//! time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The deadlines of the calls running now.
#[derive(Default)]
pub(crate) struct Deadlines {
    next_id: AtomicU64,
    pending: Mutex<Vec<Pending>>,
}

struct Pending {
    id: u64,
    at: Instant,
    notify: Arc<Notify>,
}

impl Deadlines {
    /// A deadline `after` from now; it is forgotten when dropped.
    pub(crate) fn start(self: &Arc<Self>, after: Duration) -> Deadline {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        let at = Instant::now().checked_add(after);
        if let (Some(at), Ok(mut pending)) = (at, self.pending.lock()) {
            pending.push(Pending {
                id,
                at,
                notify: notify.clone(),
            });
        }
        Deadline {
            id,
            notify,
            owner: self.clone(),
        }
    }

    /// Wakes every call whose deadline is at or before `now` (the epoch
    /// thread, each tick).
    pub(crate) fn fire_expired(&self, now: Instant) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        pending.retain(|p| {
            let expired = p.at <= now;
            if expired {
                // Stores a permit if the call is not waiting yet.
                p.notify.notify_one();
            }
            !expired
        });
    }
}

/// One call's deadline.
pub(crate) struct Deadline {
    id: u64,
    notify: Arc<Notify>,
    owner: Arc<Deadlines>,
}

impl Deadline {
    /// Resolves once the deadline has passed.
    pub(crate) async fn expired(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.owner.pending.lock() {
            pending.retain(|p| p.id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_deadline_fires_once_passed_and_is_forgotten_when_dropped() {
        let deadlines = Arc::new(Deadlines::default());
        let soon = deadlines.start(Duration::from_millis(5));
        let later = deadlines.start(Duration::from_secs(3600));
        deadlines.fire_expired(Instant::now());
        let fired = tokio::time::timeout(Duration::from_millis(20), soon.expired()).await;
        assert!(fired.is_err(), "not before its time");
        deadlines.fire_expired(Instant::now() + Duration::from_millis(10));
        let fired = tokio::time::timeout(Duration::from_millis(20), soon.expired()).await;
        assert!(fired.is_ok(), "fired once passed");
        let not_yet = tokio::time::timeout(Duration::from_millis(20), later.expired()).await;
        assert!(not_yet.is_err());
        drop(later);
        assert_eq!(deadlines.pending.lock().map(|p| p.len()).unwrap_or(9), 0);
    }
}
