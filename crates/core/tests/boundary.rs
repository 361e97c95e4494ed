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
