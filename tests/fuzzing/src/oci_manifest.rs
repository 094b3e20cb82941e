//! What an OCI registry sends before any component byte: the reference a
//! user typed and the manifest the registry answers with. Checks: a
//! reference that parses reads the same when written out again; an
//! accepted manifest's digest is its own and any other pin refuses it; an
//! artifact's layers are a Wasm config and exactly one Wasm layer, and
//! only a layer whose declared size is within the limit is downloaded.

use carapace::plugin_store::oci::{self, OciError};

/// The Wasm OCI artifact layout's media types (and wasm-to-oci's older
/// ones), as its specification names them.
const WASM_LAYERS: &[&str] = &[
    "application/wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
];
const WASM_CONFIGS: &[&str] = &[
    "application/vnd.wasm.config.v0+json",
    "application/vnd.wasm.config.v1+json",
];

/// A layer limit small enough for the fuzzer's sizes to cross.
const LIMIT: u64 = 1 << 16;

pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 2 {
        0 => reference(rest),
        _ => manifest(rest),
    }
}

fn reference(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let Ok(parsed) = oci::parse_reference(text) else {
        return;
    };
    let whole = parsed.whole();
    match oci::parse_reference(&whole) {
        Ok(again) => assert_eq!(
            again.whole(),
            whole,
            "{text:?} → {whole:?} reads differently again"
        ),
        Err(e) => panic!("{text:?} parsed, but written as {whole:?} it does not: {e}"),
    }
    if let Some(digest) = parsed.digest() {
        assert!(whole.contains(digest), "{whole:?} lost the digest {digest}");
    }
}

fn manifest(raw: &[u8]) {
    let Ok(read) = oci::read_manifest("fuzz", None, raw) else {
        return;
    };
    let hex = read.digest.strip_prefix("sha256:").unwrap_or_default();
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        read.digest
    );
    if let Err(e) = oci::read_manifest("fuzz", Some(&read.digest), raw) {
        panic!("the manifest's own digest does not pin it: {e}");
    }
    let other = format!("sha256:{}", other_hex(hex));
    assert!(
        matches!(
            oci::read_manifest("fuzz", Some(&other), raw),
            Err(OciError::Tampered { .. })
        ),
        "a manifest was accepted under another digest"
    );
    let Ok((layer, policy)) = oci::layers("fuzz", &read.manifest) else {
        return;
    };
    let wasm_layers = read
        .manifest
        .layers
        .iter()
        .filter(|l| WASM_LAYERS.contains(&l.media_type.as_str()))
        .count();
    assert_eq!(wasm_layers, 1, "an artifact with {wasm_layers} Wasm layers");
    assert!(WASM_LAYERS.contains(&layer.media_type.as_str()));
    assert!(
        WASM_CONFIGS.contains(&read.manifest.config.media_type.as_str()),
        "{}",
        read.manifest.config.media_type
    );
    if let Some(policy) = policy {
        assert!(
            !std::ptr::eq(policy, layer),
            "the component layer is also the policy"
        );
    }
    let fits = oci::fits(layer, LIMIT);
    assert_eq!(
        fits,
        (0..=LIMIT as i64).contains(&layer.size),
        "size {}",
        layer.size
    );
}

/// The same length of hex, one digit changed.
fn other_hex(hex: &str) -> String {
    let mut out: Vec<u8> = hex.bytes().collect();
    if let Some(first) = out.first_mut() {
        *first = if *first == b'0' { b'1' } else { b'0' };
    }
    String::from_utf8(out).unwrap_or_default()
}
