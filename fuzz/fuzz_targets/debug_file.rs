//! Matching a candidate debug file (build-id tree, .gnu_debuglink, debuginfod download) on
//! arbitrary bytes: parsing, the build-id and CRC-32 checks must never panic.
//! Seed corpus: `objcopy --only-keep-debug` of fixture executables.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let id = [0xbbu8; 20];
    let _ = csi_dump::debug_files::same_build(data, Some(&id), None);
    let _ = csi_dump::debug_files::same_build(data, None, Some(csi_dump::debug_files::crc32(data)));
    let mut notices = Vec::new();
    let _ = csi_dump::debug_files::find(data, None, &Default::default(), false, &mut notices);
});
