//! The StructuredOutput tool of `--json-schema`: its input schema is the
//! user's schema, so the pipeline's validation stage is the check, and an
//! invalid call's error tells the model what to fix. The loop reads a
//! valid call's input as the run's answer
//! ([`crate::agent::StructuredOutputConfig`]).

use crate::agent::STRUCTURED_OUTPUT_TOOL;
use crate::sandbox::{CallContext, ToolContent, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::NativeTool;
use futures::future::BoxFuture;
use serde_json::Value;

const DESCRIPTION: &str = "Give your final answer in the structured form this session requires: call this tool once, at the end of your work, with the answer as its input. Its input schema is the required format; input that does not match it is refused with the reasons.";

const ACCEPTED: &str = "Structured output provided successfully";

/// Why a `--json-schema` schema cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("--json-schema is not JSON: {0}")]
    NotJson(String),
    #[error("--json-schema is not a valid JSON Schema: {0}")]
    Invalid(String),
    #[error(
        "--json-schema must describe an object (\"type\": \"object\"): the answer is a tool call's input, which is one"
    )]
    NotAnObject,
}

/// Parses and checks a `--json-schema` value.
pub fn parse_schema(text: &str) -> Result<Value, SchemaError> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| SchemaError::NotJson(e.to_string()))?;
    jsonschema::validator_for(&schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject);
    }
    Ok(schema)
}

/// The tool's definition for `schema` (already checked by [`parse_schema`]).
pub fn definition(schema: &Value) -> ToolDefinition {
    ToolDefinition {
        name: STRUCTURED_OUTPUT_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: schema.to_string(),
        annotations: Default::default(),
    }
}

/// Accepts what the pipeline validated; the answer travels back as the
/// result's structured value.
pub struct StructuredOutputTool;

impl NativeTool for StructuredOutputTool {
    fn concurrency_safe(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        _context: &'a CallContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            Ok(ToolOutput {
                content: vec![ToolContent::Text(ACCEPTED.into())],
                is_error: false,
                structured: Some(input.to_string()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_checked_before_the_run() {
        assert!(parse_schema(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#).is_ok());
        assert!(matches!(
            parse_schema("{nope"),
            Err(SchemaError::NotJson(_))
        ));
        assert!(matches!(
            parse_schema(r#"{"type":"object","properties":{"a":{"type":12}}}"#),
            Err(SchemaError::Invalid(_))
        ));
        assert!(matches!(
            parse_schema(r#"{"type":"array"}"#),
            Err(SchemaError::NotAnObject)
        ));
    }
}
