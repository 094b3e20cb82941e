//! `componentize-command-hook CORE.wasm OUT.wasm`: wraps a WASI preview 1
//! command module (what C, Zig or TinyGo build for `wasm32-wasi`) into a
//! WASI 0.2 command component, with the preview 1 command adapter.
//!
//! Why not a stock tool: the adapter reports any non-zero `proc_exit` as
//! plain failure (code 1), and Claude Code's hook protocol needs exit code 2.
//! The module may therefore import `wasi:cli/exit@0.2.12#exit-with-code`
//! directly; this tool declares that import's type (the module's component
//! metadata) so the component carries it. A module that does not use it is
//! wrapped unchanged.

use anyhow::{Context, bail};
use wit_component::{ComponentEncoder, StringEncoding, embed_component_metadata};
use wit_parser::Resolve;

/// The one interface a hook module may import beyond preview 1.
const WIT: &str = r#"
package wasi:cli@0.2.12;

interface exit {
    exit: func(status: result);
    exit-with-code: func(status-code: u8);
}

world hook-command {
    import exit;
}
"#;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        bail!("usage: componentize-command-hook CORE.wasm OUT.wasm");
    };
    let mut module = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let mut resolve = Resolve::default();
    let package = resolve.push_str("hook-command.wit", WIT)?;
    let world = resolve.select_world(&[package], Some("hook-command"))?;
    embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8, false)?;
    let component = ComponentEncoder::default()
        .module(&module)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
        )?
        .validate(true)
        .encode()
        .context("building the component")?;
    std::fs::write(output, component).with_context(|| format!("writing {output}"))?;
    Ok(())
}
