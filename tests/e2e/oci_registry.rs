//! Components from a real OCI registry (Debian's `docker-registry`, on
//! loopback, started here): the Wasm OCI artifact pushed with an OCI
//! client, installed by tag and by digest, pinned to what the tag resolved
//! to; a moved tag shown and asked about again; a tampered layer and an
//! artifact that is not a component refused with nothing installed.

#[path = "plugin_user.rs"]
mod plugin_user;
mod support;

use carapace_test_support::sigstore::{Signing, TestSigstore};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
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
        self.push_layers(repo_and_tag, layers, config_type)
    }

    /// Signs `digest` of `repo` with `key` as cosign does: a payload naming
    /// the manifest, its signature in the layer's annotation, under the tag
    /// `sha256-HEX.sig`.
    fn sign(
        &self,
        repo: &str,
        digest: &str,
        key: &p256::ecdsa::SigningKey,
    ) -> Result<(), Box<dyn std::error::Error>> {
        use base64::Engine;
        use p256::ecdsa::signature::Signer;
        self.sign_with(repo, digest, |payload| {
            let signature: p256::ecdsa::Signature = key.sign(payload);
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
            Ok(std::collections::BTreeMap::from([(
                "dev.cosignproject.cosign/signature".to_string(),
                encoded,
            )]))
        })
    }

    /// Signs as cosign's keyless mode does, as `identity` of the tests' own
    /// Sigstore (issuer [`ISSUER`]).
    fn sign_keyless(
        &self,
        repo: &str,
        digest: &str,
        sigstore: &TestSigstore,
        identity: &str,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let how = Signing {
            identity,
            issuer: ISSUER,
            logged_after: std::time::Duration::from_secs(30),
        };
        self.sign_with(repo, digest, |payload| sigstore.sign(payload, &how))
    }

    /// The signature artifact for `digest`: cosign's payload, and the layer
    /// annotations `annotate` makes of it.
    fn sign_with(
        &self,
        repo: &str,
        digest: &str,
        annotate: impl FnOnce(
            &[u8],
        ) -> Result<
            std::collections::BTreeMap<String, String>,
            Box<dyn std::error::Error>,
        >,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let payload = carapace::plugin_store::signature::payload(&self.reference(repo), digest);
        let annotations = annotate(&payload)?;
        let layer = ImageLayer::new(
            payload,
            "application/vnd.dev.cosign.simplesigning.v1+json".into(),
            Some(annotations),
        );
        let tag = carapace::plugin_store::signature::signature_tag(digest);
        self.push_layers(
            &format!("{repo}:{tag}"),
            vec![layer],
            "application/vnd.oci.image.config.v1+json",
        )?;
        Ok(())
    }

    /// Pushes `layers` under `repo_and_tag` with an empty config of
    /// `config_type`; returns the manifest's digest as the registry serves it.
    fn push_layers(
        &self,
        repo_and_tag: &str,
        layers: Vec<ImageLayer>,
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
            let config = Config::new(b"{}".to_vec(), config_type.into(), None);
            for (data, digest) in layers
                .iter()
                .map(|l| (&l.data, l.sha256_digest()))
                .chain([(&config.data, config.sha256_digest())])
            {
                client.push_blob(&reference, data, &digest).await?;
            }
            // Serialized as cosign and other Go tools do: oci-client's own
            // canonical form leaves a newline raw inside a string (a PEM
            // annotation), which the registry refuses.
            let manifest = OciImageManifest::build(&layers, &config, None);
            let raw = serde_json::to_vec(&manifest)?;
            let content_type = "application/vnd.oci.image.manifest.v1+json".parse()?;
            client
                .push_manifest_raw(&reference, raw.clone(), content_type)
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

#[test]
fn with_signatures_required_only_an_artifact_signed_by_a_trusted_key_installs() -> TestResult {
    use p256::pkcs8::{EncodePublicKey, LineEnding};
    const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
    let registry = Registry::start()?;
    let trusted = p256::ecdsa::SigningKey::from_slice(&[7u8; 32])?;
    let stranger = p256::ecdsa::SigningKey::from_slice(&[9u8; 32])?;
    let signed = registry.push(
        "tools/typed-probe:signed",
        &probe()?,
        Some(POLICY),
        WASM_CONFIG,
    )?;
    registry.sign("tools/typed-probe", &signed, &trusted)?;
    registry.push(
        "tools/typed-probe:unsigned",
        &probe_v2()?,
        Some(POLICY),
        WASM_CONFIG,
    )?;
    let strange = registry.push("tools/strange:1", &probe()?, Some(POLICY), WASM_CONFIG)?;
    registry.sign("tools/strange", &strange, &stranger)?;

    let user = User::new()?;
    let pem = trusted.verifying_key().to_public_key_pem(LineEnding::LF)?;
    let settings = |required: bool| {
        json!({"pluginSignatures": {"required": required, "keys": {"acme": pem}}}).to_string()
    };
    std::fs::write(user.config.path().join("settings.json"), settings(true))?;
    let add = |tag: &str| {
        user.run(&[
            "plugin",
            "add",
            &format!("oci://{}", registry.reference(tag)),
            "--yes",
        ])
    };

    let added = add("tools/typed-probe:signed")?;
    assert_eq!(added.status, Some(0), "{}\n{}", added.stdout, added.stderr);
    assert!(
        added.stdout.contains("signed    by `acme`"),
        "{}",
        added.stdout
    );
    for refused in ["tools/typed-probe:unsigned", "tools/strange:1"] {
        let run = add(refused)?;
        assert_ne!(run.status, Some(0), "{refused} installed: {}", run.stdout);
        assert!(
            run.stderr.contains("no valid signature"),
            "{refused}: {}",
            run.stderr
        );
    }
    // Still the signed one.
    assert_eq!(
        user.installed_digest("typed-probe")?,
        hex(&sha2::Sha256::digest(probe()?)).as_str()
    );
    let inspected: Value = serde_json::from_str(
        &user
            .run(&["plugin", "inspect", "typed-probe", "--json"])?
            .stdout,
    )?;
    assert_eq!(inspected["oci"]["signer"], "acme", "{inspected}");
    assert_eq!(inspected["oci"]["manifest_digest"], signed.as_str());
    // A project file can neither trust a key nor lift the requirement.
    let strangers = stranger.verifying_key().to_public_key_pem(LineEnding::LF)?;
    std::fs::create_dir_all(user.file(".carapace"))?;
    std::fs::write(
        user.file(".carapace/settings.json"),
        json!({"pluginSignatures": {"required": false, "keys": {"mine": strangers}}}).to_string(),
    )?;
    let run = add("tools/strange:1")?;
    assert_ne!(
        run.status,
        Some(0),
        "a project file's key was trusted: {}",
        run.stdout
    );
    assert!(run.stderr.contains("no valid signature"), "{}", run.stderr);
    // The control: the same key in a user's own settings is trusted.
    let third = User::new()?;
    std::fs::write(
        third.config.path().join("settings.json"),
        json!({"pluginSignatures": {"required": true, "keys": {"stranger": strangers}}})
            .to_string(),
    )?;
    let source = format!("oci://{}", registry.reference("tools/strange:1"));
    let run = third.run(&["plugin", "add", &source, "--yes"])?;
    assert_eq!(run.status, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("signed    by `stranger`"),
        "{}",
        run.stdout
    );

    // Not required: an unsigned artifact installs, and says so.
    std::fs::write(user.config.path().join("settings.json"), settings(false))?;
    let other = User::new()?;
    std::fs::write(other.config.path().join("settings.json"), settings(false))?;
    let source = format!("oci://{}", registry.reference("tools/typed-probe:unsigned"));
    let added = other.run(&["plugin", "add", &source, "--yes"])?;
    assert_eq!(added.status, Some(0), "{}", added.stderr);
    assert!(added.stdout.contains("signed    no"), "{}", added.stdout);
    Ok(())
}

const ISSUER: &str = "https://issuer.example";

#[test]
fn a_keyless_signature_counts_for_the_pinned_identity_under_the_trust_root_file() -> TestResult {
    const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
    let registry = Registry::start()?;
    let sigstore = TestSigstore::new(1)?;
    let release = registry.push("tools/typed-probe:1", &probe()?, Some(POLICY), WASM_CONFIG)?;
    registry.sign_keyless(
        "tools/typed-probe",
        &release,
        &sigstore,
        "release@example.com",
    )?;
    let impostor = registry.push("tools/impostor:1", &probe()?, Some(POLICY), WASM_CONFIG)?;
    registry.sign_keyless(
        "tools/impostor",
        &impostor,
        &sigstore,
        "mallory@example.com",
    )?;

    let trusting = |root: Option<&str>| -> Result<User, Box<dyn std::error::Error>> {
        let user = User::new()?;
        let mut signatures = json!({
            "required": true,
            "identities": {"release": {"identity": "release@example.com", "issuer": ISSUER}},
        });
        if let Some(root) = root {
            std::fs::write(
                user.config.path().join("sigstore.json"),
                sigstore.trusted_root()?,
            )?;
            signatures["trustedRoot"] = json!(root);
        }
        let settings = json!({"pluginSignatures": signatures}).to_string();
        std::fs::write(user.config.path().join("settings.json"), settings)?;
        Ok(user)
    };
    let add = |user: &User, repo: &str| {
        let source = format!("oci://{}", registry.reference(repo));
        user.run(&["plugin", "add", &source, "--yes"])
    };

    let user = trusting(Some("sigstore.json"))?;
    let added = add(&user, "tools/typed-probe:1")?;
    assert_eq!(added.status, Some(0), "{}\n{}", added.stdout, added.stderr);
    let shown = "signed    by `release (release@example.com via https://issuer.example)`";
    assert!(added.stdout.contains(shown), "{}", added.stdout);
    let inspected: Value = serde_json::from_str(
        &user
            .run(&["plugin", "inspect", "typed-probe", "--json"])?
            .stdout,
    )?;
    assert_eq!(
        inspected["oci"]["signer"], "release (release@example.com via https://issuer.example)",
        "{inspected}"
    );
    // Another identity of the same trusted CA is nobody the user named.
    let refused = add(&user, "tools/impostor:1")?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("no valid signature")
            && refused.stderr.contains("identity mismatch"),
        "{}",
        refused.stderr
    );
    // Without the trust-root file, the built-in public-good root does not
    // know the tests' CA: the same artifact is refused.
    let untrusting = trusting(None)?;
    let refused = add(&untrusting, "tools/typed-probe:1")?;
    assert_ne!(refused.status, Some(0), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("no valid signature"),
        "{}",
        refused.stderr
    );
    assert_eq!(untrusting.installed()?, Vec::<Value>::new());
    Ok(())
}
