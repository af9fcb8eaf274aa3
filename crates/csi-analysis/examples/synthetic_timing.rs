//! One-shot timing of best-effort coverage on the synthetic 150k-node program.
//! `cargo run --release -p csi-analysis --example synthetic_timing`
use std::time::Instant;

fn main() {
    let t = Instant::now();
    let s = csi_analysis::synthetic::synthetic(
        42,
        std::env::args().nth(1).map_or(3000, |a| a.parse().unwrap()),
        50,
        200_000,
        30,
    );
    println!(
        "generated {} nodes / {} functions, stack depth {} in {:?}",
        s.graph.node_count(),
        s.graph.functions.len(),
        s.report.threads[0].frames.len(),
        t.elapsed()
    );
    let t = Instant::now();
    let c = csi_analysis::best_effort_coverage(&s.graph, &s.report).unwrap();
    println!(
        "BECP: {:?} (yes {} no {} maybe {})",
        t.elapsed(),
        c.count(csi_model::Coverage::Yes),
        c.count(csi_model::Coverage::No),
        c.count(csi_model::Coverage::Maybe)
    );
    let t = Instant::now();
    let a = csi_analysis::active_nodes_edges(&s.graph, &s.report);
    println!(
        "active nodes: {:?} ({} active)",
        t.elapsed(),
        a.node_count()
    );
}
