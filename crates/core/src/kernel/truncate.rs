//! `truncateToolOutput` (CONTRACT §9.4): head 70 % / tail 30 % around a marker, never longer
//! than `max_chars` UTF-16 units.

use crate::json::{utf16_len, utf16_slice};

pub fn truncate_tool_output(data: &str, max_chars: usize) -> String {
    let len = utf16_len(data);
    if len <= max_chars {
        return data.to_string();
    }
    // 33 = length of the marker template without the number.
    let overhead = 33 + len.to_string().len();
    if max_chars <= overhead {
        return utf16_slice(data, 0, max_chars).to_string();
    }
    let available = max_chars - overhead;
    let head = (available as f64 * 0.7).floor() as usize;
    let tail = available - head;
    let removed = len - head - tail;
    let mut out = String::with_capacity(max_chars + 8);
    out.push_str(utf16_slice(data, 0, head));
    out.push_str("\n\n[...truncated ");
    out.push_str(&removed.to_string());
    out.push_str(" characters...]\n\n");
    out.push_str(utf16_slice(data, len - tail, len));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_example() {
        let out = truncate_tool_output(&"X".repeat(200), 50);
        assert_eq!(out, format!("{}\n\n[...truncated 186 characters...]\n\n{}", "X".repeat(9), "X".repeat(5)));
        assert_eq!(out.len(), 50);
    }

    #[test]
    fn short_and_hard_cut() {
        assert_eq!(truncate_tool_output("abc", 3), "abc");
        assert_eq!(truncate_tool_output(&"a".repeat(100), 10), "a".repeat(10));
    }

    #[test]
    fn never_exceeds_limit() {
        for n in [40usize, 41, 60, 99, 1000] {
            let data = "é".repeat(5000);
            assert!(utf16_len(&truncate_tool_output(&data, n)) <= n);
        }
    }
}
