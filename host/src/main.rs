//! The `carapace` binary.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The OS-sandbox helper: carapace re-executes itself to confine a command
    // (Landlock, no network) before exec'ing it. Not a user-facing command.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(carapace::sandbox::process::HELPER_ARG) {
        let code = carapace::sandbox::process::helper_main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = carapace::cli::Cli::parse();
    let filter = if cli.debug || cli.debug_file.is_some() {
        tracing_subscriber::EnvFilter::new("carapace=debug")
    } else {
        tracing_subscriber::EnvFilter::try_from_env("CARAPACE_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
    };
    match &cli.debug_file {
        Some(path) => {
            let file = match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                Ok(file) => file,
                Err(e) => {
                    eprintln!("Error: --debug-file {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            };
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .init();
        }
        None => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(carapace::cli::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
