//! Bash command analysis (what `Bash(…)` rules are matched against).
//! Checks: analysis is bounded (it always answers, within its deadline);
//! it does not depend on trailing blanks (outside here-documents, whose
//! end line is exact); a line refused as too long or deep is refused
//! again when doubled.

use carapace::policy::bash::Exceeded;
use carapace::policy::{Analysis, analyse};

pub fn run(data: &[u8]) {
    let Some(line) = crate::text(data) else {
        return;
    };
    let analysis = analyse(line);
    let padded = analyse(&format!("{line}  \n"));
    // A here-document's end is a line of its own, blanks included.
    // A parse that overran its deadline (or waited on one that did)
    // says nothing of the line's shape.
    let timed =
        |a: &Analysis| matches!(a, Analysis::Exceeds(Exceeded::Time { .. } | Exceeded::Busy));
    if !line.ends_with('\\')
        && !line.contains("<<")
        && !matches!(analysis, Analysis::Exceeds(_))
        && !timed(&padded)
    {
        assert_eq!(
            describe(&analysis),
            describe(&padded),
            "trailing blanks changed the analysis of {line:?}"
        );
    }
    // Length and nesting only grow; parentheses left open may not (a
    // quote left open pairs up with its copy).
    if let Analysis::Exceeds(Exceeded::Length { .. } | Exceeded::Nesting { .. }) = analysis {
        let longer = format!("{line}{line}");
        assert!(
            matches!(analyse(&longer), Analysis::Exceeds(_)),
            "a line over the bounds was analysed when made longer"
        );
    }
}

/// The commands, or only which kind of answer (an error's position may
/// move with the blanks).
fn describe(analysis: &Analysis) -> String {
    match analysis {
        Analysis::Commands(commands) => format!("{commands:?}"),
        Analysis::Opaque { .. } => "opaque".into(),
        Analysis::Exceeds(_) => "exceeds".into(),
    }
}
