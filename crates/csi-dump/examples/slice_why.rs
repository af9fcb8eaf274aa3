//! Debug aid: why is LINE in the static slice from the crash? Prints one dependence chain.
//! `cargo run --release -p csi-dump --example slice_why -- EXE CORE LINE`
use csi_analysis::sdg::Sdg;
use std::collections::{HashMap, VecDeque};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let crash = csi_dump::Crash::open(a[0].as_ref(), a[1].as_ref(), &Default::default()).unwrap();
    let want: u32 = a[2].parse().unwrap();
    let g = &crash.graph;
    let sdg = Sdg::build(g);
    let mut starts: Vec<u32> = csi_analysis::slice::crash_criterion(&crash.report, 0)
        .unwrap()
        .nodes;
    // Optional FILE:LINE:VAR criterion: that line's statements, first step only VAR's data.
    let mut var: Option<String> = None;
    if let Some(c) = a.get(3) {
        let mut it = c.splitn(3, ':');
        let (f, l, v) = (
            it.next().unwrap(),
            it.next().unwrap().parse::<u32>().unwrap(),
            it.next().unwrap(),
        );
        starts = csi_analysis::nodes_on_line(g, f, l)
            .into_iter()
            .flat_map(|n| sdg.stmts.get(&n).cloned().unwrap_or(vec![n]))
            .filter(|v| sdg.vertex_line.get(v).is_none_or(|x| *x == Some(l)))
            .collect();
        var = Some(v.to_string());
    }
    let mut parent: HashMap<u32, (u32, usize)> = HashMap::new();
    let mut q: VecDeque<u32> = VecDeque::new();
    for &n in &starts {
        parent.insert(n, (n, usize::MAX));
        match &var {
            None => q.push_back(n),
            Some(v) => {
                for &e in &sdg.preds[n as usize] {
                    if let csi_analysis::sdg::DepKind::Data(l) = sdg.edges[e as usize].kind {
                        if sdg.loc_name(l) == v {
                            let f = sdg.edges[e as usize].from;
                            parent.insert(f, (n, e as usize));
                            q.push_back(f);
                        }
                    }
                }
            }
        }
    }
    while let Some(v) = q.pop_front() {
        let vl: Vec<u32> = match sdg.vertex_line.get(&v) {
            Some(l) => l.iter().copied().collect(),
            None => g.node(sdg.vertices[v as usize].host).lines().collect(),
        };
        if vl.contains(&want) {
            let mut x = v;
            loop {
                let (p, e) = parent[&x];
                let vx = sdg.vertices[x as usize];
                println!(
                    "{x} {:?} host {} ({}) lines {:?} via {:?}",
                    vx.kind,
                    vx.host,
                    g.function(vx.function).name,
                    sdg.vertex_line.get(&x),
                    if e == usize::MAX {
                        None
                    } else {
                        Some(sdg.edges[e].kind)
                    }
                );
                if e == usize::MAX {
                    break;
                }
                x = p;
            }
            return;
        }
        for &e in &sdg.preds[v as usize] {
            let f = sdg.edges[e as usize].from;
            if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(f) {
                slot.insert((v, e as usize));
                q.push_back(f);
            }
        }
    }
    println!("not reached");
}
