//! Protected paths.

use super::*;

#[tokio::test]
async fn case_variants_of_a_protected_path() -> TestResult {
    let w = world()?;
    std::fs::create_dir_all(w.ws.join(".Carapace"))?;
    let target = w.p(".Carapace/Settings.JSON");
    let input = probe(
        json!([need("write-file", &target)]),
        json!([{"op": "create", "path": target}]),
    );
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Allow, "Edit(./**)")],
    )?)
    .call(
        "Probe",
        json!({"needs": input["needs"], "attempts": input["attempts"]}),
    )
    .await?;
    assert!(refused(&strong), "{strong:?}");
    assert!(!Path::new(&target).exists());
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .approved()
        .call(
            "Probe",
            json!({"needs": input["needs"], "attempts": input["attempts"], "approve": true}),
        )
        .await?;
    assert!(
        worked(&weak, 0) && Path::new(&target).exists(),
        "with explicit approval it is written: {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn creating_a_protected_file_that_does_not_exist_yet() -> TestResult {
    let w = world()?;
    let target = w.p(".mcp.json");
    let needs = json!([need("write-file", &target)]);
    let attempts = json!([{"op": "create", "path": target}]);
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", probe(needs.clone(), attempts.clone()))
        .await?;
    assert!(
        refused(&strong) && !Path::new(&target).exists(),
        "{strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .approved()
        .call(
            "Probe",
            json!({"needs": needs, "attempts": attempts, "approve": true}),
        )
        .await?;
    assert!(worked(&weak, 0) && Path::new(&target).exists(), "{weak:?}");
    Ok(())
}

#[tokio::test]
async fn creating_a_protected_file_through_a_tree_grant_is_refused_at_the_call() -> TestResult {
    let w = world()?;
    let tree = w.ws.join("project");
    std::fs::create_dir(&tree)?;
    let hook = tree.join(".git/hooks/pre-commit");
    let needs = json!([need("write-tree", &tree.to_string_lossy())]);
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                needs.clone(),
                json!([
                    {"op": "create", "path": tree.join(".mcp.json").to_string_lossy()},
                    {"op": "create", "path": tree.join("mcp.json").to_string_lossy()}
                ]),
            ),
        )
        .await?;
    // Refused at the call that would make it (the sandbox's creation
    // judgement), so it never exists, not even while the call runs; the
    // sweep after the call finds nothing to move.
    let report = report(&strong);
    assert!(!strong.is_error && !worked(&strong, 0), "{strong:?}");
    assert!(
        report[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("ermission denied")),
        "{report:?}"
    );
    assert!(!tree.join(".mcp.json").exists());
    // Control: the same call, through the same grant, created an ordinary
    // file — the attempt ran, and only the protected name was refused.
    assert!(worked(&strong, 1) && tree.join("mcp.json").exists());
    // The weakened variant: a tree that already holds a protected entry is
    // refused outright, unless approved.
    std::fs::create_dir_all(hook.parent().ok_or("no parent")?)?;
    let refused_tree = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", probe(needs.clone(), json!([])))
        .await?;
    assert!(refused(&refused_tree), "{refused_tree:?}");
    let ordinary = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                json!([need(
                    "write-tree",
                    &w.ws.join("project/src").to_string_lossy()
                )]),
                json!([]),
            ),
        )
        .await?;
    assert!(
        !ordinary.is_error || !refused(&ordinary),
        "a tree without protected files is granted: {ordinary:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_tool_trying_to_change_its_own_permissions() -> TestResult {
    let w = world()?;
    for target in [
        w.config_dir.join("settings.json"),
        w.ws.join(".carapace/settings.json"),
    ] {
        let t = target.to_string_lossy().into_owned();
        let input = probe(
            json!([need("write-file", &t)]),
            json!([{"op": "create", "path": t}]),
        );
        let strong = Run::new(w.policy(
            PermissionMode::BypassPermissions,
            &[(RuleKind::Allow, "Edit(//**)")],
        )?)
        .call("Probe", input)
        .await?;
        assert!(refused(&strong), "{t}: {strong:?}");
    }
    assert_eq!(
        std::fs::read_to_string(w.config_dir.join("settings.json"))?,
        "{}"
    );
    // Weakened: an ordinary file in the same place is written.
    let t = w.p("notes.txt");
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                json!([need("write-file", &t)]),
                json!([{"op": "create", "path": t}]),
            ),
        )
        .await?;
    assert!(worked(&weak, 0));
    Ok(())
}
