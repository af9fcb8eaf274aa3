//! Call sites whose coverage probe csi-cc omitted (the first and last call of a basic block
//! are probed, the ones between are implied): the reader reconstructs their bits from the
//! probes and the frame's position, and leaves them unknown where that is not exact.
//! Checks the `mid_block` fixture (fixtures/src/mid_block.c) in every build of it.

mod common;

use std::collections::BTreeMap;

use csi_model::graph::NodeKind;
use csi_model::NodeId;

use common::fixture_crashes;

/// Coverage by call-site line in function `func`: line → Some(ran) / None (unknown).
fn by_line(
    g: &csi_model::ProgramGraph,
    cov: &BTreeMap<NodeId, bool>,
    func: &str,
) -> BTreeMap<u32, Option<bool>> {
    let f = g.functions.iter().find(|f| f.name == func).unwrap();
    f.nodes
        .iter()
        .filter(|&&n| g.node(n).kind == NodeKind::CallSite)
        .map(|&n| {
            let line = g.node(n).lines().last().unwrap_or(0);
            (line, cov.get(&n).copied())
        })
        .collect()
}

/// The opened crashes of a fixture program's builds with call-site coverage, by name.
fn call_site_builds(program: &str) -> Vec<(String, csi_dump::Crash)> {
    fixture_crashes()
        .into_iter()
        .filter(|fx| {
            let n = fx.name();
            n.starts_with(&format!("{program}/")) && !n.contains("bb-") && !n.contains("fc-")
        })
        .map(|fx| {
            let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
                .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
            (fx.name(), crash)
        })
        .collect()
}

/// The crashing thread's frame of function `func`.
fn frame_of<'a>(crash: &'a csi_dump::Crash, build: &str, func: &str) -> &'a csi_model::Frame {
    let g = &crash.graph;
    crash.report.threads[0]
        .frames
        .iter()
        .find(|fr| fr.function.is_some_and(|x| g.function(x).name == func))
        .unwrap_or_else(|| panic!("{build}: no frame of {func}"))
}

fn expect_bits(
    build: &str,
    what: &str,
    got: BTreeMap<u32, Option<bool>>,
    want: &[(u32, Option<bool>)],
) {
    let want: BTreeMap<u32, Option<bool>> = want.iter().copied().collect();
    assert_eq!(got, want, "{build}: {what}");
}

#[test]
fn implied_call_sites_are_reconstructed_exactly() {
    let builds = call_site_builds("mid_block");
    let seen = builds.len();
    for (name, crash) in &builds {
        let (g, r) = (&crash.graph, &crash.report);
        let (t, f) = (Some(true), Some(false));
        let frame = |func: &str| frame_of(crash, name, func);
        let expect =
            |what: &str, got, want: &[(u32, Option<bool>)]| expect_bits(name, what, got, want);
        // Stopped in `boom` (line 15) on the second activation: before it ran, after it not.
        expect(
            "run, local",
            by_line(g, &frame("run").local_coverage, "run"),
            &[(13, t), (14, t), (15, t), (16, f), (17, f)],
        );
        expect(
            "setup, local",
            by_line(g, &frame("setup").local_coverage, "setup"),
            &[(21, t), (22, t), (23, t), (24, f), (25, f)],
        );
        // Globally: `run` completed once; `setup` never got past its first call to `run` (its
        // middle sites are unknown from the array alone); `unused` never ran.
        expect(
            "run, global",
            by_line(g, &r.global_coverage, "run"),
            &[(13, t), (14, t), (15, t), (16, t), (17, t)],
        );
        expect(
            "setup, global",
            by_line(g, &r.global_coverage, "setup"),
            &[(21, t), (22, None), (23, None), (24, None), (25, f)],
        );
        expect(
            "unused, global",
            by_line(g, &r.global_coverage, "unused"),
            &[(29, f), (30, f), (31, f)],
        );
    }
    assert!(seen > 0, "no mid_block fixture crash found");
}

/// Call sites whose probe stores only globally (csi-cc's `cc_local_len`: blocks on no cycle that
/// dominate all they reach): the frame's position decides the local bits, exactly. Checks the
/// `branch_calls` fixture (fixtures/src/branch_calls.c) in every build of it; it is part of the
/// full fixture matrix (`fixtures/build.sh`, `CSI_FIXTURES`), not of the checked-in subset.
#[test]
fn local_coverage_by_position_is_exact() {
    let builds = call_site_builds("branch_calls");
    let seen = builds.len();
    for (name, crash) in &builds {
        let (g, r) = (&crash.graph, &crash.report);
        let (t, f) = (Some(true), Some(false));
        let frame = |func: &str| frame_of(crash, name, func);
        let expect =
            |what: &str, got, want: &[(u32, Option<bool>)]| expect_bits(name, what, got, want);
        // `leaf` is stopped in `boom` (line 19): the entry block's and the taken branch's
        // sites ran, the other branch's did not.
        expect(
            "leaf, local",
            by_line(g, &frame("leaf").local_coverage, "leaf"),
            &[(16, t), (18, t), (19, t), (22, f)],
        );
        // `merge` is stopped in `leaf` (line 31) on its second activation: `step(4)` ran this
        // time, `other` did not (their blocks reach the merge, so they keep local bits), and
        // the code after the merge ran up to the call.
        expect(
            "merge, local",
            by_line(g, &frame("merge").local_coverage, "merge"),
            &[(28, t), (30, f), (31, t), (32, f), (33, f)],
        );
        expect(
            "merge, global",
            by_line(g, &r.global_coverage, "merge"),
            &[(28, t), (30, t), (31, t), (32, t), (33, t)],
        );
        expect(
            "leaf, global",
            by_line(g, &r.global_coverage, "leaf"),
            &[(16, t), (18, t), (19, t), (22, t)],
        );
    }
    if seen == 0 {
        eprintln!(
            "skipping: no branch_calls fixture crash (run fixtures/build.sh, set CSI_FIXTURES)"
        );
    }
}
