//! `extractJSON` on a model's structured-output answer: whatever it returns must be a slice
//! the JSON checker accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_core::json::is_valid_json;
use oma_core::kernel::structured_output::extract_json;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(j) = extract_json(s) {
        assert!(is_valid_json(j));
    }
});
