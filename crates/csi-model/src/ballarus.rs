//! Ball–Larus path numbering and path decoding (dissertation §2.2.1, Fig. 2.4, Theorem 2.1).
//!
//! This is the single home of the numbering: the instrumenter calls [`number`] to learn where to
//! place increments and what to store on back edges and at exits, and the readers decode what a
//! core dump holds with [`PathGraph::decode_complete`] and [`PathGraph::decode_partial`]. Both
//! sides talk about the same [`PathGraph`], which is exactly what a `.debug_PT` record describes.
//!
//! Construction (Ball & Larus 1996): back edges `u → h` (retreating edges of a DFS from the entry)
//! are removed and replaced by two *phony* edges, `u → EXIT` (the path ends on the back edge) and
//! `ENTRY → h` (the next path starts at the loop head). Blocks without successors (returns,
//! `unreachable`) get an edge to the virtual `EXIT`. On the resulting DAG, `NumPaths(EXIT) = 1`,
//! `NumPaths(u) = Σ NumPaths(succ)`, and the out-edges of `u` get weights `0, NumPaths(s1),
//! NumPaths(s1)+NumPaths(s2), …`. Every ENTRY→EXIT path then has a unique sum of weights in
//! `0..NumPaths(ENTRY)`.
//!
//! Our numbering orders each block's phony exit first (weight 0). Increments are placed on the
//! chords of a maximum-weight spanning tree (Ball & Larus's event counting): the tree — over the
//! DAG's edges plus `EXIT — ENTRY` — is chosen so that the edges estimated to run most often
//! carry no increment at all, and the increments follow from a potential `ψ` with `ψ(ENTRY) =
//! ψ(EXIT) = 0` and `increment(e) = weight(e) + ψ(head) − ψ(tail)` (0 on tree edges). Every
//! ENTRY→EXIT sum of increments then equals the sum of weights, so the values stored at exits and
//! back edges are exactly the Ball–Larus path ids; a back edge stores `sum − ψ(u)` and
//! re-initialises the sum to the phony root's increment `weight + ψ(h)`. Phony roots cost the
//! same whatever their increment (the re-initialisation stores a constant anyway) and edges into
//! the virtual exit only a register add before the path store, so they are preferred as chords. The frequency estimate: each loop iterates 10 times (edges
//! leaving a loop carry a tenth of their block's frequency), branches split by the given
//! probabilities (LLVM `!prof` branch weights) or evenly; critical edges count double (an
//! increment there needs a new block).
//!
//! The decoder does not rely on any particular placement: it accepts csi-cc v1.4.0 metadata as
//! well, whose phony-exit weights are not recorded. It uses the fact that when all ENTRY→EXIT sums
//! of increments equal the sums of weights, `increment(e) − weight(e)` is a potential difference
//! `ψ(head) − ψ(tail)`, so a partial sum of increments at `v` is the prefix's weight sum plus
//! `ψ(v)`. All arithmetic on sums wraps (two's complement), like the instrumented code's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// The largest number of paths a function may have: path ids must fit a non-negative `i64`
/// (the ring buffer's `-1` sentinel and the running sum are signed 64-bit values).
pub const MAX_PATHS: u64 = i64::MAX as u64;

/// One edge of a path graph as `.debug_PT` records it. For a back edge (`back == true`, printed
/// `a~>b`), `increment`/`weight` are those of the phony root edge `ENTRY → b`, i.e. the value the
/// running sum is re-initialised to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PathEdge {
    pub from: u32,
    pub to: u32,
    pub back: bool,
    pub increment: i64,
    pub weight: i64,
}

/// A function's Ball–Larus graph: block ids, the entry block, the virtual exit, and the edges.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathGraph {
    pub entry: u32,
    pub exit: u32,
    pub edges: Vec<PathEdge>,
}

/// How a decoded path begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathStart {
    /// At the function's entry block.
    Entry,
    /// At a loop head, right after a back edge (the phony root edge).
    LoopHead,
}

/// How a decoded complete path ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathEnd {
    /// By leaving the function (return, or a block without successors).
    Exit,
    /// By taking a back edge from the last block to one of these loop heads.
    BackEdge(Vec<u32>),
    /// Not ended: a partial path stops at the current block.
    Partial,
}

/// A decoded (complete or partial) acyclic path: block ids in execution order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedPath {
    pub blocks: Vec<u32>,
    pub start: PathStart,
    pub end: PathEnd,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BallLarusError {
    /// More acyclic paths than [`MAX_PATHS`]: the function cannot be traced.
    TooManyPaths,
    /// The graph is unusable (a cycle among forward edges, an edge to an unknown block, ...).
    Malformed(String),
    /// The `(sum, block)` pair or completed path id matches no path of the graph.
    Infeasible(String),
}

impl fmt::Display for BallLarusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BallLarusError::TooManyPaths => {
                write!(f, "more than {MAX_PATHS} acyclic paths")
            }
            BallLarusError::Malformed(m) => write!(f, "malformed path graph: {m}"),
            BallLarusError::Infeasible(m) => write!(f, "infeasible path: {m}"),
        }
    }
}

impl std::error::Error for BallLarusError {}

/// The instrumenter's view of a numbered CFG. Blocks are `0..n`; the virtual exit is `n`.
#[derive(Clone, Debug)]
pub struct Numbering {
    /// Number of real blocks (the virtual exit has id `n`).
    pub n: u32,
    pub entry: u32,
    /// Blocks reachable from the entry (only those are numbered / instrumented).
    pub reachable: Vec<bool>,
    /// Increment to add when taking the CFG edge `u → v` (only non-zero ones are listed).
    pub increments: BTreeMap<(u32, u32), i64>,
    /// Back edges `u → h` with the value the running sum is re-initialised to.
    pub back_edges: BTreeMap<(u32, u32), i64>,
    /// Value added to the running sum before storing it when a back edge leaves `u`
    /// (the phony exit's increment, `−ψ(u)`).
    pub back_edge_store_increment: BTreeMap<u32, i64>,
    /// Blocks that leave the function (no successors), with the increment of their exit edge.
    pub exits: BTreeMap<u32, i64>,
    /// Total number of acyclic paths.
    pub num_paths: u64,
    /// The metadata / decoder view.
    pub graph: PathGraph,
}

/// Numbers the CFG given by `succs` (successor block indices per block; duplicates allowed and
/// merged) from `entry`. Fails with [`BallLarusError::TooManyPaths`] when the function has more
/// than [`MAX_PATHS`] acyclic paths.
pub fn number(entry: u32, succs: &[Vec<u32>]) -> Result<Numbering, BallLarusError> {
    number_with_probabilities(entry, succs, &[])
}

/// [`number`] with branch probabilities for placing increments: `probs[u][k]` is the relative
/// likelihood of `succs[u][k]` (any scale; a block whose entry is missing, of the wrong length or
/// all zero splits evenly). Only where increments go depends on them, never the path ids.
pub fn number_with_probabilities(
    entry: u32,
    succs: &[Vec<u32>],
    probs: &[Vec<f64>],
) -> Result<Numbering, BallLarusError> {
    number_with_breaks(entry, succs, probs, &BTreeSet::new())
}

/// [`number_with_probabilities`] where the edges in `breaks` also end a path and start a new
/// one, like back edges (they are listed as back edges in the result and in `graph`): for
/// edges that cannot carry an increment, such as those of an indirect branch (computed
/// `goto`). Their targets become loop heads. A break that is not an edge of `succs` is ignored.
pub fn number_with_breaks(
    entry: u32,
    succs: &[Vec<u32>],
    probs: &[Vec<f64>],
    breaks: &BTreeSet<(u32, u32)>,
) -> Result<Numbering, BallLarusError> {
    number_with_loop_breaks(entry, succs, probs, &[], breaks, &BTreeSet::new())
}

/// [`number_with_breaks`] with `loop_breaks` as well: edges that also end a path (listed as
/// back edges) but leave the other back edges where they would be without them — the edges
/// entering a loop whose iterations are not stored (`csi-cc --csi-pt-loops=elide`), whose
/// own back edges must stay back edges. (A break target starts its own search, which can
/// otherwise run on out of its loop and around an enclosing one, making that loop's back
/// edge a tree edge and some edge inside it the back edge.)
///
/// `lands[u][k]`, where given (same shape as `succs`), is the block the edge to `succs[u][k]`
/// leads on to for guessing how often it runs, when that is not its target: a target that
/// only branches on a constant the edge brings (clang's `land.end`: `while (a && b)` sends
/// every false test to one block that branches on a phi of them). The guess takes an edge
/// that lands outside its loop as leaving it. Only where increments go depends on it.
pub fn number_with_loop_breaks(
    entry: u32,
    succs: &[Vec<u32>],
    probs: &[Vec<f64>],
    lands: &[Vec<u32>],
    breaks: &BTreeSet<(u32, u32)>,
    loop_breaks: &BTreeSet<(u32, u32)>,
) -> Result<Numbering, BallLarusError> {
    let n = succs.len();
    if entry as usize >= n {
        return Err(BallLarusError::Malformed(format!(
            "entry block {entry} out of range"
        )));
    }
    let exit = n as u32;
    let (succ, prob, guessed) = deduplicated_successors(succs, probs)?;
    let breaks = reachable_breaks(entry, &succ, breaks);
    let (mut back, mut postorder, reachable) = back_edges_and_postorder(entry, &succ, &breaks);
    let loop_breaks = reachable_breaks(entry, &succ, loop_breaks);
    if !loop_breaks.is_empty() {
        // The back edges stay; the order is that of what remains without the loop breaks.
        back.extend(loop_breaks.iter().copied());
        postorder = back_edges_and_postorder(entry, &succ, &back).1;
    }
    let heads: BTreeSet<u32> = back.iter().map(|&(_, h)| h).collect();
    let (np, weight_of) = path_weights(entry, exit, &succ, &back, &heads, &postorder)?;
    let mut order: Vec<u32> = postorder;
    order.reverse();
    // Where each deduplicated edge lands (its target unless `lands` says otherwise).
    let landing: HashMap<(u32, u32), u32> = succs
        .iter()
        .enumerate()
        .flat_map(|(u, s)| {
            let l = lands.get(u).filter(|l| l.len() == s.len());
            s.iter().enumerate().map(move |(k, &t)| {
                let at = l.map_or(t, |l| l[k]);
                ((u as u32, t), if (at as usize) < n { at } else { t })
            })
        })
        .collect();
    let psi = potential(
        entry, exit, &order, &succ, &prob, &guessed, &landing, &back, &heads, &weight_of,
    );
    let mut increments = BTreeMap::new();
    let mut back_edges = BTreeMap::new();
    let mut back_store = BTreeMap::new();
    let mut exits = BTreeMap::new();
    let mut edges = Vec::new();
    for &u in &order {
        let pu = psi[u as usize];
        for &t in &succ[u as usize] {
            if back.contains(&(u, t)) {
                let w = weight_of[&(entry, 3, t)];
                let reinit = w.wrapping_add(psi[t as usize]);
                back_edges.insert((u, t), reinit);
                back_store.insert(u, weight_of[&(u, 0, exit)].wrapping_sub(pu));
                edges.push(PathEdge {
                    from: u,
                    to: t,
                    back: true,
                    increment: reinit,
                    weight: w,
                });
            } else {
                let w = weight_of[&(u, 1, t)];
                let inc = w.wrapping_add(psi[t as usize]).wrapping_sub(pu);
                if inc != 0 {
                    increments.insert((u, t), inc);
                }
                edges.push(PathEdge {
                    from: u,
                    to: t,
                    back: false,
                    increment: inc,
                    weight: w,
                });
            }
        }
        if succ[u as usize].is_empty() {
            let w = weight_of[&(u, 2, exit)];
            let inc = w.wrapping_sub(pu);
            exits.insert(u, inc);
            edges.push(PathEdge {
                from: u,
                to: exit,
                back: false,
                increment: inc,
                weight: w,
            });
        }
    }
    Ok(Numbering {
        n: n as u32,
        entry,
        reachable,
        increments,
        back_edges,
        back_edge_store_increment: back_store,
        exits,
        num_paths: np[entry as usize],
        graph: PathGraph { entry, exit, edges },
    })
}

/// Each block's successors without repeats, with the probability of each (the given ones
/// when they are usable, else uniform; a repeated successor's probabilities summed), and
/// whether the block's probabilities are that uniform guess.
#[allow(clippy::type_complexity)]
fn deduplicated_successors(
    succs: &[Vec<u32>],
    probs: &[Vec<f64>],
) -> Result<(Vec<Vec<u32>>, Vec<Vec<f64>>, Vec<bool>), BallLarusError> {
    let n = succs.len();
    let mut succ: Vec<Vec<u32>> = Vec::with_capacity(n);
    // Probability of each (deduplicated) successor edge.
    let mut prob: Vec<Vec<f64>> = Vec::with_capacity(n);
    let mut guessed = Vec::with_capacity(n);
    for (u, s) in succs.iter().enumerate() {
        let mut v: Vec<u32> = Vec::new();
        let mut p: Vec<f64> = Vec::new();
        let given = probs
            .get(u)
            .filter(|p| p.len() == s.len() && p.iter().all(|x| x.is_finite() && *x >= 0.0))
            .filter(|p| p.iter().sum::<f64>() > 0.0);
        for (k, &t) in s.iter().enumerate() {
            if t as usize >= n {
                return Err(BallLarusError::Malformed(format!(
                    "edge {u} -> {t}: no such block"
                )));
            }
            let pk = given.map_or(1.0, |g| g[k]);
            match v.iter().position(|&x| x == t) {
                Some(i) => p[i] += pk,
                None => {
                    v.push(t);
                    p.push(pk);
                }
            }
        }
        let total: f64 = p.iter().sum();
        for x in &mut p {
            *x /= total;
        }
        succ.push(v);
        prob.push(p);
        guessed.push(given.is_none());
    }
    Ok((succ, prob, guessed))
}

/// The breaks that leave a block reachable from the entry (and are edges).
fn reachable_breaks(
    entry: u32,
    succ: &[Vec<u32>],
    breaks: &BTreeSet<(u32, u32)>,
) -> BTreeSet<(u32, u32)> {
    let n = succ.len();
    let mut reach = vec![false; n];
    let mut todo = vec![entry];
    while let Some(u) = todo.pop() {
        if !std::mem::replace(&mut reach[u as usize], true) {
            todo.extend(succ[u as usize].iter().copied());
        }
    }
    breaks
        .iter()
        .copied()
        .filter(|&(u, t)| (u as usize) < n && reach[u as usize] && succ[u as usize].contains(&t))
        .collect()
}

/// Iterative DFS over the edges that are not breaks, from the break targets and then from
/// the entry (so the entry comes last in postorder): retreating edges (target on the stack)
/// are back edges; the breaks are back edges too. The DFS postorder is a reverse topological
/// order of what remains. Without breaks this is one DFS from the entry. Returns the back
/// edges, the postorder and which blocks the DFS reached.
fn back_edges_and_postorder(
    entry: u32,
    succ: &[Vec<u32>],
    breaks: &BTreeSet<(u32, u32)>,
) -> (BTreeSet<(u32, u32)>, Vec<u32>, Vec<bool>) {
    let n = succ.len();
    let mut state = vec![0u8; n]; // 0 white, 1 on stack, 2 done
    let mut back: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut postorder = Vec::with_capacity(n);
    let roots: Vec<u32> = breaks
        .iter()
        .map(|&(_, t)| t)
        .filter(|&t| t != entry)
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .chain(std::iter::once(entry))
        .collect();
    for root in roots {
        if state[root as usize] != 0 {
            continue;
        }
        let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
        state[root as usize] = 1;
        while let Some(&mut (u, ref mut i)) = stack.last_mut() {
            if let Some(&t) = succ[u as usize].get(*i) {
                *i += 1;
                if breaks.contains(&(u, t)) {
                    continue;
                }
                match state[t as usize] {
                    0 => {
                        state[t as usize] = 1;
                        stack.push((t, 0));
                    }
                    1 => {
                        back.insert((u, t));
                    }
                    _ => {}
                }
            } else {
                state[u as usize] = 2;
                postorder.push(u);
                stack.pop();
            }
        }
    }
    back.extend(breaks.iter().copied());
    let reachable: Vec<bool> = state.iter().map(|&s| s == 2).collect();
    (back, postorder, reachable)
}

/// A DAG out-edge of a block, in numbering order: phony exit first, then real successors /
/// real exit; at the entry, phony roots (one per loop head) after the real successors.
#[derive(Clone, Copy)]
enum Out {
    PhonyExit,
    Real(u32),
    RealExit,
    PhonyRoot(u32),
}

/// Ball–Larus path counts per block and each DAG edge's weight, keyed (block, kind, target)
/// with kind 0 phony exit, 1 real edge, 2 real exit, 3 phony root.
#[allow(clippy::type_complexity)]
fn path_weights(
    entry: u32,
    exit: u32,
    succ: &[Vec<u32>],
    back: &BTreeSet<(u32, u32)>,
    heads: &BTreeSet<u32>,
    postorder: &[u32],
) -> Result<(Vec<u64>, HashMap<(u32, u8, u32), i64>), BallLarusError> {
    let n = succ.len();
    let mut outs: Vec<Vec<Out>> = vec![Vec::new(); n];
    for &u in postorder {
        let o = &mut outs[u as usize];
        if back.iter().any(|&(a, _)| a == u) {
            o.push(Out::PhonyExit);
        }
        for &t in &succ[u as usize] {
            if !back.contains(&(u, t)) {
                o.push(Out::Real(t));
            }
        }
        if succ[u as usize].is_empty() {
            o.push(Out::RealExit);
        }
        if u == entry {
            o.extend(heads.iter().map(|&h| Out::PhonyRoot(h)));
        }
    }
    // Postorder of the DFS is a reverse topological order of the DAG (back edges removed);
    // phony roots go from the entry, which comes last in postorder, so the order still holds.
    let mut np = vec![0u64; n];
    let mut weight_of: HashMap<(u32, u8, u32), i64> = HashMap::new(); // (u, kind, target)
    for &u in postorder {
        let mut total: u64 = 0;
        for o in &outs[u as usize] {
            let (key, paths) = match *o {
                Out::PhonyExit => ((u, 0, exit), 1),
                Out::Real(t) => ((u, 1, t), np[t as usize]),
                Out::RealExit => ((u, 2, exit), 1),
                Out::PhonyRoot(h) => ((u, 3, h), np[h as usize]),
            };
            weight_of.insert(key, total as i64);
            total = total
                .checked_add(paths)
                .filter(|&t| t <= MAX_PATHS)
                .ok_or(BallLarusError::TooManyPaths)?;
        }
        np[u as usize] = total;
    }
    Ok((np, weight_of))
}

/// The potential `ψ` (indexed by block; the virtual exit's is 0) of a maximum-weight spanning
/// tree of the DAG plus `EXIT — ENTRY`, weighted by estimated edge frequency (see the module
/// documentation). Tree edges get increment 0. `guessed[u]`: `prob[u]` is the uniform guess.
#[allow(clippy::too_many_arguments)]
fn potential(
    entry: u32,
    exit: u32,
    order: &[u32],
    succ: &[Vec<u32>],
    prob: &[Vec<f64>],
    guessed: &[bool],
    landing: &HashMap<(u32, u32), u32>,
    back: &BTreeSet<(u32, u32)>,
    heads: &BTreeSet<u32>,
    weight_of: &HashMap<(u32, u8, u32), i64>,
) -> Vec<i64> {
    const LOOP_TRIPS: f64 = 10.0;
    // Relative cost of an increment folded into a path store (a register add) against one on
    // an edge (a read-modify-write of the volatile running sum).
    const FOLDED: f64 = 0.5;
    let n = succ.len();
    let mut preds = vec![0usize; n];
    for s in succ {
        for &t in s {
            preds[t as usize] += 1;
        }
    }
    // Natural-loop bodies per loop head (blocks reaching a latch without passing the head),
    // to keep flow roughly conserved: an edge leaving k loops is divided by LOOP_TRIPS^k.
    let mut rpreds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &u in order {
        for &t in &succ[u as usize] {
            rpreds[t as usize].push(u);
        }
    }
    let mut loops_of: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &h in heads {
        let mut inside = vec![false; n];
        inside[h as usize] = true;
        let mut stack: Vec<u32> = back.iter().filter(|e| e.1 == h).map(|e| e.0).collect();
        while let Some(v) = stack.pop() {
            if !inside[v as usize] {
                inside[v as usize] = true;
                stack.extend(rpreds[v as usize].iter().copied());
            }
        }
        for (v, &i) in inside.iter().enumerate() {
            if i {
                loops_of[v].push(h);
            }
        }
    }
    // Block frequencies in topological order (reverse postorder) over the DAG.
    let mut freq = vec![0f64; n];
    freq[entry as usize] = 1.0;
    // (cost, from, to, weight): candidate tree edges. `to == exit` for exit edges.
    let mut cand: Vec<(f64, u32, u32, i64)> = Vec::new();
    for &u in order {
        let f = if heads.contains(&u) {
            // A head entered only by breaks (a computed goto's target) gets no frequency from
            // the DAG; count it as entered once per call and iterated like any loop head.
            let entered = if u != entry && freq[u as usize] == 0.0 {
                1.0
            } else {
                freq[u as usize]
            };
            (entered * LOOP_TRIPS).min(1e300)
        } else {
            freq[u as usize]
        };
        freq[u as usize] = f;
        let loops_left = |t: u32| {
            loops_of[u as usize]
                .iter()
                .filter(|h| !loops_of[t as usize].contains(h))
                .count()
        };
        let left: Vec<usize> = succ[u as usize].iter().map(|&t| loops_left(t)).collect();
        // Where an edge lands outside the loop although its target is inside (`lands`:
        // every false test of a `do … while (a && b && …)` goes to clang's `land.end`), the
        // even split would make the later tests of the chain rarer than the exits beside
        // them, and the spanning tree would leave an increment on the loop's own route, run
        // on every iteration (gzip's `longest_match`). There, without branch weights, the
        // block stays in its loop: the leaving edges share one iteration's worth
        // (1 / LOOP_TRIPS), the staying ones the rest, as a loop of LOOP_TRIPS iterations
        // leaves once. Elsewhere the guess is as it was: measured on bzip2, the same rule for
        // every block that may leave its loop moved `BZ2_decompress`'s register allocation
        // by +23 M `mov`s for no fewer increments.
        let landed: Vec<usize> = succ[u as usize]
            .iter()
            .map(|&t| loops_left(landing.get(&(u, t)).copied().unwrap_or(t)))
            .collect();
        let leaving = landed.iter().filter(|&&l| l > 0).count();
        let mixed = guessed[u as usize] && landed != left && leaving > 0 && leaving < landed.len();
        for (k, &t) in succ[u as usize].iter().enumerate() {
            let ef = if mixed && landed[k] > 0 {
                f / LOOP_TRIPS / leaving as f64 / LOOP_TRIPS.powi(landed[k] as i32 - 1)
            } else if mixed {
                f * (1.0 - 1.0 / LOOP_TRIPS) / (landed.len() - leaving) as f64
            } else {
                f * prob[u as usize][k] / LOOP_TRIPS.powi(left[k] as i32)
            };
            if back.contains(&(u, t)) {
                // Phony exit u → EXIT: its increment is one register add before the store.
                cand.push((FOLDED * ef, u, exit, weight_of[&(u, 0, exit)]));
            } else {
                freq[t as usize] += ef;
                let critical = succ[u as usize].len() > 1 && preds[t as usize] > 1;
                let cost = if critical { 2.0 * ef } else { ef };
                cand.push((cost, u, t, weight_of[&(u, 1, t)]));
            }
        }
        if succ[u as usize].is_empty() {
            cand.push((FOLDED * f, u, exit, weight_of[&(u, 2, exit)]));
        }
    }
    for &h in heads {
        cand.push((0.0, entry, h, weight_of[&(entry, 3, h)]));
    }
    // Kruskal, most frequent first (stable: ties keep the deterministic candidate order).
    cand.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut parent: Vec<u32> = (0..=n as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    parent[exit as usize] = entry; // EXIT — ENTRY is always in the tree
    let mut adj: Vec<Vec<(u32, i64)>> = vec![Vec::new(); n + 1];
    for &(_, a, b, w) in &cand {
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            parent[ra as usize] = rb;
            // ψ(b) = ψ(a) − w along a tree edge a → b.
            adj[a as usize].push((b, w.wrapping_neg()));
            adj[b as usize].push((a, w));
        }
    }
    let mut psi = vec![0i64; n + 1];
    let mut seen = vec![false; n + 1];
    seen[entry as usize] = true;
    seen[exit as usize] = true;
    let mut stack = vec![entry, exit];
    while let Some(u) = stack.pop() {
        for &(v, d) in &adj[u as usize] {
            if !seen[v as usize] {
                seen[v as usize] = true;
                psi[v as usize] = psi[u as usize].wrapping_add(d);
                stack.push(v);
            }
        }
    }
    psi
}

/// Per-node decoding tables derived from a [`PathGraph`].
struct Tables {
    /// Known out-options per node: (weight, width, target, is_phony_root).
    opts: HashMap<u32, Vec<(i64, u64, u32, bool)>>,
    /// Loop heads a back edge from this node may go to.
    back_targets: HashMap<u32, Vec<u32>>,
    num_paths: HashMap<u32, u64>,
    /// ψ(v): partial sum of increments minus partial sum of weights on any path to v.
    psi: HashMap<u32, i64>,
}

impl PathGraph {
    fn tables(&self) -> Result<Tables, BallLarusError> {
        let mut opts: HashMap<u32, Vec<(i64, u64, u32, bool)>> = HashMap::new();
        let mut back_targets: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut roots: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
        let mut nodes: BTreeSet<u32> = BTreeSet::new();
        nodes.insert(self.entry);
        nodes.insert(self.exit);
        let mut fwd: HashMap<u32, Vec<u32>> = HashMap::new();
        for e in &self.edges {
            nodes.insert(e.from);
            nodes.insert(e.to);
            if e.back {
                let b = back_targets.entry(e.from).or_default();
                if !b.contains(&e.to) {
                    b.push(e.to);
                }
                match roots.get(&e.to) {
                    Some(&(w, i)) if (w, i) != (e.weight, e.increment) => {
                        return Err(BallLarusError::Malformed(format!(
                            "back edges into {} disagree on the re-initialisation value",
                            e.to
                        )))
                    }
                    _ => {
                        roots.insert(e.to, (e.weight, e.increment));
                    }
                }
            } else {
                if e.from == self.exit {
                    return Err(BallLarusError::Malformed("edge out of EXIT".into()));
                }
                fwd.entry(e.from).or_default().push(e.to);
            }
        }
        // Topological order of forward edges plus phony roots (Kahn).
        let mut indeg: HashMap<u32, usize> = nodes.iter().map(|&v| (v, 0)).collect();
        for (_, ts) in fwd.iter() {
            for t in ts {
                *indeg.get_mut(t).unwrap() += 1;
            }
        }
        for h in roots.keys() {
            *indeg.get_mut(h).unwrap() += 1;
        }
        let succs_of = |u: u32| -> Vec<u32> {
            let mut v = fwd.get(&u).cloned().unwrap_or_default();
            if u == self.entry {
                v.extend(roots.keys().copied());
            }
            v
        };
        let mut ready: Vec<u32> = indeg
            .iter()
            .filter(|&(_, &d)| d == 0)
            .map(|(&v, _)| v)
            .collect();
        ready.sort_unstable();
        let mut topo = Vec::with_capacity(nodes.len());
        while let Some(u) = ready.pop() {
            topo.push(u);
            for t in succs_of(u) {
                let d = indeg.get_mut(&t).unwrap();
                *d -= 1;
                if *d == 0 {
                    ready.push(t);
                }
            }
        }
        if topo.len() != nodes.len() {
            return Err(BallLarusError::Malformed(
                "the forward edges contain a cycle".into(),
            ));
        }
        // NumPaths in reverse topological order.
        let mut num_paths: HashMap<u32, u64> = HashMap::new();
        for &u in topo.iter().rev() {
            if u == self.exit {
                num_paths.insert(u, 1);
                continue;
            }
            let mut total: u64 = 0;
            let mut o = Vec::new();
            for e in self.edges.iter().filter(|e| e.from == u && !e.back) {
                let w = num_paths[&e.to];
                o.push((e.weight, w, e.to, false));
                total = total.saturating_add(w);
            }
            if back_targets.contains_key(&u) {
                total = total.saturating_add(1);
            }
            if u == self.entry {
                for (&h, &(w, _)) in &roots {
                    let p = num_paths[&h];
                    o.push((w, p, h, true));
                    total = total.saturating_add(p);
                }
            }
            o.sort_unstable();
            num_paths.insert(u, total);
            opts.insert(u, o);
        }
        // ψ along forward edges and phony roots, in topological order.
        let mut psi: HashMap<u32, i64> = HashMap::new();
        psi.insert(self.entry, 0);
        for &u in &topo {
            let Some(&pu) = psi.get(&u) else { continue };
            for e in self.edges.iter().filter(|e| e.from == u && !e.back) {
                psi.entry(e.to)
                    .or_insert(pu.wrapping_add(e.increment).wrapping_sub(e.weight));
            }
            if u == self.entry {
                for (&h, &(w, i)) in &roots {
                    psi.entry(h).or_insert(i.wrapping_sub(w));
                }
            }
        }
        Ok(Tables {
            opts,
            back_targets,
            num_paths,
            psi,
        })
    }

    /// Number of acyclic paths from the entry (including paths that start at loop heads).
    pub fn num_paths(&self) -> Result<u64, BallLarusError> {
        Ok(self.tables()?.num_paths[&self.entry])
    }

    /// Walks from the entry, following at each node the edge whose id range holds `r`.
    /// Stops at `target` with `r == 0` (partial) or at the end of a complete path.
    fn walk(
        &self,
        t: &Tables,
        mut r: i64,
        target: Option<u32>,
    ) -> Result<DecodedPath, BallLarusError> {
        if r < 0 {
            return Err(BallLarusError::Infeasible(format!("negative path sum {r}")));
        }
        let mut u = self.entry;
        let mut blocks = vec![u];
        let mut start = PathStart::Entry;
        loop {
            if Some(u) == target && r == 0 {
                return Ok(DecodedPath {
                    blocks,
                    start,
                    end: PathEnd::Partial,
                });
            }
            if u == self.exit {
                if target.is_some() || r != 0 {
                    return Err(BallLarusError::Infeasible(format!(
                        "reached the exit with {r} left over"
                    )));
                }
                blocks.pop();
                return Ok(DecodedPath {
                    blocks,
                    start,
                    end: PathEnd::Exit,
                });
            }
            let opts = t.opts.get(&u).map(Vec::as_slice).unwrap_or(&[]);
            let chosen = opts
                .iter()
                .find(|&&(w, width, _, _)| w <= r && ((r - w) as u64) < width);
            match chosen {
                Some(&(w, _, next, phony_root)) => {
                    r -= w;
                    if phony_root {
                        blocks.clear();
                        start = PathStart::LoopHead;
                    }
                    blocks.push(next);
                    u = next;
                }
                None => {
                    let np = t.num_paths.get(&u).copied().unwrap_or(0);
                    match t.back_targets.get(&u) {
                        Some(heads) if target.is_none() && (r as u64) < np => {
                            return Ok(DecodedPath {
                                blocks,
                                start,
                                end: PathEnd::BackEdge(heads.clone()),
                            })
                        }
                        _ => {
                            return Err(BallLarusError::Infeasible(format!(
                                "no edge out of block {u} matches the remaining sum {r}"
                            )))
                        }
                    }
                }
            }
        }
    }

    /// Decodes a completed path id (a value stored in the ring buffer).
    pub fn decode_complete(&self, id: i64) -> Result<DecodedPath, BallLarusError> {
        let t = self.tables()?;
        self.walk(&t, id, None)
    }

    /// Decodes the in-progress path: the running sum `sum` observed while executing `current`
    /// (Theorem 2.1: the pair determines a unique path from the entry or a loop head).
    pub fn decode_partial(&self, sum: i64, current: u32) -> Result<DecodedPath, BallLarusError> {
        let t = self.tables()?;
        let Some(&psi) = t.psi.get(&current) else {
            return Err(BallLarusError::Infeasible(format!(
                "block {current} is not in the path graph"
            )));
        };
        self.walk(&t, sum.wrapping_sub(psi), Some(current))
    }

    /// Decodes many completed ids sharing one table construction.
    pub fn decode_all(&self, ids: &[i64]) -> Vec<Result<DecodedPath, BallLarusError>> {
        match self.tables() {
            Ok(t) => ids.iter().map(|&id| self.walk(&t, id, None)).collect(),
            Err(e) => ids.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}

/// Un-rotates a path-tracing ring buffer: `arr` as read from memory, `idx` the next slot to
/// write. Returns the completed path ids oldest first. The last slot holds `-1` until the buffer
/// has wrapped around once.
pub fn unrotate_ring(arr: &[i64], idx: usize) -> Vec<i64> {
    let n = arr.len();
    if n == 0 {
        return Vec::new();
    }
    let idx = idx % n;
    let wrapped = arr[n - 1] != -1;
    if wrapped {
        arr[idx..].iter().chain(&arr[..idx]).copied().collect()
    } else {
        arr[..idx].to_vec()
    }
}
