//! The lenient message parsers (the kernel's and the LLM layer's) and `llm::scan` on JSON a
//! JS adapter or a caller hands in: no panics, no stack overflow on deep nesting, and the two
//! lenient parsers agree on what they accept.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_core::kernel::message::{parse_messages, Strictness};
use oma_llm::fast_parse::parse_messages_lenient;
use oma_llm::scan::Scan;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let strict = parse_messages(s, Strictness::Strict);
    let kernel = parse_messages(s, Strictness::Lenient);
    let llm = parse_messages_lenient(s);
    if let (Ok(a), Ok(b)) = (&kernel, &llm) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    if strict.is_ok() {
        assert!(kernel.is_ok());
    }
    let mut sc = Scan::new(s);
    let _ = sc.skip();
});
