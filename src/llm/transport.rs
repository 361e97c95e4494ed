//! HTTP transport with the official SDKs' behaviour (CONTRACT §15.2): one process-wide
//! connection pool, 2 retries with exponential back-off on connection errors, timeouts, 408,
//! 409, 429 and ≥ 500 (honouring `retry-after-ms`, `retry-after`, `x-should-retry`), a 600 s
//! timeout per attempt, immediate abort, and the SDKs' error texts.

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use reqwest::{Client, Response};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ErrorKind, LlmError};

#[derive(Debug, Clone, Copy)]
pub struct TransportConfig {
    /// Per attempt, until the response headers arrive (as the SDKs' fetch timeout).
    pub timeout: Duration,
    pub max_retries: u32,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig { timeout: Duration::from_millis(600_000), max_retries: 2 }
    }
}

/// How a provider's error body becomes the message (the two SDKs differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorStyle {
    /// `<status> <body.error.message>` (OpenAI SDK; also used for Gemini's `{error:{message}}`).
    OpenAi,
    /// `<status> <JSON of the whole body>` (Anthropic SDK).
    Anthropic,
    /// The AWS SDK's: the body's `message`.
    Aws,
    /// GitHub's REST API: `<status> <body.message>`.
    GitHub,
}

#[derive(Debug)]
pub struct HttpRequest {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: std::sync::Arc<Vec<(&'static str, String)>>,
    pub body: Bytes,
}

static CLIENT: OnceLock<Result<Client, String>> = OnceLock::new();

/// Builds a client on rustls with the ring provider.
pub fn build_client() -> Result<Client, String> {
    // Several crates may race to install a provider; any installed one is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder().build().map_err(|e| format!("could not create the HTTP client: {e}"))
}

/// The process-wide client (one connection pool per process).
pub fn client() -> Result<Client, LlmError> {
    CLIENT.get_or_init(build_client).clone().map_err(LlmError::other)
}

/// Why one attempt got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptError {
    InvalidUrl,
    Timeout,
    Connection,
}

/// An HTTP stack `send` runs on: reqwest on a tokio runtime ([`ReqwestHttp`]), or the binding's
/// client on Node's own event loop. It makes single attempts and sleeps; the SDK behaviour
/// (retries, back-off, timeouts, abort, error texts) is `send`'s, the same for both.
pub trait Http {
    type Response: HttpResponse;
    /// One attempt, up to the response head.
    fn attempt(&self, req: &HttpRequest) -> impl Future<Output = Result<Self::Response, AttemptError>>;
    fn sleep(&self, d: Duration) -> impl Future<Output = ()>;
}

/// A response whose head has arrived.
pub trait HttpResponse {
    fn status(&self) -> u16;
    /// The first value of header `name` (case-insensitive), if it is text.
    fn header(&self, name: &str) -> Option<&str>;
    /// The whole body; `Err` when the connection fails while reading it.
    fn bytes(self) -> impl Future<Output = Result<Bytes, ()>>;
}

/// The process-wide reqwest client on the current tokio runtime.
pub struct ReqwestHttp<'a>(pub &'a Client);

impl Http for ReqwestHttp<'_> {
    type Response = Response;

    async fn attempt(&self, req: &HttpRequest) -> Result<Response, AttemptError> {
        let mut rb = self.0.request(req.method.clone(), &req.url);
        for (k, v) in req.headers.iter() {
            rb = rb.header(*k, v);
        }
        rb.body(req.body.clone()).send().await.map_err(|e| {
            if e.is_builder() {
                AttemptError::InvalidUrl
            } else if e.is_timeout() {
                AttemptError::Timeout
            } else {
                AttemptError::Connection
            }
        })
    }

    async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await
    }
}

impl HttpResponse for Response {
    fn status(&self) -> u16 {
        Response::status(self).as_u16()
    }
    fn header(&self, name: &str) -> Option<&str> {
        Response::headers(self).get(name).and_then(|v| v.to_str().ok())
    }
    async fn bytes(self) -> Result<Bytes, ()> {
        Response::bytes(self).await.map_err(|_| ())
    }
}

/// Sends with retries; `Ok` only for a 2xx response (its body not yet read).
pub async fn send<H: Http>(
    http: &H,
    req: &HttpRequest,
    style: ErrorStyle,
    cfg: &TransportConfig,
    cancel: &CancellationToken,
) -> Result<H::Response, LlmError> {
    let mut retries_left = cfg.max_retries;
    loop {
        if super::is_aborted(cancel) {
            return Err(LlmError::aborted());
        }
        let outcome = tokio::select! {
            biased;
            _ = super::cancelled(cancel) => return Err(LlmError::aborted()),
            _ = http.sleep(cfg.timeout) => Err(AttemptError::Timeout),
            r = http.attempt(req) => r,
        };
        let failure = match outcome {
            Err(AttemptError::InvalidUrl) => return Err(LlmError::other(format!("Invalid URL: {}", req.url))),
            Err(AttemptError::Timeout) => LlmError::timeout(),
            Err(AttemptError::Connection) => LlmError::connection(),
            Ok(resp) => {
                let status = resp.status();
                if (200..300).contains(&status) {
                    return Ok(resp);
                }
                if retries_left > 0 && should_retry(status, |k| resp.header(k)) {
                    let delay = retry_delay(|k| resp.header(k), cfg.max_retries - retries_left);
                    drop(resp);
                    retries_left -= 1;
                    sleep_or_abort(http, delay, cancel).await?;
                    continue;
                }
                let bytes = tokio::select! {
                    biased;
                    _ = super::cancelled(cancel) => return Err(LlmError::aborted()),
                    b = resp.bytes() => b.unwrap_or_default(),
                };
                let text = String::from_utf8_lossy(&bytes);
                return Err(LlmError { kind: ErrorKind::Api, message: status_message(status, &text, style), status: Some(status) });
            }
        };
        if retries_left == 0 {
            return Err(failure);
        }
        let delay = default_delay(cfg.max_retries - retries_left);
        retries_left -= 1;
        sleep_or_abort(http, delay, cancel).await?;
    }
}

async fn sleep_or_abort<H: Http>(http: &H, d: Duration, cancel: &CancellationToken) -> Result<(), LlmError> {
    tokio::select! {
        biased;
        _ = super::cancelled(cancel) => Err(LlmError::aborted()),
        _ = http.sleep(d) => Ok(()),
    }
}

fn should_retry<'a>(status: u16, header: impl Fn(&str) -> Option<&'a str>) -> bool {
    match header("x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The SDKs' rule: `retry-after-ms`, else `retry-after` (seconds or an HTTP date); used when
/// it is a truthy value in [0, 60 s), otherwise exponential back-off.
fn retry_delay<'a>(header: impl Fn(&str) -> Option<&'a str>, retries_done: u32) -> Duration {
    let mut ms: Option<f64> = None;
    if let Some(v) = header("retry-after-ms").filter(|v| !v.is_empty()) {
        ms = parse_float(&v);
    }
    if ms.is_none_or(|m| m == 0.0) {
        if let Some(v) = header("retry-after").filter(|v| !v.is_empty()) {
            ms = match parse_float(&v) {
                Some(s) => Some(s * 1000.0),
                None => parse_http_date(&v).map(|t| t - now_ms()),
            };
        }
    }
    match ms {
        Some(m) if m != 0.0 && (0.0..60_000.0).contains(&m) => Duration::from_secs_f64(m / 1000.0),
        _ => default_delay(retries_done),
    }
}

/// 0.5 s × 2^n capped at 8 s, with up to 25 % jitter subtracted.
fn default_delay(retries_done: u32) -> Duration {
    let secs = (0.5 * 2f64.powi(retries_done as i32)).min(8.0);
    let jitter = 1.0 - pseudo_random() * 0.25;
    Duration::from_secs_f64(secs * jitter)
}

fn pseudo_random() -> f64 {
    // Jitter only needs to de-synchronise clients, not to be unpredictable.
    let n = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let x = (n as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((x >> 11) as f64) / ((1u64 << 53) as f64)
}

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

/// JS `parseFloat`: the longest numeric prefix after leading whitespace.
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if t[i..].starts_with("Infinity") {
        return Some(if b.first() == Some(&b'-') { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    let mut digits = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits = true;
        end = i;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits = true;
            end = i;
        }
    }
    if !digits {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let s = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > s {
            end = j;
        }
    }
    t[..end].parse().ok()
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form servers send in `retry-after`.
fn parse_http_date(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() != 6 {
        return None;
    }
    let day: i64 = parts[1].parse().ok()?;
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == parts[2])? as i64 + 1;
    let year: i64 = parts[3].parse().ok()?;
    let hms: Vec<i64> = parts[4].split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    if hms.len() != 3 {
        return None;
    }
    // Days from civil (proleptic Gregorian), epoch 1970-01-01.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]) * 1000) as f64)
}

/// The SDKs' `APIError.makeMessage`: `error` is `body.error` (OpenAI) or the whole body
/// (Anthropic); a non-JSON body is used as text.
pub fn status_message(status: u16, body: &str, style: ErrorStyle) -> String {
    if style == ErrorStyle::Aws {
        return super::bedrock::error_message(status, body);
    }
    if style == ErrorStyle::GitHub {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(body) {
            if let Some(Value::String(msg)) = m.get("message") {
                return format!("{status} {msg}");
            }
        }
    }
    let msg: Option<String> = match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            let err = match style {
                ErrorStyle::OpenAi | ErrorStyle::GitHub => v.get("error").cloned(),
                ErrorStyle::Anthropic | ErrorStyle::Aws => Some(v),
            };
            match err {
                None | Some(Value::Null) => None,
                Some(e) => match e.get("message") {
                    Some(m) if super::jsjson::truthy(m) => {
                        Some(m.as_str().map(str::to_string).unwrap_or_else(|| super::jsjson::to_js_json(m)))
                    }
                    _ if super::jsjson::truthy(&e) => Some(super::jsjson::to_js_json(&e)),
                    _ => None,
                },
            }
        }
        Err(_) if !body.is_empty() => Some(body.to_string()),
        Err(_) => None,
    };
    match msg {
        Some(m) => format!("{status} {m}"),
        None => format!("{status} status code (no body)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn error_messages_follow_each_sdk() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(status_message(529, body, ErrorStyle::Anthropic), format!("529 {body}"));
        assert_eq!(status_message(400, r#"{"error":{"message":"bad","code":1}}"#, ErrorStyle::OpenAi), "400 bad");
        assert_eq!(status_message(400, r#"{"error":{"code":1}}"#, ErrorStyle::OpenAi), r#"400 {"code":1}"#);
        assert_eq!(status_message(400, r#"{"detail":"x"}"#, ErrorStyle::OpenAi), "400 status code (no body)");
        assert_eq!(status_message(502, "", ErrorStyle::OpenAi), "502 status code (no body)");
        assert_eq!(status_message(502, "Bad gateway", ErrorStyle::OpenAi), "502 Bad gateway");
    }

    #[test]
    fn retry_after_headers() {
        // A response's headers, looked up as `HttpResponse::header` does.
        fn h<'a>(fields: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
            move |k| fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| *v)
        }
        assert_eq!(retry_delay(h(&[("retry-after-ms", "250")]), 0), Duration::from_millis(250));
        assert_eq!(retry_delay(h(&[("Retry-After", "1.5")]), 0), Duration::from_millis(1500));
        // out of range → back-off (≤ 0.5 s for the first retry)
        assert!(retry_delay(h(&[("retry-after", "120")]), 0) <= Duration::from_millis(500));
        // retry-after-ms 0 falls through to retry-after
        assert_eq!(retry_delay(h(&[("retry-after-ms", "0"), ("retry-after", "2")]), 0), Duration::from_millis(2000));
        assert!(default_delay(5) <= Duration::from_secs(8) && default_delay(5) >= Duration::from_secs(6));
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784111777000.0));
        assert_eq!(parse_float(" 12abc"), Some(12.0));
        assert_eq!(parse_float("abc"), None);
        assert!(!should_retry(503, h(&[("x-should-retry", "false")])));
        assert!(should_retry(400, h(&[("x-should-retry", "true")])));
        assert!(!should_retry(400, h(&[])) && should_retry(409, h(&[])));
    }

    /// A server that answers each connection with the next canned response.
    async fn serve(responses: Vec<&'static str>) -> (String, tokio::task::JoinHandle<usize>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        let h = tokio::spawn(async move {
            let mut n = 0;
            for r in responses {
                let (mut s, _) = l.accept().await.unwrap();
                let mut buf = vec![0u8; 65536];
                let _ = s.read(&mut buf).await.unwrap();
                n += 1;
                if r.is_empty() {
                    continue; // drop the connection: a connection error
                }
                s.write_all(r.as_bytes()).await.unwrap();
                let _ = s.shutdown().await;
            }
            n
        });
        (url, h)
    }

    fn req(url: &str) -> HttpRequest {
        HttpRequest { method: reqwest::Method::POST, url: url.to_string(), headers: vec![("content-type", "application/json".into())].into(), body: Bytes::from_static(b"{}") }
    }

    const R429: &str = "HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: 5\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
    const R200: &str = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok";
    const R500: &str = "HTTP/1.1 500 Internal Server Error\r\nretry-after-ms: 5\r\nconnection: close\r\ncontent-length: 28\r\n\r\n{\"error\":{\"message\":\"boom\"}}";

    #[tokio::test]
    async fn retries_then_succeeds() {
        let (url, h) = serve(vec![R429, "", R200]).await;
        let c = build_client().unwrap();
        let cfg = TransportConfig::default();
        let resp = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &cfg, &CancellationToken::new()).await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "ok");
        assert_eq!(h.await.unwrap(), 3);
    }

    #[tokio::test]
    async fn gives_up_after_two_retries() {
        let (url, h) = serve(vec![R500, R500, R500]).await;
        let c = build_client().unwrap();
        let err = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &TransportConfig::default(), &CancellationToken::new()).await.unwrap_err();
        assert_eq!(err.message, "500 boom");
        assert_eq!(err.status, Some(500));
        assert_eq!(h.await.unwrap(), 3);
    }

    #[tokio::test]
    async fn times_out_and_aborts() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        // Accept and never answer.
        let _h = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (s, _) = l.accept().await.unwrap();
                held.push(s);
            }
        });
        let c = build_client().unwrap();
        let cfg = TransportConfig { timeout: Duration::from_millis(50), max_retries: 0 };
        let err = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &cfg, &CancellationToken::new()).await.unwrap_err();
        assert_eq!((err.kind, err.message.as_str()), (ErrorKind::Timeout, "Request timed out."));
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            c2.cancel();
        });
        let err = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &TransportConfig::default(), &cancel).await.unwrap_err();
        assert_eq!(err.message, "Request was aborted.");
    }

    #[tokio::test]
    async fn connection_refused_is_a_connection_error() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        drop(l);
        let c = build_client().unwrap();
        let cfg = TransportConfig { timeout: Duration::from_secs(5), max_retries: 0 };
        let err = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &cfg, &CancellationToken::new()).await.unwrap_err();
        assert_eq!(err.message, "Connection error.");
    }
}
