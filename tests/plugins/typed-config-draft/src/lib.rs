//! Reads its configuration through `wasi:config/store@0.2.0-draft`.

wit_bindgen::generate!({
    world: "typed-config-draft",
    path: "wit",
    generate_all,
});

struct Draft;

impl Guest for Draft {
    fn settings() -> Result<String, String> {
        let all = wasi::config::store::get_all().map_err(|e| format!("{e:?}"))?;
        Ok(all
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

export!(Draft);
