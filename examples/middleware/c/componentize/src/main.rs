//! The C middleware example's build tool:
//!
//! - `componentize-middleware bindings WIT_DIR OUT_DIR` writes the C
//!   bindings of the `middleware-hook` world (wit-bindgen's C generator),
//!   with the object file that carries the world's type into the module;
//! - `componentize-middleware wrap CORE.wasm OUT.wasm` wraps a WASI
//!   preview 1 reactor module (what C compilers build for `wasm32-wasi`)
//!   linked with them, with the preview 1 reactor adapter, into the
//!   middleware component.
//!
//! (wit-bindgen's CLI and wasm-tools do the same; this keeps the example's
//! toolchain to cargo and Zig.)

use anyhow::{Context, bail};
use std::path::Path;
use wit_bindgen_core::Files;
use wit_bindgen_core::wit_parser::Resolve;
use wit_component::ComponentEncoder;

const WORLD: &str = "middleware-hook";

fn world(wit: &str) -> anyhow::Result<(Resolve, wit_bindgen_core::wit_parser::WorldId)> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(Path::new(wit))
        .with_context(|| format!("reading the WIT in {wit}"))?;
    let world = resolve.select_world(&[package], Some(WORLD))?;
    Ok((resolve, world))
}

fn bindings(wit: &str, out: &str) -> anyhow::Result<()> {
    let (mut resolve, world) = world(wit)?;
    let mut files = Files::default();
    // With the object file that carries the world's type into the module.
    let mut generator = wit_bindgen_c::Opts::default().build();
    generator.generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out)?;
    for (name, contents) in files.iter() {
        std::fs::write(Path::new(out).join(name), contents)
            .with_context(|| format!("writing {name}"))?;
    }
    Ok(())
}

fn wrap(input: &str, output: &str) -> anyhow::Result<()> {
    let module = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let component = ComponentEncoder::default()
        .module(&module)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .validate(true)
        .encode()
        .context("building the component")?;
    std::fs::write(output, component).with_context(|| format!("writing {output}"))?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["bindings", wit, out] => bindings(wit, out),
        ["wrap", input, output] => wrap(input, output),
        _ => bail!(
            "usage: componentize-middleware bindings WIT_DIR OUT_DIR | wrap CORE.wasm OUT.wasm"
        ),
    }
}
