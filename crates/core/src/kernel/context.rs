//! Context management (CONTRACT §5.6): sliding window, summarize, compact and the
//! consumed-tool-result compression. Strategies never copy the JS conversation: they return a
//! `Plan` that says which messages and blocks to keep (by index) and which to create, so the
//! JS mirror is rebuilt from its own objects and the Rust history from its own blocks.

use std::collections::HashMap;

use super::message::{Block, Message, Role};
use super::tokens::estimate_tokens;
use crate::json::{js_trim, js_trim_end, utf16_len, utf16_prefix};

#[derive(Debug, Clone)]
pub enum PlanBlock {
    Keep(usize),
    New(Block),
}

#[derive(Debug, Clone)]
pub enum PlanMsg {
    Keep(usize),
    New { role: Role, src: Option<usize>, content: Vec<PlanBlock> },
}

pub type Plan = Vec<PlanMsg>;

pub fn apply(conv: &[Message], plan: &Plan) -> Vec<Message> {
    plan.iter()
        .map(|p| match p {
            PlanMsg::Keep(i) => conv[*i].clone(),
            PlanMsg::New { role, src, content } => Message {
                role: *role,
                content: content
                    .iter()
                    .map(|b| match b {
                        PlanBlock::Keep(j) => conv[src.expect("kept block needs a source")].content[*j].clone(),
                        PlanBlock::New(b) => b.clone(),
                    })
                    .collect(),
            },
        })
        .collect()
}

/// `[i, {"role":…,"src":i,"content":[j, {block}, …]}, …]`, read by the JS driver.
pub fn plan_json(plan: &Plan) -> String {
    let mut out = String::from("[");
    for (k, p) in plan.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        match p {
            PlanMsg::Keep(i) => out.push_str(&i.to_string()),
            PlanMsg::New { role, src, content } => {
                out.push_str("{\"role\":\"");
                out.push_str(role.as_str());
                out.push('"');
                if let Some(s) = src {
                    out.push_str(",\"src\":");
                    out.push_str(&s.to_string());
                }
                out.push_str(",\"content\":[");
                for (n, b) in content.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    match b {
                        PlanBlock::Keep(j) => out.push_str(&j.to_string()),
                        PlanBlock::New(b) => out.push_str(&serde_json::to_string(b).unwrap()),
                    }
                }
                out.push_str("]}");
            }
        }
    }
    out.push(']');
    out
}

pub fn is_identity(plan: &Plan, len: usize) -> bool {
    plan.len() == len && plan.iter().enumerate().all(|(i, p)| matches!(p, PlanMsg::Keep(j) if *j == i))
}

fn first_user(conv: &[Message]) -> Option<usize> {
    conv.iter().position(|m| m.role == Role::User)
}

/// PREPEND of §5.6: put `prefix` in front of the first user message of `idxs`.
fn prepend(conv: &[Message], idxs: &[usize], prefix: &str) -> Vec<PlanMsg> {
    match idxs.iter().position(|&i| conv[i].role == Role::User) {
        None => {
            let mut out = vec![PlanMsg::New {
                role: Role::Assistant,
                src: None,
                content: vec![PlanBlock::New(Block::text(js_trim_end(prefix)))],
            }];
            out.extend(idxs.iter().map(|&i| PlanMsg::Keep(i)));
            out
        }
        Some(p) => idxs
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                if k == p {
                    let mut content = vec![PlanBlock::New(Block::text(prefix))];
                    content.extend((0..conv[i].content.len()).map(PlanBlock::Keep));
                    PlanMsg::New { role: Role::User, src: Some(i), content }
                } else {
                    PlanMsg::Keep(i)
                }
            })
            .collect(),
    }
}

/// Atomic turns: an assistant tool_use message plus the tool_result message answering it.
fn group_sizes(conv: &[Message], idxs: &[usize]) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut k = 0;
    while k < idxs.len() {
        let m = &conv[idxs[k]];
        let paired = m.role == Role::Assistant
            && m.has_tool_use()
            && idxs.get(k + 1).is_some_and(|&n| conv[n].role == Role::User && conv[n].has_tool_result());
        let size = if paired { 2 } else { 1 };
        sizes.push(size);
        k += size;
    }
    sizes
}

pub fn sliding_window(conv: &[Message], max_turns: f64) -> Option<Plan> {
    // Written so that NaN (like 0 or a negative count) keeps the whole conversation.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    let keep_all = !(max_turns > 0.0);
    if keep_all {
        return None;
    }
    let fu = first_user(conv);
    let after: Vec<usize> = match fu {
        Some(f) => (f + 1..conv.len()).collect(),
        None => (0..conv.len()).collect(),
    };
    let target = max_turns * 2.0;
    if after.len() as f64 <= target {
        return None;
    }
    let sizes = group_sizes(conv, &after);
    let mut sum = 0usize;
    let mut cutoff_group = 0;
    for g in (0..sizes.len()).rev() {
        sum += sizes[g];
        if sum as f64 >= target {
            cutoff_group = g;
            break;
        }
    }
    let kept_start: usize = sizes[..cutoff_group].iter().sum();
    let kept = &after[kept_start..];
    let mut plan: Plan = fu.map(PlanMsg::Keep).into_iter().collect();
    if cutoff_group == 0 {
        plan.extend(kept.iter().map(|&i| PlanMsg::Keep(i)));
    } else {
        let prefix = format!("[Earlier conversation history truncated — {cutoff_group} turn(s) removed]\n\n");
        plan.extend(prepend(conv, kept, &prefix));
    }
    (!is_identity(&plan, conv.len())).then_some(plan)
}

pub const SUMMARY_INSTRUCTIONS: &str = "Summarize the following conversation history for an LLM.\n- Preserve user goals, constraints, and decisions.\n- Keep key tool outputs and unresolved questions.\n- Use concise bullets.\n- Do not fabricate details.";

pub struct SummaryCache {
    pub signature: String,
    pub prefix: String,
}

pub enum Summarize {
    Unchanged,
    Plan(Plan),
    /// A summary call is needed: send `input_json` (one user message) to the model.
    Call {
        signature: String,
        input_json: String,
        first_user: usize,
        recent: Vec<usize>,
    },
}

pub fn summarize(conv: &[Message], max_tokens: f64, cache: Option<&SummaryCache>) -> Summarize {
    if estimate_tokens(conv) as f64 <= max_tokens || conv.len() < 4 {
        return Summarize::Unchanged;
    }
    let Some(fu) = first_user(conv) else { return Summarize::Unchanged };
    if fu == conv.len() - 1 {
        return Summarize::Unchanged;
    }
    let rest: Vec<usize> = (fu + 1..conv.len()).collect();
    if rest.len() < 2 {
        return Summarize::Unchanged;
    }
    let split = 2.max(rest.len() / 4 * 2);
    let (old, recent) = rest.split_at(split.min(rest.len()));
    let signature: Vec<String> = old
        .iter()
        .map(|&i| {
            let m = &conv[i];
            if m.content.iter().any(|b| matches!(b, Block::Image { .. })) {
                let content = m
                    .content
                    .iter()
                    .map(|b| match b {
                        Block::Image { media_type, .. } => Block::text(format!("[image: {media_type}]")),
                        other => other.clone(),
                    })
                    .collect();
                Message { role: m.role, content }.to_json()
            } else {
                m.to_json()
            }
        })
        .collect();
    let signature = signature.join("\n");
    if let Some(c) = cache {
        if c.signature == signature {
            return Summarize::Plan(summary_plan(conv, fu, recent, &c.prefix));
        }
    }
    let input = Message {
        role: Role::User,
        content: vec![Block::text(SUMMARY_INSTRUCTIONS), Block::text(format!("\n\nConversation:\n{signature}"))],
    };
    Summarize::Call { signature, input_json: format!("[{}]", input.to_json()), first_user: fu, recent: recent.to_vec() }
}

/// The prefix stored in the cache for a summary answer's text.
pub fn summary_prefix(response_text: &str) -> String {
    let t = js_trim(response_text);
    if t.is_empty() {
        "[Conversation summary unavailable]".to_string()
    } else {
        format!("[Conversation summary]\n{t}")
    }
}

pub fn summary_plan(conv: &[Message], first_user: usize, recent: &[usize], prefix: &str) -> Plan {
    let mut plan = vec![PlanMsg::Keep(first_user)];
    plan.extend(prepend(conv, recent, &format!("{prefix}\n\n")));
    plan
}

#[derive(Debug, Clone)]
pub struct CompactConfig {
    pub max_tokens: f64,
    pub preserve_recent_turns: f64,
    pub min_tool_result_chars: f64,
    pub min_text_block_chars: f64,
    pub text_block_excerpt_chars: f64,
}

fn tool_names(conv: &[Message], range: std::ops::Range<usize>) -> HashMap<&str, &str> {
    let mut map = HashMap::new();
    for m in &conv[range] {
        if m.role != Role::Assistant {
            continue;
        }
        for b in &m.content {
            if let Block::ToolUse { id, name, .. } = b {
                map.insert(id.as_str(), name.as_str());
            }
        }
    }
    map
}

pub fn compact(conv: &[Message], cfg: &CompactConfig) -> Option<Plan> {
    if estimate_tokens(conv) as f64 <= cfg.max_tokens {
        return None;
    }
    let f = first_user(conv)?;
    if f == conv.len() - 1 {
        return None;
    }
    let mut boundary = conv.len();
    let mut pairs = 0f64;
    let mut i = conv.len() - 1;
    while i > f && pairs < cfg.preserve_recent_turns {
        if conv[i].role == Role::User && conv[i - 1].role == Role::Assistant {
            pairs += 1.0;
            boundary = i - 1;
        }
        i -= 1;
    }
    if boundary <= f + 1 {
        return None;
    }
    let names = tool_names(conv, f + 1..boundary);
    let excerpt = cfg.text_block_excerpt_chars.max(0.0) as usize;
    let mut changed = false;
    let mut plan: Plan = Vec::with_capacity(conv.len());
    for (idx, m) in conv.iter().enumerate() {
        if idx <= f || idx >= boundary {
            plan.push(PlanMsg::Keep(idx));
            continue;
        }
        let mut any = false;
        let content: Vec<PlanBlock> = m
            .content
            .iter()
            .enumerate()
            .map(|(j, b)| {
                let new = match (m.role, b) {
                    (Role::Assistant, Block::Text { text: Some(t) }) => {
                        let len = utf16_len(t);
                        (len as f64 >= cfg.min_text_block_chars).then(|| {
                            Block::text(format!("{}... [truncated — {len} chars total]", utf16_prefix(t, excerpt)))
                        })
                    }
                    (Role::Assistant, Block::Image { .. }) => Some(Block::text("[Image compacted]")),
                    (Role::User, Block::ToolResult { tool_use_id, content, is_error }) => {
                        let name = names.get(tool_use_id.as_str()).copied();
                        let keep = *is_error == Some(true)
                            || content.starts_with("[Tool output compressed")
                            || content.starts_with("[Tool result:")
                            || (utf16_len(content) as f64) < cfg.min_tool_result_chars
                            || name == Some("delegate_to_agent");
                        (!keep).then(|| Block::ToolResult {
                            tool_use_id: tool_use_id.clone(),
                            content: format!(
                                "[Tool result: {} — {} chars, compacted]",
                                name.unwrap_or("unknown"),
                                utf16_len(content)
                            ),
                            is_error: None,
                        })
                    }
                    _ => None,
                };
                match new {
                    Some(b) => {
                        any = true;
                        PlanBlock::New(b)
                    }
                    None => PlanBlock::Keep(j),
                }
            })
            .collect();
        if any {
            changed = true;
            plan.push(PlanMsg::New { role: m.role, src: Some(idx), content });
        } else {
            plan.push(PlanMsg::Keep(idx));
        }
    }
    changed.then_some(plan)
}

pub fn compress_tool_results(conv: &[Message], min_chars: f64) -> Option<Plan> {
    let last = conv.iter().rposition(|m| m.role == Role::User && m.has_tool_result())?;
    if last == 0 {
        return None;
    }
    let names = tool_names(conv, 0..conv.len());
    let mut changed = false;
    let mut plan: Plan = Vec::with_capacity(conv.len());
    for (idx, m) in conv.iter().enumerate() {
        if idx >= last || m.role != Role::User || !m.has_tool_result() {
            plan.push(PlanMsg::Keep(idx));
            continue;
        }
        let mut any = false;
        let content = m
            .content
            .iter()
            .enumerate()
            .map(|(j, b)| match b {
                Block::ToolResult { tool_use_id, content, is_error } => {
                    let keep = *is_error == Some(true)
                        || names.get(tool_use_id.as_str()) == Some(&"delegate_to_agent")
                        || content.starts_with("[Tool output compressed")
                        || (utf16_len(content) as f64) < min_chars;
                    if keep {
                        PlanBlock::Keep(j)
                    } else {
                        any = true;
                        PlanBlock::New(Block::ToolResult {
                            tool_use_id: tool_use_id.clone(),
                            content: format!(
                                "[Tool output compressed — {} chars, already processed]",
                                utf16_len(content)
                            ),
                            is_error: None,
                        })
                    }
                }
                _ => PlanBlock::Keep(j),
            })
            .collect();
        if any {
            changed = true;
            plan.push(PlanMsg::New { role: Role::User, src: Some(idx), content });
        } else {
            plan.push(PlanMsg::Keep(idx));
        }
    }
    changed.then_some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::message::{parse_messages, Strictness};

    fn conv(json: &str) -> Vec<Message> {
        parse_messages(json, Strictness::Strict).unwrap()
    }
    fn u(t: &str) -> String {
        format!(r#"{{"role":"user","content":[{{"type":"text","text":"{t}"}}]}}"#)
    }
    fn a(t: &str) -> String {
        format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{t}"}}]}}"#)
    }
    fn tu(id: &str, name: &str) -> String {
        format!(r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}]}}"#)
    }
    fn tr(id: &str, content: &str) -> String {
        format!(r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"{content}"}}]}}"#)
    }
    fn texts(c: &[Message]) -> Vec<String> {
        c.iter().map(|m| m.to_json()).collect()
    }

    #[test]
    fn sliding_window_keeps_first_user_and_whole_turns() {
        let c = conv(&format!(
            "[{},{},{},{},{},{},{}]",
            u("q"),
            tu("1", "t"),
            tr("1", "r"),
            a("x"),
            u("more"),
            tu("2", "t"),
            tr("2", "r2")
        ));
        // after = 6 messages, target 2 → groups [tu1+tr1][a][u][tu2+tr2]; keeps the last group.
        let plan = sliding_window(&c, 1.0).unwrap();
        let out = apply(&c, &plan);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].text(), "q");
        // No user message among the kept pair except the tool_result one → the prefix goes there.
        assert_eq!(
            texts(&out)[2],
            r#"{"role":"user","content":[{"type":"text","text":"[Earlier conversation history truncated — 3 turn(s) removed]\n\n"},{"type":"tool_result","tool_use_id":"2","content":"r2"}]}"#
        );
        assert_eq!(plan_json(&plan), format!("[0,5,{{\"role\":\"user\",\"src\":6,\"content\":[{{\"type\":\"text\",\"text\":\"[Earlier conversation history truncated — 3 turn(s) removed]\\n\\n\"}},0]}}]"));
        assert!(sliding_window(&c, 3.0).is_none());
        assert!(sliding_window(&c, 0.0).is_none());
    }

    #[test]
    fn prepend_without_user_adds_assistant_notice() {
        let c = conv(&format!("[{},{},{},{},{}]", u("q"), a("1"), a("2"), a("3"), a("4")));
        let out = apply(&c, &sliding_window(&c, 1.0).unwrap());
        assert_eq!(
            texts(&out),
            vec![u("q"), a("[Earlier conversation history truncated — 2 turn(s) removed]"), a("3"), a("4")]
        );
    }

    #[test]
    fn summarize_builds_input_and_uses_cache() {
        let big = "x".repeat(400);
        let c = conv(&format!("[{},{},{},{},{},{}]", u("goal"), a(&big), u("u2"), a("a2"), u("u3"), a("a3")));
        let call = summarize(&c, 10.0, None);
        let Summarize::Call { signature, input_json, first_user, recent } = call else { panic!() };
        assert_eq!(first_user, 0);
        assert_eq!(recent, vec![3, 4, 5]);
        assert_eq!(signature, format!("{}\n{}", a(&big), u("u2")));
        assert!(input_json.starts_with(r#"[{"role":"user","content":[{"type":"text","text":"Summarize the following"#));
        let prefix = summary_prefix("  - did things \n");
        assert_eq!(prefix, "[Conversation summary]\n- did things");
        let out = apply(&c, &summary_plan(&c, first_user, &recent, &prefix));
        assert_eq!(out.len(), 4);
        assert_eq!(out[2].text(), "[Conversation summary]\n- did things\n\nu3");
        let cache = SummaryCache { signature, prefix };
        assert!(matches!(summarize(&c, 10.0, Some(&cache)), Summarize::Plan(_)));
        assert!(matches!(summarize(&c, 1e9, None), Summarize::Unchanged));
        assert_eq!(summary_prefix(" "), "[Conversation summary unavailable]");
    }

    #[test]
    fn compact_replaces_old_tool_results_and_long_texts() {
        let long = "y".repeat(300);
        let c = conv(&format!(
            "[{},{},{},{},{},{},{}]",
            u("q"),
            tu("1", "reader"),
            tr("1", &long),
            tu("2", "delegate_to_agent"),
            tr("2", &long),
            a("done"),
            u("next")
        ));
        let cfg = CompactConfig {
            max_tokens: 10.0,
            preserve_recent_turns: 1.0,
            min_tool_result_chars: 200.0,
            min_text_block_chars: 2000.0,
            text_block_excerpt_chars: 200.0,
        };
        let out = apply(&c, &compact(&c, &cfg).unwrap());
        assert_eq!(texts(&out)[2], tr("1", "[Tool result: reader — 300 chars, compacted]"));
        assert_eq!(texts(&out)[4], tr("2", &long));
        assert_eq!(texts(&out)[6], u("next"));
    }

    #[test]
    fn compress_consumed_results_only() {
        let long = "z".repeat(600);
        let c = conv(&format!("[{},{},{},{},{}]", u("q"), tu("1", "t"), tr("1", &long), tu("2", "t"), tr("2", &long)));
        let out = apply(&c, &compress_tool_results(&c, 500.0).unwrap());
        assert_eq!(texts(&out)[2], tr("1", "[Tool output compressed — 600 chars, already processed]"));
        assert_eq!(texts(&out)[4], tr("2", &long));
        assert!(compress_tool_results(&c, 1000.0).is_none());
    }
}
