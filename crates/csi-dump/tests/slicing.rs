//! Restricted slicing (dissertation §5.2.2) on real crashes.
//!
//! - `known_slices`: `fixtures/src/slices.c`, whose slices are worked out by hand below.
//! - `restricted_slices_are_sound`: on every fixture crash, the restricted slice is inside the
//!   static one, none of its lines is one the analysis (checked against clang's coverage by
//!   `soundness_oracle`) calls never-executed, and none is a line clang's coverage of the
//!   same run says never executed unless the analysis could not know it; more trace data
//!   (the `bb` build of the same program) never adds a line.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use csi_analysis::slice::{crash_criterion, nodes_criterion, Slicer};
use csi_analysis::{best_effort_coverage, nodes_on_line};

use common::fixture_crashes;

type Lines = BTreeMap<String, BTreeSet<u32>>;

fn only(lines: &Lines) -> Vec<u32> {
    lines.values().flatten().copied().collect()
}

struct Sliced {
    restricted: Lines,
    unrestricted: Lines,
}

fn crash_slice(exe: &std::path::Path, core: &std::path::Path) -> Option<(csi_dump::Crash, Sliced)> {
    let crash = csi_dump::Crash::open(exe, core, &Default::default()).unwrap();
    let cov = best_effort_coverage(&crash.graph, &crash.report).unwrap();
    let mut slicer = Slicer::new(&crash.graph);
    let c = crash_criterion(&crash.report, 0)?;
    let pair = slicer.slice_pair(&crash.graph, &crash.report, &cov, c);
    let s = Sliced {
        restricted: pair.restricted.lines,
        unrestricted: pair.unrestricted.lines,
    };
    Some((crash, s))
}

#[test]
fn known_slices() {
    let mut seen = 0;
    for fx in fixture_crashes() {
        let name = fx.name();
        // Not `customoff` / `custommix`: without path traces the restricted slice is larger (still sound).
        if !name.starts_with("slices/")
            || !name.ends_with("-O0")
            || name.contains("fc-")
            || name.contains("customoff-")
            || name.contains("custommix-")
        {
            continue;
        }
        seen += 1;
        let (crash, s) = crash_slice(&fx.exe, &fx.core).expect("slices has frames in the graph");
        // The crash is `p[k] = scale` (26) in boom, called from main (39). Statements are
        // told apart by line (csi-cc's statement groups), so the slice is per statement.
        // Static: p ← 38 ← getenv's result (an opaque library call: it may read any memory,
        // so every earlier write to memory: v's initialiser 31, pick's `noise = n` 18) and
        // idx (33) ← pick's return (19) ← found (13, 16) under the loop (14, 15) reading v
        // (31); k ← twice (32, 9); scale ← 35, 37 and its initial value; `puts` (25) may
        // write any memory, scale included, under `if (unused > 1000)` (24) ← unused (23).
        let stat = [
            9, 13, 14, 15, 16, 18, 19, 23, 24, 25, 26, 31, 32, 33, 34, 35, 37, 38, 39,
        ];
        assert_eq!(only(&s.unrestricted), stat, "{name}: static slice");
        // Restricted: `puts("big")` (25) never ran (boom's path trace), and with it go the
        // `if` (24) and `unused` (23) that only fed it; `scale = 6` (37) did not run (main's
        // path). With basic-block coverage, pick's `found = i` (16) is known never to have
        // run: found's value is the initial -1 (13), so the loop (14, 15) that only decided
        // whether to overwrite it drops out too.
        let want: Vec<u32> = if name.contains("bb-") {
            vec![9, 13, 18, 19, 26, 31, 32, 33, 34, 35, 38, 39]
        } else {
            vec![9, 13, 14, 15, 16, 18, 19, 26, 31, 32, 33, 34, 35, 38, 39]
        };
        assert_eq!(only(&s.restricted), want, "{name}: restricted slice");

        // From a line and a variable: `k` at `boom(p, k)` (39), in main's frame: k's
        // definition from `twice(argc)` (32) and twice's body (9); not p, idx, pick or scale.
        let g = &crash.graph;
        let cov = best_effort_coverage(g, &crash.report).unwrap();
        let mut slicer = Slicer::new(g);
        let nodes = nodes_on_line(g, "slices.c", 39);
        let c = nodes_criterion(
            g,
            &crash.report,
            0,
            nodes,
            Some(vec!["k".into(), "zz".into()]),
            Some(39),
        );
        assert_eq!(c.frame, Some(1), "{name}: line 39 is main's frame");
        let pair = slicer.slice_pair(g, &crash.report, &cov, c);
        assert_eq!(only(&pair.restricted.lines), [9, 32, 39], "{name}: k at 39");
        assert_eq!(pair.restricted.unknown_variables, ["zz"]);
    }
    if seen == 0 {
        eprintln!("no slices fixture builds found: skipped (run fixtures/build.sh)");
    }
}

type Oracle = BTreeMap<String, BTreeMap<String, u64>>;

/// Where thread 0 stopped, frame by frame: function and source line. Two builds of a program
/// are the same execution up to the crash only if these agree (a stack overflow, say, faults at
/// a depth and an instruction that depend on frame sizes and stack placement).
type StackShape = Vec<(Option<String>, Option<u32>)>;

fn stack_shape(crash: &csi_dump::Crash) -> StackShape {
    let g = &crash.graph;
    crash.report.threads.first().map_or_else(Vec::new, |t| {
        t.frames
            .iter()
            .map(|fr| {
                let func = fr.function.map(|f| g.function(f).name.clone());
                (func, fr.location.as_ref().map(|l| l.1))
            })
            .collect()
    })
}

#[test]
fn restricted_slices_are_sound() {
    let mut checked_lines = 0usize;
    let mut crashes = 0usize;
    let mut not_run = 0usize;
    /// A build's restricted slice, stack shape and static (unrestricted) slice.
    type Build = Option<(Lines, StackShape, Lines)>;
    let mut by_program: BTreeMap<String, (Build, Build)> = BTreeMap::new();
    for fx in fixture_crashes() {
        let name = fx.name();
        // Crashes whose crashing thread has no program frame have no crash criterion.
        let Some((crash, s)) = crash_slice(&fx.exe, &fx.core) else {
            continue;
        };
        crashes += 1;
        let g = &crash.graph;
        let cov = best_effort_coverage(g, &crash.report).unwrap();
        let global = cov.global_lines(g);
        for (file, lines) in &s.restricted {
            let stat = s.unrestricted.get(file).cloned().unwrap_or_default();
            let never: BTreeSet<u32> = global
                .get(file)
                .map(|fl| fl.never.iter().copied().collect())
                .unwrap_or_default();
            for &l in lines {
                checked_lines += 1;
                assert!(
                    stat.contains(&l),
                    "{name}: {file}:{l} restricted but not in the static slice"
                );
                assert!(
                    !never.contains(&l),
                    "{name}: {file}:{l} in the restricted slice but never executed"
                );
            }
        }
        // Against clang's coverage of the same run: a restricted line that did not run must
        // be one the analysis could not decide (Maybe).
        if let Some(o) = &fx.oracle {
            let oracle: Oracle =
                serde_json::from_str(&std::fs::read_to_string(o).unwrap()).unwrap();
            for (file, lines) in &s.restricted {
                let Some((_, counts)) = oracle.iter().find(|(f, _)| csi_dump::same_source(f, file))
                else {
                    continue;
                };
                let must: BTreeSet<u32> = global
                    .get(file)
                    .map(|fl| fl.must.iter().copied().collect())
                    .unwrap_or_default();
                for &l in lines {
                    if counts.get(&l.to_string()) == Some(&0) {
                        not_run += 1;
                        assert!(
                            !must.contains(&l),
                            "{name}: {file}:{l} must-ran but clang says 0"
                        );
                    }
                }
            }
        }
        // Monotonicity: the bb build (more trace data) never slices more than realistic.
        let (prog, build) = name.split_once('/').unwrap_or((&name, ""));
        let opt = build.rsplit('-').next().unwrap_or("");
        let key = format!("{prog}-{opt}");
        let entry = by_program.entry(key).or_insert((None, None));
        if build.starts_with("realistic-") {
            entry.0 = Some((
                s.restricted.clone(),
                stack_shape(&crash),
                s.unrestricted.clone(),
            ));
        } else if build.starts_with("bb-") {
            entry.1 = Some((
                s.restricted.clone(),
                stack_shape(&crash),
                s.unrestricted.clone(),
            ));
        }
    }
    let mut different_runs = Vec::new();
    for (key, builds) in &by_program {
        let (Some((realistic, at_r, realistic_static)), Some((bb, at_bb, _))) = builds else {
            continue;
        };
        // Different runs of a program that waits on another thread's timing are different
        // executions, and so are runs that stopped in different places: comparing them says
        // nothing.
        if key.starts_with("thread_crash") || at_r != at_bb {
            different_runs.push(key.as_str());
            continue;
        }
        for (file, lines) in bb {
            let r = realistic.get(file).cloned().unwrap_or_default();
            // Only lines the realistic build can slice at all: optimized builds of different
            // schemes keep code (and so positions) on different lines.
            let sliceable = realistic_static.get(file).cloned().unwrap_or_default();
            let extra: Vec<&u32> = lines
                .difference(&r)
                .filter(|l| sliceable.contains(l))
                .collect();
            assert!(
                extra.is_empty(),
                "{key}: bb's restricted slice has lines realistic's lacks: {file} {extra:?}"
            );
        }
    }
    eprintln!(
        "{crashes} crashes: {checked_lines} restricted-slice lines checked, {not_run} of them did not run (undecidable from the traces); bb and realistic not compared (different runs): {different_runs:?}"
    );
}
