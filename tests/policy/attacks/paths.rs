//! Paths.

use super::*;

#[tokio::test]
async fn dot_dot_traversal_in_a_read_path() -> TestResult {
    let w = world()?;
    let sneaky = format!(
        "{}/../{}/secret.txt",
        w.ws.display(),
        w.outside
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let input = json!({"file_path": sneaky});
    let strong = Run::new(w.policy(PermissionMode::Default, &[])?)
        .call("Read", input.clone())
        .await?;
    assert!(
        refused(&strong) && !text(&strong).contains("OUTSIDE_SECRET"),
        "{strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Read", input)
        .await?;
    assert!(text(&weak).contains("OUTSIDE_SECRET"), "weakened: {weak:?}");
    Ok(())
}

#[tokio::test]
async fn dot_dot_traversal_inside_the_sandbox() -> TestResult {
    let w = world()?;
    let out_name = w
        .outside
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let escape = format!("{}/../{out_name}/secret.txt", w.ws.display());
    let attempts = json!([{"op": "read", "path": escape}]);
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(json!([need("read-file", &w.p("a.txt"))]), attempts.clone()),
        )
        .await?;
    assert!(held(&strong, 0), "{strong:?}");
    let parent =
        w.ws.parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(json!([need("read-tree", &parent)]), attempts),
        )
        .await?;
    assert!(
        worked(&weak, 0),
        "weakened (the whole parent granted): {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn an_absolute_path_outside_the_grant() -> TestResult {
    let w = world()?;
    let secret = w.outside.join("secret.txt").to_string_lossy().into_owned();
    let attempts = json!([{"op": "read", "path": secret}, {"op": "read", "path": "/etc/passwd"}]);
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(json!([need("read-file", &w.p("a.txt"))]), attempts.clone()),
        )
        .await?;
    assert!(held(&strong, 0) && held(&strong, 1), "{strong:?}");
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                json!([need("read-tree", &w.outside.to_string_lossy())]),
                attempts,
            ),
        )
        .await?;
    assert!(worked(&weak, 0), "weakened (the folder granted): {weak:?}");
    Ok(())
}

#[tokio::test]
async fn a_capability_for_one_path_then_opening_another() -> TestResult {
    let w = world()?;
    let attempts =
        json!([{"op": "read", "path": w.p("a.txt")}, {"op": "read", "path": w.p("b.txt")}]);
    let strong = Run::new(w.policy(PermissionMode::Default, &[])?)
        .call(
            "Probe",
            probe(json!([need("read-file", &w.p("a.txt"))]), attempts.clone()),
        )
        .await?;
    assert!(
        worked(&strong, 0),
        "the granted file is readable: {strong:?}"
    );
    assert!(held(&strong, 1), "the sibling must not be: {strong:?}");
    let weak = Run::new(w.policy(PermissionMode::Default, &[])?)
        .call(
            "Probe",
            probe(
                json!([need("read-tree", &w.ws.to_string_lossy())]),
                attempts,
            ),
        )
        .await?;
    assert!(
        worked(&weak, 1),
        "weakened (the whole workspace granted): {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_deny_rule_beats_bypass_mode() -> TestResult {
    let w = world()?;
    let secret = w.outside.join("secret.txt").to_string_lossy().into_owned();
    let rule = format!("Read(/{secret})");
    let input = json!({"file_path": secret});
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, &rule), (RuleKind::Allow, "Read")],
    )?)
    .call("Read", input.clone())
    .await?;
    assert!(refused(&strong), "{strong:?}");
    assert!(
        text(&strong).contains(&rule),
        "the denial names the rule: {}",
        text(&strong)
    );
    assert!(
        text(&strong).contains("settings.json"),
        "and its source: {}",
        text(&strong)
    );
    let weak = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Allow, "Read")],
    )?)
    .call("Read", input)
    .await?;
    assert!(text(&weak).contains("OUTSIDE_SECRET"));
    Ok(())
}

#[tokio::test]
async fn a_symlink_to_a_denied_file() -> TestResult {
    let w = world()?;
    let secret = w.outside.join("secret.txt");
    std::os::unix::fs::symlink(&secret, w.ws.join("innocent.txt"))?;
    let rule = format!("Read(/{})", secret.display());
    let input = json!({"file_path": w.p("innocent.txt")});
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, &rule)],
    )?)
    .call("Read", input.clone())
    .await?;
    assert!(
        refused(&strong),
        "the link's target matches the deny rule: {strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Read", input)
        .await?;
    assert!(text(&weak).contains("OUTSIDE_SECRET"), "{weak:?}");
    Ok(())
}

#[tokio::test]
async fn a_denied_link_name_whatever_it_points_to() -> TestResult {
    let w = world()?;
    std::os::unix::fs::symlink(w.ws.join("a.txt"), w.ws.join("forbidden-link"))?;
    let input = json!({"file_path": w.p("forbidden-link")});
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, "Read(./forbidden-link)")],
    )?)
    .call("Read", input.clone())
    .await?;
    assert!(refused(&strong), "the link itself matches: {strong:?}");
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Read", input)
        .await?;
    assert!(text(&weak).contains("A_CONTENT"));
    Ok(())
}

#[tokio::test]
async fn a_hard_link_to_a_denied_file() -> TestResult {
    let w = world()?;
    // A hard link needs the same filesystem: make the secret inside the
    // workspace's filesystem, deny it by its path, read it by another name.
    std::fs::create_dir(w.ws.join("vault"))?;
    std::fs::write(w.ws.join("vault/key"), "HARDLINKED_SECRET")?;
    std::fs::hard_link(w.ws.join("vault/key"), w.ws.join("copy-of-key"))?;
    let input = json!({"file_path": w.p("copy-of-key")});
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, "Read(./vault/key)")],
    )?)
    .call("Read", input.clone())
    .await?;
    assert!(
        refused(&strong),
        "another name for the denied file is denied: {strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Read", input)
        .await?;
    assert!(text(&weak).contains("HARDLINKED_SECRET"));
    Ok(())
}

#[tokio::test]
async fn a_symlink_planted_in_the_workspace_pointing_out() -> TestResult {
    let w = world()?;
    std::os::unix::fs::symlink(w.outside.join("secret.txt"), w.ws.join("planted"))?;
    let input = json!({"file_path": w.p("planted")});
    let strong = Run::new(w.policy(PermissionMode::Default, &[(RuleKind::Allow, "Read(./**)")])?)
        .call("Read", input.clone())
        .await?;
    assert!(
        refused(&strong),
        "judged by where it points (outside): {strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Read", input)
        .await?;
    assert!(text(&weak).contains("OUTSIDE_SECRET"));
    Ok(())
}

#[tokio::test]
async fn a_tree_grant_that_would_expose_a_denied_file() -> TestResult {
    let w = world()?;
    std::fs::create_dir_all(w.home.join("notes"))?;
    std::fs::write(w.home.join("notes/private.txt"), "PRIVATE_NOTES")?;
    let home = w.home.join("notes").to_string_lossy().into_owned();
    let file = w
        .home
        .join("notes/private.txt")
        .to_string_lossy()
        .into_owned();
    let input = probe(
        json!([need("read-tree", &home)]),
        json!([{"op": "read", "path": file}]),
    );
    let strong = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Deny, "Read(~/notes/private.txt)")],
    )?)
    .call("Probe", input.clone())
    .await?;
    assert!(refused(&strong), "{strong:?}");
    assert!(text(&strong).contains("denied by"), "{strong:?}");
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", input)
        .await?;
    assert!(worked(&weak, 0), "{weak:?}");
    Ok(())
}

/// A tree holding a credential file is refused to a tool that would read
/// it through the tree (bypassPermissions, no rules), under another
/// spelling of the folder too; an allow rule of the user's naming the
/// folder (the weakened control) lets the same call read the key.
#[tokio::test]
async fn a_tree_grant_that_would_expose_a_credential_file() -> TestResult {
    let w = world()?;
    let key = w.home.join(".ssh/id_rsa").to_string_lossy().into_owned();
    for tree in [
        w.home.to_string_lossy().into_owned(),
        format!("{}/.ssh/..", w.home.display()),
        w.home.join(".ssh").to_string_lossy().into_owned(),
    ] {
        let input = probe(
            json!([need("read-tree", &tree)]),
            json!([{"op": "read", "path": key}]),
        );
        let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
            .call("Probe", input.clone())
            .await?;
        assert!(
            text(&strong).contains("withheld because it holds ssh keys"),
            "{tree}: {strong:?}"
        );
    }
    let input = probe(
        json!([need("read-tree", &w.home.join(".ssh").to_string_lossy())]),
        json!([{"op": "read", "path": key}]),
    );
    let weak = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Allow, "Read(~/.ssh/**)")],
    )?)
    .call("Probe", input)
    .await?;
    assert!(worked(&weak, 0), "{weak:?}");
    Ok(())
}

/// A plugin asking to read a credential file by name — `.env` and a key
/// found by its content, under other spellings too (`./`, a link) — is
/// refused in bypassPermissions with no rules; the weakened control, an
/// allow rule of the user's naming the file, lets it read.
#[tokio::test]
async fn a_plugin_reading_a_credential_file() -> TestResult {
    let w = world()?;
    std::fs::write(w.ws.join(".env"), "TOKEN=ENV_SECRET")?;
    std::fs::write(
        w.ws.join("deploy.json"),
        "{\"k\": \"-----BEGIN PRIVATE KEY-----\\nKEY_SECRET\"}",
    )?;
    std::os::unix::fs::symlink(w.ws.join(".env"), w.ws.join("config.txt"))?;
    for target in [".env", "./.env", "config.txt", "deploy.json"] {
        let path = format!("{}/{target}", w.ws.display());
        let input = probe(
            json!([need("read-file", &path)]),
            json!([{"op": "read", "path": path}]),
        );
        let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
            .call("Probe", input)
            .await?;
        assert!(
            text(&strong).contains("is withheld because it holds"),
            "{target}: {strong:?}"
        );
    }
    let path = w.p(".env");
    let weak = Run::new(w.policy(
        PermissionMode::BypassPermissions,
        &[(RuleKind::Allow, "Read(./.env)")],
    )?)
    .call(
        "Probe",
        probe(
            json!([need("read-file", &path)]),
            json!([{"op": "read", "path": path}]),
        ),
    )
    .await?;
    assert!(worked(&weak, 0), "{weak:?}");
    Ok(())
}
