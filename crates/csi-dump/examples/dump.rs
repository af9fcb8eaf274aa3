//! Prints what the reader recovers from a core: `cargo run -p csi-dump --example dump -- EXE CORE`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: dump EXE CORE");
        std::process::exit(2);
    }
    let t0 = std::time::Instant::now();
    let crash = match csi_dump::Crash::open(a[1].as_ref(), a[2].as_ref(), &Default::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!("loaded in {:?}; signal {:?}", t0.elapsed(), crash.signal);
    for n in &crash.notices {
        println!("notice: {n}");
    }
    for t in &crash.threads {
        println!(
            "thread {} crashed={} problem={:?}",
            t.tid, t.crashed, t.walk_problem
        );
        for (i, f) in t.frames.iter().enumerate() {
            println!(
                "  #{i} {:#x} {} {:?} {:?} [{}] {:?}",
                f.pc,
                f.function.as_deref().unwrap_or("??"),
                f.location,
                f.unwind,
                f.module,
                f.path_note
            );
            for v in &f.variables {
                println!(
                    "      {} {}: {} = {}",
                    if v.kind == csi_dump::dwarf::VarKind::Parameter {
                        "param"
                    } else {
                        "local"
                    },
                    v.name,
                    v.type_name,
                    v.value
                );
            }
            if !f.path.is_empty() {
                println!(
                    "      path: {}",
                    f.path
                        .iter()
                        .map(|s| s.line.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
        }
    }
    let g = &crash.graph;
    for t in &crash.report.threads {
        for f in &t.frames {
            let name = |n: &u32| g.node(*n).ext_id.clone();
            println!(
                "report frame {}: point {:?} path {:?} from_entry {} local {:?}",
                f.function
                    .map(|x| g.function(x).name.clone())
                    .unwrap_or_default(),
                f.point.iter().map(name).collect::<Vec<_>>(),
                f.path.iter().map(name).collect::<Vec<_>>(),
                f.path_from_entry,
                f.local_coverage
                    .iter()
                    .map(|(k, v)| (name(k), *v))
                    .collect::<Vec<_>>()
            );
        }
    }
    println!(
        "global coverage: {:?}",
        crash
            .report
            .global_coverage
            .iter()
            .map(|(k, v)| (g.node(*k).ext_id.clone(), *v))
            .collect::<Vec<_>>()
    );
}
