//! The crash store in the editor: the real csi-lsp binary over stdio on a real store made at
//! test time (scripts/crash-store-fixture.sh: calc of the triage corpus built with csi-cc,
//! four real cores of three bugs, four passing runs, `csi triage --store --passing`):
//! `csi/crashBuckets`, `csi/bucketCrashes`, `csi/bucketLineStates` checked against `csi
//! crashes --format json` of the same store, opening a bucket's crash through
//! `csi/openCrash`, and every store error as one line with the server going on.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

type Stdio = Client<tokio::process::ChildStdout, tokio::process::ChildStdin>;

const DIV: &str = "SIGFPE in divide | apply | eval | main";

/// `csi`: `$CSI`, else the one built beside this csi-lsp (the script builds it otherwise).
fn csi_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CSI") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_BIN_EXE_csi-lsp")).with_file_name("csi");
    p.is_file().then_some(p)
}

/// The store fixture in a fresh directory.
fn make_store(out: &Path) -> PathBuf {
    let mut cmd = Command::new(root().join("scripts/crash-store-fixture.sh"));
    cmd.arg(out);
    if let Some(csi) = csi_binary() {
        cmd.env("CSI", csi);
    }
    let o = cmd.output().expect("bash");
    assert!(
        o.status.success(),
        "crash-store-fixture.sh failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.join("crashes.db")
}

fn csi_crashes_json(db: &Path, out: &Path) -> Value {
    let csi = csi_binary().unwrap_or_else(|| {
        // The script built it into the release target directory.
        let t = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target"));
        t.join("release/csi")
    });
    let o = Command::new(csi)
        .args(["crashes", "--format", "json", "--store"])
        .arg(db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = out;
    serde_json::from_slice(&o.stdout).unwrap()
}

async fn server(options: Value) -> (tokio::process::Child, Stdio) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_csi-lsp"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut c = Client::new(stdout, stdin);
    let init = c.initialize(options).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "csi-lsp");
    (child, c)
}

/// The 1-based line of the first line of calc.c containing `text`.
fn line_of(text: &str) -> u64 {
    let src = std::fs::read_to_string(root().join("bench/triage/src/calc.c")).unwrap();
    src.lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("{text} not in calc.c")) as u64
        + 1
}

fn lines(v: &Value) -> BTreeSet<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// An error answer: one line, the given code, containing `what`.
fn one_line_error(r: &Value, code: i64, what: &str) {
    let msg = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {r}"));
    assert_eq!(r["error"]["code"], code, "{r}");
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.contains(what), "{msg}");
}

#[tokio::test]
async fn buckets_crashes_and_line_states_of_a_real_store() {
    let tmp = std::env::temp_dir().join(format!("csi-lsp-store-{}", std::process::id()));
    let db = make_store(&tmp);
    let exe = tmp.join("bin/calc");
    let stored = csi_crashes_json(&db, &tmp);
    let (_child, mut c) = server(json!({"crashStore": db})).await;

    // The buckets, by count, each with what the list shows.
    let r = c.request("csi/crashBuckets", json!({})).await;
    let res = &r["result"];
    assert_eq!(res["store"], db.to_str().unwrap(), "{r}");
    assert_eq!(res["message"], Value::Null, "{r}");
    let buckets = res["buckets"].as_array().unwrap();
    let sigs: Vec<&str> = buckets
        .iter()
        .map(|b| b["signature"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = stored["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["signature"].as_str().unwrap())
        .collect();
    assert_eq!(sigs, want);
    assert_eq!(sigs.len(), 3, "{sigs:?}");
    let div = &buckets[0];
    assert_eq!(div["signature"], DIV);
    assert_eq!(div["program"], exe.to_str().unwrap());
    assert_eq!(div["signal"], "SIGFPE");
    assert_eq!(div["count"], 2);
    assert_eq!(div["linesAnalysed"], true);
    assert_eq!(div["hasPassing"], true);
    assert_eq!(div["passingRuns"], 4);
    assert!(div["firstTime"].as_u64().unwrap() <= div["lastTime"].as_u64().unwrap());
    assert!(div["firstTimeText"].as_str().unwrap().ends_with(" UTC"));
    let rep = &div["representative"];
    assert_eq!(rep["executable"], exe.to_str().unwrap());
    assert_eq!(rep["core"], stored["buckets"][0]["representative"]["core"]);
    assert_eq!(rep["hash"], stored["buckets"][0]["representative"]["hash"]);
    let divide = line_of("return a / b;");
    assert_eq!(div["sites"], json!({format!("./src/calc.c:{divide}"): 2}));
    // One program's buckets.
    let r = c.request("csi/crashBuckets", json!({"program": exe})).await;
    assert_eq!(r["result"]["buckets"].as_array().unwrap().len(), 3, "{r}");
    let r = c
        .request("csi/crashBuckets", json!({"program": "/no/such/program"}))
        .await;
    assert_eq!(r["result"]["buckets"], json!([]), "{r}");

    // A bucket's crashes: what csi/openCrash takes, oldest first.
    let r = c
        .request(
            "csi/bucketCrashes",
            json!({"program": exe, "signature": DIV}),
        )
        .await;
    let crashes = r["result"]["crashes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    let cores: BTreeSet<String> = crashes
        .iter()
        .map(|c| c["core"].as_str().unwrap().to_string())
        .collect();
    let want: BTreeSet<String> = ["cores/div/0/core", "cores/div/1/core"]
        .iter()
        .map(|p| tmp.join(p).display().to_string())
        .collect();
    assert_eq!(cores, want);
    for (k, cr) in crashes.iter().enumerate() {
        let s = &stored["buckets"][0]["crashes"][k];
        assert_eq!(
            (
                &cr["core"],
                &cr["executable"],
                &cr["time"],
                &cr["site"],
                &cr["hash"]
            ),
            (
                &s["core"],
                &s["executable"],
                &s["time"],
                &s["site"],
                &s["hash"]
            )
        );
        assert_eq!(cr["hash"].as_str().unwrap().len(), 64);
        assert_eq!(cr["signal"], "SIGFPE");
    }

    // The bucket's lines, in csi/lineStates' shape, calc.c resolved to the workspace's file.
    let r = c
        .request(
            "csi/bucketLineStates",
            json!({"program": exe, "signature": DIV}),
        )
        .await;
    let ls = &r["result"];
    assert_eq!(ls["count"], 2, "{r}");
    assert_eq!(ls["passingRuns"], 4, "{r}");
    let files = ls["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{ls:#}");
    let f = &files[0];
    let calc = root().join("bench/triage/src/calc.c");
    assert_eq!(f["uri"], format!("file://{}", calc.display()), "{f:#}");
    assert_eq!(f["file"], calc.display().to_string());
    assert_eq!(f["keys"], json!(["./src/calc.c"]));
    assert_eq!(
        (&f["version"], &f["may"], &f["partial"], &f["frame"]),
        (&Value::Null, &json!([]), &json!([]), &Value::Null)
    );
    // Exactly the store's must in all / never in any, 0-based.
    let sb = &stored["buckets"][0];
    let zero = |v: &Value| lines(v).into_iter().map(|l| l - 1).collect::<BTreeSet<_>>();
    assert_eq!(lines(&f["must"]), zero(&sb["must_in_all"]["./src/calc.c"]));
    assert_eq!(
        lines(&f["never"]),
        zero(&sb["never_in_any"]["./src/calc.c"])
    );
    assert!(lines(&f["must"]).contains(&(divide - 1)), "{f:#}");
    assert!(
        lines(&f["never"]).contains(&(line_of("long r = a % b;") - 1)),
        "{f:#}"
    );
    // The suspicious lines: the store's, 0-based, ranked; the division near the top, known
    // exactly (both crashes, one passing run of four).
    let sus = f["suspicious"].as_array().unwrap();
    let stored_sus = sb["extra"]["passing"]["suspicious"].as_array().unwrap();
    assert_eq!(sus.len(), stored_sus.len());
    for s in sus {
        let k = s["rank"].as_u64().unwrap() as usize - 1;
        let st = &stored_sus[k];
        assert_eq!(
            s["line"].as_u64().unwrap() + 1,
            st["line"].as_u64().unwrap()
        );
        assert_eq!(
            (&s["ochiai"], &s["failed"], &s["passed"], &s["onStack"]),
            (&st["ochiai"], &st["failed"], &st["passed"], &st["on_stack"])
        );
        let (lo, hi) = (
            s["ochiai"][0].as_f64().unwrap(),
            s["ochiai"][1].as_f64().unwrap(),
        );
        assert!((0.0..=hi).contains(&lo) && hi <= 1.0, "{s}");
    }
    let d = sus
        .iter()
        .find(|s| s["line"] == divide - 1)
        .unwrap_or_else(|| panic!("{f:#}"));
    assert!(d["rank"].as_u64().unwrap() <= 5, "{d}");
    assert_eq!(
        (&d["failed"], &d["passed"]),
        (&json!([2, 2]), &json!([1, 1]))
    );
    assert_eq!(d["onStack"], 2);
    assert_eq!(
        lines(&f["passingOnly"]),
        zero(&sb["extra"]["passing"]["passing_only"]["./src/calc.c"])
    );

    // Opening one crash of the bucket is csi/openCrash with its executable and core.
    let r = c
        .request(
            "csi/openCrash",
            json!({"executable": crashes[0]["executable"], "core": crashes[0]["core"]}),
        )
        .await;
    assert_eq!(r["result"]["signal"]["name"], "SIGFPE", "{r}");
    assert_eq!(r["result"]["threads"][0]["frames"][0]["function"], "divide");

    // Errors: one line each, and the server goes on.
    let r = c
        .request(
            "csi/bucketLineStates",
            json!({"program": exe, "signature": "SIGSEGV in nowhere"}),
        )
        .await;
    one_line_error(&r, -32803, "no bucket `SIGSEGV in nowhere`");
    let r = c
        .request("csi/bucketCrashes", json!({"signature": DIV}))
        .await;
    one_line_error(&r, -32602, "needs {\"program\"");
    let junk = tmp.join("junk.db");
    std::fs::write(&junk, b"not a database, not at all, really not one").unwrap();
    for (spec, what) in [
        (junk.display().to_string(), "junk.db"),
        ("mysql://h/db".to_string(), "unknown store URL scheme"),
        (
            "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2".to_string(),
            "postgres://u:***@127.0.0.1:1/db",
        ),
    ] {
        c.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"csi": {"crashStore": spec}}}),
        )
        .await;
        let r = c.request("csi/crashBuckets", json!({})).await;
        one_line_error(&r, -32803, what);
        assert!(!r["error"]["message"].as_str().unwrap().contains("secret"));
    }
    // A store that is absent: an empty list and why.
    let missing = tmp.join("missing.db");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"csi": {"crashStore": missing}}}),
    )
    .await;
    let r = c.request("csi/crashBuckets", json!({})).await;
    assert_eq!(r["result"]["buckets"], json!([]), "{r}");
    assert!(
        r["result"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{r}"
    );
    assert!(!missing.exists(), "the query created the store");
    let r = c
        .request(
            "csi/bucketLineStates",
            json!({"program": exe, "signature": DIV}),
        )
        .await;
    one_line_error(&r, -32803, "does not exist");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"csi": {"crashStore": ""}}}),
    )
    .await;
    let r = c.request("csi/crashBuckets", json!({})).await;
    assert_eq!(r["result"]["buckets"], json!([]), "{r}");
    assert!(
        r["result"]["message"]
            .as_str()
            .unwrap()
            .contains("no crash store is set"),
        "{r}"
    );
    // Still serving: the crash opened above, and the store again.
    let r = c.request("csi/stack", json!({})).await;
    assert_eq!(r["result"]["signal"]["name"], "SIGFPE", "{r}");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"csi": {"crashStore": db}}}),
    )
    .await;
    let r = c
        .request(
            "workspace/executeCommand",
            json!({"command": "csi.crashBuckets", "arguments": [{}]}),
        )
        .await;
    assert_eq!(r["result"]["buckets"].as_array().unwrap().len(), 3, "{r}");
    std::fs::remove_dir_all(&tmp).unwrap();
}
