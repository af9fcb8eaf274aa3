//! Customizable tracing (`csi-cc --csi-scheme=custom`, the dissertation's ch. 3): a build with
//! every function's switch set off (`customoff`, by `csi tracing` in `fixtures/build.sh`) runs
//! the same program as the build with them on (`custom`) — the replicas compute what the
//! instrumented bodies do — so the same crash must be reported with less evidence and nothing
//! else: every line `customoff` calls must or never, `custom` calls the same (where both
//! crashed at the same depth, fault address and line: optimized apart, the two bodies may
//! fault at different instructions). Soundness of
//! both against the oracles is `soundness_oracle.rs`'s.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::fixture_crashes;
use csi_analysis::best_effort_coverage;

/// What tells two crashes apart: the crashing thread's depth, the fault address (near 0),
/// the line the innermost frame stopped at, and the other threads' innermost lines.
type RunShape = (usize, Option<u64>, Option<u32>, Vec<Option<u32>>);

/// (must, never) lines, as `file:line`, and the run's shape.
fn line_claims(
    exe: &std::path::Path,
    core: &std::path::Path,
) -> (BTreeSet<String>, BTreeSet<String>, RunShape) {
    let crash = csi_dump::Crash::open(exe, core, &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e}", core.display()));
    let depth = crash.threads.first().map_or(0, |t| t.frames.len());
    // A null pointer's offset tells accesses apart; other addresses move with ASLR.
    let fault = crash
        .signal
        .as_ref()
        .and_then(|s| s.fault_address)
        .filter(|&a| a < 0x10000);
    let line = crash
        .threads
        .first()
        .and_then(|t| t.frames.first())
        .and_then(|f| f.location.as_ref())
        .map(|l| l.line);
    // Where the other threads stand: their innermost line in the program (thread timing
    // differs from run to run — thread_crash's main may still be in `pthread_create`).
    let mut others: Vec<Option<u32>> = crash
        .threads
        .iter()
        .skip(1)
        .map(|t| {
            t.frames
                .iter()
                .find_map(|f| f.location.as_ref())
                .map(|l| l.line)
        })
        .collect();
    others.sort_unstable();
    let cov = best_effort_coverage(&crash.graph, &crash.report)
        .unwrap_or_else(|e| panic!("{}: {e}", core.display()));
    let (mut must, mut never) = (BTreeSet::new(), BTreeSet::new());
    for (file, l) in cov.global_lines(&crash.graph) {
        must.extend(l.must.iter().map(|x| format!("{file}:{x}")));
        never.extend(l.never.iter().map(|x| format!("{file}:{x}")));
    }
    (must, never, (depth, fault, line, others))
}

#[test]
fn switching_tracing_off_only_takes_evidence_away() {
    // program/level → (custom, customoff) crashes.
    let mut pairs: BTreeMap<String, [Option<common::FixtureCrash>; 2]> = BTreeMap::new();
    for fx in fixture_crashes() {
        let name = fx.name();
        let Some((program, build)) = name.rsplit_once('/') else {
            continue;
        };
        let (slot, level) = if let Some(l) = build.strip_prefix("customoff-") {
            (1, l)
        } else if let Some(l) = build.strip_prefix("custom-") {
            (0, l)
        } else {
            continue;
        };
        pairs.entry(format!("{program}/{level}")).or_default()[slot] = Some(fx);
    }
    if pairs.is_empty() {
        common::matrix_lacks("a custom/customoff");
        return;
    }
    let (mut compared, mut lost, mut kept) = (0, 0usize, 0usize);
    let mut other_runs: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    for (key, [on, off]) in &pairs {
        let (Some(on), Some(off)) = (on, off) else {
            continue;
        };
        let switches = csi_dump::tracing_switches::tracing_switches(&off.exe).unwrap();
        assert!(
            !switches.is_empty() && switches.iter().all(|s| !s.on),
            "{key}: the customoff build has switches on: {switches:?}"
        );
        let (on_must, on_never, (on_depth, on_fault, on_line, on_others)) =
            line_claims(&on.exe, &on.core);
        let (off_must, off_never, (off_depth, off_fault, off_line, off_others)) =
            line_claims(&off.exe, &off.core);
        if on_others != off_others {
            other_runs.push(format!(
                "{key} (other threads at {on_others:?} / {off_others:?})"
            ));
            continue;
        }
        if on_depth != off_depth && on_depth.max(off_depth) > 1000 {
            // A stack overflow: the replicas' frames differ in size from the instrumented
            // bodies', so the process died at another depth — another run. (Elsewhere depths
            // may differ by the replicas' own frames: a switched-on body inlined into its
            // caller is a frame of its own when its replica runs.)
            other_runs.push(format!("{key} ({on_depth} / {off_depth} frames)"));
            continue;
        }
        if on_fault != off_fault {
            // Undefined behaviour compiled twice: optimized apart, the replica faults at
            // another access (null_deref at -O2: `a->owner` at address 0 in the replica,
            // `->balance` at 8 in the body) — another run.
            other_runs.push(format!("{key} (fault at {on_fault:x?} / {off_fault:x?})"));
            continue;
        }
        if on_line != off_line {
            // The same fault, at another instruction: at -O2 the optimizer merges what both
            // bodies inlined into a caller do alike (the faulting access of slices' `boom`,
            // sunk below the call's switch test), and such code has no line of its own —
            // the crash stands at line 0 in one build, at its statement in the other.
            other_runs.push(format!("{key} (crash at line {on_line:?} / {off_line:?})"));
            continue;
        }
        for l in off_must.difference(&on_must) {
            failures.push(format!("{key}: {l} must only with tracing off"));
        }
        for l in off_never.difference(&on_never) {
            failures.push(format!("{key}: {l} never only with tracing off"));
        }
        lost += on_must.len() + on_never.len()
            - (off_must.len() + off_never.len()).min(on_must.len() + on_never.len());
        kept += off_must.len() + off_never.len();
        compared += 1;
    }
    eprintln!(
        "{compared} crashes built with every switch on and off: {kept} decided lines kept, {lost} lost with tracing off; not the same run: {other_runs:?}"
    );
    assert!(compared > 0, "no custom/customoff pair");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `csi tracing --core`: after a crash of a build with every switch off, the switches of the
/// functions on its stacks go on and every other stays off (in a copy of the binary).
#[test]
fn a_crash_turns_tracing_on_where_it_happened() {
    let mut checked = 0;
    for fx in fixture_crashes() {
        let name = fx.name();
        if !name.ends_with("/customoff-O0") {
            continue;
        }
        let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let settings =
            csi_dump::tracing_switches::settings_for_crashes(std::slice::from_ref(&crash)).unwrap();
        let on: BTreeSet<&str> = settings[1..].iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(settings[0], ("*".to_string(), false), "{name}");
        // Every switchable function with a frame is on the list.
        let stack: BTreeSet<String> = crash
            .report
            .threads
            .iter()
            .flat_map(|t| &t.frames)
            .filter_map(|f| f.function)
            .map(|f| crash.graph.function(f).name.clone())
            .collect();
        let all = csi_dump::tracing_switches::tracing_switches(&fx.exe).unwrap();
        for s in &all {
            assert_eq!(
                on.contains(s.function.as_str()),
                stack.contains(&s.function),
                "{name}: {}",
                s.function
            );
        }
        // Applied to a copy of the binary, exactly those are on.
        let dir =
            std::env::temp_dir().join(format!("csi-tracing-{}-{checked}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("exe");
        std::fs::copy(&fx.exe, &copy).unwrap();
        let now = csi_dump::tracing_switches::set_tracing_switches(&copy, &settings).unwrap();
        for s in &now {
            assert_eq!(
                s.on,
                on.contains(s.function.as_str()),
                "{name}: {}",
                s.function
            );
        }
        assert!(
            now.iter().any(|s| s.on),
            "{name}: nothing on the stack is switchable"
        );
        // A patched entry (`entry_patch`) says what its byte says: a jump to the body when on.
        let bytes = std::fs::read(&copy).unwrap();
        for s in &now {
            if let Some(e) = &s.entry {
                let at = e.file_offset as usize;
                assert_eq!(
                    bytes[at..at + 5],
                    e.bytes(s.on),
                    "{name}: {}'s entry",
                    s.function
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        checked += 1;
    }
    if checked == 0 {
        common::matrix_lacks("a customoff-O0");
    }
}

/// A function switched on whose entry is not patched (a custom build linked without csi-cc's
/// link step) runs its replica when called from other units: the reader takes it as off. The
/// same core read with the entries of the file NOPs decides no line the patched file does
/// not, and fewer.
#[test]
fn an_unpatched_entry_counts_as_off() {
    let (mut checked, mut fewer) = (0, 0);
    for fx in fixture_crashes() {
        let name = fx.name();
        if !name.ends_with("/custom-O2") {
            continue;
        }
        let switches = csi_dump::tracing_switches::tracing_switches(&fx.exe).unwrap();
        if !switches.iter().any(|s| s.on && s.entry.is_some()) {
            continue;
        }
        let dir = std::env::temp_dir().join(format!("csi-entry-{}-{checked}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join(fx.exe.file_name().unwrap());
        let mut bytes = std::fs::read(&fx.exe).unwrap();
        for e in switches.iter().filter_map(|s| s.entry.as_ref()) {
            let at = e.file_offset as usize;
            bytes[at..at + 5].copy_from_slice(&e.bytes(false));
        }
        std::fs::write(&copy, &bytes).unwrap();
        let (must, never, _) = line_claims(&fx.exe, &fx.core);
        let (u_must, u_never, _) = line_claims(&copy, &fx.core);
        let crash = csi_dump::Crash::open(&copy, &fx.core, &Default::default()).unwrap();
        assert!(
            crash
                .notices
                .iter()
                .any(|n| n.contains("do not jump to their instrumented bodies")),
            "{name}: no notice of the unpatched entries: {:?}",
            crash.notices
        );
        assert!(
            u_must.is_subset(&must),
            "{name}: must only with the entries unpatched"
        );
        assert!(
            u_never.is_subset(&never),
            "{name}: never only with the entries unpatched"
        );
        if u_must.len() + u_never.len() < must.len() + never.len() {
            fewer += 1;
        }
        let _ = std::fs::remove_dir_all(&dir);
        checked += 1;
    }
    if checked == 0 {
        common::matrix_lacks("a custom-O2 with patched entries");
        return;
    }
    eprintln!("{checked} crashes read with unpatched entries: {fewer} with fewer decided lines");
    assert!(
        fewer > 0,
        "no crash lost evidence with its entries unpatched"
    );
}
