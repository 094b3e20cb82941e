//! A typed component's tool input: JSON from the model, checked against
//! the WIT types of the function it calls and turned into WIT values.
//! Checks: an input the conversion accepts is valid under the JSON Schema
//! the model is shown for the same types, and the values written back as
//! JSON and read again are the same values.
//!
//! The types come from a component built here from the WIT below
//! (wit-component's dummy module: the types are real, nothing runs), so
//! they are exactly what wasmtime reports for a component in the wild.

use carapace::sandbox::{typed_schema, typed_values};
use serde_json::{Map, Value};
use std::sync::OnceLock;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Type};

const WIT: &str = r#"
package fuzz:types@0.1.0;

interface shapes {
    record point { x: s32, y: s32, label: option<string> }
    record nested { at: point, tags: list<string>, depth: option<option<u8>> }
    enum colour { red, green, blue }
    flags mode { read, write, exec }
    variant shape { none, dot(point), line(tuple<point, point>), named(string) }

    numbers: func(a: u8, b: s8, c: u16, d: s16, e: u32, f: s32, g: u64, h: s64) -> u8;
    floats: func(x: f32, y: f64, c: char, on: bool) -> u8;
    records: func(p: point, n: nested, maybe: option<point>) -> u8;
    choices: func(c: colour, m: mode, s: shape, many: list<shape>) -> u8;
    outcomes: func(r: result<u32, string>, bare: result, left: result<_, string>, right: result<string>) -> u8;
    containers: func(t: tuple<u8, s64, string>, grid: list<list<u8>>, letters: option<list<char>>) -> u8;
}

world fuzz {
    export shapes;
}
"#;

/// One function's parameters and the schema of its input.
struct Func {
    params: Vec<(String, Type)>,
    schema: jsonschema::Validator,
}

fn funcs() -> &'static [Func] {
    static FUNCS: OnceLock<Vec<Func>> = OnceLock::new();
    FUNCS.get_or_init(|| match build() {
        Ok(funcs) => funcs,
        Err(e) => panic!("the fuzz component does not build: {e}"),
    })
}

fn build() -> Result<Vec<Func>, Box<dyn std::error::Error>> {
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_str("fuzz.wit", WIT)?;
    let world = resolve.select_world(&[package], Some("fuzz"))?;
    let mangling = wit_parser::ManglingAndAbi::Legacy(wit_parser::LiftLowerAbi::Sync);
    let mut module = wit_component::dummy_module(&resolve, world, mangling);
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )?;
    let bytes = wit_component::ComponentEncoder::default()
        .module(&module)?
        .validate(true)
        .encode()?;
    let engine = wasmtime::Engine::default();
    let component = Component::new(&engine, &bytes)?;
    let mut funcs = Vec::new();
    for (_, export) in component.component_type().exports(&engine) {
        let ComponentItem::ComponentInstance(instance) = export.ty else {
            continue;
        };
        for (_, item) in instance.exports(&engine) {
            if let ComponentItem::ComponentFunc(func) = item.ty {
                let params: Vec<(String, Type)> =
                    func.params().map(|(n, t)| (n.to_string(), t)).collect();
                let schema = typed_schema::object(params.iter().cloned())
                    .map_err(|e| format!("a fuzz type has no schema: {}", e.0))?;
                let schema = jsonschema::validator_for(&schema)?;
                funcs.push(Func { params, schema });
            }
        }
    }
    if funcs.len() != 6 {
        return Err(format!("expected 6 functions, found {}", funcs.len()).into());
    }
    Ok(funcs)
}

pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let funcs = funcs();
    let func = &funcs[usize::from(which) % funcs.len()];
    let Some(input) = crate::text(rest).and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return;
    };
    let Ok(vals) = typed_values::params(&input, &func.params) else {
        return;
    };
    assert!(
        func.schema.is_valid(&input),
        "accepted but invalid under the schema the model is shown: {input}"
    );
    let written: Map<String, Value> = func
        .params
        .iter()
        .zip(&vals)
        .map(|(param, val)| (param.0.clone(), typed_values::to_json(val)))
        .collect();
    let written = Value::Object(written);
    match typed_values::params(&written, &func.params) {
        Ok(again) => assert_eq!(again, vals, "{input} → {written}: the values changed"),
        Err(e) => panic!("{input} was accepted; written back as {written} it is refused: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The checks are not vacuous: an input of each function's types is
    /// accepted (and so goes through both checks), one that breaks them is
    /// refused.
    #[test]
    fn each_function_takes_an_input_of_its_types() {
        let point = json!({"x": 1, "y": -2});
        let good = [
            json!({"a": 1, "b": -1, "c": 2, "d": -2, "e": 3, "f": -3, "g": 4, "h": -4}),
            json!({"x": 0.5, "y": 2.5, "c": "é", "on": true}),
            json!({"p": point, "n": {"at": point, "tags": [], "depth": 1}}),
            json!({"c": "red", "m": {"read": true}, "s": {"tag": "none"}, "many": []}),
            json!({"r": {"ok": 1}, "bare": {"ok": null}, "left": {"err": "e"}, "right": {"ok": "s"}}),
            json!({"t": [1, 2, "s"], "grid": [[1]], "letters": null}),
        ];
        for (i, (func, input)) in funcs().iter().zip(&good).enumerate() {
            let names: Vec<&str> = func.params.iter().map(|p| p.0.as_str()).collect();
            assert!(
                typed_values::params(input, &func.params).is_ok(),
                "{names:?}: {input}"
            );
            let mut data = vec![i as u8];
            data.extend(input.to_string().bytes());
            run(&data);
        }
        let too_big = json!({"x": 1e39, "y": 0, "c": "a", "on": true});
        assert!(typed_values::params(&too_big, &funcs()[1].params).is_err());
        let payload =
            json!({"r": {"ok": 1}, "bare": {"ok": 5}, "left": {"ok": null}, "right": {"ok": "s"}});
        assert!(typed_values::params(&payload, &funcs()[4].params).is_err());
    }
}
