//! The `carapace` binary.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = carapace::cli::Cli::parse();
    let filter = if cli.debug {
        tracing_subscriber::EnvFilter::new("carapace=debug")
    } else {
        tracing_subscriber::EnvFilter::try_from_env("CARAPACE_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

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
