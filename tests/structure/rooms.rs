//! The house rules, checked on the code's own paths: each folder under
//! `host/src` (a room) imports only rooms in the rows below it in the
//! README's table, and no files inside one room import each other in a
//! circle. An import is a `crate::` path or a `super::` path anywhere in a
//! file's code (comments left out); a room's `mod.rs` is its face — it
//! declares and hands on its files — and takes no part in the circles
//! between them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its module path from the crate's
/// root (`policy/decision.rs` → `["policy", "decision"]`, a `mod.rs` its
/// folder's).
fn modules(dir: &Path, into: &mut Vec<(Vec<String>, PathBuf)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            modules(&path, into)?;
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src()).unwrap_or(&path);
        let mut parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        into.push((parts, path));
    }
    Ok(())
}

/// The code of a file without its comments (doc links name paths too, but
/// they are no imports).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file names: `crate::a::b`, and `super::…` resolved
/// from `module` (the file's own path; a `mod.rs`'s is its folder's).
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let words = |rest: &str| -> Vec<String> {
        rest.split("::")
            .map(|w| {
                w.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|w| !w.is_empty())
            .collect()
    };
    for (at, _) in text.match_indices("crate::") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        out.push(words(&text[at + "crate::".len()..]));
    }
    for (at, _) in text.match_indices("super::") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // `super` of a file is its folder's module; of a `mod.rs` (whose
        // module is its folder's), the folder above: one step up either way.
        let mut base: Vec<String> = module.to_vec();
        base.pop();
        let mut rest = &text[at + "super::".len()..];
        while let Some(more) = rest.strip_prefix("super::") {
            base.pop();
            rest = more;
        }
        base.extend(words(rest));
        out.push(base);
    }
    out
}

/// The file (of `files`) a module path lands in: its longest prefix that
/// is one.
fn file_of<'a>(path: &[String], files: &'a BTreeSet<Vec<String>>) -> Option<&'a Vec<String>> {
    (1..=path.len()).rev().find_map(|n| files.get(&path[..n]))
}

/// The rows of the README's table, top first.
fn rows() -> Result<Vec<Vec<String>>, Box<dyn std::error::Error>> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))?;
    let start = readme
        .find("Which room may import which")
        .ok_or("the README has no table of rooms")?;
    let block = readme[start..]
        .split("```")
        .nth(1)
        .ok_or("the table of rooms has no block")?;
    Ok(block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('·').map(|r| r.trim().to_string()).collect())
        .collect())
}

struct House {
    /// Each file's module path, and what it names.
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    faces: BTreeSet<Vec<String>>,
}

fn house() -> Result<House, Box<dyn std::error::Error>> {
    let mut found = Vec::new();
    modules(&src(), &mut found)?;
    let files: BTreeSet<Vec<String>> = found.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = BTreeMap::new();
    let mut faces = BTreeSet::new();
    for (module, path) in &found {
        let is_face = path.ends_with("mod.rs");
        if is_face {
            faces.insert(module.clone());
        }
        let text = code(&std::fs::read_to_string(path)?);
        let named: BTreeSet<Vec<String>> = named_paths(&text, module)
            .iter()
            .filter_map(|p| file_of(p, &files).cloned())
            .filter(|target| target != module)
            .collect();
        edges.insert(module.clone(), named);
    }
    Ok(House { edges, faces })
}

#[test]
fn each_room_imports_only_the_rooms_below_it() -> TestResult {
    let rows = rows()?;
    let row_of: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(n, row)| row.iter().map(move |room| (room.as_str(), n)))
        .collect();
    let house = house()?;
    let mut wrong = Vec::new();
    for (module, named) in &house.edges {
        // Files beside lib.rs (main.rs, lib.rs, bin/) are the crate's
        // edges, not rooms.
        let Some(room) = module
            .first()
            .filter(|_| module.len() > 1 || house.faces.contains(module))
        else {
            continue;
        };
        let Some(&row) = row_of.get(room.as_str()) else {
            if room != "bin" && room != "main" && room != "lib" {
                wrong.push(format!("{room} is a room the README's table does not list"));
            }
            continue;
        };
        for target in named {
            let Some(other) = target.first().filter(|o| *o != room) else {
                continue;
            };
            match row_of.get(other.as_str()) {
                Some(&below) if below > row => {}
                _ => wrong.push(format!(
                    "{} imports {} (the room {other} is not below {room})",
                    module.join("/"),
                    target.join("/")
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

/// The front ends — the row under `cli` — each say in their `mod.rs` that
/// they import no other front end, and do not; `cli` itself is flags and
/// dispatch, under 2,000 lines.
#[test]
fn front_ends_are_siblings_over_one_conversation() -> TestResult {
    let rows = rows()?;
    assert_eq!(
        rows.first().map(|r| r.as_slice()),
        Some(&["cli".to_string()][..])
    );
    let front: BTreeSet<&str> = rows
        .get(1)
        .ok_or("no row under cli")?
        .iter()
        .map(String::as_str)
        .collect();
    assert!(
        front.contains("acp") && front.contains("worker"),
        "{front:?}"
    );
    let house = house()?;
    let mut wrong = Vec::new();
    for room in &front {
        // The room's doc comment, its lines joined.
        let face = std::fs::read_to_string(src().join(room).join("mod.rs"))?;
        let said = face.replace("\n//! ", " ").replace("\n//!", " ");
        if !said.contains("imports no other front end") {
            wrong.push(format!(
                "{room}/mod.rs does not say it imports no other front end"
            ));
        }
    }
    for (module, named) in &house.edges {
        let Some(room) = module.first().filter(|r| front.contains(r.as_str())) else {
            continue;
        };
        for target in named {
            if let Some(other) = target
                .first()
                .filter(|o| *o != room && front.contains(o.as_str()))
            {
                wrong.push(format!(
                    "{} imports the front end {other}",
                    module.join("/")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let mut cli = Vec::new();
    modules(&src().join("cli"), &mut cli)?;
    let mut lines = 0;
    for (_, path) in &cli {
        lines += std::fs::read_to_string(path)?.lines().count();
    }
    assert!(lines > 500 && lines < 2000, "cli/ is {lines} lines");
    Ok(())
}

#[test]
fn no_files_inside_a_room_import_each_other_in_a_circle() -> TestResult {
    let house = house()?;
    // Within each folder, the files' imports of their siblings.
    let mut sibling: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, named) in &house.edges {
        if house.faces.contains(module) {
            continue;
        }
        let folder = &module[..module.len().saturating_sub(1)];
        let siblings = named
            .iter()
            .filter(|t| !house.faces.contains(*t))
            .filter(|t| t.len() == module.len() && t[..folder.len()] == *folder);
        sibling
            .entry(module.clone())
            .or_default()
            .extend(siblings.cloned());
    }
    // The reading finds imports at all (a parser that found none would
    // find no circle either).
    let imports: usize = sibling.values().map(BTreeSet::len).sum();
    assert!(imports > 100, "only {imports} imports between files found");
    let found = circles(&sibling);
    assert!(
        found.is_empty(),
        "files that import each other:\n{}",
        found.join("\n")
    );
    // Control: a circle the check must see.
    let (a, b) = (
        vec!["x".to_string(), "a".to_string()],
        vec!["x".to_string(), "b".to_string()],
    );
    let made = BTreeMap::from([
        (a.clone(), BTreeSet::from([b.clone()])),
        (b, BTreeSet::from([a])),
    ]);
    assert_eq!(circles(&made), ["x/a -> x/b -> x/a"]);
    Ok(())
}

/// Each circle once (by its members), shown as a way round it.
fn circles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let mut found: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.join("/")])];
        let mut seen = BTreeSet::new();
        while let Some((at, way)) = stack.pop() {
            for next in graph.get(&at).into_iter().flatten() {
                if next == start {
                    let mut members = way.clone();
                    members.sort();
                    found
                        .entry(members)
                        .or_insert_with(|| format!("{} -> {}", way.join(" -> "), start.join("/")));
                } else if seen.insert(next.clone()) {
                    let mut further = way.clone();
                    further.push(next.join("/"));
                    stack.push((next.clone(), further));
                }
            }
        }
    }
    found.into_values().collect()
}
