//! One walk over the conversation for every provider's request body.
//!
//! The walk visits the messages and their blocks in order and hands each block to the
//! provider's `Dialect`, typed: a provider writes only how a text, an image, a tool call, a tool
//! result or a reasoning block looks on its wire, and where a message begins and ends. The
//! shared rules live here and in `reasoning_fallback`: which reasoning goes back natively, as a
//! `<thinking>` text or not at all (`Echo`), that an unknown block type is an error unless the
//! provider leaves it out (`Dialect::other`), and the list shape three of the four providers
//! share (`PartList`: `[{…[part,part]},…]`), and for the two whose messages are
//! `{"role":…,"content":[…]}` (Anthropic, Bedrock) the whole dialect but the blocks' spelling
//! (`content_messages`, `ContentBlocks`). OpenAI's dialect (`openai::Entries`) is the one
//! that reshapes: a user message's tool results become `tool` messages, an assistant message's
//! texts one `content`.

use std::marker::PhantomData;

use serde_json::value::RawValue;

use super::reasoning_fallback::{outbound, resolve_max_chars, MaxChars, Outbound};
use super::{ChatOptions, LlmError};
use oma_core::json::push_json_string;
use oma_core::kernel::message::{Block, Message, Role};

/// How a dialect spells the reasoning it echoes natively (its own, §15.3), in `push_spliced`
/// pieces: a signed block `head` text `between` signature `tail`, a redacted one `head` data
/// `tail` (`None`: no redacted form; `Echo` then never gives one, see `Echo::new`).
pub struct NativeReasoning {
    pub signed: [&'static str; 3],
    pub redacted: Option<[&'static str; 2]>,
}

/// A reasoning block's fields, as a dialect receives them.
#[derive(Clone, Copy)]
pub struct Reasoning<'m> {
    pub text: &'m str,
    pub signature: Option<&'m str>,
    pub redacted_data: Option<&'m str>,
    pub provenance: Option<&'m str>,
}

/// How a provider writes a conversation. The walk calls `begin`, then one method per block in
/// the message's order, then `end`, for each message in turn.
pub trait Dialect<'m> {
    fn begin(&mut self, role: Role);
    /// A text block (`None`: its `text` was `undefined`).
    fn text(&mut self, text: Option<&'m str>);
    fn image(&mut self, media_type: &'m str, data: &'m str);
    fn tool_use(&mut self, id: &'m str, name: &'m str, input: &'m RawValue, signature: Option<&'m str>);
    fn tool_result(&mut self, tool_use_id: &'m str, content: &'m str, is_error: Option<bool>);
    fn reasoning(&mut self, r: Reasoning<'m>);
    /// A block type the kernel does not know (carried through from the caller's history): an
    /// error unless the provider leaves such blocks out.
    fn other(&mut self, raw: &'m RawValue) -> Result<(), LlmError> {
        Err(LlmError::other(format!("Unhandled content block type: {}", raw.get())))
    }
    fn end(&mut self);
}

/// Visits `messages` in order with `d`.
pub fn walk<'m>(messages: &'m [Message], d: &mut impl Dialect<'m>) -> Result<(), LlmError> {
    for m in messages {
        walk_message(m, d)?;
    }
    Ok(())
}

/// Visits one message (a run's cached list grows a message at a time).
pub fn walk_message<'m>(m: &'m Message, d: &mut impl Dialect<'m>) -> Result<(), LlmError> {
    d.begin(m.role);
    for b in &m.content {
        match b {
            Block::Text { text } => d.text(text.as_deref()),
            Block::Image { media_type, data } => d.image(media_type, data),
            Block::ToolUse { id, name, input, signature } => d.tool_use(id, name, input, signature.as_deref()),
            Block::ToolResult { tool_use_id, content, is_error } => d.tool_result(tool_use_id, content, *is_error),
            Block::Reasoning { text, signature, redacted_data, provenance } => d.reasoning(Reasoning {
                text,
                signature: signature.as_deref(),
                redacted_data: redacted_data.as_deref(),
                provenance: provenance.as_deref(),
            }),
            Block::Other(raw) => d.other(raw)?,
        }
    }
    d.end();
    Ok(())
}

/// The reasoning echo of a provider that writes its own reasoning back natively (§15.3):
/// `name` is the provenance its own blocks carry; `redacted`: it has a redacted form.
pub struct Echo<'n> {
    name: &'n str,
    redacted: bool,
    preserve: bool,
    max_chars: MaxChars,
}

impl<'n> Echo<'n> {
    pub fn new(opts: &ChatOptions, name: &'n str, redacted: bool) -> Echo<'n> {
        Echo {
            name,
            redacted,
            preserve: opts.preserve_reasoning(),
            max_chars: resolve_max_chars(opts.compress_reasoning_text.as_ref()),
        }
    }

    pub fn of<'m>(&self, r: Reasoning<'m>) -> Outbound<'m> {
        outbound(
            r.text,
            r.signature,
            r.redacted_data,
            r.provenance,
            self.name,
            self.redacted,
            self.preserve,
            self.max_chars,
        )
    }

    /// Writes `r` as a part of `f` when it goes back natively, spelled as `native` says; returns
    /// the `<thinking>` text when it goes back as text, for the dialect to write as its text.
    pub fn write<'m>(&self, r: Reasoning<'m>, f: &mut PartList, native: &NativeReasoning) -> Option<String> {
        match self.of(r) {
            Outbound::Signed { text, signature } => {
                let [head, between, tail] = native.signed;
                push_spliced(f.part(), head, &[(text, between), (signature, tail)]);
            }
            Outbound::Redacted(data) => {
                if let Some([head, tail]) = native.redacted {
                    push_spliced(f.part(), head, &[(data, tail)]);
                }
            }
            Outbound::Inline(inline) => return Some(inline),
            Outbound::Skip => {}
        }
        None
    }
}

/// A text block as Anthropic's content and OpenAI's content parts both spell it,
/// `{"type":"text","text":…}`, with no `text` key for a block that has none.
#[inline]
pub fn push_text_block(p: &mut String, text: Option<&str>) {
    p.push_str("{\"type\":\"text\"");
    if let Some(t) = text {
        p.push_str(",\"text\":");
        push_json_string(p, t);
    }
    p.push('}');
}

/// How a provider whose messages are `{"role":…,"content":[block,…]}` (Anthropic, Bedrock)
/// spells each block, written into the block's part `p`. The list, the message entries and the
/// reasoning rule are [`content_messages`]'s.
pub trait ContentBlocks {
    /// The reasoning it echoes natively (its redacted form too).
    const REASONING: NativeReasoning;
    /// A text block (`None`: its `text` was `undefined`); also a reasoning block's `<thinking>`
    /// text fallback.
    fn text(p: &mut String, text: Option<&str>);
    fn image(p: &mut String, media_type: &str, data: &str);
    fn tool_use(p: &mut String, id: &str, name: &str, input: &RawValue);
    fn tool_result(p: &mut String, tool_use_id: &str, content: &str, is_error: Option<bool>);
}

/// `messages` as a JSON list of `{"role":…,"content":[…]}` entries, each block spelled by `B`;
/// `capacity`: the provider's guess at the text's size.
pub fn content_messages<B: ContentBlocks>(
    messages: &[Message],
    opts: &ChatOptions,
    name: &str,
    capacity: usize,
) -> Result<String, LlmError> {
    let mut d =
        Content::<B> { f: PartList::new(capacity, false), echo: Echo::new(opts, name, true), blocks: PhantomData };
    walk(messages, &mut d)?;
    Ok(d.f.finish())
}

struct Content<'n, B> {
    f: PartList,
    echo: Echo<'n>,
    blocks: PhantomData<B>,
}

impl<'m, B: ContentBlocks> Dialect<'m> for Content<'_, B> {
    fn begin(&mut self, role: Role) {
        self.f.open(match role {
            Role::User => "{\"role\":\"user\",\"content\":[",
            Role::Assistant => "{\"role\":\"assistant\",\"content\":[",
        });
    }

    fn text(&mut self, text: Option<&str>) {
        B::text(self.f.part(), text);
    }

    fn image(&mut self, media_type: &str, data: &str) {
        B::image(self.f.part(), media_type, data);
    }

    fn tool_use(&mut self, id: &str, name: &str, input: &RawValue, _signature: Option<&str>) {
        B::tool_use(self.f.part(), id, name, input);
    }

    fn tool_result(&mut self, tool_use_id: &str, content: &str, is_error: Option<bool>) {
        B::tool_result(self.f.part(), tool_use_id, content, is_error);
    }

    fn reasoning(&mut self, r: Reasoning<'m>) {
        if let Some(inline) = self.echo.write(r, &mut self.f, &B::REASONING) {
            B::text(self.f.part(), Some(&inline));
        }
    }

    fn end(&mut self) {
        self.f.close();
    }
}

/// A block written as fixed JSON text with string values between: `head`, then for each
/// `(value, after)` the value as a JSON string and `after` as it is. Every dialect spells its
/// blocks this way (`{"type":"image",…,"media_type":` media `,"data":` data `}}`); one loop
/// instead of a push per piece in each of them.
#[inline]
pub fn push_spliced(p: &mut String, head: &str, rest: &[(&str, &str)]) {
    p.push_str(head);
    for (value, after) in rest {
        push_json_string(p, value);
        p.push_str(after);
    }
}

/// `[{"text":…}]`: a text as the one part of a list, as Bedrock's `system` and Gemini's
/// `systemInstruction.parts` take it.
pub fn push_text_parts(out: &mut String, text: &str) {
    push_spliced(out, "[{\"text\":", &[(text, "}]")]);
}

/// The list shape Anthropic, Bedrock and Gemini share: `[{<head>[part,part,…]},…]`, a message
/// per entry, its parts comma-separated.
pub struct PartList {
    pub out: String,
    /// Where the open message's entry starts (its separator included).
    start: usize,
    parts: usize,
    /// Whether a message with no parts is left out (Gemini rejects one).
    drop_empty: bool,
}

impl PartList {
    pub fn new(capacity: usize, drop_empty: bool) -> PartList {
        let mut out = String::with_capacity(capacity);
        out.push('[');
        PartList { out, start: 0, parts: 0, drop_empty }
    }

    /// Opens a message's entry with `head` (`{"role":"user","content":[`).
    pub fn open(&mut self, head: &str) {
        self.start = self.out.len();
        if self.out.len() > 1 {
            self.out.push(',');
        }
        self.out.push_str(head);
        self.parts = 0;
    }

    /// Where the next part of the open message is written.
    pub fn part(&mut self) -> &mut String {
        if self.parts > 0 {
            self.out.push(',');
        }
        self.parts += 1;
        &mut self.out
    }

    pub fn close(&mut self) {
        if self.parts == 0 && self.drop_empty {
            self.out.truncate(self.start);
        } else {
            self.out.push_str("]}");
        }
    }

    pub fn finish(mut self) -> String {
        self.out.push(']');
        self.out
    }
}

#[cfg(test)]
mod tests {
    /// A conversation with every block kind, the reasoning in each form (own and signed, own and
    /// redacted, another provider's, empty), tool ids Gemini made up, and messages that end up
    /// empty.
    const EVERY: &str = r#"[
 {"role":"user","content":[{"type":"text","text":"hi \"q\" é"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]},
 {"role":"assistant","content":[{"type":"reasoning","text":"mine","signature":"SIG","provenance":"P"},{"type":"reasoning","text":"","redactedData":"RED","provenance":"P"},{"type":"reasoning","text":"theirs","provenance":"other"},{"type":"reasoning","text":"","provenance":"other"},{"type":"text","text":"let me"},{"type":"tool_use","id":"c1","name":"f","input":{"x":1},"signature":"TS"},{"type":"tool_use","id":"gemini_call_7","name":"g","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"out","is_error":true},{"type":"tool_result","tool_use_id":"gemini_call_7","content":"ok","is_error":false},{"type":"tool_result","tool_use_id":"c9","content":"x"},{"type":"text","text":"and"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"BB"}}]},
 {"role":"user","content":[{"type":"text"}]},
 {"role":"assistant","content":[{"type":"reasoning","text":"","provenance":"other"}]},
 {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"reasoning","text":"mid","provenance":"x"},{"type":"text","text":"b"},{"type":"reasoning","text":"end","provenance":"P"}]},
 {"role":"user","content":[{"type":"text","text":"only"},{"type":"reasoning","text":"r","provenance":"P"}]},
 {"role":"user","content":[]}
]"#;
    /// Block types no provider knows.
    const OTHER: &str = r#"[{"role":"user","content":[{"type":"text","text":"a"},{"type":"document","x":1}]},{"role":"user","content":[{"type":"document","x":2}]}]"#;

    /// Every provider's messages for both conversations under three option sets, one case a line
    /// pair (what, then the body or the error).
    fn bodies() -> String {
        use crate::{anthropic, bedrock, gemini, openai, ChatOptions};
        use oma_core::kernel::message::{parse_messages, Strictness};
        let mut out = String::new();
        let mut case = |what: String, body: Result<String, crate::LlmError>| {
            out.push_str(&what);
            out.push('\n');
            match body {
                Ok(b) => out.push_str(&b),
                Err(e) => out.push_str(&format!("error: {}", e.message)),
            }
            out.push('\n');
        };
        for (c, conv) in [("every", EVERY), ("other", OTHER)] {
            let m = parse_messages(conv, Strictness::Lenient).unwrap();
            for o in [
                r#"{"model":"m","systemPrompt":"sys","preserveReasoningAsText":true}"#,
                r#"{"model":"m","preserveReasoningAsText":true,"compressReasoningText":{"minChars":20}}"#,
                r#"{"model":"m"}"#,
            ] {
                let opts = ChatOptions::from_json(o).unwrap();
                case(format!("anthropic {c} {o}"), anthropic::request_body(&m, &opts, "P", false));
                case(format!("bedrock {c} {o}"), bedrock::request_body(&m, &opts, "P"));
                case(format!("gemini {c} {o}"), Ok(gemini::request_body(&m, &opts, "P")));
                for tool_use_only in [true, false] {
                    let ob = openai::outbound(&opts, "P", tool_use_only);
                    let list = openai::message_list_json(&m, opts.system_prompt.as_ref(), ob.as_ref());
                    case(format!("openai {c} {o} tool-use-only {tool_use_only}"), Ok(list));
                }
            }
        }
        out
    }

    /// `provider`'s cases of `bodies()` against the text the providers' own walks wrote before
    /// this module existed (`bodies.txt`): the walk must not change a byte of any request.
    fn same_bodies(provider: &str) {
        let pairs = |text: &str| -> Vec<(String, String)> {
            let lines: Vec<&str> = text.lines().collect();
            lines
                .chunks(2)
                .filter(|c| c[0].starts_with(provider))
                .map(|c| (c[0].to_string(), c[1].to_string()))
                .collect()
        };
        let (got, want) = (pairs(&bodies()), pairs(include_str!("bodies.txt")));
        assert_eq!(got.len(), 6 * if provider == "openai" { 2 } else { 1 });
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w);
        }
        assert_eq!(got.len(), want.len());
    }

    #[test]
    fn anthropic_bodies_are_unchanged() {
        same_bodies("anthropic");
    }

    #[test]
    fn bedrock_bodies_are_unchanged() {
        same_bodies("bedrock");
    }

    #[test]
    fn gemini_bodies_are_unchanged() {
        same_bodies("gemini");
    }

    #[test]
    fn openai_bodies_are_unchanged() {
        same_bodies("openai");
    }
}
