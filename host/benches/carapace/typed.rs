//! Typed components (issue 25): installing one from an OCI registry on
//! loopback against from a path, and its calls against a `carapace:tool`
//! component doing the same work (the WordCount example: read a file and
//! count it).

use super::*;
use carapace::plugin_store::install::PluginSource;
use carapace::sandbox::ToolComponent;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;

const COUNT: &str = "test_typed-probe_files_0_1_0_count";

pub(super) async fn typed_benches() -> BenchResult {
    let probe = Path::new(env!("CARAPACE_TEST_GUESTS_DIR")).join("typed_probe.wasm");
    let wasm = std::fs::read(&probe)?;
    let dir = tempfile::tempdir()?;
    let ws = std::fs::canonicalize(dir.path())?;
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, "the cat and the hat\nThe end.\n".repeat(50))?;
    install_benches(&ws, &probe, &wasm).await?;
    call_benches(&ws, &notes, &wasm).await
}

async fn install_benches(ws: &Path, probe: &Path, wasm: &[u8]) -> BenchResult {
    let Some(registry) = carapace_test_support::registry::Registry::start()? else {
        println!(
            "| typed_add_oci | — | — | — | — | no docker-registry: tests/setup.sh installs it |"
        );
        return Ok(());
    };
    let reference = format!("127.0.0.1:{}/bench/typed-probe:1", registry.port);
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    client
        .push(
            &reference.parse()?,
            &[ImageLayer::new(
                wasm.to_vec(),
                "application/wasm".into(),
                None,
            )],
            Config::new(
                b"{}".to_vec(),
                "application/vnd.wasm.config.v0+json".into(),
                None,
            ),
            &RegistryAuth::Anonymous,
            None,
        )
        .await?;
    let http = reqwest::Client::new();
    let builtin: Vec<String> = Vec::new();
    for (name, source, note) in [
        (
            "typed_add_oci_cold",
            format!("oci://{reference}"),
            "pull from a registry on loopback (manifest, layer, digests), compile, record",
        ),
        (
            "typed_add_path_cold",
            probe.display().to_string(),
            "the same component from a path: read, compile, record",
        ),
    ] {
        let source = PluginSource::parse(&source)?;
        let samples = super::plugins::cold_installs(&source, ws, &builtin, &http, 10).await?;
        report(
            name,
            &samples,
            &format!("{note}; {} KiB, empty compile cache", wasm.len() / 1024),
        );
    }
    Ok(())
}

/// First calls (the component loaded from the compile cache and linked,
/// then called) and later calls (a fresh instance of the linked component),
/// typed against `carapace:tool`.
async fn call_benches(ws: &Path, notes: &Path, wasm: &[u8]) -> BenchResult {
    let word_count =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../examples/out/word-count-rust.wasm");
    let typed_input = json!({"path": notes, "what": {"tag": "lines"}});
    let tool_input = json!({"file_path": notes, "top": 3});
    let mut cases = vec![("typed", wasm.to_vec(), COUNT, typed_input)];
    match std::fs::read(&word_count) {
        Ok(bytes) => cases.push(("carapace_tool", bytes, "WordCount", tool_input)),
        Err(_) => println!(
            "| typed_call_carapace_tool | — | — | — | — | not built: run examples/tools/rust/build.sh (or the example tests) |"
        ),
    }
    let cache = tempfile::tempdir()?;
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: cache.path().to_path_buf(),
        guest_cwd: Some(ws.to_path_buf()),
        ..SandboxConfig::default()
    })?;
    let limits = CallLimits::default();
    for (kind, bytes, tool, input) in cases {
        // Typed components are granted their ceiling's tree; WordCount asks
        // for the one file.
        let grant = match kind {
            "typed" => Grant::none().tree(ws, carapace::sandbox::FileAccess::Read)?,
            _ => Grant::none().read_file(notes)?,
        };
        ToolComponent::load(&sandbox, kind, &bytes).await?; // fills the cache
        let first = time_async(30, |_| {
            let (sandbox, bytes, grant, input, limits) =
                (&sandbox, &bytes, &grant, &input, &limits);
            async move {
                let component = ToolComponent::load(sandbox, kind, bytes).await?;
                let invocation = ToolInvocation::new(tool, input, grant, limits);
                called(component.call(&invocation).await)
            }
        })
        .await?;
        let note = match kind {
            "typed" => "load from the compile cache, link, tools read from its types, one call",
            _ => "load from the compile cache, link, ask it for its tools, one call",
        };
        report(&format!("typed_first_call_{kind}"), &first, note);
        let component = ToolComponent::load(&sandbox, kind, &bytes).await?;
        let later = time_async(200, |_| {
            let (component, grant, input, limits) = (&component, &grant, &input, &limits);
            async move {
                let invocation = ToolInvocation::new(tool, input, grant, limits);
                called(component.call(&invocation).await)
            }
        })
        .await?;
        report(
            &format!("typed_later_call_{kind}"),
            &later,
            "fresh instance, grant, one call",
        );
    }
    Ok(())
}

fn called(result: Result<carapace::sandbox::Called, carapace::sandbox::CallError>) -> BenchResult {
    match result {
        Ok(called) if !called.output.is_error => Ok(()),
        Ok(called) => Err(format!("the call failed: {:?}", called.output.content).into()),
        Err(e) => Err(e.to_string().into()),
    }
}

use oci_client::Client;
