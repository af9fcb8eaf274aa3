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
                // Its own process group: waiting on it never reaps another test's children.
                libc::setpgid(0, 0);
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
    // The next stop of any thread of the program (its process group): (tid, status).
    let wait_any = || {
        let mut status = 0;
        // SAFETY: plain syscall on our children.
        let tid = unsafe { libc::waitpid(-pid, &mut status, libc::__WALL) };
        assert!(tid > 0, "waitpid");
        (tid, status)
    };
    let ptrace = |req: libc::c_uint, tid: libc::pid_t, data: usize| {
        // SAFETY: plain syscall on our traced child.
        unsafe {
            libc::ptrace(
                req,
                tid,
                std::ptr::null_mut::<libc::c_void>(),
                data as *mut libc::c_void,
            )
        }
    };
    // The stop at exec; then follow every thread the program creates.
    let (_, status) = wait_any();
    assert!(libc::WIFSTOPPED(status), "no stop at exec");
    ptrace(
        libc::PTRACE_SETOPTIONS,
        pid,
        libc::PTRACE_O_TRACECLONE as usize,
    );
    ptrace(libc::PTRACE_CONT, pid, 0);
    let mut threads: Vec<libc::pid_t> = vec![pid];
    let (crashed, signal) = loop {
        let (tid, status) = wait_any();
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            assert_ne!(tid, pid, "the fixture exited instead of crashing");
            threads.retain(|&t| t != tid);
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        if status >> 8 == (libc::SIGTRAP | (libc::PTRACE_EVENT_CLONE << 8)) {
            let mut new_tid: libc::c_ulong = 0;
            // SAFETY: plain syscall; writes the new thread's id.
            unsafe {
                libc::ptrace(
                    libc::PTRACE_GETEVENTMSG,
                    tid,
                    std::ptr::null_mut::<libc::c_void>(),
                    &mut new_tid as *mut libc::c_ulong as *mut libc::c_void,
                )
            };
            threads.push(new_tid as libc::pid_t);
            ptrace(libc::PTRACE_CONT, tid, 0);
            continue;
        }
        if matches!(
            sig,
            libc::SIGSEGV | libc::SIGABRT | libc::SIGBUS | libc::SIGFPE
        ) {
            break (tid, sig);
        }
        // A new thread's first stop (SIGSTOP) and traps are not the program's signals.
        let deliver = if matches!(sig, libc::SIGTRAP | libc::SIGSTOP) {
            0
        } else {
            sig
        };
        ptrace(libc::PTRACE_CONT, tid, deliver as usize);
    };
    // Stop the other threads where they are, then leave them all stopped (the crashing one at
    // its faulting instruction, the signal not delivered), untraced, so the writer can attach.
    for &t in threads.iter().filter(|&&t| t != crashed) {
        // SAFETY: plain syscall on our child's thread.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, t, libc::SIGSTOP) };
        loop {
            let mut status = 0;
            // SAFETY: plain syscall on our traced thread.
            let r = unsafe { libc::waitpid(t, &mut status, libc::__WALL) };
            if r == t && libc::WIFSTOPPED(status) && libc::WSTOPSIG(status) == libc::SIGSTOP {
                break;
            }
            if r == t && libc::WIFSTOPPED(status) {
                ptrace(libc::PTRACE_CONT, t, 0);
                continue;
            }
            break;
        }
        ptrace(libc::PTRACE_DETACH, t, libc::SIGSTOP as usize);
    }
    ptrace(libc::PTRACE_DETACH, crashed, libc::SIGSTOP as usize);
    let mut writer = minidump_writer::minidump_writer::MinidumpWriterConfig::new(pid, crashed);
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

/// The program frames of every thread, crashing thread first: function names.
fn thread_functions(v: &Value) -> Vec<Vec<String>> {
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| !f["report_frame"].is_null())
                .map(|f| f["function"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .collect()
}

/// A crash in the second of three threads (`thread_crash`): the writer dumps every thread
/// (followed here through PTRACE_O_TRACECLONE, all stopped before it attaches); csi reads all
/// three — the crashed worker first — with the same program frames as the core of the same
/// program's crash, and the same answer for the crashing frame.
#[test]
fn minidump_of_a_multithreaded_crash() {
    let program = "thread_crash";
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    let exe = src.join(program);
    let core = json(&analyze(&exe, &src.join("core"), "--core"));
    let dump = scratch("threads").join("threads.dmp");
    assert_eq!(crash_and_write_minidump(&exe, &dump, true), libc::SIGSEGV);
    let v = json(&analyze(&exe, &dump, "--minidump"));
    let mut ours = thread_functions(&v);
    let mut theirs = thread_functions(&core);
    assert_eq!(ours.len(), 3, "{ours:?}");
    assert_eq!(ours[0], theirs[0], "the crashed thread first, same frames");
    assert_eq!(ours[0][..2], ["compute", "worker"]);
    // The two waiting threads (main in pthread_join, the parker in pthread_cond_wait), in
    // whatever order the writer lists them.
    ours[1..].sort();
    theirs[1..].sort();
    assert_eq!(ours, theirs);
    // The per-frame answer of the crashing frame equals the core's. (Not the worker's: how
    // often it spins before the parker waits differs from run to run.)
    let crashed = |x: &Value| -> Vec<Value> {
        x["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["thread"] == 0 && f["function"] == "compute")
            .cloned()
            .collect()
    };
    assert_eq!(crashed(&v).len(), 1);
    assert_eq!(crashed(&v), crashed(&core));
}
