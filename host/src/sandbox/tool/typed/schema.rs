//! A WIT type as JSON Schema, for the model: what a typed component's
//! function takes, derived from the component's own types.
//!
//! Records are objects whose `option` fields are not required; integers
//! carry their ranges; a `char` is a one-character string; `flags` are an
//! object of booleans; a `variant` is one of `{"tag": case, "val": …}`.

use serde_json::{Map, Value, json};
use wasmtime::component::Type;

/// Why a type cannot be passed from JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

/// The schema of one value of `ty`.
pub fn of(ty: &Type) -> Result<Value, Unsupported> {
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => integer(i8::MIN as i64, i8::MAX as u64),
        Type::U8 => integer(0, u8::MAX as u64),
        Type::S16 => integer(i16::MIN as i64, i16::MAX as u64),
        Type::U16 => integer(0, u16::MAX as u64),
        Type::S32 => integer(i32::MIN as i64, i32::MAX as u64),
        Type::U32 => integer(0, u32::MAX as u64),
        Type::S64 => integer(i64::MIN, i64::MAX as u64),
        Type::U64 => integer(0, u64::MAX),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1,
            "description": "one Unicode character"}),
        Type::String => json!({"type": "string"}),
        Type::List(list) => json!({"type": "array", "items": of(&list.ty())?}),
        Type::FixedLengthList(list) => json!({"type": "array", "items": of(&list.ty())?,
            "minItems": list.len(), "maxItems": list.len()}),
        Type::Map(map) => json!({"type": "array", "items": {"type": "object",
            "properties": {"key": of(&map.key())?, "value": of(&map.value())?},
            "required": ["key", "value"], "additionalProperties": false}}),
        Type::Record(record) => object(record.fields().map(|f| (f.name.to_string(), f.ty)))?,
        Type::Tuple(tuple) => {
            let items = tuple
                .types()
                .map(|t| of(&t))
                .collect::<Result<Vec<_>, _>>()?;
            json!({"type": "array", "prefixItems": items, "minItems": items.len(),
                "maxItems": items.len()})
        }
        Type::Variant(variant) => {
            let cases = variant
                .cases()
                .map(|case| {
                    Ok(match &case.ty {
                        Some(payload) => json!({"type": "object",
                            "properties": {"tag": {"const": case.name}, "val": of(payload)?},
                            "required": ["tag", "val"], "additionalProperties": false}),
                        None => {
                            json!({"type": "object", "properties": {"tag": {"const": case.name}},
                            "required": ["tag"], "additionalProperties": false})
                        }
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            json!({"oneOf": cases})
        }
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Option(option) => json!({"anyOf": [{"type": "null"}, of(&option.ty())?]}),
        Type::Result(result) => {
            let side = |t: Option<Type>| t.map_or(Ok(json!({"type": "null"})), |t| of(&t));
            json!({"oneOf": [
                {"type": "object", "properties": {"ok": side(result.ok())?}, "required": ["ok"],
                    "additionalProperties": false},
                {"type": "object", "properties": {"err": side(result.err())?}, "required": ["err"],
                    "additionalProperties": false},
            ]})
        }
        Type::Flags(flags) => {
            let props: Map<String, Value> = flags
                .names()
                .map(|n| (n.to_string(), json!({"type": "boolean"})))
                .collect();
            json!({"type": "object", "properties": props, "additionalProperties": false})
        }
        Type::Own(_) | Type::Borrow(_) => return Err(Unsupported("a resource")),
        Type::Future(_) => return Err(Unsupported("a future")),
        Type::Stream(_) => return Err(Unsupported("a stream")),
        Type::ErrorContext => return Err(Unsupported("an error context")),
    })
}

/// An object of named values: an `option` is not required (absent or
/// `null` is `none`), everything else is.
pub fn object(fields: impl Iterator<Item = (String, Type)>) -> Result<Value, Unsupported> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::String(name.clone()));
        }
        properties.insert(name, of(&ty)?);
    }
    Ok(
        json!({"type": "object", "properties": properties, "required": required,
        "additionalProperties": false}),
    )
}

fn integer(min: i64, max: u64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}
