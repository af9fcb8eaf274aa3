//! Truncated cores (systemd-coredump's `ProcessSizeMax`, a full disk, an interrupted copy) stay
//! sound: memory cut off from the file is unknown, never evidence. Every fixture crash is cut at
//! many sizes (as `truncate -s` does); each cut that keeps the notes must load, analyse without
//! error, name what is missing, and answer a weakening of the whole core's answer: every line
//! and node it calls must (never) is must (never) for the whole core too.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::fixture_crashes;
use csi_analysis::{best_effort_coverage, Coverages};
use csi_dump::{Crash, DumpError};
use csi_model::{Coverage, ProgramGraph};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("csi-truncated-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// End of the notes segment (the least a core needs to be opened at all).
fn notes_end(core: &[u8]) -> u64 {
    let u16_at = |o: usize| u16::from_le_bytes(core[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(core[o..o + 8].try_into().unwrap());
    let (phoff, phnum) = (u64_at(0x20) as usize, u16_at(0x38));
    (0..phnum)
        .map(|k| phoff + 56 * k)
        .filter(|&p| u32::from_le_bytes(core[p..p + 4].try_into().unwrap()) == 4)
        .map(|p| u64_at(p + 8) + u64_at(p + 32))
        .max()
        .unwrap()
}

/// (start, end) file offsets of the `PT_LOAD` holding the crashing thread's stack pointer.
fn stack_segment(crash: &Crash, core: &[u8]) -> Option<(u64, u64)> {
    let u16_at = |o: usize| u16::from_le_bytes(core[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(core[o..o + 8].try_into().unwrap());
    let (phoff, phnum) = (u64_at(0x20) as usize, u16_at(0x38));
    let rsp = crash.crashing_stack_pointer()?;
    (0..phnum).map(|k| phoff + 56 * k).find_map(|p| {
        let (ty, off, vaddr, filesz) = (
            u32::from_le_bytes(core[p..p + 4].try_into().unwrap()),
            u64_at(p + 8),
            u64_at(p + 16),
            u64_at(p + 32),
        );
        (ty == 1 && vaddr <= rsp && rsp < vaddr + filesz).then_some((off, off + filesz))
    })
}

/// The claims of an answer: (scope, file or node, line, status) for must and never.
fn claims(g: &ProgramGraph, cov: &Coverages) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut must, mut never) = (BTreeSet::new(), BTreeSet::new());
    for (file, l) in cov.global_lines(g) {
        must.extend(l.must.iter().map(|x| format!("{file}:{x}")));
        never.extend(l.never.iter().map(|x| format!("{file}:{x}")));
    }
    // Node claims, by the graph's node ids, for the same graph only: a library the truncated
    // core cannot identify leaves the graph smaller, and the ids of same-named functions
    // change (`helper@main.c#2` becomes `helper#2`); lines compare across graphs.
    let ids: Vec<&String> = (0..g.node_count() as u32)
        .map(|x| &g.node(x).ext_id)
        .collect();
    let mut all = ids.clone();
    all.sort();
    let graph_tag = format!("graph of {} nodes {:x}", all.len(), fxhash(&all));
    for (x, c) in cov.global.iter().enumerate() {
        let id = format!("{graph_tag}: {}", ids[x]);
        match c {
            Coverage::Yes => must.insert(format!("node {id}")),
            Coverage::No => never.insert(format!("node {id}")),
            Coverage::Maybe => false,
        };
    }
    (must, never)
}

/// A hash of the node ids, so node claims of different graphs never compare equal.
fn fxhash(ids: &[&String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ids.hash(&mut h);
    h.finish()
}

fn check_cut(
    name: &str,
    exe: &Path,
    bytes: &[u8],
    cut: u64,
    whole: &(BTreeSet<String>, BTreeSet<String>),
) -> Result<Crash, String> {
    let p = scratch(&format!("{}-{cut}", name.replace('/', "_")));
    std::fs::write(&p, bytes).unwrap();
    // What `truncate -s CUT` does.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(cut)
        .unwrap();
    let crash = Crash::open(exe, &p, &Default::default())
        .map_err(|e| format!("{name} cut at {cut}: failed to load: {e}"))?;
    std::fs::remove_file(&p).ok();
    if !crash.notices.iter().any(|n| n.contains("truncated")) {
        return Err(format!(
            "{name} cut at {cut}: no notice names the truncation"
        ));
    }
    if crash.graph.functions.is_empty() {
        return Ok(crash);
    }
    let cov = best_effort_coverage(&crash.graph, &crash.report)
        .map_err(|e| format!("{name} cut at {cut}: analysis failed: {e}"))?;
    let (must, never) = claims(&crash.graph, &cov);
    // Node claims only within the same graph (lines always).
    let whole_tag = whole
        .0
        .iter()
        .chain(&whole.1)
        .find_map(|c| c.split_once(": ").map(|(t, _)| t.to_string()));
    let comparable = |c: &&String| match c.split_once(": ") {
        Some((tag, _)) => Some(tag.to_string()) == whole_tag,
        None => true,
    };
    let extra_must: Vec<&String> = must.difference(&whole.0).filter(comparable).collect();
    let extra_never: Vec<&String> = never.difference(&whole.1).filter(comparable).collect();
    if !extra_must.is_empty() || !extra_never.is_empty() {
        return Err(format!(
            "{name} cut at {cut}: not a weakening of the whole core's answer: must {extra_must:?}, never {extra_never:?}"
        ));
    }
    Ok(crash)
}

#[test]
fn truncated_cores_answer_a_sound_weakening_and_name_what_is_missing() {
    let mut failures: Vec<String> = Vec::new();
    let (mut cuts, mut stacks_named) = (0, 0);
    let all = fixture_crashes();
    assert!(!all.is_empty(), "no fixture crashes");
    for fx in &all {
        let name = fx.name();
        let bytes = std::fs::read(&fx.core).unwrap();
        let len = bytes.len() as u64;
        let whole = Crash::open(&fx.exe, &fx.core, &Default::default()).unwrap();
        if whole.graph.functions.is_empty() {
            continue;
        }
        let whole_cov = best_effort_coverage(&whole.graph, &whole.report).unwrap();
        let whole_claims = claims(&whole.graph, &whole_cov);
        let notes = notes_end(&bytes);
        let mut sizes: BTreeSet<u64> = [5, 10, 25, 40, 50, 60, 75, 90, 95, 99]
            .iter()
            .map(|p| len * p / 100)
            .chain([notes, len - 1])
            .collect();
        // Cuts inside the crashing thread's stack: its outer frames (highest addresses,
        // written last) go first.
        let stack = stack_segment(&whole, &bytes);
        if let Some((a, b)) = stack {
            sizes.extend([a, a + (b - a) / 2, b - 4096, b - 1]);
        }
        for cut in sizes.into_iter().filter(|&c| c >= notes && c < len) {
            cuts += 1;
            match check_cut(&name, &fx.exe, &bytes, cut, &whole_claims) {
                Ok(c) => {
                    let stack_cut = stack.is_some_and(|(a, b)| cut < b && cut >= a);
                    if stack_cut {
                        let tid = whole.threads[0].tid;
                        if !c.notices.iter().any(|n| {
                            n.contains(&format!("thread {tid}")) && n.contains("stack memory")
                                || n.contains(&format!("the stack of thread {tid}"))
                        }) {
                            failures.push(format!(
                                "{name} cut at {cut}: the crashing thread's stack is cut but no notice names it: {:?}",
                                c.notices
                            ));
                        }
                        stacks_named += 1;
                    }
                }
                Err(e) => failures.push(e),
            }
        }
        // Below the notes: one clear error, no panic.
        let p = scratch("below-notes");
        std::fs::write(&p, &bytes[..(notes as usize - 1)]).unwrap();
        match Crash::open(&fx.exe, &p, &Default::default()) {
            Err(DumpError::Corrupt { .. }) => {}
            Err(e) => failures.push(format!("{name}: notes cut: unexpected error {e}")),
            Ok(_) => failures.push(format!("{name}: a core without all its notes loaded")),
        }
    }
    eprintln!(
        "{} fixture crashes, {cuts} truncated cores checked, {stacks_named} with the crashing stack cut",
        all.len()
    );
    assert!(stacks_named > 0, "no cut went through a stack");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The bytes a truncated core lost are unknown, not read from the executable's file instead:
/// with the executable's writable data cut off, no coverage bit of it is claimed.
#[test]
fn data_cut_from_the_core_is_not_read_from_the_executable() {
    let fx = fixture_crashes()
        .into_iter()
        .find(|f| f.name().starts_with("null_deref"))
        .expect("null_deref fixture");
    let bytes = std::fs::read(&fx.core).unwrap();
    let whole = Crash::open(&fx.exe, &fx.core, &Default::default()).unwrap();
    assert!(!whole.report.global_coverage.is_empty());
    // Cut right after the notes: the executable's data segment (with `__CC_arr_*`) is gone.
    let p = scratch("data-cut");
    std::fs::write(&p, &bytes[..notes_end(&bytes) as usize]).unwrap();
    let c = Crash::open(&fx.exe, &p, &Default::default()).unwrap();
    assert!(
        c.report.global_coverage.is_empty(),
        "coverage read from memory that is not in the core: {:?}",
        c.report.global_coverage
    );
    assert!(
        c.notices
            .iter()
            .any(|n| n.contains("coverage arrays could not be read")),
        "{:?}",
        c.notices
    );
}
