//! Readers and analyses never panic on damaged input (a stable-toolchain companion of the
//! `cargo fuzz` targets in `fuzz/`): every truncation and a few thousand byte mutations of the
//! bundled example's GraphML and report.

use csi_analysis::synthetic::Rng;
use csi_analysis::{active_nodes_edges, best_effort_coverage};
use csi_model::{parse_graphml, parse_grissom_report};

const GRAPH: &str = include_str!("../../../examples/fig6-1/example.graphml");
const REPORT: &str = include_str!("../../../examples/fig6-1/report.json");

fn mutations(text: &str, seed: u64, count: usize) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut rng = Rng::new(seed);
    let alphabet = b"<>/\"=:[]{},0123456789-n ";
    let mut out = Vec::new();
    for cut in (0..bytes.len()).step_by(7) {
        out.push(String::from_utf8_lossy(&bytes[..cut]).into_owned());
    }
    for _ in 0..count {
        let mut b = bytes.to_vec();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            match rng.below(3) {
                0 => b[i] = alphabet[rng.below(alphabet.len() as u64) as usize],
                1 => {
                    b.remove(i);
                }
                _ => {
                    let j = rng.below(b.len() as u64) as usize;
                    let (lo, hi) = (i.min(j), i.max(j));
                    let chunk = b[lo..hi.min(lo + 40)].to_vec();
                    b.splice(lo..lo, chunk);
                }
            }
        }
        out.push(String::from_utf8_lossy(&b).into_owned());
    }
    out
}

#[test]
fn damaged_graphml_never_panics() {
    let report_ok = parse_graphml("g", GRAPH).unwrap();
    let mut loaded = 0;
    for text in mutations(GRAPH, 1, 3000) {
        if let Ok(g) = parse_graphml("g", &text) {
            loaded += 1;
            if let Ok(r) = parse_grissom_report("r", REPORT, &g) {
                let _ = best_effort_coverage(&g, &r);
                let _ = active_nodes_edges(&g, &r);
            }
        }
    }
    assert!(report_ok.node_count() > 0 && loaded > 0);
}

#[test]
fn damaged_reports_never_panic() {
    let g = parse_graphml("g", GRAPH).unwrap();
    let mut loaded = 0;
    for text in mutations(REPORT, 2, 5000) {
        if let Ok(r) = parse_grissom_report("r", &text, &g) {
            loaded += 1;
            let _ = best_effort_coverage(&g, &r);
            let _ = active_nodes_edges(&g, &r);
        }
    }
    assert!(loaded > 10, "some mutations stay valid: {loaded}");
}
