//! Why a line got its global state: every node holding `FILE:LINE`, its function, the
//! subprogram its position comes from, and the node's global answer.
//! `cargo run --release -p csi-dump --example line_why -- EXE CORE FILE:LINE`
fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 4 {
        eprintln!("usage: line_why EXE CORE FILE:LINE");
        std::process::exit(2);
    }
    let (file, line) = a[3].rsplit_once(':').expect("FILE:LINE");
    let line: u32 = line.parse().expect("LINE");
    let crash = csi_dump::Crash::open(a[1].as_ref(), a[2].as_ref(), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let g = &crash.graph;
    let cov = csi_analysis::best_effort_coverage(g, &crash.report).expect("analysis");
    for n in csi_analysis::nodes_on_line(g, file, line) {
        let node = g.node(n);
        let f = g.function(node.function);
        let entry = cov.global[f.entry as usize];
        println!(
            "{} [{:?}] fn={} opt={} inlined_elsewhere={} entry={:?} file={}",
            node.ext_id,
            cov.global[n as usize],
            f.name,
            f.optimized,
            f.inlined_elsewhere,
            entry,
            g.file_of(n).map(|x| g.file_name(x)).unwrap_or("?"),
        );
        if let Some(&c) = crash.report.global_coverage.get(&n) {
            println!("   global coverage observation: {c}");
        }
        for t in &crash.report.threads {
            for (i, fr) in t.frames.iter().enumerate() {
                if let Some(&c) = fr.local_coverage.get(&n) {
                    println!("   frame #{i} local coverage: {c}");
                }
            }
        }
        println!("   labels {:?} call {:?}", node.labels, node.kind);
        for (k, p) in node.positions.iter().enumerate() {
            if p.line != line {
                continue;
            }
            let sub = match node.scopes.get(k) {
                Some(&i) if i > 0 => f.inlined.get(i as usize - 1).cloned(),
                _ => None,
            };
            println!(
                "   pos {k} col {} scope {:?} weak={}",
                p.column,
                sub,
                node.weak.contains(&(k as u32))
            );
        }
    }
    let lines = cov.global_lines(g);
    for (f, l) in &lines {
        if csi_model::paths::same_source(f, file) {
            println!("{f}: {:?}", l.status(line));
        }
    }
}
