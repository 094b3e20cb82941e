use super::*;

#[test]
fn sources_parse_and_urls_need_a_pin() -> Result<(), InstallError> {
    let pin = "ab".repeat(32);
    assert_eq!(
        PluginSource::parse("./x.wasm")?,
        PluginSource::Path {
            path: "./x.wasm".into(),
            pin: None
        }
    );
    assert_eq!(
        PluginSource::parse(&format!(
            "https://e.com/x.wasm#sha256={}",
            pin.to_uppercase()
        ))?,
        PluginSource::Url {
            url: "https://e.com/x.wasm".into(),
            pin: pin.clone()
        }
    );
    assert!(matches!(
        PluginSource::parse("https://e.com/x.wasm"),
        Err(InstallError::Unpinned(_))
    ));
    assert!(matches!(
        PluginSource::parse("x.wasm#sha256=123"),
        Err(InstallError::BadPin(_))
    ));
    assert!(matches!(
        PluginSource::parse("ftp://e.com/x.wasm"),
        Err(InstallError::Source(_))
    ));
    Ok(())
}
