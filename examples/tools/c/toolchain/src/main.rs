//! The two steps between a C tool plugin and a component, as one host tool:
//!
//! - `c-tool-toolchain bindgen WIT_DIR WORLD OUT_DIR` writes the world's C
//!   bindings (`WORLD.h`, `WORLD.c`) with wit-bindgen's C generator;
//! - `c-tool-toolchain componentize WIT_DIR WORLD CORE.wasm OUT.wasm` embeds
//!   the world's type in the WASI preview 1 reactor module the C compiler
//!   built and wraps it into a component, with wasmtime's preview 1 reactor
//!   adapter. (The type is embedded here rather than linked from the
//!   generator's object file, which not every wasm linker carries through.)
//!
//! It is what `wit-bindgen c` and `wasm-tools component new --adapt` do; a
//! crate built by cargo from the lock file needs nothing but cargo, where
//! those CLIs would have to be installed at matching versions.

use anyhow::{Context, bail};
use wit_bindgen_core::wit_parser::{Resolve, WorldId};
use wit_component::{ComponentEncoder, StringEncoding, embed_component_metadata};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bindgen", wit, world, out] => bindgen(wit, world, out),
        ["componentize", wit, world, input, output] => componentize(wit, world, input, output),
        _ => bail!(
            "usage: c-tool-toolchain bindgen WIT_DIR WORLD OUT_DIR | componentize WIT_DIR WORLD CORE.wasm OUT.wasm"
        ),
    }
}

fn world(wit: &str, world: &str) -> anyhow::Result<(Resolve, WorldId)> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("reading the WIT package in {wit}"))?;
    let world = resolve.select_world(&[package], Some(world))?;
    Ok((resolve, world))
}

fn bindgen(wit: &str, world_name: &str, out: &str) -> anyhow::Result<()> {
    let (mut resolve, world) = world(wit, world_name)?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts {
        no_object_file: true,
        ..Default::default()
    }
    .build()
    .generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {out}"))?;
    for (name, contents) in files.iter() {
        let path = std::path::Path::new(out).join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        // The bindings reference a symbol of the object file they were told
        // not to write; define it, empty: `componentize` embeds the type.
        if let Some(stem) = name.strip_suffix(".c") {
            let stub = std::path::Path::new(out).join(format!("{stem}_component_type.c"));
            std::fs::write(
                &stub,
                format!(
                    "// The world's type is embedded by `c-tool-toolchain componentize`.\n\
                     void __component_type_object_force_link_{stem}(void) {{}}\n"
                ),
            )
            .with_context(|| format!("writing {}", stub.display()))?;
        }
    }
    Ok(())
}

fn componentize(wit: &str, world_name: &str, input: &str, output: &str) -> anyhow::Result<()> {
    let (resolve, world) = world(wit, world_name)?;
    let mut module = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8, false)?;
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
