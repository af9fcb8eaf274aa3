//! csi-cc metadata section readers (.debug_PT/CC/BBC/FC and .debug_CSI_CFG): errors, not
//! panics — on text and on compressed pieces (`sections::frame`; run.sh also seeds framed
//! sections, so damaged headers and zstd data are explored from the raw input).
#![no_main]
use csi_model::sections;
use libfuzzer_sys::fuzz_target;

fn parse_all(data: &[u8]) -> [bool; 5] {
    let cfg = sections::cfg::parse_cfg(data, "fuzz");
    if let Ok(funcs) = &cfg {
        let _ = sections::cfg::cfg_to_program_graph(funcs, "fuzz");
    }
    [
        sections::pt::parse_pt(data, "fuzz").is_ok(),
        sections::coverage::parse_cc(data, "fuzz").is_ok(),
        sections::coverage::parse_bbc(data, "fuzz").is_ok(),
        sections::coverage::parse_fc(data, "fuzz").is_ok(),
        cfg.is_ok(),
    ]
}

fuzz_target!(|data: &[u8]| {
    let plain = parse_all(data);
    // The same bytes as a compressed piece followed by a plain one (an object of an older
    // csi-cc linked after a new one) must read exactly as the text — unless the text itself
    // holds a frame's magic, which the reader then takes for a frame.
    if data.windows(4).any(|w| w == sections::frame::FRAME_MAGIC) {
        return;
    }
    let cut = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut mixed = sections::frame::encode(&data[..cut], 1).expect("zstd compresses");
    mixed.extend_from_slice(&data[cut..]);
    assert_eq!(parse_all(&mixed), plain);
    assert_eq!(
        sections::frame::decode(&mixed, "fuzz").ok().as_deref(),
        Some(data)
    );
});
