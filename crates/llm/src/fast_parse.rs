//! `parse_messages(json, Lenient)` in two passes instead of five, for the JS adapter path
//! (`JSON.stringify(messages)` → Rust on every call; W5 measured 44 µs for a 45 KB history);
//! the usual messages (text, tool_use, tool_result blocks) in one scan without serde.
//!
//! Same results as `kernel::message::parse_messages(_, Strictness::Lenient)` for every input
//! `JSON.stringify` can produce from validated messages (the equivalence test below pins it);
//! it relies on that input being canonical `JSON.stringify` output when it re-serialises a
//! non-string value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use oma_core::json::to_js_json;
use oma_core::json::{Scan, Seen};
use oma_core::kernel::message::{Block, Message, Role};

/// A field's value: a string (borrowed when it has no escapes), null, or anything else.
enum Field<'a> {
    Str(Cow<'a, str>),
    Null,
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Field<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Field<'a>, E> {
                Ok(Field::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Field<'a>, E> {
                Ok(Field::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field<'a>, E> {
                Ok(Field::Other(Value::Bool(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field<'a>, E> {
                Ok(Field::Other(Value::from(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field<'a>, E> {
                Ok(Field::Other(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Field<'a>, E> {
                Ok(Field::Other(Value::from(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Field<'a>, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(a)).map(Field::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Field<'a>, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(a)).map(Field::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> Field<'a> {
    /// `opt_string(..).ok().flatten()`: the string, or nothing.
    fn string(self) -> Option<String> {
        match self {
            Field::Str(s) => Some(s.into_owned()),
            _ => None,
        }
    }
}

/// A message's `content`: the blocks' raw text (one scan), or null (an error, as in the kernel).
enum Content<'a> {
    Blocks(Vec<&'a RawValue>),
    Null,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Content<'a>, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(2));
                while let Some(b) = a.next_element::<&'a RawValue>()? {
                    out.push(b);
                }
                Ok(Content::Blocks(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content<'a>, E> {
                Ok(Content::Null)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(serde::Deserialize)]
struct FastMessage<'a> {
    #[serde(default, borrow)]
    role: Option<Field<'a>>,
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
}

#[derive(serde::Deserialize)]
struct FastBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Field<'a>>,
    #[serde(default, borrow)]
    text: Option<Field<'a>>,
    #[serde(default, borrow)]
    signature: Option<Field<'a>>,
    #[serde(rename = "redactedData", default, borrow)]
    redacted_data: Option<Field<'a>>,
    #[serde(default, borrow)]
    provenance: Option<Field<'a>>,
    #[serde(default, borrow)]
    id: Option<Field<'a>>,
    #[serde(default, borrow)]
    name: Option<Field<'a>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_use_id: Option<Field<'a>>,
    #[serde(default, borrow)]
    content: Option<Field<'a>>,
    #[serde(default, borrow)]
    is_error: Option<Field<'a>>,
    #[serde(default, borrow)]
    source: Option<Field<'a>>,
}

fn req(f: Option<Field>, field: &str, kind: &str) -> Result<String, String> {
    f.and_then(Field::string).ok_or_else(|| format!("a \"{kind}\" block needs a string \"{field}\""))
}

fn block(raw: &RawValue) -> Result<Block, String> {
    let text = raw.get();
    if !text.starts_with('{') {
        return Err(format!("content blocks must be objects, got {}", text.chars().take(40).collect::<String>()));
    }
    let b: FastBlock = serde_json::from_str(text).map_err(|e| format!("unreadable content block: {e}"))?;
    Ok(match typed(b)? {
        Some(block) => block,
        None => Block::Other(raw.to_owned()),
    })
}

/// The block, or `None` when it is carried as `Block::Other` (the caller has its raw text).
fn typed(b: FastBlock) -> Result<Option<Block>, String> {
    let kind = b.kind.and_then(Field::string);
    Ok(Some(match kind.as_deref() {
        Some("text") => Block::Text { text: b.text.and_then(Field::string) },
        Some("reasoning") => Block::Reasoning {
            text: b.text.and_then(Field::string).unwrap_or_default(),
            signature: b.signature.and_then(Field::string),
            redacted_data: b.redacted_data.and_then(Field::string),
            provenance: b.provenance.and_then(Field::string),
        },
        Some("tool_use") => {
            let id = req(b.id, "id", "tool_use")?;
            let name = req(b.name, "name", "tool_use")?;
            let input = match b.input {
                Some(r) if r.get().starts_with('{') => r.to_owned(),
                _ => oma_core::json::empty_object(),
            };
            Block::ToolUse { id, name, input, signature: b.signature.and_then(Field::string) }
        }
        Some("tool_result") => {
            let tool_use_id = req(b.tool_use_id, "tool_use_id", "tool_result")?;
            let content = match b.content {
                Some(Field::Str(s)) => s.into_owned(),
                Some(Field::Other(v)) => to_js_json(&v),
                // `null` arrives as `None` through `Option`, as it does in the kernel's parser.
                Some(Field::Null) | None => String::new(),
            };
            let is_error = match b.is_error {
                Some(Field::Other(Value::Bool(v))) => Some(v),
                _ => None,
            };
            Block::ToolResult { tool_use_id, content, is_error }
        }
        Some("image") => {
            let src = match b.source {
                Some(Field::Other(Value::Object(mut m))) => match (m.remove("media_type"), m.remove("data")) {
                    (Some(Value::String(t)), Some(Value::String(d))) => Some((t, d)),
                    _ => None,
                },
                _ => None,
            };
            match src {
                Some((media_type, data)) => Block::Image { media_type, data },
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    }))
}

#[derive(serde::Deserialize)]
struct OnePassMessage<'a> {
    #[serde(default, borrow)]
    role: Option<Field<'a>>,
    #[serde(default, borrow)]
    content: Option<Vec<FastBlock<'a>>>,
}

fn role_of(f: Option<Field>) -> Role {
    match f {
        Some(Field::Str(s)) if s == "assistant" => Role::Assistant,
        _ => Role::User,
    }
}

/// One scan of the text; `None` when some block must be kept as raw text or anything is
/// irregular (then the two-pass parser decides, with the kernel's error texts).
fn one_pass(json: &str) -> Option<Vec<Message>> {
    let msgs: Vec<OnePassMessage> = serde_json::from_str(json).ok()?;
    let mut out = Vec::with_capacity(msgs.len());
    for m in msgs {
        let mut content = Vec::new();
        for b in m.content.unwrap_or_default() {
            content.push(typed(b).ok()??);
        }
        out.push(Message { role: role_of(m.role), content });
    }
    Some(out)
}

/// `parse_messages(json, Strictness::Lenient)`, faster.
pub fn parse_messages_lenient(json: &str) -> Result<Vec<Message>, String> {
    // A JS string with half a surrogate pair: sent with U+FFFD there, as napi converts it.
    if let Some(fixed) = oma_core::json::replace_lone_surrogates(json) {
        return parse_messages_lenient(&fixed);
    }
    if let Some(msgs) = scanned(json) {
        return Ok(msgs);
    }
    if let Some(msgs) = one_pass(json) {
        return Ok(msgs);
    }
    two_pass(json)
}

/// `one_pass` for the usual messages (text, tool_use and tool_result blocks with string
/// fields) through `llm::scan` rather than serde's visitors; `None` for anything else, which
/// `one_pass` / `two_pass` then read.
fn scanned(json: &str) -> Option<Vec<Message>> {
    let mut s = Scan::new(json);
    let mut out = Vec::new();
    s.array(|s| {
        out.push(scanned_message(s)?);
        Some(())
    })?;
    s.at_end().then_some(out)
}

fn scanned_message(s: &mut Scan) -> Option<Message> {
    let mut role = Role::User;
    let mut content = Vec::new();
    let mut seen = Seen(0);
    s.object(|s, key| {
        let bit = match key {
            "role" => 1,
            "content" => 2,
            _ => return s.skip(),
        };
        seen.once(bit)?;
        if bit == 1 {
            if s.opt_string()?.is_some_and(|r| r == "assistant") {
                role = Role::Assistant;
            }
            Some(())
        } else {
            // A null content is the kernel's error: left to `two_pass`.
            s.array(|s| {
                content.push(scanned_block(s)?);
                Some(())
            })
        }
    })?;
    Some(Message { role, content })
}

/// A text, tool_use or tool_result block as `typed` makes it from a `FastBlock`.
fn scanned_block(s: &mut Scan) -> Option<Block> {
    let (mut kind, mut text, mut signature, mut id, mut name, mut tool_use_id, mut content) =
        (None, None, None, None, None, None, None);
    let mut input: Option<&str> = None;
    let mut is_error = None;
    let mut seen = Seen(0);
    s.object(|s, key| {
        // `FastBlock`'s fields: each may appear once.
        let bit = match key {
            "type" => 1,
            "text" => 2,
            "signature" => 4,
            "redactedData" => 8,
            "provenance" => 16,
            "id" => 32,
            "name" => 64,
            "input" => 128,
            "tool_use_id" => 256,
            "content" => 512,
            "is_error" => 1024,
            "source" => 2048,
            _ => 0,
        };
        if bit != 0 {
            seen.once(bit)?;
        }
        match bit {
            1 => kind = s.opt_string()?,
            2 => text = s.opt_string()?,
            4 => signature = s.opt_string()?,
            32 => id = s.opt_string()?,
            64 => name = s.opt_string()?,
            128 => input = Some(s.skip_raw()?),
            256 => tool_use_id = s.opt_string()?,
            512 => content = s.opt_string()?,
            1024 => is_error = s.opt_bool()?,
            _ => s.skip()?,
        }
        Some(())
    })?;
    Some(match kind.as_deref()? {
        "text" => Block::Text { text: text.map(Cow::into_owned) },
        "tool_use" => {
            let input = match input {
                Some(raw) if raw.starts_with('{') => RawValue::from_string(raw.to_string()).ok()?,
                _ => oma_core::json::empty_object(),
            };
            Block::ToolUse {
                id: id?.into_owned(),
                name: name?.into_owned(),
                input,
                signature: signature.map(Cow::into_owned),
            }
        }
        "tool_result" => Block::ToolResult {
            tool_use_id: tool_use_id?.into_owned(),
            content: content.map(Cow::into_owned).unwrap_or_default(),
            is_error,
        },
        _ => return None,
    })
}

fn two_pass(json: &str) -> Result<Vec<Message>, String> {
    let msgs: Vec<FastMessage> = serde_json::from_str(json).map_err(|e| format!("messages must be an array: {e}"))?;
    msgs.into_iter()
        .map(|m| {
            let role = role_of(m.role);
            let content = match m.content {
                Some(Content::Blocks(bs)) => bs.into_iter().map(block).collect::<Result<Vec<_>, _>>()?,
                Some(Content::Null) => return Err("\"content\" must be an array of blocks, got null".to_string()),
                None => Vec::new(),
            };
            Ok(Message { role, content })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    fn same(json: &str, errors: &mut Vec<String>) {
        let a = parse_messages(json, Strictness::Lenient);
        let b = parse_messages_lenient(json);
        let c = two_pass(json);
        assert_eq!(
            b.as_ref().map(|v| v.iter().map(Message::to_json).collect::<Vec<_>>()).ok(),
            c.as_ref().map(|v| v.iter().map(Message::to_json).collect::<Vec<_>>()).ok(),
            "{json}"
        );
        match (a, b) {
            (Ok(a), Ok(b)) => {
                let aj: Vec<String> = a.iter().map(Message::to_json).collect();
                let bj: Vec<String> = b.iter().map(Message::to_json).collect();
                assert_eq!(aj, bj, "{json}");
                let roles = |v: &[Message]| v.iter().map(|m| m.role).collect::<Vec<_>>();
                assert_eq!(roles(&a), roles(&b), "{json}");
            }
            (Err(a), Err(b)) => errors.push(format!("{a} | {b}")),
            (a, b) => panic!("{json}: kernel {:?} vs fast {:?}", a.map(|_| ()), b.map(|_| ())),
        }
    }

    #[test]
    fn the_scanner_reads_the_usual_messages_as_one_pass_does() {
        let show = |v: Option<Vec<Message>>| {
            v.map(|v| v.iter().map(|m| format!("{:?} {}", m.role, m.to_json())).collect::<Vec<_>>())
        };
        let taken = [
            r#"[]"#,
            r#"[{"role":"user","content":[{"type":"text","text":"Look up \"k\" é 😀 \u00e9"}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"text","text":""},{"type":"tool_use","id":"c1","name":"f","input":{"k":[1,-2.5e3,{"n":null}],"b":true}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"","is_error":true},{"type":"tool_result","tool_use_id":"c2","content":null,"is_error":null},{"type":"tool_result","tool_use_id":"c3"}]}]"#,
            r#" [ { "content" : [ { "type" : "tool_use" , "id" : "a" , "name" : "g" , "input" : [ 1 ] , "signature" : "s" } ] , "role" : null } ] "#,
            r#"[{"role":"system","content":[{"type":"text","text":null,"extra":{"deep":[1,{"x":"y"}]},"provenance":5,"source":{}}]},{"content":[]},{"role":"assistant"}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"f","input":null},{"type":"tool_use","id":"y","name":"f"}]}]"#,
        ];
        for json in taken {
            let fast = scanned(json);
            assert!(fast.is_some(), "scanner refused {json}");
            assert_eq!(show(fast), show(one_pass(json)), "{json}");
        }
        let declined = [
            r#"[{"role":"user","content":null}]"#,
            r#"[{"role":5,"content":[]}]"#,
            r#"[{"role":"user","role":"user","content":[]}]"#,
            r#"[{"content":[{"type":"text","text":"a","text":"b"}]}]"#,
            r#"[{"content":[{"type":"text","text":"a","source":1,"source":2}]}]"#,
            r#"[{"content":[{"type":"text","text":5}]}]"#,
            r#"[{"content":[{"type":"reasoning","text":"r"}]}]"#,
            r#"[{"content":[{"type":"image","source":{"media_type":"image/png","data":"AA=="}}]}]"#,
            r#"[{"content":[{"text":"no type"}]}]"#,
            r#"[{"content":[{"type":"tool_use","name":"f","input":{}}]}]"#,
            r#"[{"content":[{"type":"tool_result","tool_use_id":"1","content":{"x":1}}]}]"#,
            r#"[{"content":[{"type":"tool_result","tool_use_id":"1","is_error":"yes"}]}]"#,
            r#"[{"content":[1]}]"#,
            r#"[{"content":[{"type":"text","text":"\ud800"}]}]"#,
            r#"{"not":"an array"}"#,
            r#"[{"content":[]}] x"#,
        ];
        for json in declined {
            assert!(scanned(json).is_none(), "scanner took {json}");
        }
    }

    #[test]
    fn equivalent_to_the_kernel_parser() {
        let cases = [
            r#"[]"#,
            r#"[{"role":"user","content":[{"type":"text","text":"hi \"q\" \\ \n é"}]}]"#,
            r#"[{"role":"user","content":[{"type":"text"},{"type":"text","text":null},{"type":"text","text":5},{"type":"text","text":{"a":1}}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"reasoning","text":"t","signature":"s","redactedData":"","provenance":"anthropic"},{"type":"reasoning"},{"type":"reasoning","text":1,"signature":2}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{"b":[1,2.5,{"c":null}],"a":"x"},"signature":"g"},{"type":"tool_use","id":"2","name":"g","input":[1]},{"type":"tool_use","id":"3","name":"h"}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":7,"name":"f","input":{}}]}]"#,
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"ok","is_error":true},{"type":"tool_result","tool_use_id":"2","content":null,"is_error":"yes"},{"type":"tool_result","tool_use_id":"3","content":{"x":[1,2]}},{"type":"tool_result","tool_use_id":"4","content":12.5},{"type":"tool_result","tool_use_id":"5"}]}]"#,
            r#"[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]"#,
            r#"[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"image","source":{"media_type":"image/png"}},{"type":"image"}]}]"#,
            r#"[{"role":"user","content":[{"type":"document","url":"x"},{"type":5},{"foo":1},{"type":null}]}]"#,
            r#"[{"role":"system","content":[{"type":"text","text":"s"}]},{"content":[]},{"role":"assistant"}]"#,
            r#"[{"role":"user","content":null}]"#,
            r#"[{"role":"user","content":[1]}]"#,
            r#"[{"role":"user","content":[{"type":"text","text":"a","extra":{"deep":[1,{"x":"y"}]}}]}]"#,
            r#"{"not":"an array"}"#,
            r#" [ { "content" : [ { "type" : "tool_result" , "tool_use_id" : "1" , "content" : "a\nb" , "is_error" : false } ] , "role" : "user" } ] "#,
            r#"[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":null,"extra":[{"a":1}]}]}]"#,
        ];
        let mut errors = Vec::new();
        for c in cases {
            same(c, &mut errors);
        }
        // Only the inputs that are errors for the kernel too (missing ids, null content, a
        // non-object block, not an array, a block field given twice) may fail.
        assert_eq!(errors.len(), 6, "{errors:#?}");
        // A long history, as the JS adapter path sends it.
        let p = "x".repeat(2048);
        let mut msgs = vec![r#"{"role":"user","content":[{"type":"text","text":"go"}]}"#.to_string()];
        for i in 0..20 {
            msgs.push(format!(r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"c{i}","name":"f","input":{{"k":"v{i}"}}}}]}}"#));
            msgs.push(format!(r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c{i}","content":"{p}\n\"{i}\""}}]}}"#));
        }
        same(&format!("[{}]", msgs.join(",")), &mut errors);
        assert!(scanned(&format!("[{}]", msgs.join(","))).is_some());
        assert_eq!(errors.len(), 6);
    }
}
