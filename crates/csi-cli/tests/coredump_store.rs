//! `--coredump latest|PID|NAME`: cores from systemd-coredump's store, named and tagged as
//! systemd-coredump writes them (`core.<comm>.<uid>.<boot id>.<pid>.<µs>.zst` with the
//! `user.coredump.*` extended attributes), give the plain core's answer, with what systemd
//! recorded (pid, signal, time) as the first notice; and, with no core in the store, the core
//! `coredumpctl` lists and dumps.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BOOT: &str = "0123456789abcdef0123456789abcdef";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn csi(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_csi"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("csi-coredump-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fixture() -> (PathBuf, PathBuf) {
    let dir = root().join("fixtures/crashes/null_deref/realistic-O0");
    (dir.join("null_deref"), dir.join("core"))
}

fn zstd(input: &Path, output: &Path) {
    let st = Command::new("zstd")
        .args(["-q", "-c"])
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(output).unwrap())
        .status()
        .expect("zstd is installed (scripts/test)");
    assert!(st.success());
}

/// The JSON answer of `csi analyze ARGS --format json` (must succeed), without the fields that
/// name the core file, and its notices.
fn answer(args: &[&str], env: &[(&str, &str)]) -> (Value, Vec<String>) {
    let mut a = vec!["analyze"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--format", "json"]);
    let o = csi(&a, env);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let notices: Vec<String> = v["notices"]
        .as_array()
        .unwrap_or_else(|| {
            panic!(
                "no notices in {}",
                &v.to_string()[..300.min(v.to_string().len())]
            )
        })
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect();
    let obj = v.as_object_mut().unwrap();
    for k in ["core", "report", "notices"] {
        obj.remove(k);
    }
    (v, notices)
}

#[test]
fn cores_of_the_systemd_store_answer_like_the_plain_core() {
    let (exe, core) = fixture();
    let store = scratch("store");
    // The crash, as systemd-coredump stores it: zstd, metadata in extended attributes.
    let newest = store.join(format!(
        "core.null_deref.1000.{BOOT}.4242.1763967301000000.zst"
    ));
    zstd(&core, &newest);
    for (k, v) in [
        ("user.coredump.exe", exe.to_str().unwrap()),
        ("user.coredump.signal", "11"),
        ("user.coredump.pid", "4242"),
        ("user.coredump.comm", "null_deref"),
        ("user.coredump.timestamp", "1763967301000000"),
    ] {
        xattr::set(&newest, k, v.as_bytes())
            .expect("user extended attributes on the scratch file system");
    }
    // An older core of another process, without attributes (plain, the executable beside it).
    let older_dir = scratch("older");
    let older = store.join(format!("core.other\\x2eprog.0.{BOOT}.17.1763960000000000"));
    std::fs::copy(&core, &older).unwrap();
    std::fs::write(store.join("not-a-core.txt"), "x").unwrap();
    let _ = older_dir;

    let (want, _) = answer(
        &[
            "--exe",
            exe.to_str().unwrap(),
            "--core",
            core.to_str().unwrap(),
        ],
        &[],
    );
    let dir = store.to_str().unwrap();
    for sel in ["latest", "4242", "null_deref"] {
        let (got, notices) = answer(&["--coredump", sel, "--coredump-dir", dir], &[]);
        assert_eq!(got, want, "--coredump {sel}");
        assert_eq!(
            notices[0],
            format!(
                "systemd-coredump (store): pid 4242 (null_deref), SIGSEGV, 2025-11-24 06:55:01 UTC; {}",
                newest.display()
            )
        );
    }
    // The older core by its pid: the executable systemd did not record is given.
    let (got, notices) = answer(
        &[
            "--coredump",
            "17",
            "--coredump-dir",
            dir,
            "--exe",
            exe.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(got, want);
    assert!(
        notices[0]
            .starts_with("systemd-coredump (store): pid 17 (other.prog), 2025-11-24 04:53:20 UTC"),
        "{}",
        notices[0]
    );

    // Nothing matches: one line, exit 2 (coredumpctl is not installed here, or is not asked).
    let o = csi(
        &["analyze", "--coredump", "99999", "--coredump-dir", dir],
        &[("CSI_COREDUMPCTL", "/nonexistent/coredumpctl")],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no systemd-coredump core matches `99999` (2 cores in the store; coredumpctl is not installed)"), "{err}");
    let o = csi(
        &[
            "analyze",
            "--coredump",
            "latest",
            "--coredump-dir",
            "/nonexistent/store",
        ],
        &[("CSI_COREDUMPCTL", "/nonexistent/coredumpctl")],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// With no core in the store (cores kept in the journal), `coredumpctl` is asked: its
/// `--json=short list` (the fields systemd 252 prints) and `dump PID --output FILE`. A
/// stand-in with that interface plays systemd here (no systemd runs in this container).
#[test]
fn without_a_stored_core_coredumpctl_lists_and_dumps_it() {
    let (exe, core) = fixture();
    let d = scratch("ctl");
    let tool = d.join("coredumpctl");
    std::fs::write(
        &tool,
        format!(
            r#"#!/bin/sh
# coredumpctl's interface: --no-pager first, then the verb.
shift
case "$1" in
  --version) echo "systemd 252 (252.39-1~deb12u1)"; exit 0 ;;
  --json=short) echo '[{{"time":1763967301000000,"pid":4242,"uid":1000,"gid":1000,"sig":11,"corefile":"present","exe":"{exe}","size":{size}}}]' ;;
  dump) [ "$2" = 4242 ] && [ "$3" = --output ] && cp "{core}" "$4" ;;
  *) exit 1 ;;
esac
"#,
            exe = exe.display(),
            core = core.display(),
            size = std::fs::metadata(&core).unwrap().len(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let empty = scratch("empty-store");
    let env = [("CSI_COREDUMPCTL", tool.to_str().unwrap())];
    let (want, _) = answer(
        &[
            "--exe",
            exe.to_str().unwrap(),
            "--core",
            core.to_str().unwrap(),
        ],
        &[],
    );
    let (got, notices) = answer(
        &[
            "--coredump",
            "latest",
            "--coredump-dir",
            empty.to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(got, want);
    assert!(notices[0].starts_with("systemd-coredump (coredumpctl): pid 4242 (null_deref), SIGSEGV, 2025-11-24 06:55:01 UTC"), "{}", notices[0]);
}
