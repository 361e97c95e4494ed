//! The adapter factory (CONTRACT §14): provider presets with their names, key chains, base
//! URLs and reasoning capabilities, and the `chat` / `stream` drivers over the transport.

use std::sync::Arc;

use bytes::Bytes;
use reqwest::Client;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::bedrock::{self, Credentials, FrameDecoder};
use super::egress::{self, Egress, EgressPolicy};
use super::limits::{self, MAX_RESPONSE_BYTES};
use super::sse::{SseEvent, SseParser};
use super::transport::{self, ErrorStyle, Http, HttpRequest, HttpResponse, ReqwestHttp, TransportConfig};
use super::{
    anthropic, gemini, openai, or_abort, ChatOptions, Env, EventSink, LlmError, LlmResponse, Reuse, StreamEvent,
};
use oma_core::kernel::message::Message;

/// `capabilities.echoesReasoning` (§15.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoesReasoning {
    Never,
    OwnIssued,
    ToolUseOnly,
}

impl EchoesReasoning {
    pub fn as_str(self) -> &'static str {
        match self {
            EchoesReasoning::Never => "never",
            EchoesReasoning::OwnIssued => "own-issued",
            EchoesReasoning::ToolUseOnly => "tool-use-only",
        }
    }
}

#[derive(Debug, Clone)]
enum Wire {
    Anthropic,
    OpenAi,
    Azure {
        api_version: String,
        deployment: Option<String>,
    },
    Gemini,
    /// `env` is the snapshot the credential chain reads at request time.
    Bedrock {
        region: String,
        env: Env,
    },
    /// OpenAI wire behind a short-lived Copilot token exchanged from a GitHub token.
    Copilot {
        github_token: String,
        github_api: String,
        session: Arc<tokio::sync::Mutex<Option<CopilotSession>>>,
    },
}

#[derive(Debug, Clone)]
struct CopilotSession {
    token: String,
    api_base: String,
    expires_at: f64,
}

#[derive(Deserialize)]
struct CopilotTokenReply {
    token: String,
    #[serde(default)]
    expires_at: Option<f64>,
    #[serde(default)]
    endpoints: Option<CopilotEndpoints>,
}

#[derive(Deserialize)]
struct CopilotEndpoints {
    #[serde(default)]
    api: Option<String>,
}

const COPILOT_NO_TOKEN: &str = "No GitHub token for the copilot provider: set GITHUB_COPILOT_TOKEN or GITHUB_TOKEN, or pass apiKey (oma-kernel does not run the interactive device login).";
const COPILOT_EDITOR_VERSION: &str = "vscode/1.95.0";

/// A native adapter: immutable after creation, `Send + Sync`, meant to be shared in an `Arc`.
#[derive(Debug, Clone)]
pub struct Adapter {
    name: String,
    echoes: EchoesReasoning,
    wire: Wire,
    base_url: String,
    /// Shared with each request (copied only by the wires that add per-request headers).
    headers: Arc<Vec<(&'static str, String)>>,
    /// Anthropic resolves its credentials per request: without any, every call fails.
    auth_error: Option<String>,
    client: Client,
    pub transport: TransportConfig,
    /// An HTTPS endpoint that the client reaches directly (no proxy from the environment): the
    /// JS thread's HTTP stack may serve it (`on_any_http`).
    https_direct: bool,
}

const OPENAI_MISSING_KEY: &str = "The OPENAI_API_KEY environment variable is missing or empty; either provide it, or instantiate the OpenAI client with an apiKey option, like new OpenAI({ apiKey: 'My API Key' }).";
const AZURE_MISSING_KEY: &str = "Missing credentials. Please pass one of `apiKey` and `azureADTokenProvider`, or set the `AZURE_OPENAI_API_KEY` environment variable.";
const AZURE_MISSING_ENDPOINT: &str =
    "Must provide one of the `baseURL` or `endpoint` arguments, or the `AZURE_OPENAI_ENDPOINT` environment variable";
const AZURE_NO_DEPLOYMENT: &str =
    "Azure OpenAI deployment is required. Set agent model to your deployment name, or set AZURE_OPENAI_DEPLOYMENT.";
const GEMINI_MISSING_KEY: &str = "The GEMINI_API_KEY environment variable is missing or empty; either set GEMINI_API_KEY (or GOOGLE_API_KEY), or pass an apiKey to createAdapter('gemini', apiKey).";

/// An OpenAI-compatible preset: (provider, key env, base URL env, default base URL, echoes).
const PRESETS: &[(&str, &str, Option<&str>, &str, EchoesReasoning)] = &[
    ("deepseek", "DEEPSEEK_API_KEY", None, "https://api.deepseek.com/v1", EchoesReasoning::ToolUseOnly),
    ("doubao", "ARK_API_KEY", None, "https://ark.cn-beijing.volces.com/api/v3", EchoesReasoning::Never),
    ("grok", "XAI_API_KEY", None, "https://api.x.ai/v1", EchoesReasoning::Never),
    (
        "hunyuan",
        "HUNYUAN_API_KEY",
        Some("HUNYUAN_BASE_URL"),
        "https://tokenhub.tencentmaas.com/v1",
        EchoesReasoning::ToolUseOnly,
    ),
    ("minimax", "MINIMAX_API_KEY", Some("MINIMAX_BASE_URL"), "https://api.minimax.io/v1", EchoesReasoning::Never),
    ("mimo", "MIMO_API_KEY", Some("MIMO_BASE_URL"), "https://api.xiaomimimo.com/v1", EchoesReasoning::ToolUseOnly),
    ("qiniu", "QINIU_API_KEY", None, "https://api.qnaigc.com/v1", EchoesReasoning::Never),
];

fn env_get(env: &Env, k: &str) -> Option<String> {
    env.get(k).cloned()
}

fn trim_slash(s: &str) -> String {
    s.trim_end_matches('/').to_string()
}

/// `encodeURIComponent` for a path segment.
fn encode_component(s: &str) -> String {
    percent_encode(s, b"-_.!~*'()")
}

/// `s` with every byte percent-encoded but ASCII letters, digits and those in `keep`.
pub(crate) fn percent_encode(s: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn openai_headers(key: &str) -> Vec<(&'static str, String)> {
    json_headers(vec![("authorization", format!("Bearer {key}"))])
}

/// `first`, then the JSON content type and accept headers every provider sends.
fn json_headers(mut first: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    first.push(("content-type", "application/json".into()));
    first.push(("accept", "application/json".into()));
    first
}

/// The environment variables `create_adapter` (and, for bedrock, its credential chain) reads
/// for `provider`: the JS shim snapshots only these from `process.env` (each read of
/// `process.env` costs a call into Node; agents are often created per request).
/// Which `createAdapter` arguments were given (not `undefined` / `null`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    pub api_key: bool,
    pub base_url: bool,
    pub region: bool,
}

/// `AgentConfig.provider` when unset.
pub const DEFAULT_PROVIDER: &str = "anthropic";

/// The warnings `createAdapter` writes through `console.warn` for a `baseURL` the provider does
/// not use (CONTRACT §18.4).
pub const BEDROCK_BASE_URL_IGNORED: &str =
    "[open-multi-agent] baseURL is ignored for bedrock; pass region as the fourth arg or set AWS_REGION.";
pub const COPILOT_BASE_URL_IGNORED: &str =
    "[open-multi-agent] baseURL is not supported for the copilot provider and will be ignored.";

/// The environment variables `create_adapter(provider, …)` reads when the arguments in `given`
/// are present: a variable an argument takes precedence over is left out (reading
/// `process.env` costs a call into Node and a scan of the environment each time).
pub fn env_vars_for(provider: &str, given: Given) -> Vec<&'static str> {
    let unless = |present: bool, v: &'static str| if present { None } else { Some(v) };
    let (key, base) = (given.api_key, given.base_url);
    let vars: Vec<Option<&'static str>> = match provider {
        "openai" => vec![unless(key, "OPENAI_API_KEY"), unless(base, "OPENAI_BASE_URL")],
        "anthropic" => {
            vec![unless(key, "ANTHROPIC_API_KEY"), Some("ANTHROPIC_AUTH_TOKEN"), unless(base, "ANTHROPIC_BASE_URL")]
        }
        "azure-openai" => vec![
            unless(key, "AZURE_OPENAI_API_KEY"),
            unless(base, "AZURE_OPENAI_ENDPOINT"),
            Some("AZURE_OPENAI_API_VERSION"),
            Some("AZURE_OPENAI_DEPLOYMENT"),
        ],
        "gemini" => vec![unless(key, "GEMINI_API_KEY"), unless(key, "GOOGLE_API_KEY"), Some("GOOGLE_GEMINI_BASE_URL")],
        // The credential chain keeps all of them (read at request time).
        "bedrock" => BEDROCK_ENV.iter().copied().map(Some).collect(),
        "copilot" => vec![unless(key, "GITHUB_COPILOT_TOKEN"), unless(key, "GITHUB_TOKEN"), Some("GITHUB_API_URL")],
        // The presets: their own key and base URL variables, then the OpenAI key fallback.
        other => match PRESETS.iter().find(|p| p.0 == other) {
            Some(&(_, key_env, base_env, _, _)) => {
                vec![unless(key, key_env), base_env.filter(|_| !base), unless(key, "OPENAI_API_KEY")]
            }
            None => Vec::new(),
        },
    };
    vars.into_iter().flatten().collect()
}

const BEDROCK_ENV: &[&str] = &[
    "AWS_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_ENDPOINT_URL",
    "HOME",
    "USERPROFILE",
];

/// Copilot's chat endpoint until its token exchange names another (`endpoints.api`).
const COPILOT_API_BASE: &str = "https://api.githubcopilot.com";

// Where each provider's requests go, as its adapter resolves it: one definition, used to build
// the adapter and to check an egress policy before the adapter exists.

/// `baseURL`, else the variable `var`, else `default`; an empty one counts as unset.
fn base_or_env(base_url: Option<&str>, env: &Env, var: &str, default: &str) -> String {
    base_url
        .map(str::to_string)
        .or_else(|| env_get(env, var))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.into())
}

fn openai_base(base_url: Option<&str>, env: &Env) -> String {
    base_or_env(base_url, env, "OPENAI_BASE_URL", "https://api.openai.com/v1")
}

fn anthropic_base(base_url: Option<&str>, env: &Env) -> String {
    base_or_env(base_url, env, "ANTHROPIC_BASE_URL", "https://api.anthropic.com")
}

/// `baseURL`, else `AZURE_OPENAI_ENDPOINT`; there is no default.
fn azure_endpoint(base_url: Option<&str>, env: &Env) -> Option<String> {
    base_url.map(str::to_string).or_else(|| env_get(env, "AZURE_OPENAI_ENDPOINT"))
}

fn bedrock_region(region: Option<&str>, env: &Env) -> String {
    region.map(str::to_string).or_else(|| env_get(env, "AWS_REGION")).unwrap_or_else(|| "us-east-1".into())
}

/// `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` / `AWS_ENDPOINT_URL` (the AWS SDKs' own endpoint
/// overrides), else the region's endpoint; `baseURL` is ignored (the JS shim warns).
fn bedrock_endpoint(region: &str, env: &Env) -> String {
    env_get(env, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        .or_else(|| env_get(env, "AWS_ENDPOINT_URL"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.amazonaws.com"))
}

/// GitHub's API host for Copilot's token exchange: `GITHUB_API_URL` is GitHub's own convention
/// for it (GitHub Enterprise).
fn github_api(env: &Env) -> String {
    env_get(env, "GITHUB_API_URL").filter(|s| !s.is_empty()).unwrap_or_else(|| "https://api.github.com".into())
}

/// The original ignores `baseURL` for gemini; GOOGLE_GEMINI_BASE_URL is the @google/genai
/// override and lets tests point at a local server.
fn gemini_base(env: &Env) -> String {
    env_get(env, "GOOGLE_GEMINI_BASE_URL")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://generativelanguage.googleapis.com".into())
}

/// `baseURL`, else the preset's base URL variable, else its default.
fn preset_base(base_env: Option<&str>, default_base: &str, base_url: Option<&str>, env: &Env) -> String {
    base_url
        .map(str::to_string)
        .or_else(|| base_env.and_then(|e| env_get(env, e)))
        .unwrap_or_else(|| default_base.to_string())
}

/// The URLs `provider`'s adapter will send to, for an egress policy to check before it is made.
/// Copilot: its chat endpoint and the token exchange's host. azure-openai without an endpoint
/// is `unresolved-target`; so is an unknown provider without `baseURL` (upstream's order: the
/// policy's verdict comes before any other error of the configuration).
fn egress_targets(
    provider: &str,
    base_url: Option<&str>,
    region: Option<&str>,
    env: &Env,
) -> Result<Vec<String>, LlmError> {
    Ok(match provider {
        "openai" => vec![openai_base(base_url, env)],
        "anthropic" => vec![anthropic_base(base_url, env)],
        "azure-openai" => vec![azure_endpoint(base_url, env).ok_or_else(|| egress::unresolved(provider))?],
        "bedrock" => vec![bedrock_endpoint(&bedrock_region(region, env), env)],
        "copilot" => vec![COPILOT_API_BASE.to_string(), github_api(env)],
        "gemini" => vec![gemini_base(env)],
        other => match PRESETS.iter().find(|p| p.0 == other) {
            Some(&(_, _, base_env, default_base, _)) => vec![preset_base(base_env, default_base, base_url, env)],
            None => vec![base_url.ok_or_else(|| egress::unresolved(provider))?.to_string()],
        },
    })
}

/// `createAdapter(provider, apiKey?, baseURL?, region?, egressPolicy?)`: with a policy, every
/// target the adapter would use is checked first (no I/O on a refusal), and the adapter checks
/// each request it sends, refuses redirects, and ignores proxies (`transport::direct_client`).
/// Without one, exactly `create_adapter`.
pub fn create_adapter_with(
    provider: &str,
    api_key: Option<&str>,
    base_url: Option<&str>,
    region: Option<&str>,
    env: &Env,
    egress: Option<&EgressPolicy>,
) -> Result<Adapter, LlmError> {
    let Some(policy) = egress else { return create_adapter(provider, api_key, base_url, region, env) };
    for target in egress_targets(provider, base_url, region, env)? {
        policy.check(&target, provider)?;
    }
    let mut a = create_adapter(provider, api_key, base_url, region, env)?;
    a.client = transport::direct_client()?;
    a.https_direct = a.base_url.starts_with("https://");
    a.transport.egress = Some(Arc::new(Egress { policy: policy.clone(), provider: a.name.clone() }));
    Ok(a)
}

/// `createAdapter(provider, apiKey?, baseURL?, region?)`; `env` stands for `process.env`.
/// The `Err` message is the one the original throws (names the variable to set).
pub fn create_adapter(
    provider: &str,
    api_key: Option<&str>,
    base_url: Option<&str>,
    region: Option<&str>,
    env: &Env,
) -> Result<Adapter, LlmError> {
    let mut a = build_adapter(provider, api_key, base_url, region, env)?;
    a.https_direct = a.base_url.starts_with("https://") && !transport::proxied(&a.base_url);
    Ok(a)
}

fn build_adapter(
    provider: &str,
    api_key: Option<&str>,
    base_url: Option<&str>,
    region: Option<&str>,
    env: &Env,
) -> Result<Adapter, LlmError> {
    let client = transport::client()?;
    let openai_like = |name: &str, key: Option<String>, base: String, echoes| -> Result<Adapter, LlmError> {
        let key = key.or_else(|| env_get(env, "OPENAI_API_KEY")).ok_or_else(|| LlmError::other(OPENAI_MISSING_KEY))?;
        Ok(Adapter::new(name, echoes, Wire::OpenAi, &base, openai_headers(&key), client.clone()))
    };
    match provider {
        "openai" => {
            openai_like("openai", api_key.map(str::to_string), openai_base(base_url, env), EchoesReasoning::Never)
        }
        "anthropic" => {
            let key = api_key.map(str::to_string).or_else(|| env_get(env, "ANTHROPIC_API_KEY"));
            let token = env_get(env, "ANTHROPIC_AUTH_TOKEN");
            let base = anthropic_base(base_url, env);
            let mut headers = Vec::new();
            if let Some(k) = &key {
                headers.push(("x-api-key", k.clone()));
            }
            if let Some(t) = &token {
                headers.push(("authorization", format!("Bearer {t}")));
            }
            headers.push(("anthropic-version", "2023-06-01".into()));
            let mut a = Adapter::new(
                "anthropic",
                EchoesReasoning::OwnIssued,
                Wire::Anthropic,
                &base,
                json_headers(headers),
                client,
            );
            if key.is_none() && token.is_none() {
                a.auth_error = Some(anthropic::MISSING_AUTH.into());
            }
            Ok(a)
        }
        "azure-openai" => {
            let key = api_key
                .map(str::to_string)
                .or_else(|| env_get(env, "AZURE_OPENAI_API_KEY"))
                .ok_or_else(|| LlmError::other(AZURE_MISSING_KEY))?;
            let endpoint = azure_endpoint(base_url, env).ok_or_else(|| LlmError::other(AZURE_MISSING_ENDPOINT))?;
            let wire = Wire::Azure {
                api_version: env_get(env, "AZURE_OPENAI_API_VERSION").unwrap_or_else(|| "2024-10-21".into()),
                deployment: env_get(env, "AZURE_OPENAI_DEPLOYMENT"),
            };
            Ok(Adapter::new(
                "azure-openai",
                EchoesReasoning::Never,
                wire,
                &endpoint,
                json_headers(vec![("api-key", key)]),
                client,
            ))
        }
        "bedrock" => {
            let region = bedrock_region(region, env);
            let endpoint = bedrock_endpoint(&region, env);
            // The credential chain reads these at request time; nothing else is kept.
            let wire = Wire::Bedrock {
                region,
                env: BEDROCK_ENV.iter().filter_map(|k| Some((k.to_string(), env.get(*k)?.clone()))).collect(),
            };
            Ok(Adapter::new("bedrock", EchoesReasoning::OwnIssued, wire, &endpoint, json_headers(Vec::new()), client))
        }
        "copilot" => {
            // `baseURL` is ignored (the JS shim warns); the chat endpoint comes from the token
            // exchange's `endpoints.api`.
            let gh = api_key
                .map(str::to_string)
                .or_else(|| env_get(env, "GITHUB_COPILOT_TOKEN"))
                .or_else(|| env_get(env, "GITHUB_TOKEN"))
                .filter(|t| !t.is_empty())
                .ok_or_else(|| LlmError::other(COPILOT_NO_TOKEN))?;
            let github_api = github_api(env);
            let wire = Wire::Copilot {
                github_token: gh,
                github_api: trim_slash(&github_api),
                session: Arc::new(tokio::sync::Mutex::new(None)),
            };
            let mut headers = json_headers(Vec::new());
            headers.push(("copilot-integration-id", "vscode-chat".into()));
            headers.push(("editor-version", COPILOT_EDITOR_VERSION.into()));
            Ok(Adapter::new("copilot", EchoesReasoning::Never, wire, COPILOT_API_BASE, headers, client))
        }
        "gemini" => {
            let key = api_key
                .map(str::to_string)
                .or_else(|| env_get(env, "GEMINI_API_KEY"))
                .or_else(|| env_get(env, "GOOGLE_API_KEY"))
                .ok_or_else(|| LlmError::other(GEMINI_MISSING_KEY))?;
            let base = gemini_base(env);
            let headers = json_headers(vec![("x-goog-api-key", key)]);
            Ok(Adapter::new("gemini", EchoesReasoning::OwnIssued, Wire::Gemini, &base, headers, client))
        }
        other => {
            if let Some(&(name, key_env, base_env, default_base, echoes)) = PRESETS.iter().find(|p| p.0 == other) {
                let key = api_key.map(str::to_string).or_else(|| env_get(env, key_env));
                return openai_like(name, key, preset_base(base_env, default_base, base_url, env), echoes);
            }
            Err(LlmError::other(format!("Unsupported LLM provider: {other}")))
        }
    }
}

fn request_id(resp: &impl HttpResponse) -> String {
    resp.header("x-amzn-requestid").unwrap_or("").to_string()
}

impl Adapter {
    /// An adapter to `base` (its trailing slashes dropped) with the default transport and no
    /// missing credentials; whether the JS thread's HTTPS stack may serve it is
    /// `create_adapter`'s to decide.
    fn new(
        name: &str,
        echoes: EchoesReasoning,
        wire: Wire,
        base: &str,
        headers: Vec<(&'static str, String)>,
        client: Client,
    ) -> Adapter {
        Adapter {
            name: name.into(),
            echoes,
            wire,
            base_url: trim_slash(base),
            headers: headers.into(),
            auth_error: None,
            client,
            transport: TransportConfig::default(),
            https_direct: false,
        }
    }

    /// `LLMAdapter.name`, also the provenance stamped on reasoning blocks.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn echoes_reasoning(&self) -> EchoesReasoning {
        self.echoes
    }

    /// Uses `client` instead of the process-wide pool (tests with their own runtime).
    pub fn with_client(mut self, client: Client) -> Self {
        self.client = client;
        self
    }

    fn style(&self) -> ErrorStyle {
        match self.wire {
            Wire::Anthropic => ErrorStyle::Anthropic,
            Wire::Bedrock { .. } => ErrorStyle::Aws,
            _ => ErrorStyle::OpenAi,
        }
    }

    /// URL and body, or the errors the original throws before any network call.
    fn request(
        &self,
        messages: &[Message],
        opts: &ChatOptions,
        stream: bool,
        reuse: Reuse,
    ) -> Result<HttpRequest, LlmError> {
        let mut headers = self.headers.clone();
        // The OpenAI wire's body around its message list (borrowed from the run's cache when
        // there is one) and tools.
        let openai_body = |ob: Option<&openai::Outbound>, model: Option<&str>| {
            let tools = opts.openai_tools.get_or_init(|| openai::tools_json(opts)).as_deref();
            match reuse {
                Some((cache, epoch)) => {
                    let mut cache = cache.0.lock().unwrap_or_else(|e| e.into_inner());
                    let list = cache.message_list_json(messages, epoch, opts.system_prompt.as_ref(), ob);
                    openai::framed_body(list, tools, model, opts, stream)
                }
                None => openai::framed_body(
                    &openai::message_list_json(messages, opts.system_prompt.as_ref(), ob),
                    tools,
                    model,
                    opts,
                    stream,
                ),
            }
        };
        let (url, body) = match &self.wire {
            Wire::Anthropic => {
                (format!("{}/v1/messages", self.base_url), anthropic::request_body(messages, opts, &self.name, stream)?)
            }
            Wire::OpenAi | Wire::Copilot { .. } => {
                let ob = openai::outbound(opts, &self.name, self.echoes == EchoesReasoning::ToolUseOnly);
                let model = opts.model.as_ref().map(|_| opts.model_cow());
                (format!("{}/chat/completions", self.base_url), openai_body(ob.as_ref(), model.as_deref()))
            }
            Wire::Azure { api_version, deployment } => {
                let model = opts.model_str();
                let dep = if model.trim().is_empty() {
                    deployment.clone().filter(|d| !d.trim().is_empty())
                } else {
                    Some(model)
                };
                let dep = dep.ok_or_else(|| LlmError::other(AZURE_NO_DEPLOYMENT))?;
                let ob = openai::outbound(opts, &self.name, false);
                let body = openai_body(ob.as_ref(), Some(&dep));
                let url = format!(
                    "{}/openai/deployments/{}/chat/completions?api-version={}",
                    self.base_url,
                    encode_component(&dep),
                    encode_component(api_version)
                );
                (url, body)
            }
            Wire::Gemini => {
                let model = opts.model_str();
                let model = model.strip_prefix("models/").unwrap_or(&model);
                let method = if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
                (
                    format!("{}/v1beta/models/{}:{}", self.base_url, encode_component(model), method),
                    gemini::request_body(messages, opts, &self.name),
                )
            }
            Wire::Bedrock { region, env } => {
                let body = bedrock::request_body(messages, opts, &self.name)?;
                let method = if stream { "converse-stream" } else { "converse" };
                let url = format!("{}/model/{}/{}", self.base_url, bedrock::uri_encode(&opts.model_str()), method);
                match bedrock::resolve_credentials(env)? {
                    Credentials::Bearer(t) => {
                        Arc::make_mut(&mut headers).push(("authorization", format!("Bearer {t}")))
                    }
                    Credentials::Keys { access_key, secret, session_token } => {
                        let parsed =
                            reqwest::Url::parse(&url).map_err(|_| LlmError::other(format!("Invalid URL: {url}")))?;
                        let host = match parsed.port() {
                            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or("")),
                            None => parsed.host_str().unwrap_or("").to_string(),
                        };
                        Arc::make_mut(&mut headers).extend(bedrock::sign(
                            &access_key,
                            &secret,
                            session_token.as_deref(),
                            region,
                            "bedrock",
                            &host,
                            parsed.path(),
                            "application/json",
                            body.as_bytes(),
                            bedrock::now_secs(),
                        ));
                    }
                }
                (url, body)
            }
        };
        Ok(HttpRequest { method: reqwest::Method::POST, url, headers, body: Bytes::from(body) })
    }

    /// The request, plus what needs network first (Copilot's token exchange).
    async fn prepared(&self, mut req: HttpRequest, cancel: &CancellationToken) -> Result<HttpRequest, LlmError> {
        if let Wire::Copilot { .. } = &self.wire {
            let s = self.copilot_session(cancel).await?;
            req.url = format!("{}/chat/completions", s.api_base);
            Arc::make_mut(&mut req.headers).push(("authorization", format!("Bearer {}", s.token)));
        }
        Ok(req)
    }

    /// A cached Copilot token, exchanged again a minute before it expires.
    async fn copilot_session(&self, cancel: &CancellationToken) -> Result<CopilotSession, LlmError> {
        let Wire::Copilot { github_token, github_api, session } = &self.wire else { unreachable!("copilot only") };
        let mut guard = or_abort(cancel, session.lock()).await?;
        let now = super::bedrock::now_secs() as f64;
        if let Some(s) = guard.as_ref().filter(|s| s.expires_at > now + 60.0) {
            return Ok(s.clone());
        }
        let req = HttpRequest {
            method: reqwest::Method::GET,
            url: format!("{github_api}/copilot_internal/v2/token"),
            headers: Arc::new(vec![
                ("authorization", format!("token {github_token}")),
                ("accept", "application/json".into()),
                ("user-agent", "oma-kernel".into()),
                ("editor-version", COPILOT_EDITOR_VERSION.into()),
            ]),
            body: Bytes::new(),
        };
        let resp =
            transport::send(&ReqwestHttp(&self.client), &req, ErrorStyle::GitHub, &self.transport, cancel).await?;
        let body = transport::read_body(resp, MAX_RESPONSE_BYTES, cancel).await?;
        let reply: CopilotTokenReply = serde_json::from_slice(&body)
            .map_err(|e| LlmError::other(format!("Could not parse the Copilot token reply: {e}")))?;
        let s = CopilotSession {
            token: reply.token,
            api_base: trim_slash(&reply.endpoints.and_then(|e| e.api).unwrap_or_else(|| self.base_url.clone())),
            expires_at: reply.expires_at.unwrap_or(now + 600.0),
        };
        *guard = Some(s.clone());
        Ok(s)
    }

    /// `chat(messages, options)`: one completion. Never touches JS.
    pub async fn chat(
        &self,
        messages: &[Message],
        reuse: Reuse<'_>,
        opts: &ChatOptions,
        cancel: &CancellationToken,
    ) -> Result<LlmResponse, LlmError> {
        self.chat_on(&ReqwestHttp(&self.client), messages, reuse, opts, cancel).await
    }

    /// Whether `chat_on` and `stream_on` may run on an HTTP stack other than reqwest's (the JS
    /// thread's, which speaks HTTP/1.1 to origins directly): the endpoint is plain HTTP (which
    /// takes no proxy on either stack) or HTTPS reached without a proxy, and no request needs
    /// another one first (Copilot's token exchange runs on reqwest; Bedrock keeps it too).
    pub fn on_any_http(&self) -> bool {
        (self.https_direct || self.base_url.starts_with("http://"))
            && !matches!(self.wire, Wire::Copilot { .. } | Wire::Bedrock { .. })
    }

    /// `chat` over `http` (see [`transport::Http`]).
    pub async fn chat_on<H: Http>(
        &self,
        http: &H,
        messages: &[Message],
        reuse: Reuse<'_>,
        opts: &ChatOptions,
        cancel: &CancellationToken,
    ) -> Result<LlmResponse, LlmError> {
        let req = self.request(messages, opts, false, reuse)?;
        if let Some(e) = &self.auth_error {
            return Err(LlmError::other(e.clone()));
        }
        let req = self.prepared(req, cancel).await?;
        let resp = transport::send(http, &req, self.style(), &self.transport, cancel).await?;
        // Only Bedrock's errors quote it.
        let request_id = if matches!(self.wire, Wire::Bedrock { .. }) { request_id(&resp) } else { String::new() };
        let body = transport::read_body(resp, MAX_RESPONSE_BYTES, cancel).await?;
        // Almost always valid UTF-8: checked the fast way first.
        let body = match std::str::from_utf8(&body) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(&body),
        };
        match &self.wire {
            Wire::Anthropic => anthropic::parse_message(&body, &self.name),
            Wire::OpenAi | Wire::Azure { .. } | Wire::Copilot { .. } => {
                let names = opts.tools.as_ref().map(|_| opts.tool_names());
                // The text tool-call scan looks at the abort signal (I/O thread: it can fire
                // while the scan runs).
                openai::parse_completion_until(&body, names.as_deref(), &self.name, &|| super::is_aborted(cancel))
            }
            Wire::Gemini => gemini::parse_response(&body, &self.name, &opts.model_str()),
            Wire::Bedrock { .. } => bedrock::parse_response(&body, &self.name, &opts.model_str(), &request_id),
        }
    }

    /// `stream(messages, options)`: events go to `sink`, ending with exactly one `Done` or
    /// `Error`. `Err` is what the original throws from the iterator instead of yielding:
    /// validation-time errors always, and for the OpenAI family also errors opening the stream.
    pub async fn stream(
        &self,
        messages: &[Message],
        reuse: Reuse<'_>,
        opts: &ChatOptions,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> Result<(), LlmError> {
        self.stream_on(&ReqwestHttp(&self.client), messages, reuse, opts, cancel, sink).await
    }

    /// `stream` over `http` (see [`transport::Http`]).
    pub async fn stream_on<H: Http>(
        &self,
        http: &H,
        messages: &[Message],
        reuse: Reuse<'_>,
        opts: &ChatOptions,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> Result<(), LlmError> {
        let req = self.request(messages, opts, true, reuse)?;
        if let Some(e) = &self.auth_error {
            sink.emit(StreamEvent::Error(LlmError::other(e.clone())));
            return Ok(());
        }
        let openai_family = matches!(self.wire, Wire::OpenAi | Wire::Azure { .. } | Wire::Copilot { .. });
        // Validation errors are thrown; token-exchange failures follow the opening-error rule.
        let opened = async {
            let req = self.prepared(req, cancel).await?;
            transport::send(http, &req, self.style(), &self.transport, cancel).await
        };
        let mut resp = match opened.await {
            Ok(r) => r,
            Err(e) if openai_family => return Err(e),
            Err(e) => {
                sink.emit(StreamEvent::Error(e));
                return Ok(());
            }
        };
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = Vec::new();
        let mut frames = FrameDecoder::default();
        let mut frame_buf = Vec::new();
        let mut br = bedrock::StreamState::new(&self.name, &opts.model_str(), &request_id(&resp));
        let mut oa = openai::StreamState::new(&self.name);
        let mut an = anthropic::StreamState::new(&self.name);
        let mut ge = gemini::StreamState::new(&self.name, &opts.model_str());
        let mut done = false;
        let mut eof = false;
        // All bytes of the stream, against MAX_RESPONSE_BYTES: the events are read ahead of the
        // consumer and the response is assembled as they come, so this bounds both.
        let mut received = 0usize;
        while !done {
            if !eof {
                let chunk = match or_abort(cancel, HttpResponse::chunk(&mut resp)).await {
                    Err(e) => {
                        sink.emit(StreamEvent::Error(e));
                        return Ok(());
                    }
                    Ok(Err(_)) => {
                        sink.emit(StreamEvent::Error(LlmError::connection()));
                        return Ok(());
                    }
                    Ok(Ok(c)) => c,
                };
                let step = match chunk {
                    Some(bytes) if received + bytes.len() > MAX_RESPONSE_BYTES => Err(limits::stream_too_large()),
                    Some(bytes) if matches!(self.wire, Wire::Bedrock { .. }) => {
                        received += bytes.len();
                        frames
                            .push(&bytes, &mut frame_buf)
                            .and_then(|_| frame_buf.drain(..).try_for_each(|f| br.on_frame(&f, sink)))
                    }
                    Some(bytes) => {
                        received += bytes.len();
                        parser.push(&bytes, &mut events)
                    }
                    None => {
                        eof = true;
                        parser.finish(&mut events)
                    }
                };
                if let Err(e) = step {
                    sink.emit(StreamEvent::Error(e));
                    return Ok(());
                }
            }
            for ev in events.drain(..) {
                let r = match &self.wire {
                    Wire::OpenAi | Wire::Azure { .. } | Wire::Copilot { .. } => {
                        if ev.data == "[DONE]" {
                            done = true;
                            break;
                        }
                        oa.on_chunk(&ev.data, sink)
                    }
                    Wire::Anthropic => an.on_event(ev.event.as_deref(), &ev.data, sink),
                    Wire::Gemini => ge.on_chunk(&ev.data, sink),
                    Wire::Bedrock { .. } => Ok(()),
                };
                if let Err(e) = r {
                    sink.emit(StreamEvent::Error(e));
                    return Ok(());
                }
            }
            if eof {
                done = true;
            }
        }
        let result = match &self.wire {
            Wire::OpenAi | Wire::Azure { .. } | Wire::Copilot { .. } => {
                oa.finish_until(opts, sink, &|| super::is_aborted(cancel))
            }
            Wire::Anthropic => an.finish(),
            Wire::Gemini => Ok(ge.finish()),
            Wire::Bedrock { .. } => Ok(br.finish()),
        };
        sink.emit(match result {
            Ok(r) => StreamEvent::Done(r),
            Err(e) => StreamEvent::Error(e),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an adapter is made of, comparable (the bedrock env map in key order).
    fn fingerprint(a: &Adapter) -> String {
        let wire = match &a.wire {
            Wire::Bedrock { region, env } => {
                format!("bedrock {region} {:?}", env.iter().collect::<std::collections::BTreeMap<_, _>>())
            }
            Wire::Copilot { github_token, github_api, .. } => format!("copilot {github_token} {github_api}"),
            w => format!("{w:?}"),
        };
        format!("{} {:?} {} {:?} {:?} {wire}", a.name, a.echoes, a.base_url, a.headers, a.auth_error)
    }

    #[test]
    fn a_provider_reads_only_the_variables_it_declares() {
        // Every variable of every provider set; then only the ones declared for the arguments
        // given: the same adapter (or the same error), for every combination of arguments.
        let mut providers: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
        providers.extend(["openai", "anthropic", "azure-openai", "gemini", "bedrock", "copilot", "nope"]);
        let full: Env = providers
            .iter()
            .flat_map(|p| env_vars_for(p, Given::default()))
            .map(|k| (k.to_string(), format!("http://h/{k}")))
            .collect();
        for p in providers {
            for bits in 0..8 {
                let given = Given { api_key: bits & 1 != 0, base_url: bits & 2 != 0, region: bits & 4 != 0 };
                let own: Env = env_vars_for(p, given).iter().map(|k| (k.to_string(), full[*k].clone())).collect();
                let (key, base, region) = (
                    given.api_key.then_some("k"),
                    given.base_url.then_some("http://b"),
                    given.region.then_some("eu-west-3"),
                );
                let a = create_adapter(p, key, base, region, &full).map(|a| fingerprint(&a)).map_err(|e| e.message);
                let b = create_adapter(p, key, base, region, &own).map(|a| fingerprint(&a)).map_err(|e| e.message);
                assert_eq!(a, b, "{p} {given:?}");
            }
            // Arguments only ever take variables away.
            let all = env_vars_for(p, Given::default());
            assert!(
                env_vars_for(p, Given { api_key: true, base_url: true, region: true }).iter().all(|v| all.contains(v)),
                "{p}"
            );
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn key_chains_and_base_urls() {
        let e =
            env(&[("OPENAI_API_KEY", "ok"), ("OPENAI_BASE_URL", "http://o/v1/"), ("MINIMAX_BASE_URL", "http://mm")]);
        let a = create_adapter("openai", None, None, None, &e).unwrap();
        assert_eq!((a.name(), a.base_url.as_str()), ("openai", "http://o/v1"));
        let a = create_adapter("deepseek", None, None, None, &e).unwrap();
        assert_eq!(
            (a.base_url.as_str(), a.echoes_reasoning().as_str()),
            ("https://api.deepseek.com/v1", "tool-use-only")
        );
        assert_eq!(a.headers[0].1, "Bearer ok");
        let a =
            create_adapter("deepseek", None, None, None, &env(&[("DEEPSEEK_API_KEY", "ds"), ("OPENAI_API_KEY", "ok")]))
                .unwrap();
        assert_eq!(a.headers[0].1, "Bearer ds");
        assert_eq!(create_adapter("minimax", None, None, None, &e).unwrap().base_url, "http://mm");
        assert_eq!(create_adapter("grok", Some("k"), Some("http://x"), None, &env(&[])).unwrap().base_url, "http://x");
        assert_eq!(create_adapter("qiniu", None, None, None, &env(&[])).unwrap_err().message, OPENAI_MISSING_KEY);
        assert_eq!(create_adapter("nope", None, None, None, &e).unwrap_err().message, "Unsupported LLM provider: nope");
        assert_eq!(create_adapter("azure-openai", None, None, None, &e).unwrap_err().message, AZURE_MISSING_KEY);
        assert_eq!(
            create_adapter("azure-openai", Some("k"), None, None, &e).unwrap_err().message,
            AZURE_MISSING_ENDPOINT
        );
        let a = create_adapter("anthropic", None, None, None, &env(&[])).unwrap();
        assert_eq!(a.auth_error.as_deref(), Some(anthropic::MISSING_AUTH));
        assert_eq!(a.base_url, "https://api.anthropic.com");
        assert!(create_adapter("gemini", None, None, None, &env(&[])).unwrap_err().message.contains("GEMINI_API_KEY"));
        assert_eq!(
            create_adapter("gemini", None, None, None, &env(&[("GOOGLE_API_KEY", "g")])).unwrap().headers[0].1,
            "g"
        );
    }

    #[test]
    fn an_egress_policy_checks_every_target_before_the_adapter_exists() {
        let offline = EgressPolicy::Offline;
        let allow = |o: &str| EgressPolicy::Allowlist(vec![o.to_string()]);
        let e = env(&[("OPENAI_API_KEY", "k")]);
        // Each provider's own endpoint (defaults, variables, baseURL) is what is checked.
        let mut cases: Vec<(&str, Option<&str>, Env, &str)> = vec![
            ("openai", None, e.clone(), "https://api.openai.com"),
            ("anthropic", None, env(&[]), "https://api.anthropic.com"),
            (
                "azure-openai",
                Some("https://r.openai.azure.com/"),
                env(&[("AZURE_OPENAI_API_KEY", "k")]),
                "https://r.openai.azure.com",
            ),
            ("gemini", None, env(&[("GEMINI_API_KEY", "k")]), "https://generativelanguage.googleapis.com"),
            ("bedrock", None, env(&[("AWS_REGION", "eu-west-3")]), "https://bedrock-runtime.eu-west-3.amazonaws.com"),
            (
                "openai",
                None,
                env(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "https://o.test/v1")]),
                "https://o.test",
            ),
            (
                "openai",
                Some("https://explicit.test/v1"),
                env(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "http://localhost:1/v1")]),
                "https://explicit.test",
            ),
            (
                "gemini",
                None,
                env(&[("GEMINI_API_KEY", "k"), ("GOOGLE_GEMINI_BASE_URL", "https://g.test")]),
                "https://g.test",
            ),
            (
                "bedrock",
                Some("http://ignored.test"),
                env(&[("AWS_ENDPOINT_URL", "https://b.test:8443")]),
                "https://b.test:8443",
            ),
        ];
        for p in PRESETS {
            cases.push((p.0, None, e.clone(), p.3.trim_end_matches("/v1").trim_end_matches("/api/v3")));
        }
        for (provider, base, env, origin) in cases {
            let a = create_adapter_with(provider, None, base, None, &env, Some(&allow(origin))).unwrap();
            assert_eq!(
                a.transport.egress.as_ref().map(|g| (g.provider.as_str(), g.policy.clone())),
                Some((a.name(), allow(origin)))
            );
            let err = create_adapter_with(provider, None, base, None, &env, Some(&offline)).unwrap_err();
            assert_eq!(
                (err.message.as_str(), err.egress.as_ref().and_then(|r| r.origin.as_deref())),
                (
                    format!("Egress policy denied framework-owned provider \"{provider}\" request to {origin}.")
                        .as_str(),
                    Some(origin)
                ),
                "{provider}"
            );
        }
        // Copilot: its chat endpoint and the token exchange's host, both.
        let gh = env(&[("GITHUB_TOKEN", "t")]);
        let both = EgressPolicy::Allowlist(vec!["https://api.github.com".into(), COPILOT_API_BASE.into()]);
        assert!(create_adapter_with("copilot", None, None, None, &gh, Some(&both)).is_ok());
        assert_eq!(
            create_adapter_with("copilot", None, None, None, &gh, Some(&allow(COPILOT_API_BASE))).unwrap_err().message,
            "Egress policy denied framework-owned provider \"copilot\" request to https://api.github.com."
        );
        // The policy's verdict comes before the configuration's other errors.
        let none = env(&[]);
        let unresolved = "Egress policy cannot resolve provider \"azure-openai\" target: set AgentConfig.baseURL or the provider-specific endpoint environment variable.";
        let err = create_adapter_with("azure-openai", None, None, None, &none, Some(&offline)).unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.egress.map(|r| r.reason)),
            (unresolved, Some(egress::Reason::UnresolvedTarget))
        );
        assert_eq!(
            create_adapter_with("qiniu", None, None, None, &none, Some(&offline)).unwrap_err().message,
            "Egress policy denied framework-owned provider \"qiniu\" request to https://api.qnaigc.com."
        );
        assert_eq!(
            create_adapter_with("qiniu", None, Some("http://127.0.0.1:9"), None, &none, Some(&offline))
                .unwrap_err()
                .message,
            OPENAI_MISSING_KEY
        );
        assert!(create_adapter_with("nope", None, None, None, &none, Some(&offline))
            .unwrap_err()
            .message
            .starts_with("Egress policy cannot resolve provider \"nope\" target"));
        assert_eq!(
            create_adapter_with("nope", None, Some("https://x.test"), None, &none, Some(&offline)).unwrap_err().message,
            "Egress policy denied framework-owned provider \"nope\" request to https://x.test."
        );
        assert_eq!(
            create_adapter_with("nope", None, Some("http://localhost"), None, &none, Some(&offline))
                .unwrap_err()
                .message,
            "Unsupported LLM provider: nope"
        );
        // No policy: exactly create_adapter.
        let a = create_adapter_with("openai", None, None, None, &e, None).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&create_adapter("openai", None, None, None, &e).unwrap()));
        assert!(a.transport.egress.is_none());
    }

    /// The Rust fast path end to end: kernel messages in, `LlmResponse` out, on the LLM I/O
    /// runtime, against a local server.
    #[test]
    fn fast_path_chat_and_stream_on_the_io_runtime() {
        use oma_core::kernel::message::{parse_messages, Strictness};
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            for reply in [
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1}}",
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {\"id\":\"s\",\"choices\":[{\"delta\":{\"content\":\"yo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
            ] {
                let (mut sock, _) = listener.accept().unwrap();
                let (req, body) = crate::http1::read_request(&mut sock);
                bodies.push(String::from_utf8_lossy(&req[body..]).into_owned());
                sock.write_all(reply.as_bytes()).unwrap();
            }
            bodies
        });
        let adapter = std::sync::Arc::new(create_adapter("openai", Some("k"), Some(&base), None, &Env::new()).unwrap());
        let messages =
            parse_messages(r#"[{"role":"user","content":[{"type":"text","text":"q"}]}]"#, Strictness::Strict).unwrap();
        let opts = ChatOptions::from_json(r#"{"model":"m"}"#).unwrap();
        let a = adapter.clone();
        let (m2, o2) = (messages.clone(), opts.clone());
        let chat = super::super::runtime::spawn(async move { a.chat(&m2, None, &o2, &CancellationToken::new()).await });
        let r = futures_block_on(chat).unwrap().unwrap();
        assert_eq!(
            r.to_json(),
            r#"{"id":"c","content":[{"type":"text","text":"hi"}],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":2,"output_tokens":1}}"#
        );
        let stream = super::super::runtime::spawn(async move {
            let mut events = Vec::new();
            let mut sink = |e: StreamEvent| events.push(serde_json::to_string(&e).unwrap());
            adapter.stream(&messages, None, &opts, &CancellationToken::new(), &mut sink).await.unwrap();
            events
        });
        let events = futures_block_on(stream).unwrap();
        assert_eq!(events[0], r#"{"type":"text","data":"yo"}"#);
        assert!(events[1].starts_with(r#"{"type":"done","data":{"id":"s","content":[{"type":"text","text":"yo"}]"#));
        let bodies = server.join().unwrap();
        assert_eq!(bodies[0], r#"{"model":"m","messages":[{"role":"user","content":"q"}],"stream":false}"#);
    }

    /// Waits for a task of the I/O runtime from a plain thread.
    fn futures_block_on<T: Send + 'static>(h: tokio::task::JoinHandle<T>) -> Result<T, tokio::task::JoinError> {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(h)
    }

    #[test]
    fn azure_url_and_deployment() {
        let e = env(&[("AZURE_OPENAI_DEPLOYMENT", "dep 1")]);
        let a = create_adapter("azure-openai", Some("k"), Some("https://r.openai.azure.com/"), None, &e).unwrap();
        let o = ChatOptions::from_json(r#"{"model":"  "}"#).unwrap();
        let r = a.request(&[], &o, false, None).unwrap();
        assert_eq!(
            r.url,
            "https://r.openai.azure.com/openai/deployments/dep%201/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(std::str::from_utf8(&r.body).unwrap(), r#"{"model":"dep 1","messages":[],"stream":false}"#);
        let a = create_adapter("azure-openai", Some("k"), Some("https://r"), None, &env(&[])).unwrap();
        assert_eq!(a.request(&[], &o, false, None).unwrap_err().message, AZURE_NO_DEPLOYMENT);
    }
}
