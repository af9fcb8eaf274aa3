//! Passing-run coverage files (`*.csicov`, csi-cc's CSI_COVERAGE_OUT): errors, not panics,
//! and reads within a parsed file stay in bounds.
#![no_main]
use csi_dump::coverage_file::CoverageFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = CoverageFile::parse("fuzz".as_ref(), data) {
        for probe in [0u64, 1, 7, u64::MAX, u64::MAX / 2] {
            let v = f.section_vaddr.wrapping_add(probe);
            if let Some(b) = f.bytes_at(v, 4) {
                assert_eq!(b.len(), 4);
            }
        }
    }
});
