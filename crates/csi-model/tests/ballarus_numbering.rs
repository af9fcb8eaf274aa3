//! Ball–Larus numbering and decoding: exhaustive checks on small CFGs, the Fig. 2.4 loop, and
//! csi-cc v1.4.0's own `loop` example (chord increments ≠ weights).

use csi_model::ballarus::{
    number, number_with_breaks, number_with_loop_breaks, number_with_probabilities, unrotate_ring,
    BallLarusError, Numbering, PathEdge, PathEnd, PathGraph, PathStart,
};

/// Enumerates every acyclic path the instrumentation can record, simulating the instrumented
/// program: returns (stored id or running sum, block sequence, how it ends).
fn simulate_paths(succs: &[Vec<u32>], nb: &Numbering) -> Vec<(Vec<u32>, i64, bool)> {
    let entry = nb.entry;
    let mut out = Vec::new();
    let mut starts: Vec<(u32, i64)> = vec![(entry, 0)];
    for (&(_, h), &w) in &nb.back_edges {
        if !starts.contains(&(h, w)) {
            starts.push((h, w));
        }
    }
    for (s, init) in starts {
        let mut stack = vec![(vec![s], init)];
        while let Some((path, sum)) = stack.pop() {
            let u = *path.last().unwrap();
            if succs[u as usize].is_empty() {
                out.push((path.clone(), sum.wrapping_add(nb.exits[&u]), true));
            }
            let mut seen = Vec::new();
            for &t in &succs[u as usize] {
                if seen.contains(&t) {
                    continue;
                }
                seen.push(t);
                if nb.back_edges.contains_key(&(u, t)) {
                    // One path ends at `u` by a back edge, whichever loop head it goes to.
                    if seen
                        .iter()
                        .filter(|&&x| nb.back_edges.contains_key(&(u, x)))
                        .count()
                        > 1
                    {
                        continue;
                    }
                    out.push((
                        path.clone(),
                        sum.wrapping_add(nb.back_edge_store_increment[&u]),
                        false,
                    ));
                } else {
                    let inc = nb.increments.get(&(u, t)).copied().unwrap_or(0);
                    let mut p = path.clone();
                    p.push(t);
                    stack.push((p, sum.wrapping_add(inc)));
                }
            }
        }
    }
    out
}

/// Every prefix (entry or loop head → v) with its running sum.
fn simulate_prefixes(succs: &[Vec<u32>], nb: &Numbering) -> Vec<(Vec<u32>, i64)> {
    let entry = nb.entry;
    let mut out = Vec::new();
    let mut starts: Vec<(u32, i64)> = vec![(entry, 0)];
    for (&(_, h), &w) in &nb.back_edges {
        if !starts.contains(&(h, w)) {
            starts.push((h, w));
        }
    }
    for (s, init) in starts {
        let mut stack = vec![(vec![s], init)];
        while let Some((path, sum)) = stack.pop() {
            out.push((path.clone(), sum));
            let u = *path.last().unwrap();
            for &t in &succs[u as usize] {
                if nb.back_edges.contains_key(&(u, t)) || path.contains(&t) {
                    continue;
                }
                let inc = nb.increments.get(&(u, t)).copied().unwrap_or(0);
                let mut p = path.clone();
                p.push(t);
                stack.push((p, sum.wrapping_add(inc)));
            }
        }
    }
    out.dedup();
    out
}

fn check_exhaustive(succs: &[Vec<u32>]) {
    check_numbering(succs, &number(0, succs).unwrap());
}

fn check_numbering(succs: &[Vec<u32>], nb: &Numbering) {
    let paths = simulate_paths(succs, nb);
    assert_eq!(paths.len() as u64, nb.num_paths, "one id per acyclic path");
    let mut ids: Vec<i64> = paths.iter().map(|p| p.1).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), paths.len(), "ids are unique");
    assert_eq!(
        *ids.last().unwrap() as u64,
        nb.num_paths - 1,
        "ids are dense"
    );
    for (blocks, id, exits) in &paths {
        let d = nb.graph.decode_complete(*id).unwrap();
        assert_eq!(&d.blocks, blocks, "decode of id {id}");
        assert_eq!(matches!(d.end, PathEnd::Exit), *exits);
    }
    // Theorem 2.1: every (running sum, block) pair decodes to its unique prefix.
    for (prefix, sum) in simulate_prefixes(succs, nb) {
        let v = *prefix.last().unwrap();
        let d = nb.graph.decode_partial(sum, v).unwrap();
        assert_eq!(d.blocks, prefix, "partial ({sum}, {v})");
        assert_eq!(d.end, PathEnd::Partial);
    }
}

#[test]
fn diamond_chain() {
    // 0 -> {1,2} -> 3 -> {4,5} -> 6 (return)
    let succs = vec![
        vec![1, 2],
        vec![3],
        vec![3],
        vec![4, 5],
        vec![6],
        vec![6],
        vec![],
    ];
    let nb = number(0, &succs).unwrap();
    assert_eq!(nb.num_paths, 4);
    check_exhaustive(&succs);
}

/// Fig. 2.4: `while (c) { if (d) A else B; call } ; after` — the loop head has a back edge from
/// the latch; paths restart at the head with the re-initialised sum.
#[test]
fn figure_2_4_loop_with_back_edge() {
    // 0 entry -> 1 head; 1 -> {2 body, 5 after}; 2 -> {3 then, 4 else}; 3,4 -> 6 latch; 6 -> 1;
    // 5 -> return
    let succs = vec![
        vec![1],
        vec![2, 5],
        vec![3, 4],
        vec![6],
        vec![6],
        vec![],
        vec![1],
    ];
    let nb = number(0, &succs).unwrap();
    assert_eq!(nb.back_edges.len(), 1);
    assert!(nb.back_edges.contains_key(&(6, 1)));
    // Paths: entry..head..after, entry..head..then/else..latch (2), head..after, head..(2).
    assert_eq!(nb.num_paths, 6);
    check_exhaustive(&succs);
    // The back edge re-initialises to a value that starts the loop-head paths.
    let reinit = nb.back_edges[&(6, 1)];
    let d = nb.graph.decode_partial(reinit, 1).unwrap();
    assert_eq!(d.blocks, vec![1]);
    assert_eq!(d.start, PathStart::LoopHead);
}

#[test]
fn nested_loops_switch_and_self_loop() {
    // 0 -> 1 (outer head); 1 -> {2, 9}; 2 (inner head) -> {3, 7}; 3 -> {4,5,6} (switch);
    // 4,5,6 -> 2 (three back edges to the inner head); 7 -> {7 (self loop), 8}; 8 -> 1; 9 ret
    let succs = vec![
        vec![1],
        vec![2, 9],
        vec![3, 7],
        vec![4, 5, 6, 4],
        vec![2],
        vec![2],
        vec![2],
        vec![7, 8],
        vec![1],
        vec![],
    ];
    check_exhaustive(&succs);
}

/// Increments sit on chords of a maximum-weight spanning tree: the hot way around a loop
/// (by the given branch probabilities) carries no increment at all.
#[test]
fn hot_loop_path_has_no_increments() {
    // 0 -> 1 head; 1 -> {2 body, 5 after}; 2 -> {3 hot, 4 cold}; 3,4 -> 6 latch; 6 -> 1; 5 ret
    let succs = vec![
        vec![1],
        vec![2, 5],
        vec![3, 4],
        vec![6],
        vec![6],
        vec![],
        vec![1],
    ];
    for (hot, cold) in [(3, 4), (4, 3)] {
        let mut probs = vec![Vec::new(); succs.len()];
        probs[1] = vec![0.99, 0.01];
        probs[2] = if hot == 3 {
            vec![1000.0, 1.0]
        } else {
            vec![1.0, 1000.0]
        };
        let nb = number_with_probabilities(0, &succs, &probs).unwrap();
        for e in [(1, 2), (2, hot), (hot, 6)] {
            assert!(!nb.increments.contains_key(&e), "{e:?} is hot: {nb:?}");
        }
        assert!(
            nb.increments.contains_key(&(2, cold)) || nb.increments.contains_key(&(cold, 6)),
            "{nb:?}"
        );
        assert_eq!(nb.num_paths, number(0, &succs).unwrap().num_paths);
        check_numbering(&succs, &nb);
    }
}

/// A loop whose condition is an `&&` chain, inside an outer loop, without branch weights
/// (gzip's `longest_match`: `do {} while (*++scan == *++match && … && scan < strend)`). As
/// clang emits it, every false test goes to one block (`land.end`) that branches on a phi of
/// them; told where those edges land (after the loop), the guess keeps the iteration's route
/// free of increments. Taken at their targets, the tests' false edges look as likely as the
/// route, and the route gets an increment.
#[test]
fn an_and_chain_loop_condition_keeps_its_route_free_told_where_its_tests_land() {
    // 0 -> 1 outer head; 1 -> 2 inner head; 2 -> 3; 3, 4, 5 test: next or 7 (land.end);
    // 6 (the last test's value) -> 7; 7 -> {2 back, 8}; 8 -> {1 outer back, 9 ret}
    let succs = vec![
        vec![1],
        vec![2],
        vec![3],
        vec![4, 7],
        vec![5, 7],
        vec![6, 7],
        vec![7],
        vec![2, 8],
        vec![1, 9],
        vec![],
    ];
    let mut lands = succs.clone();
    for t in [3, 4, 5] {
        lands[t][1] = 8;
    }
    let route = [(2, 3), (3, 4), (4, 5), (5, 6), (6, 7)];
    let none = std::collections::BTreeSet::new();
    let nb = number_with_loop_breaks(0, &succs, &[], &lands, &none, &none).unwrap();
    for e in route {
        assert!(
            !nb.increments.contains_key(&e),
            "{e:?} is the route: {nb:?}"
        );
    }
    check_numbering(&succs, &nb);
    let untold = number(0, &succs).unwrap();
    assert!(
        route.iter().any(|e| untold.increments.contains_key(e)),
        "{untold:?}"
    );
    assert_eq!(untold.num_paths, nb.num_paths);
}

/// A deterministic pseudo-random source: `rnd(m)` is in `0..m`.
fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |m| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    }
}

/// Random CFGs (loops, irreducible ones too, switches, unreachable blocks) with random branch probabilities: ids are
/// dense and unique, complete and partial paths decode, whatever the tree.
#[test]
fn random_cfgs_with_random_probabilities() {
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let mut checked = 0;
    for _ in 0..300 {
        let n = 2 + rnd(9) as usize;
        let mut succs: Vec<Vec<u32>> = Vec::new();
        let mut probs: Vec<Vec<f64>> = Vec::new();
        for u in 0..n {
            let k = if u + 1 == n { 0 } else { rnd(4) as usize };
            // No edges into the entry block (LLVM's entry block has no predecessors).
            let s: Vec<u32> = (0..k).map(|_| 1 + rnd(n as u64 - 1) as u32).collect();
            probs.push(s.iter().map(|_| rnd(100) as f64).collect());
            succs.push(s);
        }
        let nb = number_with_probabilities(0, &succs, &probs).unwrap();
        if nb.num_paths > 2000 {
            continue;
        }
        check_numbering(&succs, &nb);
        check_numbering(&succs, &number(0, &succs).unwrap());
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn unreachable_blocks_and_multiple_returns() {
    let succs = vec![vec![1, 2], vec![], vec![3, 1], vec![], vec![3]];
    let nb = number(0, &succs).unwrap();
    assert!(!nb.reachable[4]);
    check_exhaustive(&succs);
}

#[test]
fn too_many_paths_is_an_error_not_a_crash() {
    // 70 diamonds in a row: 2^70 paths.
    let k = 70u32;
    let mut succs = Vec::new();
    for i in 0..k {
        let b = 3 * i;
        succs.push(vec![b + 1, b + 2]);
        succs.push(vec![b + 3]);
        succs.push(vec![b + 3]);
    }
    succs.push(vec![]);
    assert_eq!(number(0, &succs).unwrap_err(), BallLarusError::TooManyPaths);
    // 62 diamonds fit.
    let succs: Vec<Vec<u32>> = succs[..(3 * 62) as usize]
        .iter()
        .cloned()
        .chain(std::iter::once(vec![]))
        .collect();
    assert_eq!(number(0, &succs).unwrap().num_paths, 1u64 << 62);
}

#[test]
fn infeasible_inputs_are_errors() {
    let succs = vec![vec![1, 2], vec![3], vec![3], vec![]];
    let nb = number(0, &succs).unwrap();
    assert!(nb.graph.decode_complete(2).is_err());
    assert!(nb.graph.decode_complete(-3).is_err());
    // Sum 1 means "took the second branch": impossible while in block 1.
    assert!(nb.graph.decode_partial(1, 1).is_err());
    assert!(nb.graph.decode_partial(0, 99).is_err());
}

/// csi-cc v1.4.0's `loop` test, main (`.debug_PT` as the original wrote it): chord increments
/// equal weights there; the `funcs` example below has increments ≠ weights.
#[test]
fn original_csi_cc_loop_example_decodes_as_documented() {
    let e = |from, to, back, increment, weight| PathEdge {
        from,
        to,
        back,
        increment,
        weight,
    };
    let g = PathGraph {
        entry: 2,
        exit: 3,
        edges: vec![
            e(2, 4, false, 0, 0),
            e(4, 5, false, 0, 0),
            e(4, 6, false, 2, 2),
            e(5, 7, false, 0, 0),
            e(5, 8, false, 1, 1),
            e(6, 3, false, 0, 0),
            e(7, 9, false, 0, 0),
            e(8, 9, false, 0, 0),
            e(9, 4, true, 3, 3),
        ],
    };
    // csi-cc's docs: arr {1,3,6,3,2,4,8,9,2,-1}, idx 2, cur 4 at block 9: suffix
    // <2,4,5,8,9, 4,5,7,9, 4,5,8,9>.
    let ids = unrotate_ring(&[1, 3, 6, 3, 2, 4, 8, 9, 2, -1], 2);
    assert_eq!(ids, vec![1, 3]);
    let p1 = g.decode_complete(1).unwrap();
    assert_eq!(p1.blocks, vec![2, 4, 5, 8, 9]);
    assert_eq!(p1.end, PathEnd::BackEdge(vec![4]));
    let p2 = g.decode_complete(3).unwrap();
    assert_eq!(p2.blocks, vec![4, 5, 7, 9]);
    assert_eq!(p2.start, PathStart::LoopHead);
    let cur = g.decode_partial(4, 9).unwrap();
    assert_eq!(cur.blocks, vec![4, 5, 8, 9]);
    // Second documented example: wrapped buffer, idx 2, cur 0 at block 6.
    let ids = unrotate_ring(&[4, 5, 4, 4, 4, 4, 3, 4, 4, 4], 2);
    assert_eq!(ids, vec![4, 4, 4, 4, 3, 4, 4, 4, 4, 5]);
    assert_eq!(g.decode_complete(5).unwrap().blocks, vec![4, 6]);
    assert_eq!(g.decode_complete(5).unwrap().end, PathEnd::Exit);
    assert_eq!(g.decode_complete(4).unwrap().blocks, vec![4, 5, 8, 9]);
    assert_eq!(g.num_paths().unwrap(), 6);
}

/// `funcs` from csi-cc v1.4.0: `3->4|1$0` and `0->3|0$1` — increments moved by the spanning
/// tree. Completed ids decode by weights, partial sums by increments.
#[test]
fn chord_increments_differ_from_weights() {
    let e = |from, to, increment, weight| PathEdge {
        from,
        to,
        back: false,
        increment,
        weight,
    };
    let g = PathGraph {
        entry: 0,
        exit: 1,
        edges: vec![
            e(0, 2, 0, 0),
            e(0, 3, 0, 1),
            e(2, 4, 0, 0),
            e(3, 4, 1, 0),
            e(4, 1, 0, 0),
        ],
    };
    assert_eq!(g.decode_complete(0).unwrap().blocks, vec![0, 2, 4]);
    assert_eq!(g.decode_complete(1).unwrap().blocks, vec![0, 3, 4]);
    // In block 3 the increment of 3->4 has not run yet: sum 0.
    assert_eq!(g.decode_partial(0, 3).unwrap().blocks, vec![0, 3]);
    assert_eq!(g.decode_partial(0, 2).unwrap().blocks, vec![0, 2]);
    assert_eq!(g.decode_partial(1, 4).unwrap().blocks, vec![0, 3, 4]);
    assert_eq!(g.decode_partial(0, 4).unwrap().blocks, vec![0, 2, 4]);
    assert!(g.decode_partial(1, 3).is_err());
}

#[test]
fn ring_buffer_unrotation() {
    assert_eq!(unrotate_ring(&[7, 8, -1, -1], 2), vec![7, 8]);
    assert_eq!(unrotate_ring(&[-1, -1, -1, -1], 0), Vec::<i64>::new());
    assert_eq!(unrotate_ring(&[5, 6, 7, 8], 1), vec![6, 7, 8, 5]);
    assert_eq!(unrotate_ring(&[5, 6, 7, 8], 0), vec![5, 6, 7, 8]);
}

/// Computed gotos: the edges into an indirect branch's targets are breaks (back edges), so no
/// cycle needs a DFS back edge of its own, and every path id decodes.
#[test]
fn indirect_branch_edges_as_breaks() {
    use std::collections::BTreeSet;
    // -O0 shape: 0 -> 1 (the one `indirectgoto` block) -> {2, 3, 4}; 2, 3 -> 1; 3 also loops
    // on itself through 5; 4 returns.
    let hub = vec![vec![1], vec![2, 3, 4], vec![1], vec![5, 1], vec![], vec![3]];
    let breaks: BTreeSet<(u32, u32)> = [(1, 2), (1, 3), (1, 4), (5, 3)].into();
    let nb = number_with_breaks(0, &hub, &[], &breaks).unwrap();
    let back: BTreeSet<(u32, u32)> = nb.back_edges.keys().copied().collect();
    assert_eq!(back, breaks, "no extra back edge into the hub");
    check_numbering(&hub, &nb);
    // -O2 shape: every handler ends in its own indirect branch to every handler.
    let spread = vec![vec![1, 2, 3], vec![1, 2, 3], vec![1, 2, 3], vec![]];
    let breaks: BTreeSet<(u32, u32)> = (0..3).flat_map(|u| (1..4).map(move |t| (u, t))).collect();
    let nb = number_with_breaks(0, &spread, &[], &breaks).unwrap();
    assert_eq!(nb.back_edges.len(), 9);
    check_numbering(&spread, &nb);
    // Without breaks it is plain numbering.
    let loops = vec![vec![1], vec![2, 3], vec![1], vec![]];
    assert_eq!(
        number_with_breaks(0, &loops, &[], &BTreeSet::new())
            .unwrap()
            .graph,
        number(0, &loops).unwrap().graph
    );
}

/// Loop breaks (`csi-cc --csi-pt-loops=elide`): the edges entering an inner loop's head end a
/// path, and every back edge stays where plain numbering puts it. flex's `snstods` has this
/// shape: an outer loop `1` whose body `2` sometimes runs an inner loop `3 ⇄ 4`; with the
/// inner head's entering edge as a break of the computed-goto kind, the search from `3` ran on
/// through the outer latch `5` into `1`, and the outer loop's back edge became a tree edge —
/// its hot iteration no longer ended a path at the head.
#[test]
fn loop_breaks_keep_the_other_back_edges() {
    use std::collections::BTreeSet;
    // 0 → 1; 1 → {2, 6}; 2 → {3, 5}; 3 → {4, 5}; 4 → 3; 5 → 1; 6 returns.
    let nest = vec![
        vec![1],
        vec![2, 6],
        vec![3, 5],
        vec![4, 5],
        vec![3],
        vec![1],
        vec![],
    ];
    let entering: BTreeSet<(u32, u32)> = [(2, 3)].into();
    let nb = number_with_loop_breaks(0, &nest, &[], &[], &BTreeSet::new(), &entering).unwrap();
    let back: BTreeSet<(u32, u32)> = nb.back_edges.keys().copied().collect();
    assert_eq!(back, [(2, 3), (4, 3), (5, 1)].into());
    check_numbering(&nest, &nb);
    let as_breaks = number_with_breaks(0, &nest, &[], &entering).unwrap();
    assert!(
        !as_breaks.back_edges.contains_key(&(5, 1)),
        "the shape no longer shows what loop breaks are for"
    );
    // Without loop breaks it is `number_with_breaks`.
    assert_eq!(
        number_with_loop_breaks(0, &nest, &[], &[], &entering, &BTreeSet::new())
            .unwrap()
            .graph,
        as_breaks.graph
    );
}

/// An interpreter's handlers are entered only through computed gotos (breaks), so no DAG edge
/// brings them frequency; they must still count as hot. Otherwise every edge ties at zero and
/// candidate order decides: Lua's `luaV_execute` at -O2 had `+17` on the edge from the shared
/// fetch block into a dispatch block, run on every `OP_MOVE`. Shape: entry and dispatch
/// block `d` jump to handlers `h_i` (breaks); a handler goes to the shared fetch block `f`
/// (likely) or the shared slow path `s` (unlikely), which goes to `f` or returns; `f` → `d`;
/// handler `h_0` also jumps to `d` directly. Block numbers are shuffled.
#[test]
fn handlers_entered_only_by_computed_gotos_keep_hot_edges_free() {
    use std::collections::BTreeSet;
    let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut failures = Vec::new();
    for _ in 0..200 {
        let k = 2 + rnd(5) as usize;
        let n = 1 + k + 4; // entry, handlers, f, s, d, return
        let mut ids: Vec<u32> = (1..n as u32).collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, rnd(i as u64 + 1) as usize);
        }
        let (h, rest) = ids.split_at(k);
        let (f, s, d, ret) = (rest[0], rest[1], rest[2], rest[3]);
        let mut succs = vec![Vec::new(); n];
        let mut probs = vec![Vec::new(); n];
        let mut breaks = BTreeSet::new();
        for u in [0, d] {
            succs[u as usize] = h.to_vec();
            breaks.extend(h.iter().map(|&x| (u, x)));
        }
        for (i, &hi) in h.iter().enumerate() {
            let hot = if i == 0 { d } else { f };
            let hot_first = rnd(2) == 0;
            succs[hi as usize] = if hot_first {
                vec![hot, s]
            } else {
                vec![s, hot]
            };
            probs[hi as usize] = if hot_first {
                vec![2000.0, 1.0]
            } else {
                vec![1.0, 2000.0]
            };
        }
        succs[s as usize] = vec![f, ret];
        succs[f as usize] = vec![d];
        let nb = number_with_breaks(0, &succs, &probs, &breaks).unwrap();
        check_numbering(&succs, &nb);
        if nb.increments.contains_key(&(f, d)) {
            failures.push((succs, nb.increments));
        }
    }
    assert!(
        failures.is_empty(),
        "hot fetch → dispatch edge with an increment: {failures:?}"
    );
}
