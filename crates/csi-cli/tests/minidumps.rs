//! Minidumps written by a real writer (`minidump-writer`, the Rust rewrite of Breakpad's) of a
//! crashing csi-cc program: the program runs under ptrace until its fatal signal, is left
//! stopped at the faulting instruction, and the writer dumps it as a crash handler would.
//! `csi` reads threads, stacks and each frame's csi-cc state from it; global coverage only
//! when the coverage arrays' range was registered with the writer (app memory).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir()
        .join(format!("csi-minidumps-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `exe` until its fatal signal and writes a minidump of it to `out`; with
/// `register_data`, the executable's writable segment (csi-cc's coverage arrays) is given to
/// the writer as app memory, as a program registering it would. Returns the signal.
fn crash_and_write_minidump(exe: &Path, out: &Path, register_data: bool) -> i32 {
    let cwd = scratch("cwd");
    // SAFETY: only async-signal-safe calls between fork and exec.
    let child = unsafe {
        Command::new(exe)
            .current_dir(&cwd)
            .env_clear()
            .pre_exec(|| {
                let no_core = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &no_core);
                if libc::ptrace(
                    libc::PTRACE_TRACEME,
                    0,
                    std::ptr::null_mut::<libc::c_void>(),
                    std::ptr::null_mut::<libc::c_void>(),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
            .spawn()
            .expect("spawn the fixture")
    };
    let pid = child.id() as libc::pid_t;
    let wait = || {
        let mut status = 0;
        // SAFETY: plain syscall on our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        assert_eq!(r, pid, "waitpid");
        status
    };
    let cont = |sig: i32| {
        // SAFETY: plain syscall on our traced child.
        unsafe {
            libc::ptrace(
                libc::PTRACE_CONT,
                pid,
                std::ptr::null_mut::<libc::c_void>(),
                sig as usize as *mut libc::c_void,
            )
        };
    };
    // The stop at exec, then run to the fatal signal.
    let mut status = wait();
    let signal = loop {
        assert!(
            libc::WIFSTOPPED(status),
            "the fixture exited instead of crashing"
        );
        let sig = libc::WSTOPSIG(status);
        if matches!(
            sig,
            libc::SIGSEGV | libc::SIGABRT | libc::SIGBUS | libc::SIGFPE
        ) {
            break sig;
        }
        cont(if sig == libc::SIGTRAP { 0 } else { sig });
        status = wait();
    };
    // Leave it stopped at the faulting instruction (the signal not delivered), untraced, so
    // the writer can attach.
    // SAFETY: plain syscalls on our child.
    unsafe {
        libc::ptrace(
            libc::PTRACE_DETACH,
            pid,
            std::ptr::null_mut::<libc::c_void>(),
            libc::SIGSTOP as usize as *mut libc::c_void,
        );
    }
    let mut writer = minidump_writer::minidump_writer::MinidumpWriterConfig::new(pid, pid);
    if register_data {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let exe_name = exe.file_name().unwrap().to_str().unwrap();
        let blocks: Vec<minidump_writer::app_memory::AppMemory> = maps
            .lines()
            .filter(|l| l.ends_with(exe_name) && l.split_whitespace().nth(1) == Some("rw-p"))
            .map(|l| {
                let (a, b) = l
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .split_once('-')
                    .unwrap();
                let (a, b) = (
                    usize::from_str_radix(a, 16).unwrap(),
                    usize::from_str_radix(b, 16).unwrap(),
                );
                minidump_writer::app_memory::AppMemory {
                    ptr: a,
                    length: b - a,
                }
            })
            .collect();
        assert!(!blocks.is_empty(), "no writable mapping of {exe_name}");
        writer.set_app_memory(blocks);
    }
    let mut f = std::fs::File::create(out).unwrap();
    writer.write(&mut f).expect("minidump-writer");
    // SAFETY: plain syscall on our child; then reap it.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut child = child;
    child.wait().ok();
    signal
}

fn analyze(exe: &Path, dump: &Path, flag: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi"))
        .args([
            "analyze",
            "--exe",
            exe.to_str().unwrap(),
            flag,
            dump.to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap()
}

fn json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "csi failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Line claims: "must FILE:LINE" / "never FILE:LINE".
fn claims(lines: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (file, l) in lines.as_object().unwrap() {
        for k in ["must", "never"] {
            for x in l[k].as_array().unwrap() {
                out.push(format!("{k} {file}:{x}"));
            }
        }
    }
    out.sort();
    out
}

/// Each program frame of the crashing thread: function, line, decoded path.
fn program_frames(v: &Value) -> Vec<(Value, Value, Value)> {
    v["threads"][0]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["report_frame"].is_null())
        .map(|f| (f["function"].clone(), f["line"].clone(), f["path"].clone()))
        .collect()
}

#[test]
fn minidump_of_a_crashing_csi_cc_program() {
    let program = "null_deref";
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    let exe = src.join(program);
    let core = json(&analyze(&exe, &src.join("core"), "--core"));
    let d = scratch("dumps");

    // Stacks only (what a crash reporter sends by default).
    let plain = d.join("plain.dmp");
    let sig = crash_and_write_minidump(&exe, &plain, false);
    assert_eq!(sig, libc::SIGSEGV);
    let o = analyze(&exe, &plain, "--minidump");
    let v = json(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("minidump: only the memory"), "{err}");
    assert!(err.contains("coverage arrays could not be read"), "{err}");
    // The same stack, lines and per-frame path traces as the core of the same crash.
    assert_eq!(program_frames(&v), program_frames(&core));
    assert!(!program_frames(&v).is_empty());
    assert_eq!(
        v["frames"], core["frames"],
        "per-frame answers from the stacks"
    );
    // Globally a sound weakening of the core's answer.
    let core_claims = claims(&core["lines"]);
    for c in claims(&v["lines"]) {
        assert!(core_claims.contains(&c), "{c} is not claimed by the core");
    }

    // With the coverage arrays registered: the core's global answer.
    let full = d.join("registered.dmp");
    crash_and_write_minidump(&exe, &full, true);
    let v = json(&analyze(&exe, &full, "--core"));
    assert_eq!(v["lines"], core["lines"]);
    assert_eq!(v["global"], core["global"]);
    assert_eq!(v["frames"], core["frames"]);

    // A minidump of another program: one clear line.
    let other = root().join("fixtures/crashes/multifile/realistic-O0/multifile");
    let o = analyze(&other, &plain, "--minidump");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("was not produced by"), "{err}");
}
