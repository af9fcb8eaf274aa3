//! The minidump reader on arbitrary bytes after the `MDMP` magic, with a real fixture
//! executable: parsing, the synthetic core, the match check and extraction must never panic.
//! Seed corpus: minidumps written by `crates/csi-cli/tests/minidumps.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

static EXE: &[u8] = include_bytes!("../../fixtures/crashes/null_deref/realistic-O0/null_deref");

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("csi-fuzz-minidump-{}", std::process::id()));
    let exe = dir.join(format!("csi-fuzz-minidump-exe-{}", std::process::id()));
    let mut bytes = b"MDMP".to_vec();
    bytes.extend_from_slice(data);
    if std::fs::write(&path, &bytes).is_ok() && (exe.exists() || std::fs::write(&exe, EXE).is_ok())
    {
        let _ = csi_dump::Crash::open(&exe, &path, &Default::default());
    }
    let _ = std::fs::remove_file(&path);
});
