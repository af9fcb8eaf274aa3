// scratch: why a covered function is not reachable from main
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let crash = csi_dump::Crash::open(a[1].as_ref(), a[2].as_ref(), &Default::default()).unwrap();
    let g = &crash.graph;
    let r = &crash.report;
    let never = |x: u32| r.global_coverage.get(&x) == Some(&false);
    let n = g.node_count();
    let mut seen = vec![false; n];
    let mut seen_fn = vec![false; g.functions.len()];
    let main_f = g.program_entry.map(|e| g.node(e).function);
    println!(
        "main {:?}, async roots {}",
        main_f.map(|f| g.function(f).name.clone()),
        g.async_roots.len()
    );
    let mut fstack: Vec<u32> = g.async_roots.clone();
    fstack.extend(main_f);
    while let Some(f) = fstack.pop() {
        if std::mem::replace(&mut seen_fn[f as usize], true) {
            continue;
        }
        let mut st = vec![g.function(f).entry];
        while let Some(x) = st.pop() {
            if never(x) || std::mem::replace(&mut seen[x as usize], true) {
                continue;
            }
            fstack.extend_from_slice(g.callees(x));
            st.extend_from_slice(&g.succs[x as usize]);
        }
    }
    let target = &a[3];
    // callers map
    let mut callers: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for x in 0..n as u32 {
        for &c in g.callees(x) {
            callers.entry(c).or_default().push(x);
        }
    }
    let mut work: Vec<(u32, usize)> = Vec::new();
    for (fi, f) in g.functions.iter().enumerate() {
        if f.name == *target {
            work.push((fi as u32, 0));
        }
    }
    let mut done = std::collections::HashSet::new();
    while let Some((f, d)) = work.pop() {
        if !done.insert(f) || d > 8 {
            continue;
        }
        let fun = g.function(f);
        println!(
            "{}{} (entry reachable {}, entry cov {:?}) key={}",
            "  ".repeat(d),
            fun.name,
            seen[fun.entry as usize],
            r.global_coverage.get(&fun.entry),
            g.node(fun.entry).ext_id
        );
        for &c in callers.get(&f).map(|v| v.as_slice()).unwrap_or(&[]) {
            let cf = g.node(c).function;
            println!(
                "{}  <- {} node {} reachable {} cov {:?}",
                "  ".repeat(d),
                g.function(cf).name,
                g.node(c).ext_id,
                seen[c as usize],
                r.global_coverage.get(&c)
            );
            if !seen[c as usize] {
                work.push((cf, d + 1));
            }
        }
    }
    for (fi, f) in g.functions.iter().enumerate() {
        if f.name != *target {
            continue;
        }
        let _ = fi;
        let mut st = vec![f.entry];
        let mut vis = std::collections::HashSet::new();
        while let Some(x) = st.pop() {
            if !vis.insert(x) {
                continue;
            }
            let nd = g.node(x);
            println!(
                "  node {} cov {:?} reach {} succs {:?} callees {:?} kind {:?}",
                nd.ext_id,
                r.global_coverage.get(&x),
                seen[x as usize],
                g.succs[x as usize]
                    .iter()
                    .map(|&s| g.node(s).ext_id.rsplit('#').next().unwrap().to_string())
                    .collect::<Vec<_>>(),
                g.callees(x)
                    .iter()
                    .map(|&c| g.function(c).name.clone())
                    .collect::<Vec<_>>(),
                nd.kind
            );
            st.extend_from_slice(&g.succs[x as usize]);
        }
    }
    println!(
        "analysis: {:?}",
        csi_analysis::best_effort_coverage(g, r).err()
    );
    for t in &r.threads {
        println!(
            "thread outer_unknown={} frames={}",
            t.outer_frames_unknown,
            t.frames.len()
        );
        for f in &t.frames {
            println!("  {:?}", f.function.map(|f| g.function(f).name.clone()));
        }
    }
}
#[allow(dead_code)]
fn _x() {}
