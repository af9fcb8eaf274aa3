//! The context-insensitive interprocedural graph, built exactly as csi-grissom builds it so our
//! answers are comparable with its answers: a call-site with callees in the graph goes to
//! their entries (its fall-through edge is dropped), every function exit goes to the return
//! site of every call of that function, and a synthetic crash node follows every candidate
//! crash point.

use petgraph::graph::{DiGraph, NodeIndex};

use csi_model::{NodeId, ProgramGraph};

pub struct Icfg {
    pub graph: DiGraph<(), ()>,
    /// Index of the synthetic crash node (= number of program nodes).
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
        let callers = g.callers();
        for (u, node) in g.nodes.iter().enumerate() {
            let u = u as u32;
            let callees = g.callees(u);
            if !callees.is_empty() {
                for &f in callees {
                    e(u, g.function(f).entry, &mut graph);
                }
            } else {
                for &s in &g.succs[u as usize] {
                    e(u, s, &mut graph);
                }
            }
            if g.function(node.function).exit == u {
                for &site in &callers[node.function as usize] {
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
