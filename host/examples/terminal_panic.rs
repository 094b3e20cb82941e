//! Takes the terminal as the interactive screen does, then panics: the
//! interactive tests run it on a pseudo-terminal to see the terminal given
//! back by the panic hook (raw mode off, cursor shown) before the message.

fn main() -> std::io::Result<()> {
    let _guard = carapace::tui::terminal::TerminalGuard::take()?;
    // Hidden, as the screen hides it while it draws.
    print!("\x1b[?25lthe screen is up\r\n");
    std::io::Write::flush(&mut std::io::stdout())?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    panic!("a deliberate panic, to test the terminal is given back");
}
