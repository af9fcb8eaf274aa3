//! Stripped binaries with their debug info elsewhere, as distributions and release pipelines
//! ship them: `objcopy --only-keep-debug` + `strip --strip-debug --strip-unneeded` of real
//! fixture programs, found through a build-id tree (`--debug-dir`), `.gnu_debuglink`, and a
//! real `debuginfod` server (Debian package `debuginfod`, installed by `scripts/test`) started
//! here on a loopback port. The answers equal the unstripped run's. A debug file of another
//! build, and a server that answers 404, garbage or nothing, are refused with a clear reason.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir()
        .join(format!("csi-debug-files-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(tool: &str, args: &[&str]) {
    let o = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e} (binutils)"));
    assert!(
        o.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn csi(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_csi"));
    c.args(args).env_remove("DEBUGINFOD_URLS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn build_id(file: &Path) -> String {
    let bytes = std::fs::read(file).unwrap();
    // The GNU build-id note: namesz 4, descsz 20, type 3, "GNU\0", then 20 bytes.
    let pat = [4u8, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, b'G', b'N', b'U', 0];
    let at = bytes
        .windows(pat.len())
        .position(|w| w == pat)
        .expect("a build id")
        + pat.len();
    bytes[at..at + 20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fixture program and its libraries copied to `dir`, each split into a stripped binary
/// and `<name>.debug`.
struct Stripped {
    exe: PathBuf,
    core: PathBuf,
    /// (stripped file, its debug file)
    parts: Vec<(PathBuf, PathBuf)>,
}

fn strip_fixture(program: &str, dir: &Path) -> Stripped {
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    std::fs::create_dir_all(dir).unwrap();
    let mut parts = Vec::new();
    for name in std::iter::once(program.to_string()).chain(
        std::fs::read_dir(&src)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".so")),
    ) {
        let full = src.join(&name);
        let out = dir.join(&name);
        let debug = dir.join(format!("{name}.debug"));
        run(
            "objcopy",
            &[
                "--only-keep-debug",
                full.to_str().unwrap(),
                debug.to_str().unwrap(),
            ],
        );
        run(
            "strip",
            &[
                "--strip-debug",
                "--strip-unneeded",
                full.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
        );
        parts.push((out, debug));
    }
    Stripped {
        exe: dir.join(program),
        core: src.join("core"),
        parts,
    }
}

/// The answer without what names files.
fn normalized(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "csi failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let obj = v.as_object_mut().unwrap();
    for k in [
        "executable",
        "core",
        "report",
        "graph",
        "modules",
        "notices",
    ] {
        obj.remove(k);
    }
    for t in obj["threads"].as_array_mut().unwrap() {
        for f in t["frames"].as_array_mut().unwrap() {
            f.as_object_mut().unwrap().remove("module");
        }
    }
    v
}

fn analyze(exe: &Path, core: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec![
        "analyze",
        "--exe",
        exe.to_str().unwrap(),
        "--core",
        core.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend(extra);
    csi(&args, env)
}

fn unstripped(program: &str) -> Value {
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    normalized(&analyze(&src.join(program), &src.join("core"), &[], &[]))
}

/// Each module's debug source kind from the JSON `modules`.
fn debug_kinds(o: &Output) -> Vec<(String, String)> {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["debug"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn kind_of(o: &Output, suffix: &str) -> String {
    debug_kinds(o)
        .into_iter()
        .find(|(n, _)| n.ends_with(suffix))
        .unwrap_or_else(|| panic!("no module {suffix}"))
        .1
}

#[test]
fn stripped_program_and_library_through_a_build_id_tree() {
    for program in ["null_deref", "shlib_crash"] {
        let d = scratch(&format!("bid-{program}"));
        let s = strip_fixture(program, &d);
        // Stripped, without help: nothing to analyse, and the error says what to do. (The
        // library of shlib_crash is still found unstripped where the core recorded it; the
        // sysroot test strips it.)
        if program == "null_deref" {
            let o = analyze(&s.exe, &s.core, &[], &[]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(
                err.contains("--debug-dir") && err.lines().count() == 1,
                "{err}"
            );
        }
        // The build-id tree.
        let tree = d.join("debug");
        for (bin, debug) in &s.parts {
            let id = build_id(bin);
            let at = tree.join(".build-id").join(&id[..2]);
            std::fs::create_dir_all(&at).unwrap();
            std::fs::copy(debug, at.join(format!("{}.debug", &id[2..]))).unwrap();
        }
        let o = analyze(
            &s.exe,
            &s.core,
            &["--debug-dir", tree.to_str().unwrap()],
            &[],
        );
        assert_eq!(normalized(&o), unstripped(program), "{program}");
        assert_eq!(kind_of(&o, program), "build-id");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("stripped; debug info from the build-id tree"),
            "{err}"
        );
    }
}

#[test]
fn gnu_debuglink_beside_the_binary_and_in_dot_debug() {
    let program = "null_deref";
    let want = unstripped(program);
    for place in ["beside", ".debug"] {
        let d = scratch(&format!("link-{}", place.trim_start_matches('.')));
        let s = strip_fixture(program, &d);
        let (bin, debug) = &s.parts[0];
        run(
            "objcopy",
            &[
                &format!("--add-gnu-debuglink={}", debug.display()),
                bin.to_str().unwrap(),
            ],
        );
        if place == ".debug" {
            std::fs::create_dir_all(d.join(".debug")).unwrap();
            std::fs::rename(debug, d.join(".debug").join(debug.file_name().unwrap())).unwrap();
        }
        let o = analyze(&s.exe, &s.core, &[], &[]);
        assert_eq!(normalized(&o), want, "{place}");
        assert_eq!(kind_of(&o, program), "debug-link");
    }
}

#[test]
fn a_debug_file_of_another_build_is_refused() {
    // null_deref's stripped binary, with multifile's debug file where its build id and its
    // debuglink point.
    let d = scratch("other-build");
    let s = strip_fixture("null_deref", &d);
    let other = scratch("other-build-src");
    let o = strip_fixture("multifile", &other);
    let id = build_id(&s.exe);
    let at = d.join("tree/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::copy(&o.parts[0].1, at.join(format!("{}.debug", &id[2..]))).unwrap();
    let out = analyze(
        &s.exe,
        &s.core,
        &["--debug-dir", d.join("tree").to_str().unwrap()],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("belongs to another build"), "{err}");
}

/// A `debuginfod` serving a directory of unstripped binaries, on a free loopback port.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_debuginfod(dir: &Path, db: &Path, build_id: &str) -> Server {
    let port = free_port();
    let child = Command::new("debuginfod")
        .args(["-F", dir.to_str().unwrap(), "-p", &port.to_string(), "-d"])
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("debuginfod not installed (Debian package debuginfod; scripts/test installs it)");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    // Ready when the scan has indexed our file.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            // (debuginfod answers HEAD with 400.)
            let req = format!(
                "GET /buildid/{build_id}/debuginfo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            );
            let mut status = [0u8; 12];
            if s.write_all(req.as_bytes()).is_ok()
                && s.read_exact(&mut status).is_ok()
                && &status == b"HTTP/1.1 200"
            {
                return server;
            }
        }
        assert!(
            Instant::now() < deadline,
            "debuginfod did not index {dir:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn stripped_program_through_a_real_debuginfod_server_and_its_cache() {
    let program = "null_deref";
    let d = scratch("debuginfod");
    let s = strip_fixture(program, &d.join("stripped"));
    let served = d.join("served");
    std::fs::create_dir_all(&served).unwrap();
    let full = root().join(format!("fixtures/crashes/{program}/realistic-O0/{program}"));
    std::fs::copy(&full, served.join(program)).unwrap();
    let id = build_id(&s.exe);
    let server = start_debuginfod(&served, &d.join("db.sqlite"), &id);
    let cache = d.join("cache");
    let url = server.url.clone();
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
    ];
    let o = analyze(&s.exe, &s.core, &[], &env);
    assert_eq!(normalized(&o), unstripped(program));
    assert_eq!(kind_of(&o, program), "debuginfod");
    let cached = cache.join("csi/debuginfod").join(&id).join("debuginfo");
    assert!(cached.is_file(), "not cached at {cached:?}");
    // Offline: the cache answers.
    drop(server);
    let o = analyze(&s.exe, &s.core, &[], &env);
    assert_eq!(normalized(&o), unstripped(program));
}

/// A fake server: answers every request with `reply` (or, with `None`, never answers).
fn fake_server(reply: Option<Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            let mut s = s;
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            match &reply {
                Some(r) => {
                    let _ = s.write_all(r);
                }
                None => held.push(s), // keep it open, say nothing
            }
        }
    });
    url
}

#[test]
fn debuginfod_404_garbage_and_timeout_are_clear_lines() {
    let d = scratch("fake");
    let s = strip_fixture("null_deref", &d);
    let not_found = fake_server(Some(
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"
            .to_vec(),
    ));
    let garbage = fake_server(Some(
        b"HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: close\r\n\r\nthis is not ELF!"
            .to_vec(),
    ));
    let silent = fake_server(None);
    for (url, why) in [
        (&not_found, "(404)"),
        (&garbage, "is not an ELF file"),
        (&silent, "unreachable"),
    ] {
        let cache = d.join(format!("cache-{}", why.len()));
        let t = Instant::now();
        let o = analyze(
            &s.exe,
            &s.core,
            &[],
            &[
                ("DEBUGINFOD_URLS", url.as_str()),
                ("DEBUGINFOD_TIMEOUT", "2"),
                ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(url.as_str()) && err.contains(why),
            "{why}: {err}"
        );
        assert!(!err.contains("panicked"));
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{why}: took {:?}",
            t.elapsed()
        );
        // Nothing bad was cached.
        assert!(
            !cache.join("csi/debuginfod").exists()
                || walk_files(&cache).iter().all(|p| !p.ends_with("debuginfo")),
            "{why}: cached a bad answer"
        );
    }
}

fn walk_files(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(x) = stack.pop() {
        for e in std::fs::read_dir(&x).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// The path the core records for a library (`modules[].name` ending in `suffix`).
fn recorded_path(program: &str, suffix: &str) -> String {
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    let o = analyze(&src.join(program), &src.join("core"), &[], &[]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .find(|n| n.ends_with(suffix))
        .unwrap()
}

fn module_file(o: &Output, suffix: &str) -> String {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"].as_str().unwrap().ends_with(suffix))
        .and_then(|m| m["file"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// shlib_crash opened with its library from a sysroot (a copy of the crashed machine's
/// files): a stripped `libwalk.so` at the path the core records, its debug file in a
/// build-id tree. The answers equal the unstripped run's, and the library is the sysroot's.
#[test]
fn library_from_a_sysroot_stripped_with_its_debug_file() {
    let program = "shlib_crash";
    let d = scratch("sysroot");
    let s = strip_fixture(program, &d.join("split"));
    let recorded = recorded_path(program, "libwalk.so");
    let sysroot = d.join("root");
    let at = sysroot.join(recorded.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let (lib, lib_debug) = s
        .parts
        .iter()
        .find(|(b, _)| b.ends_with("libwalk.so"))
        .unwrap();
    std::fs::copy(lib, &at).unwrap();
    let tree = d.join("debug");
    let id = build_id(lib);
    let t = tree.join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&t).unwrap();
    std::fs::copy(lib_debug, t.join(format!("{}.debug", &id[2..]))).unwrap();
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    let o = analyze(
        &src.join(program),
        &s.core,
        &[
            "--sysroot",
            sysroot.to_str().unwrap(),
            "--debug-dir",
            tree.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(normalized(&o), unstripped(program));
    assert_eq!(module_file(&o, "libwalk.so"), at.display().to_string());
    assert_eq!(kind_of(&o, "libwalk.so"), "build-id");
}

/// A sysroot library of another build (its build id changed) is not used, with a notice
/// naming both build ids; the matching copy beside the executable is.
#[test]
fn a_sysroot_library_of_another_build_gets_a_notice() {
    let program = "shlib_crash";
    let d = scratch("sysroot-mismatch");
    let src = root().join(format!("fixtures/crashes/{program}/realistic-O0"));
    let mut bytes = std::fs::read(src.join("libwalk.so")).unwrap();
    let id = build_id(&src.join("libwalk.so"));
    let pat = [4u8, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, b'G', b'N', b'U', 0];
    let at = bytes.windows(16).position(|w| w == pat).unwrap() + 16;
    bytes[at] ^= 0xff; // another build
    let sysroot = d.join("flat");
    std::fs::create_dir_all(&sysroot).unwrap();
    std::fs::write(sysroot.join("libwalk.so"), &bytes).unwrap();
    let o = analyze(
        &src.join(program),
        &src.join("core"),
        &["--sysroot", sysroot.to_str().unwrap()],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sysroot:")
            && err.contains("is not the")
            && err.contains(&id)
            && err.contains("libwalk.so"),
        "{err}"
    );
    assert_eq!(normalized(&o), unstripped(program));
    assert!(!module_file(&o, "libwalk.so").starts_with(sysroot.to_str().unwrap()));
}
