//! The Agent machine's words (`kernel::agent::wire`: `STEP`, `EVENT`, `SETUP`) round-trip
//! through the GENERATED JS (`lib/generated/boundary.js`, run by node): every step kind the Rust
//! side encodes decodes to what the Rust step says, and every event and setup the generated
//! encoders write is the code the Rust side gives the same event or setup.

use std::path::PathBuf;

use oma_core::boundary;
use oma_core::kernel::agent::{
    texts, wire, Action, AgentRun, Conversation, Entry, Event, History, RunFlags, Setup, Shape, Status, Step,
};
use serde_json::{json, Value};

/// Runs `script` with `a` bound to the generated `agent` section; its output lines.
fn node(script: &str) -> Vec<String> {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/generated/boundary.js");
    let head =
        format!("const a = require({}).agent\n", serde_json::to_string(lib.to_str().expect("a UTF-8 path")).unwrap());
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg(head + script)
        .output()
        .expect("node runs (the JS side's tests need it too)");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("node writes UTF-8").lines().map(str::to_string).collect()
}

/// What the decoded step must be, read off the Rust step (not off the layout).
fn expected(step: &Step, word: f64) -> Value {
    let mut o = json!({
        "word": word as u64,
        "status": step.status.map(Status::as_str),
        "addUsage": step.add_usage,
        "rewriteLastUser": false, "retry": false, "reportOutput": false, "countSpent": false,
        "build": false, "failed": false, "success": false, "structured": false, "merged": false,
        "loopDetected": false, "budgetExceeded": false, "aborted": false, "timedOut": false,
        "history": null,
    });
    let mut set = |k: &str, v: Value| o[k] = v;
    let shape = |build: &Option<Shape>, set: &mut dyn FnMut(&str, Value)| match build {
        None => {}
        Some(Shape::Failed { timed_out }) => {
            set("build", json!(true));
            set("failed", json!(true));
            set("timedOut", json!(timed_out));
        }
        Some(Shape::Result { success, structured, merged, flags, timed_out }) => {
            set("build", json!(true));
            set("success", json!(success));
            set("structured", json!(structured));
            set("merged", json!(merged));
            set("loopDetected", json!(flags.loop_detected));
            set("budgetExceeded", json!(flags.budget_exceeded));
            set("aborted", json!(flags.aborted));
            set("timedOut", json!(timed_out));
        }
    };
    let (op, code) = match &step.action {
        Action::BeforeRun => ("beforeRun", wire::BEFORE_RUN),
        Action::RunRunner { conversation, report_output } => {
            set("reportOutput", json!(report_output));
            match conversation {
                Conversation::Outgoing { rewrite_last_user } => set("rewriteLastUser", json!(rewrite_last_user)),
                Conversation::Retry { count_spent, .. } => {
                    set("retry", json!(true));
                    set("countSpent", json!(count_spent));
                }
            }
            ("runRunner", wire::RUN_RUNNER)
        }
        Action::Validate { .. } => ("validate", wire::VALIDATE),
        Action::AfterRun { build } => {
            shape(build, &mut set);
            ("afterRun", wire::AFTER_RUN)
        }
        Action::Trace { build } => {
            shape(build, &mut set);
            ("trace", wire::TRACE)
        }
        Action::Finish { build, history } => {
            shape(build, &mut set);
            set("history", json!(history.as_str()));
            ("finish", wire::FINISH)
        }
        Action::PassError => ("passError", wire::PASS_ERROR),
    };
    o["op"] = json!(op);
    o["code"] = json!(code);
    o
}

fn shapes() -> Vec<Option<Shape>> {
    let flags = |budget_exceeded, loop_detected, aborted| RunFlags { budget_exceeded, loop_detected, aborted };
    vec![
        None,
        Some(Shape::Failed { timed_out: false }),
        Some(Shape::Failed { timed_out: true }),
        Some(Shape::Result {
            success: true,
            structured: false,
            merged: false,
            flags: flags(false, true, false),
            timed_out: false,
        }),
        Some(Shape::Result {
            success: false,
            structured: true,
            merged: true,
            flags: flags(true, false, true),
            timed_out: true,
        }),
        Some(Shape::Result {
            success: true,
            structured: true,
            merged: true,
            flags: flags(true, true, true),
            timed_out: true,
        }),
    ]
}

/// A sample of every step kind, each field on and off somewhere.
fn steps() -> Vec<Step> {
    let mut actions = vec![Action::BeforeRun, Action::Validate { json: "{}".into() }, Action::PassError];
    for rewrite_last_user in [false, true] {
        for report_output in [false, true] {
            actions
                .push(Action::RunRunner { conversation: Conversation::Outgoing { rewrite_last_user }, report_output });
        }
    }
    for count_spent in [false, true] {
        actions.push(Action::RunRunner {
            conversation: Conversation::Retry { feedback: "again".into(), count_spent },
            report_output: true,
        });
    }
    for build in shapes() {
        actions.push(Action::AfterRun { build });
        actions.push(Action::Trace { build });
        for history in [History::Untouched, History::Commit, History::Rollback] {
            actions.push(Action::Finish { build, history });
        }
    }
    let mut out = Vec::new();
    for (i, action) in actions.into_iter().enumerate() {
        // Every status and both usage bits, spread over the actions.
        let status = [None, Some(Status::Running), Some(Status::Completed), Some(Status::Error)][i % 4];
        out.push(Step { status, add_usage: i % 3 == 0, action: action.clone() });
        out.push(Step { status: [None, Some(Status::Error)][i % 2], add_usage: i % 3 != 0, action });
    }
    out
}

#[test]
fn agent_step_word_decodes_in_the_generated_js_as_rust_encodes_it() {
    // The machine's bits above the step's must not show through: a busy setup, packed.
    let mut setup = Setup::new(Entry::Stream);
    setup.before_run = true;
    setup.after_run = true;
    setup.output_schema = true;
    setup.trace = true;
    setup.retries = 5;
    setup.checked_retries = true;
    let (mut run, _) = AgentRun::start(setup);
    // The first attempt: its count lands above bit 32.
    run.answer(Event::HookReturned { changed: true, has_user: true }).unwrap();
    let mut cases: Vec<(f64, Value)> = Vec::new();
    for step in steps() {
        let (bits, text) = wire::step_code(&step);
        assert_eq!(wire::step_from(bits, text).unwrap(), step, "the Rust wire round-trips");
        cases.push((f64::from(bits), expected(&step, f64::from(bits))));
        let word = wire::pack(&run, bits).unwrap();
        assert!(word > f64::from(u32::MAX), "the sample packs a machine above 32 bits");
        cases.push((word, expected(&step, word)));
    }
    let words: Vec<String> = cases.iter().map(|(w, _)| w.to_string()).collect();
    let script = format!(
        "const shapes = new Set()\n\
         for (const w of [{}]) {{ const s = a.step.decode(w); shapes.add(Object.keys(s).join()); console.log(JSON.stringify(s)) }}\n\
         console.log(shapes.size)\n\
         try {{ a.step.decode(0) }} catch (e) {{ console.log(e.message) }}\n",
        words.join(", ")
    );
    let lines = node(&script);
    assert_eq!(lines.len(), cases.len() + 2);
    for ((word, want), got) in cases.iter().zip(&lines) {
        let got: Value = serde_json::from_str(got).unwrap();
        assert_eq!(&got, want, "word {word}");
    }
    // One object shape for every kind (the driver's reads stay monomorphic).
    assert_eq!(lines[cases.len()], "1");
    assert_eq!(lines[cases.len() + 1], boundary::fill(texts::DRIVER_UNKNOWN_ACTION, &[("code", "0")]));
}

#[test]
fn agent_event_words_the_generated_js_writes_are_the_rust_codes() {
    let b = |v: bool| v.to_string();
    let mut cases: Vec<(String, Event)> = Vec::new();
    for (changed, has_user) in [(false, false), (true, false), (false, true), (true, true)] {
        cases.push((
            format!("hookReturned({}, {})", b(changed), b(has_user)),
            Event::HookReturned { changed, has_user },
        ));
    }
    for i in 0..16u8 {
        let on = |bit: u8| i & (1 << bit) != 0;
        let flags = RunFlags { budget_exceeded: on(0), loop_detected: on(1), aborted: on(2) };
        cases.push((
            format!("runnerDone({}, {}, {}, {})", b(on(0)), b(on(1)), b(on(2)), b(on(3))),
            Event::RunnerDone { flags, timed_out: on(3), output: None },
        ));
    }
    for timed_out in [false, true] {
        cases.push((format!("threw({})", b(timed_out)), Event::Threw { timed_out }));
    }
    cases.push(("runnerError()".into(), Event::RunnerError));
    cases.push(("valid()".into(), Event::Valid));
    cases.push(("invalid()".into(), Event::Invalid { message: "m" }));
    cases.push(("afterRunReturned()".into(), Event::AfterRunReturned));
    cases.push(("traceEmitted()".into(), Event::TraceEmitted));
    for kind in wire::EVENT.kinds {
        assert!(cases.iter().any(|(js, _)| js.starts_with(&format!("{}(", kind.name))), "a case for {}", kind.name);
    }
    let script: String = cases.iter().map(|(js, _)| format!("console.log(a.event.encode.{js})\n")).collect();
    let lines = node(&script);
    assert_eq!(lines.len(), cases.len());
    for ((js, event), got) in cases.iter().zip(&lines) {
        assert_eq!(got, &wire::event_code(event).to_string(), "{js}");
        // And the machine reads it back as the same event.
        let text = match event {
            Event::Invalid { message } => Some(*message),
            _ => None,
        };
        assert_eq!(wire::event_from(got.parse().unwrap(), text).unwrap(), *event, "{js}");
    }
}

#[test]
fn agent_setup_words_the_generated_js_writes_are_the_rust_codes() {
    let mut cases: Vec<(String, Setup)> = Vec::new();
    for (i, (entry, name)) in
        [(Entry::Run, "run"), (Entry::Prompt, "prompt"), (Entry::Stream, "stream")].into_iter().enumerate()
    {
        for bits in 0..64u32 {
            let on = |bit: u32| bits & (1 << bit) != 0;
            let s = Setup {
                entry,
                before_run: on(0),
                after_run: on(1),
                output_schema: on(2),
                trace: on(3),
                retries: ((bits as usize + i) % 6) as u8,
                checked_retries: on(4) != on(5),
            };
            let js = format!(
                "{name}({}, {}, {}, {}, {}, {})",
                s.before_run, s.after_run, s.output_schema, s.trace, s.retries, s.checked_retries
            );
            cases.push((js, s));
        }
    }
    let script: String = cases.iter().map(|(js, _)| format!("console.log(a.setup.encode.{js})\n")).collect();
    let lines = node(&script);
    assert_eq!(lines.len(), cases.len());
    for ((js, setup), got) in cases.iter().zip(&lines) {
        assert_eq!(got, &wire::setup_code(*setup).unwrap().to_string(), "{js}");
        assert_eq!(wire::setup_from(got.parse().unwrap()).unwrap(), *setup, "{js}");
    }
}
