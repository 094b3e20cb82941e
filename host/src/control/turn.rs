//! What the SDK may change for the turns to come, read at each turn's start:
//! the thinking budget (`set_max_thinking_tokens`) and the reminders at the
//! head of the first message (a new skills listing after `reload_skills`).

use crate::model::ThinkingChoice;
use std::sync::Mutex;

#[derive(Default)]
pub struct TurnOverrides {
    thinking: Mutex<Option<ThinkingChoice>>,
    user_context: Mutex<Option<Vec<String>>>,
    /// Changes the next turn must see that are being made (a model
    /// switch its hooks are judging), and where their ends are told.
    changing: std::sync::Arc<Changing>,
}

impl TurnOverrides {
    /// Holds the next turn back until the returned mark is dropped.
    pub fn hold(&self) -> ChangeMark {
        self.changing
            .count
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ChangeMark(self.changing.clone())
    }

    /// Resolves once no change is being made.
    pub async fn settled(&self) {
        loop {
            let ended = self.changing.ended.notified();
            if self
                .changing
                .count
                .load(std::sync::atomic::Ordering::SeqCst)
                == 0
            {
                return;
            }
            ended.await;
        }
    }

    /// `set_max_thinking_tokens`: `None` goes back to the model's default,
    /// 0 turns thinking off, N is a budget.
    pub fn set_thinking_tokens(&self, tokens: Option<u32>) {
        let choice = match tokens {
            None => ThinkingChoice::Default,
            Some(0) => ThinkingChoice::Off,
            Some(n) => ThinkingChoice::Budget(n),
        };
        if let Ok(mut thinking) = self.thinking.lock() {
            *thinking = Some(choice);
        }
    }

    /// Back to what the session started with.
    pub fn clear_thinking(&self) {
        if let Ok(mut thinking) = self.thinking.lock() {
            *thinking = None;
        }
    }

    /// The `alwaysThinkingEnabled` setting, set while running.
    pub fn set_thinking(&self, choice: ThinkingChoice) {
        if let Ok(mut thinking) = self.thinking.lock() {
            *thinking = Some(choice);
        }
    }

    pub fn set_user_context(&self, context: Vec<String>) {
        if let Ok(mut held) = self.user_context.lock() {
            *held = Some(context);
        }
    }

    pub fn thinking(&self) -> Option<ThinkingChoice> {
        self.thinking.lock().ok().and_then(|t| *t)
    }

    pub fn user_context(&self) -> Option<Vec<String>> {
        self.user_context.lock().ok().and_then(|c| c.clone())
    }
}

#[derive(Default)]
pub struct Changing {
    count: std::sync::atomic::AtomicUsize,
    ended: tokio::sync::Notify,
}

/// A change being made; the next turn waits until it is dropped.
pub struct ChangeMark(std::sync::Arc<Changing>);

impl Drop for ChangeMark {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.ended.notify_waiters();
    }
}
