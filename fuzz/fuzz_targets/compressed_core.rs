//! Compressed cores on arbitrary bytes behind each magic number: detection, streaming
//! decompression into the sparse temporary file, and the core reader on what comes out must
//! never panic. Seed corpus: fixture cores compressed with `zstd`, `lz4`, `xz`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("csi-fuzz-compressed-{}", std::process::id()));
    for magic in [
        &b"\x28\xb5\x2f\xfd"[..],
        b"\x04\x22\x4d\x18",
        b"\xfd7zXZ\0",
        b"",
    ] {
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(data);
        if std::fs::write(&path, &bytes).is_ok() {
            let _ = csi_dump::core::CoreFile::open(&path);
        }
    }
    let _ = std::fs::remove_file(&path);
});
