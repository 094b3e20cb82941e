//! Secrets.

use super::*;

#[tokio::test]
async fn reading_the_host_environment() -> TestResult {
    let w = world()?;
    let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .call(
            "Probe",
            probe(
                json!([]),
                json!([{"op": "env_all"}, {"op": "env", "name": "PATH"}]),
            ),
        )
        .await?;
    assert!(held(&strong, 0) && held(&strong, 1), "{strong:?}");
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_env("PATH"))
        .call(
            "Probe",
            probe(
                json!([need("env", "PATH")]),
                json!([{"op": "env", "name": "PATH"}]),
            ),
        )
        .await?;
    assert!(
        worked(&weak, 0),
        "a variable granted by name is visible: {weak:?}"
    );
    Ok(())
}

#[tokio::test]
async fn reading_the_api_key() -> TestResult {
    let w = world()?;
    for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"] {
        let strong = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
            .ceiling(Ceiling::none().with_env(name))
            .call(
                "Probe",
                probe(
                    json!([need("env", name)]),
                    json!([{"op": "env", "name": name}]),
                ),
            )
            .await?;
        assert!(
            refused(&strong) && text(&strong).contains("credentials"),
            "{name}: {strong:?}"
        );
    }
    let weak = Run::new(w.policy(PermissionMode::BypassPermissions, &[])?)
        .ceiling(Ceiling::none().with_env("HOME"))
        .call(
            "Probe",
            probe(
                json!([need("env", "HOME")]),
                json!([{"op": "env", "name": "HOME"}]),
            ),
        )
        .await?;
    assert!(!weak.is_error, "{weak:?}");
    // The control's value really reached the guest: the grant works, so
    // the refusal above is what kept the key out.
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(!home.is_empty() && text(&weak).contains(&home), "{weak:?}");
    Ok(())
}
