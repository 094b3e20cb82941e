//! The keys of a settings file carapace does not read. Claude Code
//! documents many more than carapace reads (its interface, its login, its
//! updates, features carapace does not have); each is named in a warning,
//! never dropped without a word. What carapace reads is what
//! [`SettingsFile`](super::SettingsFile) declares: a key serde ignores is
//! one carapace does not read.

/// Why carapace does not honour a key Claude Code users often set, where
/// "not used" would not say enough.
const EXPLAINED: &[(&str, &str)] = &[
    (
        "sandbox.excludedCommands",
        "carapace runs every command in its OS sandbox",
    ),
    (
        "sandbox.autoAllowBashIfSandboxed",
        "commands are allowed by rules and modes, not by being sandboxed",
    ),
    (
        "sandbox.network.allowUnixSockets",
        "commands never reach UNIX sockets outside their sandbox",
    ),
    (
        "sandbox.network.allowAllUnixSockets",
        "commands never reach UNIX sockets outside their sandbox",
    ),
    (
        "sandbox.filesystem.allowWrite",
        "commands write where --add-dir and permissions.additionalDirectories say",
    ),
    (
        "enabledPlugins",
        "plugins load with --plugin-dir or carapace's own plugin commands",
    ),
    (
        "enableAllProjectMcpServers",
        "a project's MCP servers start in a trusted workspace",
    ),
    ("statusLine", "carapace's screen draws its own status line"),
];

/// A key carapace did not read: its dotted path, and why when there is
/// more to say than "not used".
pub(super) type Unread = (String, Option<&'static str>);

/// Reads `text` as `T`, with the dotted path of every key it ignored,
/// each with why when there is more to say than "not used".
pub(super) fn read<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<(T, Vec<Unread>), serde_json::Error> {
    let mut unread = Vec::new();
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = serde_ignored::deserialize(&mut reader, |path| {
        let dotted = path.to_string();
        if dotted == "$schema" {
            // Where an editor finds the file's schema: nothing to honour.
            return;
        }
        let why = EXPLAINED
            .iter()
            .find(|(name, _)| *name == dotted)
            .map(|(_, why)| *why);
        unread.push((dotted, why));
    })?;
    reader.end()?;
    Ok((value, unread))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_key_carapace_does_not_read_is_named_at_its_depth() -> Result<(), String> {
        let file = json!({
            "model": "sonnet",
            "theme": "dark",
            "permissions": {"deny": [], "disableAutoMode": "disable"},
            "sandbox": {"enabled": true, "excludedCommands": ["docker"],
                        "network": {"allowUnixSockets": ["/run/x"], "allowedDomains": []}},
            "env": {"ANYTHING": "1"},
            "hooks": {"NewEvent": []}
        });
        let (_, unread): (super::super::SettingsFile, _) =
            read(&file.to_string()).map_err(|e| e.to_string())?;
        let mut names: Vec<String> = unread.into_iter().map(|(n, _)| n).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "permissions.disableAutoMode",
                "sandbox.excludedCommands",
                "sandbox.network.allowUnixSockets",
                "theme"
            ]
        );
        Ok(())
    }
}
