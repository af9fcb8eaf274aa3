//! Compressed cores (systemd-coredump's `.zst`, older `.lz4` / `.xz`, apport's `CoreDump.zst`)
//! give exactly the plain core's answer; the format is told by magic bytes, not the name. The
//! cores are compressed here by the real `zstd`, `lz4` and `xz` tools (Debian packages
//! `zstd`, `lz4`, `xz-utils`, installed by `scripts/test`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn csi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_csi"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("csi-compressed-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tool ARGS… < input > output`.
fn compress(tool: &str, args: &[&str], input: &Path, output: &Path) {
    let o = Command::new(tool)
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(output).unwrap())
        .status()
        .unwrap_or_else(|e| panic!("{tool} not installed ({e}); scripts/test installs it"));
    assert!(o.success(), "{tool} failed");
}

/// The JSON answer without the fields that name the core file.
fn answer(exe: &str, core: &Path) -> Value {
    let o = csi(&[
        "analyze",
        "--exe",
        exe,
        "--core",
        core.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        o.status.success(),
        "{}: {}",
        core.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let obj = v.as_object_mut().unwrap();
    obj.remove("core");
    obj.remove("report");
    v
}

const FIXTURES: [(&str, &str); 3] = [
    ("null_deref", "null_deref"),
    ("shlib_crash", "shlib_crash"),
    ("thread_crash", "thread_crash"),
];

#[test]
fn zstd_lz4_and_xz_cores_answer_like_the_plain_core() {
    let d = scratch();
    for (dir, exe) in FIXTURES {
        let base = format!("fixtures/crashes/{dir}/realistic-O0");
        let exe = format!("{base}/{exe}");
        let plain = root().join(&base).join("core");
        let want = answer(&exe, &plain);
        for (tool, args, name) in [
            ("zstd", &["-q", "-c"][..], "core.zst"),
            ("lz4", &["-q", "-c"][..], "core.lz4"),
            ("xz", &["-q", "-c"][..], "core.xz"),
            // apport's name, and a name that says nothing: the magic bytes decide.
            ("zstd", &["-q", "-19", "-c"][..], "CoreDump"),
            ("lz4", &["-q", "-c"][..], "core.bin"),
        ] {
            let out = d.join(format!("{dir}-{name}"));
            compress(tool, args, &plain, &out);
            let got = answer(&exe, &out);
            assert!(
                got == want,
                "{dir} through {tool} ({name}) differs from the plain core"
            );
        }
    }
}

#[test]
fn a_compressed_file_that_is_not_a_core_is_one_clear_line() {
    let d = scratch();
    let exe = "fixtures/crashes/null_deref/realistic-O0/null_deref";
    let text = d.join("text");
    std::fs::write(&text, "hello, not a core\n".repeat(100)).unwrap();
    let plain_core = root().join("fixtures/crashes/null_deref/realistic-O0/core");
    let whole = d.join("whole.zst");
    compress("zstd", &["-q", "-c"], &plain_core, &whole);
    let bytes = std::fs::read(&whole).unwrap();
    // Cut inside the frame header: nothing decodes.
    let cut = d.join("cut.zst");
    std::fs::write(&cut, &bytes[..6]).unwrap();
    let garbage = d.join("garbage.xz");
    let mut g = b"\xfd7zXZ\0".to_vec();
    g.extend((0..4096u32).map(|k| (k.wrapping_mul(2654435761) >> 13) as u8));
    std::fs::write(&garbage, &g).unwrap();
    let mut cases = Vec::new();
    for (tool, name) in [("zstd", "text.zst"), ("lz4", "text.lz4"), ("xz", "text.xz")] {
        let out = d.join(name);
        compress(tool, &["-q", "-c"], &text, &out);
        cases.push((out, "is not an ELF core dump"));
    }
    cases.push((cut, "cannot be decoded"));
    cases.push((garbage, "cannot be decoded"));
    for (core, why) in cases {
        let o = csi(&["analyze", "--exe", exe, "--core", core.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", core.display());
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains(core.file_name().unwrap().to_str().unwrap())
                && lines[0].contains(why),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The decompressed core lands in a sparse file: its zero pages take no disk.
#[test]
fn decompressed_cores_are_sparse() {
    use std::os::unix::fs::MetadataExt;
    let d = scratch();
    // A core-like file: an ELF header, 64 MiB of zeros, a tail.
    let mut data = b"\x7fELF".to_vec();
    data.resize(64 << 20, 0);
    data.extend(b"tail");
    let plain = d.join("zeros");
    std::fs::write(&plain, &data).unwrap();
    let z = d.join("zeros.zst");
    compress("zstd", &["-q", "-c"], &plain, &z);
    let f = csi_dump::compressed::decompress_to_temp(&z, csi_dump::compressed::Compression::Zstd)
        .unwrap();
    let m = f.metadata().unwrap();
    assert_eq!(m.len(), data.len() as u64);
    assert!(
        m.blocks() * 512 < 1 << 20,
        "{} bytes allocated for 64 MiB of zeros",
        m.blocks() * 512
    );
}

/// A compressed core whose stream ends early (an upload or copy cut short) is read as the
/// truncated core it decodes to: a notice says so, and its answer claims nothing the whole
/// core does not.
#[test]
fn a_cut_compressed_core_reads_as_a_truncated_core() {
    let d = scratch();
    let exe = "fixtures/crashes/null_deref/realistic-O0/null_deref";
    let plain = root().join("fixtures/crashes/null_deref/realistic-O0/core");
    let whole = answer(exe, &plain);
    let claims = |v: &Value| -> Vec<String> {
        let mut out = Vec::new();
        for (file, l) in v["lines"].as_object().unwrap() {
            for k in ["must", "never"] {
                for x in l[k].as_array().unwrap() {
                    out.push(format!("{k} {file}:{x}"));
                }
            }
        }
        out
    };
    let whole_claims = claims(&whole);
    // lz4 with 64 KiB blocks (its default 4 MiB block would hold the whole core).
    for (tool, args, name) in [
        ("zstd", &["-q", "-c"][..], "ends-early.zst"),
        ("xz", &["-q", "-c"][..], "ends-early.xz"),
        ("lz4", &["-q", "-B4", "-c"][..], "ends-early.lz4"),
    ] {
        let full = d.join(format!("full-{name}"));
        compress(tool, args, &plain, &full);
        let bytes = std::fs::read(&full).unwrap();
        let cut = d.join(name);
        std::fs::write(&cut, &bytes[..bytes.len() * 7 / 10]).unwrap();
        let o = csi(&[
            "analyze",
            "--exe",
            exe,
            "--core",
            cut.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {err}");
        assert!(
            err.contains("stream ends early") && err.contains("truncated"),
            "{err}"
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        for c in claims(&v) {
            assert!(
                whole_claims.contains(&c),
                "{name}: {c} is not claimed by the whole core"
            );
        }
    }
}
