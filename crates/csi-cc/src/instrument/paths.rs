//! Ball–Larus path tracing: the path numbering of a function (`csi_model::ballarus`), and the
//! code that keeps a frame's running path sum and its ring buffer of completed paths.

use super::*;

/// Where instrumentation for a CFG edge goes.
pub(super) enum Place {
    EndOf(u32),
    StartOf(u32),
    Split(u32, u32),
}

/// The `!prof` branch weights of a block's terminator (`branch_weights`, one per successor, as
/// clang attaches for `__builtin_expect` and LLVM's heuristics keep); empty when absent.
pub(super) unsafe fn branch_weights(c: &Ctx, bb: LLVMBasicBlockRef) -> Vec<f64> {
    let term = LLVMGetBasicBlockTerminator(bb);
    if term.is_null() {
        return Vec::new();
    }
    let kind = LLVMGetMDKindIDInContext(c.ctx, c"prof".as_ptr(), 4);
    let md = LLVMGetMetadata(term, kind);
    if md.is_null() {
        return Vec::new();
    }
    let n = LLVMGetMDNodeNumOperands(md) as usize;
    let mut ops = vec![ptr::null_mut(); n];
    LLVMGetMDNodeOperands(md, ops.as_mut_ptr());
    let mut len = 0u32;
    let tag = if n > 0 && !ops[0].is_null() {
        LLVMGetMDString(ops[0], &mut len)
    } else {
        ptr::null()
    };
    if tag.is_null()
        || std::slice::from_raw_parts(tag as *const u8, len as usize) != b"branch_weights"
    {
        return Vec::new();
    }
    let mut w = Vec::new();
    for &op in &ops[1..] {
        if op.is_null() {
            return Vec::new();
        }
        if !LLVMIsAConstantInt(op).is_null() {
            w.push(LLVMConstIntGetZExtValue(op) as f64);
        } else if LLVMGetMDString(op, &mut len).is_null() {
            return Vec::new(); // neither a weight nor a tag such as "expected"
        }
    }
    if w.len() != LLVMGetNumSuccessors(term) as usize {
        return Vec::new();
    }
    w
}

/// A frame's `__PT_counter_idx`: the volatile local a core dump shows (the second half of the
/// `__PT_state` pair), and in optimized builds a plain alloca mirroring it for `mem2reg` to
/// promote (see `PathState::allocate`).
#[derive(Clone, Copy)]
pub(super) struct RingIndex {
    pair: LLVMValueRef,
    pair_ty: LLVMTypeRef,
    shadow: Option<LLVMValueRef>,
}

impl RingIndex {
    /// The index's address, computed where it is used: -O0's instruction selection folds a
    /// same-block constant offset into the store, where a shared address would live in a
    /// register spilled to the stack at entry (one more stack store per call).
    unsafe fn real(&self, c: &Ctx) -> LLVMValueRef {
        c.gep(self.pair_ty, self.pair, LLVMConstInt(c.i64t, 1, 0))
    }

    /// Kept in a register as well (see `PathState::allocate`).
    fn has_shadow(&self) -> bool {
        self.shadow.is_some()
    }

    unsafe fn get(&self, c: &Ctx) -> LLVMValueRef {
        match self.shadow {
            Some(a) => LLVMBuildLoad2(c.builder, c.i64t, a, c"".as_ptr()),
            None => c.vload(c.i64t, self.real(c)),
        }
    }

    unsafe fn set(&self, c: &Ctx, v: LLVMValueRef) {
        if let Some(a) = self.shadow {
            LLVMBuildStore(c.builder, v, a);
        }
        c.vstore(v, self.real(c));
    }
}

/// Promotes the shadow allocas of [`RingIndex`] to SSA values. Optimized builds only (the only
/// ones with shadows): by then clang's pipeline has promoted everything promotable, so
/// `mem2reg` finds only ours.
pub(crate) unsafe fn promote_shadows(m: LLVMModuleRef) -> Result<(), String> {
    use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMGetErrorMessage};
    use llvm_sys::transforms::pass_builder::{
        LLVMCreatePassBuilderOptions, LLVMDisposePassBuilderOptions, LLVMRunPasses,
    };
    let o = LLVMCreatePassBuilderOptions();
    let err = LLVMRunPasses(m, c"function(mem2reg)".as_ptr(), ptr::null_mut(), o);
    LLVMDisposePassBuilderOptions(o);
    if err.is_null() {
        return Ok(());
    }
    let msg = LLVMGetErrorMessage(err);
    let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
    LLVMDisposeErrorMessage(msg);
    Err(format!("mem2reg: {text}"))
}

/// How a function's path tracing came out (see `instrument_paths`).
pub(super) struct PathsMade {
    /// A shadow alloca was made (see `promote_shadows`).
    pub shadows: bool,
    /// The ring stores a path only when it differs from the one stored last (the record's
    /// `pt_runs`).
    pub runs: bool,
}

/// Inserts a function's path tracing (numbering `nb`, ring buffer of `n` paths, the ring index
/// shadowed for `mem2reg` when `shadowed`, repeated paths stored once when also
/// `repeats_once`, see `PathState::allocate`; the loops of `elided` store no iteration): the
/// frame's state, its initial value, and an action on every edge of the numbering — an
/// increment, or on a back edge the store of the completed path and the restart.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn instrument_paths(
    c: &Ctx,
    f: LLVMValueRef,
    sp: LLVMMetadataRef,
    bbs: &[LLVMBasicBlockRef],
    info: &[BlockInfo],
    nb: &Numbering,
    n: u32,
    shadowed: bool,
    repeats_once: bool,
    elided: &BTreeMap<u32, Vec<u32>>,
    contracted: &BTreeMap<u32, Vec<u32>>,
) -> Result<PathsMade, &'static str> {
    // Predecessor counts (distinct blocks) on the unmodified CFG.
    let mut preds = vec![BTreeSet::new(); bbs.len()];
    for (u, b) in info.iter().enumerate() {
        for &s in &b.succs {
            preds[s as usize].insert(u as u32);
        }
    }
    let nsucc = |u: u32| info[u as usize].succs.iter().collect::<BTreeSet<_>>().len();
    let contracted = ContractedLoops::new(nb, contracted);
    let (restarts, acts) = edge_actions(bbs, nb, &preds, nsucc(0) == 1, elided, &contracted)?;
    // Not in an interpreter's dispatch (computed gotos restart the path at every handler):
    // one handler seldom follows itself, and the test would cost at every dispatch (Lua
    // `pt`, instructions: ×1.249 storing every path, ×1.260 with the test at each dispatch).
    let repeats_once = repeats_once && restarts.keys().all(|h| elided.contains_key(h));
    let state = PathState::allocate(c, f, sp, bbs, nb, n, shadowed, repeats_once);
    // The increment of the entry block's only out-edge is folded into the initial value:
    // the entry block has no predecessors, and readers do not use the sum of a frame that is
    // still in it (its value there is not the partial path's sum, by design).
    let entry_inc: i64 = if nsucc(0) == 1 {
        nb.increments
            .iter()
            .filter(|(&(u, _), _)| u == 0)
            .map(|(_, &i)| i)
            .sum()
    } else {
        0
    };
    state.initialise(c, bbs, entry_inc);

    let place = |u: u32, v: u32| -> Place {
        if nsucc(u) == 1 {
            Place::EndOf(u)
        } else if preds[v as usize].len() == 1 {
            Place::StartOf(v)
        } else {
            Place::Split(u, v)
        }
    };
    // The restarts first: a store placed at the start of the same block goes before them.
    for (&h, &reinit) in &restarts {
        c.position_before(c.first_insertion(bbs[h as usize]));
        c.vstore(LLVMConstInt(c.i64t, reinit as u64, 1), state.cur);
    }
    for (u, v, act) in acts {
        // The store before an indirect branch (`edge_actions` marks it `(u, u)`); a
        // self-loop's back edge is split like any other edge, or its store and restart
        // would also run when the block leaves the loop.
        let at = if u == v && ends_in_indirect_branch(bbs[u as usize]) {
            Place::EndOf(u)
        } else {
            place(u, v)
        };
        position_at(c, bbs, at)?;
        match act {
            Act::Inc(i) => state.add(c, i),
            Act::Back(store_inc, reinit) => {
                state.store_path(c, store_inc);
                c.vstore(LLVMConstInt(c.i64t, reinit as u64, 1), state.cur);
            }
            Act::Store(store_inc) => state.store_path(c, store_inc),
            Act::Restart(reinit) => c.vstore(LLVMConstInt(c.i64t, reinit as u64, 1), state.cur),
        }
    }
    Ok(PathsMade {
        shadows: state.ring.is_some_and(|(_, idx)| idx.has_shadow()),
        runs: state.last.is_some(),
    })
}

/// The block ends in a computed goto (`indirectbr`), whose edges cannot be split.
unsafe fn ends_in_indirect_branch(bb: LLVMBasicBlockRef) -> bool {
    let t = LLVMGetBasicBlockTerminator(bb);
    !t.is_null() && LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMIndirectBr
}

/// What path tracing does on an edge.
enum Act {
    /// Add to the running sum.
    Inc(i64),
    /// A back edge: store the completed path (sum + the first), restart at the second.
    Back(i64, i64),
    /// Store the completed path (sum + this) only: the edge's target restarts the path.
    Store(i64),
    /// Restart the sum at this value, storing nothing (a loop's iteration, `PtLoops`).
    Restart(i64),
}

/// Heads whose every entering edge is a back edge (targets of computed gotos), with the value
/// they restart the path with; edges `(from, to, action)`.
type EdgeActions = (BTreeMap<u32, i64>, Vec<(u32, u32, Act)>);

/// The action on each edge of the numbering (`entry_folded`: the entry block's only out-edge,
/// whose increment is in the initial value, gets none), and the heads that restart the path
/// at their start. The back edges of `elided` loops store nothing: they restart the sum, or
/// their head does where the edges entering it are breaks (`PtLoops::ElideAfterEntry`).
/// Edges inside a `contracted` loop do nothing; one leaving it adds its route's sum.
unsafe fn edge_actions(
    bbs: &[LLVMBasicBlockRef],
    nb: &Numbering,
    preds: &[BTreeSet<u32>],
    entry_folded: bool,
    elided: &BTreeMap<u32, Vec<u32>>,
    contracted: &ContractedLoops,
) -> Result<EdgeActions, &'static str> {
    let mut acts: Vec<(u32, u32, Act)> = Vec::new();
    for (&(u, v), &inc) in &nb.increments {
        if u == 0 && entry_folded {
            continue; // folded into the initial value
        }
        if contracted.inside(u, v) {
            continue;
        }
        acts.push((u, v, Act::Inc(inc.wrapping_add(contracted.route_sum(u)))));
    }
    // Edges leaving a contracted loop that have no increment of their own still add the
    // route's (back edges aside: below).
    for (u, v) in contracted.exits() {
        let sum = contracted.route_sum(u);
        if sum != 0 && !nb.increments.contains_key(&(u, v)) && !nb.back_edges.contains_key(&(u, v))
        {
            acts.push((u, v, Act::Inc(sum)));
        }
    }
    // Heads all of whose entering edges are back edges (targets of computed gotos) restart
    // the path at their start, once; the edges then only store the completed path — before
    // the terminator of an indirect branch, whose edges cannot be split.
    let indirect = |u: u32| ends_in_indirect_branch(bbs[u as usize]);
    let restarts: BTreeMap<u32, i64> = nb
        .back_edges
        .iter()
        .filter(|(&(_, h), _)| {
            preds[h as usize]
                .iter()
                .all(|&p| nb.back_edges.contains_key(&(p, h)))
        })
        .map(|(&(_, h), &reinit)| (h, reinit))
        .collect();
    let mut stored_before_indirect: BTreeSet<u32> = BTreeSet::new();
    for (&(u, h), &reinit) in &nb.back_edges {
        if contracted.inside(u, h) {
            continue; // an iteration of a contracted loop (or of a loop inside it)
        }
        let store = nb.back_edge_store_increment[&u].wrapping_add(contracted.route_sum(u));
        if elided
            .get(&h)
            .is_some_and(|body| body.binary_search(&u).is_ok())
        {
            // An iteration of a loop that stores none: the sum restarts, at the head when
            // every edge into it is a back edge or a break (`ElideAfterEntry`).
            if !restarts.contains_key(&h) {
                acts.push((u, h, Act::Restart(reinit)));
            }
            continue;
        }
        if restarts.contains_key(&h) {
            if indirect(u) {
                if stored_before_indirect.insert(u) {
                    acts.push((u, u, Act::Store(store)));
                }
            } else {
                acts.push((u, h, Act::Store(store)));
            }
        } else if indirect(u) {
            return Err("an indirect branch's target does not restart the path");
        } else {
            acts.push((u, h, Act::Back(store, reinit)));
        }
    }
    Ok((restarts, acts))
}

/// Positions the builder for an edge's instrumentation: before the source's terminator, at
/// the target's start, or in a new block splitting the edge.
unsafe fn position_at(c: &Ctx, bbs: &[LLVMBasicBlockRef], at: Place) -> Result<(), &'static str> {
    match at {
        Place::EndOf(b) => c.position_before(LLVMGetBasicBlockTerminator(bbs[b as usize])),
        Place::StartOf(b) => c.position_before(c.first_insertion(bbs[b as usize])),
        Place::Split(a, b) => {
            let term = LLVMGetBasicBlockTerminator(bbs[a as usize]);
            let k = (0..LLVMGetNumSuccessors(term))
                .find(|&k| LLVMGetSuccessor(term, k) == bbs[b as usize])
                .ok_or("a path-tracing edge is missing")?;
            let nbb = csi_split_critical_edge(term, k);
            if nbb.is_null() {
                return Err("a critical edge could not be split");
            }
            c.position_before(LLVMGetBasicBlockTerminator(nbb));
        }
    }
    Ok(())
}

/// A frame's path-tracing variables: the running path sum (`__PT_current_path`) and, in a
/// function with back edges, the ring buffer of completed paths (`__PT_counter_arr`, `n`
/// long) with its index.
#[derive(Clone, Copy)]
struct PathState {
    /// The running sum (with a ring buffer: the `__PT_state` pair, sum first).
    cur: LLVMValueRef,
    ring: Option<(LLVMValueRef, RingIndex)>,
    /// The path stored last (-1 before any), a plain alloca `mem2reg` promotes: with it a
    /// completed path equal to that one is not stored again (see `store_path`).
    last: Option<LLVMValueRef>,
    arr_ty: LLVMTypeRef,
    n: u64,
}

impl PathState {
    /// Declares the variables at the start of `f`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn allocate(
        c: &Ctx,
        f: LLVMValueRef,
        sp: LLVMMetadataRef,
        bbs: &[LLVMBasicBlockRef],
        nb: &Numbering,
        n: u32,
        shadowed: bool,
        repeats_once: bool,
    ) -> PathState {
        let n = n.max(1) as u64;
        let arr_ty = LLVMArrayType2(c.i64t, n);
        let i64d = c.basic_type("long", 64, 0x05);
        let vol = |t| LLVMDIBuilderCreateQualifiedType(c.dib, 0x35, t);
        // A live frame's ring buffer only ever holds paths completed on back edges: the path
        // completed at a function exit would be stored right before `ret`, into a frame that
        // is gone one instruction later, so no exit store is made (csi-cc v1.4.0 makes one;
        // readers never see it in a live frame either). A function without back edges therefore
        // has an always-empty buffer and gets no `__PT_counter_arr` / `__PT_counter_idx` at all,
        // only `__PT_current_path` (readers know this from the path graph: no back edge).
        let looping = !nb.back_edges.is_empty();
        // With a ring buffer, the running sum and the index share one 16-byte alloca (sum first),
        // so that one vector store sets both at entry: each stack store per call costs
        // measurably in programs of many small calls (README, "Against the ≤ 2 % target").
        let pair_ty = LLVMArrayType2(c.i64t, 2);
        let (cur, ring) = if looping {
            let arr_di = c.volatile_array(i64d, 64, n);
            let arr = c.local(f, sp, arr_ty, 8, "__PT_counter_arr", arr_di);
            let pair = c.local_parts(
                f,
                sp,
                pair_ty,
                16,
                "__PT_state",
                &[
                    ("__PT_current_path", vol(i64d), 0),
                    ("__PT_counter_idx", vol(i64d), 8),
                ],
            );
            (pair, Some(arr))
        } else {
            (
                c.local(f, sp, c.i64t, 8, "__PT_current_path", vol(i64d)),
                None,
            )
        };
        // In optimized builds the ring index is also kept in a plain alloca that `mem2reg` turns
        // into an SSA value (see `promote_shadows`): every change is still a volatile store to
        // `__PT_counter_idx`, so memory always holds the current state, but nothing reads it
        // back, which takes the store → load → increment → store chain through memory (about 8
        // cycles, carried from one loop iteration to the next) off every loop's critical path.
        // Measured on Lua (`heavy.lua`, fastest quarter of rounds), `fixed` against plain: 1.068 →
        // 1.052 and 1.073 → 1.069 in two sets. Shadowing the running sum as well was slower (1.058):
        // its chain restarts on every back edge anyway, and an increment becomes an add plus a
        // store instead of one read-modify-write. Not with `setjmp`: a second return would resume
        // with the registers of the first.
        let ring = ring.map(|arr| {
            let shadow = shadowed.then(|| {
                c.position_before(LLVMGetFirstInstruction(bbs[0]));
                LLVMBuildAlloca(c.builder, c.i64t, c"csi.shadow".as_ptr())
            });
            (
                arr,
                RingIndex {
                    pair: cur,
                    pair_ty,
                    shadow,
                },
            )
        });
        // Repeated paths stored once (`--csi-pt-repeats=once`): a hot loop whose iterations
        // take the same path — a linear search's "not this one", a hash chain's "no match" —
        // then pays a compare and a not-taken branch per iteration instead of the ring store,
        // the index advance and its volatile store. Kept in a register like the index, so
        // only where the index is shadowed.
        let last = (repeats_once && ring.is_some_and(|(_, idx)| idx.has_shadow())).then(|| {
            c.position_before(LLVMGetFirstInstruction(bbs[0]));
            LLVMBuildAlloca(c.builder, c.i64t, c"csi.last".as_ptr())
        });
        PathState {
            cur,
            ring,
            last,
            arr_ty,
            n,
        }
    }

    /// Initialises the variables after the allocas (and the index's address): the sum to
    /// `entry_inc`, the index to 0, the ring's last slot to -1.
    unsafe fn initialise(&self, c: &Ctx, bbs: &[LLVMBasicBlockRef], entry_inc: i64) {
        let (cur, arr_ty, n) = (self.cur, self.arr_ty, self.n);
        match self.ring {
            Some((arr, idx)) => {
                c.position_before(after_allocas(bbs[0]));
                let last = c.gep(arr_ty, arr, LLVMConstInt(c.i64t, n - 1, 0));
                c.vstore(LLVMConstInt(c.i64t, u64::MAX, 1), last);
                let mut init = [
                    LLVMConstInt(c.i64t, entry_inc as u64, 1),
                    LLVMConstInt(c.i64t, 0, 0),
                ];
                let pair = LLVMConstVector(init.as_mut_ptr(), 2);
                c.vstore(pair, cur);
                if let Some(a) = idx.shadow {
                    LLVMBuildStore(c.builder, LLVMConstInt(c.i64t, 0, 0), a);
                }
                if let Some(a) = self.last {
                    LLVMBuildStore(c.builder, LLVMConstInt(c.i64t, u64::MAX, 1), a);
                }
            }
            None => {
                c.position_before(after_allocas(bbs[0]));
                c.vstore(LLVMConstInt(c.i64t, entry_inc as u64, 1), cur);
            }
        }
    }

    /// Emits "store the completed path (+inc) and advance the index" (back edges only).
    unsafe fn store_path(&self, c: &Ctx, inc: i64) {
        let (cur, arr_ty, n) = (self.cur, self.arr_ty, self.n);
        let (arr, idx) = self
            .ring
            .expect("a function with back edges has a ring buffer");
        let s = c.vload(c.i64t, cur);
        let s = if inc != 0 {
            LLVMBuildAdd(
                c.builder,
                s,
                LLVMConstInt(c.i64t, inc as u64, 1),
                c"".as_ptr(),
            )
        } else {
            s
        };
        // With `last`: `if (s != last) { store; advance; last = s; }`, the builder left
        // where it was, now at the start of the block the branch joins.
        let resume = self.last.map(|last| {
            let prev = LLVMBuildLoad2(c.builder, c.i64t, last, c"".as_ptr());
            let differs = LLVMBuildICmp(
                c.builder,
                LLVMIntPredicate::LLVMIntNE,
                s,
                prev,
                c"".as_ptr(),
            );
            let resume = LLVMGetNextInstruction(differs);
            let then = csi_split_if_then(differs, resume, 0);
            c.position_before(then);
            LLVMBuildStore(c.builder, s, last);
            resume
        });
        let i = idx.get(c);
        let p = c.gep(arr_ty, arr, i);
        c.vstore(s, p);
        let i1 = LLVMBuildAdd(c.builder, i, LLVMConstInt(c.i64t, 1, 0), c"".as_ptr());
        // A ring of 2^k entries wraps with a mask: two instructions (add, and) where the
        // compare and select take four (a zero register, compare, conditional move) — the
        // dissertation's "modulus operations for circular buffer wrap-around at the
        // machine-code level" (ch. 8).
        let next = if n.is_power_of_two() {
            LLVMBuildAnd(c.builder, i1, LLVMConstInt(c.i64t, n - 1, 0), c"".as_ptr())
        } else {
            let wrap = LLVMBuildICmp(
                c.builder,
                LLVMIntPredicate::LLVMIntEQ,
                i1,
                LLVMConstInt(c.i64t, n, 0),
                c"".as_ptr(),
            );
            LLVMBuildSelect(
                c.builder,
                wrap,
                LLVMConstInt(c.i64t, 0, 0),
                i1,
                c"".as_ptr(),
            )
        };
        idx.set(c, next);
        if let Some(resume) = resume {
            c.position_before(resume);
        }
    }

    /// Emits "add `inc` to the running sum".
    unsafe fn add(&self, c: &Ctx, inc: i64) {
        let s = LLVMBuildAdd(
            c.builder,
            c.vload(c.i64t, self.cur),
            LLVMConstInt(c.i64t, inc as u64, 1),
            c"".as_ptr(),
        );
        c.vstore(s, self.cur);
    }
}

/// The Ball–Larus numbering of a function to be path-traced (`succs`: each block's
/// successors), or `None` with the reason in the record's `pt_skipped`. Unless `loops` is
/// `Store`, the loops `elidable_loops` finds store no path per iteration, and
/// `rec.pt_elided` lists them; with `ElideAfterEntry` the edges entering their heads also end
/// a path.
pub(super) unsafe fn number_paths(
    c: &Ctx,
    bbs: &[LLVMBasicBlockRef],
    succs: &[Vec<u32>],
    rec: &mut FunctionRecord,
    loops: PtLoops,
) -> Option<Numbering> {
    if rec.has_callbr {
        rec.cfg.pt_skipped = Some("asm goto (callbr)".into());
        return None;
    }
    let probs: Vec<Vec<f64>> = bbs.iter().map(|&b| branch_weights(c, b)).collect();
    // Computed gotos: an indirect branch's edges cannot be split, so they carry
    // no increment; every edge into one of its targets ends the path (stored
    // before the branch, or on the edge) and the target restarts it, like a loop
    // head (see `instrument_paths`).
    let mut breaks = BTreeSet::new();
    let targets: BTreeSet<u32> = rec
        .indirectbr_blocks
        .iter()
        .flat_map(|&u| rec.info[u as usize].succs.iter().copied())
        .collect();
    for (u, b) in rec.info.iter().enumerate() {
        for &t in &b.succs {
            if targets.contains(&t) {
                breaks.insert((u as u32, t));
            }
        }
    }
    let elided = if loops != PtLoops::Store {
        let excluded: BTreeSet<u32> = targets
            .iter()
            .copied()
            .chain(rec.indirectbr_blocks.iter().copied())
            .collect();
        elidable_loops(bbs, succs, &excluded, loops)
    } else {
        BTreeMap::new()
    };
    let mut entering = BTreeSet::new();
    for (&h, body) in elided.iter().filter(|_| loops == PtLoops::ElideAfterEntry) {
        for (u, s) in succs.iter().enumerate() {
            if s.contains(&h) && body.binary_search(&(u as u32)).is_err() {
                entering.insert((u as u32, h));
            }
        }
    }
    let lands = landings(bbs, succs);
    let numbered = ballarus::number_with_loop_breaks(0, succs, &probs, &lands, &breaks, &entering);
    // Every edge into an elided head from its loop must come out a back edge (it does for
    // innermost natural loops, which the head dominates); else iterations would carry
    // increments across the head. Then, as when the breaks make too many paths, the function
    // is numbered without elision.
    let kept = numbered.as_ref().is_ok_and(|nb| {
        elided.iter().all(|(&h, body)| {
            body.iter()
                .filter(|&&u| succs[u as usize].contains(&h))
                .all(|&u| nb.back_edges.contains_key(&(u, h)))
        })
    });
    if !elided.is_empty() && !kept {
        return number_paths(c, bbs, succs, rec, PtLoops::Store);
    }
    match numbered {
        Ok(nb) => {
            if loops == PtLoops::Contract {
                rec.pt_contracted = contracted_loops(&nb, &elided);
            }
            rec.pt_elided = elided;
            Some(nb)
        }
        Err(e) => {
            rec.cfg.pt_skipped = Some(e.to_string());
            None
        }
    }
}

/// The loops `--csi-pt-loops=contract` takes out of the running sum (`contracted_loops`),
/// with the sum of one fixed route from the head to each of their blocks.
pub(super) struct ContractedLoops {
    /// Per block inside one: its loop's head and the route's sum from that head.
    route: HashMap<u32, (u32, i64)>,
    /// Each loop's edges to blocks outside it.
    exits: Vec<(u32, u32)>,
}

impl ContractedLoops {
    /// `loops`: head → blocks. The route to a block is the first found from the head along
    /// edges of the loop that are not back edges (every block of a natural loop of a
    /// reducible graph has one; `contracted_loops` keeps no loop where one does not).
    fn new(nb: &Numbering, loops: &BTreeMap<u32, Vec<u32>>) -> Self {
        let mut route = HashMap::new();
        let mut exits = Vec::new();
        let succ = successors(nb);
        for (&h, body) in loops {
            let sums = route_sums(nb, &succ, h, body);
            for (&b, &sum) in &sums {
                route.insert(b, (h, sum));
            }
            for (&u, vs) in &succ {
                for &v in vs {
                    if sums.contains_key(&u) && body.binary_search(&v).is_err() {
                        exits.push((u, v));
                    }
                }
            }
        }
        ContractedLoops { route, exits }
    }

    /// `u → v` stays inside one contracted loop.
    fn inside(&self, u: u32, v: u32) -> bool {
        matches!((self.route.get(&u), self.route.get(&v)), (Some(a), Some(b)) if a.0 == b.0)
    }

    /// The route's sum to `u`, if `u` is inside a contracted loop (else 0).
    fn route_sum(&self, u: u32) -> i64 {
        self.route.get(&u).map_or(0, |&(_, s)| s)
    }

    /// The edges leaving a contracted loop.
    fn exits(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.exits.iter().copied()
    }
}

/// Each block's successors in the numbered graph (the virtual exit left out).
fn successors(nb: &Numbering) -> BTreeMap<u32, Vec<u32>> {
    let mut succ: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for e in nb.graph.edges.iter().filter(|e| e.to != nb.graph.exit) {
        succ.entry(e.from).or_default().push(e.to);
    }
    succ
}

/// The sum of increments along one route from `h` to each block of `body` that is reached
/// along the loop's edges which are not back edges; the blocks not so reached are missing.
fn route_sums(
    nb: &Numbering,
    succ: &BTreeMap<u32, Vec<u32>>,
    h: u32,
    body: &[u32],
) -> BTreeMap<u32, i64> {
    let mut sums = BTreeMap::from([(h, 0i64)]);
    let mut todo = vec![h];
    while let Some(u) = todo.pop() {
        for &v in succ.get(&u).into_iter().flatten() {
            if body.binary_search(&v).is_err()
                || nb.back_edges.contains_key(&(u, v))
                || sums.contains_key(&v)
            {
                continue;
            }
            let inc = nb.increments.get(&(u, v)).copied().unwrap_or(0);
            sums.insert(v, sums[&u].wrapping_add(inc));
            todo.push(v);
        }
    }
    sums
}

/// The loops `--csi-pt-loops=contract` takes out of the running sum: of the `elided` loops
/// (head → blocks), those holding no loop that stores its iterations (every head of a back
/// edge inside is an elided loop's), entered only at the head (the reader decodes the sum
/// of a frame inside at the head), whose every block a route from the head reaches, and
/// that no other such loop holds.
fn contracted_loops(nb: &Numbering, elided: &BTreeMap<u32, Vec<u32>>) -> BTreeMap<u32, Vec<u32>> {
    let heads: BTreeSet<u32> = nb.back_edges.keys().map(|&(_, h)| h).collect();
    let succ = successors(nb);
    let entered_only_at_head = |h: u32, body: &[u32]| {
        succ.iter().all(|(&u, vs)| {
            body.binary_search(&u).is_ok()
                || vs
                    .iter()
                    .all(|&v| v == h || body.binary_search(&v).is_err())
        })
    };
    let candidates: Vec<(u32, &Vec<u32>)> = elided
        .iter()
        .filter(|(_, body)| {
            body.iter()
                .all(|b| !heads.contains(b) || elided.contains_key(b))
        })
        .filter(|(&h, body)| entered_only_at_head(h, body))
        .filter(|(&h, body)| route_sums(nb, &succ, h, body).len() == body.len())
        .map(|(&h, body)| (h, body))
        .collect();
    candidates
        .iter()
        .filter(|&&(h, _)| {
            !candidates
                .iter()
                .any(|&(h2, body2)| h2 != h && body2.binary_search(&h).is_ok())
        })
        .map(|&(h, body)| (h, body.clone()))
        .collect()
}

/// Where each edge leads on to, for guessing how often it runs (`ballarus::number_with_loop_breaks`'s
/// `lands`): its target, unless the target only branches on a phi whose value from the edge's
/// source is a constant — clang's `land.end` / `lor.end`, which every short-circuiting test of
/// a `while (a && b && …)` condition reaches — then that branch's target for the constant.
/// The optimizer threads such edges straight to the target; before optimization they look
/// like edges inside the loop, and the route that stays in it like a rare one.
unsafe fn landings(bbs: &[LLVMBasicBlockRef], succs: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let index: HashMap<LLVMBasicBlockRef, u32> = bbs
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i as u32))
        .collect();
    // A block of phis and a conditional branch on one of them: its phi and branch.
    let branch_on_phi = |t: LLVMBasicBlockRef| -> Option<(LLVMValueRef, LLVMValueRef)> {
        let term = LLVMGetBasicBlockTerminator(t);
        if term.is_null() || LLVMIsABranchInst(term).is_null() || LLVMIsConditional(term) == 0 {
            return None;
        }
        let cond = LLVMGetCondition(term);
        let only_phis = instructions(t).into_iter().all(|i| {
            i == term || !LLVMIsAPHINode(i).is_null() || records::intrinsic_without_code(i)
        });
        let phi_here = !LLVMIsAPHINode(cond).is_null() && LLVMGetInstructionParent(cond) == t;
        (only_phis && phi_here).then_some((cond, term))
    };
    succs
        .iter()
        .enumerate()
        .map(|(u, s)| {
            s.iter()
                .map(|&t| {
                    let Some((phi, br)) = branch_on_phi(bbs[t as usize]) else {
                        return t;
                    };
                    let from_u = (0..LLVMCountIncoming(phi)).find_map(|k| {
                        (LLVMGetIncomingBlock(phi, k) == bbs[u])
                            .then(|| LLVMGetIncomingValue(phi, k))
                    });
                    match from_u.filter(|v| !LLVMIsAConstantInt(*v).is_null()) {
                        Some(v) => {
                            let taken = if LLVMConstIntGetZExtValue(v) != 0 {
                                0
                            } else {
                                1
                            };
                            index
                                .get(&LLVMGetSuccessor(br, taken))
                                .copied()
                                .unwrap_or(t)
                        }
                        None => t,
                    }
                })
                .collect()
        })
        .collect()
}

/// The loops whose iterations `--csi-pt-loops=elide…` (`loops`) does not store: natural loops
/// (head → its blocks, sorted) with none of the `excluded` blocks (computed gotos and their
/// targets, which break paths already) that `loops` chooses (see `PtLoops`).
unsafe fn elidable_loops(
    bbs: &[LLVMBasicBlockRef],
    succs: &[Vec<u32>],
    excluded: &BTreeSet<u32>,
    loops: PtLoops,
) -> BTreeMap<u32, Vec<u32>> {
    let g = csi_model::dominance::BlockGraph::new(succs.to_vec());
    let natural: BTreeMap<u32, Vec<bool>> = (1..succs.len())
        .filter_map(|h| Some((h as u32, g.natural_loop(h)?)))
        .collect();
    // Blocks that call: any call for `ElideInnermost`'s loops, else a call the optimizer may
    // leave (not to an inline function the unit defines).
    let any_call = matches!(loops, PtLoops::ElideInnermost | PtLoops::ElideAfterEntry);
    let calls: Vec<bool> = bbs
        .iter()
        .map(|&b| {
            instructions(b)
                .into_iter()
                .any(|i| call_site(i).is_some_and(|f| any_call || !is_inline_definition(f)))
        })
        .collect();
    natural
        .iter()
        .filter(|&(&h, inside)| {
            let body = || (0..inside.len()).filter(|&b| inside[b]);
            body().all(|b| !excluded.contains(&(b as u32)))
                && match loops {
                    PtLoops::Store => false,
                    PtLoops::ElideAll => true,
                    PtLoops::ElideInnermost | PtLoops::ElideAfterEntry => body().all(|b| {
                        (b == h as usize || !natural.contains_key(&(b as u32))) && !calls[b]
                    }),
                    // Some iteration goes from the head back to it through no calling block.
                    PtLoops::Elide | PtLoops::Contract => {
                        let h = h as usize;
                        let round = g.reach_within(g.succs(h).iter().map(|&s| s as usize), |b| {
                            b != h && inside[b] && !calls[b]
                        });
                        !calls[h]
                            && g.preds(h)
                                .iter()
                                .any(|&u| inside[u] && (u == h || round[u]))
                    }
                }
        })
        .map(|(&h, inside)| {
            let body = (0..inside.len() as u32).filter(|&b| inside[b as usize]);
            (h, body.collect())
        })
        .collect()
}

/// `f` is a function this unit defines as `inline` (or always-inline): the optimizer inlines
/// such small helpers, so their calls in a loop before optimization do not stay calls.
unsafe fn is_inline_definition(f: LLVMValueRef) -> bool {
    if LLVMIsAFunction(f).is_null() || LLVMIsDeclaration(f) != 0 {
        return false;
    }
    [c"inlinehint", c"alwaysinline"].iter().any(|name| {
        let kind = LLVMGetEnumAttributeKindForName(name.as_ptr(), name.count_bytes());
        !LLVMGetEnumAttributeAtIndex(f, llvm_sys::LLVMAttributeFunctionIndex, kind).is_null()
    })
}

/// Marks a path-traced function's record: each node's path-tracing block (ids from `pt_base`,
/// unique in the unit), the path graph; returns its `.debug_PT` record.
pub(super) fn pt_record(
    rec: &mut FunctionRecord,
    nb: &Numbering,
    pt_base: u32,
    name: &str,
) -> String {
    let cfg = &mut rec.cfg;
    let pt_id = |b: u32| pt_base + b;
    for (bi, &first) in rec.block_first_node.iter().enumerate() {
        for n in first..=rec.block_last_node[bi] {
            cfg.nodes[n as usize].pt_block = Some(pt_id(bi as u32));
        }
    }
    cfg.path_traced = true;
    cfg.pt_elided = rec.pt_elided.keys().map(|&h| pt_id(h)).collect();
    cfg.pt_contracted = rec
        .pt_contracted
        .iter()
        .map(|(&h, body)| {
            std::iter::once(h)
                .chain(body.iter().copied())
                .map(pt_id)
                .collect()
        })
        .collect();
    cfg.pt = Some(CfgPathTracing {
        entry: pt_id(nb.graph.entry),
        exit: pt_id(nb.graph.exit),
        edges: nb
            .graph
            .edges
            .iter()
            .map(|e| ballarus::PathEdge {
                from: pt_id(e.from),
                to: pt_id(e.to),
                ..*e
            })
            .collect(),
        num_paths: nb.num_paths,
    });
    // .debug_PT record.
    let mut blocks_out = vec![PtBlock {
        id: pt_id(nb.n),
        kind: PtBlockKind::Exit,
        items: Vec::new(),
        null: false,
    }];
    for (bi, b) in rec.info.iter().enumerate() {
        if !nb.reachable[bi] {
            continue;
        }
        let mut items: Vec<PtItem> = b.lines.iter().map(|&l| PtItem::Line(l)).collect();
        // Completed paths are stored on back edges only (see `PathState::allocate`), but
        // for those of loops that store no iteration.
        let stores = nb.back_edges.keys().any(|&(u, h)| {
            u == bi as u32
                && !rec
                    .pt_elided
                    .get(&h)
                    .is_some_and(|body| body.binary_search(&u).is_ok())
        });
        if stores {
            items.push(PtItem::PathEnd);
        }
        blocks_out.push(PtBlock {
            id: pt_id(bi as u32),
            kind: if bi == 0 {
                PtBlockKind::Entry
            } else {
                PtBlockKind::Normal
            },
            null: items.is_empty(),
            items,
        });
    }
    let mut pt_text = String::new();
    PtFunction {
        name: name.to_string(),
        blocks: blocks_out,
        edges: cfg.pt.as_ref().unwrap().edges.clone(),
    }
    .write(&mut pt_text);
    pt_text
}
