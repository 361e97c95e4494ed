//! Egress policy (open-multi-agent 1.16's `EgressPolicy`): the origins a native adapter may send
//! requests to. The one definition of the rule and its texts: normalising the user's policy,
//! matching a request URL, the errors (upstream's `EgressPolicyError` reasons and messages, byte
//! for byte) and the refusal of redirects. `transport::send` checks every request against it
//! before the request is sent (each attempt, each redirect hop, both HTTP stacks), and
//! `providers::create_adapter_with` checks the provider's targets before the adapter exists, so
//! a denied configuration makes no I/O at all.
//!
//! Matching uses the literal URL only (no DNS), as upstream: `offline` allows the loopback
//! names and addresses (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`), `allowlist` the
//! exact origins listed (scheme, host and port; a default port is elided, as in `URL.origin`).

use reqwest::Url;
use serde::Serialize;

use super::{ErrorKind, LlmError};

/// A normalised policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressPolicy {
    Offline,
    /// Exact origins in `URL.origin` form, de-duplicated and sorted (by UTF-16 code unit, as
    /// JS's default sort: the serialisation is ASCII, so byte order is the same).
    Allowlist(Vec<String>),
}

/// What upstream's `normalizeEgressPolicy` reads from the policy value: whether it is a
/// non-array object, its `mode` when that is a string, its own enumerable keys, and its
/// `allowedOrigins` when that is an array (an entry that is not a string is `None`). The JS
/// shim reads these and nothing else, so the checks and their order are all here.
#[derive(Debug, Clone, Copy)]
pub struct PolicyObject<'a> {
    pub mode: Option<&'a str>,
    pub keys: &'a [String],
    pub allowed_origins: Option<&'a [Option<String>]>,
}

/// `EgressPolicyError.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    InvalidPolicy,
    Denied,
    Unsupported,
    UnresolvedTarget,
}

impl Reason {
    pub const ALL: [Reason; 4] = [Reason::InvalidPolicy, Reason::Denied, Reason::Unsupported, Reason::UnresolvedTarget];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidPolicy => "invalid-policy",
            Reason::Denied => "denied",
            Reason::Unsupported => "unsupported",
            Reason::UnresolvedTarget => "unresolved-target",
        }
    }

    /// `EgressPolicyError.code` (upstream's constructor maps any other reason to the
    /// `unsupported` code; the JS class does the same with this table).
    pub fn code(self) -> &'static str {
        match self {
            Reason::InvalidPolicy => "INVALID_EGRESS_POLICY",
            Reason::Denied => "EGRESS_POLICY_DENIED",
            Reason::Unsupported => "EGRESS_POLICY_UNSUPPORTED",
            Reason::UnresolvedTarget => "EGRESS_POLICY_TARGET_UNRESOLVED",
        }
    }
}

/// [`Reason`]'s names as a TypeScript type (`EgressPolicyErrorReason`), for the generated
/// declarations (which stand alone).
pub const REASON_TYPE: &str = "\"invalid-policy\" | \"denied\" | \"unsupported\" | \"unresolved-target\"";

/// The fields of an `EgressPolicyError` besides its message (`LlmError::egress`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub reason: Reason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// `unsupported`'s detail for an `AgentConfig.adapter` under a policy (upstream's text).
pub const CUSTOM_ADAPTER_DETAIL: &str =
    "custom and AI SDK adapters do not expose an enforceable request transport or target contract to OMA.";

/// `unresolved-target`'s detail (upstream's text), e.g. azure-openai without an endpoint.
pub const UNRESOLVED_DETAIL: &str = "set AgentConfig.baseURL or the provider-specific endpoint environment variable.";

fn refusal(reason: Reason, message: String, provider: Option<&str>, origin: Option<String>) -> LlmError {
    LlmError {
        kind: ErrorKind::Egress,
        message,
        status: None,
        egress: Some(Box::new(Refusal { reason, provider: provider.map(str::to_string), origin })),
    }
}

fn invalid(detail: String) -> LlmError {
    refusal(Reason::InvalidPolicy, format!("Invalid egress policy: {detail}"), None, None)
}

/// `denied`: `provider`'s request to `origin` is outside the policy.
pub fn denied(provider: &str, origin: String) -> LlmError {
    let message = format!("Egress policy denied framework-owned provider \"{provider}\" request to {origin}.");
    refusal(Reason::Denied, message, Some(provider), Some(origin))
}

/// `unsupported`: the policy cannot be enforced for `provider` (here: a user's own adapter).
pub fn unsupported(provider: &str, detail: &str) -> LlmError {
    let message = format!("Egress policy cannot enforce provider \"{provider}\": {detail}");
    refusal(Reason::Unsupported, message, Some(provider), None)
}

/// `unresolved-target`: `provider` has no endpoint to check.
pub fn unresolved(provider: &str) -> LlmError {
    let message = format!("Egress policy cannot resolve provider \"{provider}\" target: {UNRESOLVED_DETAIL}");
    refusal(Reason::UnresolvedTarget, message, Some(provider), None)
}

/// A redirect answered while a policy is set: never followed, to the same origin or another
/// (upstream's fetch runs with `redirect: 'error'`, so an allowed origin cannot forward a
/// request elsewhere). An `Error` with the status, like the other redirect errors.
pub fn redirect_refused(status: u16, from: &Url, to: &Url) -> LlmError {
    LlmError {
        kind: ErrorKind::Api,
        message: format!(
            "{status} redirect refused under the egress policy: {} → {} (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)",
            from.origin().ascii_serialization(),
            to.origin().ascii_serialization()
        ),
        status: Some(status),
        egress: None,
    }
}

/// `new URL(value)` with upstream's checks (an absolute URL, http or https, no credentials).
fn parse_http_url(value: &str, label: &str) -> Result<Url, LlmError> {
    let u = Url::parse(value).map_err(|_| invalid(format!("{label} must be an absolute HTTP(S) URL.")))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(invalid(format!("{label} must use http: or https:.")));
    }
    // `URL.username` / `URL.password` are empty strings when absent.
    if !u.username().is_empty() || u.password().is_some_and(|p| !p.is_empty()) {
        return Err(invalid(format!("{label} must not contain credentials.")));
    }
    Ok(u)
}

/// An allowlist entry as its `URL.origin`; a path (other than `/`), a query or a fragment is
/// refused rather than dropped (`URL.search` and `URL.hash` are empty for a bare `?` / `#`).
fn normalized_origin(value: &str, label: &str) -> Result<String, LlmError> {
    let u = parse_http_url(value, label)?;
    if u.path() != "/" || u.query().is_some_and(|q| !q.is_empty()) || u.fragment().is_some_and(|f| !f.is_empty()) {
        return Err(invalid(format!("{label} must be an origin without a path, query string, or fragment.")));
    }
    Ok(u.origin().ascii_serialization())
}

fn only_keys(keys: &[String], allowed: &[&str], label: &str) -> Result<(), LlmError> {
    let unexpected: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !allowed.contains(k)).collect();
    if unexpected.is_empty() {
        return Ok(());
    }
    let s = if unexpected.len() == 1 { "" } else { "s" };
    Err(invalid(format!("{label} contains unsupported field{s}: {}.", unexpected.join(", "))))
}

/// A loopback host by its literal text (lower-cased, one trailing dot ignored): `localhost`,
/// `*.localhost`, `[::1]`, or a dotted IPv4 address with every octet at most 255 and the first
/// 127. Private networks and names that merely resolve to loopback are not loopback here.
pub fn is_loopback_host(host: &str) -> bool {
    let lower = host.to_ascii_lowercase();
    let h = lower.strip_suffix('.').unwrap_or(&lower);
    if h == "localhost" || h.ends_with(".localhost") || h == "[::1]" || h == "::1" {
        return true;
    }
    let octets: Vec<&str> = h.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| (1..=3).contains(&o.len()) && o.bytes().all(|b| b.is_ascii_digit()))
        && octets.iter().all(|o| o.parse::<u16>().is_ok_and(|n| n <= 255))
        && octets[0].parse::<u16>() == Ok(127)
}

impl EgressPolicy {
    /// Upstream's `normalizeEgressPolicy` for a defined value (`None`: not a non-array object),
    /// with its checks in its order and its texts. Invalid entries are never skipped.
    pub fn normalize(value: Option<PolicyObject<'_>>) -> Result<EgressPolicy, LlmError> {
        let Some(p) = value else { return Err(invalid("expected an object.".into())) };
        if p.mode == Some("offline") {
            only_keys(p.keys, &["mode"], "offline policy")?;
            return Ok(EgressPolicy::Offline);
        }
        if p.mode != Some("allowlist") {
            return Err(invalid("mode must be \"offline\" or \"allowlist\".".into()));
        }
        let Some(entries) = p.allowed_origins else {
            return Err(invalid("allowedOrigins must be an array of exact origins.".into()));
        };
        only_keys(p.keys, &["mode", "allowedOrigins"], "allowlist policy")?;
        let mut origins = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let label = format!("allowedOrigins[{i}]");
            match entry.as_deref() {
                Some(s) if !oma_core::json::js_trim(s).is_empty() => origins.push(normalized_origin(s, &label)?),
                _ => return Err(invalid(format!("{label} must be a non-empty string."))),
            }
        }
        origins.sort_unstable();
        origins.dedup();
        Ok(EgressPolicy::Allowlist(origins))
    }

    /// `"offline"` or `"allowlist"`.
    pub fn mode(&self) -> &'static str {
        match self {
            EgressPolicy::Offline => "offline",
            EgressPolicy::Allowlist(_) => "allowlist",
        }
    }

    /// The allowlist's origins (none for `offline`).
    pub fn allowed_origins(&self) -> &[String] {
        match self {
            EgressPolicy::Offline => &[],
            EgressPolicy::Allowlist(o) => o,
        }
    }

    /// Whether `provider` may send a request to `url` (upstream's `assertEgressAllowed`): a URL
    /// that is not absolute http(s) without credentials is `invalid-policy` (label `request
    /// URL`), one outside the policy `denied`.
    pub fn check(&self, url: &str, provider: &str) -> Result<(), LlmError> {
        let u = parse_http_url(url, "request URL")?;
        let origin = u.origin().ascii_serialization();
        let allowed = match self {
            EgressPolicy::Offline => is_loopback_host(u.host_str().unwrap_or("")),
            // A scan: lists are short, and a policy built without `normalize` need not be sorted.
            EgressPolicy::Allowlist(origins) => origins.contains(&origin),
        };
        if allowed {
            Ok(())
        } else {
            Err(denied(provider, origin))
        }
    }
}

/// A policy bound to the adapter it governs: what `transport::send` checks each request with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Egress {
    pub policy: EgressPolicy,
    /// The adapter's name, in `denied` texts.
    pub provider: String,
}

impl Egress {
    pub fn check(&self, url: &str) -> Result<(), LlmError> {
        self.policy.check(url, &self.provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    fn allowlist(entries: &[Option<&str>]) -> Result<EgressPolicy, String> {
        let origins: Vec<Option<String>> = entries.iter().map(|e| e.map(str::to_string)).collect();
        let k = keys(&["mode", "allowedOrigins"]);
        EgressPolicy::normalize(Some(PolicyObject {
            mode: Some("allowlist"),
            keys: &k,
            allowed_origins: Some(&origins),
        }))
        .map_err(|e| {
            assert_eq!(e.kind, ErrorKind::Egress);
            assert_eq!(e.egress.as_deref().map(|r| r.reason), Some(Reason::InvalidPolicy));
            e.message
        })
    }

    fn origins(entries: &[&str]) -> Vec<String> {
        let e: Vec<Option<&str>> = entries.iter().map(|s| Some(*s)).collect();
        allowlist(&e).unwrap().allowed_origins().to_vec()
    }

    #[test]
    fn allowlist_entries_normalise_to_sorted_unique_origins() {
        assert_eq!(
            origins(&[
                "https://b.example",
                "HTTPS://API.Example.test:443",
                "http://127.0.0.1:8080/",
                "https://api.example.test",
                "http://[0:0:0:0:0:0:0:1]:80",
                "  http://x.test?#  ",
            ]),
            ["http://127.0.0.1:8080", "http://[::1]", "http://x.test", "https://api.example.test", "https://b.example"]
        );
        // A non-default port is part of the origin; the default one is elided.
        assert_eq!(
            origins(&["http://h:80", "https://h:443", "http://h:443"]),
            ["http://h", "http://h:443", "https://h"]
        );
        // IDN hosts in their ASCII form, as URL.origin gives them.
        assert_eq!(origins(&["https://münchen.example"]), ["https://xn--mnchen-3ya.example"]);
        assert_eq!(origins(&[]), Vec::<String>::new());
    }

    #[test]
    fn every_invalid_policy_text() {
        let inv = |p: Option<PolicyObject>| EgressPolicy::normalize(p).unwrap_err().message;
        assert_eq!(inv(None), "Invalid egress policy: expected an object.");
        let k = keys(&["mode", "allowedOrigins"]);
        let some: Vec<Option<String>> = vec![Some("https://a.test".into())];
        assert_eq!(
            inv(Some(PolicyObject { mode: Some("offline"), keys: &k, allowed_origins: Some(&some) })),
            "Invalid egress policy: offline policy contains unsupported field: allowedOrigins."
        );
        let k2 = keys(&["mode", "a", "b"]);
        assert_eq!(
            inv(Some(PolicyObject { mode: Some("offline"), keys: &k2, allowed_origins: None })),
            "Invalid egress policy: offline policy contains unsupported fields: a, b."
        );
        for mode in [None, Some("Offline"), Some(""), Some("deny")] {
            assert_eq!(
                inv(Some(PolicyObject { mode, keys: &k, allowed_origins: Some(&some) })),
                "Invalid egress policy: mode must be \"offline\" or \"allowlist\"."
            );
        }
        // The array check comes before the extra-key check.
        assert_eq!(
            inv(Some(PolicyObject { mode: Some("allowlist"), keys: &k2, allowed_origins: None })),
            "Invalid egress policy: allowedOrigins must be an array of exact origins."
        );
        let k3 = keys(&["mode", "allowedOrigins", "extra"]);
        assert_eq!(
            inv(Some(PolicyObject { mode: Some("allowlist"), keys: &k3, allowed_origins: Some(&some) })),
            "Invalid egress policy: allowlist policy contains unsupported field: extra."
        );
        let cases: &[(Option<&str>, &str)] = &[
            (None, "allowedOrigins[1] must be a non-empty string."),
            (Some(""), "allowedOrigins[1] must be a non-empty string."),
            (Some(" \u{FEFF}\u{A0}\n"), "allowedOrigins[1] must be a non-empty string."),
            (Some("api.example.test"), "allowedOrigins[1] must be an absolute HTTP(S) URL."),
            (Some("/v1"), "allowedOrigins[1] must be an absolute HTTP(S) URL."),
            (Some("http://[bad"), "allowedOrigins[1] must be an absolute HTTP(S) URL."),
            (Some("ftp://files.test"), "allowedOrigins[1] must use http: or https:."),
            (Some("localhost:8080"), "allowedOrigins[1] must use http: or https:."),
            (Some("https://user:secret@api.test"), "allowedOrigins[1] must not contain credentials."),
            (Some("https://user@api.test"), "allowedOrigins[1] must not contain credentials."),
            (Some("https://:pw@api.test"), "allowedOrigins[1] must not contain credentials."),
            (
                Some("https://api.test/v1"),
                "allowedOrigins[1] must be an origin without a path, query string, or fragment.",
            ),
            (
                Some("https://api.test/?x=1"),
                "allowedOrigins[1] must be an origin without a path, query string, or fragment.",
            ),
            (
                Some("https://api.test#top"),
                "allowedOrigins[1] must be an origin without a path, query string, or fragment.",
            ),
        ];
        for (entry, detail) in cases {
            assert_eq!(
                allowlist(&[Some("https://ok.test"), *entry, Some("")]),
                Err(format!("Invalid egress policy: {detail}")),
                "{entry:?}"
            );
        }
        // The first invalid entry is reported (entry 2 above is invalid too); none is skipped.
        assert_eq!(
            allowlist(&[Some("nope"), Some("https://ok.test")]),
            Err("Invalid egress policy: allowedOrigins[0] must be an absolute HTTP(S) URL.".into())
        );
        // The error's fields.
        let e = EgressPolicy::normalize(None).unwrap_err();
        assert_eq!(
            e.to_record(),
            r#"[5,"Invalid egress policy: expected an object.",null,"invalid-policy",null,null]"#
        );
    }

    #[test]
    fn offline_allows_only_literal_loopback_hosts() {
        let p = EgressPolicy::Offline;
        for url in [
            "http://localhost:11434/v1",
            "http://LOCALHOST./x",
            "https://worker.localhost:8080/v1/models",
            "http://a.b.localhost.",
            "http://[::1]:8000/v1",
            "http://[0:0::1]/",
            "http://127.0.0.1:1/",
            "http://127.42.0.9:11434/v1/chat/completions",
            "http://127.255.255.255/",
            "http://127.0.0.1./",
            "http://127.1/",
            "http://0x7f.0.0.1/",
        ] {
            assert_eq!(p.check(url, "openai").map_err(|e| e.message), Ok(()), "{url}");
        }
        for (url, origin) in [
            ("https://api.openai.com/v1/chat/completions", "https://api.openai.com"),
            ("http://10.0.0.1:8080/v1", "http://10.0.0.1:8080"),
            ("http://192.168.1.10/", "http://192.168.1.10"),
            ("http://169.254.169.254/", "http://169.254.169.254"),
            ("http://128.0.0.1/", "http://128.0.0.1"),
            ("http://localhost.example.com/", "http://localhost.example.com"),
            ("http://mylocalhost/", "http://mylocalhost"),
            ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]"),
            ("http://[::2]/", "http://[::2]"),
            ("http://0.0.0.0/", "http://0.0.0.0"),
        ] {
            let e = p.check(url, "openai").unwrap_err();
            assert_eq!(
                e.message,
                format!("Egress policy denied framework-owned provider \"openai\" request to {origin}.")
            );
            assert_eq!(
                e.egress.as_deref(),
                Some(&Refusal { reason: Reason::Denied, provider: Some("openai".into()), origin: Some(origin.into()) })
            );
        }
        assert!(is_loopback_host("127.0.0.1") && !is_loopback_host("127.0.0.256") && !is_loopback_host("127.0.0"));
        assert!(!is_loopback_host("127.0.0.1.1") && !is_loopback_host("127.0.0.0001") && !is_loopback_host(""));
    }

    #[test]
    fn allowlist_matches_exact_origins_with_any_path() {
        let p = EgressPolicy::Allowlist(origins(&["https://api.example.test:8443", "http://127.0.0.1:4000"]));
        assert_eq!(p.check("https://api.example.test:8443/v1/chat", "test-provider").map_err(|e| e.message), Ok(()));
        assert_eq!(p.check("http://127.0.0.1:4000", "x").map_err(|e| e.message), Ok(()));
        assert_eq!(p.check("http://127.0.0.1:4000/a/b?c=1#d", "x").map_err(|e| e.message), Ok(()));
        for (url, origin) in [
            ("https://api.example.test/v1/chat", "https://api.example.test"),
            ("http://api.example.test:8443/v1", "http://api.example.test:8443"),
            ("http://127.0.0.1:4001/v1", "http://127.0.0.1:4001"),
            ("http://localhost:4000/v1", "http://localhost:4000"),
        ] {
            assert_eq!(
                p.check(url, "test-provider").unwrap_err().message,
                format!("Egress policy denied framework-owned provider \"test-provider\" request to {origin}.")
            );
        }
        // The default port is elided on both sides.
        let p = EgressPolicy::Allowlist(origins(&["https://api.openai.com:443"]));
        assert_eq!(p.check("https://api.openai.com/v1", "openai").map_err(|e| e.message), Ok(()));
        assert_eq!(p.check("https://api.openai.com:443/v1", "openai").map_err(|e| e.message), Ok(()));
        // An empty list denies everything.
        assert!(EgressPolicy::Allowlist(Vec::new()).check("http://127.0.0.1/", "x").is_err());
    }

    #[test]
    fn request_urls_are_checked_like_entries() {
        let p = EgressPolicy::Offline;
        let msg = |u: &str| p.check(u, "openai").unwrap_err().message;
        assert_eq!(msg(""), "Invalid egress policy: request URL must be an absolute HTTP(S) URL.");
        assert_eq!(msg("ftp://127.0.0.1/"), "Invalid egress policy: request URL must use http: or https:.");
        assert_eq!(msg("http://u:p@127.0.0.1/"), "Invalid egress policy: request URL must not contain credentials.");
    }

    #[test]
    fn the_reason_type_names_every_reason() {
        let names: Vec<String> = Reason::ALL.iter().map(|r| format!("\"{}\"", r.as_str())).collect();
        assert_eq!(REASON_TYPE, names.join(" | "));
    }

    #[test]
    fn the_other_texts() {
        assert_eq!(
            unsupported("custom-http-adapter", CUSTOM_ADAPTER_DETAIL).to_record(),
            r#"[5,"Egress policy cannot enforce provider \"custom-http-adapter\": custom and AI SDK adapters do not expose an enforceable request transport or target contract to OMA.",null,"unsupported","custom-http-adapter",null]"#
        );
        assert_eq!(
            unresolved("azure-openai").message,
            "Egress policy cannot resolve provider \"azure-openai\" target: set AgentConfig.baseURL or the provider-specific endpoint environment variable."
        );
        let codes: Vec<(&str, &str)> = Reason::ALL.iter().map(|r| (r.as_str(), r.code())).collect();
        assert_eq!(
            codes,
            [
                ("invalid-policy", "INVALID_EGRESS_POLICY"),
                ("denied", "EGRESS_POLICY_DENIED"),
                ("unsupported", "EGRESS_POLICY_UNSUPPORTED"),
                ("unresolved-target", "EGRESS_POLICY_TARGET_UNRESOLVED"),
            ]
        );
        let from = Url::parse("http://127.0.0.1:1/v1/x").unwrap();
        let to = Url::parse("http://127.0.0.1:2/y").unwrap();
        let e = redirect_refused(307, &from, &to);
        assert_eq!((e.kind, e.status), (ErrorKind::Api, Some(307)));
        assert_eq!(e.message, "307 redirect refused under the egress policy: http://127.0.0.1:1 → http://127.0.0.1:2 (no redirect is followed while an egress policy is set; set the base URL to the new location to use it)");
    }
}
