//! The text tool-call fallback scanner (`extractToolCallsFromText`) and argument repair on
//! model text: linear time (the fuzzer's -timeout catches quadratic inputs), no panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_llm::text_tool_extractor::{extract_tool_calls_from_text, repair_tool_args};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = extract_tool_calls_from_text(s, &["file_read", "grep", "a"]);
    let _ = extract_tool_calls_from_text(s, &[]);
    let _ = repair_tool_args(s);
});
