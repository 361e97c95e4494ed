//! HTTP transport with the official SDKs' behaviour (CONTRACT §15.2): one process-wide
//! connection pool, 2 retries with exponential back-off on connection errors, timeouts, 408,
//! 409, 429 and ≥ 500 (honouring `retry-after-ms`, `retry-after`, `x-should-retry`), a 600 s
//! timeout per attempt, immediate abort, and the SDKs' error texts.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use reqwest::{Client, Response};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::egress::{self, Egress};
use super::limits::{self, MAX_ERROR_BODY_BYTES, MAX_REDIRECTS};
use super::{ErrorKind, LlmError};

#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Per attempt, until the response headers arrive (as the SDKs' fetch timeout).
    pub timeout: Duration,
    pub max_retries: u32,
    /// The adapter's egress policy: every request is checked against it before it is sent, and
    /// no redirect is followed. `None` (no policy): one null test per attempt.
    pub egress: Option<Arc<Egress>>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig { timeout: Duration::from_millis(600_000), max_retries: 2, egress: None }
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
static DIRECT_CLIENT: OnceLock<Result<Client, String>> = OnceLock::new();
static TLS: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
/// The proxy variables as `CLIENT` read them (the same matcher reqwest builds, at the same
/// moment): which HTTPS origins its requests go to through a proxy.
static PROXIES: OnceLock<hyper_util::client::proxy::matcher::Matcher> = OnceLock::new();

/// The TLS client configuration of every HTTPS request, on both HTTP stacks (reqwest's and the
/// JS thread's `oma_uv::LocalHttp`), defined here once: what reqwest 0.13 builds by default
/// with `rustls-no-provider` (the installed provider, ring; TLS 1.2 and 1.3; certificates
/// checked by rustls-platform-verifier, on Linux the system's roots, `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` included; SNI; ALPN `http/1.1` only, as reqwest without its `http2`
/// feature). reqwest is handed this very configuration, so the two cannot drift apart.
pub fn tls_config() -> Result<Arc<rustls::ClientConfig>, LlmError> {
    TLS.get_or_init(|| {
        // Several crates may race to install a provider; any installed one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
            .map_err(|e| format!("could not create the HTTP client: {e}"))?;
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .map_err(|e| format!("could not create the HTTP client: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    })
    .clone()
    .map_err(LlmError::other)
}

/// Builds a client on rustls with the ring provider.
pub fn build_client() -> Result<Client, String> {
    client_builder()?.build().map_err(|e| format!("could not create the HTTP client: {e}"))
}

fn client_builder() -> Result<reqwest::ClientBuilder, String> {
    let tls = tls_config().map_err(|e| e.message)?;
    // Redirects are `send`'s (`redirect`), the same rule on both HTTP stacks: reqwest's own
    // policy would follow them to any origin, keeping headers such as `x-api-key`.
    Ok(Client::builder().redirect(reqwest::redirect::Policy::none()).tls_backend_preconfigured((*tls).clone()))
}

/// The process-wide client (one connection pool per process).
pub fn client() -> Result<Client, LlmError> {
    CLIENT
        .get_or_init(|| {
            PROXIES.get_or_init(hyper_util::client::proxy::matcher::Matcher::from_system);
            build_client()
        })
        .clone()
        .map_err(LlmError::other)
}

/// Whether the process-wide client (`client`) sends requests to `url` through a proxy from the
/// environment (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, … as reqwest reads them when the
/// client is made). Such requests stay on reqwest: the JS thread's HTTP stack speaks to
/// origins directly.
pub fn proxied(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else { return true };
    PROXIES.get_or_init(hyper_util::client::proxy::matcher::Matcher::from_system).intercept(&uri).is_some()
}

/// The process-wide client of adapters under an egress policy: it ignores the proxy variables
/// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`), since a proxy is a host the policy did not allow
/// and the checked origin would not be where the bytes go. Its own pool, made on first use.
pub fn direct_client() -> Result<Client, LlmError> {
    DIRECT_CLIENT
        .get_or_init(|| {
            client_builder()?.no_proxy().build().map_err(|e| format!("could not create the HTTP client: {e}"))
        })
        .clone()
        .map_err(LlmError::other)
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

/// Why a body could not be read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// The connection failed or the body's framing was broken.
    Connection,
    /// More than the limit `bytes` was given (announced or received).
    TooLarge,
}

impl From<std::io::Error> for BodyError {
    fn from(_: std::io::Error) -> Self {
        BodyError::Connection
    }
}

impl BodyError {
    /// The error of a call whose body (read with `limit`) failed.
    pub fn into_error(self, limit: usize) -> LlmError {
        match self {
            BodyError::Connection => LlmError::connection(),
            BodyError::TooLarge => limits::body_too_large(limit),
        }
    }
}

/// A response whose head has arrived.
pub trait HttpResponse {
    fn status(&self) -> u16;
    /// The first value of header `name` (case-insensitive), if it is text.
    fn header(&self, name: &str) -> Option<&str>;
    /// The whole body, at most `limit` bytes: a larger one (announced by its Content-Length or
    /// received) is `TooLarge` without reading or keeping more than `limit` bytes.
    fn bytes(self, limit: usize) -> impl Future<Output = Result<Bytes, BodyError>>;
    /// The body's next piece as it arrives (streams); `None` at its end.
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, BodyError>>;
}

/// `resp`'s body, at most `limit` bytes, unless `cancel` fires first.
pub async fn read_body<R: HttpResponse>(resp: R, limit: usize, cancel: &CancellationToken) -> Result<Bytes, LlmError> {
    super::or_abort(cancel, resp.bytes(limit)).await?.map_err(|e| e.into_error(limit))
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
    async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        Response::chunk(self).await.map_err(|_| BodyError::Connection)
    }
    async fn bytes(mut self, limit: usize) -> Result<Bytes, BodyError> {
        if self.content_length().is_some_and(|n| n > limit as u64) {
            return Err(BodyError::TooLarge);
        }
        async fn next(r: &mut Response) -> Result<Option<Bytes>, BodyError> {
            r.chunk().await.map_err(|_| BodyError::Connection)
        }
        let Some(first) = next(&mut self).await? else { return Ok(Bytes::new()) };
        if first.len() > limit {
            return Err(BodyError::TooLarge);
        }
        // One chunk (the usual small body) is returned as it is, without a copy.
        let Some(second) = next(&mut self).await? else { return Ok(first) };
        let mut buf = Vec::with_capacity(first.len() + second.len());
        buf.extend_from_slice(&first);
        let mut chunk = second;
        loop {
            if buf.len() + chunk.len() > limit {
                return Err(BodyError::TooLarge);
            }
            buf.extend_from_slice(&chunk);
            match next(&mut self).await? {
                Some(c) => chunk = c,
                None => return Ok(Bytes::from(buf)),
            }
        }
    }
}

/// The redirect rule of every provider on both HTTP stacks, defined here once: a 301, 302,
/// 303, 307 or 308 with a `Location` is followed only within the request's own origin (scheme,
/// host and port), at most `MAX_REDIRECTS` times, with the request's headers; 303, and 301 /
/// 302 after a POST, continue as a GET without a body (as fetch does). A redirect to another
/// origin is the call's error (`limits::cross_origin_redirect`): the request carries the
/// credentials (`authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, SigV4 headers) and
/// the conversation, and no header list can tell which of a provider's headers are secret.
/// `None`: not a redirect to follow (the response is answered as any other status).
fn redirect(
    req: &HttpRequest,
    status: u16,
    location: Option<&str>,
    hops: usize,
) -> Option<Result<HttpRequest, LlmError>> {
    let (from, to) = redirect_target(req, status, location)?;
    if to.origin() != from.origin() {
        return Some(Err(limits::cross_origin_redirect(status, &from, &to)));
    }
    if hops >= MAX_REDIRECTS {
        return Some(Err(limits::too_many_redirects(status)));
    }
    let to_get = (status == 303 && req.method != reqwest::Method::HEAD)
        || (matches!(status, 301 | 302) && req.method == reqwest::Method::POST);
    Some(Ok(if to_get {
        let headers =
            req.headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("content-type")).cloned().collect::<Vec<_>>();
        HttpRequest { method: reqwest::Method::GET, url: to.into(), headers: headers.into(), body: Bytes::new() }
    } else {
        HttpRequest { method: req.method.clone(), url: to.into(), headers: req.headers.clone(), body: req.body.clone() }
    }))
}

/// Where a response would redirect `req` to (`from`, `to`): a 301, 302, 303, 307 or 308 with
/// a `Location` that resolves against the request's URL.
fn redirect_target(req: &HttpRequest, status: u16, location: Option<&str>) -> Option<(reqwest::Url, reqwest::Url)> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let from = reqwest::Url::parse(&req.url).ok()?;
    let to = from.join(location?).ok()?;
    Some((from, to))
}

/// Sends with retries; `Ok` only for a 2xx response (its body not yet read). Under an egress
/// policy (`cfg.egress`) each request is checked before it is sent (every attempt and redirect
/// hop) and every redirect is the call's error (`egress::redirect_refused`).
pub async fn send<H: Http>(
    http: &H,
    req: &HttpRequest,
    style: ErrorStyle,
    cfg: &TransportConfig,
    cancel: &CancellationToken,
) -> Result<H::Response, LlmError> {
    let mut retries_left = cfg.max_retries;
    // The request of the redirect being followed (`None`: `req` itself) and the redirects
    // followed in this attempt. Each request of a redirect chain has the attempt's timeout.
    let mut hop: Option<HttpRequest> = None;
    let mut hops = 0;
    loop {
        if super::is_aborted(cancel) {
            return Err(LlmError::aborted());
        }
        let cur = hop.as_ref().unwrap_or(req);
        if let Some(policy) = &cfg.egress {
            policy.check(&cur.url)?;
        }
        let outcome = tokio::select! {
            biased;
            _ = super::cancelled(cancel) => return Err(LlmError::aborted()),
            _ = http.sleep(cfg.timeout) => Err(AttemptError::Timeout),
            r = http.attempt(cur) => r,
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
                if (300..400).contains(&status) {
                    if cfg.egress.is_some() {
                        if let Some((from, to)) = redirect_target(cur, status, resp.header("location")) {
                            return Err(egress::redirect_refused(status, &from, &to));
                        }
                    }
                    match redirect(cur, status, resp.header("location"), hops) {
                        Some(Ok(next)) => {
                            drop(resp);
                            hops += 1;
                            hop = Some(next);
                            continue;
                        }
                        Some(Err(e)) => return Err(e),
                        None => {}
                    }
                }
                if retries_left > 0 && should_retry(status, |k| resp.header(k)) {
                    let delay = retry_delay(|k| resp.header(k), cfg.max_retries - retries_left);
                    drop(resp);
                    retries_left -= 1;
                    // A retry starts again from the request itself.
                    hop = None;
                    hops = 0;
                    sleep_or_abort(http, delay, cancel).await?;
                    continue;
                }
                let body = tokio::select! {
                    biased;
                    _ = super::cancelled(cancel) => return Err(LlmError::aborted()),
                    b = resp.bytes(MAX_ERROR_BODY_BYTES) => b,
                };
                let message = match body {
                    Ok(bytes) => status_message(status, &String::from_utf8_lossy(&bytes), style),
                    // A body cut off is answered as none, as before.
                    Err(BodyError::Connection) => status_message(status, "", style),
                    Err(BodyError::TooLarge) => {
                        format!("{status} status code (error body larger than {MAX_ERROR_BODY_BYTES} bytes, not read)")
                    }
                };
                return Err(LlmError { kind: ErrorKind::Api, message, status: Some(status), egress: None });
            }
        };
        if retries_left == 0 {
            return Err(failure);
        }
        hop = None;
        hops = 0;
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

/// The 4xx statuses a request is retried on (the SDKs' rule; lib/errors.js's too).
pub const RETRYABLE_4XX: [u16; 3] = [408, 409, 429];

fn should_retry<'a>(status: u16, header: impl Fn(&str) -> Option<&'a str>) -> bool {
    match header("x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => RETRYABLE_4XX.contains(&status) || status >= 500,
    }
}

/// The SDKs' rule: `retry-after-ms`, else `retry-after` (seconds or an HTTP date); used when
/// it is a truthy value in [0, 60 s), otherwise exponential back-off.
fn retry_delay<'a>(header: impl Fn(&str) -> Option<&'a str>, retries_done: u32) -> Duration {
    let mut ms: Option<f64> = None;
    if let Some(v) = header("retry-after-ms").filter(|v| !v.is_empty()) {
        ms = parse_float(v);
    }
    if ms.is_none_or(|m| m == 0.0) {
        if let Some(v) = header("retry-after").filter(|v| !v.is_empty()) {
            ms = match parse_float(v) {
                Some(s) => Some(s * 1000.0),
                None => parse_http_date(v).map(|t| t - now_ms()),
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
                    Some(m) if oma_core::json::truthy(m) => {
                        Some(m.as_str().map(str::to_string).unwrap_or_else(|| oma_core::json::to_js_json(m)))
                    }
                    _ if oma_core::json::truthy(&e) => Some(oma_core::json::to_js_json(&e)),
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

    /// One `send` through reqwest, with a token no one cancels.
    async fn send_once(
        c: &Client,
        req: &HttpRequest,
        style: ErrorStyle,
        cfg: &TransportConfig,
    ) -> Result<Response, LlmError> {
        send(&ReqwestHttp(c), req, style, cfg, &CancellationToken::new()).await
    }

    fn req(url: &str) -> HttpRequest {
        HttpRequest {
            method: reqwest::Method::POST,
            url: url.to_string(),
            headers: vec![("content-type", "application/json".into())].into(),
            body: Bytes::from_static(b"{}"),
        }
    }

    const R429: &str =
        "HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: 5\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
    const R200: &str = "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok";
    const R500: &str = "HTTP/1.1 500 Internal Server Error\r\nretry-after-ms: 5\r\nconnection: close\r\ncontent-length: 28\r\n\r\n{\"error\":{\"message\":\"boom\"}}";

    #[tokio::test]
    async fn retries_then_succeeds() {
        let (url, h) = serve(vec![R429, "", R200]).await;
        let c = build_client().unwrap();
        let cfg = TransportConfig::default();
        let resp = send_once(&c, &req(&url), ErrorStyle::OpenAi, &cfg).await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "ok");
        assert_eq!(h.await.unwrap(), 3);
    }

    #[tokio::test]
    async fn gives_up_after_two_retries() {
        let (url, h) = serve(vec![R500, R500, R500]).await;
        let c = build_client().unwrap();
        let err = send_once(&c, &req(&url), ErrorStyle::OpenAi, &TransportConfig::default()).await.unwrap_err();
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
        let cfg = TransportConfig { timeout: Duration::from_millis(50), max_retries: 0, egress: None };
        let err = send_once(&c, &req(&url), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!((err.kind, err.message.as_str()), (ErrorKind::Timeout, "Request timed out."));
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            c2.cancel();
        });
        let err = send(&ReqwestHttp(&c), &req(&url), ErrorStyle::OpenAi, &TransportConfig::default(), &cancel)
            .await
            .unwrap_err();
        assert_eq!(err.message, "Request was aborted.");
    }

    #[tokio::test]
    async fn connection_refused_is_a_connection_error() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        drop(l);
        let c = build_client().unwrap();
        let cfg = TransportConfig { timeout: Duration::from_secs(5), max_retries: 0, egress: None };
        let err = send_once(&c, &req(&url), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!(err.message, "Connection error.");
    }

    /// A server on 127.0.0.1 that records each request's head and body and answers with
    /// `reply(request line)`; every connection is closed after one exchange.
    async fn recording(
        reply: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                // Head, then the body its content-length announces.
                let text = loop {
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break String::from_utf8_lossy(&req).into_owned();
                    }
                    req.extend_from_slice(&buf[..n]);
                    let t = String::from_utf8_lossy(&req).into_owned();
                    if let Some(i) = t.find("\r\n\r\n") {
                        let len: usize = t[..i]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length: ")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if req.len() >= i + 4 + len {
                            break t;
                        }
                    }
                };
                log.lock().unwrap().push(text.clone());
                let r = reply(text.lines().next().unwrap_or(""));
                let _ = s.write_all(r.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        (base, seen)
    }

    fn redirect_to(status: u16, location: &str) -> String {
        format!("HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
    }

    fn secret_req(url: &str) -> HttpRequest {
        HttpRequest {
            method: reqwest::Method::POST,
            url: url.to_string(),
            headers: vec![
                ("x-api-key", "SECRET".into()),
                ("authorization", "Bearer SECRET".into()),
                ("content-type", "application/json".into()),
            ]
            .into(),
            body: Bytes::from_static(b"{\"messages\":\"private\"}"),
        }
    }

    #[tokio::test]
    async fn redirects_stay_within_the_origin() {
        let c = build_client().unwrap();
        let cfg = TransportConfig { timeout: Duration::from_secs(10), max_retries: 2, egress: None };
        // Another origin (same host, another port) records whatever reaches it.
        let (other, other_seen) = recording(|_| R200.to_string()).await;
        for status in [301, 302, 303, 307, 308] {
            let target = format!("{other}/v1/messages");
            let (base, seen) = recording(move |_| redirect_to(status, &target)).await;
            let err = send_once(&c, &secret_req(&format!("{base}/v1/messages")), ErrorStyle::Anthropic, &cfg)
                .await
                .unwrap_err();
            assert_eq!(err.status, Some(status));
            assert_eq!(err.message, format!("{status} redirect to another origin refused: {base} → {other} (credentials and messages are only sent to the configured origin; set the base URL to the new location to use it)"));
            // Not retried, and nothing sent to the other origin.
            assert_eq!(seen.lock().unwrap().len(), 1);
        }
        // An https downgrade or upgrade is another origin too; so is a scheme-relative URL elsewhere.
        let (base, _) = recording(|_| redirect_to(307, "https://127.0.0.1/x")).await;
        let err = send_once(&c, &secret_req(&format!("{base}/x")), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert!(err.message.starts_with("307 redirect to another origin refused"), "{}", err.message);
        assert!(other_seen.lock().unwrap().is_empty());

        // Within the origin: followed with every header; 307 keeps the method and body, 303
        // continues as a GET without a body.
        let (base, seen) = recording(|line| {
            if line.starts_with("POST /a ") {
                redirect_to(307, "/b")
            } else if line.starts_with("POST /b ") {
                redirect_to(303, "c?x=1")
            } else {
                R200.to_string()
            }
        })
        .await;
        let resp = send_once(&c, &secret_req(&format!("{base}/a")), ErrorStyle::OpenAi, &cfg).await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "ok");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        assert!(
            seen[1].starts_with("POST /b ")
                && seen[1].contains("x-api-key: SECRET")
                && seen[1].ends_with("{\"messages\":\"private\"}"),
            "{}",
            seen[1]
        );
        assert!(
            seen[2].starts_with("GET /c?x=1 ")
                && seen[2].contains("x-api-key: SECRET")
                && !seen[2].contains("private")
                && !seen[2].contains("content-type"),
            "{}",
            seen[2]
        );

        // A loop ends after MAX_REDIRECTS hops, with a clear error and no retry.
        let (base, seen) = recording(|_| redirect_to(302, "/again")).await;
        let err = send_once(&c, &secret_req(&format!("{base}/again")), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!((err.message.as_str(), err.status), ("302 too many redirects (more than 10)", Some(302)));
        assert_eq!(seen.lock().unwrap().len(), MAX_REDIRECTS + 1);

        // A 3xx without a Location is answered as any other status.
        let (base, _) = recording(|_| "HTTP/1.1 304 Not Modified\r\nconnection: close\r\n\r\n".to_string()).await;
        let err = send_once(&c, &secret_req(&base), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!(err.message, "304 status code (no body)");
    }

    #[test]
    fn the_redirect_rule() {
        let r = |method: reqwest::Method, status: u16, loc: &str| {
            let req = HttpRequest {
                method,
                url: "http://h:1/v1/x?k=1".into(),
                headers: vec![("content-type", "application/json".into()), ("api-key", "s".into())].into(),
                body: Bytes::from_static(b"{}"),
            };
            redirect(&req, status, Some(loc), 0)
                .map(|r| r.map(|n| (n.method.to_string(), n.url, n.headers.len(), n.body.len())).map_err(|e| e.message))
        };
        use reqwest::Method as M;
        assert_eq!(r(M::POST, 307, "y"), Some(Ok(("POST".into(), "http://h:1/v1/y".into(), 2, 2))));
        assert_eq!(r(M::POST, 308, "//h:1/z"), Some(Ok(("POST".into(), "http://h:1/z".into(), 2, 2))));
        assert_eq!(r(M::POST, 301, "/z"), Some(Ok(("GET".into(), "http://h:1/z".into(), 1, 0))));
        assert_eq!(r(M::GET, 302, "/z"), Some(Ok(("GET".into(), "http://h:1/z".into(), 2, 2))));
        assert_eq!(r(M::PUT, 303, "/z"), Some(Ok(("GET".into(), "http://h:1/z".into(), 1, 0))));
        // Default ports are the same origin; another port, host or scheme is not.
        assert!(matches!(r(M::POST, 307, "http://h:1/"), Some(Ok(_))));
        for other in ["http://h:2/", "http://g:1/", "https://h:1/", "//g:1/x", "http://user@g:1/"] {
            assert!(matches!(r(M::POST, 307, other), Some(Err(_))), "{other}");
        }
        assert!(r(M::POST, 300, "/z").is_none() && r(M::POST, 304, "/z").is_none() && r(M::POST, 200, "/z").is_none());
        assert!(r(M::POST, 307, "http://[bad").is_none());
    }

    fn under_policy(policy: egress::EgressPolicy) -> TransportConfig {
        TransportConfig {
            timeout: Duration::from_secs(10),
            max_retries: 2,
            egress: Some(Arc::new(Egress { policy, provider: "openai".into() })),
        }
    }

    /// A listener on 127.0.0.1 that records the peer address of every connection it accepts.
    async fn accepting() -> (String, tokio::sync::mpsc::UnboundedReceiver<std::net::SocketAddr>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, peer)) = l.accept().await {
                let _ = tx.send(peer);
                held.push(s);
            }
        });
        (base, rx)
    }

    #[tokio::test]
    async fn under_an_egress_policy_a_denied_request_never_connects() {
        let c = build_client().unwrap();
        let (allowed, seen) = recording(|_| R200.to_string()).await;
        let (denied, mut accepted) = accepting().await;
        let cfg = under_policy(egress::EgressPolicy::Allowlist(vec![allowed.clone()]));
        let err = send_once(&c, &secret_req(&format!("{denied}/v1/x")), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!(
            err.message,
            format!("Egress policy denied framework-owned provider \"openai\" request to {denied}.")
        );
        assert_eq!((err.kind, err.status), (ErrorKind::Egress, None));
        assert_eq!(
            err.egress.as_deref(),
            Some(&egress::Refusal {
                reason: egress::Reason::Denied,
                provider: Some("openai".into()),
                origin: Some(denied.clone())
            })
        );
        // A probe connects after the call returned: had the call connected, the listener would
        // have accepted that connection first.
        let probe = tokio::net::TcpStream::connect(denied.trim_start_matches("http://")).await.unwrap();
        assert_eq!(accepted.recv().await, Some(probe.local_addr().unwrap()));
        // The allowed origin is reached as usual, with any path.
        let resp = send_once(&c, &secret_req(&format!("{allowed}/v1/x?y=1")), ErrorStyle::OpenAi, &cfg).await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "ok");
        assert_eq!(seen.lock().unwrap().len(), 1);
        // Offline: loopback only; the allowed server is on 127.0.0.1, so it is reached.
        let offline = under_policy(egress::EgressPolicy::Offline);
        assert!(send_once(&c, &secret_req(&allowed), ErrorStyle::OpenAi, &offline).await.is_ok());
        // A URL the policy cannot read is refused with upstream's text, before any attempt.
        let err =
            send_once(&c, &secret_req("http://u:p@127.0.0.1:1/"), ErrorStyle::OpenAi, &offline).await.unwrap_err();
        assert_eq!(err.message, "Invalid egress policy: request URL must not contain credentials.");
    }

    #[tokio::test]
    async fn under_an_egress_policy_no_redirect_is_followed() {
        let c = build_client().unwrap();
        let (other, other_seen) = recording(|_| R200.to_string()).await;
        let target = format!("{other}/stolen");
        let (base, seen) = recording(move |line| {
            if line.starts_with("POST /same ") {
                redirect_to(307, "/moved")
            } else {
                redirect_to(302, &target)
            }
        })
        .await;
        // Both origins allowed: the redirect is still refused, within the origin or not.
        let cfg = under_policy(egress::EgressPolicy::Allowlist(vec![base.clone(), other.clone()]));
        let err = send_once(&c, &secret_req(&format!("{base}/same")), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!((err.kind, err.status), (ErrorKind::Api, Some(307)));
        assert_eq!(err.message, format!("307 redirect refused under the egress policy: {base} → {base} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)"));
        let err = send_once(&c, &secret_req(&format!("{base}/away")), ErrorStyle::OpenAi, &cfg).await.unwrap_err();
        assert_eq!(err.message, format!("302 redirect refused under the egress policy: {base} → {other} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)"));
        // One request each (not retried), nothing at the other origin.
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert!(other_seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn bodies_are_read_up_to_their_limit() {
        let c = build_client().unwrap();
        let cfg = TransportConfig { timeout: Duration::from_secs(10), max_retries: 0, egress: None };
        let call = |url: String| {
            let (c, cfg) = (c.clone(), cfg.clone());
            async move { send_once(&c, &req(&url), ErrorStyle::OpenAi, &cfg).await.unwrap() }
        };
        // Announced larger than the limit: refused before reading.
        let (base, _) = recording(|_| "HTTP/1.1 200 OK\r\ncontent-length: 999999\r\n\r\nabc".to_string()).await;
        assert_eq!(HttpResponse::bytes(call(base).await, 1000).await.unwrap_err(), BodyError::TooLarge);
        // Chunked or close-delimited: refused once more than the limit arrived.
        let big = "x".repeat(3000);
        let chunked = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{}0\r\n\r\n",
            format!("3e8\r\n{}\r\n", &big[..1000]).repeat(3)
        );
        let (base, _) = recording(move |_| chunked.clone()).await;
        assert_eq!(HttpResponse::bytes(call(base).await, 2500).await.unwrap_err(), BodyError::TooLarge);
        let close = format!("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{big}");
        let (base, _) = recording(move |_| close.clone()).await;
        assert_eq!(HttpResponse::bytes(call(base.clone()).await, 2999).await.unwrap_err(), BodyError::TooLarge);
        assert_eq!(HttpResponse::bytes(call(base).await, 3000).await.unwrap().len(), 3000);
        assert_eq!(
            BodyError::TooLarge.into_error(limits::MAX_RESPONSE_BYTES).message,
            "Response body exceeds the 64 MiB limit (67108864 bytes)."
        );
    }

    #[tokio::test]
    async fn a_huge_error_body_is_not_read() {
        let body = "e".repeat(MAX_ERROR_BODY_BYTES + 1);
        let reply = format!("HTTP/1.1 400 Bad\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        let (base, _) = recording(move |_| reply.clone()).await;
        let c = build_client().unwrap();
        let err = send_once(&c, &req(&base), ErrorStyle::OpenAi, &TransportConfig::default()).await.unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.status),
            ("400 status code (error body larger than 1048576 bytes, not read)", Some(400))
        );
    }
}
