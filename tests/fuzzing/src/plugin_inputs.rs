//! What a plugin install reads besides the component: its carapace
//! manifest (TOML), a Wassette `policy.yaml`, and the source argument
//! (`PATH`, `URL#sha256=…`, `oci://…`). Checks: a manifest that parses
//! gives a valid plugin name and reads the same when written again; a
//! URL source always carries its pin; any text is read or refused.

use carapace::plugin_store::install::PluginSource;
use carapace::plugin_store::manifest::{Manifest, valid_plugin_name};

pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Some(text) = crate::text(rest) else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(manifest) = Manifest::parse(text) {
                let name = &manifest.plugin.name;
                assert!(
                    valid_plugin_name(name),
                    "a manifest named {name:?} was accepted"
                );
                let again = match toml::to_string(&manifest) {
                    Ok(again) => again,
                    Err(e) => panic!("an accepted manifest does not serialise: {e}"),
                };
                assert_eq!(
                    Manifest::parse(&again).ok(),
                    Some(manifest),
                    "a manifest changed when written again"
                );
            }
        }
        1 => {
            let _ = carapace::plugin_store::policy::parse(text);
        }
        _ => match PluginSource::parse(text) {
            Ok(PluginSource::Url { pin, .. }) => {
                assert!(pin.len() == 64 && pin.chars().all(|c| c.is_ascii_hexdigit()));
            }
            Ok(PluginSource::Path { path, .. }) => {
                assert!(
                    !path.to_string_lossy().contains("://"),
                    "{path:?} read as a path"
                );
            }
            _ => {}
        },
    }
}
