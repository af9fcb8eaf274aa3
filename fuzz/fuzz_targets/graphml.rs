//! GraphML reader: any bytes give a graph or an InputError, never a panic; a graph that loads
//! can be analyzed (with a trivial crash report) without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(g) = csi_model::parse_graphml("fuzz.graphml", text) {
        if let Some(entry) = g.program_entry {
            let report = csi_model::FailureReport {
                threads: vec![csi_model::Thread {
                    frames: vec![csi_model::Frame {
                        function: Some(g.node(entry).function),
                        point: vec![g.function(g.node(entry).function).exit],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let _ = csi_analysis::best_effort_coverage(&g, &report);
            let _ = csi_analysis::active_nodes_edges(&g, &report);
        }
    }
});
