//! Times the runner machine alone (no JS): `cargo run --release --no-default-features --example machine_turns`.
use std::sync::{Arc, Mutex};
use std::time::Instant;

use oma_core::kernel::config::runner_config_from_json;
use oma_core::kernel::message::{parse_messages, Strictness, Usage};
use oma_core::kernel::runner::{ActionKind, Machine, ModelAnswer, Observers, Pending, ToolOutcome};

fn main() {
    let cfg = Arc::new(runner_config_from_json(r#"{"maxTurns":100000,"loopDetection":{}}"#).unwrap());
    let start = r#"[{"role":"user","content":[{"type":"text","text":"go"}]}]"#;
    for _ in 0..3 {
        let t = Instant::now();
        let turns = 50_000;
        let mut m = Machine::new(
            cfg.clone(),
            Arc::new(Mutex::new(None)),
            parse_messages(start, Strictness::Lenient).unwrap(),
            vec!["t0".into()],
            Observers { on_warning: false, events: false },
        );
        let mut resp_t = 0u128;
        let mut next_t = 0u128;
        for turn in 0..turns {
            let a = Instant::now();
            assert_eq!(m.poll(false).unwrap().kind(), ActionKind::CallModel);
            let b = Instant::now();
            let json = format!(r#"[{{"type":"tool_use","id":"c{turn}","name":"t0","input":{{"a":{turn},"b":2}}}}]"#);
            let usage = Usage { input_tokens: 1.0, output_tokens: 1.0 };
            // Answered as the binding answers, in a later call: through `pending`.
            let Pending::Model(call) = m.pending() else { panic!("not waiting for the model") };
            call.answer(ModelAnswer::Parts { content_json: Some(&json), usage }).unwrap();
            let c = Instant::now();
            assert_eq!(m.poll(false).unwrap().kind(), ActionKind::ToolRound);
            let Pending::ToolResults(mut round) = m.pending() else { panic!("not waiting for a round") };
            round.answer(0, ToolOutcome { content: format!("r{turn}"), is_error: None, usage: None }).unwrap();
            let d = Instant::now();
            next_t += (b - a).as_nanos() + (d - c).as_nanos();
            resp_t += (c - b).as_nanos();
        }
        let total = t.elapsed().as_nanos();
        println!(
            "per turn: total {} ns, respond(Model) {} ns, poll+respond(ToolResult) {} ns",
            total / turns as u128,
            resp_t / turns as u128,
            next_t / turns as u128
        );
    }
}
