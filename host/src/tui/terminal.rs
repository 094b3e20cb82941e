//! The terminal taken for the interactive screen and given back as it
//! was: raw mode off, bracketed paste and the keyboard protocol turned
//! off, the cursor shown — when the screen closes, when it is dropped on
//! an error, and from the panic hook before the panic's message prints.

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{cursor, execute, terminal};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the terminal is ours now (the panic hook restores it only then).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Holds the terminal in raw mode; restores it when dropped.
pub struct TerminalGuard {
    keyboard_protocol: bool,
}

impl TerminalGuard {
    pub fn take() -> std::io::Result<Self> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        TAKEN.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        execute!(out, EnableBracketedPaste)?;
        // Shift+Enter is told apart from Enter only where the terminal
        // speaks the keyboard protocol (kitty, WezTerm, foot, …); `\`
        // Enter works everywhere.
        let keyboard_protocol = terminal::supports_keyboard_enhancement().unwrap_or(false);
        if keyboard_protocol {
            execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
        }
        Ok(Self { keyboard_protocol })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.keyboard_protocol {
            let _ = execute!(std::io::stdout(), PopKeyboardEnhancementFlags);
        }
        restore();
    }
}

/// Gives the terminal back (safe to call more than once).
fn restore() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        let _ = execute!(std::io::stdout(), DisableBracketedPaste, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            // The message starts on a line of its own, below the screen.
            eprintln!();
            previous(info);
        }));
    });
}
