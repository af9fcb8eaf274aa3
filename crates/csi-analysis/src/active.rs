//! Active nodes and active edges (dissertation §5.2.1, Figs. 5.2–5.4): the CFG nodes and edges
//! that may have been executed on any run consistent with the stack, path traces and coverage.
//!
//! Faithful to the figures, with one soundness repair: Fig. 5.4 applies `coverage_reduce`
//! with `last = f.exit` to every function, which drops nodes that cannot reach the exit — but
//! a function that is on some thread's stack may be executing such a node right now (a crash
//! just before `abort()`). We restrict to exit-reaching nodes only for functions that are on
//! no stack; every invocation of those returned.

use std::collections::BTreeSet;

use csi_model::{FailureReport, FuncId, NodeId, ProgramGraph};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    Flow,
    Call,
    Return,
}

#[derive(Clone, Debug, Default)]
pub struct ActiveSet {
    /// Indexed by node.
    pub nodes: Vec<bool>,
    pub edges: BTreeSet<(NodeId, NodeId, EdgeKind)>,
}

impl ActiveSet {
    pub fn node_count(&self) -> usize {
        self.nodes.iter().filter(|&&b| b).count()
    }
}

/// Nodes of `f` reachable from `from` (forward or backward) within `alive`.
fn reach_in(g: &ProgramGraph, from: &[NodeId], forward: bool, alive: &[bool], out: &mut [bool]) {
    let mut stack: Vec<NodeId> = Vec::new();
    for &s in from {
        if alive[s as usize] && !out[s as usize] {
            out[s as usize] = true;
            stack.push(s);
        }
    }
    while let Some(v) = stack.pop() {
        let next = if forward {
            &g.succs[v as usize]
        } else {
            &g.preds[v as usize]
        };
        for &w in next {
            if alive[w as usize] && !out[w as usize] {
                out[w as usize] = true;
                stack.push(w);
            }
        }
    }
}

/// Fig. 5.3 `coverage_reduce` for one function over the `alive` mask: drop trace points that
/// did not run, then keep what lies between the entry and one of `last`.
fn coverage_reduce(
    g: &ProgramGraph,
    f: FuncId,
    unused: impl Fn(NodeId) -> bool,
    last: Option<&[NodeId]>,
    alive: &mut [bool],
) {
    let func = g.function(f);
    for &n in &func.nodes {
        if unused(n) {
            alive[n as usize] = false;
        }
    }
    let mut fwd = vec![false; g.node_count()];
    reach_in(g, &[func.entry], true, alive, &mut fwd);
    let mut bwd = vec![false; g.node_count()];
    match last {
        Some(last) => reach_in(g, last, false, alive, &mut bwd),
        None => bwd.iter_mut().for_each(|b| *b = true),
    }
    for &n in &func.nodes {
        alive[n as usize] &= fwd[n as usize] && bwd[n as usize];
    }
}

pub fn active_nodes_edges(g: &ProgramGraph, report: &FailureReport) -> ActiveSet {
    let n = g.node_count();
    // Unknown outer frames (a truncated core) may be activations of any function.
    let hidden_frames = report.threads.iter().any(|t| t.outer_frames_unknown);
    let mut on_stack = vec![hidden_frames; g.functions.len()];
    for t in &report.threads {
        for fr in &t.frames {
            if let Some(f) = fr.function {
                on_stack[f as usize] = true;
            }
        }
    }
    // Global coverage reduction (Fig. 5.4, first loop).
    let mut alive = vec![true; n];
    for (f, func) in g.functions.iter().enumerate() {
        let exit = [func.exit];
        let last = (!on_stack[f]).then_some(&exit[..]);
        coverage_reduce(
            g,
            f as FuncId,
            |x| report.global_coverage.get(&x) == Some(&false),
            last,
            &mut alive,
        );
    }
    let mut out = ActiveSet {
        nodes: vec![false; n],
        edges: BTreeSet::new(),
    };
    let mut calls: Vec<NodeId> = Vec::new();
    for t in &report.threads {
        for fr in &t.frames {
            let Some(f) = fr.function else { continue };
            // intra_active_nodes (Fig. 5.2) on a temporary copy.
            let mut local = alive.clone();
            coverage_reduce(
                g,
                f,
                |x| fr.local_coverage.get(&x) == Some(&false),
                Some(&fr.point),
                &mut local,
            );
            let first: Vec<NodeId> = match fr.path.first() {
                Some(&p) => vec![p],
                None => fr.point.clone(),
            };
            let mut before = vec![false; n];
            reach_in(g, &first, false, &local, &mut before);
            let func = g.function(f);
            for &x in &func.nodes {
                if before[x as usize] {
                    out.nodes[x as usize] = true;
                    for &s in &g.succs[x as usize] {
                        if before[s as usize] {
                            out.edges.insert((x, s, EdgeKind::Flow));
                        }
                    }
                }
            }
            let path: Vec<NodeId> = fr.path.iter().chain(&fr.point).copied().collect();
            for &p in &path {
                out.nodes[p as usize] = true;
            }
            for w in fr.path.windows(2) {
                out.edges.insert((w[0], w[1], EdgeKind::Flow));
            }
            if let Some(&last) = fr.path.last() {
                for &p in &fr.point {
                    out.edges.insert((last, p, EdgeKind::Flow));
                }
            }
            // Calls that may have run (and returned) before the current point.
            let end_could_repeat = |e: NodeId| {
                fr.path.contains(&e) || g.succs[e as usize].iter().any(|&s| before[s as usize])
            };
            for &x in func.nodes.iter().filter(|&&x| out.nodes[x as usize]) {
                if g.callees(x).is_empty() || (fr.point.contains(&x) && !end_could_repeat(x)) {
                    continue;
                }
                if before[x as usize] || fr.path.contains(&x) {
                    calls.push(x);
                }
            }
        }
    }
    // Forward closure into callees without crossing returns; returns are the mirror of the
    // call edges taken.
    let mut entered = vec![false; g.functions.len()];
    let mut seen = vec![false; n];
    let mut stack: Vec<NodeId> = Vec::new();
    let mut call_sites = calls;
    if hidden_frames {
        // Hidden activations began at the program entry or where library code calls in.
        let roots = g
            .program_entry
            .map(|e| g.node(e).function)
            .into_iter()
            .chain(g.async_roots.iter().copied());
        for f in roots {
            let entry = g.function(f).entry;
            if alive[entry as usize] && !std::mem::replace(&mut entered[f as usize], true) {
                seen[entry as usize] = true;
                stack.push(entry);
            }
        }
    }
    loop {
        let site = call_sites.pop();
        if site.is_none() && stack.is_empty() {
            break;
        }
        for &callee in site.map_or(&[][..], |s| g.callees(s)) {
            let site = site.expect("callees only of a site");
            let entry = g.function(callee).entry;
            if !alive[entry as usize] {
                continue;
            }
            out.edges.insert((site, entry, EdgeKind::Call));
            if !entered[callee as usize] {
                entered[callee as usize] = true;
                if !seen[entry as usize] {
                    seen[entry as usize] = true;
                    stack.push(entry);
                }
            }
            let exit = g.function(callee).exit;
            if alive[exit as usize] {
                for &ret in &g.succs[site as usize] {
                    out.edges.insert((exit, ret, EdgeKind::Return));
                }
            }
        }
        while let Some(v) = stack.pop() {
            out.nodes[v as usize] = true;
            for &s in &g.succs[v as usize] {
                if alive[s as usize] {
                    out.edges.insert((v, s, EdgeKind::Flow));
                    if !seen[s as usize] {
                        seen[s as usize] = true;
                        stack.push(s);
                    }
                }
            }
            if !g.callees(v).is_empty() {
                call_sites.push(v);
            }
        }
    }
    out
}
