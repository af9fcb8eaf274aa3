//! Precision table (dissertation Fig. 5.10/6.16 style): share of executable lines decided
//! (must or never) globally and in the crashing frame, per fixture program and optimisation
//! level, with the stack only, with the realistic scheme (call-site coverage + path traces),
//! with basic-block coverage (bb) and with function coverage (fc).
//!
//! `cargo run --release -p csi-dump --example precision [fixtures/build]`
//! (the directory `fixtures/build.sh` writes; every program × scheme × level).

use std::path::Path;

use csi_analysis::best_effort_coverage;
use csi_model::FailureReport;

fn decided(crash: &csi_dump::Crash, report: &FailureReport) -> Option<(f64, f64)> {
    let cov = best_effort_coverage(&crash.graph, report).ok()?;
    let share = |lines: &std::collections::BTreeMap<String, csi_analysis::FileLines>| {
        let (mut d, mut n) = (0usize, 0usize);
        for l in lines.values() {
            d += l.must.len() + l.never.len();
            n += l.must.len() + l.never.len() + l.may.len();
        }
        100.0 * d as f64 / n.max(1) as f64
    };
    let global = share(&cov.global_lines(&crash.graph));
    let frame = cov
        .frames
        .first()
        .map(|f| share(&cov.frame_lines(&crash.graph, f)))?;
    Some((global, frame))
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fixtures/build".into());
    let root = Path::new(&root);
    let mut programs: Vec<String> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e} (run fixtures/build.sh first)", root.display()))
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    programs.sort();
    println!("Share of executable lines decided (must or never), global / crashing frame, in %\n");
    println!("| program | opt | stack only | realistic (CC+PT) | bb | fc |");
    println!("|---|---|---|---|---|---|");
    for p in &programs {
        for opt in ["O0", "O2"] {
            let load = |scheme: &str| {
                let d = root.join(p).join(format!("{scheme}-{opt}"));
                csi_dump::Crash::open(&d.join(p), &d.join("core"), &Default::default()).ok()
            };
            let cell = |x: Option<(f64, f64)>| match x {
                Some((g, f)) => format!("{g:.0} / {f:.0}"),
                None => "–".into(),
            };
            let realistic = load("realistic");
            let so = realistic
                .as_ref()
                .and_then(|c| decided(c, &c.report.stack_only()));
            let re = realistic.as_ref().and_then(|c| decided(c, &c.report));
            let bb = load("bb").and_then(|c| decided(&c, &c.report));
            let fc = load("fc").and_then(|c| decided(&c, &c.report));
            println!(
                "| {p} | -{opt} | {} | {} | {} | {} |",
                cell(so),
                cell(re),
                cell(bb),
                cell(fc)
            );
        }
    }
}
