//! The core reader on arbitrary core bytes, with a real fixture executable: parsing, the
//! match check, unwinding, DWARF locals and trace extraction must never panic.
//! Seed corpus: `fixtures/crashes/*/*/core`.
#![no_main]

use libfuzzer_sys::fuzz_target;

static EXE: &[u8] = include_bytes!("../../fixtures/crashes/null_deref/realistic-O0/null_deref");

fuzz_target!(|data: &[u8]| {
    let _ = csi_dump::load_bytes(EXE.to_vec(), data.to_vec());
});
