//! Per-call limits and the resource limiter that enforces the memory cap.

use std::time::Duration;

/// The limits one call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock time from instantiation to the call's return.
    pub deadline: Duration,
    /// Total linear memory the instance may hold, in bytes.
    pub memory_bytes: usize,
    /// Size of the result the host accepts, in bytes (text plus images).
    pub output_bytes: usize,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(120),
            memory_bytes: 256 << 20,
            output_bytes: 16 << 20,
        }
    }
}

/// Enforces [`CallLimits::memory_bytes`] and remembers whether it refused a
/// growth, so that the trap that usually follows (a Rust guest aborts when an
/// allocation fails) is reported as "memory cap", not as a bare trap.
pub(crate) struct CallLimiter {
    memory_bytes: usize,
    /// Bytes held by all of the store's memories together.
    in_use: usize,
    /// The growth last allowed, undone if the engine then fails it.
    last_growth: usize,
    refused: bool,
}

impl CallLimiter {
    pub(crate) fn new(memory_bytes: usize) -> Self {
        Self {
            memory_bytes,
            in_use: 0,
            last_growth: 0,
            refused: false,
        }
    }

    /// Linear memory the store's instances hold now (memories only grow,
    /// so after a call this is its peak).
    pub(crate) fn in_use(&self) -> usize {
        self.in_use
    }

    pub(crate) fn refused_growth(&self) -> bool {
        self.refused
    }
}

// Totals per store: one component instance holds a few core instances,
// memories and tables (the guest, the WASI adapter shims); these bounds leave
// room for that and nothing like a fork bomb.
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl wasmtime::ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Every memory's creation and growth passes here (creation with
        // `current == 0`), so the running sum is the store's total.
        let after = self.in_use.saturating_sub(current).saturating_add(desired);
        if after > self.memory_bytes {
            self.refused = true;
            return Ok(false);
        }
        self.last_growth = after - self.in_use.min(after);
        self.in_use = after;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.in_use -= self.last_growth.min(self.in_use);
        self.refused = true;
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

/// A call's running time, which stops while the call waits on its host
/// for something that is not its own work: a middleware hook's deadline
/// covers the hook, not the tool call its `next` runs.
#[derive(Debug, Default)]
pub struct CallClock {
    state: std::sync::Mutex<ClockState>,
    resumed: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct ClockState {
    paused_since: Option<std::time::Instant>,
    paused_for: Duration,
    /// The call said it is still working (an MCP server's progress): its
    /// deadline counts from here, within `cap`.
    touched: Option<std::time::Instant>,
    /// The most the call may run, touched or not.
    cap: Option<Duration>,
}

/// The clock stands still while this lives.
pub struct ClockPause<'a>(&'a CallClock);

impl Drop for ClockPause<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.state.lock()
            && let Some(since) = state.paused_since.take()
        {
            state.paused_for += since.elapsed();
        }
        self.0.resumed.notify_waiters();
    }
}

impl CallClock {
    /// A clock whose deadline is an idle time: each [`Self::touch`] starts
    /// it again, up to `cap` in all.
    pub fn idle(cap: Duration) -> Self {
        let clock = Self::default();
        if let Ok(mut state) = clock.state.lock() {
            state.cap = Some(cap);
        }
        clock
    }

    /// The call is still working: its deadline counts from now (within
    /// the cap, on a clock made with [`Self::idle`]).
    pub fn touch(&self) {
        if let Ok(mut state) = self.state.lock()
            && state.cap.is_some()
        {
            state.touched = Some(std::time::Instant::now());
        }
        self.resumed.notify_waiters();
    }

    /// Stops the clock until the pause is dropped.
    pub fn pause(&self) -> ClockPause<'_> {
        if let Ok(mut state) = self.state.lock() {
            state
                .paused_since
                .get_or_insert_with(std::time::Instant::now);
        }
        ClockPause(self)
    }

    /// Resolves once the call has run for `limit` since `started`, not
    /// counting its pauses.
    pub(crate) async fn expired(&self, started: std::time::Instant, limit: Duration) {
        loop {
            let resumed = self.resumed.notified();
            let (paused, paused_for, touched, cap) = match self.state.lock() {
                Ok(state) => (
                    state.paused_since.is_some(),
                    state.paused_for,
                    state.touched,
                    state.cap,
                ),
                // A poisoned clock counts as never paused nor touched.
                Err(_) => (false, Duration::ZERO, None, None),
            };
            if paused {
                resumed.await;
                continue;
            }
            let idle_from = touched.unwrap_or(started).max(started);
            let mut due = idle_from + limit;
            if let Some(cap) = cap {
                due = due.min(started + cap);
            }
            let due = due + paused_for;
            if std::time::Instant::now() >= due {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep_until(due.into()) => {}
                () = resumed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn time_paused_does_not_count_toward_the_limit() {
        let clock = CallClock::default();
        let started = Instant::now();
        let limit = Duration::from_millis(100);
        {
            let _paused = clock.pause();
            // While paused, the limit cannot pass however long it lasts.
            let expired =
                tokio::time::timeout(Duration::from_millis(250), clock.expired(started, limit))
                    .await;
            assert!(expired.is_err(), "expired while paused");
        }
        // Resumed: the 100 ms count from what ran, not from the start.
        clock.expired(started, limit).await;
        assert!(started.elapsed() >= Duration::from_millis(350));
    }

    #[tokio::test]
    async fn a_touch_restarts_an_idle_deadline_up_to_its_cap() {
        let limit = Duration::from_millis(100);
        // Touched every 50 ms, an idle clock runs on — until its cap.
        let clock = CallClock::idle(Duration::from_millis(400));
        let started = Instant::now();
        let touching = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                clock.touch();
            }
        };
        tokio::select! {
            () = clock.expired(started, limit) => {}
            () = touching => {}
        }
        let ran = started.elapsed();
        assert!(ran >= Duration::from_millis(400), "{ran:?}");
        assert!(ran < Duration::from_millis(1000), "{ran:?}");
        // The control: a plain clock ignores touches.
        let plain = CallClock::default();
        let started = Instant::now();
        let touching = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                plain.touch();
            }
        };
        tokio::select! {
            () = plain.expired(started, limit) => {}
            () = touching => {}
        }
        assert!(started.elapsed() < Duration::from_millis(300));
    }
}
