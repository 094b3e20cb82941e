//! Components from a real OCI registry (Debian's `docker-registry`, on
//! loopback, started here): the Wasm OCI artifact pushed with an OCI
//! client, installed by tag and by digest, pinned to what the tag resolved
//! to; a moved tag shown and asked about again; a tampered layer and an
//! artifact that is not a component refused with nothing installed.

#[path = "plugin_user.rs"]
mod plugin_user;
mod support;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use plugin_user::User;
use serde_json::{Value, json};
use sha2::Digest;
use std::path::Path;
use support::{Run, TestResult};

const COUNT: &str = "test_typed-probe_files_0_1_0_count";
const POLICY: &str = "permissions:\n  storage:\n    allow:\n      - uri: \"fs://workspace/**\"\n        access: [\"read\"]\n";

/// The loopback registry, and pushing Wasm artifacts to it.
struct Registry(carapace_test_support::registry::Registry);

impl std::ops::Deref for Registry {
    type Target = carapace_test_support::registry::Registry;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Registry {
    fn start() -> Result<Self, Box<dyn std::error::Error>> {
        carapace_test_support::registry::Registry::start()?
            .map(Self)
            .ok_or_else(|| {
                "no registry: install Debian's docker-registry (tests/setup.sh does)".into()
            })
    }

    /// Pushes a Wasm artifact; returns the manifest's digest.
    fn push(
        &self,
        repo_and_tag: &str,
        wasm: &[u8],
        policy: Option<&str>,
        config_type: &str,
    ) -> Result<String, Box<dyn std::error::Error>> {
        let reference: Reference = self.reference(repo_and_tag).parse()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let client = Client::new(ClientConfig {
                protocol: ClientProtocol::Http,
                ..ClientConfig::default()
            });
            let mut layers = vec![ImageLayer::new(
                wasm.to_vec(),
                "application/wasm".into(),
                None,
            )];
            if let Some(policy) = policy {
                layers.push(ImageLayer::new(
                    policy.as_bytes().to_vec(),
                    "application/vnd.wasm.policy.v1+yaml".into(),
                    None,
                ));
            }
            let config = Config::new(b"{}".to_vec(), config_type.into(), None);
            client
                .push(&reference, &layers, config, &RegistryAuth::Anonymous, None)
                .await?;
            let (raw, _) = client
                .pull_manifest_raw(
                    &reference,
                    &RegistryAuth::Anonymous,
                    &["application/vnd.oci.image.manifest.v1+json"],
                )
                .await?;
            Ok(format!("sha256:{}", hex(&sha2::Sha256::digest(&raw))))
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn probe() -> Result<Vec<u8>, std::io::Error> {
    std::fs::read(Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_probe.wasm"))
}

/// The same component with other bytes: a custom section appended.
fn probe_v2() -> Result<Vec<u8>, std::io::Error> {
    let mut wasm = probe()?;
    wasm.extend_from_slice(&[0, 5, 2, b'v', b'2', b'x', b'y']);
    Ok(wasm)
}

/// Counts `notes.txt` with the installed component.
fn count_lines(user: &User) -> Result<Run, Box<dyn std::error::Error>> {
    let notes = user.file("notes.txt").display().to_string();
    let input = json!({"path": notes, "what": {"tag": "lines"}}).to_string();
    user.run(&[
        "tool",
        "call",
        "typed-probe",
        COUNT,
        "--input",
        &input,
        "--yes",
    ])
}

#[test]
fn a_component_installs_from_a_registry_pinned_to_what_its_tag_resolved_to() -> TestResult {
    let registry = Registry::start()?;
    let first = registry.push(
        "tools/typed-probe:1.0",
        &probe()?,
        Some(POLICY),
        "application/vnd.wasm.config.v0+json",
    )?;

    let user = User::new()?;
    let source = format!("oci://{}", registry.reference("tools/typed-probe:1.0"));
    let added = user.run(&["plugin", "add", &source, "--yes"])?;
    assert_eq!(added.status, Some(0), "{}\n{}", added.stdout, added.stderr);
    let pinned = format!(
        "pinned    {}",
        registry.reference(&format!("tools/typed-probe@{first}"))
    );
    assert!(added.stdout.contains(&pinned), "{}", added.stdout);
    // The ceiling is the artifact's policy layer.
    assert!(
        added.stdout.contains("files: read {workspace}"),
        "{}",
        added.stdout
    );
    assert!(
        added.stdout.contains("the artifact's policy layer"),
        "{}",
        added.stdout
    );
    let count = count_lines(&user)?;
    assert!(
        count.stdout.contains(r#"[\"lines\",3]"#),
        "{}\n{}",
        count.stdout,
        count.stderr
    );

    // The tag moves: nothing installed changes until the update is approved.
    let second = registry.push(
        "tools/typed-probe:1.0",
        &probe_v2()?,
        Some(POLICY),
        "application/vnd.wasm.config.v0+json",
    )?;
    assert_ne!(first, second);
    let refused = user.run(&["plugin", "update", "typed-probe"])?;
    assert_ne!(
        refused.status,
        Some(0),
        "updated without approval: {}",
        refused.stdout
    );
    assert!(
        refused
            .stdout
            .contains(&format!("was {first} when it was approved")),
        "{}",
        refused.stdout
    );
    assert!(
        refused.stderr.contains("needs approval"),
        "{}",
        refused.stderr
    );
    let old_digest = hex(&sha2::Sha256::digest(probe()?));
    assert_eq!(user.installed_digest("typed-probe")?, old_digest.as_str());
    assert!(count_lines(&user)?.stdout.contains(r#"[\"lines\",3]"#));
    let updated = user.run(&["plugin", "update", "typed-probe", "--yes"])?;
    assert_eq!(
        updated.status,
        Some(0),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(
        user.installed_digest("typed-probe")?,
        hex(&sha2::Sha256::digest(probe_v2()?)).as_str()
    );
    // Resolving again when nothing moved asks nothing.
    let again = user.run(&["plugin", "update", "typed-probe"])?;
    assert_eq!(again.status, Some(0), "{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);

    // By digest, for another user: the first version, whatever the tag says now.
    let other = User::new()?;
    let by_digest = format!(
        "oci://{}",
        registry.reference(&format!("tools/typed-probe@{first}"))
    );
    let added = other.run(&["plugin", "add", &by_digest, "--yes"])?;
    assert_eq!(added.status, Some(0), "{}\n{}", added.stdout, added.stderr);
    assert_eq!(other.installed_digest("typed-probe")?, old_digest.as_str());
    Ok(())
}

#[test]
fn a_tampered_layer_or_an_artifact_that_is_no_component_is_refused() -> TestResult {
    let registry = Registry::start()?;
    let user = User::new()?;

    // The registry serves other bytes under the layer's digest.
    let wasm = probe()?;
    registry.push(
        "tools/tampered:1",
        &wasm,
        None,
        "application/vnd.wasm.config.v0+json",
    )?;
    let layer = format!("sha256:{}", hex(&sha2::Sha256::digest(&wasm)));
    let mut changed = wasm.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0xff;
    std::fs::write(registry.blob_file(&layer), &changed)?;
    let source = format!("oci://{}", registry.reference("tools/tampered:1"));
    let refused = user.run(&["plugin", "add", &source, "--yes"])?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(refused.stderr.contains("refused"), "{}", refused.stderr);
    assert_eq!(user.installed()?, Vec::<Value>::new());

    // A container image's config, not a Wasm one.
    registry.push(
        "tools/image:1",
        &probe()?,
        None,
        "application/vnd.oci.image.config.v1+json",
    )?;
    let source = format!("oci://{}", registry.reference("tools/image:1"));
    let refused = user.run(&["plugin", "add", &source, "--yes"])?;
    assert_ne!(refused.status, Some(0));
    assert!(
        refused.stderr.contains("not a Wasm component artifact"),
        "{}",
        refused.stderr
    );

    // Nothing there at all.
    let source = format!("oci://{}", registry.reference("tools/missing:1"));
    let refused = user.run(&["plugin", "add", &source, "--yes"])?;
    assert_ne!(refused.status, Some(0));
    assert!(
        refused.stderr.contains("tools/missing"),
        "{}",
        refused.stderr
    );
    assert_eq!(user.installed()?, Vec::<Value>::new());
    Ok(())
}
