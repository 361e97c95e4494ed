//! `estimateTokens`: a cheap chars/4 estimate over every block (CONTRACT §3.1).

use super::message::Message;

pub fn estimate_chars(messages: &[Message]) -> usize {
    messages.iter().flat_map(|m| m.content.iter()).map(|b| b.estimate_chars()).sum()
}

pub fn estimate_tokens(messages: &[Message]) -> u64 {
    estimate_chars(messages).div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::message::{parse_messages, Strictness};

    #[test]
    fn counts_each_block_kind() {
        let m = parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"abcde"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]},
                {"role":"assistant","content":[{"type":"tool_use","id":"1","name":"t","input":{"a":1}},{"type":"reasoning","text":"rr"}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"xyz"}]}]"#,
            Strictness::Strict,
        )
        .unwrap();
        // 5 + 64 + len('{"a":1}')=7 + 2 + 3 = 81 → ceil(81/4) = 21
        assert_eq!(estimate_tokens(&m), 21);
        assert_eq!(estimate_tokens(&[]), 0);
    }
}
