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
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lib/generated/boundary.js");
    let mut script = format!("const h = require({}).history\n", q(lib.to_str().expect("a UTF-8 path")));
    for (name, args, _) in &cases {
        script.push_str(&format!("console.log(JSON.stringify(h.{name}({})))\n", args.join(", ")));
    }
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg(&script)
        .output()
        .expect("node runs (the JS side's tests need it too)");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).expect("JSON.stringify writes UTF-8");
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), cases.len());
    for ((name, args, rust), js) in cases.iter().zip(lines) {
        assert_eq!(js, rust, "{name}({})", args.join(", "));
    }
}
