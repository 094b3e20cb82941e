//! Permission rules: the parser, and the matcher of path rules. Checks:
//! a path a deny rule matches is matched again under every other spelling
//! of it the policy accepts (`.` and `..` components, doubled and
//! trailing slashes), and a path it does not match stays unmatched.

use carapace::policy::{
    Anchors, Rule, RuleKind, RuleSet, RuleSource, SourceKind, Subject, lexical_absolute,
};
use std::path::{Path, PathBuf};

pub fn run(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let (spec, path) = text.split_once('\0').unwrap_or((text, "/w/p/src/a.env"));
    let anchors = Anchors {
        cwd: PathBuf::from("/w/p"),
        home: PathBuf::from("/h"),
        project: PathBuf::from("/w/p"),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    for tool in ["Read", "Edit"] {
        let Ok(rule) = Rule::parse(
            &format!("{tool}({spec})"),
            RuleKind::Deny,
            source.clone(),
            &anchors,
        ) else {
            continue;
        };
        let rules = RuleSet::new(vec![rule]);
        let absolute = match path.starts_with('/') {
            true => path.to_string(),
            false => format!("/w/p/{path}"),
        };
        let Some(normal) = lexical_absolute(&absolute) else {
            continue;
        };
        let write = tool == "Edit";
        let denied = denies(&rules, &normal, write);
        for spelling in spellings(&normal) {
            let Some(again) = lexical_absolute(&spelling) else {
                panic!("{spelling:?}, a spelling of {normal:?}, is not a path");
            };
            assert_eq!(
                denies(&rules, &again, write),
                denied,
                "`{tool}({spec})` decides {normal:?} and {spelling:?} differently"
            );
        }
    }
}

fn denies(rules: &RuleSet, path: &Path, write: bool) -> bool {
    let subject = Subject::Path {
        requested: path,
        resolved: path,
        is_dir: false,
        write,
        file: None,
    };
    rules.matching(RuleKind::Deny, subject).is_some()
}

/// Other ways of writing `path` that name the same file.
fn spellings(path: &Path) -> Vec<String> {
    let text = path.display().to_string();
    let parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
    let join = |sep: &str| format!("/{}", parts.join(sep));
    let mut spellings = vec![
        join("/./"),
        join("//"),
        format!("/{}", parts.join("/x/../")),
        format!("{text}/."),
        format!("//{}", parts.join("/")),
    ];
    if let Some((last, dirs)) = parts.split_last() {
        spellings.push(format!(
            "/{}/../{}/{last}",
            dirs.join("/"),
            dirs.last().unwrap_or(&"")
        ));
    }
    spellings
}
