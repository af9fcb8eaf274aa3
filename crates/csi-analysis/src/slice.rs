//! Restricted slicing (dissertation §5.2.2, Figs. 5.5–5.8): the system dependence graph
//! restricted to the dependences that may have been active in *this* run, and callstack-
//! sensitive backward slices over it and over the unrestricted graph.
//!
//! Restriction, per frame of the thread's stack (Figs. 5.6 and 5.7, with the frame's function
//! reduced by the frame's own best-effort coverage instead of Fig. 5.3's `coverage_reduce`):
//! walking the frame's path trace backward, each path entry keeps only the control-dependence
//! edge from the latest earlier path entry that controls it, and for each location it uses the
//! data-dependence edges from earlier path entries up to the first one that must define it;
//! entries whose controller or definitions lie before the trace keep every edge from nodes that
//! may have run before the trace (`reachable`), and so do those nodes themselves. Every kept
//! edge joins two nodes that may have run in that activation.
//!
//! Two refinements over the figures, both sound: the restriction is kept *per frame* (Fig. 5.8
//! unions the frames of a function), and the slice uses a frame's restriction only in that
//! frame's context; invocations that returned (reached through parameter-out edges) and code
//! reached context-insensitively use every edge between nodes that may have run at all
//! (global best-effort coverage), which covers Fig. 5.8's worklist step. And when a frame's
//! path trace starts at the function's entry (the ring never wrapped), nothing ran before it,
//! so `reachable` is just the entry.
//!
//! Slices are callstack-sensitive (Krinke): from a vertex in frame *k*'s context the slice
//! ascends only to frame *k+1*'s call site; invocations below are entered only through
//! parameter-out edges and never ascended from (the second phase of Horwitz–Reps–Binkley).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use csi_model::{Coverage, FailureReport, Frame, NodeId, ProgramGraph};

use crate::becp::Coverages;
use crate::sdg::{DepKind, Edge, EdgeId, Sdg, VertexId, VertexKind};

/// Where a slice starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceCriterion {
    /// Thread whose stack gives the calling contexts.
    pub thread: usize,
    /// The frame (index in the thread's frames) whose activation the criterion is in; `None`
    /// for a line sliced over every calling context.
    pub frame: Option<usize>,
    /// The criterion's nodes (all nodes of a line, or a frame's point).
    pub nodes: Vec<NodeId>,
    /// Only these variables (source names); `None` = every location used there.
    pub variables: Option<Vec<String>>,
    /// The line picked (1-based): of a node with several statements, only that line's.
    /// `None`: the frame's position (the crash's statement, or the in-progress call).
    pub line: Option<u32>,
}

/// The restriction of the SDG by one thread's trace data.
#[derive(Clone, Debug, Default)]
pub struct Restriction {
    pub thread: usize,
    /// Node may have run at all (global best-effort coverage is not No).
    pub alive: Vec<bool>,
    /// Per frame of the thread: the kept intraprocedural edges and the nodes that may have run
    /// in that activation (`None` for frames outside the graph).
    pub frames: Vec<Option<FrameRestriction>>,
}

#[derive(Clone, Debug, Default)]
pub struct FrameRestriction {
    pub edges: HashSet<EdgeId>,
    pub alive: HashSet<NodeId>,
}

/// A slice: the vertices reached, projected to source lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    pub vertices: BTreeSet<VertexId>,
    /// File → lines (1-based).
    pub lines: BTreeMap<String, BTreeSet<u32>>,
    /// Reached vertices that have a source line (the dissertation's slice size).
    pub vertices_with_lines: usize,
    /// Variables asked for that no location at the criterion matched.
    pub unknown_variables: Vec<String>,
}

impl Slice {
    pub fn line_count(&self) -> usize {
        self.lines.values().map(BTreeSet::len).sum()
    }
}

/// Computes the restriction for one thread (Figs. 5.5–5.8).
pub fn restrict(
    g: &ProgramGraph,
    sdg: &Sdg,
    report: &FailureReport,
    cov: &Coverages,
    thread: usize,
) -> Restriction {
    let alive: Vec<bool> = (0..g.node_count())
        .map(|n| cov.global.get(n).is_none_or(|&c| c != Coverage::No))
        .collect();
    let mut frames = Vec::new();
    if let Some(t) = report.threads.get(thread) {
        for (k, fr) in t.frames.iter().enumerate() {
            let Some(f) = fr.function else {
                frames.push(None);
                continue;
            };
            let local = cov
                .frames
                .iter()
                .find(|fc| fc.thread == thread && fc.frame == k && fc.function == f);
            let frame_alive = |n: NodeId| {
                alive[n as usize]
                    && local
                        .and_then(|fc| fc.status.get(&n))
                        .is_none_or(|&c| c != Coverage::No)
            };
            frames.push(Some(frame_retain(g, sdg, fr, f, &frame_alive)));
        }
    }
    Restriction {
        thread,
        alive,
        frames,
    }
}

fn is_ssa_label(name: &str) -> bool {
    name.starts_with('%') && !name.starts_with("%slot")
}

/// Figs. 5.6 and 5.7 for one activation.
fn frame_retain(
    g: &ProgramGraph,
    sdg: &Sdg,
    fr: &Frame,
    f: csi_model::FuncId,
    frame_alive: &dyn Fn(NodeId) -> bool,
) -> FrameRestriction {
    let func = g.function(f);
    let alive: HashSet<NodeId> = func
        .nodes
        .iter()
        .copied()
        .filter(|&n| frame_alive(n))
        .collect();
    let mut path: Vec<NodeId> = Vec::new();
    let starts: Vec<NodeId> = if fr.point.len() == 1 {
        path.extend(fr.path.iter().copied().filter(|n| g.node(*n).function == f));
        path.push(fr.point[0]);
        vec![path[0]]
    } else {
        // An ambiguous position: no trustworthy suffix, everything before the candidates.
        fr.point.clone()
    };
    let reachable: HashSet<NodeId> = if fr.path_from_entry && fr.point.len() == 1 {
        [func.entry].into_iter().collect()
    } else {
        let mut seen: HashSet<NodeId> = HashSet::new();
        let mut stack: Vec<NodeId> = starts
            .iter()
            .copied()
            .filter(|n| alive.contains(n))
            .collect();
        seen.extend(stack.iter().copied());
        while let Some(v) = stack.pop() {
            for &p in &g.preds[v as usize] {
                if alive.contains(&p) && seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        seen.insert(func.entry);
        seen
    };
    let on_path: HashSet<NodeId> = path.iter().copied().collect();
    let mut edges: HashSet<EdgeId> = HashSet::new();
    // Incoming intraprocedural edges by host node.
    let mut into_host: HashMap<NodeId, Vec<EdgeId>> = HashMap::new();
    for &v in &sdg.by_function[f as usize] {
        let h = sdg.vertices[v as usize].host;
        for &e in &sdg.preds[v as usize] {
            if sdg.edges[e as usize].kind.intraprocedural() {
                into_host.entry(h).or_default().push(e);
            }
        }
    }
    let from_host = |e: EdgeId| sdg.vertices[sdg.edges[e as usize].from as usize].host;
    let ok = |e: EdgeId, h: NodeId| alive.contains(&h) && alive.contains(&from_host(e));
    for (&h, es) in &into_host {
        for &e in es {
            if !ok(e, h) {
                continue;
            }
            let fh = from_host(e);
            // Nodes that may have run before the trace keep everything; so do edges inside one
            // node (a call and its own actuals, summary edges of a call that may have run).
            if reachable.contains(&h)
                || (fh == h && (on_path.contains(&h) || reachable.contains(&h)))
            {
                edges.insert(e);
            }
        }
    }
    let must_defs =
        |p: NodeId| -> HashSet<&str> { g.node(p).must_defs.iter().map(String::as_str).collect() };
    for i in (0..path.len()).rev() {
        let n = path[i];
        let incoming: &[EdgeId] = into_host.get(&n).map(Vec::as_slice).unwrap_or(&[]);
        let mut ctrl_open = incoming
            .iter()
            .any(|&e| sdg.edges[e as usize].kind == DepKind::Control && from_host(e) != n);
        let mut data_open: HashSet<u32> = incoming
            .iter()
            .filter_map(|&e| match sdg.edges[e as usize].kind {
                DepKind::Data(l) => Some(l),
                _ => None,
            })
            .collect();
        for j in (0..i).rev() {
            if !ctrl_open && data_open.is_empty() {
                break;
            }
            let p = path[j];
            let defs = must_defs(p);
            let mut attributed: Vec<u32> = Vec::new();
            let mut controls = false;
            for &e in incoming {
                if from_host(e) != p || !ok(e, n) {
                    continue;
                }
                match sdg.edges[e as usize].kind {
                    // p controls n: the edges to n and to each of its statements.
                    DepKind::Control
                        if ctrl_open
                            && matches!(
                                sdg.vertices[sdg.edges[e as usize].to as usize].kind,
                                VertexKind::Node | VertexKind::Stmt(_)
                            ) =>
                    {
                        edges.insert(e);
                        controls = true;
                    }
                    DepKind::Data(l) if data_open.contains(&l) => {
                        edges.insert(e);
                        let name = sdg.loc_name(l);
                        if is_ssa_label(name) || defs.contains(name) {
                            attributed.push(l);
                        }
                    }
                    DepKind::Summary => {
                        edges.insert(e);
                    }
                    _ => {}
                }
            }
            for l in attributed {
                data_open.remove(&l);
            }
            ctrl_open &= !controls;
        }
        // Unattributed: every edge from a node that may have run before the trace.
        for &e in incoming {
            let fh = from_host(e);
            if !reachable.contains(&fh) || !ok(e, n) {
                continue;
            }
            match sdg.edges[e as usize].kind {
                DepKind::Control if ctrl_open => {
                    edges.insert(e);
                }
                DepKind::Data(l) if data_open.contains(&l) => {
                    edges.insert(e);
                }
                DepKind::Summary => {
                    edges.insert(e);
                }
                _ => {}
            }
        }
    }
    let mut keep_alive: HashSet<NodeId> = reachable;
    keep_alive.extend(on_path);
    keep_alive.retain(|n| alive.contains(n));
    FrameRestriction {
        edges,
        alive: keep_alive,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Ctx {
    /// In the activation of frame k: ascends only to frame k+1's call.
    Frame(u32),
    /// Context-insensitive, may ascend to any caller (first phase of HRB).
    Up,
    /// Inside a returned invocation: never ascends (second phase).
    Down,
}

/// Options of one slice.
#[derive(Clone, Copy, Debug)]
pub struct SliceOptions<'a> {
    /// `None` = the unrestricted (static) slice.
    pub restriction: Option<&'a Restriction>,
    /// Follow call, parameter and return edges (else stay in the criterion's function).
    pub interprocedural: bool,
}

/// A backward slice from `criterion`.
pub fn slice(
    g: &ProgramGraph,
    sdg: &Sdg,
    report: &FailureReport,
    criterion: &SliceCriterion,
    opts: SliceOptions<'_>,
) -> Slice {
    let frames: &[Frame] = report
        .threads
        .get(criterion.thread)
        .map(|t| t.frames.as_slice())
        .unwrap_or(&[]);
    let start_ctx = match criterion.frame {
        Some(k) if frames.get(k).is_some_and(|f| f.function.is_some()) => Ctx::Frame(k as u32),
        _ => Ctx::Up,
    };
    let mut walk = SliceWalk {
        g,
        sdg,
        frames,
        opts,
        seen: HashSet::new(),
        stack: Vec::new(),
        result: BTreeSet::new(),
    };
    let starts = walk.start_vertices(criterion, start_ctx);
    let mut unknown: Vec<String> = Vec::new();
    match &criterion.variables {
        None => {
            for &v in &starts {
                walk.push(v, start_ctx);
            }
        }
        Some(vars) => unknown = walk.seed_variables(&starts, vars, start_ctx),
    }
    walk.run();
    project_to_lines(g, sdg, walk.result, unknown)
}

/// The state of one backward slice: the criterion thread's frames (the calling contexts),
/// the options, and the worklist of (vertex, context) pairs.
struct SliceWalk<'a> {
    g: &'a ProgramGraph,
    sdg: &'a Sdg,
    frames: &'a [Frame],
    opts: SliceOptions<'a>,
    seen: HashSet<(VertexId, Ctx)>,
    stack: Vec<(VertexId, Ctx)>,
    result: BTreeSet<VertexId>,
}

impl SliceWalk<'_> {
    /// The next frame out that is in the graph, and whether frame k's caller is that frame's
    /// call (else library code called frame k, and the whole outer call feeds it).
    fn outer(&self, k: usize) -> Option<usize> {
        (k + 1..self.frames.len()).find(|&j| self.frames[j].function.is_some())
    }

    /// Whether the slice follows edge `e` from a vertex in `ctx`: always unrestricted, else
    /// only if the dependence may have been active there.
    fn edge_ok(&self, e: EdgeId, ctx: Ctx) -> bool {
        let Some(r) = self.opts.restriction else {
            return true;
        };
        let sdg = self.sdg;
        let edge = &sdg.edges[e as usize];
        let (h, fh) = (
            sdg.vertices[edge.to as usize].host,
            sdg.vertices[edge.from as usize].host,
        );
        match ctx {
            Ctx::Frame(k) if edge.kind.intraprocedural() => match &r.frames.get(k as usize) {
                Some(Some(fr)) => fr.edges.contains(&e),
                _ => r.alive[h as usize] && r.alive[fh as usize],
            },
            Ctx::Frame(k) if edge.kind == DepKind::ParamOut => match &r.frames.get(k as usize) {
                Some(Some(fr)) => fr.alive.contains(&h) && r.alive[fh as usize],
                _ => r.alive[h as usize] && r.alive[fh as usize],
            },
            _ => r.alive[h as usize] && r.alive[fh as usize],
        }
    }

    fn push(&mut self, v: VertexId, c: Ctx) {
        if self.seen.insert((v, c)) {
            self.stack.push((v, c));
        }
    }

    /// Where the slice starts: the criterion nodes and their actual-ins (an in-progress call's arguments).
    /// Restricted, only those that may have run (in the frame's activation, when it has one):
    /// a line's code after the frame's in-progress call did not.
    fn start_vertices(&self, criterion: &SliceCriterion, start_ctx: Ctx) -> Vec<VertexId> {
        let sdg = self.sdg;
        let ran = |n: NodeId| -> bool {
            let Some(r) = self.opts.restriction else {
                return true;
            };
            match (start_ctx, criterion.frame) {
                (Ctx::Frame(_), Some(k)) => match r.frames.get(k) {
                    Some(Some(fr)) => fr.alive.contains(&n),
                    _ => r.alive[n as usize],
                },
                _ => r.alive[n as usize],
            }
        };
        let mut starts: Vec<VertexId> = Vec::new();
        for &n in criterion.nodes.iter().filter(|&&n| ran(n)) {
            starts.extend(self.criterion_statements(criterion, n));
            starts.extend(
                sdg.actuals
                    .get(&n)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|&v| matches!(sdg.vertices[v as usize].kind, VertexKind::ActualIn(_))),
            );
        }
        starts
    }

    /// Of a node with several statements: the picked line's, else the statement the frame
    /// stopped in (its last, the call, when it is in a call).
    fn criterion_statements(&self, criterion: &SliceCriterion, n: NodeId) -> Vec<VertexId> {
        let sdg = self.sdg;
        let stopped_line = criterion
            .frame
            .and_then(|k| self.frames.get(k))
            .and_then(|f| f.stopped_at)
            .map(|p| p.line)
            .filter(|&l| l != 0);
        let Some(vs) = sdg.stmts.get(&n) else {
            return vec![n];
        };
        let picked: Vec<VertexId> = match criterion.line.or(stopped_line) {
            Some(l) => vs
                .iter()
                .copied()
                .filter(|v| sdg.vertex_line.get(v) == Some(&Some(l)))
                .collect(),
            None => vec![n],
        };
        if picked.is_empty() {
            vs.clone()
        } else {
            picked
        }
    }

    /// Only the data dependences for the named variables; the criterion's own lines. Returns
    /// the variables that no location at the criterion matched.
    fn seed_variables(
        &mut self,
        starts: &[VertexId],
        vars: &[String],
        start_ctx: Ctx,
    ) -> Vec<String> {
        let sdg = self.sdg;
        let matches = |label: &str, var: &str| {
            label == var
                || label.strip_suffix(".addr") == Some(var)
                || label.strip_prefix('@') == Some(var)
        };
        let mut used: HashSet<&str> = HashSet::new();
        for &v in starts {
            self.result.insert(v);
            for &e in &sdg.preds[v as usize] {
                let edge = &sdg.edges[e as usize];
                if let DepKind::Data(l) = edge.kind {
                    let label = sdg.loc_name(l);
                    if let Some(var) = vars.iter().find(|var| matches(label, var)) {
                        used.insert(var.as_str());
                        if self.edge_ok(e, start_ctx) {
                            self.push(edge.from, start_ctx);
                        }
                    }
                }
            }
        }
        vars.iter()
            .filter(|v| !used.contains(v.as_str()))
            .cloned()
            .collect()
    }

    /// Works the stack off: every vertex reached, in every context it is reached in.
    fn run(&mut self) {
        let sdg = self.sdg;
        while let Some((v, ctx)) = self.stack.pop() {
            self.result.insert(v);
            for &e in &sdg.preds[v as usize] {
                let edge = sdg.edges[e as usize];
                if let Some(next) = self.context_across(edge, ctx) {
                    if self.edge_ok(e, ctx) {
                        self.push(edge.from, next);
                    }
                }
            }
            self.enter_from_outside(v, ctx);
        }
    }

    /// The context of `edge`'s source, from a vertex in `ctx`; `None` when the slice does not
    /// follow the edge.
    fn context_across(&self, edge: Edge, ctx: Ctx) -> Option<Ctx> {
        let frames = self.frames;
        match edge.kind {
            k if k.intraprocedural() => Some(ctx),
            _ if !self.opts.interprocedural => None,
            DepKind::ParamOut => Some(Ctx::Down),
            DepKind::ParamIn | DepKind::Call => match ctx {
                Ctx::Down => None,
                Ctx::Up => Some(Ctx::Up),
                Ctx::Frame(k) => {
                    let k = k as usize;
                    match self.outer(k) {
                        // The caller is the next frame's call: ascend only there.
                        Some(j) if !frames[k].called_from_outside => frames[j]
                            .point
                            .contains(&self.sdg.vertices[edge.from as usize].host)
                            .then_some(Ctx::Frame(j as u32)),
                        // Called by library code: handled below, once per vertex.
                        Some(_) => None,
                        // No caller on the stack (truncated stack): any caller.
                        None => Some(Ctx::Up),
                    }
                }
            },
            _ => None,
        }
    }

    /// Frame k was entered from library code that the next program frame's call ran: its
    /// entry and inputs may depend on everything that call passed.
    fn enter_from_outside(&mut self, v: VertexId, ctx: Ctx) {
        let (g, sdg, frames) = (self.g, self.sdg, self.frames);
        if let (Ctx::Frame(k), true) = (ctx, self.opts.interprocedural) {
            let k = k as usize;
            let vk = sdg.vertices[v as usize];
            let at_entry =
                v == g.function(vk.function).entry || matches!(vk.kind, VertexKind::FormalIn(_));
            if at_entry && frames[k].called_from_outside {
                if let Some(j) = self.outer(k) {
                    for &c in &frames[j].point {
                        self.push(c, Ctx::Frame(j as u32));
                        for &a in sdg.actuals.get(&c).into_iter().flatten() {
                            if matches!(sdg.vertices[a as usize].kind, VertexKind::ActualIn(_)) {
                                self.push(a, Ctx::Frame(j as u32));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The slice of the vertices reached: their source lines, by file.
fn project_to_lines(
    g: &ProgramGraph,
    sdg: &Sdg,
    result: BTreeSet<VertexId>,
    unknown: Vec<String>,
) -> Slice {
    let mut lines: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut with_lines = 0;
    for &v in &result {
        let h = sdg.vertices[v as usize].host;
        let vl = vertex_lines(g, sdg, v);
        with_lines += usize::from(!vl.is_empty());
        if let (Some(file), false) = (g.file_of(h), vl.is_empty()) {
            lines
                .entry(g.file_name(file).to_string())
                .or_default()
                .extend(vl);
        }
    }
    Slice {
        vertices: result,
        lines,
        vertices_with_lines: with_lines,
        unknown_variables: unknown,
    }
}

/// Source lines a vertex stands for: its statement's line, else its host node's lines.
/// Actuals stand for their call, the host's last statement.
fn vertex_lines(g: &ProgramGraph, sdg: &Sdg, v: VertexId) -> Vec<u32> {
    let host = sdg.vertices[v as usize].host;
    let own = sdg
        .vertex_line
        .get(&v)
        .or_else(|| match sdg.vertices[v as usize].kind {
            VertexKind::ActualIn(_) | VertexKind::ActualOut(_) => sdg.vertex_line.get(&host),
            _ => None,
        });
    match own {
        Some(l) => l.iter().copied().filter(|&l| l > 0).collect(),
        None => g.node(host).lines().collect(),
    }
}

/// The criterion "the crash point": the innermost frame of `thread` that is in the graph, and
/// every location used at its point.
pub fn crash_criterion(report: &FailureReport, thread: usize) -> Option<SliceCriterion> {
    let t = report.threads.get(thread)?;
    let (k, fr) = t
        .frames
        .iter()
        .enumerate()
        .find(|(_, f)| f.function.is_some() && !f.point.is_empty())?;
    Some(SliceCriterion {
        thread,
        frame: Some(k),
        nodes: fr.point.clone(),
        variables: None,
        line: None,
    })
}

/// The restricted and the unrestricted slice from one criterion.
#[derive(Clone, Debug, Default)]
pub struct SlicePair {
    pub criterion: SliceCriterion,
    pub restricted: Slice,
    pub unrestricted: Slice,
}

impl SlicePair {
    /// `1 − restricted / unrestricted` by lines (0 when both are empty).
    pub fn reduction(&self) -> f64 {
        let u = self.unrestricted.line_count();
        if u == 0 {
            0.0
        } else {
            1.0 - self.restricted.line_count() as f64 / u as f64
        }
    }
}

/// Both slices from one criterion, interprocedural.
pub fn slice_pair(
    g: &ProgramGraph,
    sdg: &Sdg,
    report: &FailureReport,
    restriction: &Restriction,
    criterion: SliceCriterion,
) -> SlicePair {
    let restricted = slice(
        g,
        sdg,
        report,
        &criterion,
        SliceOptions {
            restriction: Some(restriction),
            interprocedural: true,
        },
    );
    let unrestricted = slice(
        g,
        sdg,
        report,
        &criterion,
        SliceOptions {
            restriction: None,
            interprocedural: true,
        },
    );
    SlicePair {
        criterion,
        restricted,
        unrestricted,
    }
}

/// The criterion for nodes the user picked (a line): in the innermost frame of `thread`
/// whose function holds one of them (callstack-sensitive), else over all calling contexts.
pub fn nodes_criterion(
    g: &ProgramGraph,
    report: &FailureReport,
    thread: usize,
    nodes: Vec<NodeId>,
    variables: Option<Vec<String>>,
    line: Option<u32>,
) -> SliceCriterion {
    let frame = report.threads.get(thread).and_then(|t| {
        t.frames.iter().position(|f| {
            f.function
                .is_some_and(|fid| nodes.iter().any(|&n| g.node(n).function == fid))
        })
    });
    let nodes = match frame {
        // Keep the nodes of that frame's function only: the others are other contexts.
        Some(k) => {
            let fid = report.threads[thread].frames[k].function;
            nodes
                .into_iter()
                .filter(|&n| Some(g.node(n).function) == fid)
                .collect()
        }
        None => nodes,
    };
    SliceCriterion {
        thread,
        frame,
        nodes,
        variables,
        line,
    }
}

/// Slicing state for one crash: the SDG (built once) and each thread's restriction.
#[derive(Debug, Default)]
pub struct Slicer {
    pub sdg: Sdg,
    restrictions: HashMap<usize, Restriction>,
}

impl Slicer {
    pub fn new(g: &ProgramGraph) -> Slicer {
        Slicer {
            sdg: Sdg::build(g),
            restrictions: HashMap::new(),
        }
    }

    pub fn restriction(
        &mut self,
        g: &ProgramGraph,
        report: &FailureReport,
        cov: &Coverages,
        thread: usize,
    ) -> &Restriction {
        let sdg = &self.sdg;
        self.restrictions
            .entry(thread)
            .or_insert_with(|| restrict(g, sdg, report, cov, thread))
    }

    pub fn slice_pair(
        &mut self,
        g: &ProgramGraph,
        report: &FailureReport,
        cov: &Coverages,
        criterion: SliceCriterion,
    ) -> SlicePair {
        self.restriction(g, report, cov, criterion.thread);
        let r = &self.restrictions[&criterion.thread];
        slice_pair(g, &self.sdg, report, r, criterion)
    }

    /// The dissertation's Figs. 5.12–5.13 numbers for one crash: slice sizes (vertices with a
    /// source line) from the crash point, interprocedural over the program and intraprocedural
    /// per frame of the crashing thread, restricted and not.
    pub fn reduction_stats(
        &mut self,
        g: &ProgramGraph,
        report: &FailureReport,
        cov: &Coverages,
    ) -> Option<SliceStats> {
        let crit = crash_criterion(report, 0)?;
        self.restriction(g, report, cov, 0);
        let r = &self.restrictions[&0];
        let sdg = &self.sdg;
        let with_line = |v: VertexId| !vertex_lines(g, sdg, v).is_empty();
        let total = (0..sdg.vertices.len() as VertexId)
            .filter(|&v| with_line(v))
            .count();
        let pair = slice_pair(g, sdg, report, r, crit.clone());
        let mut frames = Vec::new();
        for (k, fr) in report.threads[0].frames.iter().enumerate() {
            let Some(f) = fr.function else { continue };
            if fr.point.is_empty() {
                continue;
            }
            let c = SliceCriterion {
                thread: 0,
                frame: Some(k),
                nodes: fr.point.clone(),
                variables: None,
                line: None,
            };
            let run = |restriction| {
                slice(
                    g,
                    sdg,
                    report,
                    &c,
                    SliceOptions {
                        restriction,
                        interprocedural: false,
                    },
                )
                .vertices_with_lines
            };
            frames.push(FrameSliceStats {
                frame: k,
                function: g.function(f).name.clone(),
                total: sdg.by_function[f as usize]
                    .iter()
                    .filter(|&&v| with_line(v))
                    .count(),
                restricted: run(Some(r)),
                unrestricted: run(None),
            });
        }
        Some(SliceStats {
            total,
            restricted: pair.restricted.vertices_with_lines,
            unrestricted: pair.unrestricted.vertices_with_lines,
            restricted_lines: pair.restricted.line_count(),
            unrestricted_lines: pair.unrestricted.line_count(),
            frames,
        })
    }
}

/// Slice sizes for Figs. 5.12–5.13 (counts of SDG vertices with a source line).
#[derive(Clone, Debug)]
pub struct SliceStats {
    pub total: usize,
    pub restricted: usize,
    pub unrestricted: usize,
    pub restricted_lines: usize,
    pub unrestricted_lines: usize,
    pub frames: Vec<FrameSliceStats>,
}

#[derive(Clone, Debug)]
pub struct FrameSliceStats {
    pub frame: usize,
    pub function: String,
    pub total: usize,
    pub restricted: usize,
    pub unrestricted: usize,
}
