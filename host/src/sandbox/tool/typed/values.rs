//! JSON to WIT values and back, checked against the function's types: a
//! value that does not fit (an integer out of range, a missing field, an
//! unknown case) is refused with where it is, before the call.

use super::schema::Unsupported;
use serde_json::{Map, Value, json};
use wasmtime::component::{Type, Val};

/// Why an input does not fit the function's types; `at` is where, as a
/// JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{reason}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
pub struct Mismatch {
    pub at: String,
    pub reason: String,
}

fn mismatch(at: &str, reason: impl Into<String>) -> Mismatch {
    Mismatch {
        at: at.to_string(),
        reason: reason.into(),
    }
}

/// The named values of an input object, in the order of `params`.
pub fn params(input: &Value, params: &[(String, Type)]) -> Result<Vec<Val>, Mismatch> {
    let Value::Object(object) = input else {
        return Err(mismatch("", "the input must be an object"));
    };
    fields(
        object,
        params.iter().map(|(n, t)| (n.as_str(), t.clone())),
        "",
    )
}

fn fields<'a>(
    object: &Map<String, Value>,
    expected: impl Iterator<Item = (&'a str, Type)>,
    at: &str,
) -> Result<Vec<Val>, Mismatch> {
    let expected: Vec<(&str, Type)> = expected.collect();
    if let Some(unknown) = object
        .keys()
        .find(|k| !expected.iter().any(|(n, _)| n == k))
    {
        return Err(mismatch(at, format!("unknown field `{unknown}`")));
    }
    expected
        .into_iter()
        .map(|(name, ty)| {
            let here = format!("{at}/{name}");
            match (object.get(name), &ty) {
                (None, Type::Option(_)) => Ok(Val::Option(None)),
                (None, _) => Err(mismatch(at, format!("missing field `{name}`"))),
                (Some(value), _) => to_val(value, &ty, &here),
            }
        })
        .collect()
}

/// One value of `ty` from JSON.
pub fn to_val(value: &Value, ty: &Type, at: &str) -> Result<Val, Mismatch> {
    let wrong = |expected: &str| mismatch(at, format!("expected {expected}, got {}", kind(value)));
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        Type::S8 => Val::S8(int(value, at)?),
        Type::U8 => Val::U8(int(value, at)?),
        Type::S16 => Val::S16(int(value, at)?),
        Type::U16 => Val::U16(int(value, at)?),
        Type::S32 => Val::S32(int(value, at)?),
        Type::U32 => Val::U32(int(value, at)?),
        Type::S64 => Val::S64(int(value, at)?),
        Type::U64 => Val::U64(int(value, at)?),
        Type::Float32 => Val::Float32(float32(value, at)?),
        Type::Float64 => Val::Float64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Type::Char => {
            let text = value.as_str().ok_or_else(|| wrong("one character"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => {
                    return Err(mismatch(
                        at,
                        format!("expected one character, got {text:?}"),
                    ));
                }
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(|| wrong("a string"))?.into()),
        Type::List(list) => {
            Val::List(items(value, &list.ty(), at).map_err(|_| wrong("an array"))??)
        }
        Type::FixedLengthList(list) => {
            let values = items(value, &list.ty(), at).map_err(|_| wrong("an array"))??;
            if values.len() != list.len() as usize {
                return Err(mismatch(at, format!("expected {} items", list.len())));
            }
            Val::FixedLengthList(values)
        }
        Type::Map(map) => map_val(value, &map.key(), &map.value(), at)?,
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(|| wrong("an object"))?;
            let names: Vec<(String, Type)> = record
                .fields()
                .map(|f| (f.name.to_string(), f.ty))
                .collect();
            let vals = fields(
                object,
                names.iter().map(|(n, t)| (n.as_str(), t.clone())),
                at,
            )?;
            Val::Record(names.into_iter().map(|(n, _)| n).zip(vals).collect())
        }
        Type::Tuple(tuple) => tuple_val(value, tuple.types().collect(), at)?,
        Type::Variant(variant) => variant_val(value, variant, at)?,
        Type::Enum(e) => {
            let name = value.as_str().ok_or_else(|| wrong("a string"))?;
            if !e.names().any(|n| n == name) {
                let names: Vec<&str> = e.names().collect();
                return Err(mismatch(at, format!("`{name}` is not one of {names:?}")));
            }
            Val::Enum(name.to_string())
        }
        Type::Option(option) => match value {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(to_val(v, &option.ty(), at)?))),
        },
        Type::Result(result) => result_val(value, result, at)?,
        Type::Flags(flags) => flags_val(value, flags, at)?,
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(mismatch(at, Unsupported("a handle").0));
        }
    })
}

fn map_val(value: &Value, key: &Type, val: &Type, at: &str) -> Result<Val, Mismatch> {
    let entries = value.as_array().ok_or_else(|| {
        mismatch(
            at,
            format!("expected an array of {{key, value}}, got {}", kind(value)),
        )
    })?;
    let mut pairs = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let here = format!("{at}/{i}");
        let (Some(k), Some(v)) = (entry.get("key"), entry.get("value")) else {
            return Err(mismatch(&here, "expected {key, value}"));
        };
        pairs.push((to_val(k, key, &here)?, to_val(v, val, &here)?));
    }
    Ok(Val::Map(pairs))
}

fn tuple_val(value: &Value, types: Vec<Type>, at: &str) -> Result<Val, Mismatch> {
    let array = value
        .as_array()
        .ok_or_else(|| mismatch(at, format!("expected an array, got {}", kind(value))))?;
    if array.len() != types.len() {
        return Err(mismatch(
            at,
            format!("expected {} items, got {}", types.len(), array.len()),
        ));
    }
    let vals = array
        .iter()
        .zip(&types)
        .enumerate()
        .map(|(i, (v, t))| to_val(v, t, &format!("{at}/{i}")))
        .collect::<Result<_, _>>()?;
    Ok(Val::Tuple(vals))
}

/// Refuses an object holding a key its schema does not list (the schema
/// the model is shown says `additionalProperties: false`).
fn only_keys(value: &Value, allowed: &[&str], at: &str) -> Result<(), Mismatch> {
    match value
        .as_object()
        .and_then(|object| object.keys().find(|k| !allowed.contains(&k.as_str())))
    {
        Some(unknown) => Err(mismatch(at, format!("unknown key `{unknown}`"))),
        None => Ok(()),
    }
}

fn variant_val(
    value: &Value,
    variant: &wasmtime::component::types::Variant,
    at: &str,
) -> Result<Val, Mismatch> {
    only_keys(value, &["tag", "val"], at)?;
    let tag = value
        .get("tag")
        .and_then(Value::as_str)
        .ok_or_else(|| mismatch(at, format!("expected {{tag, val}}, got {}", kind(value))))?;
    let case = variant
        .cases()
        .find(|c| c.name == tag)
        .ok_or_else(|| mismatch(at, format!("unknown case `{tag}`")))?;
    let payload = match (&case.ty, value.get("val")) {
        (Some(t), Some(v)) => Some(Box::new(to_val(v, t, &format!("{at}/val"))?)),
        (Some(_), None) => return Err(mismatch(at, format!("case `{tag}` needs `val`"))),
        (None, Some(_)) => return Err(mismatch(at, format!("case `{tag}` takes no `val`"))),
        (None, None) => None,
    };
    Ok(Val::Variant(tag.to_string(), payload))
}

fn result_val(
    value: &Value,
    result: &wasmtime::component::types::ResultType,
    at: &str,
) -> Result<Val, Mismatch> {
    only_keys(value, &["ok", "err"], at)?;
    // A side without a payload takes `null`, as its schema says.
    let side = |t: Option<Type>, v: &Value, here: &str| match t {
        Some(t) => to_val(v, &t, here).map(|v| Some(Box::new(v))),
        None if v.is_null() => Ok(None),
        None => Err(mismatch(here, format!("expected null, got {}", kind(v)))),
    };
    match (value.get("ok"), value.get("err")) {
        (Some(v), None) => Ok(Val::Result(Ok(side(result.ok(), v, &format!("{at}/ok"))?))),
        (None, Some(v)) => Ok(Val::Result(Err(side(
            result.err(),
            v,
            &format!("{at}/err"),
        )?))),
        _ => Err(mismatch(
            at,
            format!("expected {{ok}} or {{err}}, got {}", kind(value)),
        )),
    }
}

fn flags_val(
    value: &Value,
    flags: &wasmtime::component::types::Flags,
    at: &str,
) -> Result<Val, Mismatch> {
    let object = value.as_object().ok_or_else(|| {
        mismatch(
            at,
            format!("expected an object of booleans, got {}", kind(value)),
        )
    })?;
    let mut set = Vec::new();
    for (name, on) in object {
        if !flags.names().any(|n| n == name) {
            return Err(mismatch(at, format!("unknown flag `{name}`")));
        }
        let on = on
            .as_bool()
            .ok_or_else(|| mismatch(at, format!("flag `{name}` must be a boolean")))?;
        if on {
            set.push(name.clone());
        }
    }
    Ok(Val::Flags(set))
}

fn items(value: &Value, ty: &Type, at: &str) -> Result<Result<Vec<Val>, Mismatch>, ()> {
    let array = value.as_array().ok_or(())?;
    Ok(array
        .iter()
        .enumerate()
        .map(|(i, v)| to_val(v, ty, &format!("{at}/{i}")))
        .collect())
}

fn int<T: TryFrom<i64> + TryFrom<u64>>(value: &Value, at: &str) -> Result<T, Mismatch> {
    let out_of_range = || {
        mismatch(
            at,
            format!("{value} is out of range for {}", std::any::type_name::<T>()),
        )
    };
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                T::try_from(i).map_err(|_| out_of_range())
            } else if let Some(u) = n.as_u64() {
                T::try_from(u).map_err(|_| out_of_range())
            } else {
                Err(mismatch(at, format!("expected an integer, got {n}")))
            }
        }
        other => Err(mismatch(
            at,
            format!("expected an integer, got {}", kind(other)),
        )),
    }
}

/// A number an `f32` holds: one past its range would become an infinity
/// the guest was never sent.
fn float32(value: &Value, at: &str) -> Result<f32, Mismatch> {
    let f = value
        .as_f64()
        .ok_or_else(|| mismatch(at, format!("expected a number, got {}", kind(value))))?;
    let narrowed = f as f32;
    if narrowed.is_infinite() {
        return Err(mismatch(at, format!("{value} is out of range for f32")));
    }
    Ok(narrowed)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A WIT value as JSON, in the shapes [`to_val`] reads.
pub fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => json!(b),
        Val::S8(n) => json!(n),
        Val::U8(n) => json!(n),
        Val::S16(n) => json!(n),
        Val::U16(n) => json!(n),
        Val::S32(n) => json!(n),
        Val::U32(n) => json!(n),
        Val::S64(n) => json!(n),
        Val::U64(n) => json!(n),
        Val::Float32(f) => float(f64::from(*f)),
        Val::Float64(f) => float(*f),
        Val::Char(c) => json!(c.to_string()),
        Val::String(s) => json!(s),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Map(pairs) => Value::Array(
            pairs
                .iter()
                .map(|(k, v)| json!({"key": to_json(k), "value": to_json(v)}))
                .collect(),
        ),
        Val::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(n, v)| (n.clone(), to_json(v)))
                .collect(),
        ),
        Val::Variant(tag, payload) => match payload {
            Some(v) => json!({"tag": tag, "val": to_json(v)}),
            None => json!({"tag": tag}),
        },
        Val::Enum(name) => json!(name),
        Val::Option(v) => v.as_deref().map_or(Value::Null, to_json),
        Val::Result(Ok(v)) => json!({"ok": v.as_deref().map_or(Value::Null, to_json)}),
        Val::Result(Err(v)) => json!({"err": v.as_deref().map_or(Value::Null, to_json)}),
        Val::Flags(names) => {
            Value::Object(names.iter().map(|n| (n.clone(), json!(true))).collect())
        }
        Val::Resource(_) => json!("<resource>"),
        Val::Future(_) => json!("<future>"),
        Val::Stream(_) => json!("<stream>"),
        Val::ErrorContext(_) => json!("<error context>"),
    }
}

/// Floats JSON cannot hold (NaN, infinities) as their names.
fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or_else(|| json!(f.to_string()), Value::Number)
}
