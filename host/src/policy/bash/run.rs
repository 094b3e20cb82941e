//! Running the analysis so that no line can hold the caller: the cheap
//! checks first (bounds on size and nesting, characters and constructs the
//! parser is known to loop on), then the parse on a thread of its own,
//! waited for at most `ANALYSIS_DEADLINE`.
//!
//! The parser is a third party's backtracking grammar, and fuzzing keeps
//! finding shapes of line it takes seconds to hours over (each bound in
//! `bounds.rs` is one of them). The deadline holds for the shapes not yet
//! found: a line whose analysis overruns it is refused, as a line past a
//! bound is. A thread cannot be stopped, so the overrunning parse goes on
//! until it finishes; while `MAX_OVERRUNNING` of them do, every further
//! line is refused unparsed — what an attacker can make the host spend is
//! that many cores, never the turn.

use super::bounds::{self, Exceeded};
use super::{Analysis, analyse_within_bounds};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

/// How long one line's analysis may take. Every line seen in practice,
/// and every bounded shape fuzzing found, takes milliseconds.
pub const ANALYSIS_DEADLINE: Duration = Duration::from_secs(2);

/// Overrunning parses left running at once.
pub const MAX_OVERRUNNING: usize = 1;

/// Parses that overran their deadline and are still running.
static OVERRUNNING: AtomicUsize = AtomicUsize::new(0);

const RUNNING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

/// Analyses a command line within the bounds and the deadline.
pub fn analyse(line: &str) -> Analysis {
    analyse_counted(line, ANALYSIS_DEADLINE, &OVERRUNNING)
}

/// `analyse`, its overrunning parses counted in `overrunning`.
fn analyse_counted(line: &str, deadline: Duration, overrunning: &'static AtomicUsize) -> Analysis {
    // The bounds first: a line past one is refused in every mode, and
    // stays so whatever else it holds.
    let openers = match bounds::check(line) {
        Err(exceeded) => return Analysis::Exceeds(exceeded),
        Ok(openers) => openers,
    };
    // Found by fuzzing: a form feed or a carriage return after `<<` sends
    // the parser's tokenizer into a loop that allocates until the process
    // dies (`x <<\f($(`, 9 bytes). No command a person means holds them.
    if let Some(c) = line
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n'))
    {
        return Analysis::Opaque {
            reason: format!("the line holds the control character {c:?}, which is not analysed"),
        };
    }
    if bounds::heredoc_without_delimiter(line) {
        return Analysis::Opaque {
            reason: "a here-document without a delimiter is not analysed".into(),
        };
    }
    if bounds::heredoc_without_body(line) {
        return Analysis::Opaque {
            reason: "a here-document in a command substitution with no line for its body is not analysed".into(),
        };
    }
    if overrunning.load(Ordering::Acquire) >= MAX_OVERRUNNING {
        return Analysis::Exceeds(Exceeded::Busy);
    }
    within_deadline(line, openers, deadline, overrunning)
}

/// The parse on a thread of its own — its stack sized for the line's
/// nesting — waited for at most `deadline`.
fn within_deadline(
    line: &str,
    openers: usize,
    deadline: Duration,
    overrunning: &'static AtomicUsize,
) -> Analysis {
    // Shallow (nearly every line): at most ~16 KiB of stack per level.
    let stack = match openers <= bounds::SHALLOW_OPENERS {
        true => 2 << 20,
        false => bounds::PARSE_STACK_BYTES,
    };
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (sender, answer) = std::sync::mpsc::sync_channel(1);
    let (owned, shared) = (line.to_string(), state.clone());
    let spawned = std::thread::Builder::new()
        .name("bash-analysis".into())
        .stack_size(stack)
        .spawn(move || {
            // A panic of the parser (a third-party crate:
            // `99999999999>f` overflowed its file-descriptor number, found
            // by fuzzing) is a line it could not analyse.
            let analysis = std::panic::catch_unwind(|| analyse_within_bounds(&owned))
                .unwrap_or_else(|_| Analysis::Opaque {
                    reason: "the parser failed on this line".into(),
                });
            let _ = sender.send(analysis);
            if shared.swap(DONE, Ordering::AcqRel) == ABANDONED {
                overrunning.fetch_sub(1, Ordering::AcqRel);
            }
        });
    if let Err(e) = spawned {
        // No thread to spare: the line is not analysed here.
        return Analysis::Opaque {
            reason: format!("the analysis could not start: {e}"),
        };
    }
    match answer.recv_timeout(deadline) {
        Ok(analysis) => analysis,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // Counted before it is marked, so the parse's own decrement
            // can never come first.
            overrunning.fetch_add(1, Ordering::AcqRel);
            match state.compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => Analysis::Exceeds(Exceeded::Time { limit: deadline }),
                Err(_) => {
                    overrunning.fetch_sub(1, Ordering::AcqRel);
                    answer.recv().unwrap_or_else(|_| failed())
                }
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => failed(),
    }
}

fn failed() -> Analysis {
    Analysis::Opaque {
        reason: "the analysis failed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_past_its_deadline_is_refused_and_stops_the_next_until_it_ends() {
        // Found by fuzzing (through MCP's Bash tool): within every bound,
        // and seconds of parsing.
        let slow = "js[[Y$$$($$$$$($($$$[[[[$($$r['1',( _])dk$$$$$[Tr['1',( _])d,( _[Tok( _])d_$[Tokor['1',( _])$$$$($$$$$$$$$$$$$$$$$$$$$YYYYYYYYYYYYYYYYY$$$$$[Token::Wor['1',( _])d_$Y$$$$$$$$$k$$$$$$$$$$$$$$$$$$$$$$$$$[Token::Wor['1',( _])d_$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$$*$$$$$$$$$$$$$$$$$$$$$$$$,$$$$$$$";
        // A count of this test's own: other tests analyse at the same time.
        static COUNTED: AtomicUsize = AtomicUsize::new(0);
        assert!(bounds::check(slow).is_ok(), "within the bounds");
        let short = Duration::from_millis(1);
        let refused = analyse_counted(slow, short, &COUNTED);
        assert_eq!(refused, Analysis::Exceeds(Exceeded::Time { limit: short }));
        // The caller was answered while the parse still runs: not waited for.
        assert!(COUNTED.load(Ordering::Acquire) > 0, "the caller waited");
        // While it runs on, the next line is refused unparsed.
        let next = analyse_counted("ls", ANALYSIS_DEADLINE, &COUNTED);
        assert_eq!(next, Analysis::Exceeds(Exceeded::Busy));
        let deadline = std::time::Instant::now() + Duration::from_secs(600);
        while COUNTED.load(Ordering::Acquire) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the parse never ended"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // The control: once it is over, lines are analysed again, and the
        // same line within a deadline it meets.
        let next = analyse_counted("ls", ANALYSIS_DEADLINE, &COUNTED);
        assert!(matches!(next, Analysis::Commands(_)), "{next:?}");
        let whole = analyse_counted(slow, Duration::from_secs(600), &COUNTED);
        assert!(!matches!(whole, Analysis::Exceeds(_)), "{whole:?}");
    }

    #[test]
    fn a_line_past_a_bound_is_refused_whatever_else_it_holds() {
        // Fuzzing found a line over the nesting bound that, doubled, was
        // only opaque (a later copy's here-document): opaque lines run in
        // bypassPermissions, lines past a bound never do.
        let deep = "{ ".repeat(bounds::MAX_OPENERS + 1);
        for tail in ["$(<<  l))#", "x <<", "\u{c}", ""] {
            let line = format!("{deep}{tail}");
            assert!(
                matches!(analyse(&line), Analysis::Exceeds(Exceeded::Nesting { .. })),
                "{tail:?}"
            );
        }
    }
}
