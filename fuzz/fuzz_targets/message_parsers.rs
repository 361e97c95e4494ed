//! The message parser and `json::Scan` on JSON a JS adapter or a caller hands in: no panics, no
//! stack overflow on deep nesting, and the parser's scan agrees with its serde path wherever
//! the scan answers (`parse_messages` is the scan, then serde for what the scan declines).
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_core::json::{replace_lone_surrogates, Scan};
use oma_core::kernel::message::{parse_messages, parse_messages_by_serde, Strictness};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let fixed = replace_lone_surrogates(s).unwrap_or_else(|| s.to_string());
    for strict in [Strictness::Strict, Strictness::Lenient] {
        let parsed = parse_messages(s, strict);
        let by_serde = parse_messages_by_serde(&fixed, strict);
        assert_eq!(format!("{parsed:?}"), format!("{by_serde:?}"));
    }
    if parse_messages(s, Strictness::Strict).is_ok() {
        assert!(parse_messages(s, Strictness::Lenient).is_ok());
    }
    let mut sc = Scan::new(s);
    let _ = sc.skip();
});
