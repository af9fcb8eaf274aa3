//! Checked coverage stores (`--csi-probe-stores=checked`, the default with
//! `--csi-scheme=bb`): after optimization, every probe's store into a global coverage array
//! (`__CC_arr_*`, `__BBC_arr_*`, `__FC_arr_*`) becomes `if (byte == 0) byte = 1`, as
//! SanitizerCoverage's `inline-bool-flag` does.
//!
//! Why: a global byte, once set, is then never written again, and its cache line stays
//! shared by every core. With plain stores, threads running the same code write the same
//! lines over and over, and each write takes the line away from the other cores
//! (`bench/suite/threads.sh`). The bytes hold the same values at every point — only a 0 is
//! ever overwritten, and only with the 1 the plain store would have written — so nothing
//! changes for the reader.
//!
//! Why after optimization: a branch per probe in the IR the inliner weighs keeps small hot
//! functions out of line (Lua's `index2value` with `bb`: ×1.40 instructions instead of
//! ×1.24). So for code instrumented before optimization csi-cc runs the optimization
//! pipeline to bitcode, checks the stores there, and compiles that without passes; code
//! instrumented after optimization (or not optimized) is checked right after instrumentation.

use super::*;

/// The global coverage arrays' name prefixes.
const ARRAYS: [&str; 3] = ["__CC_arr_", "__BBC_arr_", "__FC_arr_"];

/// What [`post_optimization_file`] does to the probes' stores.
#[derive(Clone, Copy, Debug)]
pub struct PostOptimization {
    /// Hoisted out of loops, repeats dropped (`hoist::hoist_probe_stores`).
    pub hoist: bool,
    /// With `hoist`: loops whose iterations repeat a probe's store peeled first.
    pub peel: bool,
    /// Every probe store into a global coverage array checked.
    pub check: bool,
    /// A frame array's stores side by side merged (`hoist::merge_frame_stores`).
    pub merge: bool,
    /// Switchable functions that nothing can enter any more left as traps
    /// (`stub_dead_variants`).
    pub stub_dead: bool,
}

/// What [`post_optimization_file`] did.
#[derive(Clone, Copy, Debug, Default)]
pub struct PostOptimized {
    pub hoisted: super::hoist::Hoisted,
    /// Switchable functions whose body and replica became traps.
    pub stubbed: usize,
    /// Slots dropped from loop-exit copies' lists: no code left can set them
    /// (`coverage::forget_unset_copy_slots`).
    pub forgotten: usize,
}

/// Rewrites optimized bitcode `bc_in` into `bc_out` (may be the same file): the loop-exit
/// copies' slots that nothing can set any more forgotten, dead switchable functions stubbed,
/// then probe stores hoisted out of loops, checked, merged, as `treat` says.
pub fn post_optimization_file(
    bc_in: &str,
    bc_out: &str,
    treat: PostOptimization,
) -> Result<PostOptimized, String> {
    unsafe {
        let (ctx, module) = read_bitcode(bc_in)?;
        let forgotten = super::coverage::forget_unset_copy_slots(module);
        let stubbed = if treat.stub_dead {
            super::stub_dead_variants(module)
        } else {
            0
        };
        let mut hoisted = if treat.hoist {
            super::hoist::hoist_probe_stores(ctx, module, treat.peel)?
        } else {
            Default::default()
        };
        if treat.check {
            check_probe_stores(ctx, module);
        }
        if treat.merge {
            hoisted.merged = super::hoist::merge_frame_stores(ctx, module);
        }
        let written = llvm_sys::bit_writer::LLVMWriteBitcodeToFile(module, cstr(bc_out).as_ptr());
        LLVMDisposeModule(module);
        LLVMContextDispose(ctx);
        if written != 0 {
            return Err(format!("cannot write {bc_out}"));
        }
        Ok(PostOptimized {
            hoisted,
            stubbed,
            forgotten,
        })
    }
}

/// The pass over one module: each `store volatile i8 1` whose address is (a constant offset
/// into) a global coverage array goes into a block of its own, entered only when the byte
/// reads 0 (the branch marked unlikely: after its first run the probe falls through). Where
/// the store follows its local bit's store (a probe with both bytes) in a block on a cycle,
/// the test reads the local bit instead and skips both stores (see [`local_tests`]).
pub(super) unsafe fn check_probe_stores(ctx: LLVMContextRef, module: LLVMModuleRef) -> usize {
    let i8t = LLVMInt8TypeInContext(ctx);
    let builder = LLVMCreateBuilderInContext(ctx);
    let mut n = 0;
    for (_, bbs) in function_bodies(module) {
        let probes: Vec<LLVMValueRef> = bbs
            .iter()
            .flat_map(|&bb| instructions(bb))
            .filter(|&i| is_probe_store(i))
            .collect();
        let local = local_tests(&bbs, &probes);
        for &s in &probes {
            // `if (*test == 0) { moved… }`, the test before `moved[0]`.
            let (test, moved) = match local.get(&s) {
                Some(&l) => (LLVMGetOperand(l, 1), vec![l, s]),
                None => (LLVMGetOperand(s, 1), vec![s]),
            };
            LLVMPositionBuilderBefore(builder, moved[0]);
            let byte = LLVMBuildLoad2(builder, i8t, test, c"".as_ptr());
            LLVMSetVolatile(byte, 1);
            let clear = LLVMBuildICmp(
                builder,
                LLVMIntPredicate::LLVMIntEQ,
                byte,
                LLVMConstInt(i8t, 0, 0),
                c"".as_ptr(),
            );
            let then = csi_split_if_then(clear, moved[0], 1);
            LLVMPositionBuilderBefore(builder, then);
            for &m in &moved {
                LLVMInstructionRemoveFromParent(m);
                LLVMInsertIntoBuilder(builder, m);
            }
            n += 1;
        }
    }
    LLVMDisposeBuilder(builder);
    n
}

/// The global probe stores (of `probes`, in the function of blocks `bbs`) whose test may read
/// the frame's local bit: global store → the local store right before it. A probe with both
/// bytes stores `local[j] = 1; global[j] = 1` (csi-cc's `CoverageArrays::store`); once its
/// local bit is set in an activation, the global byte was set right after, so a repeat may
/// skip both. That needs, for the local byte `A[j]` (an alloca, at a constant offset):
/// - every store into `A[j]` in the function is such a pair with the same global byte — the
///   optimizer may duplicate a probe's block (both stores go along), and a local store
///   followed by another probe's global store by chance must not count;
/// - the pair's block is on a cycle (elsewhere a probe runs once per activation and the test
///   would always find its bit clear), and nothing on that cycle zeroes `A` (an inlined
///   callee's array is zeroed on every call: the test would find it clear again).
///
/// Reading `A[j]` is safe: in every activation its zeroing runs before any of its probes
/// (`zeroing_block` dominates them, and the optimizer keeps volatile accesses in order).
unsafe fn local_tests(
    bbs: &[LLVMBasicBlockRef],
    probes: &[LLVMValueRef],
) -> HashMap<LLVMValueRef, LLVMValueRef> {
    let index: HashMap<LLVMBasicBlockRef, usize> =
        bbs.iter().enumerate().map(|(k, &b)| (b, k)).collect();
    // Candidate pairs: a local `store volatile i8 1` right before the global one (only
    // address arithmetic between), with the same offset.
    let mut pairs: Vec<Pair> = Vec::new();
    for &global in probes {
        let Some((array, j)) = constant_offset(LLVMGetOperand(global, 1)) else {
            continue;
        };
        // The optimizer may schedule the program's own arithmetic and loads between the two
        // stores; a store, a call or a volatile load ends the search.
        let mut prev = LLVMGetPreviousInstruction(global);
        while !prev.is_null() && !touches_memory(prev) {
            prev = LLVMGetPreviousInstruction(prev);
        }
        if prev.is_null() || !is_store_of_one(prev) {
            continue;
        }
        match constant_offset(LLVMGetOperand(prev, 1)) {
            Some((frame, lj)) if !LLVMIsAAllocaInst(frame).is_null() && lj == j => {
                pairs.push(Pair {
                    global,
                    local: prev,
                    frame,
                    array,
                    j,
                })
            }
            _ => {}
        }
    }
    if pairs.is_empty() {
        return HashMap::new();
    }
    // Every store into the function's local arrays, and where they are zeroed.
    let allocas: HashSet<LLVMValueRef> = pairs.iter().map(|p| p.frame).collect();
    let mut stores_into: HashMap<(LLVMValueRef, i64), Vec<LLVMValueRef>> = HashMap::new();
    let mut zeroed_in: HashMap<LLVMValueRef, Vec<usize>> = HashMap::new();
    for (k, &bb) in bbs.iter().enumerate() {
        for i in instructions(bb) {
            for base in touched_locals(i) {
                if allocas.contains(&base) {
                    zeroed_in.entry(base).or_default().push(k);
                }
            }
            if LLVMIsAStoreInst(i).is_null() {
                continue;
            }
            match constant_offset(LLVMGetOperand(i, 1)) {
                Some((base, j)) if allocas.contains(&base) && is_store_of_one(i) => {
                    stores_into.entry((base, j)).or_default().push(i);
                }
                Some(_) => {}
                // A store into an array at an offset not known: it could be any byte.
                // (A store of 1 through a `phi` of constant addresses is a pair the optimizer
                // sank from the blocks before — its global store, sunk with it, follows it
                // through the same `phi` way: it keeps the pairs' invariant.)
                None => {
                    if let Some(base) = underlying_alloca(LLVMGetOperand(i, 1)) {
                        if allocas.contains(&base) {
                            stores_into.entry((base, -1)).or_default().push(i);
                        }
                    }
                }
            }
        }
    }
    let succs = successors(bbs, &index);
    let scc = cycle_of(&succs);
    // The global byte each local store is paired with.
    let pair_of: HashMap<LLVMValueRef, (LLVMValueRef, i64)> =
        pairs.iter().map(|p| (p.local, (p.array, p.j))).collect();
    let mut out = HashMap::new();
    for p in &pairs {
        let k = index[&LLVMGetInstructionParent(p.global)];
        let Some(cycle) = scc[k] else { continue };
        if stores_into.contains_key(&(p.frame, -1))
            || zeroed_in
                .get(&p.frame)
                .is_some_and(|ks| ks.iter().any(|&z| scc[z] == Some(cycle)))
        {
            continue;
        }
        let all_paired = stores_into[&(p.frame, p.j)]
            .iter()
            .all(|s| pair_of.get(s) == Some(&(p.array, p.j)));
        if all_paired {
            out.insert(p.global, p.local);
        }
    }
    out
}

/// A probe's two stores: `local` into byte `j` of the frame's array (an alloca, `frame`),
/// then `global` into byte `j` of the global `array`.
struct Pair {
    global: LLVMValueRef,
    local: LLVMValueRef,
    frame: LLVMValueRef,
    array: LLVMValueRef,
    j: i64,
}

/// Each block's successors, as indices into `bbs` (`index` maps a block to its own).
pub(super) unsafe fn successors(
    bbs: &[LLVMBasicBlockRef],
    index: &HashMap<LLVMBasicBlockRef, usize>,
) -> Vec<Vec<usize>> {
    bbs.iter()
        .map(|&bb| {
            let t = LLVMGetBasicBlockTerminator(bb);
            if t.is_null() {
                return Vec::new();
            }
            (0..LLVMGetNumSuccessors(t))
                .filter_map(|s| index.get(&LLVMGetSuccessor(t, s)).copied())
                .collect()
        })
        .collect()
}

/// Per block, the cycle it is on (an id of its strongly connected component), if any.
pub(super) fn cycle_of(succs: &[Vec<usize>]) -> Vec<Option<usize>> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut g = DiGraph::<(), ()>::new();
    let nodes: Vec<NodeIndex> = (0..succs.len()).map(|_| g.add_node(())).collect();
    for (a, ss) in succs.iter().enumerate() {
        for &b in ss {
            g.add_edge(nodes[a], nodes[b], ());
        }
    }
    let mut out = vec![None; succs.len()];
    for (id, comp) in petgraph::algo::tarjan_scc(&g).into_iter().enumerate() {
        let cyclic = comp.len() > 1 || succs[comp[0].index()].contains(&comp[0].index());
        if cyclic {
            for n in comp {
                out[n.index()] = Some(id);
            }
        }
    }
    out
}

/// A store, a call (or invoke), a volatile load, or an atomic access or fence: anything that
/// may write memory or must stay in order with the probes' volatile stores.
unsafe fn touches_memory(i: LLVMValueRef) -> bool {
    use LLVMOpcode::*;
    match LLVMGetInstructionOpcode(i) {
        LLVMLoad => {
            LLVMGetVolatile(i) != 0
                || LLVMGetOrdering(i) != llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
        }
        LLVMStore | LLVMCall | LLVMInvoke | LLVMCallBr | LLVMFence | LLVMAtomicRMW
        | LLVMAtomicCmpXchg | LLVMVAArg => true,
        _ => false,
    }
}

/// `store volatile i8 1, ptr …`.
pub(super) unsafe fn is_store_of_one(i: LLVMValueRef) -> bool {
    if LLVMIsAStoreInst(i).is_null() || LLVMGetVolatile(i) == 0 {
        return false;
    }
    let v = LLVMGetOperand(i, 0);
    !LLVMIsAConstantInt(v).is_null()
        && LLVMGetIntTypeWidth(LLVMTypeOf(v)) == 8
        && LLVMConstIntGetZExtValue(v) == 1
}

/// A probe's global store: `store volatile i8 1` into a coverage array.
pub(super) unsafe fn is_probe_store(i: LLVMValueRef) -> bool {
    is_store_of_one(i) && is_probe_store_address(LLVMGetOperand(i, 1))
}

/// An address in a global coverage array (at a constant offset).
pub(super) unsafe fn is_probe_store_address(p: LLVMValueRef) -> bool {
    match constant_offset(p) {
        Some((base, _)) if !LLVMIsAGlobalVariable(base).is_null() => {
            let name = value_name(base);
            ARRAYS.iter().any(|a| name.starts_with(a))
        }
        _ => false,
    }
}

/// The object a pointer points into (a global or an alloca) and the byte offset, when the
/// address is the object itself or constant byte-array GEPs into it (`i8` or `[N x i8]`
/// elements, as csi-cc's arrays are; expressions or instructions).
pub(super) unsafe fn constant_offset(mut p: LLVMValueRef) -> Option<(LLVMValueRef, i64)> {
    let mut offset = 0i64;
    loop {
        if !LLVMIsAGlobalVariable(p).is_null() || !LLVMIsAAllocaInst(p).is_null() {
            return Some((p, offset));
        }
        let base = gep_pointer(p)?;
        let ty = LLVMGetGEPSourceElementType(p);
        let width = match LLVMGetTypeKind(ty) {
            llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind if LLVMGetIntTypeWidth(ty) == 8 => 1,
            llvm_sys::LLVMTypeKind::LLVMArrayTypeKind => {
                let e = LLVMGetElementType(ty);
                if LLVMGetTypeKind(e) != llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
                    || LLVMGetIntTypeWidth(e) != 8
                {
                    return None;
                }
                LLVMGetArrayLength2(ty) as i64
            }
            _ => return None,
        };
        let n = LLVMGetNumOperands(p);
        let index = |k: i32| -> Option<i64> {
            let v = LLVMGetOperand(p, k as u32);
            (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetSExtValue(v))
        };
        match n {
            2 => offset += index(1)? * width,
            3 if LLVMGetTypeKind(ty) == llvm_sys::LLVMTypeKind::LLVMArrayTypeKind => {
                offset += index(1)? * width + index(2)?
            }
            _ => return None,
        }
        p = base;
    }
}

/// The locals (allocas) `i` may clear bytes of: a store into one of anything but csi-cc's
/// `store volatile i8 1`, or a call handed one (the zeroing `llvm.memset`, lifetime markers,
/// anything) other than `__csi_rt_copy`, the copy at a loop's exits, which only reads it.
pub(super) unsafe fn touched_locals(i: LLVMValueRef) -> Vec<LLVMValueRef> {
    if !LLVMIsAStoreInst(i).is_null() {
        if is_store_of_one(i) {
            return Vec::new();
        }
        return underlying_allocas(LLVMGetOperand(i, 1));
    }
    if (!LLVMIsACallInst(i).is_null() || !LLVMIsAInvokeInst(i).is_null())
        && value_name(LLVMGetCalledValue(i)) != "__csi_rt_copy"
    {
        return (0..LLVMGetNumArgOperands(i))
            .flat_map(|a| underlying_allocas(LLVMGetOperand(i, a)))
            .collect();
    }
    Vec::new()
}

/// The alloca a pointer is based on through GEPs (constant or not), if any.
unsafe fn underlying_alloca(mut p: LLVMValueRef) -> Option<LLVMValueRef> {
    while LLVMIsAAllocaInst(p).is_null() {
        p = gep_pointer(p)?;
    }
    Some(p)
}

/// The allocas a pointer may be based on: through GEPs (constant or not), and every way of a
/// `phi` or `select` — the optimizer merges two inlined callees' zeroings of their arrays
/// into one `memset` of a `phi` of them (SimplifyCFG's sinking), which clears both.
unsafe fn underlying_allocas(p: LLVMValueRef) -> Vec<LLVMValueRef> {
    let (mut out, mut seen, mut work) = (Vec::new(), HashSet::new(), vec![p]);
    while let Some(v) = work.pop() {
        if !seen.insert(v) {
            continue;
        }
        if !LLVMIsAAllocaInst(v).is_null() {
            out.push(v);
        } else if let Some(base) = gep_pointer(v) {
            work.push(base);
        } else if !LLVMIsAPHINode(v).is_null() {
            work.extend((0..LLVMCountIncoming(v)).map(|k| LLVMGetIncomingValue(v, k)));
        } else if !LLVMIsASelectInst(v).is_null() {
            work.extend([LLVMGetOperand(v, 1), LLVMGetOperand(v, 2)]);
        }
    }
    out
}

/// The pointer a GEP (an instruction or a constant expression) offsets; `None` for anything
/// else.
pub(super) unsafe fn gep_pointer(p: LLVMValueRef) -> Option<LLVMValueRef> {
    let gep = !LLVMIsAGetElementPtrInst(p).is_null()
        || (!LLVMIsAConstantExpr(p).is_null()
            && LLVMGetConstOpcode(p) == LLVMOpcode::LLVMGetElementPtr);
    gep.then(|| LLVMGetOperand(p, 0))
}
