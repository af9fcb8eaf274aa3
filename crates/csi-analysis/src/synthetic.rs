//! Random structured programs with a simulated crashing run: the benchmark workload and a
//! ground-truth soundness oracle (every node the run executed must not be No; every Yes node
//! must have executed).
//!
//! Functions are statement trees (plain statements, calls, if/else, while loops) turned into
//! the node model; function `i` calls functions `j > i`, plus guarded self-recursion. The run
//! is interpreted statement by statement with free branch choices and stops ("crashes") when
//! its step budget is spent; the stack at that moment and a sample of call-site coverage bits
//! form the failure report.

use std::collections::BTreeMap;

use csi_model::{
    FailureReport, Frame, FuncId, Node, NodeId, NodeKind, ProgramGraph, ProgramGraphBuilder,
    SourcePos, Thread,
};

/// Deterministic xorshift generator (keeps the generator dependency-free and reproducible).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

enum Stmt {
    Plain(NodeId),
    Call(NodeId, FuncId),
    If(NodeId, Vec<Stmt>, Vec<Stmt>, NodeId),
    While(NodeId, Vec<Stmt>),
}

struct Func {
    body: Vec<Stmt>,
    entry: NodeId,
}

pub struct Synthetic {
    pub graph: ProgramGraph,
    pub report: FailureReport,
    /// Per node: did the simulated run execute it?
    pub executed: Vec<bool>,
}

struct Gen<'a> {
    b: &'a mut ProgramGraphBuilder,
    rng: &'a mut Rng,
    f: FuncId,
    fi: usize,
    nf: usize,
    next_id: u32,
    line: u32,
    budget: usize,
    edges: Vec<(NodeId, NodeId)>,
    calls: Vec<(NodeId, FuncId)>,
}

impl Gen<'_> {
    fn node(&mut self, kind: NodeKind) -> NodeId {
        let mut n = Node::new(format!("n:-{}:{}", self.fi + 1, self.next_id), self.f, kind);
        self.next_id += 1;
        n.positions.push(SourcePos {
            line: self.line,
            column: 1,
        });
        self.line += 1;
        self.b.add_node(n).unwrap()
    }

    /// Generates statements until the node budget is spent; returns (stmts, first, last).
    fn block(&mut self, depth: u32) -> Vec<Stmt> {
        let mut out = Vec::new();
        let len = 1 + self.rng.below(6);
        for _ in 0..len {
            if self.budget == 0 {
                break;
            }
            let r = self.rng.below(100);
            let s = if r < 15 && self.fi + 1 < self.nf {
                let callee =
                    self.fi + 1 + self.rng.below(((self.nf - self.fi - 1) as u64).min(40)) as usize;
                let n = self.node(NodeKind::CallSite);
                self.calls.push((n, callee as FuncId));
                self.budget = self.budget.saturating_sub(1);
                Stmt::Call(n, callee as FuncId)
            } else if r < 17 {
                // guarded self-recursion
                let c = self.node(NodeKind::Expression);
                let n = self.node(NodeKind::CallSite);
                self.calls.push((n, self.f));
                let j = self.node(NodeKind::Expression);
                self.budget = self.budget.saturating_sub(3);
                Stmt::If(c, vec![Stmt::Call(n, self.f)], vec![], j)
            } else if r < 32 && depth < 4 {
                let c = self.node(NodeKind::Expression);
                self.budget = self.budget.saturating_sub(2);
                let t = self.block(depth + 1);
                let e = if self.rng.chance(50) {
                    self.block(depth + 1)
                } else {
                    vec![]
                };
                let j = self.node(NodeKind::Expression);
                Stmt::If(c, t, e, j)
            } else if r < 42 && depth < 4 {
                let h = self.node(NodeKind::Expression);
                self.budget = self.budget.saturating_sub(1);
                let body = self.block(depth + 1);
                Stmt::While(h, body)
            } else {
                self.budget = self.budget.saturating_sub(1);
                Stmt::Plain(self.node(NodeKind::Expression))
            };
            out.push(s);
        }
        out
    }

    /// Wires `stmts` between `from` and `to`; returns nothing, records edges.
    fn wire(&mut self, stmts: &[Stmt], from: NodeId, to: NodeId) {
        let mut cur = from;
        for s in stmts {
            cur = self.wire_one(s, cur);
        }
        self.edges.push((cur, to));
    }

    fn wire_one(&mut self, s: &Stmt, from: NodeId) -> NodeId {
        match s {
            Stmt::Plain(n) | Stmt::Call(n, _) => {
                self.edges.push((from, *n));
                *n
            }
            Stmt::If(c, t, e, j) => {
                self.edges.push((from, *c));
                self.wire(t, *c, *j);
                self.wire(e, *c, *j);
                *j
            }
            Stmt::While(h, body) => {
                self.edges.push((from, *h));
                self.wire(body, *h, *h);
                *h
            }
        }
    }
}

/// Stops the interpreter: the crash.
struct Crash {
    frames: Vec<Frame>,
}

struct Run<'a> {
    funcs: &'a [Func],
    g: &'a ProgramGraph,
    rng: &'a mut Rng,
    steps: usize,
    executed: Vec<bool>,
    depth: usize,
}

impl Run<'_> {
    fn visit(&mut self, n: NodeId) -> Result<(), Crash> {
        self.executed[n as usize] = true;
        if self.steps == 0 {
            let f = self.g.node(n).function;
            return Err(Crash {
                frames: vec![Frame {
                    function: Some(f),
                    point: vec![n],
                    ..Frame::default()
                }],
            });
        }
        self.steps -= 1;
        Ok(())
    }

    fn call(&mut self, site: NodeId, f: FuncId) -> Result<(), Crash> {
        self.depth += 1;
        let func = &self.funcs[f as usize];
        let exit = self.g.function(f).exit;
        let r = self
            .visit(func.entry)
            .and_then(|_| self.stmts(&func.body))
            .and_then(|_| self.visit(exit));
        self.depth -= 1;
        match r {
            Ok(()) => Ok(()),
            Err(mut c) => {
                let caller = self.g.node(site).function;
                c.frames.push(Frame {
                    function: Some(caller),
                    point: vec![site],
                    ..Frame::default()
                });
                Err(c)
            }
        }
    }

    fn stmts(&mut self, ss: &[Stmt]) -> Result<(), Crash> {
        for s in ss {
            match s {
                Stmt::Plain(n) => self.visit(*n)?,
                Stmt::Call(n, f) => {
                    self.visit(*n)?;
                    self.call(*n, *f)?;
                }
                Stmt::If(c, t, e, j) => {
                    self.visit(*c)?;
                    let recursive = matches!(t.first(), Some(Stmt::Call(_, _))) && t.len() == 1;
                    let take_then = if recursive {
                        self.depth < 6 && self.rng.chance(30)
                    } else {
                        self.rng.chance(50)
                    };
                    self.stmts(if take_then { t } else { e })?;
                    self.visit(*j)?;
                }
                Stmt::While(h, body) => {
                    self.visit(*h)?;
                    let iterations = self.rng.below(3);
                    for _ in 0..iterations {
                        self.stmts(body)?;
                        self.visit(*h)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A program of about `functions × nodes_per_function` nodes and one crashing run of about
/// `steps` statements. `coverage_percent` of the call sites report a global coverage bit.
pub fn synthetic(
    seed: u64,
    functions: usize,
    nodes_per_function: usize,
    steps: usize,
    coverage_percent: u64,
) -> Synthetic {
    let mut rng = Rng::new(seed);
    let mut b = ProgramGraphBuilder::new();
    let file = b.intern_file("synthetic.c");
    let mut funcs = Vec::with_capacity(functions);
    let mut all_calls = Vec::new();
    let mut line = 1;
    for fi in 0..functions {
        let name = if fi == 0 {
            "main".to_string()
        } else {
            format!("f{fi}")
        };
        let f = b.add_function(name, Some(file));
        let mut gen = Gen {
            b: &mut b,
            rng: &mut rng,
            f,
            fi,
            nf: functions,
            next_id: 1,
            line,
            budget: nodes_per_function,
            edges: Vec::new(),
            calls: Vec::new(),
        };
        let entry = gen.node(NodeKind::Entry);
        let exit = gen.node(NodeKind::Exit);
        let mut body = Vec::new();
        while gen.budget > 0 {
            body.extend(gen.block(0));
        }
        gen.wire(&body, entry, exit);
        line = gen.line + 1;
        let (edges, calls) = (gen.edges, gen.calls);
        for (a, c) in edges {
            b.add_flow_edge(a, c);
        }
        all_calls.extend(calls);
        funcs.push(Func { body, entry });
    }
    let entries: Vec<NodeId> = funcs.iter().map(|f| f.entry).collect();
    for &(site, callee) in &all_calls {
        b.add_call_edge(site, entries[callee as usize]);
    }
    let graph = b.build().expect("generated graph is well formed");
    let mut run = Run {
        funcs: &funcs,
        g: &graph,
        rng: &mut rng,
        steps,
        executed: vec![false; graph.node_count()],
        depth: 0,
    };
    let main_entry = funcs[0].entry;
    let crash = run
        .visit(main_entry)
        .and_then(|_| run.stmts(&funcs[0].body))
        .and_then(|_| {
            // main returned before the budget ran out: crash at its exit.
            let exit = graph.function(0).exit;
            run.steps = 0;
            run.visit(exit)
        })
        .expect_err("the run ends in a crash");
    let executed = run.executed;
    let mut global_coverage = BTreeMap::new();
    for &(site, _) in &all_calls {
        if rng.chance(coverage_percent) {
            global_coverage.insert(site, executed[site as usize]);
        }
    }
    let report = FailureReport {
        threads: vec![Thread {
            frames: crash.frames,
            ..Thread::default()
        }],
        global_coverage,
        ..FailureReport::default()
    };
    Synthetic {
        graph,
        report,
        executed,
    }
}

/// An interpreter-shaped UTL problem: one dispatch loop whose handlers (small branchy
/// regions, some with an inner loop) all return to the dispatch node, and helper functions
/// called from several handlers with context-insensitive returns (every helper exit goes back
/// to every caller's return point, as in the ICFG) — so nearly the whole graph is one strongly
/// connected component. `required_percent` of the handlers' first nodes are observed
/// (singleton vectors), plus ring-buffer-like vectors that repeat the dispatch node, and the
/// stack vector ends at the crash inside one handler. This is the shape (a database engine's
/// main loop, a bytecode VM) where per-node re-checks inside one large SCC were quadratic.
pub struct Interpreter {
    pub graph: petgraph::graph::DiGraph<(), ()>,
    pub entry: u32,
    pub crash: u32,
    pub vectors: Vec<Vec<u32>>,
}

pub fn interpreter(
    seed: u64,
    handlers: usize,
    helpers: usize,
    required_percent: u64,
) -> Interpreter {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut rng = Rng::new(seed);
    let mut g: DiGraph<(), ()> = DiGraph::new();
    let node = |g: &mut DiGraph<(), ()>| g.add_node(()).index() as u32;
    let edge = |g: &mut DiGraph<(), ()>, a: u32, b: u32| {
        g.add_edge(NodeIndex::new(a as usize), NodeIndex::new(b as usize), ());
    };
    let entry = node(&mut g);
    let dispatch = node(&mut g);
    edge(&mut g, entry, dispatch);
    // Helpers: entry -> a few nodes -> exit; returns wired once callers are known.
    let mut helper_ends = Vec::new();
    for _ in 0..helpers {
        let h_entry = node(&mut g);
        let mut cur = h_entry;
        for _ in 0..2 + rng.below(4) {
            let v = node(&mut g);
            edge(&mut g, cur, v);
            cur = v;
        }
        helper_ends.push((h_entry, cur));
    }
    let mut firsts = Vec::new();
    let mut crash_from = None;
    for h in 0..handlers {
        let first = node(&mut g);
        edge(&mut g, dispatch, first);
        firsts.push(first);
        let mut cur = first;
        for _ in 0..1 + rng.below(4) {
            cur = match rng.below(4) {
                0 => {
                    // if / else
                    let (a, b, j) = (node(&mut g), node(&mut g), node(&mut g));
                    edge(&mut g, cur, a);
                    edge(&mut g, cur, b);
                    edge(&mut g, a, j);
                    edge(&mut g, b, j);
                    j
                }
                1 if helpers > 0 => {
                    // a call: call node -> helper entry; helper exit -> return point
                    let (h_entry, h_exit) = helper_ends[rng.below(helpers as u64) as usize];
                    let ret = node(&mut g);
                    edge(&mut g, cur, h_entry);
                    edge(&mut g, h_exit, ret);
                    ret
                }
                2 => {
                    // inner loop
                    let (head, body, after) = (node(&mut g), node(&mut g), node(&mut g));
                    edge(&mut g, cur, head);
                    edge(&mut g, head, body);
                    edge(&mut g, body, head);
                    edge(&mut g, head, after);
                    after
                }
                _ => {
                    let v = node(&mut g);
                    edge(&mut g, cur, v);
                    v
                }
            };
        }
        edge(&mut g, cur, dispatch);
        if h == handlers / 2 {
            crash_from = Some(cur);
        }
    }
    let crash = node(&mut g);
    edge(&mut g, crash_from.unwrap_or(dispatch), crash);
    let mut vectors: Vec<Vec<u32>> = firsts
        .iter()
        .filter(|_| rng.chance(required_percent))
        .map(|&f| vec![f])
        .collect();
    // Path-trace-like observations: the dispatch node, a handler, the dispatch node again.
    for _ in 0..4 {
        let f = firsts[rng.below(firsts.len() as u64) as usize];
        vectors.push(vec![dispatch, f, dispatch]);
    }
    // Two loop iterations seen back to back (a ring buffer holding the same path twice).
    vectors.push(vec![dispatch, dispatch]);
    vectors.push(vec![entry, dispatch, crash]);
    Interpreter {
        graph: g,
        entry,
        crash,
        vectors,
    }
}
