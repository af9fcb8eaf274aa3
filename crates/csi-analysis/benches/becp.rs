//! Best-effort coverage speed: every PLDI 2017 report (from ../shared when present) and a
//! synthetic 150k-node program, and interpreter-shaped problems of 10k and 100k nodes.
//! `cargo bench -p csi-analysis`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use csi_analysis::synthetic::{interpreter, synthetic};
use csi_analysis::utl::UtlProblem;
use csi_analysis::{active_nodes_edges, best_effort_coverage};
use csi_model::{read_graphml, read_grissom_report};

fn pldi_reports() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/pldi2017-failure-reports");
    let mut out = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "data.json") {
                let fault = p.parent().unwrap().parent().unwrap();
                let graph = std::fs::read_dir(fault)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|q| q.extension().is_some_and(|x| x == "graphml"))
                    .unwrap();
                let name = p
                    .parent()
                    .unwrap()
                    .strip_prefix(&dir)
                    .unwrap()
                    .display()
                    .to_string();
                out.push((name, graph, p));
            }
        }
    }
    out.sort();
    out
}

fn bench_pldi(c: &mut Criterion) {
    let reports = pldi_reports();
    if reports.is_empty() {
        eprintln!("SKIP: ../shared/reference/pldi2017-failure-reports not found");
        return;
    }
    let mut group = c.benchmark_group("pldi");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    for (name, graph, data) in reports {
        let g = read_graphml(&graph).unwrap();
        let r = read_grissom_report(&data, &g).unwrap();
        group.bench_function(&name, |b| b.iter(|| best_effort_coverage(&g, &r).unwrap()));
    }
    group.finish();
}

fn bench_synthetic(c: &mut Criterion) {
    let s = synthetic(42, 3000, 50, 200_000, 30);
    eprintln!(
        "synthetic: {} nodes, {} functions, crash stack depth {}",
        s.graph.node_count(),
        s.graph.functions.len(),
        s.report.threads[0].frames.len()
    );
    let mut group = c.benchmark_group("synthetic");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("becp_150k", |b| {
        b.iter(|| best_effort_coverage(&s.graph, &s.report).unwrap())
    });
    group.bench_function("active_150k", |b| {
        b.iter(|| active_nodes_edges(&s.graph, &s.report))
    });
    group.finish();
}

/// Interpreter-shaped problems: one strongly connected component holding nearly every node
/// (a dispatch loop, handlers, helpers with context-insensitive returns), where the solver
/// used to re-check every candidate against the whole component (quadratic).
fn bench_interpreter(c: &mut Criterion) {
    let mut group = c.benchmark_group("interpreter");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for (handlers, helpers) in [(1_600, 50), (16_000, 200)] {
        let s = interpreter(7, handlers, helpers, 30);
        let p = UtlProblem {
            graph: &s.graph,
            entry: s.entry,
            crash: s.crash,
            removed: vec![false; s.graph.node_count()],
            vectors: s.vectors.clone(),
        };
        let name = format!("becp_{}k_nodes", s.graph.node_count() / 1000);
        group.bench_function(&name, |b| b.iter(|| p.best_effort().unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench_pldi, bench_synthetic, bench_interpreter);
criterion_main!(benches);
