//! Claude Code's `.mcp.json` shapes: `{"mcpServers": {NAME: SERVER}}`, or
//! the bare `{NAME: SERVER}` plugins write, where a stdio server has
//! `command`, `args`, `env` and an HTTP server has `type: "http"`, `url`,
//! `headers`; `${VAR}` and `${VAR:-default}` expand from the environment in
//! all of them.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum McpConfigError {
    #[error("{source_name}: not a valid MCP configuration: {reason}")]
    Invalid { source_name: String, reason: String },
    #[error("{source_name}: server `{server}`: {reason}")]
    Server {
        source_name: String,
        server: String,
        reason: String,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    /// Where it was configured (a file, or `--mcp-config`).
    pub source: String,
    /// Claude Code's name for that kind of place, told to hooks as the
    /// server's `source`: `dynamic` (`--mcp-config`, the SDK), `user`,
    /// `project`, `plugin`.
    pub scope: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        /// Let the server reach the network (default: no network, as every
        /// other process carapace starts).
        allow_network: bool,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// A server inside the Agent SDK's process (`"type": "sdk"`), reached
    /// through the control protocol once the SDK is connected.
    Sdk,
}

#[derive(Deserialize)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(rename = "allowNetwork", default)]
    allow_network: bool,
    /// The SDK repeats the server's name in its entry.
    #[allow(dead_code)]
    name: Option<String>,
}

/// A configuration read leniently: the servers that can start, and each
/// that cannot with why — one bad entry does not stop the others.
#[derive(Debug, Default)]
pub struct Parsed {
    pub servers: Vec<ServerConfig>,
    pub skipped: Vec<McpConfigError>,
}

/// Parses one configuration strictly: any entry carapace cannot start is
/// an error (for a configuration handed over by a program, the SDK's).
pub fn parse(
    text: &str,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expandable: &[String],
) -> Result<Vec<ServerConfig>, McpConfigError> {
    let parsed = parse_all(text, source_name, env, expandable)?;
    match parsed.skipped.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(parsed.servers),
    }
}

/// Parses one configuration (file contents or a JSON string), in either
/// shape; only a file that is not a configuration at all is an error.
/// `${VAR}` expands from `env`, except carapace's own variables (its
/// credentials and settings), which expand only when listed in
/// `expandable` — the user's `sandbox.mcpExpandableVariables`.
pub fn parse_all(
    text: &str,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expandable: &[String],
) -> Result<Parsed, McpConfigError> {
    let value = serde_json::from_str(text).map_err(|e| McpConfigError::Invalid {
        source_name: source_name.to_string(),
        reason: e.to_string(),
    })?;
    parse_value(value, source_name, env, expandable)
}

/// [`parse_all`] for a configuration already read as JSON.
pub fn parse_value(
    value: serde_json::Value,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expandable: &[String],
) -> Result<Parsed, McpConfigError> {
    let invalid = |reason: String| McpConfigError::Invalid {
        source_name: source_name.to_string(),
        reason,
    };
    // By name, whatever order the file wrote them in.
    let entries: BTreeMap<String, serde_json::Value> = server_entries(value)
        .map_err(invalid)?
        .into_iter()
        .collect();
    let mut parsed = Parsed::default();
    for (name, raw) in entries {
        match parse_server(&name, raw, source_name, env, expandable) {
            Ok(server) => parsed.servers.push(server),
            Err(reason) => parsed.skipped.push(McpConfigError::Server {
                source_name: source_name.to_string(),
                server: name,
                reason,
            }),
        }
    }
    Ok(parsed)
}

/// The servers of either shape, by name.
fn server_entries(
    value: serde_json::Value,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let serde_json::Value::Object(mut top) = value else {
        return Err("expected an object of servers".into());
    };
    match top.remove("mcpServers") {
        Some(serde_json::Value::Object(servers)) => {
            if let Some(other) = top.keys().next() {
                return Err(format!("unknown field `{other}`, expected `mcpServers`"));
            }
            Ok(servers)
        }
        Some(_) => Err("`mcpServers` is not an object".into()),
        // The bare map plugins write: every entry a server.
        None if top.values().all(serde_json::Value::is_object) => Ok(top),
        None => Err("expected `mcpServers`, or an object whose every entry is a server".into()),
    }
}

/// One server's entry.
fn parse_server(
    name: &str,
    raw: serde_json::Value,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expandable: &[String],
) -> Result<ServerConfig, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(
            "a server name may use only A-Z a-z 0-9 _ - (it becomes part of tool names)".into(),
        );
    }
    let mut unknown = Vec::new();
    let raw: RawServer = serde_ignored::deserialize(raw, |path| unknown.push(path.to_string()))
        .map_err(|e| e.to_string())?;
    if let Some(field) = unknown.first() {
        return Err(format!("unknown field `{field}`"));
    }
    let x = |value: &str| expand(value, env, expandable);
    let pairs = |map: &BTreeMap<String, String>| -> Result<Vec<(String, String)>, String> {
        map.iter().map(|(k, v)| Ok((k.clone(), x(v)?))).collect()
    };
    let transport = match raw.kind.as_deref() {
        None | Some("stdio") => {
            let command = raw
                .command
                .ok_or_else(|| "a stdio server needs a `command`".to_string())?;
            if raw.url.is_some() {
                return Err("a stdio server has no `url` (set \"type\": \"http\")".into());
            }
            Transport::Stdio {
                command: x(&command)?,
                args: raw.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?,
                env: pairs(&raw.env)?,
                allow_network: raw.allow_network,
            }
        }
        Some("http") => {
            let url = raw
                .url
                .ok_or_else(|| "an http server needs a `url`".to_string())?;
            Transport::Http {
                url: x(&url)?,
                headers: pairs(&raw.headers)?,
            }
        }
        Some("sdk") => Transport::Sdk,
        Some(other) => {
            return Err(format!(
                "unknown type `{other}` (carapace supports stdio and http)"
            ));
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        source: source_name.to_string(),
        scope: "dynamic",
    })
}

/// `${VAR}` and `${VAR:-default}`; an unset variable without a default is
/// an error, never an empty string silently.
fn expand(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expandable: &[String],
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{value}` has an unclosed `${{`"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if crate::hooks::is_carapace_variable(name) && !expandable.iter().any(|n| n == name) {
            return Err(format!(
                "`${{{name}}}` is one of carapace's own variables (its credentials and settings), which an MCP configuration may not read; list it in `sandbox.mcpExpandableVariables` of your own settings to allow it"
            ));
        }
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "`${{{name}}}` is not set in the environment (give a default with `${{{name}:-…}}`)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_string())
    }

    #[test]
    fn claude_codes_shape_with_expansion() -> Result<(), McpConfigError> {
        let servers = parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server", "${HOME_DIR:-/w}"], "env": {"KEY": "${TOKEN}"}},
                "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
            }}"#,
            ".mcp.json",
            &env,
            &[],
        )?;
        assert_eq!(servers.len(), 2);
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into(), "/w".into()],
                env: vec![("KEY".into(), "s3cret".into())],
                allow_network: false,
            }
        );
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "https://mcp.example.com/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            }
        );
        Ok(())
    }

    #[test]
    fn carapaces_own_variables_expand_only_when_the_user_lists_them() -> Result<(), McpConfigError>
    {
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-key".to_string());
        let text =
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${ANTHROPIC_API_KEY}"}}}}"#;
        assert!(parse(text, "f", &env, &[]).is_err());
        let servers = parse(text, "f", &env, &["ANTHROPIC_API_KEY".to_string()])?;
        let Transport::Stdio { env: vars, .. } = &servers[0].transport else {
            panic!("a stdio server");
        };
        assert_eq!(vars, &vec![("K".to_string(), "sk-key".to_string())]);
        Ok(())
    }

    #[test]
    fn errors_name_the_server_and_the_problem() {
        for (text, expected) in [
            (
                r#"{"mcpServers": {"a": {"args": []}}}"#,
                "needs a `command`",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "x"}}}"#,
                "unknown type `sse`",
            ),
            (
                r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
                "server name",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "${NOPE}"}}}"#,
                "`${NOPE}` is not set",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "surprise": 1}}}"#,
                "unknown field",
            ),
            (r#"[1]"#, "not a valid MCP configuration"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${ANTHROPIC_API_KEY}"}}}}"#,
                "carapace's own variables",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "http", "url": "https://e.example/${CARAPACE_CONFIG_DIR:-x}"}}}"#,
                "sandbox.mcpExpandableVariables",
            ),
        ] {
            match parse(text, "f", &env, &[]) {
                Err(e) => assert!(e.to_string().contains(expected), "{text}: {e}"),
                Ok(s) => panic!("{text}: accepted {s:?}"),
            }
        }
    }

    #[test]
    fn plugins_bare_map_loads_and_one_bad_entry_skips_only_itself() -> Result<(), McpConfigError> {
        let parsed = parse_all(
            r#"{"good": {"command": "server"}, "odd": {"type": "sse", "url": "https://e.example"},
                "other": {"type": "http", "url": "https://e.example/mcp"}}"#,
            "plugin/.mcp.json",
            &env,
            &[],
        )?;
        let names: Vec<&str> = parsed.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good", "other"]);
        assert_eq!(parsed.skipped.len(), 1);
        assert!(parsed.skipped[0].to_string().contains("server `odd`"));
        assert!(
            parse_all(r#"{"a": 1}"#, "f", &env, &[]).is_err(),
            "not servers"
        );
        Ok(())
    }
}
