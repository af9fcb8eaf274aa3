//! Soundness against ground truth: random programs, a simulated crashing run, and the report
//! it leaves. Every node the run executed must not be No (globally, and in its own frame's
//! function for the frames' local answers where it ran in that activation is unknown, so only
//! globally); every Yes node must have executed.

use csi_analysis::synthetic::synthetic;
use csi_analysis::{active_nodes_edges, best_effort_coverage};
use csi_model::Coverage;

#[test]
fn never_contradicts_the_run_that_produced_the_report() {
    let mut decided = 0usize;
    let mut total = 0usize;
    for seed in 0..300u64 {
        let functions = 2 + (seed % 12) as usize;
        let s = synthetic(
            seed,
            functions,
            12 + (seed % 30) as usize,
            20 + (seed * 7 % 400) as usize,
            40,
        );
        let c = best_effort_coverage(&s.graph, &s.report)
            .unwrap_or_else(|e| panic!("seed {seed}: consistent report rejected: {e}"));
        let active = active_nodes_edges(&s.graph, &s.report);
        for (i, &ran) in s.executed.iter().enumerate() {
            let id = &s.graph.nodes[i].ext_id;
            if ran {
                assert_ne!(c.global[i], Coverage::No, "seed {seed}: {id} ran but is No");
                assert!(active.nodes[i], "seed {seed}: {id} ran but is inactive");
            } else {
                assert_ne!(
                    c.global[i],
                    Coverage::Yes,
                    "seed {seed}: {id} did not run but is Yes"
                );
            }
            if c.global[i] != Coverage::Maybe {
                decided += 1;
            }
            total += 1;
        }
        // Frame-local answers: a frame's Yes nodes ran.
        for f in &c.frames {
            for (&n, &st) in &f.status {
                if st == Coverage::Yes {
                    assert!(
                        s.executed[n as usize],
                        "seed {seed}: frame {} Yes node did not run",
                        f.frame
                    );
                }
            }
        }
    }
    eprintln!(
        "decided {decided} of {total} nodes ({:.1}%)",
        100.0 * decided as f64 / total as f64
    );
}
