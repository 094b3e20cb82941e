//! `carapace mcp serve`'s side of MCP: JSON-RPC from a client, answered
//! by carapace's own tools through the policy and the sandbox (so tool
//! inputs meet their JSON Schemas here, whatever the fuzzer writes).
//! Checks: every request gets one answer with its id, a result or an
//! error; no answer ever holds the text of a file outside the served
//! folder or of one a deny rule hides (`Read(*.env)`), however the call
//! names it.

use carapace::policy::{
    Anchors, PermissionMode, Policy, PolicyConfig, Rule, RuleKind, RuleSet, RuleSource, SourceKind,
};
use carapace::sandbox::{CallLimits, Sandbox, SandboxConfig};
use carapace::tools::{ToolPipeline, ToolRegistry};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};

const OUTSIDE: &str = "CANARY-OUTSIDE-7f3a";
const DENIED: &str = "CANARY-DENIED-91c2";

/// Where the corpus says the served tree is: a fixed name, so its inputs
/// can name the tree's files (one fuzzing process of this target at a
/// time). Each user's tree is in a place of its own ([`place`]), which an
/// input's mention of this one is read as: a tree another user left in
/// /tmp can neither be removed nor reused.
pub const PLACE: &str = "/tmp/carapace-fuzz-served";

/// This user's served tree: [`PLACE`] and the user's id.
fn place() -> String {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    format!("{PLACE}-{uid}")
}

struct Served {
    pipeline: Arc<ToolPipeline>,
}

fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| match crate::runtime().block_on(serve()) {
        Ok(served) => served,
        Err(e) => panic!("the served tree could not be set up: {e}"),
    })
}

async fn serve() -> Result<Served, Box<dyn std::error::Error>> {
    let place = place();
    let dir = Path::new(&place);
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let root = dir.join("served");
    std::fs::create_dir_all(root.join("src"))?;
    std::fs::write(root.join("notes.txt"), "what the notes say\n")?;
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n")?;
    std::fs::write(root.join(".env"), format!("TOKEN={DENIED}\n"))?;
    std::fs::write(dir.join("secret.txt"), format!("{OUTSIDE}\n"))?;
    std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("link.txt"))?;
    std::fs::hard_link(root.join(".env"), root.join("env-copy.txt"))?;
    let root = root.canonicalize()?;
    let sandbox = Sandbox::new(SandboxConfig {
        guest_cwd: Some(root.clone()),
        ..carapace_test_support::sandbox_config()
    })?;
    let registry = ToolRegistry::builtin(&sandbox).await?;
    let anchors = Anchors {
        cwd: root.clone(),
        home: root.clone(),
        project: root.clone(),
    };
    let source = RuleSource {
        kind: SourceKind::CliFlag,
        file: None,
    };
    let deny = Rule::parse("Read(*.env)", RuleKind::Deny, source, &anchors)?;
    let policy = Policy::from_config(PolicyConfig {
        rules: RuleSet::new(vec![deny]),
        ..PolicyConfig::new(PermissionMode::Default, &root)
    });
    let pipeline = Arc::new(ToolPipeline::new(registry, policy, CallLimits::default()));
    Ok(Served { pipeline })
}

pub fn run(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let text = text.replace(PLACE, &place());
    let served = served();
    let answer = crate::runtime().block_on(carapace::mcp_serve::answer(&served.pipeline, &text));
    let asked: Option<Value> = serde_json::from_str(&text).ok();
    let id = asked.as_ref().and_then(|a| a.get("id"));
    match (answer, id) {
        (None, Some(id)) => panic!("request {id} went unanswered"),
        (None, None) => {}
        (Some(answer), id) => check(&answer, id),
    }
}

fn check(answer: &Value, id: Option<&Value>) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    if let Some(id) = id {
        assert_eq!(&answer["id"], id, "answered under another id");
    }
    assert!(
        answer.get("result").is_some() != answer.get("error").is_some(),
        "not one of result and error: {answer}"
    );
    let said = answer.to_string();
    assert!(
        !said.contains(OUTSIDE),
        "a file outside the served folder was read: {said}"
    );
    assert!(
        !said.contains(DENIED),
        "a file a deny rule hides was read: {said}"
    );
}
