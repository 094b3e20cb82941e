//! `wasi:config/store@0.2.0-draft`, the spelling Wassette's components
//! import (wasmtime provides `@0.2.0-rc.1`, linked beside it). Same
//! interface, same values: the settings' `pluginConfig` for the plugin.

use super::ToolState;
use crate::sandbox::SandboxError;

wasmtime::component::bindgen!({
    inline: "
        package wasi:config@0.2.0-draft;

        interface store {
            variant error {
                upstream(string),
                io(string),
            }
            get: func(key: string) -> result<option<string>, error>;
            get-all: func() -> result<list<tuple<string, string>>, error>;
        }

        world imports {
            import store;
        }
    ",
    world: "imports",
});

use wasi::config::store;

pub(super) fn link(
    linker: &mut wasmtime::component::Linker<ToolState>,
) -> Result<(), SandboxError> {
    use wasmtime::component::HasSelf;
    store::add_to_linker::<ToolState, HasSelf<ToolState>>(linker, |state| state)
        .map_err(SandboxError::setup("linking wasi:config/store@0.2.0-draft"))
}

impl store::Host for ToolState {
    fn get(&mut self, key: String) -> Result<Option<String>, store::Error> {
        Ok(self
            .config_pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone()))
    }

    fn get_all(&mut self) -> Result<Vec<(String, String)>, store::Error> {
        Ok(self.config_pairs.to_vec())
    }
}
