//! Soundness against ground truth (DESIGN §9): for every fixture crash that has the clang
//! source-coverage oracle of the same run (`coverage.json`: file → line → execution count),
//! every line we call "never" ran 0 times and every line we call "must" (globally, or in a
//! stack frame) ran at least once. Zero violations allowed.
//!
//! clang counts a region when execution *enters* it, so a region that was in progress at the
//! crash (the crash point's, and each caller's around its in-progress call) is counted once
//! per activation although its code after the crash point never ran. Counts therefore
//! overstate by at most `k` = the number of activations of the line's function on the
//! stacks (inlined ones included). A "never" line is a proven violation only when its count
//! exceeds `k`; a "must" line only when its count is 0. Counts of lines after an in-flight
//! point in its function can also come from counter expressions over in-flight regions, so a
//! "never" there is unverifiable too. Unverifiable lines are counted and reported.

mod common;

use std::collections::BTreeMap;

use csi_analysis::best_effort_coverage;

use common::fixture_crashes;

type Oracle = BTreeMap<String, BTreeMap<String, u64>>;

fn oracle_count<'a>(oracle: &'a Oracle, file: &str, line: u32) -> Option<u64> {
    let (_, lines) = oracle
        .iter()
        .find(|(f, _)| csi_dump::same_source(f, file))?;
    let _: &'a BTreeMap<String, u64> = lines;
    lines.get(&line.to_string()).copied()
}

#[test]
fn must_and_never_agree_with_clang_coverage() {
    let mut checked = 0usize;
    let mut unverifiable = 0usize;
    let mut excused_without_stack = 0usize;
    let mut violations: Vec<String> = Vec::new();
    let mut with_oracle = 0;
    for fx in fixture_crashes() {
        let Some(oracle_path) = &fx.oracle else {
            continue;
        };
        with_oracle += 1;
        let oracle: Oracle =
            serde_json::from_str(&std::fs::read_to_string(oracle_path).unwrap()).unwrap();
        let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
        let g = &crash.graph;
        let cov = best_effort_coverage(g, &crash.report)
            .unwrap_or_else(|e| panic!("{}: analysis failed: {e}", fx.name()));
        // Activations per function name (physical and inlined frames of every thread).
        let mut active: BTreeMap<String, u64> = BTreeMap::new();
        // Earliest line of an in-flight point per function: counts after it may be derived
        // from in-flight regions by counter expressions, so they prove nothing there.
        let mut inflight_from: BTreeMap<String, u32> = BTreeMap::new();
        for t in &crash.threads {
            for f in &t.frames {
                let chain = f
                    .inlined
                    .iter()
                    .map(|i| (i.function.clone(), i.location.as_ref().map(|l| l.line)))
                    .chain(std::iter::once((
                        f.function.clone(),
                        f.call_location.as_ref().map(|l| l.line),
                    )));
                for (name, line) in chain {
                    let Some(name) = name else { continue };
                    *active.entry(name.clone()).or_default() += 1;
                    if let Some(l) = line {
                        let e = inflight_from.entry(name).or_insert(l);
                        *e = (*e).min(l);
                    }
                }
            }
        }
        // A crash whose thread has no frame in the program (at -O2 a null dereference the
        // optimizer proved undefined can fall off the end of `main`): which calls were in
        // flight — whose regions clang counted as returned — is unknown.
        let no_crash_stack = crash
            .report
            .threads
            .first()
            .is_none_or(|t| t.frames.is_empty());
        let after_inflight = |file: &str, line: u32| -> bool {
            g.functions.iter().any(|f| {
                inflight_from.get(&f.name).is_some_and(|&from| line >= from)
                    && f.nodes.iter().any(|&n| {
                        g.file_of(n)
                            .is_some_and(|x| csi_dump::same_source(g.file_name(x), file))
                            && g.node(n).lines().any(|l| l == line)
                    })
            })
        };
        let in_flight = |file: &str, line: u32| -> u64 {
            g.functions
                .iter()
                .filter(|f| {
                    f.nodes.iter().any(|&n| {
                        g.file_of(n)
                            .is_some_and(|x| csi_dump::same_source(g.file_name(x), file))
                            && g.node(n).lines().any(|l| l == line)
                    })
                })
                .map(|f| active.get(&f.name).copied().unwrap_or(0))
                .sum()
        };
        let mut check = |scope: &str, file: &str, line: u32, must: bool| {
            let Some(count) = oracle_count(&oracle, file, line) else {
                return;
            };
            if must && count == 0 {
                violations.push(format!(
                    "{}: {scope} says {file}:{line} must have run; clang counted 0",
                    fx.name()
                ));
            }
            let k = in_flight(file, line);
            // Without a crash stack, one activation per function may be in flight unseen
            // (recursion aside), so a count of one more proves nothing; more still does.
            let unseen_in_flight = no_crash_stack && count <= k + 1;
            if !must && count > k && unseen_in_flight && !after_inflight(file, line) {
                excused_without_stack += 1;
            }
            let unsure = !must
                && count > 0
                && (count <= k || after_inflight(file, line) || unseen_in_flight);
            if !must && count > k && !unsure {
                violations.push(format!(
                    "{}: {scope} says {file}:{line} never ran; clang counted {count} ({k} in flight)",
                    fx.name()
                ));
            }
            if unsure {
                unverifiable += 1;
            } else {
                checked += 1;
            }
        };
        for_each_claim(g, &cov, &mut check);
    }
    eprintln!(
        "{with_oracle} fixture crashes with an oracle, {checked} line statuses checked, \
         {unverifiable} never-lines unverifiable (counted only by an in-flight region; \
         {excused_without_stack} of them in crashes without a program frame)"
    );
    assert!(
        violations.is_empty(),
        "{} soundness violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// The exact oracle (`exact.json` beside `coverage.json`, written by `fixtures/build.sh`): the
/// lines with an executed instruction in a `clang -O0 -gdwarf-4` build run to the same crash
/// under callgrind, plus the lines of the frames at the fatal signal. Unlike clang's region
/// counts it does not over-count at a crash, so every claim is checked exactly: a "never" line
/// executed no instruction, a "must" line executed one.
#[test]
fn must_and_never_agree_with_the_exact_oracle() {
    type Exact = BTreeMap<String, Vec<u32>>;
    let mut checked = 0usize;
    let mut unverifiable = 0usize;
    let mut with_oracle = 0usize;
    let mut violations: Vec<String> = Vec::new();
    for fx in fixture_crashes() {
        let Some(exact_path) = fx
            .oracle
            .as_ref()
            .map(|p| p.with_file_name("exact.json"))
            .filter(|p| p.is_file())
        else {
            continue;
        };
        with_oracle += 1;
        // Lines with any machine code in the oracle's own binary: a "must" line without any
        // (a declaration that -O2 gave an instruction, a header line not instantiated at
        // -O0) cannot be checked by an instruction trace.
        let oracle_code = {
            // OUT/<program>/oracle-O<n>/exact.json → OUT/<program>/exact/<program>
            let canonical = std::fs::canonicalize(&exact_path).unwrap_or(exact_path.clone());
            let dir = canonical.parent().and_then(|d| d.parent());
            let exe = dir.and_then(|d| Some(d.join("exact").join(d.file_name()?)));
            // Mapped, not read into a Vec: the ELF reader needs aligned data.
            let map = exe
                .and_then(|e| std::fs::File::open(e).ok())
                .and_then(|f| unsafe { memmap2::Mmap::map(&f) }.ok());
            let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
            match object::read::elf::ElfFile64::<object::LittleEndian>::parse(bytes)
                .map_err(|e| e.to_string())
                .and_then(|elf| csi_dump::dwarf::DebugInfo::load(&elf))
            {
                Ok(d) => Some(d.lines_with_code()),
                Err(e) => {
                    eprintln!(
                        "{}: no line table of the exact oracle's binary: {e}",
                        fx.name()
                    );
                    None
                }
            }
        };
        let has_oracle_code = |file: &str, line: u32| {
            let base = file.rsplit('/').next().unwrap_or(file).to_string();
            oracle_code
                .as_ref()
                .is_none_or(|c| c.contains(&(base, line)))
        };
        let exact: Exact =
            serde_json::from_str(&std::fs::read_to_string(&exact_path).unwrap()).unwrap();
        // Every key naming the file (valgrind's frame lines come with the base name only).
        let ran = |file: &str, line: u32| -> Option<bool> {
            let file = &lexically_normal(file);
            exact
                .iter()
                .filter(|(f, _)| csi_dump::same_source(f, file))
                .map(|(_, lines)| lines.binary_search(&line).is_ok())
                .reduce(|a, b| a || b)
        };
        let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
        let g = &crash.graph;
        let cov = best_effort_coverage(g, &crash.report)
            .unwrap_or_else(|e| panic!("{}: analysis failed: {e}", fx.name()));
        // Callgrind counts a basic block's instructions when the block completes, so the
        // faulting block's instructions before the fault are missing from the profile: a
        // "must" line of the crashing frame's function that the oracle lacks is unverifiable.
        let crash_lines: std::collections::BTreeSet<(String, u32)> = crash
            .threads
            .iter()
            .filter(|t| t.crashed)
            .flat_map(|t| t.frames.iter().find_map(|f| f.graph_function))
            .flat_map(|func| g.function(func).nodes.iter().copied())
            .flat_map(|n| {
                let file = g
                    .file_of(n)
                    .map(|x| g.file_name(x).to_string())
                    .unwrap_or_default();
                g.node(n)
                    .lines()
                    .map(move |l| (file.clone(), l))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut check = |scope: &str, file: &str, line: u32, must: bool| {
            // A file the oracle run never entered has no entry: nothing of it ran.
            let ran = ran(file, line).unwrap_or(false);
            if must
                && !ran
                && (crash_lines.contains(&(file.to_string(), line)) || !has_oracle_code(file, line))
            {
                unverifiable += 1;
                return;
            }
            checked += 1;
            if must && !ran {
                violations.push(format!(
                    "{}: {scope} says {file}:{line} must have run; no instruction of it ran",
                    fx.name()
                ));
            }
            if !must && ran {
                violations.push(format!(
                    "{}: {scope} says {file}:{line} never ran; an instruction of it ran",
                    fx.name()
                ));
            }
        };
        for_each_claim(g, &cov, &mut check);
    }
    eprintln!(
        "{with_oracle} fixture crashes with the exact oracle, {checked} line statuses checked, \
         {unverifiable} must-lines unverifiable (in the crashing function, whose faulting \
         block callgrind drops, or without code in the oracle's binary)"
    );
    assert!(
        violations.is_empty(),
        "{} violations of the exact oracle:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// `a/b/../c` → `a/c` (callgrind normalizes paths; DWARF keeps `../` of include paths).
fn lexically_normal(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            ".." if out.last().is_some_and(|p| !p.is_empty() && *p != "..") => {
                out.pop();
            }
            "." => {}
            p => out.push(p),
        }
    }
    out.join("/")
}

/// Every claim a crash's answer makes: `(scope, file, line, must)` for the global must and
/// never lines and each frame's must lines.
fn for_each_claim(
    g: &csi_model::ProgramGraph,
    cov: &csi_analysis::Coverages,
    check: &mut impl FnMut(&str, &str, u32, bool),
) {
    for (file, l) in cov.global_lines(g) {
        for &line in &l.must {
            check("global", &file, line, true);
        }
        for &line in &l.never {
            check("global", &file, line, false);
        }
    }
    for f in &cov.frames {
        let scope = format!("frame #{} of thread {}", f.frame, f.thread);
        for (file, l) in cov.frame_lines(g, f) {
            for &line in &l.must {
                check(&scope, &file, line, true);
            }
        }
    }
}
