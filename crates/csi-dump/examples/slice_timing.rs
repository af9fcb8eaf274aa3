//! Times restricted slicing on a real crash, phase by phase (median of 5 runs each):
//! `cargo run --release -p csi-dump --example slice_timing -- EXE CORE`.
//! Defaults to the bundled `slices` fixture crash.

use std::time::{Duration, Instant};

use csi_analysis::best_effort_coverage;
use csi_analysis::sdg::Sdg;
use csi_analysis::slice::{crash_criterion, restrict, slice_pair};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/crashes/slices/realistic-O0"
    );
    let (exe, core) = match args.as_slice() {
        [e, c] => (e.clone(), c.clone()),
        _ => (format!("{root}/slices"), format!("{root}/core")),
    };
    let t = Instant::now();
    let crash = csi_dump::Crash::open(exe.as_ref(), core.as_ref(), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let cov = best_effort_coverage(&crash.graph, &crash.report).expect("analysis");
    println!(
        "load + best-effort coverage: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let g = &crash.graph;
    let r = &crash.report;
    let (mut build, mut restr, mut sl, mut total) = (vec![], vec![], vec![], vec![]);
    let mut last = None;
    for _ in 0..5 {
        let t0 = Instant::now();
        let sdg = Sdg::build(g);
        let t1 = Instant::now();
        let rs = restrict(g, &sdg, r, &cov, 0);
        let t2 = Instant::now();
        let pair = slice_pair(g, &sdg, r, &rs, crash_criterion(r, 0).expect("criterion"));
        let t3 = Instant::now();
        build.push(t1 - t0);
        restr.push(t2 - t1);
        sl.push(t3 - t2);
        total.push(t3 - t0);
        last = Some((sdg.vertices.len(), sdg.edges.len(), pair));
    }
    let (v, e, pair) = last.unwrap();
    if std::env::var_os("CSI_EDGE_KINDS").is_some() {
        let sdg = Sdg::build(g);
        let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
        for e in &sdg.edges {
            let k = match e.kind {
                csi_analysis::sdg::DepKind::Data(l) => format!(
                    "data {}",
                    if sdg.loc_name(l) == "*" {
                        "*"
                    } else if sdg.loc_name(l).starts_with('@') {
                        "@global"
                    } else if sdg.loc_name(l).starts_with('%') {
                        "%ssa"
                    } else {
                        "local"
                    }
                ),
                k => format!("{k:?}"),
            };
            *kinds.entry(k).or_default() += 1;
        }
        println!("{kinds:?}");
    }
    println!("{} CFG nodes, SDG {v} vertices, {e} edges", g.node_count());
    println!(
        "SDG build {:.3} s, restriction {:.3} s, both slices {:.3} s; total {:.3} s (medians of 5)",
        median(build).as_secs_f64(),
        median(restr).as_secs_f64(),
        median(sl).as_secs_f64(),
        median(total).as_secs_f64()
    );
    println!(
        "slice from the crash: restricted {} lines, static {} lines ({:.0} % fewer)",
        pair.restricted.line_count(),
        pair.unrestricted.line_count(),
        pair.reduction() * 100.0
    );
}
