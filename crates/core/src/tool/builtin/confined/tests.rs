use serde_json::json;

use super::*;
use crate::tool::builtin::testutil::{rm_rf, tmp_dir};

fn s(v: &str) -> Value {
    json!([4, v])
}
fn n(v: f64) -> Value {
    json!([3, v])
}
fn obj(fields: Value) -> Value {
    json!([6, fields])
}
fn err(d: Value) -> (ErrorClass, String) {
    check_options(&d).unwrap_err()
}

#[test]
fn options_default_and_parse() {
    assert_eq!(check_options(&json!([0])).unwrap(), Options::default());
    let o = check_options(&obj(json!({
        "network": s("allow"),
        "readPaths": [5, [s("/opt/tools")]],
        "writePaths": [5, []],
        "limits": obj(json!({ "cpuSeconds": n(10.0), "processes": [0] })),
        "required": [2, false],
    })))
    .unwrap();
    assert_eq!(o.network, Network::Allow);
    assert_eq!(o.read_paths, ["/opt/tools"]);
    assert_eq!(o.limits, Limits { cpu_seconds: Some(10), ..Limits::default() });
    assert!(!o.required);
}

#[test]
fn bad_options_have_clear_texts() {
    let t = ErrorClass::Type;
    assert_eq!(err(s("x")), (t, "ConfinedShellExecutor options must be an object (got \"x\").".into()));
    assert_eq!(
        err(obj(json!({ "netwrok": s("deny") }))),
        (t, "Unknown ConfinedShellExecutor option \"netwrok\" (known: network, readPaths, writePaths, limits, required).".into())
    );
    assert_eq!(
        err(obj(json!({ "network": s("none") }))),
        (t, "ConfinedShellExecutor option \"network\" must be 'deny' or 'allow' (got \"none\").".into())
    );
    assert_eq!(
        err(obj(json!({ "readPaths": s("/usr") }))),
        (t, "ConfinedShellExecutor option \"readPaths\" must be an array of absolute paths (got \"/usr\").".into())
    );
    assert_eq!(
        err(obj(json!({ "writePaths": [5, [s("/ok"), s("rel")]] }))),
        (t, "ConfinedShellExecutor option \"writePaths[1]\" must be an absolute path (got \"rel\").".into())
    );
    assert_eq!(
        err(obj(json!({ "limits": n(3.0) }))),
        (t, "ConfinedShellExecutor option \"limits\" must be an object (got 3).".into())
    );
    assert_eq!(
        err(obj(json!({ "limits": obj(json!({ "cpu": n(3.0) })) }))),
        (t, "Unknown ConfinedShellExecutor limit \"cpu\" (known: cpuSeconds, addressSpaceBytes, fileSizeBytes, openFiles, processes).".into())
    );
    assert_eq!(
        err(obj(json!({ "limits": obj(json!({ "openFiles": s("64") })) }))),
        (t, "ConfinedShellExecutor limit \"openFiles\" must be a number (got \"64\").".into())
    );
    for (bad, shown) in [(json!([3, "NaN"]), "NaN"), (n(0.0), "0"), (n(1.5), "1.5"), (n(-3.0), "-3")] {
        assert_eq!(
            err(obj(json!({ "limits": obj(json!({ "processes": bad })) }))),
            (
                ErrorClass::Range,
                format!("ConfinedShellExecutor limit \"processes\" must be a positive integer (got {shown}).")
            )
        );
    }
    assert_eq!(
        err(obj(json!({ "required": s("yes") }))),
        (t, "ConfinedShellExecutor option \"required\" must be a boolean (got \"yes\").".into())
    );
}

fn landlock() -> bool {
    let abi = oma_confine::landlock_abi();
    if abi < oma_confine::REQUIRED_LANDLOCK_ABI {
        eprintln!("skipped: Landlock ABI {abi} on this kernel");
        return false;
    }
    true
}

fn req(cmd: &str, root: &str, cwd: Option<&str>) -> ExecRequest {
    ExecRequest {
        command: cmd.into(),
        timeout_ms: 20_000,
        cwd: cwd.map(Into::into),
        sandbox_root: Some(root.into()),
        process_cwd: "/".into(),
        env: std::env::vars().collect(),
    }
}

#[test]
fn commands_run_in_the_root_with_a_private_tmp() {
    if !landlock() {
        return;
    }
    let base = tmp_dir("confined-run");
    let root = format!("{base}/root");
    std::fs::create_dir_all(format!("{root}/sub")).unwrap();
    std::fs::write(format!("{base}/secret"), "s3cret").unwrap();
    let shell = ConfinedShell::start(Options::default()).unwrap();
    let dirs = shell.temp_dir().to_string_lossy().into_owned();
    let tmp = format!("{dirs}/root-0");
    let r = shell
        .exec(
            req("pwd; echo $TMPDIR $TMP $TEMP $HOME; echo x > $TMPDIR/t && cat $TMPDIR/t; echo y > f", &root, None),
            &|| false,
        )
        .unwrap();
    assert_eq!(r.raw.stdout, format!("{root}\n{tmp} {tmp} {tmp} {tmp}\nx\n"), "{}", r.raw.stderr);
    assert!(r.missing.is_empty());
    assert!(std::path::Path::new(&format!("{root}/f")).exists());
    // cwd: inside the root (relative to it) is fine; outside is the sandbox's refusal.
    let r = shell.exec(req("pwd", &root, Some("sub")), &|| false).unwrap();
    assert_eq!(r.raw.stdout, format!("{root}/sub\n"));
    let e = shell.exec(req("pwd", &root, Some("/etc")), &|| false).err().unwrap();
    assert_eq!(e, path_safety::outside_error("/etc", &root));
    let e = shell.exec(req("pwd", &root, Some("../")), &|| false).err().unwrap();
    assert_eq!(e, path_safety::outside_error(&base, &root));
    let e = shell.exec(ExecRequest { sandbox_root: None, ..req("pwd", &root, None) }, &|| false).err().unwrap();
    assert_eq!(e, NO_SANDBOX_ROOT);
    // Outside the root and the temp dir: refused.
    let r = shell
        .exec(req(&format!("cat {base}/secret; echo z > {base}/new; cat /proc/$PPID/environ"), &root, None), &|| false)
        .unwrap();
    assert!(!r.raw.stdout.contains("s3cret"), "{}", r.raw.stdout);
    assert_eq!(r.raw.stderr.matches("Permission denied").count(), 3, "{}", r.raw.stderr);
    assert!(!std::path::Path::new(&format!("{base}/new")).exists());
    // A root removed and made again is a new directory: the rules follow it.
    rm_rf(&root);
    std::fs::create_dir(&root).unwrap();
    let r = shell.exec(req("echo again > g && cat g", &root, None), &|| false).unwrap();
    assert_eq!((r.raw.stdout.as_str(), r.raw.stderr.as_str()), ("again\n", ""));
    shell.dispose().unwrap();
    assert!(!std::path::Path::new(&dirs).exists());
    rm_rf(&base);
}

/// Lines of `ps` naming `marker` exactly (live processes: zombies show as `[sleep] <defunct>`).
fn running(marker: &str) -> usize {
    let out = std::process::Command::new("ps").args(["-A", "-o", "args="]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.trim() == marker).count()
}

#[test]
fn each_sandbox_root_has_its_own_private_dir() {
    if !landlock() {
        return;
    }
    let base = tmp_dir("confined-private");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let shell = ConfinedShell::start(Options::default()).unwrap();
    let home = |root: &str| shell.exec(req("printf %s \"$HOME\"", root, None), &|| false).unwrap().raw.stdout;
    let (home_a, home_b) = (home(&a), home(&b));
    assert_ne!(home_a, home_b);
    assert_eq!(home(&a), home_a, "a root keeps its private dir");
    // Agent A plants a git config in its HOME and tries B's: only its own is writable.
    let plant = format!(
        "printf '[core]\\n\\tfsmonitor = touch {a}/pwned\\n' > ~/.gitconfig && echo own; \
         printf x > {home_b}/.gitconfig && echo other; ls {home_b}"
    );
    let r = shell.exec(req(&plant, &a, None), &|| false).unwrap();
    assert_eq!(r.raw.stdout, "own\n", "{}", r.raw.stderr);
    assert_eq!(r.raw.stderr.matches("Permission denied").count(), 2, "{}", r.raw.stderr);
    // B's commands see an empty home of their own: no planted config runs there.
    let r = shell.exec(req("ls -A ~; git config --global core.fsmonitor; echo $?", &b, None), &|| false).unwrap();
    assert_eq!(r.raw.stdout, "1\n", "{}", r.raw.stderr);
    // In A's own root its config is read, as a home's is.
    let r = shell.exec(req("git config --global core.fsmonitor", &a, None), &|| false).unwrap();
    assert_eq!(r.raw.stdout, format!("touch {a}/pwned\n"), "{}", r.raw.stderr);
    // A private dir removed from outside is made again, and the rules follow the new one.
    rm_rf(&home_b);
    let r = shell.exec(req("echo z > ~/z && cat ~/z", &b, None), &|| false).unwrap();
    assert_eq!((r.raw.stdout.as_str(), r.raw.stderr.as_str()), ("z\n", ""));
    shell.dispose().unwrap();
    assert!(!std::path::Path::new(&home_a).exists() && !std::path::Path::new(&home_b).exists());
    rm_rf(&base);
}

/// A fresh sandbox root and a shell that confines as far as this host allows (`required: false`).
fn best_effort(tag: &str, limits: Limits) -> (String, ConfinedShell) {
    let base = tmp_dir(tag);
    (base, ConfinedShell::start(Options { limits, required: false, ..Options::default() }).unwrap())
}

/// Disposes of the shell, then removes its sandbox root.
fn finish(shell: ConfinedShell, base: &str) {
    shell.dispose().unwrap();
    rm_rf(base);
}

#[test]
fn leftovers_end_with_the_command() {
    let (base, shell) = best_effort("confined-leftovers", Limits::default());
    let marker = format!("sleep 8.{}", std::process::id());
    // A background child, a nohup'd one and a setsid'd daemon, none holding the output pipes,
    // and a command that exits 0 at once. The portable kill (a process group) cannot reach a
    // setsid'd process, as for any bash.
    let quiet = "> /dev/null 2>&1";
    let mut cmd = format!("{marker} {quiet} & nohup {marker} {quiet} & ");
    if cfg!(all(target_os = "linux", not(feature = "portable"))) {
        cmd.push_str(&format!("(setsid {marker} {quiet} &); "));
    }
    cmd.push_str("echo started");
    let r = shell.exec(req(&cmd, &base, None), &|| false).unwrap();
    assert_eq!((r.raw.stdout.as_str(), r.raw.exit_code), ("started\n", 0), "{}", r.raw.stderr);
    // Killed before exec returned: nothing to wait for.
    assert_eq!(running(&marker), 0);
    finish(shell, &base);
}

#[test]
fn limits_give_clear_results() {
    let limits = Limits { cpu_seconds: Some(1), file_size_bytes: Some(1024), ..Limits::default() };
    let (base, shell) = best_effort("confined-limits", limits);
    let r = shell.exec(req("while :; do :; done", &base, None), &|| false).unwrap();
    assert_eq!(r.raw.stderr, cpu_limit_text(1));
    assert_eq!(r.raw.exit_code, 1);
    let r = shell.exec(req("head -c 5000 /dev/zero > big; echo after", &base, None), &|| false).unwrap();
    assert!(r.raw.stderr.ends_with(&format!("\n{}", file_size_limit_text(1024))), "{}", r.raw.stderr);
    assert_eq!((r.raw.stdout.as_str(), r.raw.exit_code), ("after\n", 0));
    assert_eq!(std::fs::metadata(format!("{base}/big")).unwrap().len(), 1024);
    let r = shell.exec(req("head -c 5000 /dev/zero > big2", &base, None), &|| false).unwrap();
    assert!(r.raw.stderr.ends_with(&file_size_limit_text(1024)), "{}", r.raw.stderr);
    assert_ne!(r.raw.exit_code, 0);
    finish(shell, &base);
}

#[test]
fn a_timeout_still_kills_the_whole_tree() {
    let (base, shell) = best_effort("confined-timeout", Limits::default());
    let marker = format!("sleep 9.{}", std::process::id());
    // The portable kill (a process group) cannot reach a setsid'd descendant, as for any bash.
    let cmd = if cfg!(all(target_os = "linux", not(feature = "portable"))) {
        format!("({marker} &); setsid {marker} & {marker}")
    } else {
        format!("({marker} &); {marker}")
    };
    let r = shell.exec(ExecRequest { timeout_ms: 300, ..req(&cmd, &base, None) }, &|| false).unwrap();
    assert_eq!(r.raw.exit_code, 124);
    let alive = || {
        let out = std::process::Command::new("ps").args(["-A", "-o", "args="]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == marker)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive(), "{marker} survived");
    finish(shell, &base);
}

#[test]
fn notes_need_the_limit_and_the_sign() {
    let raw = |stderr: &str, code| BashRaw { stdout: String::new(), stderr: stderr.into(), exit_code: code };
    let all = Limits {
        cpu_seconds: Some(10),
        address_space_bytes: Some(1 << 30),
        file_size_bytes: Some(4096),
        open_files: Some(32),
        processes: Some(50),
    };
    let note = |l: &Limits, stderr: &str, code, signal| limit_note(l, &Exec { raw: raw(stderr, code), signal });
    assert_eq!(note(&all, "", 1, Some(libc::SIGXCPU)), Some(cpu_limit_text(10)));
    assert_eq!(note(&all, "", 152, None), Some(cpu_limit_text(10)));
    assert_eq!(note(&Limits::default(), "", 152, None), None);
    assert_eq!(note(&all, "", 153, None), Some(file_size_limit_text(4096)));
    assert_eq!(
        note(&all, "bash: fork: retry: Resource temporarily unavailable\n", 254, None),
        Some(process_limit_text(50))
    );
    assert_eq!(note(&all, "cat: x: Too many open files\n", 1, None), Some(open_files_limit_text(32)));
    assert_eq!(note(&all, "python: MemoryError\n", 1, None), Some(address_space_limit_text(1 << 30)));
    assert_eq!(note(&all, "", 124, Some(libc::SIGXCPU)), None);
    assert_eq!(note(&all, "plain failure", 2, None), None);
    assert_eq!(
        note(&all, "bash: line 1: 7 File size limit exceeded head\n", 0, None),
        Some(file_size_limit_text(4096))
    );
}
