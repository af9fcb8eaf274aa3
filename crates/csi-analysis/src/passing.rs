//! What a run that did not crash executed, from its global coverage alone (csi-cc's
//! `CSI_COVERAGE_OUT` files): the probed nodes' bits, closed under two sound rules —
//!
//! - a node that ran had each of its function's entry dominators run before it (an
//!   activation reaches a node only through them), and a direct call that ran entered its
//!   one callee;
//! - a node no path from its function's entry reaches without passing a node that never ran
//!   never ran either (a function whose entry never ran: none of it ran).
//!
//! Both assume what the crash analysis assumes (no `longjmp` into the middle of a function);
//! a function whose observations contradict them (a node that ran although unreachable) gets
//! no derived "never". Everything else is Maybe.

use std::collections::BTreeMap;

use csi_model::{Coverage, NodeId, ProgramGraph};
use petgraph::algo::dominators::simple_fast;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::lines::{project_lines_cut, FileLines};

/// The per-program facts every passing run's projection uses (built once per program graph).
pub struct PassingProjector<'g> {
    g: &'g ProgramGraph,
    /// Immediate intraprocedural dominator of each node (`None`: a function entry, or
    /// unreachable from it).
    idom: Vec<Option<NodeId>>,
}

impl<'g> PassingProjector<'g> {
    pub fn new(g: &'g ProgramGraph) -> Self {
        let mut idom = vec![None; g.node_count()];
        for f in &g.functions {
            let index: BTreeMap<NodeId, usize> =
                f.nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
            let mut h = DiGraph::<(), ()>::with_capacity(f.nodes.len(), f.nodes.len());
            for _ in &f.nodes {
                h.add_node(());
            }
            for (i, &n) in f.nodes.iter().enumerate() {
                for s in &g.succs[n as usize] {
                    if let Some(&j) = index.get(s) {
                        h.add_edge(NodeIndex::new(i), NodeIndex::new(j), ());
                    }
                }
            }
            let Some(&root) = index.get(&f.entry) else {
                continue;
            };
            let doms = simple_fast(&h, NodeIndex::new(root));
            for (i, &n) in f.nodes.iter().enumerate() {
                if let Some(d) = doms.immediate_dominator(NodeIndex::new(i)) {
                    idom[n as usize] = Some(f.nodes[d.index()]);
                }
            }
        }
        PassingProjector { g, idom }
    }

    /// Every node's answer for a run whose probes say `bits` (node → ran).
    pub fn node_answers(&self, bits: &BTreeMap<NodeId, bool>) -> Vec<Coverage> {
        let g = self.g;
        let mut out = vec![Coverage::Maybe; g.node_count()];
        for (&n, &ran) in bits {
            if let Some(c) = out.get_mut(n as usize) {
                *c = if ran { Coverage::Yes } else { Coverage::No };
            }
        }
        // Ran: dominators, and the one callee of a direct call.
        let mut work: Vec<NodeId> = bits.iter().filter(|(_, &r)| r).map(|(&n, _)| n).collect();
        while let Some(n) = work.pop() {
            let mut next = self.idom.get(n as usize).copied().flatten();
            let node = g.node(n);
            let callee = node
                .call
                .as_ref()
                .filter(|c| !c.indirect && c.callees.len() == 1)
                .map(|c| g.function(c.callees[0]).entry);
            for m in next.take().into_iter().chain(callee) {
                if out[m as usize] == Coverage::Maybe {
                    out[m as usize] = Coverage::Yes;
                    work.push(m);
                }
            }
        }
        // Never: unreachable from the entry around nodes that never ran.
        for f in &g.functions {
            let mut reached = vec![false; g.node_count()];
            let mut stack = Vec::new();
            if out[f.entry as usize] != Coverage::No {
                reached[f.entry as usize] = true;
                stack.push(f.entry);
            }
            while let Some(n) = stack.pop() {
                for &s in &g.succs[n as usize] {
                    if !reached[s as usize] && out[s as usize] != Coverage::No {
                        reached[s as usize] = true;
                        stack.push(s);
                    }
                }
            }
            let consistent = f
                .nodes
                .iter()
                .all(|&n| reached[n as usize] || out[n as usize] != Coverage::Yes);
            if consistent {
                for &n in &f.nodes {
                    if !reached[n as usize] {
                        out[n as usize] = Coverage::No;
                    }
                }
            }
        }
        out
    }

    /// The run's answer per source line.
    pub fn lines(&self, bits: &BTreeMap<NodeId, bool>) -> BTreeMap<String, FileLines> {
        let answers = self.node_answers(bits);
        project_lines_cut(
            self.g,
            answers
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i as NodeId, c)),
            &[],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csi_model::{Node, NodeKind, ProgramGraphBuilder};

    /// entry → a → {b, c} → d → exit, each node on its own line.
    fn diamond() -> (ProgramGraph, [NodeId; 6]) {
        let mut b = ProgramGraphBuilder::new();
        let file = b.intern_file("x.c");
        let f = b.add_function("f", Some(file));
        let mut ids = [0; 6];
        for (k, kind) in [
            NodeKind::Entry,
            NodeKind::Expression,
            NodeKind::Expression,
            NodeKind::Expression,
            NodeKind::Expression,
            NodeKind::Exit,
        ]
        .into_iter()
        .enumerate()
        {
            let mut n = Node::new(format!("n{k}"), f, kind);
            n.file = Some(file);
            n.positions = vec![csi_model::SourcePos {
                line: 10 + k as u32,
                column: 1,
            }];
            ids[k] = b.add_node(n).unwrap();
        }
        for (x, y) in [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)] {
            b.add_flow_edge(ids[x], ids[y]);
        }
        (b.build().unwrap(), ids)
    }

    #[test]
    fn dominators_ran_and_blocked_nodes_never_did() {
        let (g, n) = diamond();
        let p = PassingProjector::new(&g);
        // c ran, b never did: entry and a ran (they dominate c); d and exit unknown.
        let bits = [(n[2], false), (n[3], true)].into_iter().collect();
        let a = p.node_answers(&bits);
        use Coverage::*;
        assert_eq!(a, vec![Yes, Yes, No, Yes, Maybe, Maybe]);
        // a never ran: everything after it never did.
        let a = p.node_answers(&[(n[1], false)].into_iter().collect());
        assert_eq!(a, vec![Maybe, No, No, No, No, No]);
        // Contradiction (d ran, a never did): no derived "never".
        let a = p.node_answers(&[(n[1], false), (n[4], true)].into_iter().collect());
        assert_eq!(a[2], Maybe);
        let l = p.lines(&[(n[3], true), (n[2], false)].into_iter().collect());
        assert_eq!(l["x.c"].must, vec![10, 11, 13]);
        assert_eq!(l["x.c"].never, vec![12]);
    }
}
