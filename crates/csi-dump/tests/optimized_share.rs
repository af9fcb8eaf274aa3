//! Issue 17: an optimized build decides (must or never) as much of the same crash as its -O0
//! build. For every program of the fixture matrix (`fixtures/build.sh`, `CSI_FIXTURES`) built
//! both at -O0 and at -O2 instrumented before optimization, the decided share — (must +
//! never) over the lines the answer lists, outside `/usr` — is computed for both builds; the
//! mean over programs at -O2 must be at least 90 % of the mean at -O0, per scheme. Soundness
//! of the same answers is `soundness_oracle.rs`'s.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use csi_analysis::best_effort_coverage;

fn decided_share(exe: &Path, core: &Path) -> f64 {
    let crash = csi_dump::Crash::open(exe, core, &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e}", core.display()));
    let cov = best_effort_coverage(&crash.graph, &crash.report)
        .unwrap_or_else(|e| panic!("{}: analysis failed: {e}", core.display()));
    let (mut decided, mut listed) = (0usize, 0usize);
    for (file, l) in cov.global_lines(&crash.graph) {
        if file.starts_with("/usr") {
            continue;
        }
        decided += l.must.len() + l.never.len();
        listed += l.must.len() + l.never.len() + l.may.len();
    }
    if listed == 0 {
        0.0
    } else {
        decided as f64 / listed as f64
    }
}

#[test]
fn optimized_builds_decide_nine_tenths_of_what_o0_decides() {
    let Some(root) = std::env::var_os("CSI_FIXTURES").map(std::path::PathBuf::from) else {
        common::matrix_lacks("an -O2pre");
        return;
    };
    // scheme → [(program, -O0 share, -O2pre share)]
    let mut by_scheme: BTreeMap<String, Vec<(String, f64, f64)>> = BTreeMap::new();
    let mut programs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    programs.sort();
    for dir in programs {
        let program = dir.file_name().unwrap().to_string_lossy().to_string();
        for pre in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = pre.file_name().to_string_lossy().to_string();
            let Some(scheme) = name.strip_suffix("-O2pre") else {
                continue;
            };
            let o0 = dir.join(format!("{scheme}-O0"));
            let build = |d: &Path| (d.join(&program), d.join("core"));
            let ((e0, c0), (e2, c2)) = (build(&o0), build(&pre.path()));
            if !(c0.is_file() && c2.is_file()) {
                continue;
            }
            by_scheme.entry(scheme.to_string()).or_default().push((
                program.clone(),
                decided_share(&e0, &c0),
                decided_share(&e2, &c2),
            ));
        }
    }
    if by_scheme.is_empty() {
        common::matrix_lacks("an -O2pre");
        return;
    }
    let mut failures = Vec::new();
    for (scheme, rows) in &by_scheme {
        for (p, s0, s2) in rows {
            eprintln!(
                "{scheme:10} {p:16} -O0 {:5.1} %  -O2pre {:5.1} %",
                100.0 * s0,
                100.0 * s2
            );
        }
        let n = rows.len() as f64;
        let m0 = rows.iter().map(|r| r.1).sum::<f64>() / n;
        let m2 = rows.iter().map(|r| r.2).sum::<f64>() / n;
        eprintln!(
            "{scheme}: mean decided -O0 {:.1} %, -O2pre {:.1} % ({:.0} % of -O0) over {} programs",
            100.0 * m0,
            100.0 * m2,
            100.0 * m2 / m0,
            rows.len()
        );
        if m2 < 0.9 * m0 {
            failures.push(format!(
                "{scheme}: -O2pre decides {:.1} % against {:.1} % at -O0",
                100.0 * m2,
                100.0 * m0
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
