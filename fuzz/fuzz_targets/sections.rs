//! csi-cc metadata section readers (.debug_PT/CC/BBC/FC and .debug_CSI_CFG): errors, not
//! panics.
#![no_main]
use csi_model::sections;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sections::pt::parse_pt(data, "fuzz");
    let _ = sections::coverage::parse_cc(data, "fuzz");
    let _ = sections::coverage::parse_bbc(data, "fuzz");
    let _ = sections::coverage::parse_fc(data, "fuzz");
    if let Ok(funcs) = sections::cfg::parse_cfg(data, "fuzz") {
        let _ = sections::cfg::cfg_to_program_graph(&funcs, "fuzz");
    }
});
