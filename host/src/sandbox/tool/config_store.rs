//! `wasi:config/store` for tool components, in both spellings components
//! import: `@0.2.0-rc.1` (what wasmtime's own crate implements) and
//! `@0.2.0-draft` (what Wassette's components import). Same interface,
//! same values: the settings' `pluginConfig` for the plugin.

use super::ToolState;
use crate::sandbox::SandboxError;

/// One version of the interface (its WIT, which bindgen takes only as a
/// literal): its bindings, linking, and the host side answered from the
/// call's values.
macro_rules! config_store {
    ($module:ident, $wit:literal) => {
        mod $module {
            wasmtime::component::bindgen!({
                inline: $wit,
                world: "imports",
            });

            use super::ToolState;
            use wasi::config::store;

            pub(super) fn link(
                linker: &mut wasmtime::component::Linker<ToolState>,
            ) -> wasmtime::Result<()> {
                use wasmtime::component::HasSelf;
                store::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
            }

            impl store::Host for ToolState {
                fn get(&mut self, key: String) -> Result<Option<String>, store::Error> {
                    Ok(self.config_value(&key))
                }

                fn get_all(&mut self) -> Result<Vec<(String, String)>, store::Error> {
                    Ok(self.config.to_vec())
                }
            }
        }
    };
}

config_store!(
    rc1,
    "package wasi:config@0.2.0-rc.1;
    interface store {
        variant error { upstream(string), io(string) }
        get: func(key: string) -> result<option<string>, error>;
        get-all: func() -> result<list<tuple<string, string>>, error>;
    }
    world imports { import store; }"
);
config_store!(
    draft,
    "package wasi:config@0.2.0-draft;
    interface store {
        variant error { upstream(string), io(string) }
        get: func(key: string) -> result<option<string>, error>;
        get-all: func() -> result<list<tuple<string, string>>, error>;
    }
    world imports { import store; }"
);

pub(super) fn link(
    linker: &mut wasmtime::component::Linker<ToolState>,
) -> Result<(), SandboxError> {
    rc1::link(linker).map_err(SandboxError::setup("linking wasi:config/store@0.2.0-rc.1"))?;
    draft::link(linker).map_err(SandboxError::setup("linking wasi:config/store@0.2.0-draft"))
}

impl ToolState {
    fn config_value(&self, key: &str) -> Option<String> {
        self.config
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}
