//! The agent loop (CONTRACT §5.5) as a sans-IO state machine.
//!
//! The machine owns every decision: when to stop (end_turn, maxTurns, abort), the budget with
//! its deferred break, loop detection and its policy, the gate, context strategies, and the
//! order of events. It never performs I/O: `next()` answers with an `Op` telling the driver
//! what to do (call the model, run this tool round, emit this event, …), and the driver feeds
//! results back with `on_response` / `tool_result` / …. The JS driver in `lib/runner.js`
//! awaits the user's adapter and tools; a native driver can do the same without JS.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::context::{self, CompactConfig, Plan, Summarize, SummaryCache};
use super::grants::GrantConfig;
use super::history::History;
use super::loop_detector::{LoopDetector, LoopInfo, LoopKind};
use super::message::{
    parse_content, parse_content_str, parse_messages, parse_usage, Block, Message, Role, Strictness, Usage,
};
use super::tokens::estimate_tokens;

pub const W_TOOL: &str = "WARNING: You appear to be repeating the same tool calls with identical arguments. This suggests you are stuck in a loop. Please try a different approach, use different parameters, or explain what you are trying to accomplish.";
pub const W_TEXT: &str = "WARNING: You appear to be generating the same response repeatedly. This suggests you are stuck in a loop. Please try a different approach or provide new information.";
pub const LOOP_STOPPED_RESULT: &str = "Tool call not executed: the run was stopped by loop detection.";

pub fn not_granted(tool: &str) -> String {
    format!("Tool \"{tool}\" is not granted to this agent. Built-in tools are opt-in: grant it via the agent's \"tools\" allowlist or \"toolPreset\" (or set the orchestrator's \"defaultToolPreset\").")
}

pub fn first_turn_warning(name: &str, n: usize) -> String {
    format!("Agent \"{name}\" has {n} tool(s) available but the model returned no tool calls. If using a local model, verify it supports tool calling (see https://ollama.com/search?c=tools).")
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoopAction {
    /// A configured string (`'warn'`, `'terminate'`, or anything else, which acts as continue).
    Fixed(String),
    /// A JS callback: the driver awaits it and reports its answer with `set_loop_action`.
    Callback,
}

#[derive(Debug, Clone)]
pub struct LoopConfig {
    pub max_repetitions: Option<f64>,
    pub window: Option<f64>,
    pub action: LoopAction,
}

#[derive(Debug, Clone)]
pub enum Strategy {
    SlidingWindow { max_turns: f64 },
    Summarize { max_tokens: f64 },
    Compact(CompactConfig),
    Custom,
}

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub max_turns: f64,
    pub max_token_budget: Option<f64>,
    pub agent_name: Option<String>,
    pub loop_detection: Option<LoopConfig>,
    pub strategy: Option<Strategy>,
    /// `Some(minChars)` when `compressToolResults` is on.
    pub compress_tool_results: Option<f64>,
    pub grants: GrantConfig,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            max_turns: 10.0,
            max_token_budget: None,
            agent_name: None,
            loop_detection: None,
            strategy: None,
            compress_tool_results: None,
            grants: GrantConfig {
                tool_preset: super::grants::Opt::Undefined,
                allowed: super::grants::Opt::Undefined,
                disallowed: super::grants::Opt::Undefined,
            },
        }
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    /// The run is over: build the result (`output`, usage, flags).
    Done = 0,
    /// Rebuild the working conversation from `take_plan()`.
    ApplyPlan = 1,
    /// Await `contextStrategy.compress(conversation, estimate)` and report with `set_conversation`.
    CustomCompress = 2,
    /// Await the summary call for `summary_input()` and report with `on_summary`.
    Summarize = 3,
    /// Await `adapter.chat(conversation, options)` and report with `on_response`.
    CallModel = 4,
    /// Emit `{ type: 'text', data: turn_text() }`.
    Text = 5,
    /// Emit `budget_exceeded` with `total_tokens()`.
    Budget = 6,
    /// Emit `loop_detected` with `loop_info()`, call onWarning; for a callback policy await it
    /// and report with `set_loop_action`.
    LoopDetected = 7,
    /// Append the user warning message with text `text_out()` (and call onMessage).
    InjectWarning = 8,
    /// Call `onWarning(text_out())`.
    FirstTurnWarning = 9,
    /// Emit `tool_use` events, run the turn's tools (gate per `granted(i)`), report each with
    /// `tool_result`, emit `tool_result` events, append the result message (plus a trailing
    /// warning text `text_out()` when `has_trailing_warning()`), call onMessage.
    ToolRound = 10,
    /// Append the user message answering every tool_use of the turn with
    /// `LOOP_STOPPED_RESULT` (is_error) and call onMessage.
    LoopStopResults = 11,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    TurnStart,
    Strategy,
    AwaitCustom,
    AwaitSummary,
    Call,
    AwaitResponse,
    AwaitLoopAction,
    Decide,
    AwaitToolResults,
    AfterTools,
    Finished,
}

#[derive(Debug, Clone)]
struct ToolOutcome {
    content: String,
    is_error: Option<bool>,
    usage: Option<Usage>,
}

pub struct Machine {
    cfg: Arc<RunnerConfig>,
    cache: Arc<Mutex<Option<SummaryCache>>>,
    conv: History,
    usage: Usage,
    turns: u32,
    final_output: String,
    budget_exceeded: bool,
    loop_detected: bool,
    aborted: bool,
    detector: Option<LoopDetector>,
    loop_warned: bool,
    granted: HashSet<String>,
    tools_offered: usize,
    has_on_warning: bool,
    phase: Phase,
    queue: std::collections::VecDeque<Op>,
    // Per-turn state.
    turn_text: String,
    tool_uses: Vec<(String, String)>,
    pending_break: bool,
    inject: Option<LoopKind>,
    loop_info: Option<LoopInfo>,
    loop_action: Option<String>,
    results: Vec<Option<ToolOutcome>>,
    plan: Option<Plan>,
    summary: Option<(String, usize, Vec<usize>, String)>,
    text_out: String,
    last_usage: Usage,
}

impl Machine {
    /// `initial`: the conversation handed to `stream()`; `granted`: the resolved tool names.
    pub fn new(
        cfg: Arc<RunnerConfig>,
        cache: Arc<Mutex<Option<SummaryCache>>>,
        initial: Vec<Message>,
        granted: Vec<String>,
        has_on_warning: bool,
    ) -> Machine {
        let detector = cfg.loop_detection.as_ref().map(|l| {
            let mut d = LoopDetector::new(l.max_repetitions, l.window);
            // Seed from history so a loop spanning prompt() calls is still seen.
            for m in initial.iter().filter(|m| m.role == Role::Assistant) {
                let calls: Vec<(&str, &str)> = m
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { name, input, .. } => Some((name.as_str(), input.get())),
                        _ => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    d.record_tool_calls(&calls);
                }
                let text = m.text();
                if !text.is_empty() {
                    d.record_text(&text);
                }
            }
            d
        });
        Machine {
            tools_offered: granted.len(),
            granted: granted.into_iter().collect(),
            cfg,
            cache,
            conv: History::new(initial),
            usage: Usage::default(),
            turns: 0,
            final_output: String::new(),
            budget_exceeded: false,
            loop_detected: false,
            aborted: false,
            detector,
            loop_warned: false,
            has_on_warning,
            phase: Phase::TurnStart,
            queue: Default::default(),
            turn_text: String::new(),
            tool_uses: Vec::new(),
            pending_break: false,
            inject: None,
            loop_info: None,
            loop_action: None,
            results: Vec::new(),
            plan: None,
            summary: None,
            text_out: String::new(),
            last_usage: Usage::default(),
        }
    }

    pub fn next(&mut self, aborted: bool) -> Result<Op, String> {
        if let Some(op) = self.queue.pop_front() {
            return Ok(op);
        }
        loop {
            match self.phase {
                Phase::TurnStart => {
                    if aborted {
                        self.aborted = true;
                        return Ok(self.finish());
                    }
                    if (self.turns as f64) >= self.cfg.max_turns {
                        return Ok(self.finish());
                    }
                    self.turns += 1;
                    self.phase = Phase::Strategy;
                    if let (Some(min), true) = (self.cfg.compress_tool_results, self.turns > 1) {
                        if let Some(plan) = context::compress_tool_results(&self.conv, min) {
                            return Ok(self.stage_plan(plan));
                        }
                    }
                }
                Phase::Strategy => {
                    self.phase = Phase::Call;
                    match &self.cfg.strategy {
                        None => {}
                        Some(Strategy::SlidingWindow { max_turns }) => {
                            if let Some(plan) = context::sliding_window(&self.conv, *max_turns) {
                                return Ok(self.stage_plan(plan));
                            }
                        }
                        Some(Strategy::Compact(c)) => {
                            if let Some(plan) = context::compact(&self.conv, c) {
                                return Ok(self.stage_plan(plan));
                            }
                        }
                        Some(Strategy::Custom) => {
                            self.phase = Phase::AwaitCustom;
                            return Ok(Op::CustomCompress);
                        }
                        Some(Strategy::Summarize { max_tokens }) => {
                            let decision = {
                                let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                                context::summarize(&self.conv, *max_tokens, cache.as_ref())
                            };
                            match decision {
                                Summarize::Unchanged => {}
                                Summarize::Plan(plan) => return Ok(self.stage_plan(plan)),
                                Summarize::Call { signature, input_json, first_user, recent } => {
                                    self.summary = Some((signature, first_user, recent, input_json));
                                    self.phase = Phase::AwaitSummary;
                                    return Ok(Op::Summarize);
                                }
                            }
                        }
                    }
                }
                Phase::AwaitCustom => return Err("driver error: custom compression result not reported".into()),
                Phase::AwaitSummary => return Err("driver error: summary response not reported".into()),
                Phase::Call => {
                    self.phase = Phase::AwaitResponse;
                    return Ok(Op::CallModel);
                }
                Phase::AwaitResponse => return Err("driver error: model response not reported".into()),
                Phase::AwaitLoopAction => return Err("driver error: loop action not reported".into()),
                Phase::Decide => {
                    if let Some(op) = self.decide() {
                        return Ok(op);
                    }
                }
                Phase::AwaitToolResults => {
                    if self.results.iter().any(Option::is_none) {
                        return Err("driver error: tool results missing".into());
                    }
                    self.append_tool_results();
                    self.phase = Phase::AfterTools;
                }
                Phase::AfterTools => {
                    if self.pending_break {
                        return Ok(self.finish());
                    }
                    let delegated: Option<Usage> =
                        self.results.iter().flatten().filter_map(|r| r.usage).fold(None, |acc, u| {
                            let mut a = acc.unwrap_or_default();
                            a.add(u);
                            Some(a)
                        });
                    self.results.clear();
                    if delegated.is_some() {
                        if let Some(budget) = self.cfg.max_token_budget {
                            if self.usage.total() > budget {
                                self.budget_exceeded = true;
                                self.final_output = self.turn_text.clone();
                                self.phase = Phase::Finished;
                                self.queue.push_back(Op::Done);
                                return Ok(Op::Budget);
                            }
                        }
                    }
                    self.phase = Phase::TurnStart;
                }
                Phase::Finished => return Ok(Op::Done),
            }
        }
    }

    fn stage_plan(&mut self, plan: Plan) -> Op {
        self.conv.replace(context::apply(&self.conv, &plan));
        self.plan = Some(plan);
        Op::ApplyPlan
    }

    /// JSON of the plan staged by the last `ApplyPlan` (see `context::plan_json`).
    pub fn take_plan(&mut self) -> String {
        self.plan.take().map(|p| context::plan_json(&p)).unwrap_or_else(|| "[]".into())
    }

    pub fn estimate_tokens(&self) -> u64 {
        estimate_tokens(&self.conv)
    }

    /// The custom strategy's answer (`JSON.stringify` of what `compress` returned).
    pub fn set_conversation(&mut self, json: Option<&str>) -> Result<(), String> {
        const BAD: &str = "contextStrategy.custom.compress must return a non-empty LLMMessage[]";
        if self.phase != Phase::AwaitCustom {
            return Err("driver error: no custom compression pending".into());
        }
        let json = json.ok_or_else(|| BAD.to_string())?;
        if !json.trim_start().starts_with('[') {
            return Err(BAD.into());
        }
        let msgs = parse_messages(json, Strictness::Lenient)?;
        if msgs.is_empty() {
            return Err(BAD.into());
        }
        self.conv.replace(msgs);
        self.phase = Phase::Call;
        Ok(())
    }

    pub fn summary_input(&self) -> &str {
        self.summary.as_ref().map(|s| s.3.as_str()).unwrap_or("[]")
    }

    /// The summary call's response; stages the plan the next `next()` returns as `ApplyPlan`.
    pub fn on_summary(&mut self, response_json: &str) -> Result<Usage, String> {
        if self.phase != Phase::AwaitSummary {
            return Err("driver error: no summary pending".into());
        }
        let (content, usage) = parse_response(response_json)?;
        let usage = Usage::finite(usage.input_tokens, usage.output_tokens);
        let text: String = content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text: Some(t) } => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let prefix = context::summary_prefix(&text);
        let (signature, fu, recent, _) = self.summary.take().unwrap();
        let plan = context::summary_plan(&self.conv, fu, &recent, &prefix);
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(SummaryCache { signature, prefix });
        self.usage.add(usage);
        self.conv.replace(context::apply(&self.conv, &plan));
        self.plan = Some(plan);
        self.queue.push_back(Op::ApplyPlan);
        self.phase = Phase::Call;
        Ok(usage)
    }

    /// The model's answer for this turn (`JSON.stringify(response)`).
    pub fn on_response(&mut self, response_json: &str) -> Result<(), String> {
        if self.phase != Phase::AwaitResponse {
            return Err("driver error: no model call pending".into());
        }
        let (content, usage) = parse_response(response_json)?;
        self.accept_response(content, usage);
        Ok(())
    }

    /// `on_response` with the parts sent separately (`JSON.stringify(response.content)` and the
    /// usage counts), which spares the driver serialising the whole response.
    pub fn on_response_parts(&mut self, content_json: Option<&str>, usage: Usage) -> Result<(), String> {
        if self.phase != Phase::AwaitResponse {
            return Err("driver error: no model call pending".into());
        }
        let bad = |d: &str| format!("LLM adapter returned a malformed response: {d}");
        let json = content_json.ok_or_else(|| bad("expected an object with a \"content\" array"))?;
        let blocks = parse_content_str(json, Strictness::Strict).map_err(|e| bad(&e))?;
        self.accept_response(blocks, usage);
        Ok(())
    }

    /// `on_response` for a driver that already holds the parsed answer (native adapters).
    pub fn on_parsed_response(&mut self, content: Vec<Block>, usage: Usage) -> Result<(), String> {
        if self.phase != Phase::AwaitResponse {
            return Err("driver error: no model call pending".into());
        }
        self.accept_response(content, usage);
        Ok(())
    }

    /// Takes a checked answer.
    fn accept_response(&mut self, content: Vec<Block>, usage: Usage) {
        let usage = Usage::finite(usage.input_tokens, usage.output_tokens);
        self.last_usage = usage;
        self.usage.add(usage);
        self.turn_text.clear();
        self.tool_uses.clear();
        for b in &content {
            match b {
                Block::Text { text: Some(t) } => self.turn_text.push_str(t),
                Block::ToolUse { id, name, .. } => self.tool_uses.push((id.clone(), name.clone())),
                _ => {}
            }
        }
        if !self.turn_text.is_empty() {
            self.queue.push_back(Op::Text);
        }
        if let Some(budget) = self.cfg.max_token_budget {
            if self.usage.total() > budget {
                self.budget_exceeded = true;
                self.final_output = self.turn_text.clone();
                self.pending_break = true;
                self.queue.push_back(Op::Budget);
            }
        }
        self.inject = None;
        self.loop_info = None;
        self.loop_action = None;
        self.phase = Phase::Decide;
        if let Some(d) = self.detector.as_mut() {
            let calls = content.iter().filter_map(|b| match b {
                Block::ToolUse { name, input, .. } => Some((name.as_str(), input.get())),
                _ => None,
            });
            let tool_info = match self.tool_uses.len() {
                0 => None,
                // One call (the usual turn): no vector.
                1 => d.record_tool_calls(&[calls.clone().next().expect("one tool_use")]),
                _ => d.record_tool_calls(&calls.collect::<Vec<_>>()),
            };
            let text_info = if self.turn_text.is_empty() { None } else { d.record_text(&self.turn_text) };
            match tool_info.or(text_info) {
                Some(info) => {
                    self.loop_info = Some(info);
                    self.queue.push_back(Op::LoopDetected);
                    match &self.cfg.loop_detection.as_ref().unwrap().action {
                        LoopAction::Fixed(a) => self.loop_action = Some(a.clone()),
                        LoopAction::Callback => self.phase = Phase::AwaitLoopAction,
                    }
                }
                None => self.loop_warned = false,
            }
        }
        self.conv.push(Message { role: Role::Assistant, content });
    }

    /// The callback policy's answer (`String(value)`).
    pub fn set_loop_action(&mut self, action: &str) -> Result<(), String> {
        if self.phase != Phase::AwaitLoopAction {
            return Err("driver error: no loop action pending".into());
        }
        self.loop_action = Some(action.to_string());
        self.phase = Phase::Decide;
        Ok(())
    }

    fn decide(&mut self) -> Option<Op> {
        if let Some(info) = &self.loop_info {
            let kind = info.kind;
            match self.loop_action.as_deref() {
                Some("terminate") => return Some(self.stop_for_loop()),
                Some("warn") | Some("inject") => {
                    if self.loop_warned {
                        return Some(self.stop_for_loop());
                    }
                    self.loop_warned = true;
                    self.inject = Some(kind);
                }
                _ => {}
            }
        }
        if self.tool_uses.is_empty() {
            if self.pending_break {
                return Some(self.finish());
            }
            if let Some(kind) = self.inject.take() {
                let text = warning_text(kind);
                self.conv.push(Message::user_text(text));
                self.text_out = text.to_string();
                self.phase = Phase::TurnStart;
                return Some(Op::InjectWarning);
            }
            self.final_output = self.turn_text.clone();
            if self.turns == 1 && self.tools_offered > 0 && self.has_on_warning {
                let name = self.cfg.agent_name.as_deref().unwrap_or("unknown");
                self.text_out = first_turn_warning(name, self.tools_offered);
                let done = self.finish();
                self.queue.push_back(done);
                return Some(Op::FirstTurnWarning);
            }
            return Some(self.finish());
        }
        self.results.clear();
        self.results.resize(self.tool_uses.len(), None);
        self.text_out = self.inject.map(|k| warning_text(k).to_string()).unwrap_or_default();
        self.phase = Phase::AwaitToolResults;
        Some(Op::ToolRound)
    }

    fn stop_for_loop(&mut self) -> Op {
        self.loop_detected = true;
        self.final_output = self.turn_text.clone();
        if self.tool_uses.is_empty() {
            return self.finish();
        }
        // §21: answer every tool_use so the returned history stays replayable.
        let content = self
            .tool_uses
            .iter()
            .map(|(id, _)| Block::ToolResult {
                tool_use_id: id.clone(),
                content: LOOP_STOPPED_RESULT.to_string(),
                is_error: Some(true),
            })
            .collect();
        self.conv.push(Message { role: Role::User, content });
        let done = self.finish();
        self.queue.push_back(done);
        Op::LoopStopResults
    }

    fn finish(&mut self) -> Op {
        self.phase = Phase::Finished;
        if self.final_output.is_empty() {
            if let Some(m) = self.conv.iter().rev().find(|m| m.role == Role::Assistant) {
                self.final_output = m.text();
            }
        }
        Op::Done
    }

    /// Whether tool_use block `i` of this turn passes the execution gate.
    pub fn granted(&self, i: usize) -> bool {
        self.tool_uses.get(i).is_some_and(|(_, name)| self.granted.contains(name))
    }

    pub fn tool_count(&self) -> usize {
        self.tool_uses.len()
    }

    pub fn tool_result(
        &mut self,
        i: usize,
        content: String,
        is_error: Option<bool>,
        usage: Option<Usage>,
    ) -> Result<(), String> {
        if self.phase != Phase::AwaitToolResults || i >= self.results.len() {
            return Err("driver error: unexpected tool result".into());
        }
        let usage = usage.map(|u| Usage::finite(u.input_tokens, u.output_tokens));
        self.results[i] = Some(ToolOutcome { content, is_error, usage });
        Ok(())
    }

    /// The turn's tool calls exactly as the gate judged them, as JSON `[[id, name, input(, signature)], …]`
    /// in block order (during `ToolRound` and `LoopStopResults`). The driver executes, records
    /// and answers these, never the adapter's live objects: a block whose `toJSON` hides it, or
    /// a `name` getter that answers differently on each read, must not run an ungranted tool.
    pub fn tool_calls_json(&self) -> String {
        let mut out = String::with_capacity(64);
        out.push('[');
        let calls = self.conv.iter().rev().find(|m| m.role == Role::Assistant).map(|m| &m.content[..]).unwrap_or(&[]);
        for b in calls {
            if let Block::ToolUse { id, name, input, signature } = b {
                if out.len() > 1 {
                    out.push(',');
                }
                out.push('[');
                out.push_str(&serde_json::to_string(id).expect("string serialises"));
                out.push(',');
                out.push_str(&serde_json::to_string(name).expect("string serialises"));
                out.push(',');
                out.push_str(input.get());
                // A provider's signature (Gemini) keeps the event's block equal to the response's.
                if let Some(sig) = signature {
                    out.push(',');
                    out.push_str(&serde_json::to_string(sig).expect("string serialises"));
                }
                out.push(']');
            }
        }
        out.push(']');
        out
    }

    fn append_tool_results(&mut self) {
        let mut content: Vec<Block> = Vec::with_capacity(self.results.len() + self.inject.is_some() as usize);
        // The round is over: ids and result texts move into the history (no copies); the
        // outcomes keep their usage for the post-delegation budget check.
        for (k, r) in self.results.iter_mut().enumerate() {
            let r = r.as_mut().unwrap();
            if let Some(u) = r.usage {
                self.usage.add(u);
            }
            content.push(Block::ToolResult {
                tool_use_id: std::mem::take(&mut self.tool_uses[k].0),
                content: std::mem::take(&mut r.content),
                is_error: r.is_error,
            });
        }
        if let Some(kind) = self.inject.take() {
            content.push(Block::text(warning_text(kind)));
        }
        self.conv.push(Message { role: Role::User, content });
    }

    pub fn has_trailing_warning(&self) -> bool {
        self.inject.is_some()
    }

    pub fn turn_text(&self) -> &str {
        &self.turn_text
    }
    pub fn text_out(&self) -> &str {
        &self.text_out
    }
    pub fn loop_info(&self) -> Option<&LoopInfo> {
        self.loop_info.as_ref()
    }
    pub fn usage(&self) -> Usage {
        self.usage
    }
    pub fn turns(&self) -> u32 {
        self.turns
    }
    pub fn output(&self) -> &str {
        &self.final_output
    }
    pub fn budget_exceeded(&self) -> bool {
        self.budget_exceeded
    }
    pub fn loop_detected(&self) -> bool {
        self.loop_detected
    }
    pub fn aborted(&self) -> bool {
        self.aborted
    }
    pub fn conversation(&self) -> &[Message] {
        &self.conv
    }

    /// The conversation for a request that reads it elsewhere (no copy), with its epoch.
    pub fn shared_conversation(&self) -> (Arc<Vec<Message>>, u64) {
        (self.conv.shared(), self.conv.epoch())
    }
}

fn warning_text(kind: LoopKind) -> &'static str {
    match kind {
        LoopKind::ToolRepetition => W_TOOL,
        LoopKind::TextRepetition => W_TEXT,
    }
}

/// Reads an `LLMResponse` strictly enough that a broken adapter fails the run with a clear
/// message instead of corrupting the history.
pub fn parse_response(json: &str) -> Result<(Vec<Block>, Usage), String> {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
        #[serde(borrow, default)]
        usage: Option<&'a RawValue>,
    }
    let bad = |d: &str| format!("LLM adapter returned a malformed response: {d}");
    if !json.trim_start().starts_with('{') {
        return Err(bad("expected an object with a \"content\" array"));
    }
    let r: R = serde_json::from_str(json).map_err(|_| bad("expected an object with a \"content\" array"))?;
    let content = r.content.ok_or_else(|| bad("\"content\" is missing"))?;
    let blocks = parse_content(content, Strictness::Strict).map_err(|e| bad(&e))?;
    Ok((blocks, parse_usage(r.usage)))
}

#[cfg(test)]
// Each test starts from the default configuration and states the one field it is about.
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::kernel::grants::Opt;

    fn machine(cfg: RunnerConfig, initial: &str, granted: &[&str]) -> Machine {
        Machine::new(
            Arc::new(cfg),
            Arc::new(Mutex::new(None)),
            parse_messages(initial, Strictness::Lenient).unwrap(),
            granted.iter().map(|s| s.to_string()).collect(),
            true,
        )
    }
    const START: &str = r#"[{"role":"user","content":[{"type":"text","text":"go"}]}]"#;

    fn text_resp(t: &str, i: u32, o: u32) -> String {
        format!(
            r#"{{"id":"r","content":[{{"type":"text","text":"{t}"}}],"model":"m","stop_reason":"end_turn","usage":{{"input_tokens":{i},"output_tokens":{o}}}}}"#
        )
    }
    fn tool_resp(calls: &[(&str, &str)], text: &str) -> String {
        let mut blocks: Vec<String> = Vec::new();
        if !text.is_empty() {
            blocks.push(format!(r#"{{"type":"text","text":"{text}"}}"#));
        }
        for (id, name) in calls {
            blocks.push(format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{{"q":1}}}}"#));
        }
        format!(
            r#"{{"id":"r","content":[{}],"model":"m","stop_reason":"tool_use","usage":{{"input_tokens":10,"output_tokens":5}}}}"#,
            blocks.join(",")
        )
    }

    /// Runs the machine with canned responses; tools answer "ok". Returns the op trace.
    fn drive(m: &mut Machine, responses: &[String]) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut r = responses.iter();
        loop {
            let op = m.next(false).unwrap();
            ops.push(op);
            match op {
                Op::Done => return ops,
                Op::CallModel => m.on_response(r.next().expect("ran out of responses")).unwrap(),
                Op::ToolRound => {
                    for i in 0..m.tool_count() {
                        let granted = m.granted(i);
                        let content = if granted { "ok".to_string() } else { not_granted("x") };
                        m.tool_result(i, content, if granted { None } else { Some(true) }, None).unwrap();
                    }
                }
                Op::LoopDetected if m.phase == Phase::AwaitLoopAction => {
                    m.set_loop_action("terminate").unwrap();
                }
                _ => {}
            }
        }
    }

    #[test]
    fn single_turn_end() {
        let mut m = machine(RunnerConfig::default(), START, &[]);
        let ops = drive(&mut m, &[text_resp("hello", 3, 4)]);
        assert_eq!(ops, vec![Op::CallModel, Op::Text, Op::Done]);
        assert_eq!(m.output(), "hello");
        assert_eq!(m.usage().total(), 7.0);
        assert_eq!(m.turns(), 1);
    }

    #[test]
    fn tool_round_then_answer_and_gate() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a"), ("2", "b")], ""), text_resp("fin", 1, 1)]);
        assert_eq!(ops, vec![Op::CallModel, Op::ToolRound, Op::CallModel, Op::Text, Op::Done]);
        let c = m.conversation();
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[2].to_json(),
            format!(
                r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"1","content":"ok"}},{{"type":"tool_result","tool_use_id":"2","content":"{}","is_error":true}}]}}"#,
                not_granted("x").replace('"', "\\\"")
            )
        );
    }

    #[test]
    fn max_turns_exit_uses_last_assistant_text() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 2.0;
        let mut m = machine(cfg, START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a")], "step1"), tool_resp(&[("2", "a")], "step2")]);
        assert_eq!(ops.last(), Some(&Op::Done));
        assert_eq!(m.turns(), 2);
        assert_eq!(m.output(), "step2");
    }

    #[test]
    fn zero_max_turns_returns_input_history_text() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 0.0;
        let mut m = machine(
            cfg,
            r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"old"}]}]"#,
            &[],
        );
        assert_eq!(drive(&mut m, &[]), vec![Op::Done]);
        assert_eq!(m.output(), "old");
    }

    #[test]
    fn abort_between_turns_is_a_normal_exit() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&tool_resp(&[("1", "a")], "")).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        m.tool_result(0, "ok".into(), None, None).unwrap();
        assert_eq!(m.next(true).unwrap(), Op::Done);
        assert!(m.aborted());
    }

    #[test]
    fn budget_defers_break_until_tool_round_done() {
        let mut cfg = RunnerConfig::default();
        cfg.max_token_budget = Some(10.0);
        let mut m = machine(cfg, START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a")], "thinking")]);
        assert_eq!(ops, vec![Op::CallModel, Op::Text, Op::Budget, Op::ToolRound, Op::Done]);
        assert!(m.budget_exceeded());
        assert_eq!(m.output(), "thinking");
        assert_eq!(m.conversation().len(), 3);
    }

    #[test]
    fn post_delegation_budget_check() {
        let mut cfg = RunnerConfig::default();
        cfg.max_token_budget = Some(100.0);
        let mut m = machine(cfg, START, &["delegate"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&tool_resp(&[("1", "delegate")], "")).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        m.tool_result(0, "sub answer".into(), Some(false), Some(Usage { input_tokens: 80.0, output_tokens: 20.0 }))
            .unwrap();
        assert_eq!(m.next(false).unwrap(), Op::Budget);
        assert_eq!(m.next(false).unwrap(), Op::Done);
        assert_eq!(m.usage().total(), 115.0);
        assert!(m.budget_exceeded());
    }

    #[test]
    fn loop_warn_injects_then_terminates_with_paired_history() {
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection =
            Some(LoopConfig { max_repetitions: None, window: None, action: LoopAction::Fixed("warn".into()) });
        let mut m = machine(cfg, START, &["a"]);
        let same = tool_resp(&[("1", "a")], "");
        let ops = drive(&mut m, &[same.clone(), same.clone(), same.clone(), same.clone()]);
        assert_eq!(
            ops,
            vec![
                Op::CallModel,
                Op::ToolRound,
                Op::CallModel,
                Op::ToolRound,
                Op::CallModel,
                Op::LoopDetected,
                Op::ToolRound,
                Op::CallModel,
                Op::LoopDetected,
                Op::LoopStopResults,
                Op::Done
            ]
        );
        assert!(m.loop_detected());
        let c = m.conversation();
        // Third tool round carries the trailing warning text.
        assert!(c[6].to_json().ends_with(&format!(r#"{{"type":"text","text":"{W_TOOL}"}}]}}"#)));
        // The terminating turn's tool_use is answered.
        let last = c.last().unwrap().to_json();
        assert!(last.contains(LOOP_STOPPED_RESULT) && last.contains(r#""is_error":true"#));
    }

    #[test]
    fn text_loop_inject_adds_user_message() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 10.0;
        cfg.loop_detection =
            Some(LoopConfig { max_repetitions: Some(2.0), window: None, action: LoopAction::Fixed("warn".into()) });
        let initial = r#"[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"same"}]},{"role":"user","content":[{"type":"text","text":"again"}]}]"#;
        let mut m = machine(cfg, initial, &[]);
        // Seeded with "same" from history: the first answer is already a repetition.
        let ops = drive(&mut m, &[text_resp("same", 1, 1), text_resp("different", 1, 1)]);
        assert_eq!(
            ops,
            vec![Op::CallModel, Op::Text, Op::LoopDetected, Op::InjectWarning, Op::CallModel, Op::Text, Op::Done]
        );
        assert_eq!(m.output(), "different");
    }

    #[test]
    fn callback_policy_and_continue() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 4.0;
        cfg.loop_detection =
            Some(LoopConfig { max_repetitions: Some(2.0), window: None, action: LoopAction::Fixed("continue".into()) });
        let mut m = machine(cfg, START, &["a"]);
        let same = tool_resp(&[("1", "a")], "");
        let ops = drive(&mut m, &[same.clone(), same.clone(), same.clone(), same.clone()]);
        assert_eq!(ops.iter().filter(|o| **o == Op::LoopDetected).count(), 3);
        assert!(!m.loop_detected());
        assert_eq!(m.turns(), 4);
    }

    #[test]
    fn first_turn_warning_when_tools_offered() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        let ops = drive(&mut m, &[text_resp("no tools", 1, 1)]);
        assert_eq!(ops, vec![Op::CallModel, Op::Text, Op::FirstTurnWarning, Op::Done]);
        assert_eq!(m.text_out(), first_turn_warning("unknown", 1));
    }

    #[test]
    fn malformed_responses_are_rejected_without_touching_history() {
        let mut m = machine(RunnerConfig::default(), START, &[]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        for bad in ["null", "{}", r#"{"content":"x"}"#, r#"{"content":[{"type":"tool_use","id":"1"}]}"#, "[]"] {
            let e = m.on_response(bad).unwrap_err();
            assert!(e.starts_with("LLM adapter returned a malformed response: "), "{e}");
        }
        assert_eq!(m.conversation().len(), 1);
    }

    #[test]
    fn tool_calls_are_the_gated_copy_and_outlive_the_loop_stop() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(r#"{"content":[{"type":"text","text":"x"},{"type":"tool_use","id":"1","name":"a","input":{"z":1,"a":[2]}},{"type":"tool_use","id":"2\"","name":"b\u00e9","input":{},"signature":"s"}]}"#).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::Text);
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        assert_eq!(m.tool_calls_json(), r#"[["1","a",{"z":1,"a":[2]}],["2\"","bé",{},"s"]]"#);
        assert!(m.granted(0) && !m.granted(1));

        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = Some(LoopConfig {
            max_repetitions: Some(1.0),
            window: None,
            action: LoopAction::Fixed("terminate".into()),
        });
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&tool_resp(&[("7", "a")], "")).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::LoopDetected);
        assert_eq!(m.next(false).unwrap(), Op::LoopStopResults);
        assert_eq!(m.tool_calls_json(), r#"[["7","a",{"q":1}]]"#);
    }

    #[test]
    fn non_finite_usage_never_reaches_the_totals() {
        let mut cfg = RunnerConfig::default();
        cfg.max_token_budget = Some(100.0);
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response_parts(
            Some(r#"[{"type":"tool_use","id":"1","name":"a","input":{}}]"#),
            Usage { input_tokens: f64::NAN, output_tokens: f64::INFINITY },
        )
        .unwrap();
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        m.tool_result(0, "ok".into(), None, Some(Usage { input_tokens: f64::NEG_INFINITY, output_tokens: 4.0 }))
            .unwrap();
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&text_resp("fin", 1, 2)).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::Text);
        assert_eq!(m.next(false).unwrap(), Op::Done);
        assert_eq!(m.usage(), Usage { input_tokens: 1.0, output_tokens: 6.0 });
        assert!(!m.budget_exceeded());
    }

    #[test]
    fn sliding_window_and_custom_strategies_stage_plans() {
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::SlidingWindow { max_turns: 1.0 });
        let hist = r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"1"}]},{"role":"user","content":[{"type":"text","text":"2"}]},{"role":"assistant","content":[{"type":"text","text":"3"}]},{"role":"user","content":[{"type":"text","text":"4"}]}]"#;
        let mut m = machine(cfg, hist, &[]);
        assert_eq!(m.next(false).unwrap(), Op::ApplyPlan);
        assert!(m.take_plan().starts_with("[0,"));
        assert_eq!(m.next(false).unwrap(), Op::CallModel);

        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Custom);
        let mut m = machine(cfg, START, &[]);
        assert_eq!(m.next(false).unwrap(), Op::CustomCompress);
        assert_eq!(
            m.set_conversation(Some("[]")).unwrap_err(),
            "contextStrategy.custom.compress must return a non-empty LLMMessage[]"
        );
        assert!(m.set_conversation(None).is_err());
        m.set_conversation(Some(START)).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
    }

    #[test]
    fn compress_tool_results_from_turn_two() {
        let mut cfg = RunnerConfig::default();
        cfg.compress_tool_results = Some(1.0);
        cfg.grants.tool_preset = Opt::Undefined;
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&tool_resp(&[("1", "a")], "")).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        m.tool_result(0, "result text".into(), None, None).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::CallModel);
        m.on_response(&tool_resp(&[("2", "a")], "")).unwrap();
        assert_eq!(m.next(false).unwrap(), Op::ToolRound);
        m.tool_result(0, "second".into(), None, None).unwrap();
        // Turn 3: the first result has been consumed → compressed.
        assert_eq!(m.next(false).unwrap(), Op::ApplyPlan);
        assert!(m.take_plan().contains("[Tool output compressed — 11 chars, already processed]"));
    }
}
