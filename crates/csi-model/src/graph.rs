//! The whole-program control-flow graph in the node model of DESIGN §3.
//!
//! Nodes are maximal straight-line pieces of one basic block that end at the block end or right
//! after a call, so every call ends its own call-site node. Intraprocedural (flow) edges are
//! stored per node; interprocedural structure is implied by each call-site's callee list
//! (call-site → callee entry, callee exit → the call-site's flow successors). The analyses build
//! whatever derived graph they need from this immutable description.

use std::collections::HashMap;

/// Index of a node in [`ProgramGraph::nodes`].
pub type NodeId = u32;
/// Index of a function in [`ProgramGraph::functions`].
pub type FuncId = u32;
/// Index of a file name in [`ProgramGraph::files`].
pub type FileId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    Entry,
    Exit,
    Expression,
    CallSite,
}

/// A source position. `column == 0` means "unknown column" (GraphML CFGs carry lines only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct SourcePos {
    pub line: u32,
    pub column: u32,
}

/// What a call-site node calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// Functions in the graph the call may enter: one for a direct call, the candidate set for an
    /// indirect one. Empty when the callee is outside the graph (library code).
    pub callees: Vec<FuncId>,
    /// The callee's name as written at the call (`call-name`), if known.
    pub name: Option<String>,
    /// True for calls through a pointer.
    pub indirect: bool,
    /// Names each actual argument uses, when the input says (CFG format 3).
    pub args: Option<Vec<Vec<String>>>,
    /// The SSA name of the call's result, when it is used.
    pub result: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Node {
    /// The input's own id (GraphML `n:-9:123`, or `fn#k` for our CFG section). Results are
    /// reported with these ids so other tools can join them back.
    pub ext_id: String,
    pub function: FuncId,
    pub kind: NodeKind,
    /// Source positions of the node's instructions, in instruction order, duplicates removed.
    pub positions: Vec<SourcePos>,
    /// Overrides the function's file (inlined code from headers).
    pub file: Option<FileId>,
    /// Per position: 0 for the function's own code, `k` for code inlined from the
    /// subprogram `Function::inlined[k - 1]`. Empty when unknown or all 0.
    pub scopes: Vec<u32>,
    /// Indices of positions held only by unconditional branches (no "must" from them).
    pub weak: Vec<u32>,
    /// Optimized code: indices of positions held by a call optimization cannot have moved
    /// (`.debug_CSI_CFG` `anchored`); only they make a line of an optimized function "must".
    pub anchored: Vec<u32>,
    /// LLVM basic block (name or path-tracing block id) the node belongs to.
    pub block: Option<String>,
    pub call: Option<Call>,
    /// csi-cc trace-point labels on this node (`CC3`, `BBC0`, or bare numbers in GraphML).
    pub labels: Vec<String>,
    /// Abstract locations used / must-defined / may-defined (for slicing).
    pub uses: Vec<String>,
    pub must_defs: Vec<String>,
    pub may_defs: Vec<String>,
    /// The node's statements in order, each with its own def/use sets (empty: one statement,
    /// the node's own sets).
    pub stmts: Vec<Stmt>,
}

/// One statement of a node: its instructions of one source line, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stmt {
    pub line: Option<u32>,
    pub uses: Vec<String>,
    pub must_defs: Vec<String>,
    pub may_defs: Vec<String>,
}

impl Node {
    pub fn new(ext_id: impl Into<String>, function: FuncId, kind: NodeKind) -> Self {
        Node {
            ext_id: ext_id.into(),
            function,
            kind,
            positions: Vec::new(),
            file: None,
            scopes: Vec::new(),
            weak: Vec::new(),
            anchored: Vec::new(),
            block: None,
            call: None,
            labels: Vec::new(),
            uses: Vec::new(),
            must_defs: Vec::new(),
            may_defs: Vec::new(),
            stmts: Vec::new(),
        }
    }

    /// Line numbers of this node (positive only; `0`/negative mean "no line" in csi-grissom CFGs).
    pub fn lines(&self) -> impl Iterator<Item = u32> + '_ {
        self.positions.iter().map(|p| p.line).filter(|&l| l > 0)
    }
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub linkage_name: Option<String>,
    pub file: Option<FileId>,
    pub entry: NodeId,
    pub exit: NodeId,
    /// All nodes of the function, entry and exit included.
    pub nodes: Vec<NodeId>,
    pub path_traced: bool,
    pub coverage_instrumented: bool,
    /// Compiled with optimization: instructions may carry the line of code moved out of its
    /// statement, and executed copies of a line may have lost their line, so line answers
    /// are made conservative (see `csi_analysis::project_lines`).
    pub optimized: bool,
    /// Instrumented before optimization (see `sections::cfg::CfgFunction::optimized_after`).
    pub optimized_after: bool,
    /// Its nodes hold every position of its code (see
    /// `sections::cfg::CfgFunction::positions_complete`).
    pub positions_complete: bool,
    /// Copies of this function were inlined into others (their code is accounted there).
    pub inlined_elsewhere: bool,
    /// Subprograms (linkage names) with code inlined into this function (csi-cc CFG
    /// records that say so; empty otherwise).
    pub inlined: Vec<String>,
    /// Direct callees with fewer call sites after optimization than before (csi-cc records;
    /// see [`ProgramGraph::calls_before_optimization`]).
    pub optimized_away_calls: Vec<String>,
    /// The def/use sets follow CFG format 3's naming (`@global`, `%ssa`, `$ret`, `*`) and
    /// calls carry `args`; otherwise every name may be any memory and calls are opaque.
    pub precise_def_use: bool,
    /// Number of parameters (`%arg0`…), when known.
    pub params: u32,
    /// Locals whose address escapes (readable and writable through `*`).
    pub escaped: Vec<String>,
    /// The shared object the function was loaded from (as the process named it); `None` for
    /// the executable.
    pub object: Option<String>,
}

impl Function {
    /// The name the views show ([`crate::names::display_name`]: demangled C++ names).
    pub fn display_name(&self) -> std::borrow::Cow<'_, str> {
        crate::names::display_name(&self.name, self.linkage_name.as_deref())
    }
}

/// A function's direct call sites before optimization, by callee (`*`: indirect).
#[derive(Clone, Debug, Default)]
pub struct CallsBefore {
    pub counts: std::collections::BTreeMap<String, u32>,
    /// The counts are exact (else each callee may have been inlined any number of times).
    pub exact: bool,
}

/// A file and `[first, last]` runs of its lines.
pub type FileLineRuns = (String, Vec<[u32; 2]>);

/// The immutable program graph. Build it with [`ProgramGraphBuilder`].
#[derive(Clone, Debug, Default)]
pub struct ProgramGraph {
    pub files: Vec<String>,
    pub functions: Vec<Function>,
    pub nodes: Vec<Node>,
    /// Intraprocedural flow successors, indexed by node. A call-site's flow successor is its
    /// return site.
    pub succs: Vec<Vec<NodeId>>,
    /// Intraprocedural flow predecessors (the reverse of `succs`).
    pub preds: Vec<Vec<NodeId>>,
    /// Where execution starts: `program-start`, else `main`'s entry, else the sole entry.
    pub program_entry: Option<NodeId>,
    /// Functions that may have run outside the walk from the program entry: code the C
    /// library calls (constructors, `qsort` comparators, thread start routines, signal and
    /// `atexit` handlers). Empty when the program gives library code no function pointers.
    pub async_roots: Vec<FuncId>,
    /// Optimized units' call graphs before optimization, merged by name (same-named statics
    /// of several units merge: more callees, which only widens what may have been inlined):
    /// caller → callees it defines, `*` for "any of `address_taken_before_optimization`".
    pub calls_before_optimization: HashMap<String, CallsBefore>,
    pub address_taken_before_optimization: Vec<String>,
    /// Optimized units' functions → (file, `[first, last]` line runs) of their code before
    /// optimization (see `.debug_CSI_CFG`'s `code_before_optimization`).
    pub code_before_optimization: HashMap<String, Vec<FileLineRuns>>,
    by_ext_id: HashMap<String, NodeId>,
    by_name: HashMap<String, FuncId>,
}

impl ProgramGraph {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id as usize]
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Looks a node up by the input's own id.
    pub fn node_by_ext_id(&self, ext_id: &str) -> Option<NodeId> {
        self.by_ext_id.get(ext_id).copied()
    }

    pub fn function_by_name(&self, name: &str) -> Option<FuncId> {
        self.by_name.get(name).copied()
    }

    /// The file a node's lines belong to.
    pub fn file_of(&self, id: NodeId) -> Option<FileId> {
        let n = self.node(id);
        n.file.or(self.function(n.function).file)
    }

    pub fn file_name(&self, file: FileId) -> &str {
        &self.files[file as usize]
    }

    /// Callees of a call-site node that are in the graph.
    pub fn callees(&self, id: NodeId) -> &[FuncId] {
        self.node(id)
            .call
            .as_ref()
            .map(|c| c.callees.as_slice())
            .unwrap_or(&[])
    }

    /// Call-site nodes of every function, indexed by callee: who may call `f`.
    pub fn callers(&self) -> Vec<Vec<NodeId>> {
        let mut callers = vec![Vec::new(); self.functions.len()];
        for (id, n) in self.nodes.iter().enumerate() {
            if let Some(call) = &n.call {
                for &f in &call.callees {
                    callers[f as usize].push(id as NodeId);
                }
            }
        }
        callers
    }
}

/// Errors found while assembling a graph (the readers add file/element context).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("duplicate node id `{0}`")]
    DuplicateNode(String),
    #[error("function `{0}` has no entry node")]
    MissingEntry(String),
    #[error("function `{0}` has no exit node")]
    MissingExit(String),
    #[error("function `{0}` has more than one {1} node")]
    DuplicateEndpoint(String, &'static str),
    #[error("edge between different functions: `{0}` -> `{1}` is not a call edge")]
    CrossFunctionFlow(String, String),
    #[error("call edge from `{0}` does not target a function entry (`{1}`)")]
    CallNotToEntry(String, String),
    #[error("the graph has no functions")]
    Empty,
}

/// Incremental construction with validation; used by every reader and by tests.
#[derive(Default)]
pub struct ProgramGraphBuilder {
    g: ProgramGraph,
    file_ids: HashMap<String, FileId>,
    edges: Vec<(NodeId, NodeId)>,
    calls: Vec<(NodeId, NodeId)>,
    entries: Vec<Vec<NodeId>>,
    exits: Vec<Vec<NodeId>>,
    explicit_start: Option<NodeId>,
}

impl ProgramGraphBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `functions` functions and `nodes` nodes: a large program's node vector grown
    /// by doubling would hold up to twice its size (and both copies while it moves).
    pub fn reserve(&mut self, functions: usize, nodes: usize) {
        self.g.functions.reserve_exact(functions);
        self.g.nodes.reserve_exact(nodes);
        self.g.by_ext_id.reserve(nodes);
    }

    pub fn intern_file(&mut self, name: &str) -> FileId {
        if let Some(&id) = self.file_ids.get(name) {
            return id;
        }
        let id = self.g.files.len() as FileId;
        self.g.files.push(name.to_string());
        self.file_ids.insert(name.to_string(), id);
        id
    }

    /// Adds a function; its entry/exit are set by the nodes of kind Entry/Exit added to it.
    pub fn add_function(&mut self, name: impl Into<String>, file: Option<FileId>) -> FuncId {
        let id = self.g.functions.len() as FuncId;
        self.g.functions.push(Function {
            name: name.into(),
            linkage_name: None,
            file,
            entry: NodeId::MAX,
            exit: NodeId::MAX,
            nodes: Vec::new(),
            path_traced: false,
            coverage_instrumented: false,
            optimized: false,
            optimized_after: false,
            positions_complete: false,
            inlined_elsewhere: false,
            inlined: Vec::new(),
            optimized_away_calls: Vec::new(),
            precise_def_use: false,
            params: 0,
            escaped: Vec::new(),
            object: None,
        });
        self.entries.push(Vec::new());
        self.exits.push(Vec::new());
        id
    }

    pub fn function_mut(&mut self, f: FuncId) -> &mut Function {
        &mut self.g.functions[f as usize]
    }

    pub fn add_node(&mut self, node: Node) -> Result<NodeId, GraphError> {
        let id = self.g.nodes.len() as NodeId;
        if self.g.by_ext_id.insert(node.ext_id.clone(), id).is_some() {
            return Err(GraphError::DuplicateNode(node.ext_id));
        }
        let f = node.function as usize;
        match node.kind {
            NodeKind::Entry => self.entries[f].push(id),
            NodeKind::Exit => self.exits[f].push(id),
            _ => {}
        }
        self.g.functions[f].nodes.push(id);
        self.g.nodes.push(node);
        Ok(id)
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.g.nodes[id as usize]
    }

    pub fn node_by_ext_id(&self, ext_id: &str) -> Option<NodeId> {
        self.g.by_ext_id.get(ext_id).copied()
    }

    /// Intraprocedural control flow.
    pub fn add_flow_edge(&mut self, from: NodeId, to: NodeId) {
        self.edges.push((from, to));
    }

    /// Interprocedural call edge: call-site node → callee entry node.
    pub fn add_call_edge(&mut self, call_site: NodeId, callee_entry: NodeId) {
        self.calls.push((call_site, callee_entry));
    }

    pub fn set_program_start(&mut self, node: NodeId) {
        self.explicit_start = Some(node);
    }

    /// Declares functions that library code may call (see [`ProgramGraph::async_roots`]).
    pub fn set_async_roots(&mut self, roots: Vec<FuncId>) {
        self.g.async_roots = roots;
    }

    /// Adds one optimized unit's call graph before optimization (see
    /// [`ProgramGraph::calls_before_optimization`]).
    pub fn add_calls_before_optimization(
        &mut self,
        calls: &std::collections::BTreeMap<String, crate::sections::cfg::CallsBefore>,
        address_taken: &[String],
        code: &std::collections::BTreeMap<
            String,
            std::collections::BTreeMap<String, Vec<[u32; 2]>>,
        >,
    ) {
        for (file, funcs) in code {
            for (f, runs) in funcs {
                self.g
                    .code_before_optimization
                    .entry(f.clone())
                    .or_default()
                    .push((file.clone(), runs.clone()));
            }
        }
        // Same-named functions of several units (statics) add up: more call sites before
        // optimization only make more of them look removed, which is the sound direction.
        for (caller, callees) in calls {
            let first = !self.g.calls_before_optimization.contains_key(caller);
            let e = self
                .g
                .calls_before_optimization
                .entry(caller.clone())
                .or_default();
            if first {
                e.exact = true;
            }
            match callees {
                crate::sections::cfg::CallsBefore::Counts(m) => {
                    for (callee, &n) in m {
                        *e.counts.entry(callee.clone()).or_default() += n;
                    }
                }
                crate::sections::cfg::CallsBefore::Names(v) => {
                    e.exact = false;
                    for callee in v {
                        *e.counts.entry(callee.clone()).or_default() += 1;
                    }
                }
            }
        }
        self.g
            .address_taken_before_optimization
            .extend(address_taken.iter().cloned());
    }

    pub fn build(mut self) -> Result<ProgramGraph, GraphError> {
        let g = &mut self.g;
        if g.functions.is_empty() {
            return Err(GraphError::Empty);
        }
        for (f, func) in g.functions.iter_mut().enumerate() {
            match self.entries[f].as_slice() {
                [e] => func.entry = *e,
                [] => return Err(GraphError::MissingEntry(func.name.clone())),
                _ => return Err(GraphError::DuplicateEndpoint(func.name.clone(), "entry")),
            }
            match self.exits[f].as_slice() {
                [x] => func.exit = *x,
                [] => return Err(GraphError::MissingExit(func.name.clone())),
                _ => return Err(GraphError::DuplicateEndpoint(func.name.clone(), "exit")),
            }
        }
        let n = g.nodes.len();
        g.succs = vec![Vec::new(); n];
        g.preds = vec![Vec::new(); n];
        self.edges.sort_unstable();
        self.edges.dedup();
        for &(a, b) in &self.edges {
            let (na, nb) = (&g.nodes[a as usize], &g.nodes[b as usize]);
            if na.function != nb.function {
                return Err(GraphError::CrossFunctionFlow(
                    na.ext_id.clone(),
                    nb.ext_id.clone(),
                ));
            }
            g.succs[a as usize].push(b);
            g.preds[b as usize].push(a);
        }
        for &(site, entry) in &self.calls {
            let target = &g.nodes[entry as usize];
            if target.kind != NodeKind::Entry {
                return Err(GraphError::CallNotToEntry(
                    g.nodes[site as usize].ext_id.clone(),
                    target.ext_id.clone(),
                ));
            }
            let callee = target.function;
            let node = &mut g.nodes[site as usize];
            node.kind = NodeKind::CallSite;
            let call = node.call.get_or_insert_with(Call::default);
            if !call.callees.contains(&callee) {
                call.callees.push(callee);
            }
            call.indirect |= call.callees.len() > 1;
        }
        for (id, f) in g.functions.iter().enumerate() {
            g.by_name.entry(f.name.clone()).or_insert(id as FuncId);
        }
        g.program_entry = self.explicit_start.or_else(|| {
            if g.functions.len() == 1 {
                Some(g.functions[0].entry)
            } else {
                g.by_name
                    .get("main")
                    .map(|&f| g.functions[f as usize].entry)
            }
        });
        Ok(self.g)
    }
}
