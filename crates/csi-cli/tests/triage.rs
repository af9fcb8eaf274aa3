//! `csi triage` end to end on real crashes made at test time: the corpus program
//! bench/triage/src/calc.c built with csi-cc, run on inputs that trigger its seeded bugs,
//! plus cores that cannot be used (garbage, executable gone, executable rebuilt).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

mod common;
use common::{build, crash, csi_cc, root};

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
    // A zstd-compressed core (as systemd-coredump stores them) counts like the plain one.
    let plain = crash(&exe, "8 0 /", &tmp.join("plain"));
    std::fs::create_dir_all(cores.join("div/zst")).unwrap();
    let st = Command::new("zstd")
        .args(["-q", "-o"])
        .arg(cores.join("div/zst/core.zst"))
        .arg(&plain)
        .status()
        .expect("zstd");
    assert!(st.success());
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
    for (b, bug, n) in [(div, "div", 4), (modulo, "mod", 2), (under, "underflow", 3)] {
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

    // --slices: every division crash's restricted slice holds the division and where its
    // operands came from; a bucket keeps what all of them hold.
    let o = triage(&[
        "--format",
        "json",
        "--slices",
        cores.join("div").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let sliced: Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &sliced["buckets"][0];
    for text in ["return a / b;", "long x = a->v, y = b->v;"] {
        assert!(
            lines(b, "slice_in_all").contains(&line_of(text)),
            "{text}: {b:#}"
        );
    }
    assert!(
        doc["buckets"][0].get("slice_in_all").is_none(),
        "only with --slices"
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
        text.starts_with("4 cores: 4 analysed into 1 buckets, 0 skipped"),
        "{text}"
    );
    assert!(
        text.contains("4 × SIGFPE in divide | apply | eval | main"),
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
        text.contains("0 analysed into 0 buckets, 4 skipped"),
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

/// Runs `exe input` in `dir` with `CSI_COVERAGE_OUT=dir`; it must exit 0.
fn pass(exe: &Path, input: &str, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let o = Command::new(exe)
        .arg(input)
        .env("CSI_COVERAGE_OUT", dir)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{input}: {o:?}");
}

#[test]
fn crashes_against_passing_runs() {
    let tmp = std::env::temp_dir().join(format!("csi-triage-passing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let exe = tmp.join("bin/calc");
    // Basic-block coverage: a passing run's coverage says line by line what ran.
    build(&exe, &["--csi-scheme=bb"]);
    for (k, input) in ["6 0 /", "x 3 + 5 5 - /", "1 0 %"].iter().enumerate() {
        crash(&exe, input, &tmp.join(format!("cores/{k}")));
    }
    let inputs = ["1 2 +", "6 3 /", "x 2 *", "9 4 %"];
    for (k, input) in inputs.iter().enumerate() {
        pass(&exe, input, &tmp.join(format!("passing/{k}")));
    }
    std::fs::write(tmp.join("passing/junk.csicov"), b"CSICOV01 truncated").unwrap();
    let o = triage(&[
        "--format",
        "json",
        "--passing",
        tmp.join("passing").to_str().unwrap(),
        "--suspicious",
        "1000",
        tmp.join("cores").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["summary"]["passing_runs"], 4, "{doc:#}");
    let merged = &doc["passing_programs"][0];
    assert_eq!(merged["runs"], 4, "{doc:#}");
    // Every passing run took the result off the stack; one of four divided.
    assert!(lines(merged, "always").contains(&line_of("struct num *r = pop();")));
    assert!(lines(merged, "sometimes").contains(&line_of("return a / b;")));
    let junk = &doc["passing_unreadable"][0];
    assert!(
        junk["file"].as_str().unwrap().ends_with("junk.csicov"),
        "{doc:#}"
    );
    let div = doc["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["signature"]
                .as_str()
                .unwrap()
                .starts_with("SIGFPE in divide")
        })
        .unwrap_or_else(|| panic!("{doc:#}"));
    let cmp = &div["passing"];
    assert_eq!(cmp["runs"], 4, "{cmp:#}");
    // Every passing run, and no crash, took the result off the stack after the loop.
    let result = line_of("struct num *r = pop();");
    assert!(lines(cmp, "passing_only").contains(&result), "{cmp:#}");
    let suspicious = cmp["suspicious"].as_array().unwrap();
    let entry = |line: u64| {
        suspicious
            .iter()
            .find(|s| s["line"] == line && s["file"].as_str().unwrap().ends_with("src/calc.c"))
    };
    // The division ran in both crashes of the bucket and in one passing run ("6 3 /"): known
    // exactly, and it is the first line: the crashes stopped on it.
    let divide = line_of("return a / b;");
    let d = entry(divide).unwrap_or_else(|| panic!("{cmp:#}"));
    assert_eq!(
        (d["failed"].clone(), d["passed"].clone()),
        (json!([2, 2]), json!([1, 1])),
        "{d:#}"
    );
    assert_eq!(d["on_stack"], 2);
    let rank = suspicious.iter().position(|s| s == d).unwrap();
    assert!(rank < 5, "the division ranks {} in {cmp:#}", rank + 1);
    // The modulo never ran in this bucket: not suspicious here.
    assert!(entry(line_of("long r = a % b;")).is_none(), "{cmp:#}");
    // Every ranked line's counts are intervals within the runs.
    for s in suspicious {
        let (f, p) = (&s["failed"], &s["passed"]);
        assert!(
            f[0].as_u64() <= f[1].as_u64() && f[1].as_u64() <= Some(2),
            "{s}"
        );
        assert!(
            p[0].as_u64() <= p[1].as_u64() && p[1].as_u64() <= Some(4),
            "{s}"
        );
    }
    // The text report says the same.
    let o = triage(&[
        "--passing",
        tmp.join("passing").to_str().unwrap(),
        tmp.join("cores").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("4 passing runs found, 1 unreadable coverage files"),
        "{text}"
    );
    assert!(
        text.contains(&format!("suspicious:     ./src/calc.c:{divide}")),
        "{text}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// An empty scratch directory for one test.
fn fresh_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs csi-cc with `args` in `dir`; it must succeed.
fn csi_cc_in(dir: &Path, args: &[&str]) {
    let st = Command::new(csi_cc())
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "csi-cc {args:?}");
}

/// csi-cc's runtime: one coverage file per instrumented module (executable and shared
/// library) at exit, a snapshot on SIGUSR2, nothing without `CSI_COVERAGE_OUT`.
#[test]
fn coverage_files_of_executable_and_library() {
    use csi_dump::coverage_file::{find_passing_runs, CoverageFile};
    let tmp = fresh_dir("csi-coverage-files");
    std::fs::write(
        tmp.join("lib.c"),
        // A call, so that call-site coverage has an array here.
        "#include <stdlib.h>\nint twice(int x) { if (x > 100) abort(); return atoi(\"2\") * x; }\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("app.c"),
        "#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\nint twice(int);\n\
         int main(int argc, char **argv) { printf(\"%d\\n\", twice(argc));\n\
         if (argc > 2) { raise(SIGUSR2); _exit(0); }\n return 0; }\n",
    )
    .unwrap();
    let cc = |args: &[&str]| csi_cc_in(&tmp, args);
    cc(&[
        "-O0",
        "-g",
        "-fPIC",
        "-shared",
        "-o",
        "libtwice.so",
        "lib.c",
    ]);
    cc(&[
        "-O2",
        "-g",
        "-o",
        "app",
        "app.c",
        "-L.",
        "-ltwice",
        "-Wl,-rpath,$ORIGIN",
    ]);
    let run = |out: Option<&Path>, args: &[&str]| {
        let mut c = Command::new(tmp.join("app"));
        c.args(args).env_remove("CSI_COVERAGE_OUT");
        if let Some(o) = out {
            std::fs::create_dir_all(o).unwrap();
            c.env("CSI_COVERAGE_OUT", o);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{o:?}");
    };
    run(None, &[]);
    let files = |d: &Path| -> Vec<CoverageFile> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| CoverageFile::read(&e.unwrap().path()).unwrap())
            .collect();
        v.sort_by(|a, b| a.module.cmp(&b.module));
        v
    };
    run(Some(&tmp.join("exit")), &["a"]);
    let at_exit = files(&tmp.join("exit"));
    assert_eq!(at_exit.len(), 2, "{at_exit:#?}");
    let (app, lib) = (&at_exit[0], &at_exit[1]);
    assert!(
        app.module.ends_with("/app") && lib.module.ends_with("/libtwice.so"),
        "{at_exit:#?}"
    );
    for f in &at_exit {
        assert!(!f.snapshot);
        let hex: String = f.build_id.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!hex.is_empty());
        let name = f.path.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(name, format!("{hex}.{}.csicov", f.pid));
        // Some coverage bit is set: main and twice ran.
        assert!(f.bytes.iter().any(|&b| b != 0), "{f:?}");
    }
    // SIGUSR2 writes a snapshot and the program goes on (then leaves by _exit: no more).
    run(Some(&tmp.join("usr2")), &["a", "b"]);
    let snap = files(&tmp.join("usr2"));
    assert_eq!(snap.len(), 2, "{snap:#?}");
    assert!(snap.iter().all(|f| f.snapshot));
    let (runs, bad) = find_passing_runs(&[tmp.join("exit"), tmp.join("usr2")]);
    assert_eq!((runs.len(), bad.len()), (2, 0));
    assert!(runs.iter().all(|r| r.files.len() == 2));
    // No files were written anywhere else (in particular not without the variable).
    assert!(!tmp.join("app.csicov").exists());
    assert_eq!(
        std::fs::read_dir(&tmp)
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "csicov"))
            .count(),
        0
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A coverage file written at exit holds the exiting thread's stack, and the reader takes
/// the activations in progress from it. `early` and `late` are static helpers of one block
/// without a probe of their own where their callers' blocks say whether they ran: `early`'s
/// call comes first in `main`'s block, so the block having run says nothing unless no
/// activation of `main` may still stand before it — which the stack tells. `late` follows a
/// call that may not come back (`leave` may `exit`), so it keeps its probe. No stack is
/// written when another thread is left, or when `exit` came from a signal handler (the
/// interrupted frame stands anywhere, not at a call): then `early` is unknown once its
/// block ran.
#[test]
fn exit_stack_decides_which_calls_were_made() {
    let tmp = fresh_dir("csi-exit-stack");
    std::fs::write(
        tmp.join("leave.c"),
        "#include <pthread.h>\n#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n\
         #include <unistd.h>\n\
         static void early(void) { puts(\"early\"); }\n\
         static void late(void) { puts(\"late\"); }\n\
         void leave(int how) { if (how == 1) exit(0); }\n\
         static void *wait_forever(void *p) { for (;;) pause(); return p; }\n\
         static void on_alarm(int sig) { (void)sig; exit(0); }\n\
         int main(int argc, char **argv) {\n\
           int how = argc > 1 ? atoi(argv[1]) : 0;\n\
           if (how == 2) { pthread_t t; pthread_create(&t, 0, wait_forever, 0); }\n\
           if (how == 3) { signal(SIGALRM, on_alarm); raise(SIGALRM); }\n\
           if (how == 9) *(volatile int *)0 = 0;\n\
           early();\n\
           leave(how);\n\
           late();\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let exe = tmp.join("leave");
    csi_cc_in(
        &tmp,
        &[
            "--csi-scheme=bb",
            "-O2",
            "-g",
            "-pthread",
            "-o",
            "leave",
            "leave.c",
        ],
    );
    let core = crash(&exe, "9", &tmp.join("core"));
    let crash = csi_dump::Crash::open(&exe, &core, &Default::default()).unwrap();
    // Per way of leaving: whether the file holds a stack, and `early`'s and `late`'s status.
    let run = |how: &str| -> (bool, Option<bool>, Option<bool>) {
        let out = tmp.join(format!("run-{how}"));
        pass(&exe, how, &out);
        let (runs, bad) = csi_dump::coverage_file::find_passing_runs(&[out]);
        assert!(bad.is_empty() && runs.len() == 1, "{bad:?}");
        let cov = crash
            .passing_run_coverage(&runs[0])
            .expect("a run of this build");
        let status = |func: &str| {
            let f = crash.graph.functions.iter().find(|f| f.name == func);
            let bits: Vec<bool> = f
                .unwrap()
                .nodes
                .iter()
                .filter_map(|n| cov.get(n).copied())
                .collect();
            assert!(bits.windows(2).all(|w| w[0] == w[1]), "{func}: {bits:?}");
            bits.first().copied()
        };
        let stack = runs[0].files[0].stack.is_some();
        (stack, status("early"), status("late"))
    };
    // `main` returned: no activation in progress, both calls made.
    assert_eq!(run("0"), (true, Some(true), Some(true)));
    // `exit` from `leave`: `main` stood past `early`'s call; `late`'s probe did not run.
    assert_eq!(run("1"), (true, Some(true), Some(false)));
    // A thread still waiting at exit, or `exit` from a signal handler: no stack. (Left from
    // the handler, before `main`'s block of `early` began: that block's bit is clear.)
    assert_eq!(run("2"), (false, None, Some(true)));
    assert_eq!(run("3"), (false, Some(false), Some(false)));
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// An optimized build's crash frame whose caller was inlined into the next physical frame out
/// (inventory.c at -O2: `cmd_add` and `run` inlined into `main`, `find` not): the walk is the
/// whole stack, so what the earlier commands ran is decided as at -O0. Here `del bolt` ran
/// `cmd_del` to its end — the faulty line after its call to `free` is "must" — before
/// `add gear` crashed in `find` on the deleted slot.
#[test]
fn optimized_crash_walks_through_inlined_callers() {
    let tmp = fresh_dir("csi-inlined-callers");
    let src = root().join("bench/triage/src/inventory.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let line =
        |needle: &str| text.lines().position(|l| l.contains(needle)).expect(needle) as u64 + 1;
    let src = src.to_str().unwrap();
    csi_cc_in(
        &tmp,
        &["--csi-scheme=bb", "-O2", "-g", "-o", "inventory", src],
    );
    let core = crash(
        &tmp.join("inventory"),
        "add bolt 44;add gear 8;del bolt;add gear 3",
        &tmp.join("run"),
    );
    let csi_on_crash = |args: &[&str]| csi_on(&tmp.join("inventory"), &core, args);
    let v: Value = serde_json::from_str(&csi_on_crash(&["analyze", "--format", "json"])).unwrap();
    // The `function` of each object of a JSON array.
    fn functions(a: &Value) -> Vec<&str> {
        let a = a.as_array().unwrap();
        a.iter().map(|f| f["function"].as_str().unwrap()).collect()
    }
    // `find` is a physical frame of its own; its caller `cmd_add` is inlined.
    assert_eq!(functions(&v["frames"]), ["find", "cmd_add", "run", "main"]);
    // The physical frame of `main` holds `cmd_add` and `run` inlined, innermost first, each
    // an activation of the report's own: report frames 1 and 2, then `main`'s (3).
    let main = v["threads"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["function"] == "main")
        .unwrap();
    let inlined = functions(&main["inlined"]);
    assert_eq!(
        inlined,
        ["cmd_add", "run"],
        "the test no longer tests its case"
    );
    assert_eq!(main["inlined_report_frames"], json!([1, 2]));
    assert_eq!(main["report_frame"], 3);
    let status = |key: &str| -> Vec<u64> {
        v["lines"][src][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect()
    };
    let must = status("must");
    for needle in [
        "struct item *it = find(strtok(args, \" \"));",
        "free(it->name);",
        "// fault: deleted-slot",
        "if (!it) {",
    ] {
        assert!(must.contains(&line(needle)), "{needle}: must {must:?}");
    }
    assert!(status("may").len() <= 1, "may {:?}", status("may"));
    // `csi show` lists the inlined activations as gdb does, each with its own statuses: in
    // `cmd_add`, the call to `find` has run in this activation, what follows it has not.
    let text = csi_on_crash(&["show"]);
    let section = text
        .split("\n== ")
        .find(|s| s.contains("#2 cmd_add() [inlined]"))
        .unwrap_or_else(|| panic!("no section of the inlined cmd_add:\n{text}"));
    let row = |needle: &str| {
        section
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not in\n{section}"))
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("find(name);"),
        [
            line("find(name);").to_string(),
            "must".into(),
            "must".into()
        ]
    );
    assert_eq!(
        row("if (!it) {"),
        [
            line("if (!it) {").to_string(),
            "never".into(),
            "must".into()
        ]
    );
    assert!(
        text.contains("#2 run() [inlined]") && text.contains("#2 main()"),
        "{text}"
    );
    // The editor's frame colours: selecting the physical frame shows the lines of the calls
    // inlined into it with its own.
    let session = csi_ide::session::Session::open_crash(
        &tmp.join("inventory"),
        &core,
        &Default::default(),
        &Default::default(),
    )
    .unwrap();
    let k = session.threads[0]
        .frames
        .iter()
        .position(|f| f.function.as_deref() == Some("main"))
        .unwrap();
    let sel = csi_ide::session::Selection {
        thread: 0,
        frame: k,
        step: None,
        inline: None,
    };
    let local = session.lines_of(src, sel).1.expect("the frame's lines");
    use csi_model::LineStatus::{Must, Never};
    for (needle, want) in [
        ("find(name);", Must),     // cmd_add, inlined
        ("if (!it) {", Never),     // cmd_add, after the call in progress
        ("cmd_add(rest);", Must),  // run, inlined
        ("cmd_del(rest);", Never), // run, another command's branch
        ("run(line);", Must),      // main's own
    ] {
        assert_eq!(local.status(line(needle) as u32), Some(want), "{needle}");
    }
    // Selecting one inlined call (as the debugger's Call Stack lists them, innermost first)
    // shows that activation alone: `cmd_add`'s lines, not `run`'s or `main`'s.
    let inlined = |k: usize| {
        let sel = csi_ide::session::Selection {
            inline: Some(k),
            ..sel
        };
        assert!(session.frame(sel).is_some_and(|f| f.analysis.is_some()));
        session
            .lines_of(src, sel)
            .1
            .expect("the inlined call's lines")
    };
    let cmd_add = inlined(0);
    assert_eq!(cmd_add.status(line("find(name);") as u32), Some(Must));
    assert_eq!(cmd_add.status(line("if (!it) {") as u32), Some(Never));
    for other in ["cmd_add(rest);", "run(line);"] {
        assert_eq!(cmd_add.status(line(other) as u32), None, "{other}");
    }
    let run = inlined(1);
    assert_eq!(run.status(line("cmd_add(rest);") as u32), Some(Must));
    assert_eq!(run.status(line("find(name);") as u32), None);
    assert!(session
        .frame(csi_ide::session::Selection {
            inline: Some(2),
            ..sel
        })
        .is_none());
    // With the default scheme an inlined activation has a path trace of its own: `cmd_add`'s
    // from its entry to the call to `find`.
    csi_cc_in(&tmp, &["-O2", "-g", "-o", "inventory-pt", src]);
    let exe = tmp.join("inventory-pt");
    let core = crash(&exe, "add bolt 44;del bolt;add gear 3", &tmp.join("run-pt"));
    let text = csi_on(&exe, &core, &["show"]);
    let section = text
        .split("\n== ")
        .find(|s| s.contains("cmd_add() [inlined]"))
        .unwrap_or_else(|| panic!("no section of the inlined cmd_add:\n{text}"));
    let trace = format!(
        "path trace (oldest → current): {} → {} → {} → {}",
        line("char *name = strtok(args"),
        line("char *qty = strtok(NULL"),
        line("if (!name || count == 16)"),
        line("find(name);")
    );
    assert!(section.contains(&trace), "{trace} not in\n{section}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `csi tracing --core C1 --core C2` (customizable tracing, the dissertation's deployment
/// loop): the functions on the stacks of every crash given are switched on, every other off.
/// Two real crashes of one custom build, in `divide` and in `modulo`: each core alone turns on
/// its own leaf, both together the union.
#[test]
fn tracing_follows_every_crash_given() {
    let tmp = fresh_dir("csi-tracing-cores");
    let exe = tmp.join("bin/calc");
    build(&exe, &["--csi-scheme=custom"]);
    let div = crash(&exe, "6 0 /", &tmp.join("div"));
    let modulo = crash(&exe, "9 0 %", &tmp.join("mod"));
    // The switches that are on after `csi tracing --exe <copy> --core …` for these cores
    // (`--core` before each, or once before them all).
    let on_after = |cores: &[&Path], each: bool| -> Vec<String> {
        let copy = tmp.join("copy");
        std::fs::copy(&exe, &copy).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_csi"));
        cmd.arg("tracing").arg("--exe").arg(&copy);
        for (k, c) in cores.iter().enumerate() {
            if each || k == 0 {
                cmd.arg("--core");
            }
            cmd.arg(c);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        // The listing is the file's switches as set.
        let listed = String::from_utf8(out.stdout).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_csi"))
            .arg("tracing")
            .arg("--exe")
            .arg(&copy)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), listed);
        listed
            .lines()
            .filter_map(|l| l.strip_prefix("on "))
            .map(|f| f.trim().to_string())
            .collect()
    };
    // The cores were made with the file's switches as built (all on); `csi tracing` reads the
    // stacks, so the copies' switch settings do not matter to it.
    assert_eq!(on_after(&[&div], true), ["apply", "divide", "eval", "main"]);
    assert_eq!(
        on_after(&[&modulo], true),
        ["apply", "eval", "main", "modulo"]
    );
    let both = ["apply", "divide", "eval", "main", "modulo"];
    assert_eq!(on_after(&[&div, &modulo], true), both);
    // One `--core` with several files (as a shell glob gives them) is the same.
    assert_eq!(on_after(&[&div, &modulo], false), both);
    // A core that is not one: one line of error, the file untouched.
    let copy = tmp.join("copy");
    let before = std::fs::read(&copy).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_csi"))
        .arg("tracing")
        .arg("--exe")
        .arg(&copy)
        .arg("--core")
        .arg(&div)
        .arg("--core")
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A shared library rebuilt since the crash has other unwind tables. When the walk ends
/// inside it (here: no usable CFI, and the frame pointer the fault left is 0, which reads as
/// the end of the stack), the program frames beyond it are unknown, not absent, and the report
/// must say so. Taken for the stack's end, it left the crashing thread without program frames
/// and "outer frames known", and the analysis refused ("the report has no stack frames"); in
/// zstd's bb build a walk ending in a rebuilt crash shim made it refuse as inconsistent
/// (bench/real/FINDINGS.md 8). With the library the program ran with, the walk is whole.
#[test]
fn a_walk_ending_in_a_rebuilt_library_leaves_the_outer_frames_unknown() {
    let tmp = fresh_dir("csi-rebuilt-library");
    let lib = |version: &str| {
        let st = Command::new("clang-19")
            .args(["-g", "-O1", "-fomit-frame-pointer", "-fPIC", "-shared"])
            .arg(format!("-DVERSION={version}"))
            .args(["-o", "libboom.so", "lib.c"])
            .current_dir(&tmp)
            .status()
            .unwrap();
        assert!(st.success());
    };
    std::fs::write(
        tmp.join("lib.c"),
        "int boom(int *p) {\n    int v;\n    \
         __asm__ volatile(\"xor %%ebp, %%ebp\\n\\tmovl (%1), %0\" : \"=r\"(v) : \"r\"(p) : \"rbp\");\n    \
         return v + VERSION;\n}\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("main.c"),
        "int boom(int *p);\nstatic int twice(int *p) { return 2 * boom(p); }\n\
         int main(int argc, char **argv) { (void)argv; return twice(argc > 5 ? &argc : 0); }\n",
    )
    .unwrap();
    lib("1");
    csi_cc_in(
        &tmp,
        &[
            "-O0",
            "-g",
            "-o",
            "prog",
            "main.c",
            "-L.",
            "-lboom",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    let core = crash(&tmp.join("prog"), "", &tmp.join("run"));
    let analyze = || -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_csi"))
            .args(["analyze", "--format", "json", "--exe"])
            .arg(tmp.join("prog"))
            .arg("--core")
            .arg(&core)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let functions = |v: &Value| -> Vec<String> {
        v["threads"][0]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["function"].as_str().map(String::from))
            .collect()
    };
    let whole = analyze();
    assert_eq!(
        whole["threads"][0]["outer_frames_unknown"], false,
        "{whole:#}"
    );
    assert!(
        functions(&whole).starts_with(&["boom".into(), "twice".into(), "main".into()]),
        "{whole:#}"
    );
    lib("2");
    let cut = analyze();
    let t = &cut["threads"][0];
    assert_eq!(t["outer_frames_unknown"], true, "{cut:#}");
    assert_eq!(functions(&cut), ["boom"], "{cut:#}");
    let problem = t["walk_problem"].as_str().unwrap();
    assert!(
        problem.contains("libboom.so, which differs from the file the program ran with"),
        "{problem}"
    );
    // Nothing of `main` is claimed never run: its activation may still be in progress.
    let main_c = cut["lines"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(f, _)| f.ends_with("main.c"))
        .map(|(_, l)| l.clone())
        .unwrap_or(Value::Null);
    assert!(
        main_c["never"].as_array().is_none_or(|a| a.is_empty()),
        "{main_c:#}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// The line statuses (`csi analyze --format json`) in `<stem>.c` of its crash on `input`, built
/// in `dir` at -O2 with `--csi-pt-loops=<loops>`.
fn lines_with_loops(dir: &Path, stem: &str, loops: &str, input: &str) -> Value {
    let exe = format!("{stem}-{loops}");
    let src = format!("{stem}.c");
    csi_cc_in(
        dir,
        &[
            "-O2",
            "-g",
            &format!("--csi-pt-loops={loops}"),
            "-o",
            &exe,
            &src,
        ],
    );
    let core = crash(&dir.join(&exe), input, &dir.join(format!("run-{loops}")));
    analyze_json(&dir.join(&exe), &core)["lines"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(f, _)| f.ends_with(&src))
        .map(|(_, l)| l.clone())
        .unwrap()
}

/// `csi ARGS --exe EXE --core CORE`, which must succeed: its stdout.
fn csi_on(exe: &Path, core: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(args)
        .arg("--exe")
        .arg(exe)
        .arg("--core")
        .arg(core)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `csi analyze --format json` of `exe` and its `core`.
fn analyze_json(exe: &Path, core: &Path) -> Value {
    serde_json::from_str(&csi_on(exe, core, &["analyze", "--format", "json"])).unwrap()
}

/// `line` has `status` (`must`, `may`, `never`) in a file's line statuses.
fn has_line(l: &Value, status: &str, line: u64) -> bool {
    l[status]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x.as_u64() == Some(line)))
}

/// `line` is "may", or has no status at all: the optimizer left it no code (a loop with
/// nothing of path tracing inside, `--csi-pt-loops=contract`, turns a branch into a select).
fn may_or_no_code(l: &Value, line: u64) -> bool {
    has_line(l, "may", line)
        || ["must", "never", "partial"]
            .iter()
            .all(|status| !has_line(l, status, line))
}

/// `csi-cc --csi-pt-loops=elide` / `elide-after-entry`: a call-free innermost loop stores no
/// iteration. The crash here is in the loop's 41st iteration; the first took the `odd` branch
/// (line 11), the others did not. The reader must take the paths stored before as run
/// earlier, not right before the iteration in progress: read as contiguous, they would say
/// line 11 (and `main`'s loop body, line 20) never ran. With `elide-after-entry` the path
/// that entered the loop is still in the ring, which 40 stored iterations would have
/// overwritten: it says the `n > 5` branch ran and the other did not (lines 6 and 8); with
/// `elide` nothing was stored on entry, so line 6 is unknown. With `contract` the loop keeps
/// no part of the sum, which still holds the way to it: lines 6 and 8 are known again.
#[test]
fn iterations_of_a_loop_that_stores_none_ran_but_are_not_known() {
    let tmp = fresh_dir("csi-elided-loop");
    std::fs::write(
        tmp.join("odd.c"),
        "#include <stdlib.h>\nint data[64];\nint count_odd(int n, int scale) {\n    int odd = 0;\n\
         \x20   if (n > 5)\n        scale = scale * 2;\n    else\n        scale = scale * 3;\n\
         \x20   for (int i = 0; i < n; i++) {\n        if (data[i] & 1)\n            odd += scale;\n\
         \x20       if (data[i] < 0)\n            *(volatile int *)0 = i;\n    }\n    return odd;\n}\n\
         int main(int argc, char **argv) {\n    int at = atoi(argv[1]);\n\
         \x20   for (int i = 0; i < 64; i++)\n        data[i] = i == 0 ? 1 : 2 * i;\n\
         \x20   data[at] = -2;\n    return count_odd(64, argc);\n}\n",
    )
    .unwrap();
    let lines = |loops: &str| lines_with_loops(&tmp, "odd", loops, "40");
    let stored = lines("store");
    // Every iteration stored: the ring holds the first one's `odd` branch.
    assert!(has_line(&stored, "must", 11), "{stored:#}");
    assert!(!has_line(&stored, "never", 8), "{stored:#}");
    for loops in ["elide", "elide-after-entry", "contract"] {
        let elided = lines(loops);
        for line in [11, 20] {
            assert!(
                !has_line(&elided, "never", line),
                "{loops}, line {line}: {elided:#}"
            );
            assert!(
                may_or_no_code(&elided, line),
                "{loops}, line {line}: {elided:#}"
            );
        }
        // The path up to the loop: stored on entry, or kept through a contracted loop (whose
        // build has line 8's multiplication hoisted to line 9).
        let after_entry = loops != "elide";
        assert_eq!(
            has_line(&elided, "must", 6),
            after_entry,
            "{loops}: {elided:#}"
        );
        assert!(!has_line(&elided, "must", 8), "{loops}: {elided:#}");
        if after_entry {
            assert!(!has_line(&elided, "may", 8), "{loops}: {elided:#}");
        } else {
            assert!(may_or_no_code(&elided, 8), "{loops}: {elided:#}");
        }
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `csi-cc --csi-pt-loops=elide` and `elide-all` on a loop nest: an outer loop whose every
/// iteration calls `visit`, around a call-free inner loop. The crash is in `visit`, called in
/// the outer loop's 8th iteration (`i == 7`); the first iteration took line 15, the inner
/// loop's 4th (`j == 3`) line 18, and no iteration line 23. `store` stores every iteration,
/// and the ring has lost the first. `elide` stores the outer loop's iterations (each calls)
/// but not the inner one's, so the ring still has the first: line 15 must have run, line 18
/// may have. `elide-all` stores neither: `main`'s frame,
/// stopped at the call, knows its path only from the head of the inner loop's last
/// iteration, so lines 15 and 18 are "may", never "never".
#[test]
fn a_callers_loops_that_store_no_iteration_leave_earlier_iterations_unknown() {
    let tmp = fresh_dir("csi-elided-nest");
    std::fs::write(
        tmp.join("nest.c"),
        "#include <stdio.h>\n#include <stdlib.h>\nint total, at;\n\
         __attribute__((noinline)) void visit(int i) {\n  if (i == at)\n\
         \x20   *(volatile int *)0 = i;\n  total += i;\n}\n\
         int main(int argc, char **argv) {\n  at = atoi(argv[1]);\n  int n = argc + 9;\n\
         \x20 int s = 0;\n  for (int i = 0; i < n; i++) {\n    if (i == 0)\n      s += 100;\n\
         \x20   for (int j = 0; j < i; j++) {\n      if (j == 3)\n        s++;\n      else\n\
         \x20       s--;\n    }\n    if (i > 20)\n      s *= 2;\n    visit(i);\n  }\n\
         \x20 printf(\"%d\\n\", s);\n  return 0;\n}\n",
    )
    .unwrap();
    let lines = |loops: &str| lines_with_loops(&tmp, "nest", loops, "7");
    let stored = lines("store");
    // 36 paths for a ring of 16: the first iteration's is gone.
    assert!(
        has_line(&stored, "may", 15) && has_line(&stored, "must", 18),
        "{stored:#}"
    );
    let inner = lines("elide");
    assert!(
        has_line(&inner, "must", 15) && has_line(&inner, "may", 18),
        "{inner:#}"
    );
    // The inner loop contracted: the outer loop's stored paths go through it.
    let contracted = lines("contract");
    assert!(
        has_line(&contracted, "must", 15) && may_or_no_code(&contracted, 18),
        "{contracted:#}"
    );
    let elided = lines("elide-all");
    for line in [15, 18, 23] {
        assert!(has_line(&elided, "may", line), "line {line}: {elided:#}");
    }
    // The crash, the call that led to it, and the loop tests on the way there.
    for (l, line) in [(&inner, 6), (&inner, 16), (&inner, 22), (&inner, 24)] {
        assert!(has_line(l, "must", line), "line {line}: {l:#}");
        assert!(has_line(&elided, "must", line), "line {line}: {elided:#}");
        assert!(
            has_line(&contracted, "must", line),
            "line {line}: {contracted:#}"
        );
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A function of one path and no loop carries no path state: its sum is 0 wherever its frame
/// stands, so csi-cc gives it no `__PT_current_path` and the reader takes 0 from the record's
/// `num_paths`. Here the crash is in such a function (`leaf`, kept out of line), at -O0 and
/// -O2: its frame has no path variable, and its path is decoded (line 4, then the crash's
/// line 5) with no note; `main`, of several paths, keeps its variable.
#[test]
fn a_function_of_one_path_has_no_path_state_and_its_frame_still_decodes() {
    let tmp = fresh_dir("csi-one-path");
    std::fs::write(
        tmp.join("one.c"),
        "#include <stdlib.h>\nint sink;\n__attribute__((noinline)) int leaf(int *p, int k) {\n\
         \x20   sink = k * 3;\n    sink += *p;\n    return sink;\n}\n\
         int main(int argc, char **argv) {\n    int v = 1, *p = &v;\n\
         \x20   if (argc > 1 && atoi(argv[1]) == 7)\n        p = 0;\n    else\n        v = 2;\n\
         \x20   return leaf(p, argc);\n}\n",
    )
    .unwrap();
    for opt in ["-O0", "-O2"] {
        let exe = format!("one{opt}");
        csi_cc_in(&tmp, &[opt, "-g", "-o", &exe, "one.c"]);
        let core = crash(&tmp.join(&exe), "7", &tmp.join(format!("run{opt}")));
        let v = analyze_json(&tmp.join(&exe), &core);
        let frame = |name: &str| {
            v["threads"][0]["frames"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["function"] == name)
                .unwrap_or_else(|| panic!("{opt}: no frame of {name}: {v:#}"))
                .clone()
        };
        let has_path_var = |f: &Value| {
            f["variables"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["name"] == "__PT_current_path")
        };
        let leaf = frame("leaf");
        assert!(!has_path_var(&leaf), "{opt}: {leaf:#}");
        assert!(leaf["path_note"].is_null(), "{opt}: {leaf:#}");
        let path_lines: Vec<u64> = leaf["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_u64().unwrap())
            .collect();
        assert_eq!(path_lines, [4, 5], "{opt}: {leaf:#}");
        assert!(has_path_var(&frame("main")), "{opt}: {v:#}");
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}
