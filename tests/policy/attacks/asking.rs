//! Asking in print mode.

use super::*;

#[tokio::test]
async fn ask_is_a_denial_in_print_mode_unless_a_prompt_tool_approves() -> TestResult {
    let w = world()?;
    let secret = w.outside.join("secret.txt").to_string_lossy().into_owned();
    let input = probe(
        json!([need("read-file", &secret)]),
        json!([{"op": "read", "path": secret}]),
    );
    let strong = Run::new(w.policy(PermissionMode::Default, &[])?)
        .call("Probe", input.clone())
        .await?;
    assert!(
        refused(&strong) && text(&strong).contains("cannot ask"),
        "{strong:?}"
    );
    let refused_by_tool = Run::new(w.policy(PermissionMode::Default, &[])?)
        .approved()
        .call("Probe", input.clone())
        .await?;
    assert!(refused(&refused_by_tool) && text(&refused_by_tool).contains("approver said no"));
    let weak = Run::new(w.policy(PermissionMode::Default, &[])?)
        .approved()
        .call(
            "Probe",
            json!({"needs": input["needs"], "attempts": input["attempts"], "approve": true}),
        )
        .await?;
    assert!(worked(&weak, 0), "approved by the prompt tool: {weak:?}");
    Ok(())
}
