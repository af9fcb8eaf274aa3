//! What the triage tests share: csi-cc, building the corpus program calc.c with it, making
//! it crash for real.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// csi-cc: `$CSI_CC`, else its own target directory's build, built there when missing (as
/// fixtures/build.sh does; needs LLVM 19, which scripts/test installs).
pub fn csi_cc() -> PathBuf {
    if let Some(p) = std::env::var_os("CSI_CC") {
        return PathBuf::from(p);
    }
    let p = root().join("crates/csi-cc/target/release/csi-cc");
    if !p.is_file() {
        let st = Command::new("cargo")
            .args(["build", "--release", "-q", "--manifest-path"])
            .arg(root().join("crates/csi-cc/Cargo.toml"))
            .env("LLVM_SYS_191_PREFIX", "/usr/lib/llvm-19")
            .env_remove("CARGO_TARGET_DIR")
            .status()
            .expect("cargo");
        assert!(st.success(), "building csi-cc failed");
    }
    p
}

pub fn build(out: &Path, extra: &[&str]) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let st = Command::new(csi_cc())
        .args(["-O0", "-g", "-fdebug-compilation-dir=.", "-o"])
        .arg(out)
        .arg("src/calc.c")
        .args(extra)
        .current_dir(root().join("bench/triage"))
        .status()
        .unwrap();
    assert!(st.success(), "csi-cc failed");
}

/// Runs `exe input` in `dir` until it crashes; returns the core it left (the kernel's, or
/// gdb's when core_pattern sends cores elsewhere).
pub fn crash(exe: &Path, input: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c unlimited; exec \"$0\" \"$1\"")
        .arg(exe)
        .arg(input)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(!st.status.success(), "{input} did not crash");
    let core = dir.join("core");
    if !core.is_file() {
        Command::new("gdb")
            .args([
                "-batch",
                "-nx",
                "-ex",
                "run",
                "-ex",
                "generate-core-file core",
                "-ex",
                "kill",
                "--args",
            ])
            .arg(exe)
            .arg(input)
            .current_dir(dir)
            .output()
            .expect("gdb (for a core when the kernel writes none)");
    }
    assert!(core.is_file(), "no core for {input} in {}", dir.display());
    core
}
