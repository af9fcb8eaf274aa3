//! `csi triage` end to end on real crashes made at test time: the corpus program
//! bench/triage/src/calc.c built with csi-cc, run on inputs that trigger its seeded bugs,
//! plus cores that cannot be used (garbage, executable gone, executable rebuilt).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// csi-cc: `$CSI_CC`, else its own target directory's build, built there when missing (as
/// fixtures/build.sh does; needs LLVM 19, which scripts/test installs).
fn csi_cc() -> PathBuf {
    if let Some(p) = std::env::var_os("CSI_CC") {
        return PathBuf::from(p);
    }
    let p = root().join("crates/csi-cc/target/release/csi-cc");
    if !p.is_file() {
        let st = Command::new("cargo")
            .args(["build", "--release", "-q", "--manifest-path"])
            .arg(root().join("crates/csi-cc/Cargo.toml"))
            .env("LLVM_SYS_191_PREFIX", "/usr/lib/llvm-19")
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .expect("cargo");
        assert!(st.success(), "building csi-cc failed");
    }
    p
}

fn build(out: &Path, extra: &[&str]) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let st = Command::new(csi_cc())
        .args(["-O0", "-g", "-fdebug-compilation-dir=.", "-o"])
        .arg(out)
        .arg("src/calc.c")
        .args(extra)
        .current_dir(root().join("bench/triage"))
        .status()
        .unwrap();
    assert!(st.success(), "csi-cc failed");
}

/// Runs `exe input` in `dir` until it crashes; returns the core it left (the kernel's, or
/// gdb's when core_pattern sends cores elsewhere).
fn crash(exe: &Path, input: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c unlimited; exec \"$0\" \"$1\"")
        .arg(exe)
        .arg(input)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(!st.status.success(), "{input} did not crash");
    let core = dir.join("core");
    if !core.is_file() {
        Command::new("gdb")
            .args([
                "-batch",
                "-nx",
                "-ex",
                "run",
                "-ex",
                "generate-core-file core",
                "-ex",
                "kill",
                "--args",
            ])
            .arg(exe)
            .arg(input)
            .current_dir(dir)
            .output()
            .expect("gdb (for a core when the kernel writes none)");
    }
    assert!(core.is_file(), "no core for {input} in {}", dir.display());
    core
}

fn triage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi"))
        .arg("triage")
        .args(args)
        .output()
        .unwrap()
}

/// The line of calc.c holding `text`.
fn line_of(text: &str) -> u64 {
    let src = std::fs::read_to_string(root().join("bench/triage/src/calc.c")).unwrap();
    src.lines().position(|l| l.contains(text)).expect(text) as u64 + 1
}

fn lines(bucket: &Value, key: &str) -> Vec<u64> {
    // Files are named as DWARF and csi-cc wrote them (`./src/calc.c`).
    bucket[key]
        .as_object()
        .unwrap()
        .iter()
        .find(|(f, _)| f.ends_with("src/calc.c"))
        .and_then(|(_, l)| l.as_array())
        .map(|a| a.iter().map(|v| v.as_u64().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn buckets_and_skips_on_real_crashes() {
    let tmp = std::env::temp_dir().join(format!("csi-triage-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let exe = tmp.join("bin/calc");
    build(&exe, &[]);
    let cores = tmp.join("cores");
    let inputs = [
        ("div", "6 0 /"),
        ("div", "x 3 + 5 5 - /"),
        ("div", "y x x - /"),
        ("mod", "9 0 %"),
        ("mod", "4 2 * 0 %"),
        ("underflow", "+"),
        ("underflow", "3 *"),
        ("underflow", "x 2 + -"),
    ];
    for (k, (bug, input)) in inputs.iter().enumerate() {
        crash(&exe, input, &cores.join(format!("{bug}/{k}")));
    }
    // Not a core at all.
    std::fs::write(cores.join("garbage.core"), b"not an ELF file").unwrap();
    // A core whose executable is gone.
    let gone = tmp.join("gone/calc");
    build(&gone, &[]);
    crash(&gone, "1 0 /", &cores.join("gone"));
    std::fs::remove_file(&gone).unwrap();
    // A core of an executable rebuilt since (a different build id).
    let rebuilt = tmp.join("rebuilt/calc");
    build(&rebuilt, &[]);
    crash(&rebuilt, "1 0 /", &cores.join("rebuilt"));
    build(&rebuilt, &["-fno-inline", "-fomit-frame-pointer", "-O1"]);

    let o = triage(&["--format", "json", cores.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let buckets = doc["buckets"].as_array().unwrap();
    let find = |sig: &str| {
        buckets
            .iter()
            .find(|b| b["signature"].as_str().unwrap().starts_with(sig))
            .unwrap_or_else(|| panic!("no bucket {sig} in {doc:#}"))
    };
    let div = find("SIGFPE in divide | apply | eval | main");
    let modulo = find("SIGFPE in modulo | apply | eval | main");
    let under = find("SIGSEGV in apply | eval | main");
    assert_eq!(buckets.len(), 3, "{doc:#}");
    for (b, bug, n) in [(div, "div", 3), (modulo, "mod", 2), (under, "underflow", 3)] {
        let crashes = b["crashes"].as_array().unwrap();
        assert_eq!(crashes.len(), n, "{b:#}");
        for c in crashes {
            let core = c["core"].as_str().unwrap();
            assert!(core.contains(&format!("/cores/{bug}/")), "{core} in {b:#}");
            assert!(Path::new(core).is_file());
            assert_eq!(c["executable"].as_str().unwrap(), exe.to_str().unwrap());
        }
    }
    // What every crash of a bucket ran, and what none did (the inputs say which).
    let (divide, modulo_line) = (line_of("return a / b;"), line_of("long r = a % b;"));
    assert!(lines(div, "must_in_all").contains(&divide), "{div:#}");
    assert!(lines(div, "never_in_any").contains(&modulo_line), "{div:#}");
    assert!(
        lines(modulo, "must_in_all").contains(&modulo_line),
        "{modulo:#}"
    );
    assert!(
        lines(modulo, "never_in_any").contains(&divide),
        "{modulo:#}"
    );
    // `x 2 + -` looked x up; the other two crashes did not: in neither list. The end of
    // `eval` ran in none (every crash is inside the loop).
    let lookup_call = line_of("push(lookup(tok));");
    assert!(
        !lines(under, "must_in_all").contains(&lookup_call),
        "{under:#}"
    );
    assert!(
        !lines(under, "never_in_any").contains(&lookup_call),
        "{under:#}"
    );
    assert!(
        lines(under, "never_in_any").contains(&line_of("struct num *r = pop();")),
        "{under:#}"
    );
    assert!(
        lines(under, "must_in_all").contains(&line_of("long x = a->v, y = b->v;")),
        "{under:#}"
    );

    let skipped = doc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 3, "{skipped:#?}");
    let reason = |part: &str| {
        skipped
            .iter()
            .find(|s| s["core"].as_str().unwrap().contains(part))
            .unwrap_or_else(|| panic!("{part} not skipped: {skipped:#?}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        reason("garbage.core").contains("not an ELF"),
        "{}",
        reason("garbage.core")
    );
    assert!(
        reason("/gone/").starts_with("unknown executable"),
        "{}",
        reason("/gone/")
    );
    assert!(
        reason("/rebuilt/").starts_with("mixed builds"),
        "{}",
        reason("/rebuilt/")
    );

    // The text table says the same; `--exe` overrides what the cores recorded.
    let o = triage(&[
        cores.join("div").to_str().unwrap(),
        "--exe",
        exe.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        text.starts_with("3 cores: 3 analysed into 1 buckets, 0 skipped"),
        "{text}"
    );
    assert!(
        text.contains("3 × SIGFPE in divide | apply | eval | main"),
        "{text}"
    );
    assert!(text.contains("must in all:"), "{text}");
    let o = triage(&[
        cores.join("div").to_str().unwrap(),
        "--exe",
        rebuilt.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "wrong --exe skips, never fails");
    assert!(
        text.contains("0 analysed into 0 buckets, 3 skipped"),
        "{text}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn missing_input_is_one_line_of_error() {
    let o = triage(&["/nonexistent/crashes"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/crashes"), "{err}");
}
