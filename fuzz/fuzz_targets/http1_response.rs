//! The main-thread HTTP/1.1 client's response reader on a server's bytes: head, then the body
//! (content-length, chunked or close-delimited) under a size limit. No panics, nothing read
//! past the limit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_llm::http1::Conn;
use std::future::Future;
use std::io::Cursor;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// The in-memory stream never returns Pending, so polling once to completion is enough.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

const LIMIT: usize = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let mut conn = Conn::new(Cursor::new(data.to_vec()));
    block_on(async {
        if let Ok(head) = conn.read_head().await {
            if let Ok((body, _)) = conn.read_body(&head, LIMIT).await {
                assert!(body.len() <= LIMIT);
            }
        }
    });
});
