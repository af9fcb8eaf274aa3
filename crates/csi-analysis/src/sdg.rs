//! The system dependence graph (Horwitz–Reps–Binkley) over the program graph's def/use sets:
//! what restricted slicing (`slice`) walks.
//!
//! Vertices are the CFG nodes themselves plus, per function, formal-in / formal-out vertices
//! (parameters `%arg<i>`, the return value `$ret`, and the globals and `*` memory the function
//! reads / writes directly or through its callees), and per call site actual-in / actual-out
//! vertices matching its callees' formals. Edges:
//! - control dependence from post-dominators (nodes that cannot reach the exit get a virtual
//!   edge to it, which only adds dependences);
//! - data dependence from reaching definitions: must-defs kill, may-defs do not; `*` aliases
//!   every global, every escaped local and itself; SSA values link straight to their one def;
//! - call (call node → callee entry), parameter-in, parameter-out, and summary edges
//!   (actual-in → actual-out when the callee's formal-out depends on the formal-in).
//!
//! Calls whose callee is outside the graph (library code) or may be (any call through a
//! pointer) are opaque: their actual-outs (`$ret`, `*`) depend on all their actual-ins.

use std::collections::{BTreeSet, HashMap};

use csi_model::{FuncId, NodeId, ProgramGraph};

pub type VertexId = u32;
pub type LocId = u32;
pub type EdgeId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexKind {
    Node,
    /// An earlier statement of a node that has several (the node's own vertex stands for its
    /// last statement, where its branch or call is).
    Stmt(u32),
    FormalIn(LocId),
    FormalOut(LocId),
    ActualIn(LocId),
    ActualOut(LocId),
}

#[derive(Clone, Copy, Debug)]
pub struct Vertex {
    pub kind: VertexKind,
    /// The CFG node the vertex belongs to: itself, the function's entry (formal-ins), its exit
    /// (formal-outs), or the call node (actuals).
    pub host: NodeId,
    pub function: FuncId,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DepKind {
    Control,
    /// Data dependence for the location the target uses.
    Data(LocId),
    Summary,
    /// Call node → callee entry.
    Call,
    /// Actual-in → formal-in.
    ParamIn,
    /// Formal-out → actual-out.
    ParamOut,
}

impl DepKind {
    /// Edges that stay inside one function.
    pub fn intraprocedural(self) -> bool {
        matches!(self, DepKind::Control | DepKind::Data(_) | DepKind::Summary)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub from: VertexId,
    pub to: VertexId,
    pub kind: DepKind,
}

#[derive(Clone, Debug, Default)]
pub struct Sdg {
    pub locs: Vec<String>,
    loc_ids: HashMap<String, LocId>,
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
    /// Incoming edge ids of every vertex.
    pub preds: Vec<Vec<EdgeId>>,
    /// Vertices of each function (CFG nodes and formals/actuals).
    pub by_function: Vec<Vec<VertexId>>,
    /// Actual-in / actual-out vertices of each call node.
    pub actuals: HashMap<NodeId, Vec<VertexId>>,
    /// The statement vertices of nodes with several statements, in order (the last is the
    /// node's own vertex).
    pub stmts: HashMap<NodeId, Vec<VertexId>>,
    /// The source line of statement vertices (and of split nodes' own vertices): a slice
    /// counts that line only, not all of the node's.
    pub vertex_line: HashMap<VertexId, Option<u32>>,
}

const STAR: &str = "*";
const RET: &str = "$ret";

fn is_ssa(name: &str) -> bool {
    name.starts_with('%') && !name.starts_with("%slot")
}

fn arg_name(i: usize) -> String {
    format!("%arg{i}")
}

/// A small dense bit set (reaching definitions).
#[derive(Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    fn union_with(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a |= b;
        }
    }
    fn minus(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a &= !b;
        }
    }
}

/// A statement's vertex and its uses, must-defs and may-defs.
type StmtSets = (VertexId, Vec<String>, Vec<String>, Vec<String>);

/// Formal-in or formal-out vertices by function and location.
type FormalVertices = HashMap<(FuncId, LocId), VertexId>;
/// Actual-in or actual-out vertices by call site and location.
type ActualVertices = HashMap<(NodeId, LocId), VertexId>;

struct DefSite {
    vertex: VertexId,
    loc: LocId,
}

/// The def sites of one function (see `Sdg::def_sites`), by node: generated in phase A (the
/// node's statements) and killed there (must-defs), generated in phase B (a call's
/// actual-outs).
struct FuncDefs {
    defs: Vec<DefSite>,
    gen_a: Vec<Vec<usize>>,
    kill_a_locs: Vec<Vec<LocId>>,
    gen_b: Vec<Vec<usize>>,
    /// The vertex defining each SSA value.
    ssa_def: HashMap<String, VertexId>,
    /// Def sites per statement (for the uses of later statements of the same node).
    stmt_defs: HashMap<VertexId, Vec<(usize, bool)>>,
}

/// Reaching definitions of one function, iterated to a fixed point: per node, the def sites
/// reaching its start (`inb`) and its middle, after phase A (`mid`: what a call's actual-ins
/// see).
fn reaching_definitions(
    g: &ProgramGraph,
    func: &csi_model::Function,
    local: &HashMap<NodeId, usize>,
    fd: &FuncDefs,
    defs_of: &HashMap<LocId, Vec<usize>>,
) -> (Vec<Bits>, Vec<Bits>) {
    let nn = func.nodes.len();
    let nd = fd.defs.len();
    let bits_of = |ks: &[usize]| {
        let mut b = Bits::new(nd);
        for &k in ks {
            b.set(k);
        }
        b
    };
    let gen_a_bits: Vec<Bits> = fd.gen_a.iter().map(|v| bits_of(v)).collect();
    let gen_b_bits: Vec<Bits> = fd.gen_b.iter().map(|v| bits_of(v)).collect();
    let kill_a_bits: Vec<Bits> = fd
        .kill_a_locs
        .iter()
        .map(|ls| {
            let ks: Vec<usize> = ls
                .iter()
                .flat_map(|l| defs_of.get(l).into_iter().flatten().copied())
                .collect();
            bits_of(&ks)
        })
        .collect();
    let preds: Vec<Vec<usize>> = func
        .nodes
        .iter()
        .map(|&n| {
            g.preds[n as usize]
                .iter()
                .filter_map(|m| local.get(m).copied())
                .collect()
        })
        .collect();
    let mut inb: Vec<Bits> = vec![Bits::new(nd); nn];
    let mut mid: Vec<Bits> = vec![Bits::new(nd); nn];
    let mut out: Vec<Bits> = vec![Bits::new(nd); nn];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..nn {
            let mut x = Bits::new(nd);
            for &p in &preds[i] {
                x.union_with(&out[p]);
            }
            let mut m = x.clone();
            m.minus(&kill_a_bits[i]);
            m.union_with(&gen_a_bits[i]);
            let mut o = m.clone();
            o.union_with(&gen_b_bits[i]);
            if o != out[i] {
                out[i] = o;
                changed = true;
            }
            inb[i] = x;
            mid[i] = m;
        }
    }
    (inb, mid)
}

/// How the uses of one function find their definitions: SSA values their defining vertex,
/// named locations the reaching def sites of the same location, `*` and aliasable locations
/// (globals, escaped locals, everything without precise def/use sets) each other's too.
struct Uses<'a> {
    precise: bool,
    escaped: &'a BTreeSet<&'a str>,
    star: LocId,
    fd: &'a FuncDefs,
    defs_of: &'a HashMap<LocId, Vec<usize>>,
    /// Def sites of aliasable locations (what a use of `*` may read).
    aliasable_defs: Vec<usize>,
}

impl Uses<'_> {
    fn aliasable(&self, name: &str) -> bool {
        name == STAR || name.starts_with('@') || self.escaped.contains(name) || !self.precise
    }

    /// Adds the data dependences of `user`'s use of `name` on the def sites in `reach`.
    fn resolve(
        &self,
        s: &mut Sdg,
        user: VertexId,
        name: &str,
        reach: &Bits,
        new_edges: &mut Vec<(VertexId, VertexId, LocId)>,
    ) {
        let (defs, star) = (&self.fd.defs, self.star);
        if self.precise && is_ssa(name) {
            if let Some(&d) = self.fd.ssa_def.get(name) {
                if d != user {
                    let l = s.intern(name);
                    new_edges.push((d, user, l));
                }
            }
            return;
        }
        let l = s.intern(name);
        let mut cands: Vec<usize> = self.defs_of.get(&l).cloned().unwrap_or_default();
        if name == STAR {
            cands.extend(&self.aliasable_defs);
        } else if self.aliasable(name) {
            cands.extend(self.defs_of.get(&star).into_iter().flatten());
        }
        let user_kind = s.vertices[user as usize].kind;
        for k in cands {
            if !reach.get(k) || defs[k].vertex == user {
                continue;
            }
            // Formals of `*` stand for the memory no other formal names: a named global has
            // its own formal-in (its value at entry) and formal-out, and a local is dead
            // after the return.
            let def_kind = s.vertices[defs[k].vertex as usize].kind;
            let def_is_star = defs[k].loc == star;
            if matches!(def_kind, VertexKind::FormalIn(_)) && def_is_star && name != STAR {
                continue;
            }
            if matches!(user_kind, VertexKind::FormalOut(_)) && name == STAR && !def_is_star {
                continue;
            }
            new_edges.push((defs[k].vertex, user, l));
        }
    }
}

impl Sdg {
    pub fn loc_name(&self, l: LocId) -> &str {
        &self.locs[l as usize]
    }

    pub fn loc_id(&self, name: &str) -> Option<LocId> {
        self.loc_ids.get(name).copied()
    }

    fn intern(&mut self, name: &str) -> LocId {
        if let Some(&l) = self.loc_ids.get(name) {
            return l;
        }
        let l = self.locs.len() as LocId;
        self.locs.push(name.to_string());
        self.loc_ids.insert(name.to_string(), l);
        l
    }

    fn add_vertex(&mut self, kind: VertexKind, host: NodeId, function: FuncId) -> VertexId {
        let v = self.vertices.len() as VertexId;
        self.vertices.push(Vertex {
            kind,
            host,
            function,
        });
        self.preds.push(Vec::new());
        self.by_function[function as usize].push(v);
        v
    }

    fn add_edge(&mut self, from: VertexId, to: VertexId, kind: DepKind) {
        let e = self.edges.len() as EdgeId;
        self.edges.push(Edge { from, to, kind });
        self.preds[to as usize].push(e);
    }

    /// Builds the SDG of a whole program graph.
    pub fn build(g: &ProgramGraph) -> Sdg {
        let mut s = Sdg {
            by_function: vec![Vec::new(); g.functions.len()],
            ..Sdg::default()
        };
        s.node_vertices(g);
        let star = s.intern(STAR);
        let ret = s.intern(RET);
        let (gref, gmod) = nonlocal_refs_and_mods(g);
        let (formal_in, formal_out) = s.formals(g, &gref, &gmod);
        let (actual_in, actual_out, ssa_result) =
            s.actuals_of_calls(g, &gref, &gmod, &formal_in, &formal_out, star, ret);
        for f in 0..g.functions.len() as FuncId {
            s.control_dependence(g, f);
            s.data_dependence(g, f, &formal_in, &formal_out, &ssa_result);
        }
        s.summary_edges(g, &formal_in, &formal_out, &actual_in, &actual_out);
        s
    }

    /// A vertex per program node (its id is the node's), and one per statement but the last
    /// of a node with several (precise def/use sets; the last statement is the node's vertex).
    fn node_vertices(&mut self, g: &ProgramGraph) {
        let s = self;
        for (i, n) in g.nodes.iter().enumerate() {
            s.vertices.push(Vertex {
                kind: VertexKind::Node,
                host: i as NodeId,
                function: n.function,
            });
            s.preds.push(Vec::new());
            s.by_function[n.function as usize].push(i as VertexId);
        }
        for (i, n) in g.nodes.iter().enumerate() {
            if n.stmts.len() < 2 || !g.function(n.function).precise_def_use {
                continue;
            }
            let id = i as NodeId;
            let mut vs: Vec<VertexId> = (0..n.stmts.len() as u32 - 1)
                .map(|k| s.add_vertex(VertexKind::Stmt(k), id, n.function))
                .collect();
            vs.push(id);
            for (v, st) in vs.iter().zip(&n.stmts) {
                s.vertex_line.insert(*v, st.line);
            }
            s.stmts.insert(id, vs);
        }
    }

    /// Formal-in vertices (parameters and the nonlocal locations each function reads) and
    /// formal-out vertices (the nonlocal locations it writes, and its result), each
    /// control-dependent on the function's entry.
    fn formals(
        &mut self,
        g: &ProgramGraph,
        gref: &[BTreeSet<String>],
        gmod: &[BTreeSet<String>],
    ) -> (FormalVertices, FormalVertices) {
        let s = self;
        let mut formal_in: HashMap<(FuncId, LocId), VertexId> = HashMap::new();
        let mut formal_out: HashMap<(FuncId, LocId), VertexId> = HashMap::new();
        for (fi, func) in g.functions.iter().enumerate() {
            let f = fi as FuncId;
            let mut ins: Vec<String> = (0..func.params as usize).map(arg_name).collect();
            ins.extend(gref[fi].iter().cloned());
            for name in ins {
                let l = s.intern(&name);
                let v = s.add_vertex(VertexKind::FormalIn(l), func.entry, f);
                s.add_edge(func.entry, v, DepKind::Control);
                formal_in.insert((f, l), v);
            }
            let returns = func
                .nodes
                .iter()
                .any(|&n| g.node(n).must_defs.iter().any(|d| d == RET));
            let mut outs: Vec<String> = gmod[fi].iter().cloned().collect();
            if returns || !func.precise_def_use {
                outs.push(RET.into());
            }
            for name in outs {
                let l = s.intern(&name);
                let v = s.add_vertex(VertexKind::FormalOut(l), func.exit, f);
                s.add_edge(func.entry, v, DepKind::Control);
                formal_out.insert((f, l), v);
            }
        }
        (formal_in, formal_out)
    }

    /// Actual-in and actual-out vertices of every call site (control-dependent on it), and
    /// the interprocedural edges: call, parameter-in and -out, and for calls into code
    /// without records (opaque) summary edges from every actual-in to every actual-out.
    /// Also the actual-out that defines each call's SSA result.
    #[allow(clippy::too_many_arguments)]
    fn actuals_of_calls(
        &mut self,
        g: &ProgramGraph,
        gref: &[BTreeSet<String>],
        gmod: &[BTreeSet<String>],
        formal_in: &HashMap<(FuncId, LocId), VertexId>,
        formal_out: &HashMap<(FuncId, LocId), VertexId>,
        star: LocId,
        ret: LocId,
    ) -> (
        ActualVertices,
        ActualVertices,
        HashMap<(FuncId, String), VertexId>,
    ) {
        let s = self;
        let mut actual_in: HashMap<(NodeId, LocId), VertexId> = HashMap::new();
        let mut actual_out: HashMap<(NodeId, LocId), VertexId> = HashMap::new();
        let mut ssa_result: HashMap<(FuncId, String), VertexId> = HashMap::new();
        for (ni, n) in g.nodes.iter().enumerate() {
            let Some(call) = &n.call else { continue };
            let c = ni as NodeId;
            let f = n.function;
            let mut in_locs: BTreeSet<LocId> = BTreeSet::new();
            let mut out_locs: BTreeSet<LocId> = BTreeSet::new();
            if let Some(args) = &call.args {
                for i in 0..args.len() {
                    in_locs.insert(s.intern(&arg_name(i)));
                }
            }
            for &callee in &call.callees {
                for name in &gref[callee as usize] {
                    in_locs.insert(s.intern(name));
                }
                if call.args.is_none() {
                    for i in 0..g.function(callee).params as usize {
                        in_locs.insert(s.intern(&arg_name(i)));
                    }
                }
                for name in &gmod[callee as usize] {
                    out_locs.insert(s.intern(name));
                }
                if formal_out.contains_key(&(callee, ret)) {
                    out_locs.insert(ret);
                }
            }
            if opaque(call) {
                in_locs.insert(star);
                out_locs.insert(star);
                out_locs.insert(ret);
            }
            let mut mine = Vec::new();
            for &l in &in_locs {
                let v = s.add_vertex(VertexKind::ActualIn(l), c, f);
                s.add_edge(c, v, DepKind::Control);
                actual_in.insert((c, l), v);
                mine.push(v);
            }
            for &l in &out_locs {
                let v = s.add_vertex(VertexKind::ActualOut(l), c, f);
                s.add_edge(c, v, DepKind::Control);
                actual_out.insert((c, l), v);
                mine.push(v);
            }
            if let (Some(r), Some(&v)) = (&call.result, actual_out.get(&(c, ret))) {
                ssa_result.insert((f, r.clone()), v);
            }
            for &callee in &call.callees {
                let entry = g.function(callee).entry;
                s.add_edge(c, entry, DepKind::Call);
                for &l in &in_locs {
                    if let Some(&fi) = formal_in.get(&(callee, l)) {
                        s.add_edge(actual_in[&(c, l)], fi, DepKind::ParamIn);
                    }
                }
                for &l in &out_locs {
                    if let Some(&fo) = formal_out.get(&(callee, l)) {
                        s.add_edge(fo, actual_out[&(c, l)], DepKind::ParamOut);
                    }
                }
            }
            if opaque(call) {
                for &li in &in_locs {
                    for &lo in &out_locs {
                        s.add_edge(actual_in[&(c, li)], actual_out[&(c, lo)], DepKind::Summary);
                    }
                }
            }
            s.actuals.insert(c, mine);
        }
        (actual_in, actual_out, ssa_result)
    }

    /// Ferrante–Ottenstein–Warren control dependence from post-dominators, plus entry → every
    /// node that depends on nothing else.
    fn control_dependence(&mut self, g: &ProgramGraph, f: FuncId) {
        use petgraph::algo::dominators::simple_fast;
        use petgraph::graph::{DiGraph, NodeIndex};
        let func = g.function(f);
        let local = local_index(func);
        // Reverse CFG rooted at the exit; entry → exit added (the usual augmentation), and
        // every node that cannot reach the exit gets a virtual edge to it.
        let mut rev: DiGraph<(), ()> = DiGraph::with_capacity(func.nodes.len(), 0);
        for _ in &func.nodes {
            rev.add_node(());
        }
        let exit = local[&func.exit];
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); func.nodes.len()];
        for (i, &n) in func.nodes.iter().enumerate() {
            for &m in &g.succs[n as usize] {
                if let Some(&j) = local.get(&m) {
                    succs[i].push(j);
                }
            }
        }
        succs[local[&func.entry]].push(exit);
        let mut reaches = vec![false; func.nodes.len()];
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); func.nodes.len()];
        for (i, ss) in succs.iter().enumerate() {
            for &j in ss {
                preds[j].push(i);
            }
        }
        let mut stack = vec![exit];
        reaches[exit] = true;
        while let Some(v) = stack.pop() {
            for &p in &preds[v] {
                if !reaches[p] {
                    reaches[p] = true;
                    stack.push(p);
                }
            }
        }
        for (i, r) in reaches.iter().enumerate() {
            if !r && i != exit {
                succs[i].push(exit);
            }
        }
        for (i, ss) in succs.iter().enumerate() {
            for &j in ss {
                rev.add_edge(NodeIndex::new(j), NodeIndex::new(i), ());
            }
        }
        let pdom = simple_fast(&rev, NodeIndex::new(exit));
        let ipdom = |i: usize| {
            pdom.immediate_dominator(NodeIndex::new(i))
                .map(|x| x.index())
        };
        let entry = local[&func.entry];
        let mut has_parent = vec![false; func.nodes.len()];
        let mut cd: BTreeSet<(usize, usize)> = BTreeSet::new();
        for (a, ss) in succs.iter().enumerate() {
            if ss.len() < 2 {
                continue;
            }
            let stop = ipdom(a);
            for &b in ss {
                let mut x = Some(b);
                while let Some(y) = x {
                    if Some(y) == stop {
                        break;
                    }
                    if y != exit {
                        cd.insert((a, y));
                        has_parent[y] |= a != entry;
                    }
                    x = ipdom(y);
                    if x == Some(y) {
                        break;
                    }
                }
            }
        }
        // A node's statements run together: each depends on what the node depends on.
        let targets = |s: &Sdg, n: NodeId| -> Vec<VertexId> {
            s.stmts.get(&n).cloned().unwrap_or_else(|| vec![n])
        };
        for (a, b) in cd {
            if a == entry {
                continue;
            }
            for t in targets(self, func.nodes[b]) {
                self.add_edge(func.nodes[a], t, DepKind::Control);
            }
        }
        for (i, &n) in func.nodes.iter().enumerate() {
            if i != entry && i != exit {
                // Nodes controlled only by the entry (or by nothing: dead code).
                if !has_parent[i] {
                    for t in targets(self, n) {
                        self.add_edge(func.entry, t, DepKind::Control);
                    }
                }
            }
        }
    }

    /// Reaching definitions over the function's named locations; SSA values link to their def.
    fn data_dependence(
        &mut self,
        g: &ProgramGraph,
        f: FuncId,
        formal_in: &HashMap<(FuncId, LocId), VertexId>,
        formal_out: &HashMap<(FuncId, LocId), VertexId>,
        ssa_result: &HashMap<(FuncId, String), VertexId>,
    ) {
        let func = g.function(f);
        let precise = func.precise_def_use;
        let escaped: BTreeSet<&str> = func.escaped.iter().map(String::as_str).collect();
        let star = self.intern(STAR);
        let local = local_index(func);
        let fd = self.def_sites(g, f, &local, formal_in, ssa_result);
        let mut defs_of: HashMap<LocId, Vec<usize>> = HashMap::new();
        for (k, d) in fd.defs.iter().enumerate() {
            defs_of.entry(d.loc).or_default().push(k);
        }
        let mut uses = Uses {
            precise,
            escaped: &escaped,
            star,
            fd: &fd,
            defs_of: &defs_of,
            aliasable_defs: Vec::new(),
        };
        uses.aliasable_defs = (0..fd.defs.len())
            .filter(|&k| uses.aliasable(&self.locs[fd.defs[k].loc as usize]))
            .collect();
        let (inb, mid) = reaching_definitions(g, func, &local, &fd, &defs_of);
        // Uses.
        let mut new_edges: Vec<(VertexId, VertexId, LocId)> = Vec::new();
        for (i, &n) in func.nodes.iter().enumerate() {
            self.node_uses(g, n, &uses, &inb[i], &mid[i], &mut new_edges);
        }
        let exit = local[&func.exit];
        for (&(ff, l), &v) in formal_out.iter() {
            if ff == f {
                let name = self.locs[l as usize].clone();
                uses.resolve(self, v, &name, &inb[exit], &mut new_edges);
                if !precise && name == RET {
                    // Old def/use sets do not say what is returned: whatever ran last may be.
                    for &p in &g.preds[func.exit as usize] {
                        new_edges.push((p, v, l));
                    }
                }
            }
        }
        if !precise {
            // Nor what a call's result flows into: the code right after the call may use it
            // (and anything the callee wrote).
            for &n in &func.nodes {
                if g.node(n).call.is_none() {
                    continue;
                }
                for &v in self.actuals.get(&n).map(Vec::as_slice).unwrap_or(&[]) {
                    if let VertexKind::ActualOut(l) = self.vertices[v as usize].kind {
                        for &s in &g.succs[n as usize] {
                            new_edges.push((v, s, l));
                        }
                    }
                }
            }
        }
        for (a, b, l) in new_edges {
            self.add_edge(a, b, DepKind::Data(l));
        }
    }

    /// Per statement of node `n`: (vertex, uses, must-defs, may-defs); one for unsplit nodes.
    fn stmt_sets(&self, g: &ProgramGraph, n: NodeId) -> Vec<StmtSets> {
        let node = g.node(n);
        match self.stmts.get(&n) {
            Some(vs) => vs
                .iter()
                .zip(&node.stmts)
                .map(|(&v, st)| {
                    (
                        v,
                        st.uses.clone(),
                        st.must_defs.clone(),
                        st.may_defs.clone(),
                    )
                })
                .collect(),
            None => vec![(
                n,
                node.uses.clone(),
                node.must_defs.clone(),
                node.may_defs.clone(),
            )],
        }
    }

    /// The def sites of function `f` for reaching definitions: each statement's must- and
    /// may-defs, the formal-ins at the entry (phase A of a node), the actual-outs of its calls
    /// (phase B, after the call); and the defining vertex of each SSA value.
    fn def_sites(
        &mut self,
        g: &ProgramGraph,
        f: FuncId,
        local: &HashMap<NodeId, usize>,
        formal_in: &HashMap<(FuncId, LocId), VertexId>,
        ssa_result: &HashMap<(FuncId, String), VertexId>,
    ) -> FuncDefs {
        let func = g.function(f);
        let precise = func.precise_def_use;
        let nn = func.nodes.len();
        let mut fd = FuncDefs {
            defs: Vec::new(),
            gen_a: vec![Vec::new(); nn],
            kill_a_locs: vec![Vec::new(); nn],
            gen_b: vec![Vec::new(); nn],
            ssa_def: HashMap::new(),
            stmt_defs: HashMap::new(),
        };
        let FuncDefs {
            defs,
            gen_a,
            kill_a_locs,
            gen_b,
            ssa_def,
            stmt_defs,
        } = &mut fd;
        for (i, &n) in func.nodes.iter().enumerate() {
            let node = g.node(n);
            for (v, _, must, may) in self.stmt_sets(g, n) {
                for d in &must {
                    if precise && is_ssa(d) {
                        ssa_def.insert(d.clone(), v);
                        continue;
                    }
                    let l = self.intern(d);
                    gen_a[i].push(defs.len());
                    stmt_defs.entry(v).or_default().push((defs.len(), true));
                    defs.push(DefSite { vertex: v, loc: l });
                    kill_a_locs[i].push(l);
                }
                for d in &may {
                    let l = self.intern(d);
                    gen_a[i].push(defs.len());
                    stmt_defs.entry(v).or_default().push((defs.len(), false));
                    defs.push(DefSite { vertex: v, loc: l });
                }
            }
            if node.call.is_some() {
                for &v in self.actuals.get(&n).map(Vec::as_slice).unwrap_or(&[]) {
                    if let VertexKind::ActualOut(l) = self.vertices[v as usize].kind {
                        if self.locs[l as usize] == RET {
                            continue; // the result is an SSA value (`ssa_result`)
                        }
                        gen_b[i].push(defs.len());
                        defs.push(DefSite { vertex: v, loc: l });
                    }
                }
            }
        }
        let entry = local[&func.entry];
        for (&(ff, l), &v) in formal_in.iter() {
            if ff != f {
                continue;
            }
            let name = self.locs[l as usize].clone();
            if precise && is_ssa(&name) {
                ssa_def.insert(name, v);
                continue;
            }
            gen_a[entry].push(defs.len());
            defs.push(DefSite { vertex: v, loc: l });
            kill_a_locs[entry].push(l);
        }
        for ((ff, r), &v) in ssa_result {
            if *ff == f {
                ssa_def.insert(r.clone(), v);
            }
        }
        fd
    }

    /// The data dependences into node `n`'s statements (from the earlier statements of the
    /// node, else from the definitions reaching the node, `inb`) and into its call's
    /// actual-ins (from the definitions reaching the call, `mid`).
    fn node_uses(
        &mut self,
        g: &ProgramGraph,
        n: NodeId,
        uses: &Uses,
        inb: &Bits,
        mid: &Bits,
        new_edges: &mut Vec<(VertexId, VertexId, LocId)>,
    ) {
        let precise = uses.precise;
        let node = g.node(n);
        let stmts = self.stmt_sets(g, n);
        for (k, (v, stmt_uses, _, _)) in stmts.iter().enumerate() {
            for u in stmt_uses {
                if k == 0 || (precise && is_ssa(u)) {
                    uses.resolve(self, *v, u, inb, new_edges);
                    continue;
                }
                // A later statement: the node's earlier statements back to the last that
                // must-define `u`, then (if none does) what reaches the node.
                let l = self.intern(u);
                let mut killed = false;
                for (w, _, _, _) in stmts[..k].iter().rev() {
                    for &(d, must) in uses.fd.stmt_defs.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                        let dl = uses.fd.defs[d].loc;
                        let dn = self.locs[dl as usize].as_str();
                        let alias = dl == l
                            || (u == STAR && uses.aliasable(dn))
                            || (dn == STAR && uses.aliasable(u));
                        if alias {
                            new_edges.push((*w, *v, l));
                            killed |= must && dl == l;
                        }
                    }
                    if killed {
                        break;
                    }
                }
                if !killed {
                    uses.resolve(self, *v, u, inb, new_edges);
                }
            }
        }
        if let Some(call) = &node.call {
            let vs: Vec<VertexId> = self.actuals.get(&n).cloned().unwrap_or_default();
            for v in vs {
                let VertexKind::ActualIn(l) = self.vertices[v as usize].kind else {
                    continue;
                };
                let name = self.locs[l as usize].clone();
                if !precise {
                    // Old def/use sets: the call node's own uses feed every actual.
                    new_edges.push((n, v, l));
                }
                if let Some(i_arg) = name
                    .strip_prefix("%arg")
                    .and_then(|x| x.parse::<usize>().ok())
                {
                    match call.args.as_ref() {
                        Some(args) => {
                            for a in args.get(i_arg).into_iter().flatten() {
                                uses.resolve(self, v, a, mid, new_edges);
                            }
                        }
                        // Arguments unknown: the whole call node feeds every actual.
                        None => new_edges.push((n, v, l)),
                    }
                } else {
                    uses.resolve(self, v, &name, mid, new_edges);
                }
            }
        }
    }

    /// Horwitz–Reps–Binkley summary edges: actual-in → actual-out wherever the callee's
    /// formal-out is reachable backward from its formal-in through intraprocedural and summary
    /// edges; iterated to a fixed point for recursion.
    fn summary_edges(
        &mut self,
        g: &ProgramGraph,
        formal_in: &HashMap<(FuncId, LocId), VertexId>,
        formal_out: &HashMap<(FuncId, LocId), VertexId>,
        actual_in: &HashMap<(NodeId, LocId), VertexId>,
        actual_out: &HashMap<(NodeId, LocId), VertexId>,
    ) {
        let callers = g.callers();
        let mut outs_of: Vec<Vec<(LocId, VertexId)>> = vec![Vec::new(); g.functions.len()];
        for (&(f, l), &v) in formal_out {
            outs_of[f as usize].push((l, v));
        }
        let mut ins_at: HashMap<VertexId, LocId> = HashMap::new();
        for (&(_, l), &v) in formal_in {
            ins_at.insert(v, l);
        }
        let mut have: BTreeSet<(VertexId, VertexId)> = BTreeSet::new();
        // Worklist of functions whose summaries may have grown.
        let mut queued: Vec<bool> = vec![true; g.functions.len()];
        let mut work: std::collections::VecDeque<usize> = (0..g.functions.len()).collect();
        let mut mark = vec![u32::MAX; self.vertices.len()];
        let mut epoch = 0u32;
        while let Some(f) = work.pop_front() {
            queued[f] = false;
            for &(lo, fo) in &outs_of[f] {
                epoch += 1;
                let mut stack = vec![fo];
                mark[fo as usize] = epoch;
                let mut reached_ins: Vec<LocId> = Vec::new();
                while let Some(v) = stack.pop() {
                    if let Some(&l) = ins_at.get(&v) {
                        reached_ins.push(l);
                        continue;
                    }
                    for &e in &self.preds[v as usize] {
                        let e = self.edges[e as usize];
                        if e.kind.intraprocedural() && mark[e.from as usize] != epoch {
                            mark[e.from as usize] = epoch;
                            stack.push(e.from);
                        }
                    }
                }
                for &c in &callers[f] {
                    let Some(&ao) = actual_out.get(&(c, lo)) else {
                        continue;
                    };
                    for &li in &reached_ins {
                        let Some(&ai) = actual_in.get(&(c, li)) else {
                            continue;
                        };
                        if have.insert((ai, ao)) {
                            self.add_edge(ai, ao, DepKind::Summary);
                            let caller = g.node(c).function as usize;
                            if !queued[caller] {
                                queued[caller] = true;
                                work.push_back(caller);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The nonlocal locations each function reads (GREF) and writes (GMOD), through its callees
/// too (iterated to a fixed point): `*`, globals (`@…`), and for functions without precise
/// def/use sets every name that is not an SSA value.
fn nonlocal_refs_and_mods(g: &ProgramGraph) -> (Vec<BTreeSet<String>>, Vec<BTreeSet<String>>) {
    let nonlocal = |f: FuncId, name: &str| -> bool {
        name == STAR
            || name.starts_with('@')
            || (!g.function(f).precise_def_use && !name.starts_with('%'))
    };
    let nf = g.functions.len();
    let mut gref: Vec<BTreeSet<String>> = vec![BTreeSet::new(); nf];
    let mut gmod: Vec<BTreeSet<String>> = vec![BTreeSet::new(); nf];
    for n in &g.nodes {
        let f = n.function as usize;
        for u in &n.uses {
            if nonlocal(n.function, u) {
                gref[f].insert(u.clone());
            }
        }
        for d in n.must_defs.iter().chain(&n.may_defs) {
            if nonlocal(n.function, d) {
                gmod[f].insert(d.clone());
            }
        }
        if n.call.as_ref().is_some_and(opaque) {
            gref[f].insert(STAR.into());
            gmod[f].insert(STAR.into());
        }
    }
    loop {
        let mut changed = false;
        for n in &g.nodes {
            let f = n.function as usize;
            let Some(call) = &n.call else { continue };
            for &c in &call.callees {
                if c as usize == f {
                    continue;
                }
                let (r, m) = (gref[c as usize].clone(), gmod[c as usize].clone());
                let (before_r, before_m) = (gref[f].len(), gmod[f].len());
                gref[f].extend(r);
                gmod[f].extend(m);
                changed |= gref[f].len() != before_r || gmod[f].len() != before_m;
            }
        }
        if !changed {
            break;
        }
    }
    (gref, gmod)
}

/// Position of each of a function's nodes in `func.nodes`.
fn local_index(func: &csi_model::Function) -> HashMap<NodeId, usize> {
    func.nodes
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i))
        .collect()
}

/// A call whose effects the graph cannot describe: no callee in the graph, or through a
/// pointer (library code may be the target).
fn opaque(call: &csi_model::graph::Call) -> bool {
    call.callees.is_empty() || call.indirect
}
