//! A typed component as the ecosystem writes them: it exports its own
//! functions (no `carapace:tool`), reads files with `std::fs` through plain
//! WASI, and knows nothing of carapace.

wit_bindgen::generate!({
    world: "typed-probe",
    path: "wit",
    generate_all,
});

use exports::test::typed_probe::files::{CaseMode, Guest as Files, Marks, Measure, Slice};

struct Probe;

impl Files for Probe {
    fn read_lines(request: Slice, mode: CaseMode, marks: Marks) -> Result<Vec<String>, String> {
        let text = std::fs::read_to_string(&request.path)
            .map_err(|e| format!("cannot read {}: {e}", request.path))?;
        let start = request.start.unwrap_or(1).max(1) as usize;
        let count = request.count.map_or(usize::MAX, usize::from);
        Ok(text
            .lines()
            .enumerate()
            .skip(start - 1)
            .take(count)
            .map(|(i, line)| {
                let line = match mode {
                    CaseMode::Keep => line.to_string(),
                    CaseMode::Upper => line.to_uppercase(),
                    CaseMode::Lower => line.to_lowercase(),
                };
                let line = if marks.contains(Marks::NUMBERS) {
                    format!("{}: {line}", i + 1)
                } else {
                    line
                };
                if marks.contains(Marks::ENDS) { format!("{line}$") } else { line }
            })
            .collect())
    }

    fn count(path: String, what: Measure) -> Result<(String, u64), String> {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        Ok(match what {
            Measure::Lines => ("lines".into(), text.lines().count() as u64),
            Measure::Bytes => ("bytes".into(), text.len() as u64),
            Measure::Matches(word) => ("matches".into(), text.matches(word.as_str()).count() as u64),
        })
    }
}

impl Guest for Probe {
    fn setting(key: String) -> Option<String> {
        wasi::config::store::get(&key).ok().flatten()
    }

    fn add(a: i8, b: u8) -> i16 {
        i16::from(a) + i16::from(b)
    }

    fn next_char(c: char, x: f64) -> (char, f32) {
        (char::from_u32(c as u32 + 1).unwrap_or(c), (x / 2.0) as f32)
    }
}

export!(Probe);
