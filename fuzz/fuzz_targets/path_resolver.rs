//! The sandbox's path resolution on model-chosen paths: lexical resolution, the root check and
//! the descriptor-relative open under a real temp root. Deep paths (tens of thousands of
//! components) must give an error or a result, never a stack overflow.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oma_core::tool::builtin::path_safety::{self, SandboxSpec};
use std::sync::OnceLock;

fn root() -> &'static str {
    static ROOT: OnceLock<String> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("oma-fuzz-root-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/f.txt"), b"x").unwrap();
        let _ = std::os::unix::fs::symlink("../..", dir.join("a/up"));
        dir.to_str().unwrap().to_string()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let root = root();
    let _ = path_safety::resolve(root, s);
    let _ = path_safety::normalize_abs(&format!("/{s}"));
    let spec = SandboxSpec { root: Some(root.to_string()), process_cwd: root.to_string() };
    for input in [format!("{root}/{s}"), s.to_string()] {
        if let Ok(r) = path_safety::resolve_path_within_cwd(&input, &spec, false) {
            // Whatever resolves must be inside the root.
            assert!(path_safety::is_within(&r.root, &r.path), "{} escaped {}", r.path, r.root);
            let _ = r.sandbox.open(&r.path, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC, 0, "open");
        }
    }
});
