//! Unreliable trace languages over a context-insensitive graph (dissertation §6.5).
//!
//! A [`UtlProblem`] is a directed graph with an entry and a crash node, a set of removed nodes
//! (negated single-symbol constraints, §6.5.3) and constraint vectors (each must occur as a
//! subsequence of the entry→crash walk). Two solvers:
//!
//! - [`reference_possible`]: Figs. 6.6–6.7 as written — forward data flow over the
//!   condensation with `consume` and `merge`. One query per call; used as the oracle in tests.
//! - [`UtlProblem::best_effort`]: all nodes' Yes/No/Maybe at once (§6.7 BECP) in near-linear
//!   time. The required SCCs (entry, crash, every vector symbol) must form a chain
//!   `r0 < r1 < … < rk` under reachability in the condensation, with every vector ordered along
//!   it; then "may n run" ⇔ n's SCC lies between some `ri` and `ri+1` (one forward and one
//!   backward labelling pass), and "must n run" ⇔ n dominates `rk` from `r0` in the graph
//!   where each `ri` is contracted and edges stay inside their segment (one dominator tree).
//!   Only non-required nodes inside a non-trivial required SCC need a local re-check (the SCC
//!   may fall apart without them); strong articulation points filter those checks.

use petgraph::algo::dominators::simple_fast;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{EdgeRef, NodeFiltered, Reversed};
use petgraph::Direction;

use csi_model::Coverage;

/// Why no execution is consistent with the constraints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inconsistent {
    #[error("the entry or the crash point was removed")]
    EndpointRemoved,
    #[error("the crash point is unreachable from the entry")]
    CrashUnreachable,
    #[error("observed node {0} cannot lie on any path from the entry to the crash")]
    RequiredDead(u32),
    #[error("observed nodes {0} and {1} cannot both lie on one path")]
    Unordered(u32, u32),
    #[error("observation order {0} before {1} is impossible")]
    OrderViolated(u32, u32),
}

/// A UTL emptiness / BECP instance. Node ids are `0..graph.node_count()`.
pub struct UtlProblem<'g> {
    pub graph: &'g DiGraph<(), ()>,
    pub entry: u32,
    pub crash: u32,
    /// `removed[n]`: n is known never to have run (deleted before solving).
    pub removed: Vec<bool>,
    /// Each vector must be a subsequence of the walk.
    pub vectors: Vec<Vec<u32>>,
}

fn ni(n: u32) -> NodeIndex {
    NodeIndex::new(n as usize)
}

/// Reachability labelling of the live part of a problem: SCCs in topological order and the
/// chain of required SCCs.
struct Chain {
    /// SCC id per node; `u32::MAX` = dead (removed, or not on any entry→crash path).
    comp: Vec<u32>,
    /// Members of each SCC, SCCs in topological order.
    comps: Vec<Vec<u32>>,
    trivial: Vec<bool>,
    /// Required SCC ids in chain order.
    chain: Vec<u32>,
    /// Position in `chain` per SCC, if required.
    pos: Vec<Option<u32>>,
    /// Max chain index reaching the SCC.
    a: Vec<i64>,
    /// Min chain index reachable from the SCC.
    b: Vec<i64>,
}

impl Chain {
    fn may_run_comp(&self, c: u32) -> bool {
        self.b[c as usize] <= self.a[c as usize] + 1
    }
}

/// Nodes reachable from `start` in `dir`, avoiding `blocked`.
fn reach(g: &DiGraph<(), ()>, start: u32, dir: Direction, blocked: &[bool]) -> Vec<bool> {
    let mut seen = vec![false; g.node_count()];
    if blocked[start as usize] {
        return seen;
    }
    let mut stack = vec![start];
    seen[start as usize] = true;
    while let Some(v) = stack.pop() {
        for w in g.neighbors_directed(ni(v), dir) {
            let w = w.index();
            if !seen[w] && !blocked[w] {
                seen[w] = true;
                stack.push(w as u32);
            }
        }
    }
    seen
}

fn build_chain(
    g: &DiGraph<(), ()>,
    entry: u32,
    crash: u32,
    removed: &[bool],
    vectors: &[Vec<u32>],
) -> Result<Chain, Inconsistent> {
    let n = g.node_count();
    if removed[entry as usize] || removed[crash as usize] {
        return Err(Inconsistent::EndpointRemoved);
    }
    let fwd = reach(g, entry, Direction::Outgoing, removed);
    let bwd = reach(g, crash, Direction::Incoming, removed);
    if !fwd[crash as usize] {
        return Err(Inconsistent::CrashUnreachable);
    }
    let live: Vec<bool> = (0..n).map(|i| fwd[i] && bwd[i]).collect();
    for v in vectors {
        for &x in v {
            if !live[x as usize] {
                return Err(Inconsistent::RequiredDead(x));
            }
        }
    }
    let filtered = NodeFiltered::from_fn(g, |x: NodeIndex| live[x.index()]);
    let mut sccs = tarjan_scc(&filtered);
    sccs.reverse(); // tarjan_scc yields reverse topological order
    let mut comp = vec![u32::MAX; n];
    let mut comps = Vec::with_capacity(sccs.len());
    let mut trivial = Vec::with_capacity(sccs.len());
    for (c, members) in sccs.into_iter().enumerate() {
        let ms: Vec<u32> = members.iter().map(|m| m.index() as u32).collect();
        for &m in &ms {
            comp[m as usize] = c as u32;
        }
        trivial.push(ms.len() == 1 && !g.contains_edge(ni(ms[0]), ni(ms[0])));
        comps.push(ms);
    }
    let nc = comps.len();
    let mut required: Vec<u32> = vec![comp[entry as usize], comp[crash as usize]];
    for v in vectors {
        required.extend(v.iter().map(|&x| comp[x as usize]));
    }
    required.sort_unstable();
    required.dedup();
    let mut pos = vec![None; nc];
    for (i, &c) in required.iter().enumerate() {
        pos[c as usize] = Some(i as u32);
    }
    // Forward pass: a(c) = max chain index reaching c; checks consecutive chain reachability.
    let mut a = vec![-1i64; nc];
    for c in 0..nc {
        let mut best = -1i64;
        for &m in &comps[c] {
            for p in g.neighbors_directed(ni(m), Direction::Incoming) {
                let pc = comp[p.index()];
                if pc != u32::MAX && pc as usize != c {
                    best = best.max(a[pc as usize]);
                }
            }
        }
        if let Some(i) = pos[c] {
            if i > 0 && best != i as i64 - 1 {
                let prev = comps[required[i as usize - 1] as usize][0];
                return Err(Inconsistent::Unordered(prev, comps[c][0]));
            }
            best = i as i64;
        }
        a[c] = best;
    }
    let k = required.len() as i64;
    let mut b = vec![k; nc];
    for c in (0..nc).rev() {
        let mut best = k;
        for &m in &comps[c] {
            for s in g.neighbors_directed(ni(m), Direction::Outgoing) {
                let sc = comp[s.index()];
                if sc != u32::MAX && sc as usize != c {
                    best = best.min(b[sc as usize]);
                }
            }
        }
        if let Some(i) = pos[c] {
            best = i as i64;
        }
        b[c] = best;
    }
    // Every vector must be ordered along the chain; a trivial SCC is visited once, so it can
    // match only one symbol of a vector.
    for v in vectors {
        for w in v.windows(2) {
            let (ca, cb) = (comp[w[0] as usize], comp[w[1] as usize]);
            let (pa, pb) = (pos[ca as usize].unwrap(), pos[cb as usize].unwrap());
            if pa > pb || (pa == pb && trivial[ca as usize]) {
                return Err(Inconsistent::OrderViolated(w[0], w[1]));
            }
        }
    }
    Ok(Chain {
        comp,
        comps,
        trivial,
        chain: required,
        pos,
        a,
        b,
    })
}

impl UtlProblem<'_> {
    /// Is there an entry→crash walk satisfying every constraint? Exact for the
    /// context-insensitive semantics of Definition 6.7.
    pub fn possible(&self) -> bool {
        build_chain(
            self.graph,
            self.entry,
            self.crash,
            &self.removed,
            &self.vectors,
        )
        .is_ok()
    }

    /// Checks consistency and explains failure.
    pub fn check(&self) -> Result<(), Inconsistent> {
        build_chain(
            self.graph,
            self.entry,
            self.crash,
            &self.removed,
            &self.vectors,
        )
        .map(|_| ())
    }

    /// BECP (§6.7) for every node at once: exactly the answers of posing "may n run" and
    /// "may n not run" for each node, without posing them.
    pub fn best_effort(&self) -> Result<Vec<Coverage>, Inconsistent> {
        let g = self.graph;
        let n = g.node_count();
        let ch = build_chain(g, self.entry, self.crash, &self.removed, &self.vectors)?;
        let mut out = vec![Coverage::No; n];
        let k = ch.chain.len();
        // Classify each live node: at chain element j, or inside segment i, or neither.
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum Place {
            Dead,
            At(u32),
            Inside(u32),
        }
        let place: Vec<Place> = (0..n)
            .map(|v| {
                let c = ch.comp[v];
                if c == u32::MAX || !ch.may_run_comp(c) {
                    Place::Dead
                } else if let Some(j) = ch.pos[c as usize] {
                    Place::At(j)
                } else {
                    Place::Inside(ch.a[c as usize] as u32)
                }
            })
            .collect();
        let allowed = |u: Place, v: Place| -> bool {
            match (u, v) {
                (Place::Inside(i), Place::Inside(j)) => i == j,
                (Place::Inside(i), Place::At(j)) => j == i + 1,
                (Place::At(i), Place::Inside(j)) => i == j,
                (Place::At(i), Place::At(j)) => j == i + 1,
                _ => false,
            }
        };
        // H: chain SCCs contracted to one node each, segment-internal edges only.
        let mut h: DiGraph<(), ()> = DiGraph::with_capacity(n, g.edge_count());
        let mut hid = vec![u32::MAX; n];
        let chain_h: Vec<NodeIndex> = (0..k).map(|_| h.add_node(())).collect();
        for v in 0..n {
            match place[v] {
                Place::At(j) => hid[v] = chain_h[j as usize].index() as u32,
                Place::Inside(_) => hid[v] = h.add_node(()).index() as u32,
                Place::Dead => {}
            }
        }
        // `update_edge` scans the source's edges: quadratic at a dispatch node with
        // thousands of successors. A set keeps H simple in linear time.
        let mut h_edges = std::collections::HashSet::with_capacity(g.edge_count());
        for e in g.edge_references() {
            let (u, v) = (e.source().index(), e.target().index());
            if allowed(place[u], place[v]) && h_edges.insert((hid[u], hid[v])) {
                h.add_edge(ni(hid[u]), ni(hid[v]), ());
            }
        }
        let doms = simple_fast(&h, chain_h[0]);
        let mut unavoidable = vec![false; h.node_count()];
        if let Some(ds) = doms.dominators(chain_h[k - 1]) {
            for d in ds {
                unavoidable[d.index()] = true;
            }
        }
        let mut is_required = vec![false; n];
        is_required[self.entry as usize] = true;
        is_required[self.crash as usize] = true;
        for v in &self.vectors {
            for &x in v {
                is_required[x as usize] = true;
            }
        }
        for v in 0..n {
            out[v] = match place[v] {
                Place::Dead => Coverage::No,
                Place::Inside(_) if unavoidable[hid[v] as usize] => Coverage::Yes,
                Place::Inside(_) => Coverage::Maybe,
                Place::At(_) if is_required[v] => Coverage::Yes,
                Place::At(_) => Coverage::Maybe, // refined below
            };
        }
        // Non-required nodes inside non-trivial required SCCs.
        for (j, &c) in ch.chain.iter().enumerate() {
            let members = &ch.comps[c as usize];
            if ch.trivial[c as usize] || members.iter().all(|&m| is_required[m as usize]) {
                continue;
            }
            let local = LocalScc::new(self, &ch, j, members, |u, v| {
                allowed(place[u as usize], place[v as usize])
            });
            let sure = local.surely_unavoidable(&is_required);
            // The nodes of the latest walk found: a candidate off it is avoidable without a
            // re-check. In one large SCC (an interpreter's dispatch loop, where nearly every
            // node is a strong articulation point) this turns one linear re-check per
            // candidate into one per candidate on the current walk.
            // Every node off some walk found so far is avoidable (the walks are re-checks'
            // witnesses): a candidate there needs no re-check of its own.
            let mut avoidable: Option<Vec<bool>> = None;
            let groups = local.must_check(&is_required);
            // Candidates not settled yet: a witness walk steers around them where it can, so
            // that one walk settles as many as possible (in an interpreter's dispatch loop
            // shortest paths otherwise run through the same few candidates every time).
            let mut pending = vec![false; local.g.node_count()];
            for group in &groups {
                for &m in group {
                    pending[m] = true;
                }
            }
            let found_walk = |avoidable: &mut Option<Vec<bool>>, w: Vec<bool>| match avoidable {
                None => *avoidable = Some(w.into_iter().map(|on| !on).collect()),
                Some(a) => {
                    for (x, on) in a.iter_mut().zip(w) {
                        *x |= !on;
                    }
                }
            };
            for group in groups {
                let m = group[0];
                if sure[m] {
                    for &m in &group {
                        out[members[m] as usize] = Coverage::Yes;
                        pending[m] = false;
                    }
                    continue;
                }
                if avoidable.is_none() {
                    if let Some(w) = local.walk_avoiding(None, &pending) {
                        found_walk(&mut avoidable, w);
                    }
                }
                if let Some(a) = &avoidable {
                    for (p, &off) in pending.iter_mut().zip(a) {
                        *p &= !off;
                    }
                    if a[m] {
                        continue;
                    }
                }
                for &m in &group {
                    pending[m] = false;
                }
                match local.walk_avoiding(Some(m), &pending) {
                    Some(w) => found_walk(&mut avoidable, w),
                    None => {
                        for m in group {
                            out[members[m] as usize] = Coverage::Yes;
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// One non-trivial required SCC, with local indices, for "can the walk avoid node m here?".
struct LocalScc {
    members: Vec<u32>,
    /// Local adjacency within the SCC.
    g: DiGraph<(), ()>,
    /// Walk may enter at these local nodes / leave from these.
    sources: Vec<bool>,
    sinks: Vec<bool>,
    /// Each vector's symbols that lie in this SCC, in order (a contiguous block).
    vectors: Vec<Vec<u32>>,
    /// Virtual start (edges to every source) and end (edges from every sink) in `g`.
    sigma: u32,
    tau: u32,
}

impl LocalScc {
    fn new(
        p: &UtlProblem<'_>,
        ch: &Chain,
        j: usize,
        members: &[u32],
        allowed: impl Fn(u32, u32) -> bool,
    ) -> Self {
        let c = ch.chain[j];
        let mut local_of = std::collections::HashMap::with_capacity(members.len());
        for (i, &m) in members.iter().enumerate() {
            local_of.insert(m, i as u32);
        }
        let mut g = DiGraph::with_capacity(members.len(), members.len() * 2);
        for _ in members {
            g.add_node(());
        }
        let mut local_edges = std::collections::HashSet::new();
        let mut sources = vec![false; members.len()];
        let mut sinks = vec![false; members.len()];
        for (i, &m) in members.iter().enumerate() {
            if m == p.entry {
                sources[i] = true;
            }
            if m == p.crash {
                sinks[i] = true;
            }
            for s in p.graph.neighbors_directed(ni(m), Direction::Outgoing) {
                let s = s.index() as u32;
                if ch.comp[s as usize] == c {
                    if local_edges.insert((i as u32, local_of[&s])) {
                        g.add_edge(ni(i as u32), ni(local_of[&s]), ());
                    }
                } else if allowed(m, s) {
                    sinks[i] = true;
                }
            }
            for q in p.graph.neighbors_directed(ni(m), Direction::Incoming) {
                let q = q.index() as u32;
                if ch.comp[q as usize] != c && allowed(q, m) {
                    sources[i] = true;
                }
            }
        }
        let vectors = p
            .vectors
            .iter()
            .map(|v| {
                v.iter()
                    .filter_map(|x| local_of.get(x).copied())
                    .collect::<Vec<u32>>()
            })
            .filter(|v| !v.is_empty())
            .collect();
        let (sigma, tau) = (g.add_node(()), g.add_node(()));
        for i in 0..members.len() {
            if sources[i] {
                g.add_edge(sigma, ni(i as u32), ());
            }
            if sinks[i] {
                g.add_edge(ni(i as u32), tau, ());
            }
        }
        LocalScc {
            members: members.to_vec(),
            g,
            sources,
            sinks,
            vectors,
            sigma: sigma.index() as u32,
            tau: tau.index() as u32,
        }
    }

    /// Nodes every walk needs, without any re-check: those that dominate the end or a
    /// required node from the start, or post-dominate the start or a required node.
    fn surely_unavoidable(&self, is_required: &[bool]) -> Vec<bool> {
        let n = self.members.len();
        let mut sure = vec![false; n + 2];
        let fwd = simple_fast(&self.g, ni(self.sigma));
        let rev = simple_fast(Reversed(&self.g), ni(self.tau));
        let required = (0..n).filter(|&i| is_required[self.members[i] as usize]);
        let fwd_targets = required.clone().chain([self.tau as usize]);
        let rev_targets = required.chain([self.sigma as usize]);
        for (doms, targets) in [
            (&fwd, fwd_targets.collect::<Vec<_>>()),
            (&rev, rev_targets.collect()),
        ] {
            for t in targets {
                let mut d = doms.immediate_dominator(ni(t as u32));
                while let Some(x) = d {
                    if sure[x.index()] {
                        break;
                    }
                    sure[x.index()] = true;
                    d = doms.immediate_dominator(x);
                }
            }
        }
        sure.truncate(n);
        sure
    }

    /// Candidates when some required node `r` exists and no vector repeats a symbol: `m` can
    /// matter only if it lies on a dominator-tree path from `r` to a required node (forward
    /// or reverse), or dominates every sink from `r`, or every source in reverse. Otherwise
    /// every required node still reaches `r` and is reached from it without `m`, so all of
    /// them share one strongly connected piece of the SCC without `m` that some source
    /// reaches and that reaches some sink: the walk can avoid `m`.
    fn dominator_candidates(&self, r: usize, required: &[usize]) -> Vec<bool> {
        let n = self.members.len();
        let mut check = vec![false; n];
        let root = ni(r as u32);
        let fwd = simple_fast(&self.g, root);
        let rev = simple_fast(Reversed(&self.g), root);
        // Each walk has its own visited set: `check` only collects. A node the forward walk
        // marked can still have reverse-dominator ancestors no forward path passes (the
        // latch of an outer loop after a nested one), and sharing one set stopped the
        // reverse walk there, leaving those ancestors Maybe.
        for doms in [&fwd, &rev] {
            let mut seen = vec![false; n];
            for &q in required {
                let mut d = doms.immediate_dominator(ni(q as u32));
                while let Some(x) = d {
                    if x == root || seen[x.index()] {
                        break;
                    }
                    seen[x.index()] = true;
                    check[x.index()] = true;
                    d = doms.immediate_dominator(x);
                }
            }
        }
        for (doms, ends) in [(&fwd, &self.sinks), (&rev, &self.sources)] {
            let ends: Vec<NodeIndex> = (0..n).filter(|&i| ends[i]).map(|i| ni(i as u32)).collect();
            let depth = |mut x: NodeIndex| {
                let mut k = 0usize;
                while let Some(p) = doms.immediate_dominator(x) {
                    x = p;
                    k += 1;
                }
                k
            };
            // Lowest common ancestor of all ends in the dominator tree: its dominators
            // (itself included) are exactly the nodes every end depends on.
            let mut lca: Option<(NodeIndex, usize)> = None;
            for &e in &ends {
                let (mut a, mut da) = (e, depth(e));
                if let Some((mut b, mut db)) = lca {
                    while da > db {
                        a = doms.immediate_dominator(a).unwrap();
                        da -= 1;
                    }
                    while db > da {
                        b = doms.immediate_dominator(b).unwrap();
                        db -= 1;
                    }
                    while a != b {
                        a = doms.immediate_dominator(a).unwrap();
                        b = doms.immediate_dominator(b).unwrap();
                        da -= 1;
                    }
                }
                lca = Some((a, da));
            }
            let mut x = lca.map(|(x, _)| x);
            while let Some(v) = x {
                if v == root {
                    break;
                }
                check[v.index()] = true;
                x = doms.immediate_dominator(v);
            }
        }
        check
    }

    /// Candidates in general: strong articulation points and sole sources/sinks.
    fn articulation_candidates(&self) -> Vec<bool> {
        let n = self.members.len();
        // With two members, removing one leaves a single node that can no longer repeat a
        // symbol: not covered by the articulation-point argument, so check both.
        let mut check = vec![n <= 2; n];
        let root = ni(0);
        let fwd = simple_fast(&self.g, root);
        let rev = simple_fast(Reversed(&self.g), root);
        for v in 1..n {
            for d in [
                fwd.immediate_dominator(ni(v as u32)),
                rev.immediate_dominator(ni(v as u32)),
            ]
            .into_iter()
            .flatten()
            {
                if d != root {
                    check[d.index()] = true;
                }
            }
        }
        let (sigma, tau) = (ni(self.sigma), ni(self.tau));
        let without_root =
            NodeFiltered::from_fn(&self.g, |x: NodeIndex| x != root && x != sigma && x != tau);
        if n > 1 && tarjan_scc(&without_root).len() > 1 {
            check[0] = true;
        }
        for ends in [&self.sources, &self.sinks] {
            let mut it = ends.iter().enumerate().filter(|(_, &b)| b);
            if let (Some((only, _)), None) = (it.next(), it.next()) {
                check[only] = true;
            }
        }
        check
    }

    /// Local nodes whose removal might make the walk impossible: strong articulation points
    /// (Italiano–Laura–Santaroni: non-trivial dominators from any root, forward or reverse, plus
    /// the root if the rest is not strongly connected) and sole sources/sinks. Removing any
    /// other node leaves the SCC strongly connected with a way in and out, so it is avoidable.
    ///
    /// Returned in groups with the same answer: the nodes of a straight chain (one way in, one
    /// way out, not a source, sink or required) all cut the same path, so one check serves
    /// the whole chain.
    fn must_check(&self, is_required: &[bool]) -> Vec<Vec<usize>> {
        let n = self.members.len();
        let required: Vec<usize> = (0..n)
            .filter(|&i| is_required[self.members[i] as usize])
            .collect();
        let repeats = self
            .vectors
            .iter()
            .any(|v| v.windows(2).any(|w| w[0] == w[1]));
        let check = if n > 2 && !repeats && !required.is_empty() {
            self.dominator_candidates(required[0], &required)
        } else {
            self.articulation_candidates()
        };
        let plain = |i: usize| {
            let x = ni(i as u32);
            !self.sources[i]
                && !self.sinks[i]
                && !is_required[self.members[i] as usize]
                && self.g.neighbors_directed(x, Direction::Incoming).count() == 1
                && self.g.neighbors_directed(x, Direction::Outgoing).count() == 1
        };
        let mut grouped = vec![false; n];
        let mut groups = Vec::new();
        for i in 0..n {
            if grouped[i] || !check[i] || is_required[self.members[i] as usize] {
                continue;
            }
            if !plain(i) {
                grouped[i] = true;
                groups.push(vec![i]);
                continue;
            }
            // Walk back to the head of the chain, then collect it forwards.
            let mut head = i;
            loop {
                let p = self
                    .g
                    .neighbors_directed(ni(head as u32), Direction::Incoming)
                    .next()
                    .unwrap()
                    .index();
                if !plain(p) || p == i {
                    break;
                }
                head = p;
            }
            let mut chain = Vec::new();
            let mut v = head;
            while plain(v) && !grouped[v] {
                grouped[v] = true;
                chain.push(v);
                v = self
                    .g
                    .neighbors_directed(ni(v as u32), Direction::Outgoing)
                    .next()
                    .unwrap()
                    .index();
            }
            groups.push(chain);
        }
        groups
    }

    /// The nodes of one walk that enters, satisfies the local vectors and leaves without
    /// visiting local node `m` (any walk when `m` is `None`); `None` when there is no such
    /// walk. Every node off the returned walk is avoidable too, so one re-check usually
    /// settles many candidates (see `UtlProblem::best_effort`).
    /// The walk passes through as few `shun` nodes as it can (it is still a walk: only which
    /// paths it takes between its required points changes).
    fn walk_avoiding(&self, m: Option<usize>, shun: &[bool]) -> Option<Vec<bool>> {
        let mut removed = vec![false; self.g.node_count()];
        if let Some(m) = m {
            removed[m] = true;
        }
        let ch = build_chain(&self.g, self.sigma, self.tau, &removed, &self.vectors).ok()?;
        walk_nodes(&self.g, self.sigma, self.tau, &ch, &self.vectors, shun)
    }
}

/// The nodes of one entry→crash walk that has every vector as a subsequence, built from a
/// consistent problem's chain in linear time: inside each required SCC, out from the node
/// where the walk entered to every required symbol and back (a strongly connected component
/// can be walked in any order, so every vector's order is met), then to the exit point;
/// between consecutive required SCCs, a shortest path through the segment between them.
/// `None` if a step finds no path (it always should; the caller then re-checks every node).
// `j` indexes the chain, its segments and their targets together.
#[allow(clippy::needless_range_loop)]
fn walk_nodes(
    g: &DiGraph<(), ()>,
    entry: u32,
    crash: u32,
    ch: &Chain,
    vectors: &[Vec<u32>],
    shun: &[bool],
) -> Option<Vec<bool>> {
    let n = g.node_count();
    let k = ch.chain.len();
    let mut targets: Vec<Vec<u32>> = vec![Vec::new(); k];
    for v in vectors {
        for &x in v {
            let j = ch.pos[ch.comp[x as usize] as usize]?;
            targets[j as usize].push(x);
        }
    }
    let mut on = vec![false; n];
    // BFS parents and distances; components and segments are disjoint, so one array of
    // each serves all.
    let mut fwd_parent = vec![u32::MAX; n];
    let mut rev_parent = vec![u32::MAX; n];
    let mut seg_parent = vec![u32::MAX; n];
    let mut fwd_dist = vec![u32::MAX; n];
    let mut rev_dist = vec![u32::MAX; n];
    let mut seg_dist = vec![u32::MAX; n];
    let cost = |x: usize| u32::from(shun.get(x).copied().unwrap_or(false));
    let mut enter = entry;
    if ch.pos[ch.comp[entry as usize] as usize] != Some(0) {
        return None;
    }
    for j in 0..k {
        let c = ch.chain[j];
        // Leave towards the next required SCC through segment j (or end at the crash).
        let (exit, next_enter) = if j + 1 < k {
            let next = ch.chain[j + 1];
            let in_segment = |x: usize| {
                let cx = ch.comp[x];
                cx != u32::MAX
                    && (cx == next
                        || (ch.pos[cx as usize].is_none()
                            && ch.a[cx as usize] == j as i64
                            && ch.b[cx as usize] == j as i64 + 1))
            };
            let arrive = bfs01(
                g,
                &ch.comps[c as usize],
                Direction::Outgoing,
                in_segment,
                cost,
                |x| ch.comp[x] == next,
                &mut seg_dist,
                &mut seg_parent,
            )?;
            let mut x = arrive;
            on[x as usize] = true;
            while ch.comp[x as usize] != c {
                x = seg_parent[x as usize];
                on[x as usize] = true;
            }
            (x, arrive)
        } else {
            (crash, crash)
        };
        on[enter as usize] = true;
        if ch.trivial[c as usize] {
            if exit != enter {
                return None;
            }
        } else {
            // Cheapest-path trees of the component from and to the entry point.
            for (parent, dist, dir) in [
                (&mut fwd_parent, &mut fwd_dist, Direction::Outgoing),
                (&mut rev_parent, &mut rev_dist, Direction::Incoming),
            ] {
                bfs01(
                    g,
                    &[enter],
                    dir,
                    |x| ch.comp[x] == c,
                    cost,
                    |_| false,
                    dist,
                    parent,
                );
            }
            let mut mark = |parent: &[u32], from: u32| -> Option<()> {
                let mut x = from;
                while x != enter {
                    on[x as usize] = true;
                    x = parent[x as usize];
                    if x == u32::MAX {
                        return None;
                    }
                }
                Some(())
            };
            for &t in &targets[j] {
                if t == enter {
                    // Out and back must still leave `enter` (a vector may need it twice):
                    // around a cycle through one of its successors in the component.
                    let w = g
                        .neighbors_directed(ni(enter), Direction::Outgoing)
                        .find(|w| ch.comp[w.index()] == c)?
                        .index() as u32;
                    mark(&rev_parent, w)?;
                    continue;
                }
                mark(&fwd_parent, t)?;
                mark(&rev_parent, t)?;
            }
            mark(&fwd_parent, exit)?;
        }
        enter = next_enter;
    }
    Some(on)
}

/// Cheapest paths from `sources` over `admit`ted nodes, entering a node costing `cost` (0 or
/// 1: a 0-1 BFS, linear). Fills `dist` / `parent` (sources are their own parents) and
/// returns the first node settled that satisfies `stop`, if any.
#[allow(clippy::too_many_arguments)]
fn bfs01(
    g: &DiGraph<(), ()>,
    sources: &[u32],
    dir: Direction,
    admit: impl Fn(usize) -> bool,
    cost: impl Fn(usize) -> u32,
    stop: impl Fn(usize) -> bool,
    dist: &mut [u32],
    parent: &mut [u32],
) -> Option<u32> {
    let mut queue = std::collections::VecDeque::new();
    for &s in sources {
        dist[s as usize] = 0;
        parent[s as usize] = s;
        queue.push_back((s, 0u32));
    }
    while let Some((v, d)) = queue.pop_front() {
        if d > dist[v as usize] {
            continue; // settled earlier at a lower cost
        }
        if stop(v as usize) {
            return Some(v);
        }
        for w in g.neighbors_directed(ni(v), dir) {
            let w = w.index();
            if !admit(w) {
                continue;
            }
            let step = cost(w);
            if d + step < dist[w] {
                dist[w] = d + step;
                parent[w] = v;
                if step == 0 {
                    queue.push_front((w as u32, d));
                } else {
                    queue.push_back((w as u32, d + step));
                }
            }
        }
    }
    None
}

/// Figs. 6.6–6.7 as written: forward data flow over the condensation in topological order,
/// `consume` as much of each vector as the SCC allows, `merge` predecessor facts or fail.
/// Dead nodes (off every entry→crash path) are removed first, as csi-grissom does.
pub fn reference_possible(p: &UtlProblem<'_>) -> bool {
    let g = p.graph;
    let n = g.node_count();
    if p.removed[p.entry as usize] || p.removed[p.crash as usize] {
        return false;
    }
    let fwd = reach(g, p.entry, Direction::Outgoing, &p.removed);
    let bwd = reach(g, p.crash, Direction::Incoming, &p.removed);
    let live: Vec<bool> = (0..n).map(|i| fwd[i] && bwd[i]).collect();
    if !live[p.entry as usize] {
        return false;
    }
    let filtered = NodeFiltered::from_fn(g, |x: NodeIndex| live[x.index()]);
    let mut sccs = tarjan_scc(&filtered);
    sccs.reverse();
    let mut comp = vec![usize::MAX; n];
    for (c, ms) in sccs.iter().enumerate() {
        for m in ms {
            comp[m.index()] = c;
        }
    }
    // A fact: how many symbols of each vector are consumed so far. `None` = ⊥.
    type Fact = Vec<usize>;
    let merge = |f1: &Fact, f2: &Fact| -> Option<Fact> {
        if f1.iter().zip(f2).all(|(a, b)| a >= b) {
            Some(f1.clone())
        } else if f1.iter().zip(f2).all(|(a, b)| a <= b) {
            Some(f2.clone())
        } else {
            None
        }
    };
    let mut out: Vec<Option<Fact>> = vec![None; sccs.len()];
    for (c, ms) in sccs.iter().enumerate() {
        let trivial = ms.len() == 1 && !g.contains_edge(ms[0], ms[0]);
        let mut fact: Option<Fact> = None;
        if ms.iter().any(|m| m.index() as u32 == p.entry) {
            fact = Some(vec![0; p.vectors.len()]);
        }
        for m in ms {
            for q in g.neighbors_directed(*m, Direction::Incoming) {
                let qc = comp[q.index()];
                if qc == usize::MAX || qc == c {
                    continue;
                }
                let Some(qf) = &out[qc] else { continue };
                fact = match fact {
                    None => Some(qf.clone()),
                    Some(f) => match merge(&f, qf) {
                        Some(m) => Some(m),
                        None => return false,
                    },
                };
            }
        }
        let Some(mut fact) = fact else { continue };
        // consume(): a trivial SCC is passed once and matches one symbol per vector.
        let in_scc = |x: u32| comp[x as usize] == c;
        for (i, v) in p.vectors.iter().enumerate() {
            if trivial {
                if fact[i] < v.len() && in_scc(v[fact[i]]) {
                    fact[i] += 1;
                }
            } else {
                while fact[i] < v.len() && in_scc(v[fact[i]]) {
                    fact[i] += 1;
                }
            }
        }
        out[c] = Some(fact);
    }
    let cc = comp[p.crash as usize];
    cc != usize::MAX
        && out[cc]
            .as_ref()
            .is_some_and(|f| f.iter().zip(&p.vectors).all(|(&k, v)| k == v.len()))
}

/// BECP by posing the two queries per node (§6.7), with [`reference_possible`]. Quadratic;
/// for tests.
pub fn reference_best_effort(p: &UtlProblem<'_>) -> Result<Vec<Coverage>, Inconsistent> {
    if !reference_possible(p) {
        return Err(Inconsistent::CrashUnreachable);
    }
    let n = p.graph.node_count();
    let mut out = Vec::with_capacity(n);
    for v in 0..n as u32 {
        let yes = if p.removed[v as usize] {
            false
        } else {
            let mut vectors = p.vectors.clone();
            vectors.push(vec![v]);
            reference_possible(&UtlProblem {
                graph: p.graph,
                entry: p.entry,
                crash: p.crash,
                removed: p.removed.clone(),
                vectors,
            })
        };
        let no = if v == p.entry || v == p.crash {
            false
        } else {
            let mut removed = p.removed.clone();
            removed[v as usize] = true;
            reference_possible(&UtlProblem {
                graph: p.graph,
                entry: p.entry,
                crash: p.crash,
                removed,
                vectors: p.vectors.clone(),
            })
        };
        out.push(match (yes, no) {
            (true, true) => Coverage::Maybe,
            (true, false) => Coverage::Yes,
            (false, true) => Coverage::No,
            (false, false) => return Err(Inconsistent::CrashUnreachable),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32)]) -> DiGraph<(), ()> {
        let mut g = DiGraph::new();
        for _ in 0..n {
            g.add_node(());
        }
        for &(a, b) in edges {
            g.add_edge(ni(a), ni(b), ());
        }
        g
    }

    fn problem(g: &DiGraph<(), ()>, entry: u32, crash: u32) -> UtlProblem<'_> {
        UtlProblem {
            graph: g,
            entry,
            crash,
            removed: vec![false; g.node_count()],
            vectors: vec![],
        }
    }

    /// A tiny deterministic generator (no external RNG needed for tests).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, m: u32) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % m as u64) as u32
        }
    }

    #[test]
    fn diamond_and_loop() {
        // 0 -> 1 -> {2,3} -> 4 -> 5(crash); loop 4 -> 1
        let g = graph(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5)]);
        let p = problem(&g, 0, 5);
        let r = p.best_effort().unwrap();
        use Coverage::*;
        assert_eq!(r, vec![Yes, Yes, Maybe, Maybe, Yes, Yes]);
        let mut p = problem(&g, 0, 5);
        p.removed[3] = true;
        assert_eq!(p.best_effort().unwrap(), vec![Yes, Yes, Yes, No, Yes, Yes]);
        // Observing 3 then 2 needs the loop: possible.
        let mut p = problem(&g, 0, 5);
        p.vectors = vec![vec![3, 2]];
        assert!(p.possible());
        assert_eq!(p.best_effort().unwrap(), vec![Yes, Yes, Yes, Yes, Yes, Yes]);
    }

    #[test]
    fn trivial_scc_matches_once() {
        let g = graph(3, &[(0, 1), (1, 2)]);
        let mut p = problem(&g, 0, 2);
        p.vectors = vec![vec![1, 1]];
        assert!(!p.possible());
        assert!(!reference_possible(&p));
        p.vectors = vec![vec![1]];
        assert!(p.possible());
    }

    #[test]
    fn unordered_observations_are_inconsistent() {
        // two branches: observing both is impossible
        let g = graph(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        let mut p = problem(&g, 0, 3);
        p.vectors = vec![vec![1], vec![2]];
        assert!(matches!(
            p.best_effort(),
            Err(Inconsistent::Unordered(_, _))
        ));
        assert!(!reference_possible(&p));
    }

    fn random_problem(rng: &mut Lcg, n: u32) -> (DiGraph<(), ()>, Vec<bool>, Vec<Vec<u32>>) {
        let mut edges = Vec::new();
        for v in 0..n - 1 {
            // forward spine-ish edges keep most nodes live; a few back edges make loops
            edges.push((v, v + 1 + rng.next(2.min(n - 1 - v))));
            if rng.next(3) == 0 {
                edges.push((v, rng.next(n)));
            }
        }
        let g = graph(n as usize, &edges);
        let mut removed = vec![false; n as usize];
        for _ in 0..rng.next(3) {
            let x = 1 + rng.next(n - 2);
            removed[x as usize] = true;
        }
        let mut vectors = Vec::new();
        for _ in 0..rng.next(3) {
            let len = 1 + rng.next(3);
            vectors.push((0..len).map(|_| 1 + rng.next(n - 2)).collect());
        }
        (g, removed, vectors)
    }

    /// A structured program of nested loops and branches (what compilers emit for real
    /// code), with extra exits to nodes that the report rules out (dead), so that every walk
    /// stays inside the loops until it reaches the crash. Returns the graph, its node count
    /// and the crash node.
    fn nested_loops(rng: &mut Lcg, depth: u32) -> (DiGraph<(), ()>, u32, Vec<u32>) {
        struct Builder<'a> {
            edges: Vec<(u32, u32)>,
            n: u32,
            dead: Vec<u32>,
            rng: &'a mut Lcg,
        }
        impl Builder<'_> {
            fn node(&mut self) -> u32 {
                self.n += 1;
                self.n - 1
            }
            /// Emits a region entered at `from`; returns its last node.
            fn region(&mut self, from: u32, depth: u32) -> u32 {
                let mut cur = from;
                for _ in 0..1 + self.rng.next(3) {
                    cur = match self.rng.next(if depth == 0 { 2 } else { 4 }) {
                        0 => {
                            let v = self.node();
                            self.edges.push((cur, v));
                            v
                        }
                        1 => {
                            // if / else
                            let (a, b, j) = (self.node(), self.node(), self.node());
                            self.edges.extend([(cur, a), (cur, b), (a, j), (b, j)]);
                            j
                        }
                        _ => {
                            // loop: head -> body ... latch -> head; head -> after
                            let head = self.node();
                            self.edges.push((cur, head));
                            let latch = self.region(head, depth - 1);
                            self.edges.push((latch, head));
                            if self.rng.next(2) == 0 {
                                // an exit that the report rules out
                                let d = self.node();
                                self.dead.push(d);
                                self.edges.push((latch, d));
                                let after = self.node();
                                self.edges.push((d, after));
                                after
                            } else {
                                let after = self.node();
                                self.edges.push((head, after));
                                after
                            }
                        }
                    };
                }
                cur
            }
        }
        let mut b = Builder {
            edges: Vec::new(),
            n: 1,
            dead: Vec::new(),
            rng,
        };
        let last = b.region(0, depth);
        let crash = b.node();
        b.edges.push((last, crash));
        let (n, edges, dead) = (b.n, b.edges, b.dead);
        (graph(n as usize, &edges), crash, dead)
    }

    /// The same agreement on nested loops whose other exits are dead: required nodes deep
    /// inside loops, where the candidate walks of `dominator_candidates` matter.
    #[test]
    fn fast_equals_reference_on_nested_loops_with_dead_exits() {
        let mut rng = Lcg(11);
        let mut compared = 0;
        for round in 0..3000 {
            let depth = 1 + rng.next(3);
            let (g, crash, dead) = nested_loops(&mut rng, depth);
            let n = g.node_count() as u32;
            let mut removed = vec![false; n as usize];
            for d in dead {
                if rng.next(3) != 0 {
                    removed[d as usize] = true;
                }
            }
            let mut vectors = Vec::new();
            for _ in 0..1 + rng.next(3) {
                let len = 1 + rng.next(2);
                vectors.push((0..len).map(|_| 1 + rng.next(n - 2)).collect());
            }
            let p = UtlProblem {
                graph: &g,
                entry: 0,
                crash,
                removed,
                vectors,
            };
            let (fast, slow) = (p.best_effort(), reference_best_effort(&p));
            assert_eq!(
                fast.is_ok(),
                slow.is_ok(),
                "round {round}: consistency differs"
            );
            if let (Ok(f), Ok(s)) = (fast, slow) {
                assert_eq!(
                    f, s,
                    "round {round}\n{:?}\nvectors {:?} removed {:?}",
                    g, p.vectors, p.removed
                );
                compared += 1;
            }
        }
        assert!(compared > 500, "only {compared} consistent instances");
    }

    /// And on interpreter-shaped problems (one SCC holding nearly everything, many
    /// candidates, vectors repeating the dispatch node), where walks settle most candidates.
    #[test]
    fn fast_equals_reference_on_interpreter_loops() {
        for seed in 0..40 {
            let s = crate::synthetic::interpreter(
                seed,
                8 + seed as usize % 17,
                1 + seed as usize % 4,
                40,
            );
            let p = UtlProblem {
                graph: &s.graph,
                entry: s.entry,
                crash: s.crash,
                removed: vec![false; s.graph.node_count()],
                vectors: s.vectors.clone(),
            };
            assert_eq!(
                p.best_effort().unwrap(),
                reference_best_effort(&p).unwrap(),
                "seed {seed}"
            );
        }
    }

    /// The fast all-nodes solver agrees with posing Figs. 6.6–6.7's two queries per node.
    #[test]
    fn fast_equals_reference_on_random_graphs() {
        let mut rng = Lcg(7);
        let mut compared = 0;
        for round in 0..8000 {
            let n = 3 + rng.next(12);
            let (g, removed, vectors) = random_problem(&mut rng, n);
            let p = UtlProblem {
                graph: &g,
                entry: 0,
                crash: n - 1,
                removed,
                vectors,
            };
            let fast = p.best_effort();
            let slow = reference_best_effort(&p);
            assert_eq!(
                fast.is_ok(),
                slow.is_ok(),
                "round {round}: consistency differs: fast {fast:?} slow {slow:?}\n{:?}\nvectors {:?} removed {:?}",
                g,
                p.vectors,
                p.removed
            );
            if let (Ok(f), Ok(s)) = (fast, slow) {
                assert_eq!(f, s, "round {round}\n{:?}\nvectors {:?}", g, p.vectors);
                compared += 1;
            }
        }
        assert!(compared > 2000, "only {compared} consistent instances");
    }
}
