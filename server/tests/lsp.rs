//! The server end to end over JSON-RPC: in-process (tokio duplex) and over stdio against the
//! built binary, on the checked-in fixture crashes. Responses are compared as whole JSON
//! (with the checkout's path replaced by `$ROOT`).

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const SRC: &str = "fixtures/src/null_deref.c";

type Duplex = Client<
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
>;

/// A server on a duplex stream, not yet initialized.
fn spawn_in_process() -> Duplex {
    let (client_io, server_io) = tokio::io::duplex(1 << 22);
    let (sr, sw) = tokio::io::split(server_io);
    let (service, socket) = csi_lsp::service();
    tokio::spawn(tower_lsp_server::Server::new(sr, sw, socket).serve(service));
    let (cr, cw) = tokio::io::split(client_io);
    Client::new(cr, cw)
}

/// Initialized with the repository as workspace.
async fn in_process(options: Value) -> Duplex {
    let mut c = spawn_in_process();
    c.initialize(options).await;
    c
}

/// Initialized with another directory as workspace (no client capabilities).
async fn in_process_at(dir: &std::path::Path) -> Duplex {
    let mut c = spawn_in_process();
    c.request("initialize", json!({"processId": null, "rootUri": format!("file://{}", dir.display()), "capabilities": {}}))
        .await;
    c.notify("initialized", json!({})).await;
    c
}

fn open_args(dir: &str, exe: &str) -> Value {
    json!({"command": "csi.openCrash", "arguments": [{
        "executable": fixture(&format!("{dir}/{exe}")),
        "core": fixture(&format!("{dir}/core")),
    }]})
}

fn whole_file() -> Value {
    json!({"start": {"line": 0, "character": 0}, "end": {"line": 1000, "character": 0}})
}

async fn hints<R, W>(c: &mut Client<R, W>, rel: &str) -> Value
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let r = c
        .request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri(rel)}, "range": whole_file()}),
        )
        .await;
    r["result"].clone()
}

/// The labels of an inlay-hint response.
fn labels_of(hints: &Value) -> Vec<&str> {
    hints
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["label"].as_str().unwrap())
        .collect()
}

fn label(l: &str, line: u32, ch: u32) -> Value {
    json!({"label": l, "paddingLeft": true, "position": {"line": line, "character": ch}})
}

fn lens(title: &str, line: u32, command: &str, args: Option<Value>) -> Value {
    let range =
        json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}});
    match args {
        Some(a) => {
            json!({"range": range, "command": {"title": title, "command": command, "arguments": [a]}})
        }
        None => json!({"range": range, "command": {"title": title, "command": command}}),
    }
}

#[tokio::test]
async fn open_crash_then_hints_lenses_hover_diagnostics() {
    let mut c = in_process(json!({})).await;
    // Before any crash is open: nothing to show, and a clear message for the custom requests.
    assert_eq!(hints(&mut c, SRC).await, Value::Null);
    let r = c.request("csi/stack", json!({})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no crash is open"),
        "{r}"
    );

    let r = c
        .request(
            "workspace/executeCommand",
            open_args("null_deref/realistic-O0", "null_deref"),
        )
        .await;
    let stack = &r["result"];
    assert_eq!(
        stack["signal"],
        json!({"signo": 11, "name": "SIGSEGV", "code": 1, "fault_address": 8})
    );
    // Program frames (library frames depend on the machine's libc and are left out).
    let frames: Vec<Value> = stack["threads"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["file"].is_null())
        .cloned()
        .collect();
    assert_eq!(
        scrub(&json!(frames)),
        json!([
            {"analysed": true, "column": 13, "file": "./src/null_deref.c", "function": "charge", "index": 0, "line": 30,
             "module": "$ROOT/fixtures/crashes/null_deref/realistic-O0/null_deref", "pathSteps": 4, "pc": "0x55db0fd431ee",
             "uri": "file://$ROOT/fixtures/src/null_deref.c"},
            {"analysed": true, "column": 11, "file": "./src/null_deref.c", "function": "main", "index": 1, "line": 40,
             "module": "$ROOT/fixtures/crashes/null_deref/realistic-O0/null_deref", "pathSteps": 11, "pc": "0x55db0fd43551",
             "uri": "file://$ROOT/fixtures/src/null_deref.c"}
        ])
    );
    // Progress was reported and refreshes requested.
    assert!(c
        .server_requests
        .contains(&"window/workDoneProgress/create".to_string()));
    let diags = c
        .wait_notification("textDocument/publishDiagnostics", Duration::from_secs(5))
        .await
        .unwrap();
    let never = |line: u32, end: u32| {
        json!({"message": "never executed before the crash", "severity": 4, "source": "csi", "tags": [1],
               "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": end}}})
    };
    assert_eq!(
        scrub(&diags["params"]),
        json!({"uri": "file://$ROOT/fixtures/src/null_deref.c",
               "diagnostics": [never(19, 41), never(29, 24), never(41, 38), never(42, 11)]})
    );

    c.open_doc(SRC).await;
    assert_eq!(
        hints(&mut c, SRC).await,
        json!([
            label("step 1/4", 26, 20),
            label("step 2/4", 27, 38),
            label("step 3/4", 28, 13),
            {"label": "→ line 30 ✘ · line 31 ✔", "paddingLeft": true, "position": {"line": 28, "character": 13},
             "tooltip": "branch outcome in this frame"},
            label("⚡ SIGSEGV at 0x8 — frame #0", 30, 54),
            label("step ▶4/4", 30, 54),
            label("frame #1 → charge()", 40, 32),
        ])
    );
    let lenses = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(SRC)}}),
        )
        .await;
    assert_eq!(
        lenses["result"],
        json!([
            lens(
                "▶ frame #0 (thread 1) · must 4 · may 1 · never 1",
                25,
                "csi.selectFrame",
                Some(json!({"thread": 0, "frame": 0}))
            ),
            lens(
                "◀ step back (4 path steps)",
                25,
                "csi.stepPath",
                Some(json!({"delta": -1}))
            ),
            lens("global · must 4 · may 1 · never 1", 25, "", None),
            lens("global · must 3 · may 3 · never 1", 14, "", None),
            lens("global · must 2 · may 4 · never 0", 6, "", None),
            lens(
                "frame #1 (thread 1) · must 6 · may 0 · never 2",
                34,
                "csi.selectFrame",
                Some(json!({"thread": 0, "frame": 1}))
            ),
            lens("global · must 6 · may 0 · never 2", 34, "", None),
        ])
    );
    let hover = |line: u32| json!({"textDocument": {"uri": uri(SRC)}, "position": {"line": line, "character": 4}});
    let h = c.request("textDocument/hover", hover(30)).await;
    assert_eq!(
        h["result"],
        json!({"contents": {"kind": "markdown", "value":
            "**frame #0** `charge` — thread 1 (tid 14082), **SIGSEGV at 0x8**\n\n\
             Arguments:\n```c\n    struct account * list = 0x7ffc19116f58\n    const char * who = 0x55db0fd4402a \"zed\"\n    int kind = 1\n```\n\
             Locals:\n```c\n    int f = 5\n    struct account * a = 0x0\n```\n\
             Path trace (4 steps, last 4): 27 → 28 → 29 → 31\n\n\
             Call sites in this activation: fee@27: yes, find@28: yes, puts@30: no\n\n\
             CSI trace (the instrumentation's state):\n```c\n    volatile long __PT_current_path = 0\n    volatile long __PT_counter_idx = 0\n    \
             volatile long [10] __PT_counter_arr = {0, 0, 0, 0, 0, 0, 0, 0, 0, -1}\n    volatile __csi_bool [3] __CC_arr = {true, true, false}\n```\n"}})
    );
    // On a name: that variable only (the program's `a`, not the whole frame), also on a line
    // of the frame's function other than where it stopped, and an argument by its name.
    let at = |line: u32, ch: u32| json!({"textDocument": {"uri": uri(SRC)}, "position": {"line": line, "character": ch}});
    let h = c.request("textDocument/hover", at(30, 2)).await;
    assert_eq!(
        h["result"]["contents"]["value"],
        "`a` — local of **frame #0** `charge` (thread 1), at the crash\n```c\nstruct account * a = 0x0\n```\n"
    );
    let h = c.request("textDocument/hover", at(26, 7)).await;
    assert_eq!(
        h["result"]["contents"]["value"],
        "`f` — local of **frame #0** `charge` (thread 1), at the crash\n```c\nint f = 5\n```\n"
    );
    let h = c.request("textDocument/hover", at(27, 35)).await;
    assert_eq!(
        h["result"]["contents"]["value"],
        "`who` — argument of **frame #0** `charge` (thread 1), at the crash\n```c\nconst char * who = 0x55db0fd4402a \"zed\"\n```\n"
    );
    // A name that is no variable of a frame there (a field): the frame, as before.
    let h = c.request("textDocument/hover", at(30, 6)).await;
    assert!(
        h["result"]["contents"]["value"]
            .as_str()
            .unwrap()
            .starts_with("**frame #0**"),
        "{h}"
    );
    let h = c.request("textDocument/hover", hover(25)).await;
    assert_eq!(
        h["result"]["contents"]["value"],
        "**charge** — globally: must 4 · may 1 · never 1 lines\n\nOn the stack of thread 1 as frame #0\n\n"
    );
    let h = c.request("textDocument/hover", hover(29)).await;
    assert_eq!(
        h["result"]["contents"]["value"],
        "CSI: **never** before the crash · in frame #0: **never**\n\nWhy: call site `puts()` covered: no"
    );

    // Selecting frame #1 changes the path steps and the lenses.
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "csi.selectFrame", "arguments": [{"thread": 0, "frame": 1}]}),
        )
        .await;
    assert_eq!(r["result"]["steps"].as_array().unwrap().len(), 11, "{r}");
    let h = hints(&mut c, SRC).await;
    let labels = labels_of(&h);
    assert_eq!(
        labels,
        [
            "⚡ SIGSEGV at 0x8 — frame #0",
            "step 1/11",
            "step 2/11",
            "step 3,5,7,9/11",
            "→ line 39 ✔ · line 40 ✔",
            "step 4,6,8/11",
            "step 10/11",
            "frame #1 → charge()",
            "step ▶11/11",
        ]
    );
    // Stepping back moves the marker.
    let r = c.request("csi/stepPath", json!({"delta": -2})).await;
    assert_eq!(
        scrub(&r["result"]),
        json!({"step": 8, "of": 11, "file": "./src/null_deref.c",
        "uri": "file://$ROOT/fixtures/src/null_deref.c", "line": 37})
    );
    let h = hints(&mut c, SRC).await;
    assert!(
        h.as_array()
            .unwrap()
            .iter()
            .any(|x| x["label"] == "step 3,5,7,▶9/11"),
        "{h}"
    );
    // A control-flow query.
    let q = c
        .request(
            "csi/query",
            json!({"kind": "mayRun", "uri": uri(SRC), "line": 29}),
        )
        .await;
    assert_eq!(
        q["result"],
        json!({"kind": "mayRun", "answer": "impossible"})
    );
    let q = c.request("csi/query", json!({"kind": "mayRunBefore", "uri": uri(SRC), "line": 17, "uri2": uri(SRC), "line2": 40})).await;
    assert_eq!(
        q["result"],
        json!({"kind": "mayRunBefore", "answer": "possible"})
    );
}

#[tokio::test]
async fn line_states_replace_diagnostics_when_asked() {
    let mut c = in_process(json!({"lineStates": true})).await;
    c.open_doc(SRC).await;
    c.request(
        "workspace/executeCommand",
        open_args("null_deref/realistic-O0", "null_deref"),
    )
    .await;
    let n = c
        .wait_notification("csi/lineStates", Duration::from_secs(5))
        .await
        .expect("csi/lineStates");
    assert_eq!(
        scrub(&n["params"]),
        json!({"uri": "file://$ROOT/fixtures/src/null_deref.c", "version": 1,
               "must": [7, 12, 15, 16, 22, 26, 27, 28, 30, 35, 36, 37, 38, 39, 40],
               "may": [8, 9, 10, 11, 17, 18, 20, 31],
               "never": [19, 29, 41, 42],
               "partial": [40],
               "frame": {"thread": 0, "frame": 0,
                         "must": [26, 27, 28, 30], "may": [31], "never": [29], "partial": []}})
    );
    assert!(c
        .take_notifications("textDocument/publishDiagnostics")
        .is_empty());
}

#[tokio::test]
async fn edited_files_drop_their_hints() {
    let mut c = in_process(json!({})).await;
    c.request(
        "workspace/executeCommand",
        open_args("null_deref/realistic-O0", "null_deref"),
    )
    .await;
    c.open_doc(SRC).await;
    assert!(!hints(&mut c, SRC).await.as_array().unwrap().is_empty());
    let text = format!(
        "// a new first line\n{}",
        std::fs::read_to_string(root().join(SRC)).unwrap()
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(SRC), "version": 2},
        "contentChanges": [{"text": text}]}),
    )
    .await;
    assert_eq!(
        hints(&mut c, SRC).await,
        Value::Null,
        "no hints on shifted lines"
    );
    let lenses = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(SRC)}}),
        )
        .await;
    assert_eq!(lenses["result"], Value::Null);
    let cleared = loop {
        let d = c
            .wait_notification("textDocument/publishDiagnostics", Duration::from_secs(5))
            .await
            .unwrap();
        if d["params"]["version"] == 2 {
            break d;
        }
    };
    assert_eq!(cleared["params"]["diagnostics"], json!([]));
}

#[tokio::test]
async fn thread_crash_shows_every_thread() {
    let mut c = in_process(json!({})).await;
    let r = c
        .request(
            "workspace/executeCommand",
            open_args("thread_crash/realistic-O0", "thread_crash"),
        )
        .await;
    let threads = r["result"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 3);
    let names: Vec<Vec<&str>> = threads
        .iter()
        .map(|t| {
            t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| !f["file"].is_null())
                .map(|f| f["function"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert!(names.contains(&vec!["compute", "worker"]), "{names:?}");
    assert!(names.contains(&vec!["parker"]), "{names:?}");
    assert!(names.contains(&vec!["main"]), "{names:?}");
    let rel = "fixtures/src/thread_crash.c";
    c.open_doc(rel).await;
    let h = hints(&mut c, rel).await;
    let labels = labels_of(&h);
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("⚡ SIGSEGV at 0x0 — frame #0 (thread 1)")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.contains("→ pthread_cond_wait()")),
        "{labels:?}"
    );
}

/// abort_assert at -O2: `push` inlined into `main`. The stack lists it under `main`'s frame,
/// `csi/selectFrame` with `inline` selects it alone, and the stack says so.
#[tokio::test]
async fn an_inlined_call_is_listed_and_selected_on_its_own() {
    let mut c = in_process(json!({})).await;
    let r = c
        .request(
            "workspace/executeCommand",
            open_args("abort_assert/realistic-O2", "abort_assert"),
        )
        .await;
    let frames = r["result"]["threads"][0]["frames"].as_array().unwrap();
    let main = frames
        .iter()
        .find(|f| f["function"] == "main")
        .expect("main's frame");
    let k = main["index"].as_u64().unwrap();
    assert_eq!(main["inlined"][0]["function"], "push", "{main}");
    assert_eq!(main["inlined"][0]["index"], k, "{main}");
    assert!(main["inlined"][0]["line"].is_u64(), "{main}");
    let t = c
        .request(
            "csi/selectFrame",
            json!({"thread": 0, "frame": k, "inline": 0}),
        )
        .await;
    assert_eq!(t["result"]["inline"], 0, "{t}");
    assert_eq!(t["result"]["frame"], k, "{t}");
    // The CSI Stack view's steps of the inlined call: the path of its own activation,
    // whichever frame is selected.
    c.request("csi/selectFrame", json!({"thread": 0, "frame": 0}))
        .await;
    let p = c
        .request(
            "csi/pathTrace",
            json!({"thread": 0, "frame": k, "inline": 0}),
        )
        .await;
    assert_eq!(p["result"]["inline"], 0, "{p}");
    assert_eq!(p["result"]["steps"], t["result"]["steps"], "{p}");
    let own = c
        .request("csi/pathTrace", json!({"thread": 0, "frame": k}))
        .await;
    assert!(own["result"].get("inline").is_none(), "{own}");
    c.request(
        "csi/selectFrame",
        json!({"thread": 0, "frame": k, "inline": 0}),
    )
    .await;
    let st = c.request("csi/stack", json!({})).await;
    assert_eq!(
        st["result"]["selected"],
        json!({"thread": 0, "frame": k, "step": null, "inline": 0})
    );
    // An inlined call the frame does not have is an error, not a selection.
    let e = c
        .request(
            "csi/selectFrame",
            json!({"thread": 0, "frame": k, "inline": 3}),
        )
        .await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let st = c.request("csi/stack", json!({})).await;
    assert_eq!(st["result"]["selected"]["inline"], 0);
}

#[tokio::test]
async fn bad_input_never_kills_the_server() {
    let mut c = in_process(json!({})).await;
    // A core of another program.
    let r = c
        .request("workspace/executeCommand", json!({"command": "csi.openCrash", "arguments": [{
            "executable": fixture("null_deref/realistic-O0/null_deref"), "core": fixture("oob_write/realistic-O0/core")}]}))
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("was not produced by"),
        "{r}"
    );
    let m = c
        .wait_notification("window/showMessage", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(m["params"]["type"], 1);
    assert!(m["params"]["message"]
        .as_str()
        .unwrap()
        .contains("was not produced by"));
    // A missing executable, a truncated core, a non-core.
    let tmp = std::env::temp_dir().join(format!("csi-lsp-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let core = std::fs::read(fixture("null_deref/realistic-O0/core")).unwrap();
    std::fs::write(tmp.join("core.cut"), &core[..2000]).unwrap();
    for (exe, core, want) in [
        (
            "/nonexistent/app".to_string(),
            fixture("null_deref/realistic-O0/core"),
            "No such file",
        ),
        (
            fixture("null_deref/realistic-O0/null_deref"),
            tmp.join("core.cut").display().to_string(),
            "truncated",
        ),
        (
            fixture("null_deref/realistic-O0/null_deref"),
            fixture("null_deref/realistic-O0/null_deref"),
            "not a core dump",
        ),
    ] {
        let r = c
            .request("workspace/executeCommand", json!({"command": "csi.openCrash", "arguments": [{"executable": exe, "core": core}]}))
            .await;
        assert!(
            r["error"]["message"].as_str().unwrap().contains(want),
            "{want}: {r}"
        );
    }
    // A stripped executable still gives the stack (a partial view) with a warning.
    if std::process::Command::new("objcopy")
        .arg("--version")
        .output()
        .is_ok()
    {
        let stripped = tmp.join("null_deref");
        assert!(std::process::Command::new("objcopy")
            .arg("--strip-all")
            .arg(fixture("null_deref/realistic-O0/null_deref"))
            .arg(&stripped)
            .status()
            .unwrap()
            .success());
        c.take_notifications("window/showMessage");
        let r = c
            .request("workspace/executeCommand", json!({"command": "csi.openCrash", "arguments": [{
                "executable": stripped.display().to_string(), "core": fixture("null_deref/realistic-O0/core")}]}))
            .await;
        // No symbols and no DWARF: the frames are there, their names are not.
        assert!(
            r["result"]["threads"][0]["frames"][0]["pc"].is_string(),
            "{r}"
        );
        let m = loop {
            let m = c
                .wait_notification("window/showMessage", Duration::from_secs(5))
                .await
                .unwrap();
            if m["params"]["type"] == 2 {
                break m;
            }
        };
        assert!(
            m["params"]["message"]
                .as_str()
                .unwrap()
                .contains("no debug info"),
            "{m}"
        );
    }
    // Reversed and out-of-range frame ranges answer (no frames) instead of killing the server.
    for range in [
        json!({"from": 5, "to": 1}),
        json!({"from": 1u64 << 40, "to": -1}),
        json!({"thread": 0, "from": 3, "to": 1u64 << 40}),
    ] {
        let r = c.request("csi/stack", json!({ "range": range })).await;
        assert!(r["result"]["threads"].is_array(), "{range}: {r}");
    }
    // Still alive and answering.
    let r = c.request("csi/stack", json!({})).await;
    assert!(r["result"]["threads"].is_array(), "{r}");
}

#[tokio::test]
async fn sources_outside_the_workspace_are_reported() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-nosrc-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(
        fixture("null_deref/realistic-O0/null_deref"),
        tmp.join("null_deref"),
    )
    .unwrap();
    std::fs::copy(fixture("null_deref/realistic-O0/core"), tmp.join("core")).unwrap();
    let mut c = in_process_at(&tmp).await;
    let r = c
        .request("workspace/executeCommand", json!({"command": "csi.openCrash", "arguments": [{
            "executable": tmp.join("null_deref").display().to_string(), "core": tmp.join("core").display().to_string()}]}))
        .await;
    assert_eq!(r["result"]["threads"][0]["frames"][0]["uri"], Value::Null);
    let m = c
        .wait_notification("window/showMessage", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        m["params"]["message"]
            .as_str()
            .unwrap()
            .contains("not in the workspace"),
        "{m}"
    );
}

#[tokio::test]
async fn csi_toml_opens_the_crash_at_start() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-toml-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join(".csi.toml"),
        format!(
            "executable = \"{}\"\ncore = \"{}\"\n[[substitute-path]]\nfrom = \"./src\"\nto = \"{}\"\n",
            fixture("null_deref/realistic-O0/null_deref"),
            fixture("null_deref/realistic-O0/core"),
            root().join("fixtures/src").display()
        ),
    )
    .unwrap();
    let mut c = in_process_at(&tmp).await;
    let d = c
        .wait_notification("textDocument/publishDiagnostics", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(d["params"]["uri"], uri(SRC));
    let r = c.request("csi/stack", json!({})).await;
    assert_eq!(r["result"]["threads"][0]["frames"][0]["uri"], uri(SRC));
}

/// With `.csi.toml`, the editor learns from `initialize` that a crash is being opened and
/// asks for the stack at once — before any source file is open (VS Code showed "no crash"
/// until a C file was opened): the request waits for the open and answers the crash.
#[tokio::test]
async fn csi_toml_crash_is_answered_right_after_initialized() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-toml-start-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join(".csi.toml"),
        format!(
            "executable = \"{}\"\ncore = \"{}\"\n",
            fixture("null_deref/realistic-O0/null_deref"),
            fixture("null_deref/realistic-O0/core"),
        ),
    )
    .unwrap();
    let mut c = spawn_in_process();
    let init = c
        .request("initialize", json!({"processId": null, "rootUri": format!("file://{}", tmp.display()), "capabilities": {}}))
        .await;
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["csi"]["crashAtStart"], true,
        "{init}"
    );
    c.notify("initialized", json!({})).await;
    let r = c.request("csi/stack", json!({})).await;
    assert_eq!(
        r["result"]["threads"][0]["frames"][0]["function"], "charge",
        "{r}"
    );
    // Without a crash to open, it says so.
    let mut c = spawn_in_process();
    let init = c
        .request("initialize", json!({"processId": null, "capabilities": {}}))
        .await;
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["csi"]["crashAtStart"], false,
        "{init}"
    );
}

/// `.csi.toml` naming a core of systemd-coredump's store (`coredump = "latest"`,
/// `coredump-dir`): the newest stored core opens at start with the executable systemd recorded
/// (its `user.coredump.exe` attribute), and a selector that matches nothing is an error message.
#[tokio::test]
async fn csi_toml_coredump_opens_the_newest_stored_core() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-coredump-{}", std::process::id()));
    let store = tmp.join("store");
    std::fs::create_dir_all(&store).unwrap();
    let stored =
        store.join("core.null_deref.1000.0123456789abcdef0123456789abcdef.4242.1763967301000000");
    std::fs::copy(fixture("null_deref/realistic-O0/core"), &stored).unwrap();
    xattr::set(
        &stored,
        "user.coredump.exe",
        fixture("null_deref/realistic-O0/null_deref").as_bytes(),
    )
    .unwrap();
    xattr::set(&stored, "user.coredump.signal", b"11").unwrap();
    std::fs::write(
        tmp.join(".csi.toml"),
        "coredump = \"latest\"\ncoredump-dir = \"store\"\n",
    )
    .unwrap();
    let mut c = spawn_in_process();
    let init = c
        .request("initialize", json!({"processId": null, "rootUri": format!("file://{}", tmp.display()), "capabilities": {}}))
        .await;
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["csi"]["crashAtStart"],
        true
    );
    c.notify("initialized", json!({})).await;
    let m = c
        .wait_notification("window/showMessage", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        m["params"]["message"],
        "CSI: systemd-coredump (store): pid 4242 (null_deref), SIGSEGV, 2025-11-24 06:55:01 UTC"
    );
    let r = c.request("csi/stack", json!({})).await;
    assert_eq!(
        r["result"]["threads"][0]["frames"][0]["function"], "charge",
        "{r}"
    );
    // A selector that matches nothing: one error message, no crash.
    std::fs::write(
        tmp.join(".csi.toml"),
        "coredump = \"99999\"\ncoredump-dir = \"store\"\n",
    )
    .unwrap();
    let mut c = spawn_in_process();
    c.request("initialize", json!({"processId": null, "rootUri": format!("file://{}", tmp.display()), "capabilities": {}}))
        .await;
    c.notify("initialized", json!({})).await;
    let m = c
        .wait_notification("window/showMessage", Duration::from_secs(10))
        .await
        .unwrap();
    let text = m["params"]["message"].as_str().unwrap();
    assert!(
        text.starts_with("CSI: ") && text.contains("no systemd-coredump core matches `99999`"),
        "{text}"
    );
}

/// A crash as it arrives from production: a stripped executable (its debug file in a
/// build-id tree named by `debug-dirs`) and a zstd-compressed core, from `.csi.toml`.
#[tokio::test]
async fn csi_toml_opens_a_stripped_program_with_a_compressed_core() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-prod-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let full = fixture("null_deref/realistic-O0/null_deref");
    let run = |tool: &str, args: &[&str]| {
        let st = std::process::Command::new(tool)
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "{tool} {args:?}");
    };
    let debug = tmp.join("null_deref.debug");
    let exe = tmp.join("null_deref");
    run(
        "objcopy",
        &["--only-keep-debug", &full, debug.to_str().unwrap()],
    );
    run(
        "strip",
        &[
            "--strip-debug",
            "--strip-unneeded",
            &full,
            "-o",
            exe.to_str().unwrap(),
        ],
    );
    // The build id: the GNU note's 20 bytes.
    let bytes = std::fs::read(&exe).unwrap();
    let pat = [4u8, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, b'G', b'N', b'U', 0];
    let at = bytes.windows(16).position(|w| w == pat).unwrap() + 16;
    let id: String = bytes[at..at + 20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tree = tmp.join("debug/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy(&debug, tree.join(format!("{}.debug", &id[2..]))).unwrap();
    let core = tmp.join("core.zst");
    let st = std::process::Command::new("zstd")
        .args(["-q", "-c"])
        .stdin(std::fs::File::open(fixture("null_deref/realistic-O0/core")).unwrap())
        .stdout(std::fs::File::create(&core).unwrap())
        .status()
        .expect("zstd (scripts/test installs it)");
    assert!(st.success());
    std::fs::write(
        tmp.join(".csi.toml"),
        format!(
            "executable = \"null_deref\"\ncore = \"core.zst\"\ndebug-dirs = [\"debug\"]\n[[substitute-path]]\nfrom = \"./src\"\nto = \"{}\"\n",
            root().join("fixtures/src").display()
        ),
    )
    .unwrap();
    let mut c = in_process_at(&tmp).await;
    c.wait_notification("textDocument/publishDiagnostics", Duration::from_secs(10))
        .await
        .unwrap();
    let r = c.request("csi/stack", json!({})).await;
    let f0 = &r["result"]["threads"][0]["frames"][0];
    assert_eq!(f0["function"], "charge");
    assert_eq!(f0["uri"], uri(SRC));
}

/// The real binary over stdio, the way editors run it.
#[tokio::test]
async fn stdio_binary_end_to_end() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_csi-lsp"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut c = Client::new(stdout, stdin);
    let init = c.initialize(json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "csi-lsp");
    let r = c
        .request(
            "workspace/executeCommand",
            open_args("null_deref/realistic-O0", "null_deref"),
        )
        .await;
    assert_eq!(r["result"]["threads"][0]["frames"][0]["function"], "charge");
    c.open_doc(SRC).await;
    let h = hints(&mut c, SRC).await;
    assert_eq!(h[4], label("⚡ SIGSEGV at 0x8 — frame #0", 30, 54));
    // The hover shows the crash frame's real locals: check them against gdb when installed.
    let hv = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri(SRC)}, "position": {"line": 30, "character": 4}}),
        )
        .await;
    let text = hv["result"]["contents"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    if let Ok(out) = std::process::Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "info locals", "-ex", "info args"])
        .arg(fixture("null_deref/realistic-O0/null_deref"))
        .arg(fixture("null_deref/realistic-O0/core"))
        .output()
    {
        let gdb = String::from_utf8_lossy(&out.stdout);
        let mut checked = 0;
        for line in gdb
            .lines()
            .filter(|l| l.contains(" = ") && !l.starts_with('#'))
        {
            let (name, value) = line.split_once(" = ").unwrap();
            assert!(
                text.contains(&format!(" {name} = {value}")),
                "gdb says {line}; hover:\n{text}"
            );
            checked += 1;
        }
        assert!(checked >= 6, "gdb printed {gdb}");
    }
    let r = c.request("shutdown", Value::Null).await;
    assert!(r.get("error").is_none());
    c.notify("exit", Value::Null).await;
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn slice_from_the_crash_and_from_a_line() {
    const SLICES: &str = "fixtures/src/slices.c";
    let mut c = in_process(json!({})).await;
    c.request(
        "workspace/executeCommand",
        open_args("slices/realistic-O0", "slices"),
    )
    .await;
    // From the crash point (crates/csi-dump/tests/slicing.rs explains these lines).
    let r = c.request("csi/slice", json!({})).await;
    let file = |lines: Value| json!([{"uri": "file://$ROOT/fixtures/src/slices.c", "file": "./src/slices.c", "lines": lines}]);
    assert_eq!(
        scrub(&r["result"]),
        json!({
            "criterion": {"uri": "file://$ROOT/fixtures/src/slices.c", "file": "./src/slices.c",
                          "line": 25, "function": "boom", "thread": 0, "frame": 0, "variables": null},
            "unknownVariables": [],
            "restricted": file(json!([8, 12, 13, 14, 15, 17, 18, 25, 30, 31, 32, 33, 34, 37, 38])),
            "unrestricted": file(json!([8, 12, 13, 14, 15, 17, 18, 22, 23, 24, 25, 30, 31, 32, 33, 34, 36, 37, 38])),
            "restrictedLines": 15, "unrestrictedLines": 19, "reduction": 0.211
        })
    );
    // Shown: a hint on every restricted line, a lens above the criterion.
    let h = hints(&mut c, SLICES).await;
    let slice_lines: Vec<u64> = h
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["label"] == "◆ slice")
        .map(|x| x["position"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(
        slice_lines,
        [8, 12, 13, 14, 15, 17, 18, 25, 30, 31, 32, 33, 34, 37, 38]
    );
    let lenses = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(SLICES)}}),
        )
        .await;
    let lens_of_slice: Vec<&Value> = lenses["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["command"]["command"] == "csi.slice")
        .collect();
    assert_eq!(
        lens_of_slice,
        [&lens(
            "slice: 15 lines (static 19, −21 %) · hide",
            25,
            "csi.slice",
            Some(json!({"clear": true}))
        )]
    );
    // From a line, for one variable, in main's frame (line 39 is its call of boom).
    let r = c
        .request(
            "csi/slice",
            json!({"uri": uri(SLICES), "line": 38, "variables": ["k", "nope"]}),
        )
        .await;
    let got = scrub(&r["result"]);
    assert_eq!(got["criterion"]["frame"], 1);
    assert_eq!(got["criterion"]["function"], "main");
    // The line asked for, not the first line of its node (which starts on line 38's code).
    assert_eq!(got["criterion"]["line"], 38);
    assert_eq!(got["unknownVariables"], json!(["nope"]));
    assert_eq!(got["restricted"][0]["lines"], json!([8, 31, 38]));
    // Bad requests are errors, not crashes.
    let r = c.request("csi/slice", json!({"uri": uri(SLICES)})).await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("both `uri` and `line`"),
        "{r}"
    );
    let r = c
        .request("csi/slice", json!({"uri": uri(SLICES), "line": 3}))
        .await;
    assert!(
        r["error"]["message"].as_str().unwrap().contains("no code"),
        "{r}"
    );
    // Hidden again.
    let r = c.request("csi/slice", json!({"clear": true})).await;
    assert_eq!(r["result"], Value::Null);
    let h = hints(&mut c, SLICES).await;
    assert!(!h
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["label"] == "◆ slice"));
}

/// A crash inside an instrumented shared library: the library's frames are analysed (source,
/// path steps, line states) like the executable's, and lenses appear in the library's source.
#[tokio::test]
async fn library_frames_are_analysed() {
    let mut c = in_process(json!({})).await;
    let r = c
        .request(
            "workspace/executeCommand",
            open_args("shlib_crash/realistic-O0", "shlib_crash"),
        )
        .await;
    let frames = r["result"]["threads"][0]["frames"].as_array().unwrap();
    let analysed: Vec<(&str, bool, u64)> = frames
        .iter()
        .filter(|f| !f["file"].is_null())
        .map(|f| {
            (
                f["function"].as_str().unwrap(),
                f["analysed"].as_bool().unwrap(),
                f["pathSteps"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        analysed.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        [("visit", true), ("walk_sum", true), ("main", true)]
    );
    assert!(analysed.iter().all(|x| x.2 > 0), "{analysed:?}");
    assert!(frames[0]["module"]
        .as_str()
        .unwrap()
        .ends_with("libwalk.so"));
    let rel = "fixtures/src/shlib/walk.c";
    c.open_doc(rel).await;
    let lenses = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(rel)}}),
        )
        .await;
    let titles: Vec<&str> = lenses["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["command"]["title"].as_str())
        .collect();
    assert!(
        titles
            .iter()
            .any(|t| t.contains("frame #0") && t.contains("never")),
        "{titles:?}"
    );
}

/// A handler that panics answers an internal error and every later request is served (the
/// panic is isolated, locks it poisoned are recovered). The panic comes from the test hook
/// `csi.test.panic`, which exists only with `CSI_LSP_TEST_HOOKS` set.
#[tokio::test]
async fn a_panicking_request_answers_an_error_and_the_server_goes_on() {
    std::env::set_var("CSI_LSP_TEST_HOOKS", "1");
    let mut c = in_process(json!({})).await;
    let r = c
        .request(
            "workspace/executeCommand",
            open_args("null_deref/realistic-O0", "null_deref"),
        )
        .await;
    assert!(r.get("error").is_none(), "{r}");
    for _ in 0..3 {
        let r = c
            .request(
                "workspace/executeCommand",
                json!({"command": "csi.test.panic", "arguments": []}),
            )
            .await;
        assert_eq!(r["error"]["code"], -32603, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("internal error: csi.test.panic requested"),
            "{r}"
        );
        let r = c.request("csi/stack", json!({})).await;
        assert!(r.get("error").is_none(), "{r}");
        assert!(!r["result"].is_null(), "{r}");
    }
}

/// The malformed-request suite against the real binary over stdio: every custom request and
/// every command, with wrong types, missing parameters, nulls, negative, huge, out-of-range and
/// reversed values, before and after a crash is open. Each is answered — a result or an
/// `InvalidParams`-style error, never an internal error (which would mean a handler panicked
/// and was caught) — and the server is alive and right at the end.
#[tokio::test]
async fn malformed_requests_over_stdio_are_answered_and_the_server_lives() {
    const SLICES: &str = "fixtures/src/slices.c";
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_csi-lsp"))
        .env("CSI_LSP_TEST_HOOKS", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut c = Client::new(stdout, stdin);
    c.initialize(json!({})).await;

    let huge = json!(1u64 << 40);
    let max = json!(u64::MAX);
    let src = uri(SLICES);
    // Values of every JSON type, and the numbers that break index arithmetic.
    let junk = [
        json!(null),
        json!(true),
        json!(-1),
        json!(-9223372036854775808i64),
        huge.clone(),
        max.clone(),
        json!(1e308),
        json!(0.5),
        json!("x"),
        json!(""),
        json!([]),
        json!([null]),
        json!([1, 2]),
        json!({}),
        json!({"a": {"b": [1]}}),
    ];
    let fields = [
        "thread",
        "frame",
        "delta",
        "range",
        "uri",
        "line",
        "uri2",
        "line2",
        "kind",
        "variables",
        "clear",
        "executable",
        "core",
        "graph",
        "report",
    ];
    let mut params: Vec<Value> = junk.to_vec();
    for f in fields {
        for j in &junk {
            params.push(json!({ f: j }));
        }
    }
    // Ranges reversed, out of range, negative and huge; lines beyond files and beyond u32.
    for (from, to) in [
        (5, 1),
        (1u64 << 40, 0),
        (0, 1u64 << 40),
        (u64::MAX, u64::MAX),
        (3, 3),
    ] {
        params.push(json!({"range": {"thread": 0, "from": from, "to": to}}));
        params.push(json!({"range": {"thread": u64::MAX, "from": from, "to": to}}));
    }
    params.push(json!({"range": {"from": 2, "to": -1}}));
    params.push(json!({"range": {"from": -5, "to": -1}}));
    params.push(json!({"range": {"from": "a", "to": null}}));
    for line in [
        json!(-1),
        json!(0),
        json!(10_000),
        json!(u32::MAX),
        json!(4294967296u64 + 28),
        huge.clone(),
        max.clone(),
        json!("28"),
        json!(28.5),
    ] {
        params.push(json!({"uri": src, "line": line}));
        params.push(json!({"uri": src, "line": line, "variables": ["total", 5]}));
        for kind in ["mayRun", "mayNotRun", "mayRunBefore", "nonsense"] {
            params
                .push(json!({"kind": kind, "uri": src, "line": line, "uri2": src, "line2": line}));
        }
    }
    params.push(json!({"uri": "not a uri", "line": 3}));
    params.push(json!({"uri": "file:///nonexistent/x.c", "line": 3}));
    params.push(json!({"uri": src}));
    params.push(json!({"line": 3}));
    params.push(json!({"variables": "total"}));
    params.push(json!({"variables": [null, {}]}));
    params.push(json!({"clear": "yes"}));
    for (t, f) in [(0, u64::MAX), (u64::MAX, 0), (0, 1u64 << 40), (7, 0)] {
        params.push(json!({"thread": t, "frame": f}));
    }
    for inline in [json!(0), json!(u64::MAX), json!(-1), json!("0")] {
        params.push(json!({"thread": 0, "frame": 0, "inline": inline}));
    }
    for d in [i64::MIN, i64::MAX, -1, 1, 0] {
        params.push(json!({ "delta": d }));
    }
    for (exe, core) in [
        ("", ""),
        ("/", "/"),
        ("/dev/null", "/dev/null"),
        ("/nonexistent", "/nonexistent"),
    ] {
        params.push(json!({"executable": exe, "core": core}));
        params.push(json!({"graph": exe, "report": core}));
    }
    let methods = [
        "csi/stack",
        "csi/selectFrame",
        "csi/stepPath",
        "csi/pathTrace",
        "csi/query",
        "csi/slice",
        "csi/openCrash",
        "csi/openReport",
        "csi/crashBuckets",
        "csi/bucketCrashes",
        "csi/bucketLineStates",
        "csi/functionSpans",
    ];
    let mut answered = 0;
    for crash_open in [false, true] {
        if crash_open {
            let r = c
                .request(
                    "workspace/executeCommand",
                    open_args("slices/realistic-O0", "slices"),
                )
                .await;
            assert!(r.get("error").is_none(), "{r}");
        }
        for p in &params {
            // Each custom request, and each command (plain and wrapped in `arguments`).
            let mut calls: Vec<(&str, Value)> = methods.iter().map(|m| (*m, p.clone())).collect();
            for cmd in csi_lsp::COMMANDS.iter().filter(|c| **c != "csi.clear") {
                calls.push((
                    "workspace/executeCommand",
                    json!({"command": cmd, "arguments": [p]}),
                ));
            }
            for (method, params) in calls {
                let r = c.request(method, params.clone()).await;
                assert!(
                    r.get("result").is_some() || r["error"]["code"].is_i64(),
                    "{method} {params}: {r}"
                );
                assert_ne!(
                    r["error"]["code"], -32603,
                    "{method} {params}: a handler panicked: {r}"
                );
                answered += 1;
            }
            // Malformed openCrash/openReport do not drop the open crash.
            if crash_open {
                let r = c.request("csi/stack", json!({})).await;
                assert!(r["result"]["threads"].is_array(), "after {p}: {r}");
            }
        }
        // Standard requests with out-of-range positions and reversed ranges.
        for (line, ch) in [
            (0u64, 0u64),
            (u32::MAX as u64, u32::MAX as u64),
            (10_000, 3),
            (28, 10_000),
        ] {
            let r = c
                .request(
                    "textDocument/hover",
                    json!({"textDocument": {"uri": src}, "position": {"line": line, "character": ch}}),
                )
                .await;
            assert!(r.get("result").is_some(), "hover {line}:{ch}: {r}");
        }
        let r = c
            .request(
                "textDocument/inlayHint",
                json!({"textDocument": {"uri": src}, "range": {"start": {"line": 50, "character": 0}, "end": {"line": 2, "character": 0}}}),
            )
            .await;
        assert!(r.get("result").is_some(), "{r}");
        let r = c
            .request(
                "textDocument/codeLens",
                json!({"textDocument": {"uri": "file:///nonexistent.c"}}),
            )
            .await;
        assert!(r.get("result").is_some(), "{r}");
        // Wrong parameter types for a standard request: an error, not a dead server.
        let r = c
            .request("textDocument/hover", json!({"position": "x"}))
            .await;
        assert!(r["error"]["code"].is_i64(), "{r}");
        let r = c.request("csi/nonexistent", json!({})).await;
        assert_eq!(r["error"]["code"], -32601, "{r}");
        // Notifications with nonsense are dropped, not fatal.
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": src, "version": -1}, "contentChanges": [{"text": 5}]}),
        )
        .await;
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": 7}}))
            .await;
        c.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"csi": {"substitutePaths": 3}}}),
        )
        .await;
        // A handler that panics (test hook): an internal error, and the server goes on.
        let r = c
            .request(
                "workspace/executeCommand",
                json!({"command": "csi.test.panic", "arguments": []}),
            )
            .await;
        assert_eq!(r["error"]["code"], -32603, "{r}");
    }
    assert!(answered > 2000, "{answered}");
    // A line beyond u32 is refused, not truncated into another line (2^32 + 28 was line 28).
    for method in ["csi/slice", "csi/query"] {
        let r = c
            .request(method, json!({"uri": src, "line": 4294967296u64 + 28}))
            .await;
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("0-based line number"),
            "{method}: {r}"
        );
    }
    // Alive, and still right: the crash's stack and a slice from a line.
    let r = c.request("csi/stack", json!({})).await;
    assert_eq!(
        r["result"]["threads"][0]["frames"][0]["function"], "boom",
        "{r}"
    );
    let r = c
        .request("csi/slice", json!({"uri": src, "line": 32}))
        .await;
    assert_eq!(r["result"]["criterion"]["line"], 32, "{r}");
    let r = c.request("shutdown", Value::Null).await;
    assert!(r.get("error").is_none());
    c.notify("exit", Value::Null).await;
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

/// The criterion of a slice from a line is that line (VS Code asked for 0-based 28 of
/// null_deref.c and got 27 back: `if (f > 50)` shares a node with the line above, and the
/// node's first line was reported).
#[tokio::test]
async fn slice_criterion_is_the_line_asked_for() {
    let mut c = in_process(json!({})).await;
    c.request(
        "workspace/executeCommand",
        open_args("null_deref/realistic-O0", "null_deref"),
    )
    .await;
    for line in [26u32, 27, 28, 30] {
        let r = c
            .request("csi/slice", json!({"uri": uri(SRC), "line": line}))
            .await;
        assert_eq!(r["result"]["criterion"]["line"], line, "{r}");
        assert_eq!(r["result"]["criterion"]["uri"], uri(SRC), "{r}");
    }
}

/// `csi/functionSpans`: every function of a file from the declaration line to its last line
/// with code, checked against the source (the closing brace when code is on it, as the return
/// block of `find`'s two returns at -O0; else the last statement, only the brace after it); the
/// counts are the code lenses'. At -O2 the spans still start where the source declares the
/// function and stay within its braces, without the lines inlined into it. Not a source of the program: no functions; edited:
/// none and `stale`.
#[tokio::test]
async fn function_spans_of_a_file() {
    let source: Vec<String> = std::fs::read_to_string(root().join(SRC))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // The 0-based lines of the source's `{name}(` and of the first `}` line after it.
    let declared = |name: &str| -> (u64, u64) {
        let pat = format!("{name}(");
        let first = source
            .iter()
            .position(|l| l.contains(&pat) && !l.starts_with(' ') && l.trim_end().ends_with('{'))
            .unwrap_or_else(|| panic!("{name} in the source"));
        let last = first + source[first..].iter().position(|l| l == "}").unwrap();
        (first as u64, last as u64)
    };
    let spans_of = |r: &Value| -> Vec<(String, u64, u64)> {
        r["result"]["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["first"].as_u64().unwrap(),
                    f["last"].as_u64().unwrap(),
                )
            })
            .collect()
    };

    let mut c = in_process(json!({})).await;
    let r = c
        .request("csi/functionSpans", json!({"uri": uri(SRC)}))
        .await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no crash is open"),
        "{r}"
    );
    c.request(
        "workspace/executeCommand",
        open_args("null_deref/realistic-O0", "null_deref"),
    )
    .await;
    let r = c
        .request("csi/functionSpans", json!({"uri": uri(SRC)}))
        .await;
    let f = |name: &str, first: u32, last: u32, must: u32, may: u32, never: u32| {
        json!({"name": name, "file": "./src/null_deref.c", "first": first, "last": last,
               "must": must, "may": may, "never": never})
    };
    assert_eq!(
        scrub(&r["result"]),
        json!({"uri": "file://$ROOT/fixtures/src/null_deref.c", "functions": [
            f("find", 6, 12, 2, 4, 0),
            f("fee", 14, 22, 3, 3, 1),
            f("charge", 25, 31, 4, 1, 1),
            f("main", 34, 42, 6, 0, 2),
        ]})
    );
    // Against the source: from the line declaring each function to its closing brace, or to
    // the last line before it that is not blank.
    for (name, first, last) in spans_of(&r) {
        let (decl, brace) = declared(&name);
        assert_eq!(first, decl, "{name}");
        let last_code = (decl..brace)
            .rev()
            .find(|&l| !source[l as usize].trim().is_empty())
            .unwrap();
        assert!(last == brace || last == last_code, "{name} ends on {last}");
    }
    assert_eq!(spans_of(&r)[0], ("find".to_string(), 6, 12), "the brace");
    // The counts are the global lenses' (one above each function).
    let lenses = c
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(SRC)}}),
        )
        .await;
    for x in r["result"]["functions"].as_array().unwrap() {
        let title = format!(
            "global · must {} · may {} · never {}",
            x["must"], x["may"], x["never"]
        );
        assert!(
            lenses["result"].as_array().unwrap().iter().any(|l| {
                l["command"]["title"] == title.as_str() && l["range"]["start"]["line"] == x["first"]
            }),
            "{title} at {}: {lenses}",
            x["first"]
        );
    }
    // As a command too.
    let cmd = c
        .request(
            "workspace/executeCommand",
            json!({"command": "csi.functionSpans", "arguments": [{"uri": uri(SRC)}]}),
        )
        .await;
    assert_eq!(cmd["result"], r["result"]);
    // A file that is not a source of the program; a missing uri.
    let r = c
        .request("csi/functionSpans", json!({"uri": uri("README.md")}))
        .await;
    assert_eq!(r["result"]["functions"], json!([]));
    let r = c.request("csi/functionSpans", json!({})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Edited: the lines no longer match.
    c.open_doc(SRC).await;
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(SRC), "version": 2},
        "contentChanges": [{"text": "// new\n"}]}),
    )
    .await;
    let r = c
        .request("csi/functionSpans", json!({"uri": uri(SRC)}))
        .await;
    assert_eq!(r["result"]["functions"], json!([]));
    assert_eq!(r["result"]["stale"], true);

    // -O2: whatever code is left, within the function's lines of the source.
    let mut c = in_process(json!({})).await;
    c.request(
        "workspace/executeCommand",
        open_args("null_deref/realistic-O2", "null_deref"),
    )
    .await;
    let r = c
        .request("csi/functionSpans", json!({"uri": uri(SRC)}))
        .await;
    let spans = spans_of(&r);
    assert!(spans.iter().any(|(n, _, _)| n == "main"), "{r}");
    for (name, first, last) in &spans {
        let (decl, brace) = declared(name);
        assert!(
            decl == *first && first <= last && *last <= brace,
            "{name} within its lines {decl}..={brace}: {r}"
        );
    }
    // find and fee were inlined into charge and main (whose nodes hold their lines 8–21): not
    // in the spans.
    assert_eq!(
        spans,
        [("charge".to_string(), 25, 31), ("main".to_string(), 34, 42)]
    );
}
