//! The `csi` binary end to end: output contracts, exit codes, errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn csi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const G: &str = "examples/fig6-1/example.graphml";
const R: &str = "examples/fig6-1/report.json";

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}
fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const EXE: &str = "fixtures/crashes/null_deref/realistic-O0/null_deref";
const CORE: &str = "fixtures/crashes/null_deref/realistic-O0/core";

#[test]
fn no_arguments_shows_the_bundled_crash() {
    let o = csi(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Program terminated with signal SIGSEGV"),
        "{out}"
    );
    assert!(out.contains("#0   charge (list="), "{out}");
    assert!(
        out.contains("who=") && out.contains("\"zed\""),
        "argument values from the core: {out}"
    );
    let row = |n: u32| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")) && l.contains('│'))
            .unwrap_or_else(|| panic!("no line {n} in\n{out}"))
            .to_string()
    };
    // The crash line ran; the branch not taken and the code after the crash never did.
    assert!(row(31).contains("must"), "{}", row(31));
    assert!(row(30).contains("never"), "{}", row(30));
    assert!(row(42).contains("never"), "{}", row(42));
    assert!(
        out.contains("path trace (oldest → current): 27 → 28 → 29 → 31\n"),
        "{out}"
    );
}

#[test]
fn crash_json_contract() {
    let o = csi(&["analyze", "--exe", EXE, "--core", CORE, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for k in ["yes", "no", "maybe"] {
        assert!(v["global"][k].is_array(), "{k}");
        assert!(v["frames"][0][k].is_array(), "{k}");
    }
    let file = "./src/null_deref.c";
    let lines = &v["lines"][file];
    assert!(
        lines["must"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(31)),
        "{lines}"
    );
    assert!(
        lines["never"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(42)),
        "{lines}"
    );
    let t0 = &v["threads"][0];
    assert_eq!(t0["crashed"], true);
    let f0 = &t0["frames"][0];
    assert_eq!(f0["function"], "charge");
    assert_eq!(f0["file"], file);
    assert_eq!(f0["line"], 31);
    assert!(f0["column"].as_u64().unwrap() > 0);
    let steps: Vec<u64> = f0["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [27, 28, 29, 31]);
    assert_eq!(v["signal"]["name"], "SIGSEGV");
    // Frame ids are the graph's own node ids.
    assert!(v["frames"][0]["point"][0]
        .as_str()
        .unwrap()
        .starts_with("charge#"));
}

#[test]
fn crash_bad_input_exit_codes() {
    let other = "fixtures/crashes/oob_write/realistic-O0/core";
    let o = csi(&["analyze", "--exe", EXE, "--core", other]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("was not produced by") && err.lines().count() == 1,
        "{err}"
    );
    let o = csi(&["show", "--exe", EXE, "--core", EXE]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a core dump"), "{}", stderr(&o));
}

#[test]
fn show_lists_every_thread() {
    let d = "fixtures/crashes/thread_crash/realistic-O0";
    let o = csi(&[
        "show",
        "--exe",
        &format!("{d}/thread_crash"),
        "--core",
        &format!("{d}/core"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("\nThread ").count(), 3, "{out}");
    assert!(out.contains("(crashed)\n  #0   compute"), "{out}");
    assert!(out.contains("parker"), "{out}");
}

#[test]
fn analyze_without_arguments_runs_the_bundled_example() {
    let o = csi(&["analyze"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Crash stack"), "{out}");
    assert!(out.contains("#0  bar"), "{out}");
    // Line 9 is the crash (must), line 26 the loop after the in-progress call (never).
    let line = |n: u32| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no line {n} in\n{out}"))
            .to_string()
    };
    assert!(line(9).contains("must"), "{}", line(9));
    assert!(line(26).contains("never"), "{}", line(26));
    assert!(
        line(23).contains("never"),
        "puts call-site coverage is false: {}",
        line(23)
    );
}

#[test]
fn json_contract() {
    let o = csi(&["analyze", "--graph", G, "--report", R, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let yes = ids(&v["global"]["yes"]);
    let no = ids(&v["global"]["no"]);
    let maybe = ids(&v["global"]["maybe"]);
    assert_eq!(yes.len() + no.len() + maybe.len(), 23, "every node once");
    assert!(yes.contains(&"n:-3:4".to_string()), "crash node is yes");
    assert!(no.contains(&"n:-1:7".to_string()), "E is never");
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0]["function"], "bar", "innermost first");
    assert_eq!(frames[2]["function"], "main");
    for f in frames {
        for k in ["yes", "no", "maybe"] {
            assert!(f[k].is_array());
        }
    }
    let lines = &v["lines"]["example.c"];
    let nums = |k: &str| -> Vec<u64> {
        lines[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    assert!(nums("must").contains(&9));
    assert!(nums("never").contains(&26));
    for k in ["must", "may", "never", "partial"] {
        assert!(lines[k].is_array(), "{k}");
    }
}

#[test]
fn csiclipse_rows_have_seven_fields() {
    let o = csi(&[
        "analyze",
        "--graph",
        G,
        "--report",
        R,
        "--format",
        "csiclipse",
    ]);
    assert!(o.status.success());
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 4, "three frames + one global row:\n{out}");
    for r in &rows {
        assert_eq!(r.split(';').count(), 7, "{r}");
    }
    assert!(rows[0].starts_with("bar;example.c;local;"), "{}", rows[0]);
    assert!(
        rows[3].starts_with("unused;example.c;global;"),
        "{}",
        rows[3]
    );
    assert!(rows[3].ends_with(";0"));
}

#[test]
fn queries() {
    let q = |args: &[&str]| {
        let mut a = vec!["query", "--graph", G, "--report", R];
        a.extend_from_slice(args);
        let o = csi(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    assert_eq!(q(&["--may-run", "example.c:26"]), "impossible");
    assert_eq!(q(&["--may-run", "example.c:14"]), "possible");
    assert_eq!(q(&["--may-not-run", "n:-2:4"]), "impossible");
    assert_eq!(q(&["--before", "example.c:22", "example.c:8"]), "possible");
    assert_eq!(
        q(&["--before", "example.c:8", "example.c:22"]),
        "impossible"
    );
    let o = csi(&[
        "query",
        "--graph",
        G,
        "--report",
        R,
        "--may-run",
        "example.c:7",
    ]);
    assert_eq!(o.status.code(), Some(2), "no code on line 7");
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn bad_input_exits_2_with_file_element_reason() {
    let dir = std::env::temp_dir().join(format!("csi-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good_graph = std::fs::read_to_string(root().join(G)).unwrap();
    let good_report = std::fs::read_to_string(root().join(R)).unwrap();
    let cases: Vec<(&str, String, String, &str)> = vec![
        (
            "truncated graphml",
            good_graph[..good_graph.len() / 2].to_string(),
            good_report.clone(),
            "well-formed",
        ),
        (
            "empty graph",
            "<graphml><graph/></graphml>".into(),
            good_report.clone(),
            "no functions",
        ),
        (
            "not json",
            good_graph.clone(),
            "{\"crash\": [".into(),
            "not valid JSON",
        ),
        (
            "unknown node",
            good_graph.clone(),
            good_report.replace("n:-3:4", "n:-3:99"),
            "n:-3:99",
        ),
        (
            "no crash",
            good_graph.clone(),
            "{\"obsNo\": []}".into(),
            "missing crash stack",
        ),
        (
            "wrong shape",
            good_graph.clone(),
            "[1,2]".into(),
            "JSON object",
        ),
        (
            "bad obsYes",
            good_graph.clone(),
            good_report.replace("\"reliable\": false,", ""),
            "reliable",
        ),
    ];
    for (what, graph, report, needle) in cases {
        let g = write(&dir, "g.graphml", &graph);
        let r = write(&dir, "r.json", &report);
        let o = csi(&["analyze", "--graph", &g, "--report", &r]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(needle), "{what}: {err}");
        assert!(
            err.contains("g.graphml") || err.contains("r.json"),
            "{what}: names the file: {err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
    let o = csi(&["analyze", "--graph", "/nonexistent.graphml", "--report", R]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent.graphml"));
}

#[test]
fn inconsistent_report_exits_3() {
    let dir = std::env::temp_dir().join(format!("csi-cli-inc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // main's loop (E) after the in-progress call to foo cannot have run.
    let report = std::fs::read_to_string(root().join(R))
        .unwrap()
        .replace("\"obsNo\": [[\"n:-1:4\"]]", "\"obsNo\": [[\"n:-1:4\"]], \"obsYes\": [{\"reliable\": false, \"entries\": [[\"n:-1:7\"]]}]");
    let r = write(&dir, "r.json", &report);
    let o = csi(&["analyze", "--graph", G, "--report", &r]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("inconsistent"), "{}", stderr(&o));
}

#[test]
fn missing_sources_still_analyse_and_say_which() {
    let dir = std::env::temp_dir().join(format!("csi-cli-nosrc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (exe, core) = (dir.join("null_deref"), dir.join("core"));
    std::fs::copy(root().join(EXE), &exe).unwrap();
    std::fs::copy(root().join(CORE), &core).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(["show", "--exe"])
        .arg(&exe)
        .arg("--core")
        .arg(&core)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("sources not found (statuses shown by line number): ./src/null_deref.c"),
        "{out}"
    );
    assert!(out.contains("    31 must  must  ✘"), "{out}");
    // --substitute-path says where they are (the first prefix that gives a file wins).
    let src = root().join("fixtures/src").canonicalize().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(["show", "--exe"])
        .arg(&exe)
        .arg("--core")
        .arg(&core)
        .args([
            "--substitute-path",
            "./src=/nonexistent",
            "--substitute-path",
        ])
        .arg(format!("./src={}", src.display()))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("sources not found"), "{out}");
    let line31 = std::fs::read_to_string(src.join("null_deref.c"))
        .unwrap()
        .lines()
        .nth(30)
        .unwrap()
        .to_string();
    assert!(
        out.contains(
            &format!("    31 must  must  ✘│ {line31}")
                .trim_end()
                .to_string()
        ),
        "{out}"
    );
    let o = csi(&["show", "--substitute-path", "nonsense"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("expected FROM=TO"), "{}", stderr(&o));
}

/// `csi tracing` on bad input: one clear line and exit 2, the file untouched.
#[test]
fn tracing_bad_input() {
    let before = std::fs::read(root().join(EXE)).unwrap();
    for (args, want) in [
        (vec!["tracing", "--exe", "no/such/file"], "no/such/file"),
        (vec!["tracing", "--exe", "README.md"], "not an ELF file"),
        // A build without `--csi-scheme=custom` has no switches.
        (vec!["tracing", "--exe", EXE], "no tracing switches"),
        (
            vec!["tracing", "--exe", EXE, "--set", "main"],
            "expected PATTERN=on or PATTERN=off",
        ),
        (
            vec!["tracing", "--exe", EXE, "--set", "main=off"],
            "no switchable function matches `main`",
        ),
    ] {
        let o = csi(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(root().join(EXE)).unwrap(), before);
}
