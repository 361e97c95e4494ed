//! The generated boundary files (`lib/generated/boundary.js`, `.d.ts`, `lib/native.d.ts`) are fresh: rendered from
//! every crate's section (`oma_core::boundary`) and compared with the checked-in files. With
//! `OMA_REGEN=1` the test writes them instead.

use std::path::PathBuf;

use oma_core::boundary::{self, Section, REGEN_COMMAND};

fn sections() -> Vec<Section> {
    let mut all = boundary::sections();
    all.push(oma_llm::boundary::section());
    all.push(oma_mcp::boundary::section());
    all
}

#[test]
fn generated_boundary_files_are_fresh() {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib");
    let all = sections();
    let files = [
        ("generated/boundary.js", boundary::render_js(&all)),
        ("generated/boundary.d.ts", boundary::render_dts(&all)),
        ("native.d.ts", boundary::raw::render_native_dts()),
    ];
    let regen = std::env::var_os("OMA_REGEN").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, text) in &files {
        let path = lib.join(name);
        if regen {
            std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("lib/generated is writable");
            std::fs::write(&path, text).expect("a generated file is writable");
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(*name);
        }
    }
    assert!(stale.is_empty(), "lib/{stale:?} differ from the Rust declarations: run `{REGEN_COMMAND}`");
}

#[test]
fn section_names_are_unique() {
    let all = sections();
    for (i, s) in all.iter().enumerate() {
        assert!(all[..i].iter().all(|t| t.name != s.name), "two sections named {}", s.name);
    }
}

/// The JS builders as generated (`lib/generated/boundary.js`, run by node) build what the Rust
/// writer writes, for the same inputs: the kernel's history and the JS driver's copy of it are
/// one shape (`kernel::message::shapes`), compared through `JSON.stringify`.
#[test]
fn the_generated_builders_build_what_the_rust_writer_writes() {
    use oma_core::kernel::message::{shapes, Block, Message, Role};
    let q = |s: &str| serde_json::to_string(s).unwrap();
    // (builder, its arguments as JS source, what the Rust writer writes)
    let mut cases: Vec<(&str, Vec<String>, String)> = Vec::new();
    for text in ["", "a \"quoted\" line\n", "😀 \u{1} \u{2028}"] {
        cases.push(("textBlock", vec![q(text)], Block::text(text).to_json()));
        cases.push(("userText", vec![q(text)], Message::user_text(text).to_json()));
    }
    for is_error in [Some(true), Some(false), None] {
        let b = Block::ToolResult { tool_use_id: "toolu_1".into(), content: "out \"x\"\n".into(), is_error };
        let flag = is_error.map_or("undefined".to_string(), |e| e.to_string());
        cases.push(("toolResultBlock", vec![q("toolu_1"), q("out \"x\"\n"), flag], b.to_json()));
    }
    let content = vec![
        Block::ToolResult { tool_use_id: "a".into(), content: "ok".into(), is_error: Some(true) },
        Block::text("warning"),
    ];
    let content_js = format!("[{},{}]", content[0].to_json(), content[1].to_json());
    for role in [Role::User, Role::Assistant] {
        let m = Message { role, content: content.clone() }.to_json();
        let name = if role == Role::User { "userMessage" } else { "assistantMessage" };
        cases.push((name, vec![content_js.clone()], m.clone()));
        cases.push(("message", vec![q(role.as_str()), content_js.clone()], m));
    }
    for (name, _, _) in shapes::ALL {
        assert!(cases.iter().any(|(n, _, _)| *n == name), "a case for {name}");
    }
    let calls: Vec<String> =
        cases.iter().map(|(name, args, _)| format!("b.history.{name}({})", args.join(", "))).collect();
    let lines = node_json(&calls);
    for ((name, args, rust), js) in cases.iter().zip(lines) {
        assert_eq!(&js, rust, "{name}({})", args.join(", "));
    }
}

/// Runs `calls` (JS expressions over the generated module `b`) in node and returns what each
/// `JSON.stringify`s to, one per line.
fn node_json(calls: &[String]) -> Vec<String> {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/generated/boundary.js");
    let path = serde_json::to_string(lib.to_str().expect("a UTF-8 path")).unwrap();
    let mut script = format!("const b = require({path})\n");
    for c in calls {
        script.push_str(&format!("console.log(JSON.stringify({c}))\n"));
    }
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg(&script)
        .output()
        .expect("node runs (the JS side's tests need it too)");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).expect("JSON.stringify writes UTF-8");
    let lines: Vec<String> = printed.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), calls.len());
    lines
}

/// Each record decoded by the generated decoder `decoder` equals the value Rust says it stands
/// for (compared as JSON: an optional field left out decodes to `undefined`, which
/// `JSON.stringify` leaves out too).
fn assert_decodes(decoder: &str, cases: &[(String, serde_json::Value)]) {
    let calls: Vec<String> = cases
        .iter()
        .map(|(record, _)| format!("b.{decoder}(JSON.parse({}))", serde_json::to_string(record).unwrap()))
        .collect();
    for ((record, want), got) in cases.iter().zip(node_json(&calls)) {
        let got: serde_json::Value = serde_json::from_str(&got).expect("the decoder's value is JSON");
        assert_eq!(&got, want, "{decoder}({record})");
    }
}

/// What an `LlmError` decodes to: upstream's kind and message, the status, and an egress
/// refusal's fields beside them.
fn decoded_error(e: &oma_llm::LlmError) -> serde_json::Value {
    let mut v = serde_json::json!({ "kind": e.kind, "message": e.message });
    if let Some(s) = e.status {
        v["status"] = s.into();
    }
    if let Some(r) = &e.egress {
        v["reason"] = r.reason.as_str().into();
        if let Some(p) = &r.provider {
            v["provider"] = p.as_str().into();
        }
        if let Some(o) = &r.origin {
            v["origin"] = o.as_str().into();
        }
    }
    v
}

fn sample_errors() -> Vec<oma_llm::LlmError> {
    use oma_llm::{egress, ErrorKind, LlmError};
    let mut all: Vec<LlmError> = ErrorKind::ALL
        .iter()
        .filter(|k| **k != ErrorKind::Egress)
        .map(|&kind| LlmError { kind, message: format!("a {kind:?} \"error\"\n😀"), status: None, egress: None })
        .collect();
    all.push(LlmError { kind: ErrorKind::Api, message: "429 slow down".into(), status: Some(429), egress: None });
    all.push(egress::denied("openai", "https://api.openai.com".into()));
    all.push(egress::unsupported("mine", egress::CUSTOM_ADAPTER_DETAIL));
    all.push(egress::EgressPolicy::normalize(None).unwrap_err());
    all
}

#[test]
fn llm_error_record_round_trips() {
    let cases: Vec<(String, serde_json::Value)> =
        sample_errors().iter().map(|e| (e.to_record(), decoded_error(e))).collect();
    assert_decodes("llm.error", &cases);
}

#[test]
fn llm_event_record_round_trips() {
    use oma_core::kernel::message::{Block, Usage};
    use oma_llm::{LlmResponse, StreamEvent};
    let tool_use = Block::ToolUse {
        id: "t1".into(),
        name: "f".into(),
        input: serde_json::value::RawValue::from_string(r#"{"a":[1,"x"]}"#.into()).unwrap(),
        signature: None,
    };
    let response = LlmResponse {
        id: "msg_1".into(),
        content: vec![Block::text("hi \"there\""), tool_use.clone()],
        model: "m".into(),
        stop_reason: "tool_use".into(),
        usage: Usage { input_tokens: 12.0, output_tokens: 0.5 },
    };
    let events = [
        StreamEvent::Text("a \"delta\"\n\u{2028}😀".into()),
        StreamEvent::Text(String::new()),
        StreamEvent::Reasoning("why".into()),
        StreamEvent::ToolUse(tool_use),
        StreamEvent::Done(response),
    ];
    // Upstream's `{ type, data }` is the event's serde form (the adapters' tests pin it).
    let mut cases: Vec<(String, serde_json::Value)> =
        events.iter().map(|ev| (ev.to_record(), serde_json::to_value(ev).unwrap())).collect();
    for e in sample_errors() {
        cases.push((
            StreamEvent::Error(e.clone()).to_record(),
            serde_json::json!({ "type": "error", "data": decoded_error(&e) }),
        ));
        cases.push((oma_llm::throw_record(&e), serde_json::json!({ "type": "throw", "data": decoded_error(&e) })));
    }
    assert_decodes("llm.event", &cases);
}

/// The generated encoders of `DESCRIBED` (what lib/confined-shell.js sends) write the records
/// the kernel's option check reads: each kind's code from the layout, its value after it, and
/// `check_options` reads them as the options they describe.
#[test]
fn confined_described_record_round_trips() {
    use oma_core::tool::builtin::confined::{check_options, DESCRIBED};
    use serde_json::{json, Value};
    let c = |kind: &str| json!(DESCRIBED.code(kind));
    // (the JS encoding, the record Rust reads, what the check makes of it)
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "D.object({ network: D.string('allow'), readPaths: D.array([D.string('/opt/t')]), writePaths: D.array([]), \
             limits: D.object({ cpuSeconds: D.number(10), processes: D.undefined() }), required: D.boolean(false) })",
            json!([c("object"), {
                "network": [c("string"), "allow"],
                "readPaths": [c("array"), [[c("string"), "/opt/t"]]],
                "writePaths": [c("array"), []],
                "limits": [c("object"), { "cpuSeconds": [c("number"), 10], "processes": [c("undefined")] }],
                "required": [c("boolean"), false],
            }]),
            "Ok(Options { network: Allow, read_paths: [\"/opt/t\"], write_paths: [], limits: Limits { cpu_seconds: Some(10)",
        ),
        (
            "D.object({ limits: D.object({ openFiles: D.number(String(NaN)) }) })",
            json!([c("object"), { "limits": [c("object"), { "openFiles": [c("number"), "NaN"] }] }]),
            "limit \\\"openFiles\\\" must be a positive integer (got NaN).",
        ),
        ("D.null()", json!([c("null")]), "must be an object (got null)."),
        ("D.function()", json!([c("function")]), "must be an object (got function)."),
        ("D.symbol()", json!([c("symbol")]), "must be an object (got symbol)."),
        ("D.bigint()", json!([c("bigint")]), "must be an object (got bigint)."),
        ("D.undefined()", json!([c("undefined")]), "Ok(Options { network: Deny"),
    ];
    let calls: Vec<String> = cases.iter().map(|(js, _, _)| format!("((D) => {js})(b.confined.described)")).collect();
    for ((js, want, checked), got) in cases.iter().zip(node_json(&calls)) {
        let got: Value = serde_json::from_str(&got).expect("an encoder's record is JSON");
        assert_eq!(&got, want, "{js}");
        let outcome = format!("{:?}", check_options(&got));
        assert!(outcome.contains(checked), "{js}: {outcome}");
    }
}

/// The generated encoders of `LONG_STRING_RECORD` (what lib/llm.js sends beside a chat tail's
/// JSON) write the records `put_long_strings` reads: each string lands in the block it names.
#[test]
fn llm_long_string_record_round_trips() {
    use oma_core::kernel::message::{parse_messages, Block, Strictness};
    use oma_llm::tail::{put_long_strings, LONG_OUT_OF_STEP};
    let tail = || {
        parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},
                {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":""},{"type":"text","text":""}]}]"#,
            Strictness::Lenient,
        )
        .unwrap()
    };
    let calls = [
        "b.llm.longString.toolResult(1, 0, 'R \"é😀\\n'.repeat(200))".to_string(),
        "b.llm.longString.text(1, 1, 'T'.repeat(600))".to_string(),
        // The kind is the record's: a text's record for a tool result's blank is refused.
        "b.llm.longString.text(1, 0, 'x')".to_string(),
    ];
    let records: Vec<(u32, u32, u32, String)> =
        node_json(&calls).iter().map(|r| serde_json::from_str(r).expect("a record is JSON")).collect();
    let mut t = tail();
    put_long_strings(&mut t, records[..2].iter().cloned()).unwrap();
    match &t[1].content[..] {
        [Block::ToolResult { content, .. }, Block::Text { text: Some(text) }] => {
            assert_eq!(content, &"R \"é😀\n".repeat(200));
            assert_eq!(text, &"T".repeat(600));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(put_long_strings(&mut tail(), [records[2].clone()]), Err(LONG_OUT_OF_STEP));
}
