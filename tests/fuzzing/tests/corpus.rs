//! Every committed corpus entry (`fuzz/corpus/TARGET/`) through its
//! target, as the fuzzer would run it: a check that fails, or a panic,
//! fails this test with the entry's name. Each target must have a corpus.

use std::path::Path;

#[test]
fn every_corpus_entry_passes_its_target() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut failures = Vec::new();
    for (name, target) in carapace_fuzzing::TARGETS {
        let dir = root.join(name);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        assert!(!entries.is_empty(), "{name} has no corpus");
        for entry in entries {
            let data = std::fs::read(&entry)?;
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failures.push(entry.display().to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "corpus entries that fail: {failures:#?}"
    );
    Ok(())
}

#[test]
fn every_target_has_a_fuzz_target_file() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    for (name, _) in carapace_fuzzing::TARGETS {
        let file = fuzz.join(format!("{name}.rs"));
        assert!(file.exists(), "{} is missing", file.display());
    }
}
