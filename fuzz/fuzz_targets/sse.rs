//! The SSE parser on a server's bytes, split at a fuzzer-chosen point: the events must not
//! depend on where the chunks were split, and nothing may grow past the event limit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_llm::sse::SseParser;

fn parse(chunks: &[&[u8]]) -> Result<Vec<oma_llm::sse::SseEvent>, ()> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        p.push(c, &mut out).map_err(|_| ())?;
    }
    p.finish(&mut out).map_err(|_| ())?;
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let split = data[0] as usize % data.len();
    let body = &data[1..];
    let split = split.min(body.len());
    let whole = parse(&[body]);
    let parts = parse(&[&body[..split], &body[split..]]);
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    let single = parse(&bytes);
    assert_eq!(whole, parts);
    assert_eq!(whole, single);
});
