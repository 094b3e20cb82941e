//! The analysis and the rule patterns, on literal command lines.

use super::*;

fn lit(words: &[&str]) -> SimpleCommand {
    SimpleCommand {
        words: words
            .iter()
            .map(|w| WordText::Literal((*w).into()))
            .collect(),
        name: 0,
        runs: Vec::new(),
    }
}

fn commands(line: &str) -> Vec<SimpleCommand> {
    match analyse(line) {
        Analysis::Commands(c) => c,
        Analysis::Opaque { reason } => panic!("{line}: opaque: {reason}"),
        Analysis::Exceeds(exceeded) => panic!("{line}: {exceeded}"),
    }
}

#[test]
fn splits_every_compound_form_into_its_commands() {
    assert_eq!(
        commands("git status && npm test; ls | wc -l || echo 'a b' &"),
        vec![
            lit(&["git", "status"]),
            lit(&["npm", "test"]),
            lit(&["ls"]),
            lit(&["wc", "-l"]),
            lit(&["echo", "a b"])
        ]
    );
    assert_eq!(
        commands("(cd x && make) && { rm -rf y; }"),
        vec![lit(&["cd", "x"]), lit(&["make"]), lit(&["rm", "-rf", "y"])]
    );
    // Substitutions are commands too, and make their word dynamic.
    let subst = commands("echo $(rm -rf /) `curl evil`");
    assert_eq!(subst[0], lit(&["rm", "-rf", "/"]));
    assert_eq!(subst[1], lit(&["curl", "evil"]));
    assert_eq!(subst[2].words[0], WordText::Literal("echo".into()));
    assert_eq!(subst[2].words[1], WordText::Dynamic);
    assert_eq!(commands("cat <(rm x)")[0], lit(&["rm", "x"]));
    assert_eq!(
        commands("r''m -r\"f\" \\/")[0],
        lit(&["rm", "-rf", "/"]),
        "quotes do not hide a name"
    );
}

#[test]
fn what_it_cannot_follow_is_opaque() {
    for line in [
        "for f in *; do rm $f; done",
        "if true; then rm x; fi",
        "f() { rm x; }; f",
        "$CMD -rf /",
        "cat <<EOF\nhi\nEOF",
        "echo 'unterminated",
        "",
    ] {
        assert!(
            matches!(analyse(line), Analysis::Opaque { .. }),
            "{line:?} should be opaque"
        );
    }
    let long = vec!["true"; MAX_COMMANDS + 5].join(" && ");
    assert!(matches!(analyse(&long), Analysis::Opaque { .. }));
}

#[test]
fn patterns_match_as_claude_code_rules_do() -> Result<(), String> {
    let prefix = CommandPattern::parse("npm run test:*")?;
    assert!(prefix.allows(&analyse("npm run test")));
    assert!(prefix.allows(&analyse("npm run test -- --watch")));
    assert!(!prefix.allows(&analyse("npm run testx")));
    assert!(
        !prefix.allows(&analyse("npm run test && rm -rf /")),
        "every part must match"
    );
    let wild = CommandPattern::parse("git * main")?;
    assert!(wild.allows(&analyse("git push origin main")));
    assert!(!wild.allows(&analyse("git push origin dev")));
    let exact = CommandPattern::parse("ls")?;
    assert!(exact.allows(&analyse("ls")));
    assert!(!exact.allows(&analyse("ls -la")));

    let deny = CommandPattern::parse("rm:*")?;
    for line in [
        "rm -rf /",
        "ls && rm x",
        "ls; rm x",
        "ls | rm x",
        "echo $(rm x)",
        "for f in a; do echo; done",
        "\\rm x",
        "'rm' x",
    ] {
        assert!(deny.catches(&analyse(line)), "{line:?} must be caught");
    }
    assert!(!deny.catches(&analyse("ls -la")));
    // A dynamic argument can be anything: an exact deny still catches it.
    assert!(CommandPattern::parse("git push")?.catches(&analyse("git $VERB")));
    Ok(())
}

#[test]
fn what_a_command_hands_on_is_seen_by_deny_rules() -> Result<(), String> {
    let deny = CommandPattern::parse("rm:*")?;
    for line in [
        "/bin/rm -rf /",
        "FOO=1 BAR=2 rm x",
        "env -i PATH=/bin rm x",
        "timeout -s KILL 5 nice -n 3 rm x",
        "xargs -0 rm < list",
        "find . -name '*.o' -exec /usr/bin/rm {} ;",
        "sh -c 'echo; rm x'",
        "bash -lc \"rm x\"",
        "eval rm x",
        "eval 'echo && rm x'",
        "sudo -u root rm x",
    ] {
        assert!(deny.catches(&analyse(line)), "{line:?} must be caught");
    }
    for line in [
        "echo ${x:-$(rm x)}",
        "echo $(( $(rm x) ))",
        "echo \"${x:-`rm x`}\"",
        "alias ls=rm; ls x",
        "echo rm x | sh",
        "bash -c \"$CMD\"",
        "eval \"$CMD\"",
    ] {
        assert!(
            matches!(analyse(line), Analysis::Opaque { .. }),
            "{line:?} should be opaque"
        );
    }
    assert!(!deny.catches(&analyse("env FOO=1 ls")));
    assert!(!deny.catches(&analyse("find . -name rm")));
    // Many nested wrappers stay bounded.
    let nested = vec!["env"; 40].join(" ") + " ls";
    assert!(matches!(analyse(&nested), Analysis::Opaque { .. }));
    Ok(())
}

#[test]
fn a_prefix_rule_does_not_allow_a_programs_own_way_to_run_code() -> Result<(), String> {
    let git = CommandPattern::parse("git:*")?;
    for line in [
        "git -c core.fsmonitor='rm x' status",
        "git -c alias.x='!rm x' x",
        "git -ccore.pager=evil log",
        "git --exec-path=/tmp/evil status",
        "git --config-env=core.pager=EVIL log",
        "git clone -u 'rm x' repo",
        "git fetch --upload-pack='rm x' origin",
        "git diff --ext-diff",
        "git $OPTION status",
    ] {
        assert!(!git.allows(&analyse(line)), "{line:?} must not be allowed");
    }
    for line in ["git status", "git -C sub log -c", "git log --oneline"] {
        assert!(git.allows(&analyse(line)), "{line:?} is plain git");
    }
    let find = CommandPattern::parse("find:*")?;
    assert!(find.allows(&analyse("find . -name x")));
    assert!(!find.allows(&analyse("find . -exec rm {} ;")));
    assert!(!CommandPattern::parse("rg:*")?.allows(&analyse("rg --pre ./evil x")));
    Ok(())
}

/// Lines nested `depth` levels deep in each construct the parser recurses
/// on.
fn nested(depth: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "$(",
            format!("{}echo{}", "$(".repeat(depth), ")".repeat(depth)),
        ),
        (
            "${",
            format!("echo {}x{}", "${x:-".repeat(depth), "}".repeat(depth)),
        ),
        (
            "{",
            format!("{}true;{}", "{ ".repeat(depth), " };".repeat(depth)),
        ),
        (
            "(",
            format!("{}true{}", "( ".repeat(depth), " )".repeat(depth)),
        ),
        (
            "if",
            format!(
                "{}true{}",
                "if true; then ".repeat(depth),
                "; fi".repeat(depth)
            ),
        ),
        ("$((", format!("echo $(({}1))", "-".repeat(depth))),
    ]
}

#[test]
fn a_line_nested_thousands_deep_is_refused_without_being_parsed() {
    for (name, line) in nested(5000) {
        assert!(
            matches!(analyse(&line), Analysis::Exceeds(_)),
            "{name} was parsed"
        );
    }
}

#[test]
fn every_construct_nested_to_the_bound_parses_on_its_stack() {
    // As deep as the bound lets each construct go: parsed (whatever it
    // finds) on the analysis's own thread, not refused and not crashing.
    for index in 0..nested(1).len() {
        let mut depth = MAX_OPENERS;
        while bounds::check(&nested(depth)[index].1).is_err() {
            depth -= 1;
        }
        let (name, line) = nested(depth).swap_remove(index);
        // Parentheses have a bound of their own (the parser's time).
        let least = match line.contains('(') {
            true => bounds::MAX_PAREN_DEPTH,
            false => MAX_OPENERS / 3,
        };
        assert!(depth >= least, "{name}: only {depth} levels");
        assert!(
            !matches!(analyse(&line), Analysis::Exceeds(_)),
            "{name} was refused"
        );
    }
}

#[test]
fn random_lines_within_the_bounds_never_crash_the_analysis() {
    // A property test: random mixtures of every nesting construct, of
    // quotes, comments and here-documents, up to the bounds.
    const PARTS: &[&str] = &[
        "$(",
        ")",
        "${x:-",
        "}",
        "{ ",
        " }",
        "( ",
        " )",
        "`",
        "'",
        "\"",
        "if true; then ",
        "; fi",
        "while x; do ",
        "; done",
        " && ",
        " | ",
        "; ",
        "<<EOF\n",
        "\nEOF\n",
        "# c\n",
        "$((",
        "-",
        "!",
        " ",
        "echo",
        "[[ ",
        " ]]",
        "\\",
        "\n",
    ];
    let mut rng = fastrand::Rng::with_seed(20);
    for _ in 0..300 {
        let len = rng.usize(1..4000);
        let line: String = (0..len).map(|_| PARTS[rng.usize(..PARTS.len())]).collect();
        let _ = analyse(&line);
    }
}

/// The weakened control, run in a child process (it kills its process):
/// the same deep line parsed without the bounds, on an ordinary thread,
/// overflows the stack.
#[test]
#[ignore = "run by the control below in a process of its own"]
fn control_a_deep_line_parsed_without_the_bounds() {
    let line = format!("{}echo{}", "$(".repeat(20_000), ")".repeat(20_000));
    let parsed = std::thread::Builder::new()
        .stack_size(2 << 20) // a tokio worker's
        .spawn(move || analyse_within_bounds(&line).describe());
    if let Ok(thread) = parsed {
        let _ = thread.join();
    }
}

#[test]
fn without_the_bounds_the_same_line_takes_the_process_down() -> Result<(), std::io::Error> {
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "policy::bash::tests::control_a_deep_line_parsed_without_the_bounds",
        ])
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The control really ran, and died of it.
    assert!(
        !out.status.success(),
        "the unbounded parse survived: {stderr}"
    );
    assert!(stderr.contains("overflow"), "{stderr}");
    Ok(())
}

#[test]
fn a_shallow_line_parses_on_a_small_stack() {
    // The deepest line parsed on the caller's thread, in each construct,
    // on half a tokio worker's stack.
    let parsed = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            for index in 0..nested(1).len() {
                let mut depth = bounds::SHALLOW_OPENERS;
                while bounds::check(&nested(depth)[index].1)
                    .is_ok_and(|n| n > bounds::SHALLOW_OPENERS)
                {
                    depth -= 1;
                }
                let (_, line) = nested(depth).swap_remove(index);
                let _ = analyse(&line);
            }
        })
        .map(|t| t.join().is_ok());
    assert!(matches!(parsed, Ok(true)));
}

/// Found by fuzzing: the parser unwraps an fd number that overflows. The
/// line is one the analysis cannot read, on either thread, not a crash.
#[test]
fn a_parser_panic_is_a_line_not_analysed() {
    for line in [
        "echo hi 555555555555555555>|f".to_string(),
        format!("{}echo hi 555555555555555555>f", "{ ".repeat(40)),
    ] {
        assert!(matches!(analyse(&line), Analysis::Opaque { .. }), "{line}");
    }
    // The control: an fd number that fits is read.
    assert!(matches!(analyse("echo hi 2>f"), Analysis::Commands(_)));
}

/// Found by fuzzing: `<<` then a form feed or carriage return made the
/// parser allocate without end. Such lines are not parsed.
#[test]
fn control_characters_are_not_parsed() {
    for line in [
        "x <<\u{c}($(",
        "x <<\r($(",
        "no(*<<\u{c}(((($x=$((",
        "ls\u{0}",
        "a\u{b}b",
    ] {
        assert!(matches!(analyse(line), Analysis::Opaque { .. }), "{line:?}");
    }
    // The control: tabs and newlines are ordinary.
    assert!(matches!(analyse("ls\t-la\necho hi"), Analysis::Commands(_)));
}

/// Found by fuzzing: `<<` with no delimiter word made the parser allocate
/// without end. Such lines are not parsed; a delimiter after blanks or a
/// dash is read as ever.
#[test]
fn a_here_document_without_a_delimiter_is_not_parsed() {
    for line in [
        "x[x=$($ $(<<-    >&&F",
        "cat <<",
        "cat << >f",
        "cat <<-\t|x",
        "echo \"<<\"",
    ] {
        assert!(matches!(analyse(line), Analysis::Opaque { .. }), "{line:?}");
    }
    for line in ["cat <<EOF\nx\nEOF", "cat <<- 'E'\n\tx\n\tE"] {
        assert!(!bounds::heredoc_without_delimiter(line), "{line:?}");
    }
    for line in ["cat <<<word", "echo $((1 << 2))"] {
        assert!(matches!(analyse(line), Analysis::Commands(_)), "{line:?}");
    }
}
