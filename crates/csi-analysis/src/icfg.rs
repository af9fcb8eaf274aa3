//! The context-insensitive interprocedural graph, built exactly as csi-grissom builds it so our
//! answers are comparable with its answers: a call-site with callees in the graph goes to
//! their entries (its fall-through edge is dropped), every function exit goes to the return
//! site of every call of that function, and a synthetic crash node follows every candidate
//! crash point.
//!
//! One difference in form, not in answers: call sites that may call the same set of two or
//! more functions (indirect calls through one function-pointer type) share a *call hub* and a
//! *return hub*: sites → call hub → every callee's entry, every callee's exit → return hub →
//! every site's return. Without them K such sites and F targets make 2·K·F edges (1.9 M of
//! them in a 250k-line program whose dispatch tables hold thousands of functions); with them
//! 2·(K+F). A walk through a hub is exactly a walk over one of the edges it replaces (the
//! replaced edges are all K×F pairs), so reachability, strongly connected components,
//! dominance and every UTL answer on program nodes are unchanged. Hubs are numbered after
//! the crash node; their own answers mean nothing and callers ignore them.

use std::collections::HashMap;

use petgraph::graph::{DiGraph, NodeIndex};

use csi_model::{FuncId, NodeId, ProgramGraph};

pub struct Icfg {
    pub graph: DiGraph<(), ()>,
    /// Index of the synthetic crash node (= number of program nodes); hubs follow it.
    pub crash: u32,
}

impl Icfg {
    pub fn build(g: &ProgramGraph, crash_candidates: &[NodeId]) -> Icfg {
        let n = g.node_count();
        let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n + 1, n * 2);
        for _ in 0..=n {
            graph.add_node(());
        }
        let e = |a: u32, b: u32, graph: &mut DiGraph<(), ()>| {
            graph.add_edge(NodeIndex::new(a as usize), NodeIndex::new(b as usize), ());
        };
        // Call sites grouped by their callee set (groups in order of their first site).
        let mut group_of: HashMap<Vec<FuncId>, usize> = HashMap::new();
        let mut groups: Vec<(&[FuncId], Vec<NodeId>)> = Vec::new();
        for u in 0..n as NodeId {
            let callees = g.callees(u);
            if callees.len() < 2 {
                continue;
            }
            let mut key = callees.to_vec();
            key.sort_unstable();
            let i = *group_of.entry(key).or_insert_with(|| {
                groups.push((callees, Vec::new()));
                groups.len() - 1
            });
            groups[i].1.push(u);
        }
        // Sites whose call and return edges go through hubs.
        let mut hubbed = vec![false; n];
        for (callees, sites) in &groups {
            if sites.len() < 2 {
                continue;
            }
            let call_hub = graph.add_node(()).index() as u32;
            let return_hub = graph.add_node(()).index() as u32;
            for &f in *callees {
                let f = g.function(f);
                e(call_hub, f.entry, &mut graph);
                e(f.exit, return_hub, &mut graph);
            }
            for &site in sites {
                hubbed[site as usize] = true;
                e(site, call_hub, &mut graph);
                for &ret in &g.succs[site as usize] {
                    e(return_hub, ret, &mut graph);
                }
            }
        }
        let callers = g.callers();
        for (u, node) in g.nodes.iter().enumerate() {
            let u = u as u32;
            let callees = g.callees(u);
            if !callees.is_empty() {
                if !hubbed[u as usize] {
                    for &f in callees {
                        e(u, g.function(f).entry, &mut graph);
                    }
                }
            } else {
                for &s in &g.succs[u as usize] {
                    e(u, s, &mut graph);
                }
            }
            if g.function(node.function).exit == u {
                for &site in &callers[node.function as usize] {
                    if hubbed[site as usize] {
                        continue;
                    }
                    for &ret in &g.succs[site as usize] {
                        e(u, ret, &mut graph);
                    }
                }
            }
        }
        let crash = n as u32;
        for &c in crash_candidates {
            e(c, crash, &mut graph);
        }
        Icfg { graph, crash }
    }
}
