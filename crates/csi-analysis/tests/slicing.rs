//! Restricted slicing on small programs written as `.debug_CSI_CFG` records, with the
//! expected slices worked out by hand.

use std::collections::BTreeSet;

use csi_analysis::best_effort_coverage;
use csi_analysis::sdg::Sdg;
use csi_analysis::slice::{
    crash_criterion, restrict, slice, slice_pair, SliceCriterion, SliceOptions,
};
use csi_model::sections::cfg::{cfg_to_program_graph, parse_cfg};
use csi_model::{FailureReport, Frame, NodeId, ProgramGraph, Thread};

/// Records are written over several lines here; the section has one per line.
fn graph(text: &str) -> ProgramGraph {
    let mut jsonl = String::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        if l.starts_with("{\"csi_cfg\"") && !jsonl.is_empty() {
            jsonl.push('\n');
        }
        jsonl.push_str(l.trim());
    }
    let funcs = parse_cfg(jsonl.as_bytes(), "test").unwrap();
    cfg_to_program_graph(&funcs, "test").unwrap()
}

fn node(g: &ProgramGraph, f: &str, k: u32) -> NodeId {
    g.node_by_ext_id(&format!("{f}#{k}")).unwrap()
}

/// Both slices from the crash point of `report`.
fn crash_pair(g: &ProgramGraph, report: &FailureReport) -> csi_analysis::slice::SlicePair {
    let cov = best_effort_coverage(g, report).unwrap();
    let sdg = Sdg::build(g);
    let r = restrict(g, &sdg, report, &cov, 0);
    slice_pair(g, &sdg, report, &r, crash_criterion(report, 0).unwrap())
}

/// One thread whose stack is `frames`.
fn stack(frames: Vec<Frame>) -> FailureReport {
    FailureReport {
        threads: vec![Thread {
            frames,
            ..Thread::default()
        }],
        ..FailureReport::default()
    }
}

fn lines(s: &csi_analysis::slice::Slice) -> Vec<u32> {
    s.lines
        .values()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// id(v) { return v; }            20
/// main() {
///   a = id(1);                    30, 31
///   if (?) b = 5;                 32 (skipped in this run)
///   c = id(b) + a;                33, 34
///   sink(c);                      35
/// }
/// sink(p) { *p; }                 40 (crash)
/// other() { q = ...; sink(q); }   50, 51 (never called)
const CALLS: &str = r#"
{"csi_cfg":3,"name":"id","file":"t.c","path_traced":false,"params":1,"nodes":[{"kind":"entry"},{"kind":"exit"},{"kind":"expression","positions":[[20,1]],"uses":["%arg0"],"must_defs":["$ret"]}],"edges":[[0,2],[2,1]]}
{"csi_cfg":3,"name":"main","file":"t.c","path_traced":true,"params":0,"nodes":[{"kind":"entry"},{"kind":"exit"},
 {"kind":"call-site","positions":[[30,1]],"call":{"callee":"id","args":[[]],"result":"%1"}},
 {"kind":"expression","positions":[[31,1]],"uses":["%1"],"must_defs":["a"]},
 {"kind":"expression","positions":[[32,1]],"must_defs":["b"]},
 {"kind":"call-site","positions":[[33,1]],"uses":["b"],"must_defs":["%2"],"call":{"callee":"id","args":[["%2"]],"result":"%3"}},
 {"kind":"expression","positions":[[34,1]],"uses":["%3","a"],"must_defs":["c"]},
 {"kind":"call-site","positions":[[35,1]],"uses":["c"],"must_defs":["%4"],"call":{"callee":"sink","args":[["%4"]]}}],
 "edges":[[0,2],[2,3],[3,4],[3,5],[4,5],[5,6],[6,7],[7,1]]}
{"csi_cfg":3,"name":"sink","file":"t.c","path_traced":false,"params":1,"nodes":[{"kind":"entry"},{"kind":"exit"},{"kind":"expression","positions":[[40,1]],"uses":["%arg0","*"]}],"edges":[[0,2],[2,1]]}
{"csi_cfg":3,"name":"other","file":"t.c","path_traced":false,"params":0,"nodes":[{"kind":"entry"},{"kind":"exit"},
 {"kind":"expression","positions":[[50,1]],"must_defs":["q"]},
 {"kind":"call-site","positions":[[51,1]],"uses":["q"],"must_defs":["%8"],"call":{"callee":"sink","args":[["%8"]]}}],
 "edges":[[0,2],[2,3],[3,1]]}
"#;

fn calls_report(g: &ProgramGraph) -> FailureReport {
    let main = |k| node(g, "main", k);
    stack(vec![
        Frame {
            function: g.function_by_name("sink"),
            point: vec![node(g, "sink", 2)],
            ..Frame::default()
        },
        Frame {
            function: g.function_by_name("main"),
            point: vec![main(7)],
            // The path trace: the branch at 31 skipped `b = 5`.
            path: vec![main(2), main(3), main(5), main(6)],
            path_from_entry: true,
            called_from_outside: true,
            ..Frame::default()
        },
    ])
}

#[test]
fn calls_through_the_stack_and_returned_calls() {
    let g = graph(CALLS);
    let report = calls_report(&g);
    let cov = best_effort_coverage(&g, &report).unwrap();
    let sdg = Sdg::build(&g);
    let r = restrict(&g, &sdg, &report, &cov, 0);
    let pair = slice_pair(&g, &sdg, &report, &r, crash_criterion(&report, 0).unwrap());
    // Static, callstack-sensitive: sink's p comes from main's call (35) only — not from
    // other() (50, 51); c (34) ← id's result (33, 20 by the summary edge and inside id) ← b
    // (32); a (31) ← id(1) (30).
    assert_eq!(lines(&pair.unrestricted), [20, 30, 31, 32, 33, 34, 35, 40]);
    // Restricted: the path trace shows `b = 5` (32) did not run in main's activation.
    assert_eq!(lines(&pair.restricted), [20, 30, 31, 33, 34, 35, 40]);
    // One slice from a node of the program, in frame `frame`'s context (None: any).
    let from =
        |frame: Option<usize>, n: NodeId, variables: Option<Vec<String>>, opts: SliceOptions| {
            let c = SliceCriterion {
                thread: 0,
                frame,
                nodes: vec![n],
                variables,
                line: None,
            };
            lines(&slice(&g, &sdg, &report, &c, opts))
        };
    let (stat, restricted) = (
        SliceOptions {
            restriction: None,
            interprocedural: true,
        },
        SliceOptions {
            restriction: Some(&r),
            interprocedural: false,
        },
    );
    // Context-insensitive (no frame): the other caller of sink comes in.
    assert_eq!(
        from(None, node(&g, "sink", 2), None, stat),
        [20, 30, 31, 32, 33, 34, 35, 40, 50, 51]
    );
    // Intraprocedural in main from its call: no descent into id, no ascent.
    assert_eq!(
        from(Some(1), node(&g, "main", 7), None, restricted),
        [30, 31, 33, 34, 35]
    );
    // Only variable `a` at 34.
    assert_eq!(
        from(Some(1), node(&g, "main", 6), Some(vec!["a".into()]), stat),
        [20, 30, 31, 34]
    );
}

/// x = 1 (2); x = 2 (3); *p = 9 (4); use(x) (5, crash). `x`'s address escapes or not.
fn kills(escaped: bool) -> String {
    format!(
        r#"{{"csi_cfg":3,"name":"main","file":"k.c","path_traced":false,"params":0,"escaped":{},
"nodes":[{{"kind":"entry"}},{{"kind":"exit"}},
{{"kind":"expression","positions":[[2,1]],"must_defs":["x"]}},
{{"kind":"expression","positions":[[3,1]],"must_defs":["x"]}},
{{"kind":"expression","positions":[[4,1]],"uses":["p"],"may_defs":["*"]}},
{{"kind":"expression","positions":[[5,1]],"uses":["x"]}}],
"edges":[[0,2],[2,3],[3,4],[4,5],[5,1]]}}"#,
        if escaped { r#"["x"]"# } else { "[]" }
    )
}

#[test]
fn must_defs_kill_and_star_writes_reach_escaped_locals_only() {
    for (escaped, want) in [(false, vec![3, 5]), (true, vec![3, 4, 5])] {
        let g = graph(&kills(escaped));
        let report = stack(vec![Frame {
            function: g.function_by_name("main"),
            point: vec![node(&g, "main", 5)],
            ..Frame::default()
        }]);
        let pair = crash_pair(&g, &report);
        assert_eq!(lines(&pair.unrestricted), want, "escaped: {escaped}");
        assert_eq!(lines(&pair.restricted), want, "escaped: {escaped}");
    }
}

/// csi-grissom GraphML with CodeSurfer's abstract locations (`alocs-used/defd/mayd`):
/// main: x = … (3); y = … (4); f() (5); use(x) (6, crash). f: x = … (10).
const GRAPHML: &str = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="kind" for="node" attr.name="kind" attr.type="string"/>
  <key id="lines" for="node" attr.name="lines" attr.type="string"/>
  <key id="file" for="node" attr.name="file" attr.type="string"/>
  <key id="procedure" for="node" attr.name="procedure" attr.type="string"/>
  <key id="alocs-used" for="node" attr.name="alocs-used" attr.type="string"/>
  <key id="alocs-defd" for="node" attr.name="alocs-defd" attr.type="string"/>
  <key id="alocs-mayd" for="node" attr.name="alocs-mayd" attr.type="string"/>
  <key id="type" for="edge" attr.name="type" attr.type="string"><default>flow</default></key>
  <key id="scope" for="edge" attr.name="scope" attr.type="string"><default>intraprocedural</default></key>
  <graph id="CFG" edgedefault="directed">
    <node id="n:-1:1"><data key="kind">entry</data><data key="procedure">main</data><data key="file">g.c</data></node>
    <node id="n:-1:2"><data key="kind">exit</data></node>
    <node id="n:-1:3"><data key="kind">expression</data><data key="lines">(3)</data><data key="alocs-defd">x-1</data></node>
    <node id="n:-1:4"><data key="kind">expression</data><data key="lines">(4)</data><data key="alocs-defd">y-2</data></node>
    <node id="n:-1:5"><data key="kind">call-site</data><data key="lines">(5)</data></node>
    <node id="n:-1:6"><data key="kind">expression</data><data key="lines">(6)</data><data key="alocs-used">x-1</data></node>
    <node id="n:-2:1"><data key="kind">entry</data><data key="procedure">f</data><data key="file">g.c</data></node>
    <node id="n:-2:2"><data key="kind">exit</data></node>
    <node id="n:-2:3"><data key="kind">expression</data><data key="lines">(10)</data><data key="alocs-mayd">x-1</data></node>
    <edge source="n:-1:1" target="n:-1:3"/>
    <edge source="n:-1:3" target="n:-1:4"/>
    <edge source="n:-1:4" target="n:-1:5"/>
    <edge source="n:-1:5" target="n:-1:6"/>
    <edge source="n:-1:6" target="n:-1:2"/>
    <edge source="n:-1:5" target="n:-2:1"><data key="type">control</data><data key="scope">interprocedural</data></edge>
    <edge source="n:-2:1" target="n:-2:3"/>
    <edge source="n:-2:3" target="n:-2:2"/>
  </graph>
</graphml>"#;

#[test]
fn grissom_graphml_alocs() {
    let g = csi_model::graphml::parse_graphml("g.graphml", GRAPHML).unwrap();
    let n = |id: &str| g.node_by_ext_id(id).unwrap();
    let report = stack(vec![Frame {
        function: g.function_by_name("main"),
        point: vec![n("n:-1:6")],
        path: vec![n("n:-1:3"), n("n:-1:4"), n("n:-1:5")],
        path_from_entry: true,
        called_from_outside: true,
        ..Frame::default()
    }]);
    let pair = crash_pair(&g, &report);
    // x at 6: f may have written it (10), so its earlier definition (3) still reaches; the
    // call itself (5) is in; y (4) is not.
    assert_eq!(lines(&pair.unrestricted), [3, 5, 6, 10]);
    assert_eq!(lines(&pair.restricted), [3, 5, 6, 10]);
}
