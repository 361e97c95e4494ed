//! oma-llm's part of the boundary schema (`oma_core::boundary`): what lib/ reads of the LLM
//! layer, rendered into `lib/generated/boundary.js`.

use oma_core::boundary::{Section, Value};

use crate::{
    egress, providers, transport, ABORTED_MESSAGE, CALL_TIMEOUT, CALL_TIMEOUT_AGENT, CALL_TIMEOUT_CODE,
    STREAM_ENDED_EARLY,
};

/// The LLM layer's section.
pub fn section() -> Section {
    Section::new(
        "llm",
        "crates/llm/src/ (lib.rs, transport.rs, egress.rs, providers.rs)",
        "The LLM layer's texts and rules (lib/errors.js, lib/runner.js, lib/llm.js).",
    )
    .item(
        "pickChatOptions",
        "The `LLMChatOptions` fields of `o` that are set (what crosses to a native adapter).",
        Value::PickDefined(crate::CHAT_OPTION_FIELDS.iter().map(|f| f.to_string()).collect()),
    )
    .item(
        "copyChatOptions",
        "The options an adapter gets: every `LLMChatOptions` field of `o` in the runner's order, with the run's `tools` and `abortSignal`.",
        Value::CopyAll {
            fields: crate::CHAT_OPTION_FIELDS.iter().chain(&["abortSignal"]).map(|f| f.to_string()).collect(),
            given: vec!["tools".into(), "abortSignal".into()],
        },
    )
    .decoder("An error's record (`ERROR_RECORD`): a rejection's message, a stream's error.", &crate::ERROR_RECORD)
    .decoder("A stream event's record (`EVENT_RECORD`), as upstream's `{ type, data }`.", &crate::EVENT_RECORD)
    .decoder("A response's record (`RESPONSE_RECORD`, a `done` event's data).", &crate::RESPONSE_RECORD)
    .decoder("A token usage's record (`USAGE_RECORD`).", &crate::USAGE_RECORD)
    .encoders("A chat tail's long string and where it goes (`tail::LONG_STRING_RECORD`).", &crate::tail::LONG_STRING_RECORD)
    .item("abortedMessage", "The message of a request its caller aborted.", ABORTED_MESSAGE)
    .item(
        "retryable4xx",
        "The 4xx statuses a call is retried on.",
        Value::List(transport::RETRYABLE_4XX.iter().map(|&s| Value::from(s)).collect()),
    )
    .item(
        "egressCodes",
        "`EgressPolicyError.code` by `reason`.",
        Value::map(egress::Reason::ALL.iter().map(|r| (r.as_str(), r.code()))),
    )
    .item("callTimeoutCode", "`LLMCallTimeoutError.code`.", CALL_TIMEOUT_CODE)
    .item("callTimeoutAgent", "`LLMCallTimeoutError`'s message for an agent.", Value::template(CALL_TIMEOUT_AGENT))
    .item("callTimeout", "`LLMCallTimeoutError`'s message.", Value::template(CALL_TIMEOUT))
    .item("streamEndedEarly", "A native stream that ended before its final response.", STREAM_ENDED_EARLY)
    .item("defaultProvider", "`AgentConfig.provider` when unset.", providers::DEFAULT_PROVIDER)
    .item("bedrockBaseUrlIgnored", "The warning for a bedrock `baseURL`.", providers::BEDROCK_BASE_URL_IGNORED)
    .item("copilotBaseUrlIgnored", "The warning for a copilot `baseURL`.", providers::COPILOT_BASE_URL_IGNORED)
}
