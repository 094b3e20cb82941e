//! The command sandbox's helper on its own: what `carapace __sandbox-exec`
//! does, in a binary that links only the sandbox code. carapace runs it for
//! every command when it sits beside carapace's own binary — it starts in a
//! fraction of the time the full binary (wasmtime, the embedded components)
//! needs to be loaded and relocated.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match args.first().map(String::as_str) {
        Some(carapace::sandbox::process::HELPER_ARG) => &args[1..],
        _ => &args[..],
    };
    let code = carapace::sandbox::process::helper_main(args);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
