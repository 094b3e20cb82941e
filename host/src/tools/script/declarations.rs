//! What the model is shown of the `tools` object a script calls: one
//! TypeScript declaration per tool, made from its input JSON Schema
//! (`type`, `properties` with `required`, `items`, `enum`, `anyOf`/`oneOf`,
//! `const`), and the first sentence of its description (a line comment:
//! it holds any text a line does, `*/` included). A schema the
//! translation does not follow becomes `unknown` — the pipeline still
//! checks the input against the schema itself.

use crate::model::ToolSpec;
use serde_json::Value;

/// Nested schemas deeper than this are `unknown`.
const MAX_DEPTH: usize = 6;
/// A description longer than this is cut at a word.
const SUMMARY_CHARS: usize = 160;

/// `declare const tools: { … }` for `specs`, in their order.
pub fn declarations(specs: &[ToolSpec]) -> String {
    let mut out = String::from("declare const tools: {\n");
    for spec in specs {
        let summary = summary(&spec.description);
        if !summary.is_empty() {
            out.push_str(&format!("  // {summary}\n"));
        }
        let input = type_of(&spec.input_schema, 1);
        out.push_str(&format!(
            "  {}(input: {input}): Promise<string>;\n",
            property_name(&spec.name)
        ));
    }
    out.push_str("};");
    out
}

/// The schema's type, written as TypeScript.
fn type_of(schema: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    if let Some(constant) = schema.get("const") {
        return constant.to_string();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(Value::to_string));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            return union(options.iter().map(|o| type_of(o, depth + 1)));
        }
    }
    match schema.get("type") {
        Some(Value::Array(types)) => {
            union(types.iter().map(|t| type_of(&with_type(schema, t), depth)))
        }
        Some(Value::String(kind)) => match kind.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match schema.get("items") {
                Some(items) => format!("Array<{}>", type_of(items, depth + 1)),
                None => "unknown[]".into(),
            },
            "object" => object_type(schema, depth),
            _ => "unknown".into(),
        },
        _ if schema.get("properties").is_some() => object_type(schema, depth),
        _ => "unknown".into(),
    }
}

fn object_type(schema: &Value, depth: usize) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "Record<string, unknown>".into();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, field)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!(
                "{}{optional}: {}",
                property_name(name),
                type_of(field, depth + 1)
            )
        })
        .collect();
    format!("{{ {} }}", fields.join("; "))
}

/// `schema` with one of its types only (`"type": ["string", "null"]`).
fn with_type(schema: &Value, kind: &Value) -> Value {
    let mut one = schema.clone();
    one["type"] = kind.clone();
    one
}

fn union(parts: impl Iterator<Item = String>) -> String {
    let mut parts: Vec<String> = parts.collect();
    parts.dedup();
    match parts.len() {
        0 => "never".into(),
        _ => parts.join(" | "),
    }
}

/// A name as a property: as it is when it is an identifier, else quoted
/// (`"mcp__server__some-tool"`).
fn property_name(name: &str) -> String {
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    match identifier {
        true => name.to_string(),
        false => Value::String(name.to_string()).to_string(),
    }
}

/// The description's first sentence (or line), short, on one line.
fn summary(description: &str) -> String {
    let first = description
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let sentence = match first.find(". ") {
        Some(at) => &first[..=at],
        None => first,
    };
    let sentence = sentence.trim();
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |at| &cut[..at]);
    format!("{at_word}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        }
    }

    #[test]
    fn schemas_become_typescript_declarations() {
        let read = spec(
            "Read",
            "Reads a file from the local filesystem. More text here.",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string"}, "offset": {"type": "integer"},
                "mode": {"enum": ["a", "b"]}, "tags": {"type": "array", "items": {"type": "string"}},
                "maybe": {"type": ["string", "null"]}},
                "required": ["file_path"]}),
        );
        let mcp = spec("mcp__srv__do-it", "", json!({"type": "object"}));
        assert_eq!(
            declarations(&[read, mcp]),
            "declare const tools: {\n  // Reads a file from the local filesystem.\n  Read(input: { file_path: string; offset?: number; mode?: \"a\" | \"b\"; tags?: Array<string>; maybe?: string | null }): Promise<string>;\n  \"mcp__srv__do-it\"(input: Record<string, unknown>): Promise<string>;\n};"
        );
    }

    #[test]
    fn what_is_not_followed_is_unknown() {
        let mut deep = json!({"type": "string"});
        for _ in 0..10 {
            deep = json!({"type": "array", "items": deep});
        }
        assert!(type_of(&deep, 1).contains("unknown"));
        assert_eq!(type_of(&json!({"$ref": "#/x"}), 1), "unknown");
        // A line comment holds any text but a line break.
        assert_eq!(summary("globs like **/*.rs\nmore"), "globs like **/*.rs");
    }
}
