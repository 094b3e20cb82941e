use super::*;
use std::path::PathBuf;

fn environment() -> Environment {
    Environment {
        cwd: PathBuf::from("/work/project"),
        additional_dirs: vec![PathBuf::from("/work/shared")],
        git: Some(GitState {
            branch: Some("main".into()),
        }),
        platform: "linux".into(),
        os_version: "Linux 6.1".into(),
        date: "2026-12-02".into(),
        model: "claude-sonnet-4-5".into(),
    }
}

fn tools(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn the_prompt_says_how_to_work_and_where() {
    let env = environment();
    let all = tools(&[
        "Bash",
        "Read",
        "Edit",
        "Write",
        "Glob",
        "Grep",
        "TodoWrite",
        "Agent",
    ]);
    let prompt = system_prompt(&PromptInputs {
        environment: &env,
        tools: &all,
        style: None,
        environment_elsewhere: false,
    });
    for needed in [
        "Use Read rather than cat",
        "Read a file before you edit",
        "Paths given to tools are absolute",
        "make them in one response",
        "TodoWrite",
        "Agent tool",
        "follow its conventions",
        "Run the tests",
        "never commit, push, force-push",
        "Secrets: never print",
        "Be brief and direct",
        "denied or refused says why",
        "- Working directory: /work/project",
        "- Also a working directory: /work/shared",
        "- Git repository: yes, on branch main",
        "- Platform: linux",
        "- OS version: Linux 6.1",
        "- Today's date: 2026-12-02",
        "- Model: Claude Sonnet 4.5 (model ID claude-sonnet-4-5)",
    ] {
        assert!(prompt.contains(needed), "missing {needed:?}");
    }
    assert!(!prompt.contains("Output style"));
}

#[test]
fn only_offered_tools_are_spoken_of() {
    let env = environment();
    let read_only = tools(&["Read", "Glob"]);
    let prompt = system_prompt(&PromptInputs {
        environment: &env,
        tools: &read_only,
        style: None,
        environment_elsewhere: true,
    });
    for absent in [
        "TodoWrite",
        "Agent tool",
        "rather than cat",
        "Skill tool",
        "# Environment",
    ] {
        assert!(!prompt.contains(absent), "{absent:?} is there");
    }
    assert!(environment_reminder(&env).contains("# Environment"));
}

#[test]
fn a_style_opens_and_closes_the_prompt_and_may_drop_the_coding_instructions() {
    let env = environment();
    let style = |keep| OutputStyle {
        name: "Pirate".into(),
        description: String::new(),
        prompt: "Answer as a pirate would.".into(),
        keep_coding_instructions: keep,
    };
    for keep in [false, true] {
        let style = style(keep);
        let prompt = system_prompt(&PromptInputs {
            environment: &env,
            tools: &[],
            style: Some(&style),
            environment_elsewhere: false,
        });
        assert!(prompt.starts_with(OPENING_STYLED));
        assert!(prompt.ends_with("# Output style: Pirate\nAnswer as a pirate would."));
        assert_eq!(prompt.contains("# Doing the work"), keep);
    }
}
