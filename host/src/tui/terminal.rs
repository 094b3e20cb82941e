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
        // Enter works everywhere. Asked once: a later screen's question
        // would wait on the event reader its key stream holds.
        static KEYBOARD_PROTOCOL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let keyboard_protocol = *KEYBOARD_PROTOCOL
            .get_or_init(|| terminal::supports_keyboard_enhancement().unwrap_or(false));
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

/// Keeps what a person types between two screens (while `/clear`,
/// `/resume` or the session picker's choice builds the next session) for
/// the next one. Without it the terminal is back in line mode for that
/// moment: its driver echoes the keys over the screen, turns Enter into a
/// newline (which the next screen reads as Ctrl-J, a new line in the
/// prompt, not a send) and holds them as one line. Here input is taken key
/// by key, unechoed and untranslated, as the screens read it; output is
/// left as it is, so a warning printed meanwhile still starts its lines at
/// the left. Restores what it found when dropped. Nothing to hold when
/// stdin is no terminal.
pub struct KeysHeld {
    found: Option<nix::sys::termios::Termios>,
}

impl KeysHeld {
    pub fn hold() -> Self {
        use nix::sys::termios::{InputFlags, LocalFlags, SetArg, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let Ok(found) = tcgetattr(&stdin) else {
            return Self { found: None };
        };
        let mut held = found.clone();
        held.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        held.input_flags.remove(InputFlags::ICRNL);
        match tcsetattr(&stdin, SetArg::TCSANOW, &held) {
            Ok(()) => Self { found: Some(found) },
            Err(_) => Self { found: None },
        }
    }
}

impl Drop for KeysHeld {
    fn drop(&mut self) {
        if let Some(found) = &self.found {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                found,
            );
        }
    }
}
