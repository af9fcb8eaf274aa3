//! csi-grissom JSON report reader against a fixed small graph: any bytes give a report or an
//! InputError; a report that loads is analyzed without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static GRAPH: OnceLock<csi_model::ProgramGraph> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let g = GRAPH.get_or_init(|| {
        csi_model::parse_graphml(
            "example.graphml",
            include_str!("../../examples/fig6-1/example.graphml"),
        )
        .unwrap()
    });
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = csi_model::parse_grissom_report("fuzz.json", text, g) {
        let _ = csi_analysis::best_effort_coverage(g, &r);
        let _ = csi_analysis::active_nodes_edges(g, &r);
    }
});
