#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| carapace_fuzzing::fuzz(carapace_fuzzing::wit_values::run, data));
