//! The ceiling.

use super::*;

#[tokio::test]
async fn requesting_more_than_the_manifest_ceiling() -> TestResult {
    let w = world()?;
    let secret = w.outside.join("secret.txt").to_string_lossy().into_owned();
    let input = probe(
        json!([need("read-file", &secret)]),
        json!([{"op": "read", "path": secret}]),
    );
    let narrow = Ceiling::none().with_files(&w.ws, FileAccess::Read);
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(narrow)
        .call("Probe", input.clone())
        .await?;
    assert!(
        refused(&strong) && text(&strong).contains("ceiling"),
        "{strong:?}"
    );
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_files("/", FileAccess::Read))
        .call("Probe", input)
        .await?;
    assert!(worked(&weak, 0));
    Ok(())
}

#[tokio::test]
async fn writing_with_a_read_only_ceiling() -> TestResult {
    let w = world()?;
    let t = w.p("new.txt");
    let input = probe(
        json!([need("write-file", &t)]),
        json!([{"op": "create", "path": t}]),
    );
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_files("/", FileAccess::Read))
        .call("Probe", input.clone())
        .await?;
    assert!(refused(&strong) && !Path::new(&t).exists());
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call("Probe", input)
        .await?;
    assert!(worked(&weak, 0) && Path::new(&t).exists());
    Ok(())
}
