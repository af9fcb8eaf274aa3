//! Analyses on small graphs built by hand, with answers worked out on paper.

use std::collections::{BTreeMap, HashMap};

use csi_analysis::{
    active_nodes_edges, answer_query, best_effort_coverage, Coverages, Query, ReportError,
};
use csi_model::{
    Coverage, FailureReport, Frame, FuncId, Node, NodeId, NodeKind, ProgramGraph,
    ProgramGraphBuilder, QueryAnswer, SourcePos, Thread,
};
use Coverage::*;

/// A tiny DSL: functions with named nodes (`"f.A"`), flow edges and calls.
struct Prog {
    b: ProgramGraphBuilder,
    funcs: HashMap<String, FuncId>,
    calls: Vec<(String, String)>,
    line: u32,
}

impl Prog {
    fn new() -> Self {
        Prog {
            b: ProgramGraphBuilder::new(),
            funcs: HashMap::new(),
            calls: Vec::new(),
            line: 1,
        }
    }

    /// `nodes`: names other than `entry`/`exit`; a name `X>g` makes X a call-site of `g`.
    fn func(mut self, name: &str, nodes: &[&str], edges: &[(&str, &str)]) -> Self {
        let file = self.b.intern_file("t.c");
        let f = self.b.add_function(name, Some(file));
        self.funcs.insert(name.to_string(), f);
        let add = |b: &mut ProgramGraphBuilder, id: &str, kind, line: &mut u32| {
            let mut n = Node::new(format!("{name}.{id}"), f, kind);
            n.positions.push(SourcePos {
                line: *line,
                column: 0,
            });
            *line += 1;
            b.add_node(n).unwrap();
        };
        add(&mut self.b, "entry", NodeKind::Entry, &mut self.line);
        for n in nodes {
            let (id, callee) = match n.split_once('>') {
                Some((id, callee)) => (id, Some(callee)),
                None => (*n, None),
            };
            let kind = if callee.is_some() {
                NodeKind::CallSite
            } else {
                NodeKind::Expression
            };
            add(&mut self.b, id, kind, &mut self.line);
            for c in callee.into_iter().flat_map(|c| c.split('|')) {
                self.calls.push((format!("{name}.{id}"), c.to_string()));
            }
        }
        add(&mut self.b, "exit", NodeKind::Exit, &mut self.line);
        for (a, b) in edges {
            let a = self.b.node_by_ext_id(&format!("{name}.{a}")).unwrap();
            let b = self.b.node_by_ext_id(&format!("{name}.{b}")).unwrap();
            self.b.add_flow_edge(a, b);
        }
        self
    }

    fn build(mut self) -> ProgramGraph {
        for (site, callee) in std::mem::take(&mut self.calls) {
            let s = self.b.node_by_ext_id(&site).unwrap();
            let e = self.b.node_by_ext_id(&format!("{callee}.entry")).unwrap();
            self.b.add_call_edge(s, e);
        }
        self.b.build().unwrap()
    }
}

fn id(g: &ProgramGraph, name: &str) -> NodeId {
    g.node_by_ext_id(name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// A crash report: `stack` outermost first as (function, point) pairs.
fn report(g: &ProgramGraph, stack: &[&str], yes: &[&str], no: &[&str]) -> FailureReport {
    let frames = stack
        .iter()
        .rev()
        .map(|p| {
            let n = id(g, p);
            Frame {
                function: Some(g.node(n).function),
                point: vec![n],
                ..Frame::default()
            }
        })
        .collect();
    let mut global_coverage = BTreeMap::new();
    for y in yes {
        global_coverage.insert(id(g, y), true);
    }
    for n in no {
        global_coverage.insert(id(g, n), false);
    }
    FailureReport {
        threads: vec![Thread {
            frames,
            ..Thread::default()
        }],
        global_coverage,
        ..FailureReport::default()
    }
}

fn status(g: &ProgramGraph, c: &Coverages, name: &str) -> Coverage {
    c.global[id(g, name) as usize]
}

fn check_against_active(g: &ProgramGraph, r: &FailureReport, c: &Coverages) {
    let active = active_nodes_edges(g, r);
    for (i, n) in g.nodes.iter().enumerate() {
        if !active.nodes[i] {
            assert_eq!(c.global[i], No, "{} inactive but not No", n.ext_id);
        }
        if c.global[i] == Yes {
            assert!(active.nodes[i], "{} Yes but inactive", n.ext_id);
        }
    }
}

/// Dissertation Fig. 6.1: main {A..G}, foo {H..L}, bar {M, N}; crash at N in bar, called at
/// J in foo, called at C in main. "E executed?" must be Impossible: E only follows the return
/// from the call at C, which is still in progress.
fn fig_6_1() -> ProgramGraph {
    Prog::new()
        .func(
            "main",
            &["A", "B", "C>foo", "D", "E", "F>bar", "G"],
            &[
                ("entry", "A"),
                ("A", "B"),
                ("A", "C"),
                ("B", "D"),
                ("C", "D"),
                ("D", "E"),
                ("E", "F"),
                ("F", "E"),
                ("E", "G"),
                ("G", "exit"),
            ],
        )
        .func(
            "foo",
            &["H", "I", "J>bar", "K", "L"],
            &[
                ("entry", "H"),
                ("H", "I"),
                ("H", "J"),
                ("I", "K"),
                ("J", "K"),
                ("K", "L"),
                ("L", "exit"),
            ],
        )
        .func(
            "bar",
            &["M", "N"],
            &[("entry", "M"), ("M", "N"), ("N", "exit")],
        )
        .build()
}

#[test]
fn fig_6_1_query_e_is_impossible() {
    let g = fig_6_1();
    let r = report(&g, &["main.C", "foo.J", "bar.N"], &[], &[]);
    let q = Query::MayRun(vec![id(&g, "main.E")]);
    assert_eq!(answer_query(&g, &r, &q).unwrap(), QueryAnswer::Impossible);
    let c = csi_analysis::best_effort_coverage_compared(&g, &r).unwrap();
    assert_eq!(status(&g, &c, "main.E"), No);
    // The context-insensitive graph alone cannot see it: bar's exit also returns into main's
    // loop, so csi-grissom's question says Maybe.
    assert_eq!(
        c.context_insensitive.as_ref().unwrap()[id(&g, "main.E") as usize],
        Maybe
    );
    for n in ["main.A", "main.C", "foo.H", "foo.J", "bar.M", "bar.N"] {
        assert_eq!(status(&g, &c, n), Yes, "{n}");
    }
    for n in ["main.B", "main.D", "main.G", "foo.I", "foo.K", "foo.L"] {
        assert_eq!(status(&g, &c, n), No, "{n}");
    }
    // Other queries.
    let before = Query::MayRunBefore(vec![id(&g, "main.A")], vec![id(&g, "bar.M")]);
    assert_eq!(
        answer_query(&g, &r, &before).unwrap(),
        QueryAnswer::Possible
    );
    let after = Query::MayRunBefore(vec![id(&g, "bar.M")], vec![id(&g, "foo.H")]);
    assert_eq!(
        answer_query(&g, &r, &after).unwrap(),
        QueryAnswer::Impossible
    );
    let not_j = Query::MayNotRun(vec![id(&g, "foo.J")]);
    assert_eq!(
        answer_query(&g, &r, &not_j).unwrap(),
        QueryAnswer::Impossible
    );
    let not_b = Query::MayNotRun(vec![id(&g, "main.B")]);
    assert_eq!(answer_query(&g, &r, &not_b).unwrap(), QueryAnswer::Possible);
    check_against_active(&g, &r, &c);
}

fn looping() -> ProgramGraph {
    // while (H) { if (T) X else Y; Z }  crash at K after the loop
    Prog::new()
        .func(
            "main",
            &["H", "T", "X", "Y", "Z", "K"],
            &[
                ("entry", "H"),
                ("H", "T"),
                ("T", "X"),
                ("T", "Y"),
                ("X", "Z"),
                ("Y", "Z"),
                ("Z", "H"),
                ("H", "K"),
                ("K", "exit"),
            ],
        )
        .build()
}

#[test]
fn loops_make_nontrivial_sccs() {
    let g = looping();
    let r = report(&g, &["main.K"], &[], &[]);
    let c = best_effort_coverage(&g, &r).unwrap();
    assert_eq!(status(&g, &c, "main.H"), Yes);
    for n in ["main.T", "main.X", "main.Y", "main.Z"] {
        assert_eq!(status(&g, &c, n), Maybe, "{n}");
    }
    assert_eq!(status(&g, &c, "main.exit"), No);
    // Observing X and never Y: the loop body ran, the header's test T surely ran too.
    let r = report(&g, &["main.K"], &["main.X"], &["main.Y"]);
    let c = best_effort_coverage(&g, &r).unwrap();
    for n in ["main.T", "main.X", "main.Z"] {
        assert_eq!(status(&g, &c, n), Yes, "{n}");
    }
    assert_eq!(status(&g, &c, "main.Y"), No);
    check_against_active(&g, &r, &c);
    // An ordered observation X then Y needs two iterations: everything in the loop ran.
    let mut r = report(&g, &["main.K"], &[], &[]);
    r.ordered_observations
        .push(vec![id(&g, "main.X"), id(&g, "main.Y")]);
    let c = best_effort_coverage(&g, &r).unwrap();
    for n in ["main.T", "main.X", "main.Y", "main.Z"] {
        assert_eq!(status(&g, &c, n), Yes, "{n}");
    }
}

/// main calls f; f(n) { if (B) base; else R: f(n-1); post }.
fn recursion() -> ProgramGraph {
    Prog::new()
        .func(
            "main",
            &["C>f", "after"],
            &[("entry", "C"), ("C", "after"), ("after", "exit")],
        )
        .func(
            "f",
            &["B", "base", "R>f", "post"],
            &[
                ("entry", "B"),
                ("B", "base"),
                ("B", "R"),
                ("R", "post"),
                ("base", "exit"),
                ("post", "exit"),
            ],
        )
        .build()
}

#[test]
fn recursion_on_the_stack() {
    // Crash in the base case at depth 2.
    let g = recursion();
    let r = report(&g, &["main.C", "f.R", "f.base"], &[], &[]);
    let c = best_effort_coverage(&g, &r).unwrap();
    for n in ["main.C", "f.entry", "f.B", "f.R", "f.base"] {
        assert_eq!(status(&g, &c, n), Yes, "{n}");
    }
    // No invocation of f has returned yet: `post` and main's `after` cannot have run.
    assert_eq!(status(&g, &c, "f.post"), No);
    assert_eq!(status(&g, &c, "main.after"), No);
    // Per-frame answers: the outer f frame went through R, not base.
    let outer_f = c.frames.iter().find(|f| f.frame == 1).unwrap();
    assert_eq!(outer_f.status[&id(&g, "f.R")], Yes);
    assert_eq!(outer_f.status[&id(&g, "f.base")], No);
    check_against_active(&g, &r, &c);
}

#[test]
fn indirect_calls_have_candidate_callees() {
    let g = Prog::new()
        .func(
            "main",
            &["P>g1|g2", "K"],
            &[("entry", "P"), ("P", "K"), ("K", "exit")],
        )
        .func("g1", &["a"], &[("entry", "a"), ("a", "exit")])
        .func("g2", &["b"], &[("entry", "b"), ("b", "exit")])
        .func("unused", &["u"], &[("entry", "u"), ("u", "exit")])
        .build();
    let r = report(&g, &["main.K"], &[], &[]);
    let c = best_effort_coverage(&g, &r).unwrap();
    assert_eq!(status(&g, &c, "g1.a"), Maybe);
    assert_eq!(status(&g, &c, "g2.b"), Maybe);
    assert_eq!(status(&g, &c, "unused.u"), No);
    // g1 never ran: the call went to g2.
    let r = report(&g, &["main.K"], &[], &["g1.a"]);
    let c = best_effort_coverage(&g, &r).unwrap();
    assert_eq!(status(&g, &c, "g2.b"), Yes);
    assert_eq!(status(&g, &c, "g1.entry"), No);
    check_against_active(&g, &r, &c);
}

#[test]
fn contradictory_reports_are_inconsistent() {
    let g = looping();
    // The crash point never ran.
    let r = report(&g, &["main.K"], &[], &["main.K"]);
    assert!(best_effort_coverage(&g, &r).is_err());
    // The only way to the crash is through H.
    let r = report(&g, &["main.K"], &[], &["main.H"]);
    assert!(matches!(
        best_effort_coverage(&g, &r),
        Err(ReportError::Frame { .. } | ReportError::Inconsistent(_))
    ));
    // Ran after the crash point.
    let r = report(&g, &["main.K"], &["main.exit"], &[]);
    assert!(matches!(
        best_effort_coverage(&g, &r),
        Err(ReportError::Inconsistent(_))
    ));
    // Two exclusive branches both observed, with no loop around them.
    let g = fig_6_1();
    let r = report(&g, &["main.C", "foo.J", "bar.N"], &["foo.I"], &[]);
    assert!(matches!(
        best_effort_coverage(&g, &r),
        Err(ReportError::Inconsistent(_))
    ));
    let q = Query::MayRun(vec![id(&g, "main.A")]);
    assert!(answer_query(&g, &r, &q).is_err());
}

#[test]
fn path_trace_and_local_coverage_in_a_frame() {
    let g = looping();
    // Path trace: the last iteration went T -> Y -> Z -> H, then K; local coverage says X
    // ran in this activation.
    let mut r = report(&g, &["main.K"], &[], &[]);
    let frame = &mut r.threads[0].frames[0];
    frame.path = ["main.T", "main.Y", "main.Z", "main.H"]
        .iter()
        .map(|n| id(&g, n))
        .collect();
    frame.local_coverage.insert(id(&g, "main.X"), true);
    let c = best_effort_coverage(&g, &r).unwrap();
    for n in ["main.T", "main.X", "main.Y", "main.Z", "main.H", "main.K"] {
        assert_eq!(status(&g, &c, n), Yes, "{n}");
    }
    // Local coverage saying X never ran in this frame, and a path through X: contradiction.
    let mut r = report(&g, &["main.K"], &[], &[]);
    let frame = &mut r.threads[0].frames[0];
    frame.path = vec![id(&g, "main.X"), id(&g, "main.Z"), id(&g, "main.H")];
    frame.local_coverage.insert(id(&g, "main.X"), false);
    assert!(best_effort_coverage(&g, &r).is_err());
}

#[test]
fn a_stop_cuts_only_its_own_activation() {
    // As above, but the innermost f frame stopped at an unknown place (line 0: code
    // instrumented before optimization, or a pc that matches no node) in one of B, R, base —
    // none of those lines surely ran *there*. The outer f frame ran B and R whole (it is in
    // the call at R): its lines are must in that frame and globally.
    for optimized_after in [true, false] {
        a_stop_cuts_only_its_own_activation_in(optimized_after);
    }
}

fn a_stop_cuts_only_its_own_activation_in(optimized_after: bool) {
    let mut g = recursion();
    let f = g.node(id(&g, "f.B")).function;
    g.functions[f as usize].optimized_after = optimized_after;
    let mut r = report(&g, &["main.C", "f.R", "f.base"], &[], &[]);
    let inner = &mut r.threads[0].frames[0];
    inner.point = vec![id(&g, "f.B"), id(&g, "f.R"), id(&g, "f.base")];
    inner.stopped_at = Some(SourcePos { line: 0, column: 0 });
    let c = best_effort_coverage(&g, &r).unwrap();
    let line_of = |n: &str| g.node(id(&g, n)).positions[0].line;
    let (b, rl) = (line_of("f.B"), line_of("f.R"));
    let outer = c.frames.iter().find(|f| f.frame == 1).unwrap();
    let outer_lines = &c.frame_lines(&g, outer)["t.c"];
    assert!(
        outer_lines.must.contains(&b) && outer_lines.must.contains(&rl),
        "{outer_lines:?}"
    );
    let innermost = c.frames.iter().find(|f| f.frame == 0).unwrap();
    let inner_lines = &c.frame_lines(&g, innermost)["t.c"];
    assert!(
        !inner_lines.must.contains(&b) && !inner_lines.must.contains(&rl),
        "optimized_after {optimized_after}: {inner_lines:?}"
    );
    let global = &c.global_lines(&g)["t.c"];
    assert!(
        global.must.contains(&b) && global.must.contains(&rl),
        "{global:?}"
    );
}

#[test]
fn an_unknown_stop_cuts_every_candidate() {
    // f's only activation stopped at an unknown place (line 0: its pc matches no node, as in
    // a truncated core's frame) in B or X. B also holds a later line (a `catch` block: line
    // 31 crashed, `return 1;` on line 32 never ran). B dominates X, so B surely started, but
    // the stop may be in B before its later line: that line did not surely run. No other
    // activation ran it, so it is not must in the frame nor globally.
    let mut g = Prog::new()
        .func(
            "main",
            &["C>f", "after"],
            &[("entry", "C"), ("C", "after"), ("after", "exit")],
        )
        .func(
            "f",
            &["B", "X"],
            &[("entry", "B"), ("B", "X"), ("X", "exit")],
        )
        .build();
    let (b, x) = (id(&g, "f.B"), id(&g, "f.X"));
    let later = SourcePos {
        line: 90,
        column: 0,
    };
    g.nodes[b as usize].positions.push(later);
    let mut r = report(&g, &["main.C", "f.X"], &[], &[]);
    let inner = &mut r.threads[0].frames[0];
    inner.point = vec![b, x];
    inner.stopped_at = Some(SourcePos { line: 0, column: 0 });
    let c = best_effort_coverage(&g, &r).unwrap();
    assert_eq!(status(&g, &c, "f.B"), Yes);
    let frame = c.frames.iter().find(|f| f.frame == 0).unwrap();
    let frame_lines = &c.frame_lines(&g, frame)["t.c"];
    let global = &c.global_lines(&g)["t.c"];
    for l in [later.line, g.node(x).positions[0].line] {
        assert!(!frame_lines.must.contains(&l), "line {l}: {frame_lines:?}");
        assert!(!global.must.contains(&l), "line {l}: {global:?}");
    }
    // The caller's lines up to its call did run.
    let call = g.node(id(&g, "main.C")).positions[0].line;
    assert!(global.must.contains(&call), "{global:?}");
}
