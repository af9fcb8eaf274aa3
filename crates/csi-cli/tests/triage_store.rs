//! `csi triage --store` and `csi crashes` end to end: real crashes of the corpus program
//! bench/triage/src/calc.c (built with csi-cc at test time, as tests/triage.rs does) fed
//! twice into a SQLite store, then a new core, then read back; store errors are one line.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::crash;

fn build(out: &Path) {
    common::build(out, &[]);
}

fn csi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> (Value, String) {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    (serde_json::from_slice(&o.stdout).expect("JSON"), err)
}

/// The buckets of a JSON document: signature → (sorted cores, must_in_all, never_in_any).
fn buckets(doc: &Value) -> std::collections::BTreeMap<String, (Vec<String>, Value, Value)> {
    doc["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let mut cores: Vec<String> = b["crashes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["core"].as_str().unwrap().to_string())
                .collect();
            cores.sort();
            (
                b["signature"].as_str().unwrap().to_string(),
                (cores, b["must_in_all"].clone(), b["never_in_any"].clone()),
            )
        })
        .collect()
}

/// One line on stderr, exit 2, naming `what`.
fn one_line_error(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("csi: error: store ") && err.contains(what),
        "{err}"
    );
}

#[test]
fn triage_feeds_the_store_twice_and_crashes_reads_it() {
    let tmp = std::env::temp_dir().join(format!("csi-triage-store-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let exe = tmp.join("bin/calc");
    build(&exe);
    let cores = tmp.join("cores");
    for (k, (bug, input)) in [
        ("div", "6 0 /"),
        ("div", "x 3 + 5 5 - /"),
        ("mod", "9 0 %"),
        ("underflow", "+"),
    ]
    .iter()
    .enumerate()
    {
        crash(&exe, input, &cores.join(format!("{bug}/{k}")));
    }
    let db = tmp.join("crashes.db");
    let db_s = db.to_str().unwrap();
    let dir = cores.to_str().unwrap();

    let (plain, _) = ok(&csi(&["triage", "--format", "json", dir]));
    let (first, err) = ok(&csi(&["triage", "--format", "json", "--store", db_s, dir]));
    // The run's own output is unchanged by the store.
    assert_eq!(buckets(&first), buckets(&plain));
    assert_eq!(first["skipped"], plain["skipped"]);
    assert_eq!(
        err.trim_end(),
        format!("store: 4 new crashes, 0 already stored, 3 buckets updated ({db_s})")
    );
    let (again, err) = ok(&csi(&["triage", "--format", "json", "--store", db_s, dir]));
    assert_eq!(buckets(&again), buckets(&plain));
    assert_eq!(
        err.trim_end(),
        format!("store: 0 new crashes, 4 already stored, 0 buckets updated ({db_s})")
    );

    // A later run with one new crash (and one old core copied elsewhere: the same content).
    let later = tmp.join("later");
    crash(&exe, "y x x - /", &later.join("div"));
    std::fs::create_dir_all(later.join("copy")).unwrap();
    std::fs::copy(cores.join("mod/2/core"), later.join("copy/core")).unwrap();
    let o = csi(&["triage", "--store", db_s, later.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("2 cores: 2 analysed into 2 buckets"));
    assert_eq!(
        err.trim_end(),
        format!("store: 1 new crashes, 1 already stored, 1 buckets updated ({db_s})")
    );

    // The store holds the buckets of all five crashes: what one triage of them all says.
    let all_dirs = [
        cores.join("div"),
        cores.join("mod"),
        cores.join("underflow"),
        later.join("div"),
    ];
    let mut args = vec!["triage", "--format", "json"];
    args.extend(all_dirs.iter().map(|p| p.to_str().unwrap()));
    let (all, _) = ok(&csi(&args));
    let (stored, _) = ok(&csi(&["crashes", "--store", db_s, "--format", "json"]));
    assert_eq!(buckets(&stored), buckets(&all));
    assert_eq!(stored["summary"]["crashes"], 5);
    let div = &stored["buckets"][0];
    assert_eq!(div["signature"], "SIGFPE in divide | apply | eval | main");
    assert_eq!(div["count"], 3);
    assert_eq!(div["program"], exe.to_str().unwrap());
    assert_eq!(div["representative"]["executable"], exe.to_str().unwrap());
    let hash = div["crashes"][0]["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);

    // One bucket in text, every crash listed; one crash's whole record.
    let o = csi(&[
        "crashes",
        "--store",
        db_s,
        "--bucket",
        "SIGFPE in divide | apply | eval | main",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(text.contains("1 buckets, 3 crashes"), "{text}");
    assert!(
        text.contains("3 × SIGFPE in divide | apply | eval | main"),
        "{text}"
    );
    assert!(text.contains("must in all:"), "{text}");
    assert_eq!(text.matches("/core (at ").count(), 3, "{text}");
    let (rec, _) = ok(&csi(&["crashes", "--store", db_s, "--crash", &hash]));
    assert_eq!(rec["signal"], "SIGFPE");
    assert_eq!(rec["exe"], exe.to_str().unwrap());
    assert!(
        rec["must"].as_object().is_some_and(|m| !m.is_empty()),
        "{rec:#}"
    );

    // Errors: one line, exit 2 — and a failed store open analyses nothing.
    one_line_error(
        &csi(&["crashes", "--store", db_s, "--bucket", "SIGILL in nowhere"]),
        "no bucket",
    );
    one_line_error(
        &csi(&["crashes", "--store", db_s, "--crash", "00ff"]),
        "no crash with hash 00ff",
    );
    let missing = tmp.join("none.db");
    one_line_error(
        &csi(&["crashes", "--store", missing.to_str().unwrap()]),
        "no such store",
    );
    assert!(!missing.exists());
    one_line_error(
        &csi(&["triage", "--store", "mysql://h/db", dir]),
        "unknown store URL scheme",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://csi:secret@127.0.0.1:{port}/crashes");
    let o = csi(&["triage", "--store", &url, dir]);
    one_line_error(&o, &format!("postgres://csi:***@127.0.0.1:{port}/crashes"));
    assert!(
        o.stdout.is_empty(),
        "nothing analysed when the store cannot be opened"
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("secret"));
    // Another bucketing than the store's is refused.
    let o = csi(&["triage", "--refine-frames", "2", "--store", db_s, dir]);
    one_line_error(&o, "--refine-frames 1");
    std::fs::remove_dir_all(&tmp).unwrap();
}
