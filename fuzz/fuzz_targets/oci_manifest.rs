#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| carapace_fuzzing::fuzz(carapace_fuzzing::oci_manifest::run, data));
