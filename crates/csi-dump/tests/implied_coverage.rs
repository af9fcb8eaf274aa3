//! Call sites whose coverage probe csi-cc omitted (the first and last call of a basic block
//! are probed, the ones between are implied; where every call of the block comes back, only
//! the last): the reader reconstructs their bits from the probes, the frame's position and
//! the activations in progress, and leaves them unknown where that is not exact.
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

/// One opened build of a fixture program, with the questions the tests ask of it.
struct Build {
    name: String,
    crash: csi_dump::Crash,
}

impl Build {
    /// `func`'s call-site bits in its frame on the crashing thread, by line.
    fn local(&self, func: &str) -> BTreeMap<u32, Option<bool>> {
        self.local_nth(func, 0)
    }

    /// The same for the `nth` frame of `func` from the top.
    fn local_nth(&self, func: &str, nth: usize) -> BTreeMap<u32, Option<bool>> {
        let g = &self.crash.graph;
        let frame = self.crash.report.threads[0]
            .frames
            .iter()
            .filter(|fr| fr.function.is_some_and(|x| g.function(x).name == func))
            .nth(nth)
            .unwrap_or_else(|| panic!("{}: no frame {nth} of {func}", self.name));
        by_line(g, &frame.local_coverage, func)
    }

    /// `func`'s global call-site bits, by line.
    fn global(&self, func: &str) -> BTreeMap<u32, Option<bool>> {
        by_line(&self.crash.graph, &self.crash.report.global_coverage, func)
    }

    fn expect(&self, what: &str, got: BTreeMap<u32, Option<bool>>, want: &[(u32, Option<bool>)]) {
        let want: BTreeMap<u32, Option<bool>> = want.iter().copied().collect();
        assert_eq!(got, want, "{}: {what}", self.name);
    }
}

/// The opened crashes of a fixture program's builds with call-site coverage.
fn call_site_builds(program: &str) -> Vec<Build> {
    fixture_crashes()
        .into_iter()
        .filter(|fx| {
            let n = fx.name();
            // Not `customoff` / `custommix`: their functions run uninstrumented replicas, so
            // their exact coverage is no longer known (soundness_oracle checks what it says).
            n.starts_with(&format!("{program}/"))
                && !n.contains("bb-")
                && !n.contains("fc-")
                && !n.contains("customoff-")
                && !n.contains("custommix-")
        })
        .map(|fx| {
            let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
                .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
            Build {
                name: fx.name(),
                crash,
            }
        })
        .collect()
}

const T: Option<bool> = Some(true);
const F: Option<bool> = Some(false);

#[test]
fn implied_call_sites_are_reconstructed_exactly() {
    let builds = call_site_builds("mid_block");
    let seen = builds.len();
    for b in &builds {
        // Stopped in `boom` (line 15) on the second activation: before it ran, after it not.
        b.expect(
            "run, local",
            b.local("run"),
            &[(13, T), (14, T), (15, T), (16, F), (17, F)],
        );
        b.expect(
            "setup, local",
            b.local("setup"),
            &[(21, T), (22, T), (23, T), (24, F), (25, F)],
        );
        // Globally: `run` completed once; `setup` never got past its first call to `run`: its
        // middle sites are unknown from the array alone, but `setup` is static and its one
        // caller's site says it ran (`entry_from_calls`, not in customizable builds), so its
        // frame's own bits count; `unused` never ran.
        b.expect(
            "run, global",
            b.global("run"),
            &[(13, T), (14, T), (15, T), (16, T), (17, T)],
        );
        // 22 and 23: ran; known since `setup`'s entry comes from its caller (csi-cc's
        // `entry_from_calls`, not in customizable builds nor in binaries of an older csi-cc,
        // such as the checked-in crashes), unknown otherwise — never "did not run".
        let mut setup = b.global("setup");
        for line in [22, 23] {
            let got = setup.remove(&line);
            assert!(
                got == Some(T) || got == Some(None),
                "{}: setup {line}: {got:?}",
                b.name
            );
        }
        // 24: "did not run" where only the block's last site is probed (every call of it
        // comes back: `implied_by_last`), as the one activation in progress stands before
        // it; unknown where the entry block's sites come from the callers (the last keeps
        // its probe) and in binaries of csi-cc before `implied_by_last` (the checked-in
        // crashes). The matrix (`CSI_FIXTURES`) is this csi-cc's, and its customizable
        // builds have no `entry_from_calls`: there it must be "did not run".
        let got = setup.remove(&24);
        let this_csi_cc = std::env::var_os("CSI_FIXTURES").is_some() && b.name.contains("/custom-");
        assert!(
            got == Some(F) || (got == Some(None) && !this_csi_cc),
            "{}: setup 24: {got:?}",
            b.name
        );
        b.expect("setup, global", setup, &[(21, T), (25, F)]);
        b.expect(
            "unused, global",
            b.global("unused"),
            &[(29, F), (30, F), (31, F)],
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
    for b in &builds {
        // `leaf` is stopped in `boom` (line 19): the entry block's and the taken branch's
        // sites ran, the other branch's did not.
        b.expect(
            "leaf, local",
            b.local("leaf"),
            &[(16, T), (18, T), (19, T), (22, F)],
        );
        // `merge` is stopped in `leaf` (line 31) on its second activation: `step(4)` ran this
        // time, `other` did not (their blocks reach the merge, so they keep local bits), and
        // the code after the merge ran up to the call.
        b.expect(
            "merge, local",
            b.local("merge"),
            &[(28, T), (30, F), (31, T), (32, F), (33, F)],
        );
        b.expect(
            "merge, global",
            b.global("merge"),
            &[(28, T), (30, T), (31, T), (32, T), (33, T)],
        );
        b.expect(
            "leaf, global",
            b.global("leaf"),
            &[(16, T), (18, T), (19, T), (22, T)],
        );
    }
    if seen == 0 {
        common::matrix_lacks("branch_calls");
    }
}

/// A local array zeroed after a fast path (csi-cc's `cc_local_zeroed_in`): the frame that took
/// the fast path sits where an earlier activation set both loop calls' bits, and must not
/// report them; the frame past the zeroing reads its array. Checks the `fast_path` fixture
/// (fixtures/src/fast_path.c) in every build of it (full fixture matrix only, like
/// `branch_calls`).
#[test]
fn stale_local_arrays_before_the_zeroing_block_are_not_read() {
    let builds = call_site_builds("fast_path");
    let seen = builds.len();
    for b in &builds {
        // `walk(1)`, stopped in `boom` on the fast path.
        b.expect(
            "inner walk, local",
            b.local_nth("walk", 0),
            &[(18, T), (21, F), (23, F), (25, F), (26, F)],
        );
        // `walk(4)`, stopped in the recursive call after its loop.
        b.expect(
            "outer walk, local",
            b.local_nth("walk", 1),
            &[(18, F), (21, T), (23, T), (25, T), (26, F)],
        );
        b.expect(
            "walk, global",
            b.global("walk"),
            &[(18, T), (21, T), (23, T), (25, T), (26, T)],
        );
    }
    if seen == 0 {
        common::matrix_lacks("fast_path");
    }
}

/// Call sites in blocks without a probe (csi-cc's `cc_unprobed`: the dominator-based placement
/// across blocks) are derived from the probed blocks they dominate and the frames' positions.
/// Checks the `unprobed_calls` fixture (fixtures/src/unprobed_calls.c) in every build of it
/// (full fixture matrix only, like `branch_calls`).
#[test]
fn call_sites_without_a_probe_are_derived() {
    let builds = call_site_builds("unprobed_calls");
    let seen = builds.len();
    for b in &builds {
        // Stopped in `boom` (line 23) after the first arm on the second activation: the
        // entry block's sites (17, 18) have no probe; the frame stands below them.
        b.expect(
            "fork2, local",
            b.local("fork2"),
            &[(17, T), (18, T), (20, T), (22, F), (23, T), (24, F)],
        );
        // The first activation took the second arm and completed.
        b.expect(
            "fork2, global",
            b.global("fork2"),
            &[(17, T), (18, T), (20, T), (22, T), (23, T), (24, T)],
        );
        // Never ran: the probed blocks below its unprobed entry did not run.
        b.expect(
            "spare, global",
            b.global("spare"),
            &[(28, F), (30, F), (32, F), (33, F)],
        );
        b.expect(
            "report, global",
            b.global("report"),
            &[(37, T), (39, F), (41, T)],
        );
        // `lead` ran once and stands at its call of `fork2` in its unprobed entry block: what
        // is before it ran, what is after it never did (no probed block below it ran).
        for (what, got) in [
            ("lead, local", b.local("lead")),
            ("lead, global", b.global("lead")),
        ] {
            b.expect(what, got, &[(45, T), (46, T), (47, F), (49, F), (51, F)]);
        }
    }
    if seen == 0 {
        common::matrix_lacks("unprobed_calls");
    }
}

/// A loop whose calls come back through a library callback (`qsort`, `bsearch` given a
/// comparator of the unit) stores its call sites' global bits only when it exits
/// (`cc_global_at_return`); the activation that crashed inside it says what it ran in its own
/// array (csi-cc's test `loops_calling_back_through_the_library_are_copied_at_their_exits`
/// checks that the loop is copied). Checks the `sort_callback` fixture (fixtures/src/sort_callback.c) in every build of
/// it (full fixture matrix only, like `branch_calls`).
#[test]
fn loops_calling_back_through_the_library_are_read_from_live_frames() {
    let builds = call_site_builds("sort_callback");
    let seen = builds.len();
    for b in &builds {
        // Stopped at `qsort` (line 39) in round 2 of the second activation, which called
        // `note` (32) this round only; `miss` (44) never ran. `bsearch` (41) ran in rounds 0
        // and 1; optimized after instrumentation, glibc's inline `bsearch` is no call.
        for (what, mut got) in [
            ("rank, local", b.local("rank")),
            ("rank, global", b.global("rank")),
        ] {
            if b.name.contains("-O2/") || b.name.ends_with("-O2") {
                assert_ne!(got.remove(&41), Some(F), "{}: {what}", b.name);
            } else {
                assert_eq!(got.remove(&41), Some(T), "{}: {what}", b.name);
            }
            b.expect(what, got, &[(32, T), (39, T), (44, F)]);
        }
    }
    if seen == 0 {
        common::matrix_lacks("sort_callback");
    }
}

/// Functions of one block without a probe of their own (csi-cc's `entry_from_calls`) are
/// derived from their callers' block coverage: in the `sort_callback` fixture's block
/// coverage builds, `note` was called only in the crashing activation of `rank`, from a block
/// of its loop that the frame has left (its bit is in `rank`'s local array only), and
/// `miss` never; `by_key` (its address is taken) keeps its array.
#[test]
fn one_block_functions_are_derived_from_their_calls() {
    let mut seen = 0;
    for fx in fixture_crashes()
        .into_iter()
        .filter(|fx| fx.name().starts_with("sort_callback/bb-"))
    {
        seen += 1;
        let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
        let g = &crash.graph;
        // The function's one block: its first node after the synthetic entry and exit.
        let entry = |name: &str| {
            let f = g.functions.iter().find(|f| f.name == name).unwrap();
            let first = f
                .nodes
                .iter()
                .find(|&&n| !matches!(g.node(n).kind, NodeKind::Entry | NodeKind::Exit));
            crash.report.global_coverage.get(first.unwrap()).copied()
        };
        assert_eq!(entry("note"), T, "{}: note", fx.name());
        assert_eq!(entry("miss"), F, "{}: miss", fx.name());
    }
    if seen == 0 {
        common::matrix_lacks("sort_callback");
    }
}

/// The call sites of a static function's entry block without a probe of their own (csi-cc's
/// `entry_from_calls`: its callers' call sites say whether it ran): the `sort_callback`
/// fixture's `tally`, called once by `main`, ran its entry block's call of `note` (53), and
/// not its call of `miss` (55), in every build with call-site coverage (where it is a function:
/// optimized after instrumentation, it is inlined).
#[test]
fn entry_call_sites_are_derived_from_their_callers() {
    let builds = call_site_builds("sort_callback");
    let seen = builds.len();
    for b in &builds {
        if !b.crash.graph.functions.iter().any(|f| f.name == "tally") {
            // Optimized after instrumentation: inlined into `main`, no function of its own.
            assert!(b.name.ends_with("-O2"), "{}: no tally", b.name);
            continue;
        }
        b.expect("tally, global", b.global("tally"), &[(53, T), (55, F)]);
    }
    if seen == 0 {
        common::matrix_lacks("sort_callback");
    }
}
