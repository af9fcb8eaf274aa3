//! Context-sensitive structure of the program: which calls can return, and the per-function
//! "summary" graphs in which a call-site's fall-through edge exists only if some callee can
//! complete. Everything here respects nodes known never to have run.

use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

use csi_model::{Coverage, FuncId, NodeId, ProgramGraph};

use crate::utl::{Inconsistent, UtlProblem};

pub struct Context<'g> {
    pub graph: &'g ProgramGraph,
    /// Nodes that never ran anywhere in the run.
    pub never: Vec<bool>,
    /// Per function: some entry→exit path exists whose calls all can complete (least fixpoint).
    pub completes: Vec<bool>,
}

impl<'g> Context<'g> {
    pub fn new(graph: &'g ProgramGraph, never: Vec<bool>) -> Self {
        let nf = graph.functions.len();
        let mut ctx = Context {
            graph,
            never,
            completes: vec![false; nf],
        };
        let callers = graph.callers();
        let mut queued = vec![true; nf];
        let mut work: Vec<FuncId> = (0..nf as FuncId).collect();
        while let Some(f) = work.pop() {
            queued[f as usize] = false;
            if ctx.completes[f as usize] || !ctx.exit_reachable(f) {
                continue;
            }
            ctx.completes[f as usize] = true;
            for &site in &callers[f as usize] {
                let caller = graph.node(site).function;
                if !ctx.completes[caller as usize] && !queued[caller as usize] {
                    queued[caller as usize] = true;
                    work.push(caller);
                }
            }
        }
        ctx
    }

    /// Can execution continue past call-site `u` in its own function? Calls to code outside
    /// the graph are assumed to return.
    pub fn call_returns(&self, u: NodeId) -> bool {
        let callees = self.graph.callees(u);
        callees.is_empty() || callees.iter().any(|&f| self.completes[f as usize])
    }

    /// Flow successors of `u` in its function's summary graph.
    pub fn summary_succs(&self, u: NodeId) -> &'g [NodeId] {
        if self.call_returns(u) {
            &self.graph.succs[u as usize]
        } else {
            &[]
        }
    }

    fn exit_reachable(&self, f: FuncId) -> bool {
        let func = self.graph.function(f);
        if self.never[func.entry as usize] {
            return false;
        }
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![func.entry];
        seen.insert(func.entry);
        while let Some(v) = stack.pop() {
            if v == func.exit {
                return true;
            }
            for &w in self.summary_succs(v) {
                if !self.never[w as usize] && seen.insert(w) {
                    stack.push(w);
                }
            }
        }
        false
    }

    /// Best-effort coverage of one activation of `f` from its entry until it first reaches
    /// one of `targets` (intraprocedural, calls summarized), honouring `vectors` (nodes of `f`
    /// observed in this activation, in order) and the extra removed nodes.
    pub fn activation_becp(
        &self,
        f: FuncId,
        targets: &[NodeId],
        extra_removed: &dyn Fn(NodeId) -> bool,
        vectors: &[Vec<NodeId>],
    ) -> Result<HashMap<NodeId, Coverage>, Inconsistent> {
        let func = self.graph.function(f);
        let mut local: HashMap<NodeId, u32> = HashMap::with_capacity(func.nodes.len());
        for (i, &n) in func.nodes.iter().enumerate() {
            local.insert(n, i as u32);
        }
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(func.nodes.len() + 1, 0);
        for _ in 0..=func.nodes.len() {
            g.add_node(());
        }
        let sink = func.nodes.len() as u32;
        for (i, &n) in func.nodes.iter().enumerate() {
            for &s in self.summary_succs(n) {
                g.add_edge(NodeIndex::new(i), NodeIndex::new(local[&s] as usize), ());
            }
        }
        for t in targets {
            g.add_edge(
                NodeIndex::new(local[t] as usize),
                NodeIndex::new(sink as usize),
                (),
            );
        }
        let mut removed: Vec<bool> = func
            .nodes
            .iter()
            .map(|&n| self.never[n as usize] || extra_removed(n))
            .collect();
        removed.push(false);
        let problem = UtlProblem {
            graph: &g,
            entry: local[&func.entry],
            crash: sink,
            removed,
            vectors: vectors
                .iter()
                .map(|v| v.iter().map(|n| local[n]).collect())
                .collect(),
        };
        let status = problem.best_effort()?;
        Ok(func
            .nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, status[i]))
            .collect())
    }

    /// Nodes of one complete invocation of `f` (entry to exit): Yes = on every such run.
    pub fn complete_invocation(&self, f: FuncId) -> Option<HashMap<NodeId, Coverage>> {
        if !self.completes[f as usize] {
            return None;
        }
        let exit = self.graph.function(f).exit;
        self.activation_becp(f, &[exit], &|_| false, &[]).ok()
    }
}
