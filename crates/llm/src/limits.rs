//! What a server may send and where a request may go: the size limits every HTTP path of the
//! adapters enforces (reqwest on the I/O thread, `http1` on the JS thread, the SSE parser, the
//! stream loops of every provider) and the redirect rule of `transport::send`, with their
//! error texts. Defined here once; docs/LLM-ADAPTERS.md ("Limits and redirects") lists them.
//!
//! Why these numbers. A completion is bounded by the model's output: 128k output tokens are
//! about 0.5 MB of text, a few MB as JSON with escapes and per-token stream framing. The limits
//! sit two orders of magnitude above anything a provider sends, so no real response meets them,
//! and one order below what would hurt a process that runs many agents at once: without them
//! a server that never ends a body or a line grew memory by a gigabyte within seconds.

use super::{ErrorKind, LlmError};

/// A whole response body (chat, the Copilot token exchange), and all bytes of one stream.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The body of a non-2xx response, read to build the error text. Provider error bodies are a
/// few hundred bytes; the text of a larger one would be noise in an Error message.
pub const MAX_ERROR_BODY_BYTES: usize = 1 << 20;

/// One SSE line, one SSE event's data (its `data:` lines joined) and one Bedrock event-stream
/// frame. Each is one delta of a stream (usually under 1 KB); a whole tool input in one event
/// is the largest a provider sends.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// A response head (status line and header fields, interim 1xx responses included) and a
/// chunked-coding size line or trailer section, on the JS thread's HTTP/1.1 client (reqwest's
/// hyper has its own limit of the same order, about 400 KB).
pub const MAX_HEAD_BYTES: usize = 64 << 10;

/// Same-origin redirects followed per attempt (reqwest's default; fetch allows 20).
pub const MAX_REDIRECTS: usize = 10;

fn mib(n: usize) -> usize {
    n >> 20
}

/// A body over `limit` bytes (`MAX_RESPONSE_BYTES` or, for an error body, its own limit).
pub fn body_too_large(limit: usize) -> LlmError {
    LlmError::other(format!("Response body exceeds the {} MiB limit ({limit} bytes).", mib(limit)))
}

/// A stream that sent more than `MAX_RESPONSE_BYTES` in all.
pub fn stream_too_large() -> LlmError {
    LlmError::other(format!(
        "Response stream exceeds the {} MiB limit ({MAX_RESPONSE_BYTES} bytes).",
        mib(MAX_RESPONSE_BYTES)
    ))
}

/// An SSE line or event, or an event-stream frame, over `MAX_EVENT_BYTES`.
pub fn event_too_large(what: &str) -> LlmError {
    LlmError::other(format!("{what} exceeds the {} MiB limit ({MAX_EVENT_BYTES} bytes).", mib(MAX_EVENT_BYTES)))
}

/// The origin of a URL as `scheme://host[:port]`, for error texts.
fn origin_text(u: &reqwest::Url) -> String {
    u.origin().ascii_serialization()
}

/// A redirect to another origin: never followed, whatever the provider (the request carries
/// the credentials and the conversation).
pub fn cross_origin_redirect(status: u16, from: &reqwest::Url, to: &reqwest::Url) -> LlmError {
    LlmError {
        kind: ErrorKind::Api,
        message: format!(
            "{status} redirect to another origin refused: {} → {} (credentials and messages are only sent to the configured origin; set the base URL to the new location to use it)",
            origin_text(from),
            origin_text(to)
        ),
        status: Some(status),
        egress: None,
    }
}

/// More than `MAX_REDIRECTS` same-origin redirects in one attempt (a loop, most likely).
pub fn too_many_redirects(status: u16) -> LlmError {
    LlmError {
        kind: ErrorKind::Api,
        message: format!("{status} too many redirects (more than {MAX_REDIRECTS})"),
        status: Some(status),
        egress: None,
    }
}
