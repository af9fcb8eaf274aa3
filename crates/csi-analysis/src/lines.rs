//! Projection of node answers onto source lines (DESIGN §3): a line is **must** if some node
//! on it surely ran, **never** if every node on it surely did not, **may** otherwise; it is
//! also **partial** when it has both surely-run and never-run nodes (so `partial ⊆ must`).
//! Lines without code get nothing.
//!
//! Optimized code is different: an instruction may keep the line of a statement it was moved
//! out of (hoisted address arithmetic, a loop's exit value computed without the loop), and
//! the executed copy of a line may have lost its line entirely (folded into an inlined copy)
//! while an unexecuted copy kept it. So a line with a node of an optimized function is
//! **must** only if a call that optimization cannot move (csi-cc's `anchored` positions: it
//! may write memory, throw or not return) surely ran there, and
//! **never** only if all its nodes are in functions that never started and were not inlined
//! anywhere, and no copy of the subprogram each position's code comes from (csi-cc records
//! inlined scopes) is in a function that may have started; everything else there is **may**.

use std::collections::BTreeMap;

use csi_model::{Coverage, LineStatus, NodeId, ProgramGraph, SourcePos};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLines {
    pub must: Vec<u32>,
    pub may: Vec<u32>,
    pub never: Vec<u32>,
    pub partial: Vec<u32>,
}

impl FileLines {
    pub fn status(&self, line: u32) -> Option<LineStatus> {
        if self.must.binary_search(&line).is_ok() {
            Some(LineStatus::Must)
        } else if self.never.binary_search(&line).is_ok() {
            Some(LineStatus::Never)
        } else if self.may.binary_search(&line).is_ok() {
            Some(LineStatus::May)
        } else {
            None
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Seen {
    yes: bool,
    no: bool,
    maybe: bool,
    /// Some node on the line is in an optimized function.
    optimized: bool,
    /// Some node on the line is an optimized function's, and that function may have run
    /// (or has inlined copies elsewhere).
    optimized_unsure_never: bool,
}

/// Projects `(node, answer)` pairs onto lines, keyed by file name.
pub fn project_lines(
    g: &ProgramGraph,
    answers: impl IntoIterator<Item = (NodeId, Coverage)>,
) -> BTreeMap<String, FileLines> {
    project_lines_cut(g, answers, &[])
}

/// Lines of a node that ran only up to a position: the point node of a frame that stopped
/// inside it (the crash). Lines of its instructions after `pos` are not known to have run.
fn lines_up_to(g: &ProgramGraph, node: NodeId, pos: SourcePos) -> Vec<u32> {
    let n = g.node(node);
    let ps = &n.positions;
    // Stopped at an unknown place in the node (line 0: code instrumented before
    // optimization, or a pc that matches no node — its frame's point is then every candidate
    // node): none of its lines surely ran in this activation, at any optimization level. A
    // stop that cut nothing here would make the lines after the crash must (the rest of a
    // `catch` block). Other activations of the node are not cut: `Coverages::lines` adds back
    // every line some frame surely ran (the outer frames of a recursion).
    if ps.is_empty() || pos.line == 0 {
        return Vec::new();
    }
    let cut = ps
        .iter()
        .position(|p| *p == pos)
        .or_else(|| ps.iter().position(|p| p.line == pos.line))
        .unwrap_or(ps.len());
    ps[..=cut.min(ps.len().saturating_sub(1))]
        .iter()
        .map(|p| p.line)
        .filter(|&l| l > 0)
        .collect()
}

/// A frame stopped at `pos` in `node`: the instruction there was executing (a call, or the
/// faulting access), so its line ran whatever optimization did around it.
fn stopped_at(cuts: &[(NodeId, SourcePos)], node: NodeId, pos: SourcePos) -> bool {
    cuts.iter().any(|&(n, p)| n == node && p == pos)
}

/// Subprogram names (and linkage names) some copy of which may have run: functions that
/// may have started (or have inlined copies DWARF knows of), every subprogram inlined into
/// one of them, and — for units csi-cc optimized — the callees inlined without a trace: at
/// -O1 and up an inlined callee can leave no instruction and no DWARF of its own (folded into
/// its caller's lines), while a copy that never ran keeps the line. Such a callee shows in
/// the counts: a function that may have started has fewer call sites of it than it had
/// before optimization plus those its inlined callees brought ([`inlined_without_trace`]).
fn subprograms_that_may_have_run<'g>(
    g: &'g ProgramGraph,
    entry_no: &[bool],
) -> std::collections::HashSet<&'g str> {
    let mut out = std::collections::HashSet::new();
    // Names whose every callee, transitively, may have been inlined (no exact counts).
    let mut closure_roots: Vec<&'g str> = Vec::new();
    for (i, f) in g.functions.iter().enumerate() {
        if entry_no[i] && !f.inlined_elsewhere {
            continue;
        }
        out.insert(f.name.as_str());
        if let Some(l) = &f.linkage_name {
            out.insert(l.as_str());
        }
        out.extend(f.inlined.iter().map(String::as_str));
        match g.calls_before_optimization.get(&f.name) {
            Some(before) if before.exact => {
                inlined_without_trace(g, f, before, &mut out, &mut closure_roots)
            }
            _ => {
                closure_roots.extend(f.optimized_away_calls.iter().map(String::as_str));
                if !f.optimized_away_calls.is_empty() {
                    closure_roots.extend(f.inlined.iter().map(String::as_str));
                }
            }
        }
    }
    let mut expanded = std::collections::HashSet::new();
    let mut any_address_taken = false;
    while let Some(name) = closure_roots.pop() {
        if name == "*" {
            if !any_address_taken {
                any_address_taken = true;
                closure_roots.extend(
                    g.address_taken_before_optimization
                        .iter()
                        .map(String::as_str),
                );
            }
            continue;
        }
        out.insert(name);
        if expanded.insert(name) {
            if let Some(before) = g.calls_before_optimization.get(name) {
                closure_roots.extend(before.counts.keys().map(String::as_str));
            }
        }
    }
    out
}

/// Callees of `f` inlined (or deleted) by optimization, from call-site counts: `f` had
/// `before[T]` direct calls of T; each copy of an inlined callee S brought S's own calls;
/// `f`'s optimized body (its CFG's call nodes) has `after[T]`. Fewer after than expected means
/// that many copies of T were inlined (or deleted — the same for a sound answer), and their
/// calls are expected in turn. Indirect calls (`*`) that vanished may have become direct and
/// been inlined: any address-taken function, with everything it calls (`closure_roots`), as
/// does a callee inlined in more copies than a recursion bound.
fn inlined_without_trace<'g>(
    g: &'g ProgramGraph,
    f: &'g csi_model::Function,
    before: &'g csi_model::graph::CallsBefore,
    out: &mut std::collections::HashSet<&'g str>,
    closure_roots: &mut Vec<&'g str>,
) {
    const MAX_COPIES: i64 = 64;
    let mut after: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for &n in &f.nodes {
        if let Some(c) = &g.node(n).call {
            let callee = if c.indirect {
                Some("*")
            } else {
                c.name.as_deref()
            };
            if let Some(callee) = callee {
                *after.entry(callee).or_default() += 1;
            }
        }
    }
    let mut expected: std::collections::HashMap<&'g str, i64> = before
        .counts
        .iter()
        .map(|(k, &n)| (k.as_str(), n as i64))
        .collect();
    let mut copies: std::collections::HashMap<&'g str, i64> = std::collections::HashMap::new();
    let mut queue: Vec<&'g str> = expected.keys().copied().collect();
    while let Some(t) = queue.pop() {
        let lost = expected[t] - after.get(t).copied().unwrap_or(0);
        let had = copies.get(t).copied().unwrap_or(0);
        if lost <= had {
            continue;
        }
        copies.insert(t, lost);
        if t == "*" || lost > MAX_COPIES {
            closure_roots.push(t);
            continue;
        }
        out.insert(t);
        match g.calls_before_optimization.get(t) {
            Some(b) if b.exact => {
                for (u, &c) in &b.counts {
                    *expected.entry(u.as_str()).or_default() += (lost - had) * c as i64;
                    queue.push(u.as_str());
                }
            }
            Some(_) => closure_roots.push(t),
            None => {}
        }
    }
}

/// Lines (file, line) of the code before optimization of every subprogram that may have
/// run (csi-cc's `code_before_optimization`): a template instantiation or a header's
/// `static` copy can vanish into its callers without an instruction or DWARF of its own,
/// while another instantiation that never ran keeps the same source line.
fn lines_that_may_have_run<'g>(
    g: &'g ProgramGraph,
    alive: &std::collections::HashSet<&'g str>,
) -> std::collections::HashSet<(&'g str, u32)> {
    let mut out = std::collections::HashSet::new();
    if g.code_before_optimization.is_empty() {
        return out;
    }
    for name in alive {
        for (file, runs) in g.code_before_optimization.get(*name).into_iter().flatten() {
            for &[a, b] in runs {
                out.extend((a..=b).map(|l| (file.as_str(), l)));
            }
        }
    }
    out
}

/// [`project_lines`] where some Yes nodes ran only partly (`cuts`: node and the position it
/// stopped at). Their later lines count as Maybe unless known otherwise.
pub fn project_lines_cut(
    g: &ProgramGraph,
    answers: impl IntoIterator<Item = (NodeId, Coverage)>,
    cuts: &[(NodeId, SourcePos)],
) -> BTreeMap<String, FileLines> {
    let mut per_file: BTreeMap<u32, BTreeMap<u32, Seen>> = BTreeMap::new();
    let answers: Vec<(NodeId, Coverage)> = answers.into_iter().collect();
    // Functions whose entry surely did not run (per these answers).
    let mut entry_no = vec![false; g.functions.len()];
    for &(node, c) in &answers {
        let f = g.node(node).function;
        if g.function(f).entry == node && c == Coverage::No {
            entry_no[f as usize] = true;
        }
    }
    let any_entry_no = entry_no.contains(&true);
    // Both sets are computed on first use: a frame's answers rarely say an entry did not run,
    // and then every subprogram may have run and no line of optimized code is never.
    let may_have_run = std::cell::OnceCell::new();
    let may_have_run = || may_have_run.get_or_init(|| subprograms_that_may_have_run(g, &entry_no));
    let lines_may_have_run = std::cell::OnceCell::new();
    let lines_may_have_run =
        || lines_may_have_run.get_or_init(|| lines_that_may_have_run(g, may_have_run()));
    for (node, c) in answers {
        let Some(file) = g.file_of(node) else {
            continue;
        };
        let lines = per_file.entry(file).or_default();
        let ran_to: Option<Vec<u32>> = (c == Coverage::Yes)
            .then(|| {
                let mut mine = cuts.iter().filter(|(n, _)| *n == node).peekable();
                mine.peek()
                    .is_some()
                    .then(|| mine.flat_map(|&(n, p)| lines_up_to(g, n, p)).collect())
            })
            .flatten();
        let n = g.node(node);
        let func = g.function(n.function);
        for (k, p) in n.positions.iter().enumerate().filter(|(_, p)| p.line > 0) {
            let line = p.line;
            let s = lines.entry(line).or_default();
            let c = match &ran_to {
                Some(ok) if !ok.contains(&line) => Coverage::Maybe,
                // A position held only by an unconditional branch may have no instruction.
                _ if c == Coverage::Yes && n.weak.contains(&(k as u32)) => Coverage::Maybe,
                // Optimized code: only a call optimization cannot move proves its line ran;
                // other instructions may have been hoisted, speculated or if-converted out
                // of a statement that did not run (`a--` of a loop that never iterated,
                // rewritten as the loop's exit value).
                _ if c == Coverage::Yes
                    && func.optimized
                    && !n.anchored.contains(&(k as u32))
                    && !stopped_at(cuts, node, *p) =>
                {
                    Coverage::Maybe
                }
                _ => c,
            };
            match c {
                Coverage::Yes => s.yes = true,
                Coverage::No => s.no = true,
                Coverage::Maybe => s.maybe = true,
            }
            // The subprogram this position's code comes from: any copy of it that may have
            // run may have run this line with no instruction of its own there.
            let sub = match n.scopes.get(k) {
                Some(&i) if i > 0 => func.inlined.get(i as usize - 1).map(String::as_str),
                _ => None,
            };
            // Older records of unoptimized code dropped a node's positions in other files:
            // a copy of an always-inlined subprogram that ran may have no node on its lines.
            let positions_dropped = !func.positions_complete && sub.is_some();
            if func.optimized || positions_dropped {
                s.optimized = true;
                let alive = match sub {
                    Some(sub) => !any_entry_no || may_have_run().contains(sub),
                    None => {
                        !entry_no[n.function as usize]
                            || func.inlined_elsewhere
                            || may_have_run().contains(func.name.as_str())
                            || func
                                .linkage_name
                                .as_deref()
                                .is_some_and(|l| may_have_run().contains(l))
                    }
                };
                if alive || lines_may_have_run().contains(&(g.file_name(file), line)) {
                    s.optimized_unsure_never = true;
                }
            }
        }
    }
    per_file
        .into_iter()
        .map(|(file, lines)| {
            let mut out = FileLines::default();
            for (line, s) in lines {
                if s.optimized && !s.yes && s.optimized_unsure_never {
                    out.may.push(line);
                    continue;
                }
                if s.yes {
                    out.must.push(line);
                    if s.no {
                        out.partial.push(line);
                    }
                } else if s.no && !s.maybe {
                    out.never.push(line);
                } else {
                    out.may.push(line);
                }
            }
            (g.file_name(file).to_string(), out)
        })
        .collect()
}

/// Nodes whose lines include `line` in the file `file` names (`csi_model::paths::same_source`).
pub fn nodes_on_line(g: &ProgramGraph, file: &str, line: u32) -> Vec<NodeId> {
    (0..g.node_count() as NodeId)
        .filter(|&n| {
            g.file_of(n)
                .is_some_and(|f| csi_model::paths::same_source(g.file_name(f), file))
                && g.node(n).lines().any(|l| l == line)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use csi_model::{Node, NodeKind, ProgramGraphBuilder, SourcePos};

    #[test]
    fn must_may_never_partial() {
        let mut b = ProgramGraphBuilder::new();
        let file = b.intern_file("/src/a.c");
        let f = b.add_function("main", Some(file));
        let mut ids = Vec::new();
        for (i, (kind, lines)) in [
            (NodeKind::Entry, vec![]),
            (NodeKind::Expression, vec![1, 2]),
            (NodeKind::Expression, vec![2, 3]),
            (NodeKind::Expression, vec![4]),
            (NodeKind::Exit, vec![5]),
        ]
        .into_iter()
        .enumerate()
        {
            let mut n = Node::new(format!("n{i}"), f, kind);
            n.positions = lines
                .into_iter()
                .map(|line| SourcePos { line, column: 0 })
                .collect();
            ids.push(b.add_node(n).unwrap());
        }
        let g = b.build().unwrap();
        use Coverage::*;
        let answers = vec![
            (ids[0], Yes),
            (ids[1], Yes),
            (ids[2], No),
            (ids[3], No),
            (ids[4], Maybe),
        ];
        let lines = project_lines(&g, answers);
        let a = &lines["/src/a.c"];
        assert_eq!(a.must, vec![1, 2]);
        assert_eq!(a.partial, vec![2]);
        assert_eq!(a.never, vec![3, 4]);
        assert_eq!(a.may, vec![5]);
        assert_eq!(a.status(2), Some(LineStatus::Must));
        assert_eq!(a.status(9), None);
        assert_eq!(nodes_on_line(&g, "a.c", 2), vec![ids[1], ids[2]]);
        assert!(nodes_on_line(&g, "b/a.c", 2).is_empty());
        assert!(!csi_model::paths::same_source("/src/xa.c", "a.c"));
    }

    #[test]
    fn optimized_lines_are_must_only_from_anchoring_calls_or_a_stop() {
        let mut b = ProgramGraphBuilder::new();
        let file = b.intern_file("/src/o.c");
        let f = b.add_function("main", Some(file));
        b.function_mut(f).optimized = true;
        let mut ids = Vec::new();
        // Node 1: line 3 held by a call (anchored), line 4 by arithmetic that may have been
        // hoisted out of a loop that never ran. Node 2: line 6, where the frame stopped.
        for (i, (kind, lines, anchored)) in [
            (NodeKind::Entry, vec![], vec![]),
            (NodeKind::CallSite, vec![3, 4], vec![0u32]),
            (NodeKind::Expression, vec![5, 6, 7], vec![]),
            (NodeKind::Exit, vec![], vec![]),
        ]
        .into_iter()
        .enumerate()
        {
            let mut n = Node::new(format!("n{i}"), f, kind);
            n.positions = lines
                .into_iter()
                .map(|line| SourcePos { line, column: 1 })
                .collect();
            n.anchored = anchored;
            ids.push(b.add_node(n).unwrap());
        }
        let g = b.build().unwrap();
        use Coverage::*;
        let answers = vec![(ids[0], Yes), (ids[1], Yes), (ids[2], Yes), (ids[3], No)];
        let stop = [(ids[2], SourcePos { line: 6, column: 1 })];
        let lines = project_lines_cut(&g, answers, &stop);
        let o = &lines["/src/o.c"];
        assert_eq!(o.must, vec![3, 6]);
        assert_eq!(o.may, vec![4, 5, 7]);
        assert!(o.never.is_empty());
    }

    /// -O0 code the always-inliner changed: `fast` (never started) and `lazy` (ran) both
    /// have the header helper `store` inlined. Records before csi-cc kept every file's
    /// positions (`positions_complete` false) may lack `lazy`'s copy of line 10, so `fast`'s
    /// copy cannot make it never; with complete positions it can.
    #[test]
    fn always_inlined_lines_of_older_records_are_not_never() {
        let build = |complete: bool| {
            let mut b = ProgramGraphBuilder::new();
            let c = b.intern_file("/src/c.c");
            let h = b.intern_file("/src/h.h");
            let mut entries = Vec::new();
            for name in ["fast", "lazy"] {
                let f = b.add_function(name, Some(c));
                b.function_mut(f).inlined = vec!["store".into()];
                b.function_mut(f).positions_complete = complete;
                let entry = b.add_node(Node::new(format!("{name}.entry"), f, NodeKind::Entry));
                entries.push(entry.unwrap());
                if name == "fast" {
                    let mut n = Node::new("fast.store", f, NodeKind::Expression);
                    n.file = Some(h);
                    n.positions = vec![SourcePos {
                        line: 10,
                        column: 1,
                    }];
                    n.scopes = vec![1];
                    entries.push(b.add_node(n).unwrap());
                }
                b.add_node(Node::new(format!("{name}.exit"), f, NodeKind::Exit))
                    .unwrap();
            }
            (b.build().unwrap(), entries)
        };
        for complete in [false, true] {
            let (g, ids) = build(complete);
            use Coverage::*;
            // fast's entry and its copy: No; lazy's entry: Yes.
            let lines = project_lines(&g, vec![(ids[0], No), (ids[1], No), (ids[2], Yes)]);
            let h = &lines["/src/h.h"];
            let want = if complete {
                Some(LineStatus::Never)
            } else {
                Some(LineStatus::May)
            };
            assert_eq!(h.status(10), want, "positions complete: {complete}");
        }
    }

    /// Call-site accounting: `f` called `g` twice and `h` once before optimization; one call
    /// of `g` is left, so one copy of `g` was inlined and brought its call of `h`, of which
    /// `f` still has two — `h` was not inlined. `k` (never called by `f`) is not either, and
    /// the indirect call that vanished from `f` lets every address-taken function in.
    #[test]
    fn inlined_callees_are_counted_by_call_sites() {
        use csi_model::graph::{Call, CallsBefore};
        let mut b = ProgramGraphBuilder::new();
        let file = b.intern_file("/src/o.c");
        let f = b.add_function("f", Some(file));
        b.function_mut(f).optimized = true;
        let calls = |name: &str, b: &mut ProgramGraphBuilder| {
            let mut n = Node::new(format!("f.{name}.{}", rand_id()), f, NodeKind::CallSite);
            n.call = Some(Call {
                name: Some(name.into()),
                ..Default::default()
            });
            b.add_node(n).unwrap();
        };
        b.add_node(Node::new("f.entry", f, NodeKind::Entry))
            .unwrap();
        calls("g", &mut b);
        calls("h", &mut b);
        calls("h", &mut b);
        b.add_node(Node::new("f.exit", f, NodeKind::Exit)).unwrap();
        let counts = |v: &[(&str, u32)]| CallsBefore {
            counts: v.iter().map(|&(k, n)| (k.to_string(), n)).collect(),
            exact: true,
        };
        let mut g = b.build().unwrap();
        g.calls_before_optimization
            .insert("f".into(), counts(&[("g", 2), ("h", 1)]));
        g.calls_before_optimization
            .insert("g".into(), counts(&[("h", 1), ("k", 0)]));
        let alive = subprograms_that_may_have_run(&g, &[false]);
        assert!(alive.contains("g"));
        assert!(!alive.contains("h"));
        assert!(!alive.contains("k"));
        // An indirect call that was there before optimization and is gone now.
        g.calls_before_optimization
            .insert("f".into(), counts(&[("g", 1), ("h", 2), ("*", 1)]));
        g.address_taken_before_optimization = vec!["k".into()];
        let alive = subprograms_that_may_have_run(&g, &[false]);
        assert!(!alive.contains("g") && !alive.contains("h"));
        assert!(alive.contains("k"));
    }

    fn rand_id() -> u32 {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        N.fetch_add(1, Ordering::Relaxed)
    }
}
