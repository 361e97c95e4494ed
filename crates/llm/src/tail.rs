//! A chat tail's long strings. An adapter object's `chat` sends the messages that are new since
//! its last call as JSON (`lib/llm.js` `tailWire`); their long tool results and texts cross
//! beside that JSON instead, each as a [`LONG_STRING_RECORD`] made by the generated encoders,
//! and the JSON holds `""` in their place. (V8's `JSON.stringify` checks every character of a
//! string for escapes, ≈ 1.4 ns each, 2.8 µs for a 2 KB tool result; napi copies a string at
//! memory speed.) [`put_long_strings`] puts each back where its blank is.

use oma_core::boundary::record::{Field, Kind, Layout, Ty};
use oma_core::kernel::message::{Block, Message};

const PLACE: &[Field] = &[Field::new("message", Ty::Num), Field::new("block", Ty::Num), Field::new("text", Ty::Str)];

/// A long string of a chat tail and where it goes: `[kind, message, block, text]`, the message
/// and block indices within the tail; the kind says which string of the block it is.
pub static LONG_STRING_RECORD: Layout = Layout {
    section: "llm",
    name: "longString",
    tag: Some("kind"),
    kinds: &[Kind { name: "toolResult", fields: PLACE }, Kind { name: "text", fields: PLACE }],
};

/// [`LONG_STRING_RECORD`]'s codes.
const TOOL_RESULT: u32 = 0;
const TEXT: u32 = 1;

/// The text when the long strings do not fit the messages they were cut from.
pub const LONG_OUT_OF_STEP: &str = "oma-kernel: long strings out of step with the messages";

/// Puts each long string (a [`LONG_STRING_RECORD`]: kind, message, block, text) where the
/// tail's JSON had its `""`: the block there must be an empty tool result or text, as the kind
/// says.
pub fn put_long_strings(
    tail: &mut [Message],
    long: impl IntoIterator<Item = (u32, u32, u32, String)>,
) -> Result<(), &'static str> {
    for (kind, i, j, s) in long {
        let block = tail.get_mut(i as usize).and_then(|m| m.content.get_mut(j as usize)).ok_or(LONG_OUT_OF_STEP)?;
        match (kind, block) {
            (TOOL_RESULT, Block::ToolResult { content, .. }) if content.is_empty() => *content = s,
            (TEXT, Block::Text { text: Some(t) }) if t.is_empty() => *t = s,
            _ => return Err(LONG_OUT_OF_STEP),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    fn tail() -> Vec<Message> {
        parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":""},{"type":"text","text":""}]}]"#,
            Strictness::Lenient,
        )
        .unwrap()
    }

    #[test]
    fn the_codes_are_the_layouts() {
        assert_eq!(LONG_STRING_RECORD.code("toolResult"), TOOL_RESULT as usize);
        assert_eq!(LONG_STRING_RECORD.code("text"), TEXT as usize);
    }

    #[test]
    fn long_strings_go_where_their_blanks_are() {
        let mut t = tail();
        let long = ["R".repeat(100_000), "T".repeat(70_000)];
        put_long_strings(&mut t, [(TOOL_RESULT, 1, 0, long[0].clone()), (TEXT, 1, 1, long[1].clone())]).unwrap();
        match &t[1].content[..] {
            [Block::ToolResult { content, .. }, Block::Text { text: Some(text) }] => {
                assert_eq!((content, text), (&long[0], &long[1]));
            }
            other => panic!("{other:?}"),
        }
        // Nothing to put: nothing changes.
        let mut u = tail();
        put_long_strings(&mut u, []).unwrap();
        assert_eq!(format!("{u:?}"), format!("{:?}", tail()));
    }

    #[test]
    fn long_strings_out_of_step_are_refused() {
        let x = || "x".to_string();
        // Beyond the messages or their blocks.
        assert_eq!(put_long_strings(&mut tail(), [(TOOL_RESULT, 2, 0, x())]), Err(LONG_OUT_OF_STEP));
        assert_eq!(put_long_strings(&mut tail(), [(TEXT, 1, 2, x())]), Err(LONG_OUT_OF_STEP));
        // A block that is not blank, or not of the kind the record names.
        assert_eq!(put_long_strings(&mut tail(), [(TEXT, 0, 0, x())]), Err(LONG_OUT_OF_STEP));
        assert_eq!(put_long_strings(&mut tail(), [(TEXT, 1, 0, x())]), Err(LONG_OUT_OF_STEP));
        assert_eq!(put_long_strings(&mut tail(), [(TOOL_RESULT, 1, 1, x())]), Err(LONG_OUT_OF_STEP));
        assert_eq!(put_long_strings(&mut tail(), [(7, 1, 0, x())]), Err(LONG_OUT_OF_STEP));
    }
}
