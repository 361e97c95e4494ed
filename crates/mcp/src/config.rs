//! `ConnectMCPToolsConfig` as the JS glue hands it over (one JSON object), checked with clear
//! errors and split into the transport's and the session's settings. Defaults are `rules`'.

use std::time::Duration;

use serde_json::{Map, Value};

use oma_llm::egress::{EgressPolicy, PolicyObject};

use crate::http::HttpSpec;
use crate::rules;
use crate::session::Config;
use crate::stdio::{inheritable, Spawn};

/// Where the server is.
#[derive(Debug)]
pub enum Transport {
    Stdio(Spawn),
    Http(HttpSpec),
}

/// The longest `requestTimeoutMs` (Node's timer limit; the original's `setTimeout` fired at
/// once for longer ones).
pub const MAX_REQUEST_TIMEOUT_MS: f64 = 2_147_483_647.0;

fn err(field: &str, what: &str) -> String {
    format!("connectMCPTools: {field} must be {what}")
}

fn opt_string(o: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(err(field, "a string")),
    }
}

fn pairs(o: &Map<String, Value>, field: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let Some(v) = o.get(field) else { return Ok(Vec::new()) };
    let bad = || err(field, "an object of strings");
    let mut out = Vec::new();
    for p in v.as_array().ok_or_else(bad)? {
        match p.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(v)]) => out.push((k.clone(), Some(v.clone()))),
            Some([Value::String(k), Value::Null]) => out.push((k.clone(), None)),
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// `connectMCPTools(config)` with a `config` that is not an object (the glue checks it first).
pub const CONFIG_NOT_AN_OBJECT: &str = "connectMCPTools: config must be an object";
/// An `authToken` that is neither a string nor a function returning one.
pub const AUTH_TOKEN_NOT_A_STRING: &str = "connectMCPTools: authToken must be a string or a function returning one";

/// Parses the glue's JSON: `command`, `args`, `env` and `defaultEnv` as `[name, value|null]`
/// pairs (`null`: the config's `undefined`), `cwd` — or `url`, `headers` (pairs) and `token` —
/// and `namePrefix`, `requestTimeoutMs`, `clientName`, `clientVersion`.
pub fn parse(json: &str) -> Result<(Transport, Config), String> {
    let v: Value = serde_json::from_str(json).map_err(|_| CONFIG_NOT_AN_OBJECT.to_string())?;
    let o = v.as_object().ok_or_else(|| CONFIG_NOT_AN_OBJECT.to_string())?;
    let mut config = session_config(o)?;
    let has = |k: &str| !matches!(o.get(k), None | Some(Value::Null));
    if has("url") {
        if has("command") {
            return Err("connectMCPTools: give either command (stdio) or url (Streamable HTTP), not both".into());
        }
        let url = match o.get("url") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(err("url", "a string")),
        };
        let mut headers = Vec::new();
        for (k, v) in pairs(o, "headers")? {
            match v {
                Some(v) => headers.push((k, v)),
                None => return Err(err("headers", "an object of strings")),
            }
        }
        let egress = egress_policy(o)?;
        config.server = server_label_of_url(&url);
        return Ok((Transport::Http(HttpSpec { url, headers, token: opt_string(o, "token")?, egress }), config));
    }
    let command = match o.get("command") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(err("command", "a non-empty string")),
    };
    let args = match o.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| err("args", "an array of strings"))?,
        Some(_) => return Err(err("args", "an array of strings")),
    };
    let default_env =
        pairs(o, "defaultEnv")?.into_iter().filter_map(|(k, v)| v.filter(|v| inheritable(v)).map(|v| (k, v))).collect();
    config.server = command.clone();
    let spawn = Spawn { command, args, default_env, env: pairs(o, "env")?, cwd: opt_string(o, "cwd")? };
    Ok((Transport::Stdio(spawn), config))
}

/// `egressPolicy` (upstream 1.16's `EgressPolicy`, as the glue normalised it): read through
/// oma-llm's one normalisation, so an allowlist's origins are compared as the adapters compare
/// theirs. Only Streamable HTTP is covered: a stdio server is a local process the kernel sends no
/// request for (upstream's policy does not cover it either).
fn egress_policy(o: &Map<String, Value>) -> Result<Option<EgressPolicy>, String> {
    let Some(Value::Object(p)) = o.get("egressPolicy") else { return Ok(None) };
    let keys: Vec<String> = p.keys().cloned().collect();
    let origins: Option<Vec<Option<String>>> = p
        .get("allowedOrigins")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect());
    let object =
        PolicyObject { mode: p.get("mode").and_then(Value::as_str), keys: &keys, allowed_origins: origins.as_deref() };
    EgressPolicy::normalize(Some(object)).map(Some).map_err(|e| e.message)
}

/// How texts name an HTTP server: its origin and path (no userinfo or query, which may hold
/// secrets).
fn server_label_of_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!("{}{}", u.origin().ascii_serialization(), u.path()),
        Err(_) => url.to_string(),
    }
}

fn session_config(o: &Map<String, Value>) -> Result<Config, String> {
    let timeout = match o.get("requestTimeoutMs") {
        None | Some(Value::Null) => rules::DEFAULT_REQUEST_TIMEOUT_MS as f64,
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|t| *t > 0.0 && *t <= MAX_REQUEST_TIMEOUT_MS)
            .ok_or_else(|| err("requestTimeoutMs", "a number of milliseconds from 1 to 2147483647"))?,
        Some(_) => return Err(err("requestTimeoutMs", "a number of milliseconds from 1 to 2147483647")),
    };
    Ok(Config {
        client_name: opt_string(o, "clientName")?.unwrap_or_else(|| rules::DEFAULT_CLIENT_NAME.into()),
        client_version: opt_string(o, "clientVersion")?.unwrap_or_else(|| rules::DEFAULT_CLIENT_VERSION.into()),
        name_prefix: opt_string(o, "namePrefix")?,
        request_timeout: Duration::from_secs_f64(timeout.ceil() / 1000.0),
        server: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors() {
        let (t, c) =
            parse(r#"{"command":"srv","defaultEnv":[["PATH","/bin"],["SHELL","() { x; }"]],"env":[["A",null]]}"#)
                .unwrap();
        let Transport::Stdio(s) = t else { panic!("stdio expected") };
        assert_eq!((s.command.as_str(), s.args.len(), s.cwd), ("srv", 0, None));
        assert_eq!(s.default_env, vec![("PATH".to_string(), "/bin".to_string())]);
        assert_eq!(s.env, vec![("A".to_string(), None)]);
        assert_eq!((c.client_name.as_str(), c.client_version.as_str()), ("open-multi-agent", "0.0.0"));
        assert_eq!(c.request_timeout, Duration::from_millis(60_000));
        assert_eq!(c.name_prefix, None);
        assert_eq!(c.server, "srv");
        let (_, c) = parse(r#"{"url":"http://u:p@127.0.0.1:9/mcp?key=k"}"#).unwrap();
        assert_eq!(c.server, "http://127.0.0.1:9/mcp");
        let (_, c) =
            parse(r#"{"command":"s","requestTimeoutMs":1.5,"namePrefix":"p","clientName":"n","clientVersion":"v"}"#)
                .unwrap();
        assert_eq!(
            (c.request_timeout, c.name_prefix.as_deref(), c.client_name.as_str()),
            (Duration::from_millis(2), Some("p"), "n")
        );
        for (json, msg) in [
            ("[]", "connectMCPTools: config must be an object"),
            (r#"{"command":""}"#, "connectMCPTools: command must be a non-empty string"),
            (r#"{"command":"s","args":[1]}"#, "connectMCPTools: args must be an array of strings"),
            (r#"{"command":"s","env":[["A",1]]}"#, "connectMCPTools: env must be an object of strings"),
            (r#"{"command":"s","cwd":3}"#, "connectMCPTools: cwd must be a string"),
            (
                r#"{"command":"s","requestTimeoutMs":0}"#,
                "connectMCPTools: requestTimeoutMs must be a number of milliseconds from 1 to 2147483647",
            ),
            (
                r#"{"command":"s","requestTimeoutMs":3e9}"#,
                "connectMCPTools: requestTimeoutMs must be a number of milliseconds from 1 to 2147483647",
            ),
        ] {
            assert_eq!(parse(json).err().as_deref(), Some(msg), "{json}");
        }
    }
}
