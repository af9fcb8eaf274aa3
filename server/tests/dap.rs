//! `csi-dap` end to end over stdio (the built binary, JSON in and whole JSON out) on the
//! checked-in null_deref crash: threads, the Call Stack, scopes, the Variables tree three levels
//! deep, `evaluate` of 20 expressions against gdb's `print` on the same core, `readMemory`,
//! `disassemble`, stepping back through every recorded path step and forward again, and a
//! suite of malformed requests after which the adapter still answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn fixture() -> (PathBuf, PathBuf) {
    let dir = root().join("fixtures/crashes/null_deref/realistic-O0");
    (dir.join("null_deref"), dir.join("core"))
}

struct Dap {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    seq: i64,
    /// Events received so far, in order.
    events: Vec<Value>,
}

impl Dap {
    fn start() -> Dap {
        let mut child = Command::new(env!("CARGO_BIN_EXE_csi-dap"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("csi-dap starts");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Dap {
            child,
            input,
            output,
            seq: 0,
            events: Vec::new(),
        }
    }

    fn send_raw(&mut self, body: &[u8]) {
        write!(self.input, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.input.write_all(body).unwrap();
        self.input.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "csi-dap closed its output"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.output.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Sends a request and returns its whole response; events on the way are kept.
    fn request(&mut self, command: &str, arguments: Value) -> Value {
        self.seq += 1;
        let seq = self.seq;
        let msg =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments});
        self.send_raw(msg.to_string().as_bytes());
        self.response_to(seq)
    }

    fn response_to(&mut self, seq: i64) -> Value {
        loop {
            let m = self.read();
            match m["type"].as_str() {
                Some("event") => self.events.push(m),
                Some("response") if m["request_seq"] == seq => return m,
                _ => panic!("unexpected message {m}"),
            }
        }
    }

    fn ok(&mut self, command: &str, arguments: Value) -> Value {
        let r = self.request(command, arguments.clone());
        assert_eq!(r["success"], true, "{command} {arguments} failed: {r}");
        assert_eq!(r["command"], command);
        r["body"].clone()
    }

    /// The next event named `name` (reading more messages if needed).
    fn event(&mut self, name: &str) -> Value {
        loop {
            if let Some(i) = self.events.iter().position(|e| e["event"] == name) {
                return self.events.remove(i);
            }
            let m = self.read();
            assert_eq!(m["type"], "event", "unexpected {m}");
            self.events.push(m);
        }
    }

    fn launched() -> Dap {
        let mut d = Dap::start();
        let caps = d.ok(
            "initialize",
            json!({"adapterID": "csi", "clientID": "test", "linesStartAt1": true}),
        );
        assert_eq!(caps["supportsStepBack"], true);
        assert_eq!(caps["supportsReadMemoryRequest"], true);
        assert_eq!(caps["supportsDisassembleRequest"], true);
        d.event("initialized");
        let (exe, core) = fixture();
        d.ok("launch", json!({"program": exe, "coreFile": core}));
        d.ok("configurationDone", json!({}));
        let stopped = d.event("stopped");
        assert_eq!(stopped["body"]["reason"], "exception");
        assert_eq!(stopped["body"]["description"], "SIGSEGV (1)");
        d
    }

    /// The Call Stack of the thread, as (name, file name, line).
    fn stack(&mut self, thread: i64) -> Vec<(String, String, i64, i64)> {
        let b = self.ok("stackTrace", json!({"threadId": thread}));
        b["stackFrames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["source"]["name"].as_str().unwrap_or("").to_string(),
                    f["line"].as_i64().unwrap(),
                    f["id"].as_i64().unwrap(),
                )
            })
            .collect()
    }
}

impl Drop for Dap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn variables(d: &mut Dap, reference: i64) -> Vec<Value> {
    d.ok("variables", json!({"variablesReference": reference}))["variables"]
        .as_array()
        .unwrap()
        .clone()
}

fn find<'a>(vars: &'a [Value], name: &str) -> &'a Value {
    vars.iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no variable {name} in {vars:?}"))
}

#[test]
fn threads_stack_scopes_and_variables_three_levels_deep() {
    let mut d = Dap::launched();
    let threads = d.ok("threads", json!({}));
    assert_eq!(threads["threads"].as_array().unwrap().len(), 1);
    assert!(threads["threads"][0]["name"]
        .as_str()
        .unwrap()
        .ends_with("(crashed)"));
    let stack = d.stack(1);
    let names: Vec<&str> = stack.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(&names[..2], ["charge", "main"], "{stack:?}");
    assert_eq!((stack[0].1.as_str(), stack[0].2), ("null_deref.c", 31));
    assert_eq!((stack[1].1.as_str(), stack[1].2), ("null_deref.c", 41));
    let scopes = d.ok("scopes", json!({"frameId": stack[0].3}))["scopes"].clone();
    let scope_names: Vec<&str> = scopes
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        scope_names,
        ["Arguments", "Locals", "Globals", "Registers", "CSI trace"]
    );
    let refs: Vec<i64> = scopes
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["variablesReference"].as_i64().unwrap())
        .collect();

    let args = variables(&mut d, refs[0]);
    let arg_names: Vec<&str> = args.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(arg_names, ["list", "who", "kind"]);
    assert_eq!(
        find(&args, "who")["value"]
            .as_str()
            .unwrap()
            .split_once(' ')
            .unwrap()
            .1,
        "\"zed\""
    );
    assert_eq!(find(&args, "kind")["value"], "1");
    assert_eq!(find(&args, "list")["type"], "struct account *");

    // The program's locals, without the instrumentation's own state (which has its scope).
    let locals = variables(&mut d, refs[1]);
    let local_names: Vec<&str> = locals.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert!(
        local_names.contains(&"f") && local_names.contains(&"a"),
        "{local_names:?}"
    );
    assert!(
        local_names.iter().all(|n| !n.starts_with("__")),
        "{local_names:?}"
    );
    assert_eq!(find(&locals, "a")["value"], "0x0");
    assert_eq!(
        find(&locals, "a")["variablesReference"],
        0,
        "a null pointer does not expand"
    );
    let trace = variables(&mut d, refs[4]);
    assert!(
        trace
            .iter()
            .any(|v| v["name"].as_str().unwrap().starts_with("__PT_")),
        "{trace:?}"
    );

    // list → *list (alice) → next → *next (bob) → next → *next (carol): three levels.
    let list = find(&args, "list").clone();
    let alice = variables(&mut d, list["variablesReference"].as_i64().unwrap());
    let alice_names: Vec<&str> = alice.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(alice_names, ["owner", "balance", "next"]);
    assert!(find(&alice, "owner")["value"]
        .as_str()
        .unwrap()
        .ends_with("\"alice\""));
    assert_eq!(find(&alice, "balance")["value"], "9");
    assert_eq!(find(&alice, "balance")["evaluateName"], "(list)->balance");
    let bob = variables(
        &mut d,
        find(&alice, "next")["variablesReference"].as_i64().unwrap(),
    );
    assert!(find(&bob, "owner")["value"]
        .as_str()
        .unwrap()
        .ends_with("\"bob\""));
    let carol = variables(
        &mut d,
        find(&bob, "next")["variablesReference"].as_i64().unwrap(),
    );
    assert!(find(&carol, "owner")["value"]
        .as_str()
        .unwrap()
        .ends_with("\"carol\""));
    assert_eq!(find(&carol, "next")["value"], "0x0");
    assert_eq!(
        find(&carol, "balance")["evaluateName"],
        "(((list)->next)->next)->balance"
    );
    // The evaluate name of a nested member evaluates to the same value.
    let e = d.ok("evaluate", json!({"expression": "(((list)->next)->next)->balance", "frameId": stack[0].3, "context": "watch"}));
    assert_eq!(e["result"], find(&carol, "balance")["value"]);

    // Registers of the crashing frame: rip is the pc of the stack frame.
    let regs = variables(&mut d, refs[3]);
    assert_eq!(regs.len(), 17);
    let rip = find(&regs, "rip")["value"].as_str().unwrap().to_string();
    assert!(rip.starts_with("0x"), "{rip}");

    // main's locals: the three accounts as structs.
    let main_scopes = d.ok("scopes", json!({"frameId": stack[1].3}))["scopes"].clone();
    let main_locals = variables(
        &mut d,
        main_scopes[1]["variablesReference"].as_i64().unwrap(),
    );
    let a = find(&main_locals, "a");
    assert_eq!(a["type"], "struct account");
    assert!(
        a["value"].as_str().unwrap().starts_with("{owner = 0x"),
        "{a}"
    );
}

/// gdb's `print` in frame `frame` of the core, `$N = ` removed.
fn gdb_print(frame: usize, exprs: &[&str]) -> Vec<String> {
    let (exe, core) = fixture();
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set print null-stop on",
        "-ex",
        "set print repeats unlimited",
    ])
    .args(["-ex", &format!("frame {frame}")]);
    for (i, e) in exprs.iter().enumerate() {
        cmd.args([
            "-ex",
            &format!("echo @@{i}@@"),
            "-ex",
            &format!("print {e}"),
        ]);
    }
    let out = cmd.arg(exe).arg(core).output().expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut res = vec![String::new(); exprs.len()];
    for pair in text.split("@@").skip(1).collect::<Vec<_>>().chunks(2) {
        if let [i, body] = pair {
            if let (Ok(i), Some((_, v))) = (i.parse::<usize>(), body.trim().split_once(" = ")) {
                res[i] = v.to_string();
            }
        }
    }
    res
}

#[test]
fn evaluate_matches_gdb_print() {
    if Command::new("gdb").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("gdb not installed; skipping");
        return;
    }
    let mut d = Dap::launched();
    let stack = d.stack(1);
    let exprs = [
        "list",
        "*list",
        "list->owner",
        "list->next->next->owner",
        "*list->next",
        "who",
        "who[2]",
        "&list->balance",
        "a",
        "f",
        "kind",
        "list->balance + f * 2",
        "list->next - list",
        "sizeof(struct account)",
        "list->next->balance > list->balance",
        "!a",
        "(unsigned char)list->owner[0]",
        "(long)list->next->next - (long)list",
        "list[0].next->next->balance",
        "&*list->next",
        "-kind % 7",
        "~kind",
    ];
    let gdb = gdb_print(0, &exprs);
    let mut diffs = Vec::new();
    for (e, g) in exprs.iter().zip(&gdb) {
        let r = d.ok(
            "evaluate",
            json!({"expression": e, "frameId": stack[0].3, "context": "repl"}),
        );
        if r["result"] != g.as_str() {
            diffs.push(format!("`{e}`: csi-dap {} gdb {g:?}", r["result"]));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert!(exprs.len() >= 20);
    // An error is an error response with gdb's wording, and the adapter goes on.
    let r = d.request(
        "evaluate",
        json!({"expression": "a->balance", "frameId": stack[0].3}),
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["message"], "Cannot access memory at address 0x8");
    let r = d.request(
        "evaluate",
        json!({"expression": "nosuch", "frameId": stack[0].3}),
    );
    assert_eq!(r["message"], "No symbol \"nosuch\" in current context.");
}

#[test]
fn read_memory_and_disassemble() {
    let mut d = Dap::launched();
    let stack = d.stack(1);
    let e = d.ok(
        "evaluate",
        json!({"expression": "list->owner", "frameId": stack[0].3, "context": "watch"}),
    );
    // `list->owner` points at "alice": read the string's bytes.
    let addr = e["result"]
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let m = d.ok("readMemory", json!({"memoryReference": addr, "count": 6}));
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(m["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, b"alice\0");
    assert_eq!(m["unreadableBytes"], 0);
    // Memory the core does not hold: all of it unreadable, no error.
    let m = d.ok(
        "readMemory",
        json!({"memoryReference": "0x10", "count": 16}),
    );
    assert_eq!(m["unreadableBytes"], 16);

    let frames = d.ok("stackTrace", json!({"threadId": 1}));
    let pc = frames["stackFrames"][0]["instructionPointerReference"]
        .as_str()
        .unwrap()
        .to_string();
    let dis = d.ok(
        "disassemble",
        json!({"memoryReference": pc, "instructionOffset": -4, "instructionCount": 8}),
    );
    let ins = dis["instructions"].as_array().unwrap();
    assert_eq!(ins.len(), 8);
    // The fifth instruction is the one at the pc: the faulting store through `a`.
    assert_eq!(ins[4]["address"], pc.as_str());
    assert!(
        ins[4]["symbol"].as_str().unwrap().starts_with("charge+"),
        "{}",
        ins[4]
    );
    assert!(ins.iter().all(|i| i["instruction"] != "??"), "{ins:?}");
    let before: Vec<u64> = ins
        .iter()
        .map(|i| {
            u64::from_str_radix(i["address"].as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap()
        })
        .collect();
    assert!(before.windows(2).all(|w| w[0] < w[1]), "{before:?}");
}

#[test]
fn step_back_through_every_path_step_and_forward_again() {
    let mut d = Dap::launched();
    let crash_stack = d.stack(1);
    let mut seen = vec![(crash_stack[0].0.clone(), crash_stack[0].2)];
    // Back until the recorded history ends.
    for _ in 0..200 {
        d.ok("stepBack", json!({"threadId": 1}));
        let stopped = d.event("stopped");
        let s = d.stack(1);
        if stopped["body"]["description"]
            .as_str()
            .unwrap()
            .contains("goes no further")
        {
            break;
        }
        seen.push((s[0].0.clone(), s[0].2));
    }
    assert!(seen.len() > 5, "{seen:?}");
    // The oldest step is in main; charge's steps come after main's call of it.
    assert!(
        seen.last().unwrap().0.starts_with("main [step 1 of "),
        "{seen:?}"
    );
    // Forward again through the same positions, to the crash.
    let mut forward = Vec::new();
    loop {
        let s = d.stack(1);
        forward.push((s[0].0.clone(), s[0].2));
        if s[0].0 == crash_stack[0].0 && s[0].2 == crash_stack[0].2 && s.len() == crash_stack.len()
        {
            break;
        }
        d.ok("next", json!({"threadId": 1}));
        d.event("stopped");
        assert!(forward.len() < 300, "no way back to the crash: {forward:?}");
    }
    forward.reverse();
    assert_eq!(forward, seen, "forward is backward reversed");
    // reverseContinue goes to the oldest step, continue to the crash.
    d.ok("reverseContinue", json!({"threadId": 1}));
    d.event("stopped");
    assert_eq!(d.stack(1)[0].0, seen.last().unwrap().0);
    d.ok("continue", json!({"threadId": 1}));
    assert_eq!(d.event("stopped")["body"]["reason"], "exception");
    let again: Vec<_> = d.stack(1).into_iter().map(|f| (f.0, f.1, f.2)).collect();
    let crash: Vec<_> = crash_stack
        .iter()
        .map(|f| (f.0.clone(), f.1.clone(), f.2))
        .collect();
    assert_eq!(again, crash);
}

/// `csiPosition` tells the language server which call inlined into a frame the Call Stack
/// selected (abort_assert at -O2: `push` inlined into `main`), so that the editor shows that
/// call's own lines rather than the whole frame's.
#[test]
fn csi_position_names_the_inlined_call_selected() {
    let dir = root().join("fixtures/crashes/abort_assert/realistic-O2");
    let mut d = Dap::start();
    d.ok("initialize", json!({"adapterID": "csi"}));
    d.ok(
        "launch",
        json!({"program": dir.join("abort_assert"), "coreFile": dir.join("core")}),
    );
    d.ok("configurationDone", json!({}));
    let frames = d.ok("stackTrace", json!({"threadId": 1}))["stackFrames"]
        .as_array()
        .unwrap()
        .clone();
    let id_of = |name: &str| {
        frames
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no frame {name}: {frames:?}"))["id"]
            .clone()
    };
    let inlined = d.ok("csiPosition", json!({"frameId": id_of("push [inlined]")}));
    let own = d.ok("csiPosition", json!({"frameId": id_of("main")}));
    assert_eq!(inlined["inline"], 0, "{inlined}");
    assert_eq!(own["inline"], Value::Null, "{own}");
    assert_eq!(
        inlined["frame"], own["frame"],
        "one physical frame: {inlined} {own}"
    );
    // Path steps are the physical frame's own: none for the inlined call.
    assert_eq!(inlined["step"], Value::Null, "{inlined}");
    d.ok("disconnect", json!({}));
}

#[test]
fn malformed_requests_are_answered_and_the_adapter_goes_on() {
    let mut d = Dap::start();
    // Before launch: everything needing a crash is an error, not a crash of the adapter.
    for (cmd, args) in [
        ("threads", json!({})),
        ("stackTrace", json!({"threadId": 1})),
        ("evaluate", json!({"expression": "x"})),
    ] {
        assert_eq!(d.request(cmd, args)["success"], false, "{cmd}");
    }
    let r = d.request("launch", json!({"program": "/nonexistent"}));
    assert_eq!(r["success"], false);
    assert!(r["message"].as_str().unwrap().contains("coreFile"), "{r}");
    let r = d.request(
        "launch",
        json!({"program": "/nonexistent", "coreFile": "/nonexistent.core"}),
    );
    assert_eq!(r["success"], false);
    let (exe, core) = fixture();
    d.ok("launch", json!({"program": exe, "coreFile": core}));
    let cases = [
        ("stackTrace", json!({"threadId": 0})),
        ("stackTrace", json!({"threadId": -5})),
        ("stackTrace", json!({"threadId": 1i64 << 40})),
        ("stackTrace", json!({"threadId": "one"})),
        ("stackTrace", json!({})),
        ("scopes", json!({"frameId": 0})),
        ("scopes", json!({"frameId": 1i64 << 50})),
        ("variables", json!({"variablesReference": 0})),
        ("variables", json!({"variablesReference": -1})),
        ("variables", json!({"variablesReference": 999999})),
        ("evaluate", json!({"expression": ""})),
        ("evaluate", json!({"expression": "((((((("})),
        ("evaluate", json!({"expression": "1/0"})),
        ("evaluate", json!({"expression": "*(int*)0"})),
        ("evaluate", json!({"expression": 42})),
        ("readMemory", json!({"memoryReference": "zz", "count": 4})),
        (
            "readMemory",
            json!({"memoryReference": "0x1000", "count": -4}),
        ),
        (
            "readMemory",
            json!({"memoryReference": "0x1000", "count": 1i64 << 40}),
        ),
        (
            "disassemble",
            json!({"memoryReference": "0x0", "instructionCount": -1}),
        ),
        ("stepBack", json!({"threadId": 77})),
        ("next", json!({"threadId": 0})),
        ("exceptionInfo", json!({"threadId": 9})),
        ("goto", json!({"threadId": 1, "targetId": 1})),
        ("noSuchCommand", json!({})),
        ("csiPosition", json!({"frameId": 12345})),
    ];
    for (cmd, args) in cases {
        let r = d.request(cmd, args.clone());
        assert_eq!(r["success"], false, "{cmd} {args} succeeded: {r}");
        assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    }
    // Disassembling unmapped memory gives placeholders, not an error.
    let dis = d.ok(
        "disassemble",
        json!({"memoryReference": "0x10", "instructionCount": 3}),
    );
    assert_eq!(dis["instructions"].as_array().unwrap().len(), 3);
    // Not JSON at all, and a message that is not a request.
    d.send_raw(b"{not json");
    let r = d.read();
    assert_eq!(r["success"], false);
    d.send_raw(br#"{"seq": 99, "type": "event", "event": "x"}"#);
    // Alive: a real request still works.
    assert_eq!(
        d.ok("threads", json!({}))["threads"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    d.ok("disconnect", json!({}));
    let status = d.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// Every checked-in fixture crash (C and C++, threads, shared libraries, -O0 and -O2): the
/// adapter launches, and every frame of every thread answers its scopes, every variable
/// expands two levels and evaluates by its `evaluateName`, and its pc disassembles — without
/// one error response or internal error.
#[test]
fn every_fixture_crash_is_browsable() {
    let mut dirs = Vec::new();
    let mut stack = vec![root().join("fixtures/crashes")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "core") {
                dirs.push(d.clone());
            }
        }
    }
    dirs.sort();
    assert!(dirs.len() >= 20, "{dirs:?}");
    let mut frames_seen = 0;
    let mut values_seen = 0;
    for dir in dirs {
        let program = dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let exe = dir.join(&program);
        let mut d = Dap::start();
        d.ok("initialize", json!({"adapterID": "csi"}));
        d.ok(
            "launch",
            json!({"program": exe, "coreFile": dir.join("core")}),
        );
        d.ok("configurationDone", json!({}));
        let threads = d.ok("threads", json!({}))["threads"]
            .as_array()
            .unwrap()
            .clone();
        for t in threads {
            let id = t["id"].as_i64().unwrap();
            let frames = d.ok("stackTrace", json!({"threadId": id}))["stackFrames"]
                .as_array()
                .unwrap()
                .clone();
            assert!(
                !frames.is_empty(),
                "{}: thread {id} has no frames",
                dir.display()
            );
            for f in frames.iter().take(12) {
                frames_seen += 1;
                let scopes = d.ok("scopes", json!({"frameId": f["id"]}))["scopes"]
                    .as_array()
                    .unwrap()
                    .clone();
                for s in scopes.iter().filter(|s| s["name"] != "Globals") {
                    for v in variables(&mut d, s["variablesReference"].as_i64().unwrap()) {
                        values_seen += 1;
                        if let Some(name) = v["evaluateName"].as_str() {
                            if s["name"] != "Registers" {
                                let r = d.request("evaluate", json!({"expression": name, "frameId": f["id"], "context": "watch"}));
                                // Optimized-out values are errors by design; anything else evaluates.
                                assert!(
                                    r["success"] == true
                                        || v["value"].as_str().is_some_and(|x| x.starts_with('<')),
                                    "{}: {name}: {r} (variable {v})",
                                    dir.display()
                                );
                            }
                        }
                        let r = v["variablesReference"].as_i64().unwrap();
                        if r > 0 {
                            for c in variables(&mut d, r).iter().take(20) {
                                let cr = c["variablesReference"].as_i64().unwrap();
                                if cr > 0 {
                                    variables(&mut d, cr);
                                }
                            }
                        }
                    }
                }
                if let Some(pc) = f["instructionPointerReference"].as_str() {
                    d.ok("disassemble", json!({"memoryReference": pc, "instructionOffset": -2, "instructionCount": 4}));
                }
            }
        }
        // Back to the oldest step and forward to the crash again.
        d.ok("reverseContinue", json!({"threadId": 1}));
        d.ok("continue", json!({"threadId": 1}));
        d.ok("disconnect", json!({}));
    }
    assert!(
        frames_seen > 50 && values_seen > 100,
        "{frames_seen} frames, {values_seen} values"
    );
}
