//! Probe stores hoisted out of loops (`--csi-probe-hoisting=loops`, the default in optimized
//! builds but with `--csi-scheme=bb`, whose default `peel` does this too): in the optimized
//! code, a coverage probe at the head of a loop stores the same 1 into the same byte on every
//! iteration. Where the loop's first iteration is sure to reach
//! the store, and nothing before it can stop or divert execution, the store moves to the end
//! of the block that enters the loop, and runs once per entry instead of once per iteration.
//!
//! Why it is exact, for a store `S` in loop head `H`, moved before the terminator of `P`:
//! - `P` is the one predecessor of `H` that `H` does not dominate, and it ends in
//!   `br label %H`. Every first arrival at `H` therefore comes from `P`, right after the moved
//!   store; every later arrival comes from a latch, round `H`'s natural loop (the blocks `H`
//!   dominates that reach a latch without passing `H`).
//! - Everything in `H` before `S` can neither fault, call, nor branch away (arithmetic, other
//!   probes' stores, accesses to coverage arrays already written whole before the loop — a
//!   first touch of a stack page faults when the stack is exhausted): once the moved store
//!   runs, `S`'s own position is reached. No fault and no call can fall between the two, so
//!   at a crash the byte never says "ran" for code that did not run. (A thread stopped from
//!   outside, or a signal, may find a frame in between, as it may find one between any -O2
//!   probe and the instructions the optimizer scheduled around it.)
//! - The byte is never cleared in `H`'s loop: global arrays never are; a frame's array (a
//!   local marked [`COVERAGE_LOCAL`]) is zeroed once per activation (or per inlined call),
//!   and no instruction that may clear it (zeroing, lifetime markers, any call it is handed
//!   to) may be in the natural loop. A way back to `H` that leaves the loop re-enters through
//!   `P` and stores again, so whenever `S`'s position is reached the byte already holds the
//!   1 that `S` stored. A frame's array must also have been written whole before `P`'s end,
//!   or the moved store could be the first touch of its page.
//!
//! Then a store whose byte is already 1 on every way to it, with nothing able to clear the
//! byte since the last store on each, is dropped ([`drop_repeated_stores`]). Dominators and
//! reach are `csi_model::dominance`'s, the block graph facts the probe placement uses. With
//! `--csi-probe-merging=words`, once the global stores are checked, a frame array's stores
//! side by side become one `or` of the word that holds them ([`merge_frame_stores`]; fewer
//! instructions but more CPU time on x86-64, hence not the default).
//!
//! With `--csi-probe-hoisting=peel` (the default with `--csi-scheme=bb`), a loop of at most
//! [`PEEL_MAX_SIZE`] instructions where some probe's byte is stored on every way from its head
//! to each latch (in a block that dominates every latch, or on each side of a test the
//! optimizer duplicated the block into) first loses its first iteration to a copy in front of
//! it (LLVM's own loop peeling, `csi_peel_probed_loops` in shim.cpp): every way into the loop
//! then passes a store of that byte, so the loop's stores of it are repeats and are dropped
//! (below). Where
//! nothing can fault before it, the hoisting above already ran such a store once per entry;
//! peeling reaches the probes after the head's first load or call, and those of blocks past
//! the head — flex's `snstods` scan of every DFA state tested a frame bit per iteration.
//! Peeling changes no instruction the program runs, only where they lie; the bytes are the
//! same at every point by the repeat argument below. Functions with computed gotos (an
//! interpreter's dispatch) are not peeled: their loops are short and their speed follows
//! their layout (Lua, see `csi_peel_probed_loops`).
//!
//! First, a probe store the optimizer sank into a block through a `phi` of its predecessors'
//! addresses goes back to them, each group of predecessors with one address getting a block
//! of its own on the way in ([`unsink_probe_stores`]): a store at a constant address per way,
//! which the rules here can read.
//!
//! Repeated, a store leaves a loop nest one level at a time (`P` is then the head of the outer
//! loop). Functions that call `setjmp`-like functions are left alone (a second return resumes
//! a block mid-way).

use super::checked::{
    constant_offset, cycle_of, is_probe_store, is_probe_store_address, is_store_of_one, successors,
    touched_locals,
};
use super::*;
use csi_model::dominance::BlockGraph;

/// The metadata kind marking a frame's coverage array (`__CC_arr`, `__BBC_arr`): the locals
/// whose `store volatile i8 1` are probes, not the program's own volatile stores.
pub(super) const COVERAGE_LOCAL: &str = "csi.coverage";

/// Marks `alloca` as a frame's coverage array (see [`COVERAGE_LOCAL`]).
pub(super) unsafe fn mark_coverage_local(ctx: LLVMContextRef, alloca: LLVMValueRef) {
    let node = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, ptr::null_mut(), 0));
    LLVMSetMetadata(alloca, coverage_local_kind(ctx), node);
}

unsafe fn coverage_local_kind(ctx: LLVMContextRef) -> u32 {
    LLVMGetMDKindIDInContext(
        ctx,
        COVERAGE_LOCAL.as_ptr() as _,
        COVERAGE_LOCAL.len() as u32,
    )
}

/// The largest loop (in LLVM instructions, counted with its inner loops, whose first
/// iterations were peeled before it) that `--csi-probe-hoisting=peel` peels: its copy is the
/// code it adds. flex's `snstods` scan needs more than 120 (flex's `bb` ran ×1.27 plain's
/// instructions with 120, ×1.03 with 250 or 400); with 250 instead of 400 the `bb` builds'
/// code (`size`'s text) grows 7 % instead of 8.5 % (flex) and 14 % instead of 19 % (gzip),
/// for 0.6 % more instructions on gzip's compression.
pub(crate) const PEEL_MAX_SIZE: u32 = 250;

/// How many probe stores [`hoist_probe_stores`] moved out of a loop (a store moved out of two
/// loops counts twice) and dropped as repeats, and the loops it peeled.
#[derive(Clone, Copy, Default, Debug)]
pub struct Hoisted {
    pub moved: usize,
    pub dropped: usize,
    pub peeled: usize,
    /// Frame-array stores folded into a wider one ([`merge_frame_stores`]): stores gone.
    pub merged: usize,
    /// Probe stores through a `phi` of addresses given back to their predecessors
    /// ([`unsink_probe_stores`]): stores at a constant address made.
    pub unsunk: usize,
}

/// Hoists the probe stores of every function of `module` and drops their repeats, after
/// peeling loops whose iterations repeat a probe's store when `peel` says so (see the module
/// documentation).
pub(crate) unsafe fn hoist_probe_stores(
    ctx: LLVMContextRef,
    module: LLVMModuleRef,
    peel: bool,
) -> Result<Hoisted, String> {
    let kind = coverage_local_kind(ctx);
    let mut n = Hoisted::default();
    for (f, mut bbs) in function_bodies(module) {
        if !has_returns_twice_call(&bbs) {
            let unsunk = unsink_probe_stores(ctx, &bbs, kind);
            if unsunk > 0 {
                n.unsunk += unsunk;
                verified(
                    f,
                    "its phi'd probe stores were given back to their predecessors",
                )?;
                bbs = blocks(f);
            }
            if peel {
                n.peeled += peel_probed_loops(f, &bbs, kind);
                verified(f, "its loops were peeled")?;
                // The blocks again: putting a loop in simplified form adds blocks (and may
                // remove some) even where the loop is then not peeled.
                bbs = blocks(f);
            }
            let h = hoist_in_function(ctx, &bbs, kind);
            n.moved += h.moved;
            n.dropped += h.dropped;
        }
    }
    Ok(n)
}

/// The optimizer's sinking of common code (SimplifyCFG) merges the probe stores of the blocks
/// that branch to one successor into a single `store volatile i8 1, ptr %p` there, `%p` a `phi`
/// of their addresses; gzip's `longest_match` runs such a store, and the register copy its
/// `phi` needs, on each of 11.8 M iterations, where every `continue` path's block stored its
/// own byte. Gives each group of predecessors with the same address a block of its own on its
/// way into that successor, which stores that address and branches on: one store at a constant
/// address per way, no copy, and a store the repeat rule, hoisting and checking can see.
/// Returns the number of stores made.
///
/// Exact: only where everything in the block before the store is a `phi`, another such store,
/// or cannot fault ([`is_pure`], global probe stores, intrinsics that do nothing), so the bytes
/// stored on entering it are the bytes the block stored right after its entry, with nothing in
/// between that can stop. (A frame array's store moved ahead of a global probe store cannot
/// fault either: the array was zeroed whole, its pages touched, before any of its probes.) Only predecessors ending in `br`
/// or `switch` (their edges can be given a block), not an exception handler's block.
unsafe fn unsink_probe_stores(ctx: LLVMContextRef, bbs: &[LLVMBasicBlockRef], kind: u32) -> usize {
    let coverage_address = |v: LLVMValueRef| match constant_offset(v) {
        Some((base, _)) if !LLVMIsAAllocaInst(base).is_null() => {
            !LLVMGetMetadata(base, kind).is_null()
        }
        Some(_) => is_probe_store_address(v),
        None => false,
    };
    let builder = LLVMCreateBuilderInContext(ctx);
    let mut made = 0;
    for &bb in bbs {
        // The block's phi'd probe stores, before anything that can stop.
        let mut stores = Vec::new();
        for i in instructions(bb) {
            let op = LLVMGetInstructionOpcode(i);
            if op == LLVMOpcode::LLVMPHI {
                continue;
            }
            if is_store_of_one(i) {
                let p = LLVMGetOperand(i, 1);
                if !LLVMIsAPHINode(p).is_null()
                    && LLVMGetInstructionParent(p) == bb
                    && (0..LLVMCountIncoming(p))
                        .all(|k| coverage_address(LLVMGetIncomingValue(p, k)))
                {
                    stores.push(i);
                    continue;
                }
            }
            if !is_pure(op) && !is_quiet(i) {
                break;
            }
        }
        if stores.is_empty() || !LLVMIsALandingPadInst(first_non_phi(bb)).is_null() {
            continue;
        }
        let preds: Vec<LLVMBasicBlockRef> = {
            let phi = LLVMGetOperand(stores[0], 1);
            (0..LLVMCountIncoming(phi))
                .map(|k| LLVMGetIncomingBlock(phi, k))
                .collect()
        };
        let redirectable = preds.iter().all(|&p| {
            let t = LLVMGetBasicBlockTerminator(p);
            matches!(
                LLVMGetInstructionOpcode(t),
                LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch
            )
        });
        if !redirectable {
            continue;
        }
        // Predecessors grouped by the addresses they give the stores (in the order of
        // `preds`, so that the output does not depend on pointer values).
        let mut groups: Vec<(Vec<LLVMValueRef>, Vec<LLVMBasicBlockRef>)> = Vec::new();
        for &p in &preds {
            let addresses: Vec<LLVMValueRef> = stores
                .iter()
                .map(|&s| incoming_all(LLVMGetOperand(s, 1), p)[0].0)
                .collect();
            match groups.iter_mut().find(|(a, _)| *a == addresses) {
                Some((_, ps)) => {
                    if !ps.contains(&p) {
                        ps.push(p)
                    }
                }
                None => groups.push((addresses, vec![p])),
            }
        }
        let phis: Vec<LLVMValueRef> = instructions(bb)
            .into_iter()
            .take_while(|&i| !LLVMIsAPHINode(i).is_null())
            .collect();
        // Each group's block: its stores, then on to `bb`.
        let mut entries: Vec<LLVMBasicBlockRef> = Vec::new();
        for (addresses, ps) in &groups {
            let e = LLVMInsertBasicBlockInContext(ctx, bb, c"csi.unsunk".as_ptr());
            LLVMPositionBuilderAtEnd(builder, e);
            for (&s, &a) in stores.iter().zip(addresses) {
                let st = LLVMBuildStore(builder, LLVMConstInt(LLVMInt8TypeInContext(ctx), 1, 0), a);
                LLVMSetVolatile(st, 1);
                LLVMSetAlignment(st, 1);
                LLVMInstructionSetDebugLoc(st, LLVMInstructionGetDebugLoc(s));
                made += 1;
            }
            let br = LLVMBuildBr(builder, bb);
            LLVMInstructionSetDebugLoc(br, LLVMInstructionGetDebugLoc(stores[0]));
            for &p in ps {
                let t = LLVMGetBasicBlockTerminator(p);
                for k in 0..LLVMGetNumSuccessors(t) {
                    if LLVMGetSuccessor(t, k) == bb {
                        LLVMSetSuccessor(t, k, e);
                    }
                }
            }
            entries.push(e);
        }
        // `bb`'s phis: one entry per group's block, a phi of its own there where the
        // group's predecessors bring different values.
        let addresses: Vec<LLVMValueRef> = stores.iter().map(|&s| LLVMGetOperand(s, 1)).collect();
        let mut dead = Vec::new();
        for &phi in &phis {
            let ty = LLVMTypeOf(phi);
            LLVMPositionBuilderBefore(builder, LLVMGetFirstInstruction(bb));
            let fresh = LLVMBuildPhi(builder, ty, c"".as_ptr());
            for ((_, ps), &e) in groups.iter().zip(&entries) {
                let values: Vec<(LLVMValueRef, LLVMBasicBlockRef)> =
                    ps.iter().flat_map(|&p| incoming_all(phi, p)).collect();
                let mut v = values[0].0;
                if values.iter().any(|&(x, _)| x != v) {
                    LLVMPositionBuilderBefore(builder, LLVMGetFirstInstruction(e));
                    let inner = LLVMBuildPhi(builder, ty, c"".as_ptr());
                    let (mut vs, mut bs): (Vec<_>, Vec<_>) = values.into_iter().unzip();
                    LLVMAddIncoming(inner, vs.as_mut_ptr(), bs.as_mut_ptr(), vs.len() as u32);
                    v = inner;
                }
                let (mut vs, mut bs) = (vec![v], vec![e]);
                LLVMAddIncoming(fresh, vs.as_mut_ptr(), bs.as_mut_ptr(), 1);
            }
            LLVMReplaceAllUsesWith(phi, fresh);
            LLVMInstructionEraseFromParent(phi);
            if addresses.contains(&phi) {
                dead.push(fresh);
            }
        }
        for &s in &stores {
            LLVMInstructionEraseFromParent(s);
        }
        // The addresses' phis, unless the program's code uses them too.
        for phi in dead {
            if LLVMGetFirstUse(phi).is_null() {
                LLVMInstructionEraseFromParent(phi);
            }
        }
    }
    LLVMDisposeBuilder(builder);
    made
}

/// Every entry of `phi` for predecessor `p` (a `switch` with several cases into the block
/// has one per edge).
unsafe fn incoming_all(
    phi: LLVMValueRef,
    p: LLVMBasicBlockRef,
) -> Vec<(LLVMValueRef, LLVMBasicBlockRef)> {
    (0..LLVMCountIncoming(phi))
        .filter(|&k| LLVMGetIncomingBlock(phi, k) == p)
        .map(|k| (LLVMGetIncomingValue(phi, k), p))
        .collect()
}

/// A rewriting gone wrong must stop the build, not reach the back end: `f` must pass LLVM's
/// verifier after `what`.
unsafe fn verified(f: LLVMValueRef, what: &str) -> Result<(), String> {
    let failed = llvm_sys::analysis::LLVMVerifyFunction(
        f,
        llvm_sys::analysis::LLVMVerifierFailureAction::LLVMReturnStatusAction,
    ) != 0;
    if failed {
        return Err(format!(
            "`{}` does not verify after {what} (a csi-cc bug; --csi-probe-hoisting=none \
             avoids it)",
            value_name(f)
        ));
    }
    Ok(())
}

/// Peels the loops of `f` whose iterations repeat a probe's store (see the module
/// documentation); returns how many.
unsafe fn peel_probed_loops(f: LLVMValueRef, bbs: &[LLVMBasicBlockRef], kind: u32) -> usize {
    let marked = frame_arrays(bbs, kind).marked;
    let mut probes: Vec<LLVMValueRef> = bbs
        .iter()
        .flat_map(|&bb| instructions(bb))
        .filter(|&i| is_probe_store(i) || probed_local(i, &marked).is_some())
        .collect();
    if probes.is_empty() {
        return 0;
    }
    // One key per byte (the stores' constant addresses; another address counts as its own).
    let mut ids: HashMap<(LLVMValueRef, i64), u32> = HashMap::new();
    let keys: Vec<u32> = probes
        .iter()
        .enumerate()
        .map(|(k, &i)| match constant_offset(LLVMGetOperand(i, 1)) {
            Some(key) => {
                let n = ids.len() as u32;
                *ids.entry(key).or_insert(n)
            }
            None => u32::MAX - k as u32,
        })
        .collect();
    super::csi_peel_probed_loops(
        f,
        probes.as_mut_ptr(),
        keys.as_ptr(),
        probes.len() as u32,
        PEEL_MAX_SIZE,
    ) as usize
}

/// A function's block graph (dominators, reach) from its blocks' successors.
fn block_graph(succs: &[Vec<usize>]) -> BlockGraph {
    BlockGraph::new(
        succs
            .iter()
            .map(|ss| ss.iter().map(|&s| s as u32).collect())
            .collect(),
    )
}

/// A function's frame coverage arrays (allocas marked [`COVERAGE_LOCAL`]), and per local the
/// blocks that zero it whole (`llvm.memset`: its memory is touched from there on) and the
/// instructions that may clear it (zeroing, or handing it to a call other than the loop-exit
/// copy, which only reads it), as (block, position in the block).
struct FrameArrays {
    marked: HashSet<LLVMValueRef>,
    zeroed_in: HashMap<LLVMValueRef, Vec<usize>>,
    clears: HashMap<LLVMValueRef, Vec<(usize, usize)>>,
}

unsafe fn frame_arrays(bbs: &[LLVMBasicBlockRef], kind: u32) -> FrameArrays {
    let mut a = FrameArrays {
        marked: HashSet::new(),
        zeroed_in: HashMap::new(),
        clears: HashMap::new(),
    };
    for (k, &bb) in bbs.iter().enumerate() {
        for (pos, i) in instructions(bb).into_iter().enumerate() {
            if !LLVMIsAAllocaInst(i).is_null() && !LLVMGetMetadata(i, kind).is_null() {
                a.marked.insert(i);
            }
            for l in touched_locals(i) {
                a.clears.entry(l).or_default().push((k, pos));
            }
            if let Some(l) = zeroed_local(i) {
                a.zeroed_in.entry(l).or_default().push(k);
            }
        }
    }
    a
}

unsafe fn hoist_in_function(ctx: LLVMContextRef, bbs: &[LLVMBasicBlockRef], kind: u32) -> Hoisted {
    let index: HashMap<LLVMBasicBlockRef, usize> =
        bbs.iter().enumerate().map(|(k, &b)| (b, k)).collect();
    let succs = successors(bbs, &index);
    if cycle_of(&succs).iter().all(Option::is_none) {
        return Hoisted::default();
    }
    let g = block_graph(&succs);
    let FrameArrays {
        marked,
        zeroed_in,
        clears,
    } = frame_arrays(bbs, kind);
    // The block that enters `h`'s loop: its one predecessor `h` does not dominate (so outside
    // the loop), ending in an unconditional branch to `h`.
    let preheader = |h: usize| -> Option<usize> {
        let mut outside = g
            .preds(h)
            .iter()
            .copied()
            .filter(|&p| g.reachable(p) && !g.dominates(h, p));
        let p = outside.next()?;
        if outside.next().is_some() {
            return None;
        }
        let t = LLVMGetBasicBlockTerminator(bbs[p]);
        (LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMBr && LLVMGetNumSuccessors(t) == 1)
            .then_some(p)
    };
    // The loop heads with their entries and natural loops (the CFG does not change).
    let loops: Vec<(usize, usize, Vec<bool>)> = (0..bbs.len())
        .filter_map(|h| Some((h, preheader(h)?, g.natural_loop(h)?)))
        .collect();
    // The local's memory was written whole on every way to `p`'s end: an access to it cannot
    // be the first touch of a stack page (which faults when the stack is exhausted).
    let touched_before = |local: LLVMValueRef, p: usize| {
        zeroed_in
            .get(&local)
            .is_some_and(|zs| zs.iter().any(|&z| g.dominates(z, p)))
    };
    let builder = LLVMCreateBuilderInContext(ctx);
    // The store's address must be available at `P`'s end: a constant, an instruction of a
    // block that dominates `P`, or a constant-index GEP of such a value in `H` itself, which
    // moves along (`P` dominates `H`: every path into `H` enters through `P`).
    let address_at = |s: LLVMValueRef, h: usize, p: usize| -> Option<Option<LLVMValueRef>> {
        let a = LLVMGetOperand(s, 1);
        let available = |v: LLVMValueRef| {
            LLVMIsAInstruction(v).is_null()
                || index
                    .get(&LLVMGetInstructionParent(v))
                    .is_some_and(|&b| b != h && g.dominates(b, p))
        };
        if available(a) {
            return Some(None);
        }
        let gep_here = !LLVMIsAGetElementPtrInst(a).is_null()
            && index.get(&LLVMGetInstructionParent(a)) == Some(&h)
            && (0..LLVMGetNumOperands(a) as u32).all(|k| {
                let o = LLVMGetOperand(a, k);
                if k == 0 {
                    available(o)
                } else {
                    !LLVMIsAConstantInt(o).is_null()
                }
            });
        gep_here.then_some(Some(a))
    };
    let mut moved = 0;
    loop {
        let mut round = 0;
        for &(h, p, ref inside) in &loops {
            let term = LLVMGetBasicBlockTerminator(bbs[p]);
            let safe_local =
                |local: LLVMValueRef| marked.contains(&local) && touched_before(local, p);
            for i in instructions(bbs[h]) {
                let eligible = if is_probe_store(i) {
                    true // a global array: never cleared
                } else if let Some(local) = probed_local(i, &marked) {
                    if !safe_local(local) {
                        break; // may be the first touch of its page
                    }
                    clears
                        .get(&local)
                        .map_or(true, |zs| zs.iter().all(|&(z, _)| !inside[z]))
                } else if cannot_stop(i, &safe_local) {
                    continue;
                } else {
                    break;
                };
                let Some(address) = eligible.then(|| address_at(i, h, p)).flatten() else {
                    continue; // a probe store stops nothing: look further
                };
                LLVMPositionBuilderBefore(builder, term);
                for m in address.into_iter().chain([i]) {
                    LLVMInstructionRemoveFromParent(m);
                    LLVMInsertIntoBuilder(builder, m);
                    LLVMInstructionSetDebugLoc(m, LLVMInstructionGetDebugLoc(term));
                }
                round += 1;
            }
        }
        if round == 0 {
            break;
        }
        moved += round;
    }
    LLVMDisposeBuilder(builder);
    // Repeats: a probe store whose byte is already 1 on every way to it — some earlier store
    // of 1 into it ran, and nothing able to clear it since (unrolled loops, duplicated paths,
    // a peeled loop's first iteration, an inlined callee's unrolled loop after its zeroing) —
    // writes what the byte holds: dropping it changes no byte at any point. "Set on every
    // way" is a forward must-analysis over the block graph (`drop_repeated_stores`); the
    // clearing instructions' positions again where the hoisting moved stores between blocks.
    let clears = if moved > 0 {
        frame_arrays(bbs, kind).clears
    } else {
        clears
    };
    let dropped = drop_repeated_stores(bbs, &g, &marked, &clears);
    Hoisted {
        moved,
        dropped,
        ..Default::default()
    }
}

/// What one instruction does to the probes' bytes, for [`drop_repeated_stores`].
enum ByteEvent {
    /// A probe's `store volatile i8 1` of byte `key`.
    Store(usize, LLVMValueRef),
    /// May clear every byte of a frame's array (its zeroing, a lifetime marker, a call
    /// handed it): the keys of that array.
    Clear(Vec<usize>),
}

/// Drops the probe stores whose byte is 1 on every way from the function's entry to them, and
/// returns how many. The bytes are the probe stores' addresses (a global or marked local
/// array at a constant offset); a byte is set after a store of 1 into it and unknown again
/// after an instruction that may clear its array (`clears`, by block and position). The
/// analysis is the greatest fixpoint of "set at a block's entry iff set at the end of every
/// reachable predecessor" (the entry: nothing set): a byte is set at a point iff every path
/// from the entry to it passes a store of it with no clear after. Every store so found is
/// dropped at once: on each path to one, the first store of its byte after the path's last
/// clear before it is not such a repeat — the path up to it passes no store of the byte after
/// that clear — so it stays, and the byte holds 1 from there on. Unreachable blocks are left
/// as they are.
unsafe fn drop_repeated_stores(
    bbs: &[LLVMBasicBlockRef],
    g: &BlockGraph,
    marked: &HashSet<LLVMValueRef>,
    clears: &HashMap<LLVMValueRef, Vec<(usize, usize)>>,
) -> usize {
    // The bytes (by address) and the events of every block, in order.
    let mut keys: HashMap<(LLVMValueRef, i64), usize> = HashMap::new();
    let mut stores: Vec<Vec<(usize, usize, LLVMValueRef)>> = vec![Vec::new(); bbs.len()];
    for (b, &bb) in bbs.iter().enumerate() {
        for (pos, i) in instructions(bb).into_iter().enumerate() {
            if probed_local(i, marked).is_none() && !is_probe_store(i) {
                continue;
            }
            let Some(key) = constant_offset(LLVMGetOperand(i, 1)) else {
                continue;
            };
            let n = keys.len();
            let k = *keys.entry(key).or_insert(n);
            stores[b].push((pos, k, i));
        }
    }
    if keys.is_empty() {
        return 0;
    }
    let mut of_local: HashMap<LLVMValueRef, Vec<usize>> = HashMap::new();
    for (&(base, _), &k) in &keys {
        of_local.entry(base).or_default().push(k);
    }
    let mut events: Vec<Vec<(usize, ByteEvent)>> = stores
        .into_iter()
        .map(|v| {
            v.into_iter()
                .map(|(pos, k, i)| (pos, ByteEvent::Store(k, i)))
                .collect()
        })
        .collect();
    for (local, at) in clears {
        let Some(ks) = of_local.get(local) else {
            continue;
        };
        for &(b, pos) in at {
            events[b].push((pos, ByteEvent::Clear(ks.clone())));
        }
    }
    for e in &mut events {
        e.sort_by_key(|&(pos, _)| pos);
    }
    let words = keys.len().div_ceil(64);
    // One event's effect on the set of bytes known to be 1; for a store, whether its byte
    // already was (a repeat).
    let step = |set: &mut [u64], e: &ByteEvent| -> bool {
        match e {
            ByteEvent::Store(k, _) => {
                let was = set[k / 64] & (1 << (k % 64)) != 0;
                set[k / 64] |= 1 << (k % 64);
                was
            }
            ByteEvent::Clear(ks) => {
                for k in ks {
                    set[k / 64] &= !(1 << (k % 64));
                }
                false
            }
        }
    };
    let entry_of = |out: &[Vec<u64>], b: usize| -> Vec<u64> {
        if b == 0 {
            return vec![0; words];
        }
        let mut set = vec![!0u64; words];
        for &p in g.preds(b) {
            if g.reachable(p) {
                for (w, o) in set.iter_mut().zip(&out[p]) {
                    *w &= o;
                }
            }
        }
        set
    };
    let live: Vec<usize> = (0..bbs.len()).filter(|&b| g.reachable(b)).collect();
    let mut out = vec![vec![!0u64; words]; bbs.len()];
    loop {
        let mut changed = false;
        for &b in &live {
            let mut set = entry_of(&out, b);
            for (_, e) in &events[b] {
                step(&mut set, e);
            }
            if set != out[b] {
                out[b] = set;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut dropped = 0;
    for &b in &live {
        let mut set = entry_of(&out, b);
        for (_, e) in &events[b] {
            if let (true, ByteEvent::Store(_, i)) = (step(&mut set, e), e) {
                LLVMInstructionEraseFromParent(*i);
                dropped += 1;
            }
        }
    }
    dropped
}

/// Frame-array probe stores merged (`--csi-probe-merging=words`, after [`hoist_probe_stores`]
/// and the checks; not the default: zstd's `bb` build ran 16 % slower with it, median of 15
/// interleaved rounds, though it executes 4 % fewer instructions — the `or`'s load waits for
/// the byte stores to the same word before it, which a wider load cannot forward from): in the
/// optimized code one block often sets several bytes of a frame's coverage array — the
/// source's blocks that the optimizer laid end to end, an inlined callee's with its caller's
/// — each a `store volatile i8 1`. Those in one aligned 8-byte word of the array, with nothing
/// between them but arithmetic, address computations, global probe stores and intrinsics that
/// do nothing at run time, become one read-modify-write of the narrowest aligned word that
/// holds them (`load volatile iW; or mask; store volatile iW`, one `or` instruction on
/// x86-64) at the first one's place, with its line. A later store whose line no other
/// instruction carries stays a store of its own (its line's row would go).
///
/// Why it is exact: no instruction between the first and the last of them can fault or call,
/// so at every fault and every call each byte holds what it held before; the bytes of the
/// word outside the mask are written back unchanged, and only this thread writes its frames
/// (a signal handler runs in frames of its own; the SIGUSR2 snapshot reads only the global
/// arrays). The array was zeroed whole before (earlier in the block or in a dominating
/// block), so the wider access cannot be the first touch of a stack page. A thread stopped
/// from outside between the first and the last may show the later bytes already set — for
/// straight-line code it is about to run, as it may find any -O2 probe and the instructions
/// the optimizer scheduled around it out of order (see the module documentation). Global
/// arrays are left alone: another thread may set a neighbouring byte between the read and
/// the write. Returns the stores gone.
pub(crate) unsafe fn merge_frame_stores(ctx: LLVMContextRef, module: LLVMModuleRef) -> usize {
    let kind = coverage_local_kind(ctx);
    let builder = LLVMCreateBuilderInContext(ctx);
    let merged = function_bodies(module)
        .iter()
        .map(|(_, bbs)| merge_in_function(ctx, builder, bbs, kind))
        .sum();
    LLVMDisposeBuilder(builder);
    merged
}

unsafe fn merge_in_function(
    ctx: LLVMContextRef,
    builder: LLVMBuilderRef,
    bbs: &[LLVMBasicBlockRef],
    kind: u32,
) -> usize {
    let FrameArrays {
        marked, zeroed_in, ..
    } = frame_arrays(bbs, kind);
    if marked.is_empty() {
        return 0;
    }
    let index: HashMap<LLVMBasicBlockRef, usize> =
        bbs.iter().enumerate().map(|(k, &b)| (b, k)).collect();
    let g = block_graph(&successors(bbs, &index));
    let mut lines: HashMap<LineKey, usize> = HashMap::new();
    for &bb in bbs {
        for i in instructions(bb) {
            if let Some(k) = line_key(i) {
                *lines.entry(k).or_default() += 1;
            }
        }
    }
    let mut merged = 0;
    for (k, &bb) in bbs.iter().enumerate() {
        let mut zeroed_here: HashSet<LLVMValueRef> = HashSet::new();
        // The stores since the last instruction that could stop execution: (store, local,
        // offset).
        let mut run: Vec<(LLVMValueRef, LLVMValueRef, i64)> = Vec::new();
        for i in instructions(bb) {
            if let Some(local) = probed_local(i, &marked) {
                let touched = zeroed_here.contains(&local)
                    || zeroed_in
                        .get(&local)
                        .is_some_and(|zs| zs.iter().any(|&z| z != k && g.dominates(z, k)));
                if let (true, Some((_, off))) = (touched, constant_offset(LLVMGetOperand(i, 1))) {
                    run.push((i, local, off));
                    continue;
                }
            } else if is_quiet(i) {
                continue;
            }
            merged += merge_run(ctx, builder, &mut run, &mut lines);
            if let Some(a) = zeroed_local(i) {
                zeroed_here.insert(a);
            }
        }
        merged += merge_run(ctx, builder, &mut run, &mut lines);
    }
    merged
}

/// Where an instruction's line row comes from: its location's scope, line and inlined-at
/// (`None`: no location, or line 0).
type LineKey = (LLVMMetadataRef, u32, LLVMMetadataRef);

unsafe fn line_key(i: LLVMValueRef) -> Option<LineKey> {
    let loc = LLVMInstructionGetDebugLoc(i);
    if loc.is_null() {
        return None;
    }
    let line = LLVMDILocationGetLine(loc);
    (line != 0).then(|| {
        (
            LLVMDILocationGetScope(loc),
            line,
            LLVMDILocationGetInlinedAt(loc),
        )
    })
}

/// Merges the stores of `run` (see [`merge_frame_stores`]) and empties it; the stores gone.
/// `lines`: how many instructions of the function carry each line (kept up to date).
unsafe fn merge_run(
    ctx: LLVMContextRef,
    builder: LLVMBuilderRef,
    run: &mut Vec<(LLVMValueRef, LLVMValueRef, i64)>,
    lines: &mut HashMap<LineKey, usize>,
) -> usize {
    let mut gone = 0;
    let mut locals: Vec<LLVMValueRef> = run.iter().map(|&(_, l, _)| l).collect();
    locals.sort();
    locals.dedup();
    for local in locals {
        let len = LLVMGetArrayLength2(LLVMGetAllocatedType(local)) as i64;
        // By aligned 8-byte word: (offset, position in the run, store).
        let mut words: BTreeMap<i64, Vec<(i64, usize, LLVMValueRef)>> = BTreeMap::new();
        for (pos, &(store, l, off)) in run.iter().enumerate() {
            if l == local && (0..len).contains(&off) {
                words
                    .entry(off.div_euclid(8))
                    .or_default()
                    .push((off, pos, store));
            }
        }
        for (_, mut word) in words {
            // The first in the run takes the merged store's place and line; another goes only
            // if some other instruction still carries its line, or that line's row would go.
            word.sort_by_key(|w| w.1);
            let first = word[0];
            let mut taken: Vec<LineKey> = Vec::new();
            word.retain(|w| {
                if w.1 == first.1 {
                    return true;
                }
                let Some(k) = line_key(w.2) else { return true };
                match lines.get_mut(&k) {
                    Some(n) if *n > 1 => {
                        *n -= 1;
                        taken.push(k);
                        true
                    }
                    _ => false,
                }
            });
            let (lo, hi) = word.iter().fold((i64::MAX, i64::MIN), |(lo, hi), w| {
                (lo.min(w.0), hi.max(w.0))
            });
            // The narrowest aligned word holding them, inside the array.
            let place = [2i64, 4, 8]
                .into_iter()
                .map(|w| (lo - lo.rem_euclid(w), w))
                .find(|&(start, w)| hi < start + w && start + w <= len);
            let (Some((start, width)), true) = (place, word.len() >= 2) else {
                for k in taken {
                    *lines.entry(k).or_default() += 1;
                }
                continue;
            };
            if LLVMGetAlignment(local) < 8 {
                LLVMSetAlignment(local, 8);
            }
            let ty = LLVMIntTypeInContext(ctx, (width * 8) as u32);
            let mask = word.iter().fold(0u64, |m, w| m | 1 << (8 * (w.0 - start)));
            LLVMPositionBuilderBefore(builder, first.2);
            let i8t = LLVMInt8TypeInContext(ctx);
            let mut offset = [LLVMConstInt(LLVMInt64TypeInContext(ctx), start as u64, 0)];
            let p =
                LLVMBuildInBoundsGEP2(builder, i8t, local, offset.as_mut_ptr(), 1, c"".as_ptr());
            let old = LLVMBuildLoad2(builder, ty, p, c"".as_ptr());
            LLVMSetVolatile(old, 1);
            LLVMSetAlignment(old, width as u32);
            let new = LLVMBuildOr(builder, old, LLVMConstInt(ty, mask, 0), c"".as_ptr());
            let st = LLVMBuildStore(builder, new, p);
            LLVMSetVolatile(st, 1);
            LLVMSetAlignment(st, width as u32);
            let loc = LLVMInstructionGetDebugLoc(first.2);
            for v in [p, old, new, st] {
                if !LLVMIsAInstruction(v).is_null() {
                    LLVMInstructionSetDebugLoc(v, loc);
                }
            }
            for w in &word {
                LLVMInstructionEraseFromParent(w.2);
            }
            gone += word.len() - 1;
        }
    }
    run.clear();
    gone
}

/// Nothing at `i` can stop execution, and it does not touch a frame's coverage array:
/// arithmetic, comparisons, casts, address computations, probe stores into global arrays,
/// and intrinsics that do nothing at run time.
unsafe fn is_quiet(i: LLVMValueRef) -> bool {
    match LLVMGetInstructionOpcode(i) {
        op if is_pure(op) => true,
        LLVMOpcode::LLVMStore => is_probe_store(i),
        LLVMOpcode::LLVMCall => does_nothing(&value_name(LLVMGetCalledValue(i))),
        _ => false,
    }
}

/// Arithmetic, comparisons, casts, address computations: no memory access, no fault.
fn is_pure(op: LLVMOpcode) -> bool {
    use LLVMOpcode::*;
    matches!(
        op,
        LLVMPHI
            | LLVMGetElementPtr
            | LLVMAdd
            | LLVMSub
            | LLVMMul
            | LLVMAnd
            | LLVMOr
            | LLVMXor
            | LLVMShl
            | LLVMLShr
            | LLVMAShr
            | LLVMICmp
            | LLVMSelect
            | LLVMTrunc
            | LLVMZExt
            | LLVMSExt
            | LLVMPtrToInt
            | LLVMIntToPtr
            | LLVMBitCast
            | LLVMFreeze
            | LLVMExtractValue
            | LLVMInsertValue
            | LLVMExtractElement
            | LLVMInsertElement
            | LLVMShuffleVector
    )
}

/// Intrinsics that do nothing at run time (`llvm.prefetch` never faults).
fn does_nothing(callee: &str) -> bool {
    ["llvm.dbg.", "llvm.assume", "llvm.prefetch"]
        .iter()
        .any(|p| callee.starts_with(p))
        || callee == "llvm.experimental.noalias.scope.decl"
        || callee == "llvm.pseudoprobe"
}

/// The local a whole-array zeroing writes: a volatile `llvm.memset` at offset 0 of an
/// `[N x i8]` alloca, N bytes long, as csi-cc zeroes a frame's coverage array.
unsafe fn zeroed_local(i: LLVMValueRef) -> Option<LLVMValueRef> {
    if LLVMIsACallInst(i).is_null()
        || !value_name(LLVMGetCalledValue(i)).starts_with("llvm.memset.")
        || LLVMGetNumArgOperands(i) < 4
    {
        return None;
    }
    let (len, volatile) = (LLVMGetOperand(i, 2), LLVMGetOperand(i, 3));
    if LLVMIsAConstantInt(len).is_null()
        || LLVMIsAConstantInt(volatile).is_null()
        || LLVMConstIntGetZExtValue(volatile) != 1
    {
        return None;
    }
    let Some((base, 0)) = constant_offset(LLVMGetOperand(i, 0)) else {
        return None;
    };
    if LLVMIsAAllocaInst(base).is_null() {
        return None;
    }
    let ty = LLVMGetAllocatedType(base);
    let whole = LLVMGetTypeKind(ty) == llvm_sys::LLVMTypeKind::LLVMArrayTypeKind
        && LLVMGetTypeKind(LLVMGetElementType(ty)) == llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
        && LLVMGetIntTypeWidth(LLVMGetElementType(ty)) == 8
        && LLVMGetArrayLength2(ty) == LLVMConstIntGetZExtValue(len);
    whole.then_some(base)
}

/// A probe's store into a frame's coverage array: `store volatile i8 1` at a constant offset
/// into a local of `marked`; that local.
unsafe fn probed_local(i: LLVMValueRef, marked: &HashSet<LLVMValueRef>) -> Option<LLVMValueRef> {
    if !is_store_of_one(i) {
        return None;
    }
    constant_offset(LLVMGetOperand(i, 1))
        .map(|(base, _)| base)
        .filter(|base| marked.contains(base))
}

/// Nothing can stop or divert execution at `i` (it is not a terminator): arithmetic,
/// comparisons, casts, address computations, probe stores into global arrays, intrinsics
/// that do nothing at run time, and accesses at constant offsets to a coverage array
/// `safe_local` says was written whole before the loop (the first touch of a stack page can
/// fault: a stack overflow), including its small zeroing and the empty asm that makes it
/// escape. Left out: every other memory access (the program's own locals too: a VLA's first
/// touch faults when the stack is exhausted), floating-point arithmetic (a program may unmask
/// its exceptions), division, `alloca` outside the entry block.
unsafe fn cannot_stop(i: LLVMValueRef, safe_local: &dyn Fn(LLVMValueRef) -> bool) -> bool {
    use LLVMOpcode::*;
    let safe = |p: LLVMValueRef| constant_offset(p).is_some_and(|(base, _)| safe_local(base));
    match LLVMGetInstructionOpcode(i) {
        op if is_pure(op) => true,
        LLVMLoad => {
            LLVMGetOrdering(i) == llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
                && safe(LLVMGetOperand(i, 0))
        }
        LLVMStore => {
            LLVMGetOrdering(i) == llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
                && (safe(LLVMGetOperand(i, 1)) || is_probe_store(i))
        }
        LLVMCall => {
            let callee = LLVMGetCalledValue(i);
            let on_safe = |k: u32| safe(LLVMGetOperand(i, k));
            // The empty asm that makes a frame's coverage array escape (`Ctx::local_parts`).
            if !LLVMIsAInlineAsm(callee).is_null() {
                return is_empty_asm(callee) && (0..LLVMGetNumArgOperands(i)).all(on_safe);
            }
            let name = value_name(callee);
            does_nothing(&name)
                || name.starts_with("llvm.lifetime.")
                // The zeroing of a coverage array (an inlined callee's, at each call), small
                // enough to be one or two stores on any target, never a call to `memset`.
                || (name.starts_with("llvm.memset.")
                    && on_safe(0)
                    && !LLVMIsAConstantInt(LLVMGetOperand(i, 2)).is_null()
                    && LLVMConstIntGetZExtValue(LLVMGetOperand(i, 2)) <= 16)
        }
        _ => false,
    }
}
