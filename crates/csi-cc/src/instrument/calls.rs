//! Call-site coverage: which call sites get a probe (the others' coverage is implied), which
//! probes a frame's position decides, and where a function's local coverage array is zeroed.

use super::*;
pub(super) use csi_model::dominance::{BlockGraph, Zeroing};

/// Coverage probe placement for the call sites of one function, given each site's basic
/// block (sites in instruction order). `None`: the site is probed; `Some((a, b))`: it is not,
/// and its coverage is implied by the probed sites `a` (before it) and `b` (after it) of the
/// same block — the dissertation's dominator-based placement (ch. 4) restricted to the
/// implications that stay exact when any callee may not return: in a block with calls
/// c1..cn, cn's probe implies that c2..c(n-1) ran (they dominate it in straight-line code),
/// and c1's clear probe that they did not (c1 dominates them). Between the two, a stopped
/// frame's position decides for its local array (see `csi_model::sections::CfgImplied`).
///
/// A later site is never inferred from an earlier one here: a callee may crash, `exit` or
/// `longjmp`, so no site post-dominates another in the executions that end in a failure
/// report. Across blocks, `CcLayout::new` adds Fig. 4.4's placement for the blocks whose
/// calls all come back. `keep_all` (requested, or the function calls a `returns_twice`
/// function such as `setjmp`, which can resume a block mid-way) probes every site.
pub(super) fn cc_probe_placement(blocks: &[u32], keep_all: bool) -> Vec<Option<(usize, usize)>> {
    let mut out = vec![None; blocks.len()];
    if keep_all {
        return out;
    }
    let mut start = 0;
    while start < blocks.len() {
        let mut end = start;
        while end + 1 < blocks.len() && blocks[end + 1] == blocks[start] {
            end += 1;
        }
        for slot in out.iter_mut().take(end).skip(start + 1) {
            *slot = Some((start, end));
        }
        start = end + 1;
    }
    out
}

/// The block graph facts the coverage placement needs: the graph's (dominators, cycles:
/// `csi_model::dominance`, shared with the reader) and, from the instructions, the blocks
/// where no call or crash can stop a frame.
pub(super) struct BlockFacts {
    pub(super) graph: BlockGraph,
    /// Blocks where nothing can stop a frame but an asynchronous signal (no call, nothing
    /// that can fault): a frame on a call or a crash is never there.
    quiet: Vec<bool>,
    /// Blocks that must begin with an exception-handling pad (nothing may be inserted first).
    eh_pad: Vec<bool>,
    /// Blocks ending in a `br` or `switch` (their edges can be split).
    plain_branch: Vec<bool>,
}

/// Nothing in `i` can stop a frame (no call, nothing that can fault), or it only touches the
/// frame's own allocas.
pub(super) unsafe fn quiet_instruction(i: LLVMValueRef) -> bool {
    use LLVMOpcode::*;
    let on_alloca = |k: u32| !LLVMIsAAllocaInst(LLVMGetOperand(i, k)).is_null();
    match LLVMGetInstructionOpcode(i) {
        LLVMPHI | LLVMBr | LLVMSwitch | LLVMRet | LLVMICmp | LLVMFCmp | LLVMSelect
        | LLVMGetElementPtr | LLVMExtractValue | LLVMInsertValue | LLVMExtractElement
        | LLVMInsertElement | LLVMShuffleVector | LLVMFreeze | LLVMAdd | LLVMSub | LLVMMul
        | LLVMShl | LLVMLShr | LLVMAShr | LLVMAnd | LLVMOr | LLVMXor | LLVMFAdd | LLVMFSub
        | LLVMFMul | LLVMFDiv | LLVMFRem | LLVMFNeg => true,
        LLVMLoad => on_alloca(0),
        LLVMStore => on_alloca(1),
        LLVMCall => intrinsic_without_code(i),
        _ => !LLVMIsACastInst(i).is_null(),
    }
}

/// Blocks that can end an activation other than by a crash inside them (which leaves the
/// frame live): no successor (a return, `unreachable`, `resume`), or a call that may not come
/// back (`exit`, an exception, `longjmp`, `pthread_exit`; `comes_back` with the unit's
/// `no_longjmp_through` set says which do). For the coverage placements
/// (`BlockGraph::coverage_probes`, `coverage_probes_of`).
pub(super) unsafe fn ends_activation(
    bbs: &[LLVMBasicBlockRef],
    succs: &[Vec<u32>],
    no_longjmp_through: &HashSet<LLVMValueRef>,
) -> Vec<bool> {
    bbs.iter()
        .zip(succs)
        .map(|(&b, s)| {
            s.is_empty()
                || instructions(b)
                    .into_iter()
                    .any(|i| is_call(i) && !comes_back(no_longjmp_through, i))
        })
        .collect()
}

impl BlockFacts {
    pub(super) unsafe fn new(succs: &[Vec<u32>], bbs: &[LLVMBasicBlockRef]) -> Self {
        let quiet = bbs
            .iter()
            .map(|&b| instructions(b).into_iter().all(|i| quiet_instruction(i)))
            .collect();
        let eh_pad = bbs
            .iter()
            .map(|&b| {
                let i = first_non_phi(b);
                !i.is_null()
                    && matches!(
                        LLVMGetInstructionOpcode(i),
                        LLVMOpcode::LLVMLandingPad
                            | LLVMOpcode::LLVMCatchPad
                            | LLVMOpcode::LLVMCleanupPad
                            | LLVMOpcode::LLVMCatchSwitch
                    )
            })
            .collect();
        let plain_branch = bbs
            .iter()
            .map(|&b| {
                let t = LLVMGetBasicBlockTerminator(b);
                !t.is_null()
                    && matches!(
                        LLVMGetInstructionOpcode(t),
                        LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch
                    )
            })
            .collect();
        BlockFacts {
            graph: BlockGraph::new(succs.to_vec()),
            quiet,
            eh_pad,
            plain_branch,
        }
    }

    /// Blocks whose call sites' local coverage a live frame's position decides exactly (see
    /// `BlockGraph::position_decided`).
    pub(super) fn position_decided(&self) -> Vec<bool> {
        self.graph.position_decided(&self.quiet)
    }

    /// Where to zero a local coverage array whose probes sit in `probe_blocks` (see
    /// `BlockGraph::zeroing_block`).
    pub(super) fn zeroing_block(&self, probe_blocks: &[usize]) -> Zeroing {
        self.graph
            .zeroing_block(probe_blocks, &self.quiet, &self.eh_pad, &self.plain_branch)
    }
}

/// The defined functions through which no `longjmp`, exception or thread cancellation can
/// pass: each activation ends by returning or stays on the stack for good (a crash, `exit`,
/// `abort`, a loop that never ends); calls of them come back (`comes_back`), so a loop whose
/// calls all do is left only through its exits (`GlobalStores::Auto`). The greatest fixpoint
/// of: `nounwind`, a definition that no other unit's can replace (not weak or common), and
/// every call a direct call of an LLVM intrinsic (but `llvm.eh.sjlj.longjmp`), of such a
/// function, or of a C library function that calls no user code, is no cancellation point
/// and comes back (`csi_model::libc::comes_back_or_ends`), or of a sorting or searching one
/// whose callback argument is such a function (`qsort(.., by_key)`). An indirect call, inline
/// assembly, or any other declaration (it may `longjmp`, call back, or be `pthread_exit`)
/// rules a function out. Asynchronous signals whose handlers `longjmp` are outside the
/// analysis's assumptions, as for every placement that leaves a block without its own probe.
pub(super) unsafe fn no_longjmp_through(funcs: &[LLVMValueRef]) -> HashSet<LLVMValueRef> {
    use LLVMLinkage::*;
    let mut set: HashSet<LLVMValueRef> = funcs
        .iter()
        .copied()
        .filter(|&f| {
            is_nounwind(f)
                && matches!(
                    LLVMGetLinkage(f),
                    LLVMExternalLinkage
                        | LLVMInternalLinkage
                        | LLVMPrivateLinkage
                        | LLVMLinkOnceODRLinkage
                        | LLVMWeakODRLinkage
                )
        })
        .collect();
    loop {
        let out: Vec<LLVMValueRef> = set
            .iter()
            .copied()
            .filter(|&f| {
                blocks(f).into_iter().any(|b| {
                    instructions(b)
                        .into_iter()
                        .any(|i| is_call(i) && !comes_back(&set, i))
                })
            })
            .collect();
        if out.is_empty() {
            return set;
        }
        for f in out {
            set.remove(&f);
        }
    }
}

/// The call `i` comes back or stays on the stack (see `no_longjmp_through`): a direct call of
/// an LLVM intrinsic (but `llvm.eh.sjlj.longjmp`), of a function in `set`, of a library
/// function `csi_model::libc::comes_back_or_ends` lists, or of a sorting or searching one
/// (`csi_model::libc::callback_argument`) given a function that comes back.
pub(super) unsafe fn comes_back(set: &HashSet<LLVMValueRef>, i: LLVMValueRef) -> bool {
    let callee = LLVMGetCalledValue(i);
    if LLVMIsAFunction(callee).is_null() {
        return false;
    }
    if LLVMGetIntrinsicID(callee) != 0 {
        return value_name(callee) != "llvm.eh.sjlj.longjmp";
    }
    if is_library(callee) {
        let name = value_name(callee);
        if let Some(k) = csi_model::libc::callback_argument(&name) {
            // `qsort(.., by_key)`: the library runs only `by_key`, before it returns.
            return (k as u32) < LLVMGetNumArgOperands(i)
                && function_comes_back(set, LLVMGetOperand(i, k as u32));
        }
        return csi_model::libc::comes_back_or_ends(&name);
    }
    set.contains(&callee)
}

/// A call of `f` comes back: `f` is a function in `set`, or a library function
/// `csi_model::libc::comes_back_or_ends` lists (a comparator may be `strcmp` itself).
unsafe fn function_comes_back(set: &HashSet<LLVMValueRef>, f: LLVMValueRef) -> bool {
    if LLVMIsAFunction(f).is_null() {
        return false;
    }
    if is_library(f) {
        return LLVMGetIntrinsicID(f) == 0 && csi_model::libc::comes_back_or_ends(&value_name(f));
    }
    set.contains(&f)
}

/// `f` is the library's: a declaration, or a body the C library's headers give for inlining
/// (`available_externally`, e.g. glibc's `bsearch` at `-O1` and up), which does what the
/// library's does.
unsafe fn is_library(f: LLVMValueRef) -> bool {
    LLVMIsDeclaration(f) != 0 || LLVMGetLinkage(f) == LLVMLinkage::LLVMAvailableExternallyLinkage
}

/// The functions whose entry their callers' coverage decides (`CfgFunction::entry_from_calls`),
/// with their number of calls: internal linkage, and every use a direct call, not passing the
/// function itself, from a function with call-site coverage (the site's bit says the call was
/// made) or block coverage (`covered` gives each function's mechanisms) — then made where
/// every call before it in its block comes back, so an activation that entered the block
/// either made the call or stands in the block; never from a COMDAT function (the linker may
/// keep another unit's copy, and its record). `wanted`: the function itself can use it.
pub(super) unsafe fn entries_known_from_calls(
    funcs: &[LLVMValueRef],
    covered: &dyn Fn(LLVMValueRef) -> Mechanisms,
    wanted: &dyn Fn(LLVMValueRef) -> bool,
    set: &HashSet<LLVMValueRef>,
) -> HashMap<LLVMValueRef, u32> {
    use LLVMLinkage::*;
    let defined: HashSet<LLVMValueRef> = funcs.iter().copied().collect();
    let mut out = HashMap::new();
    for &g in funcs {
        if !matches!(LLVMGetLinkage(g), LLVMInternalLinkage | LLVMPrivateLinkage) || !wanted(g) {
            continue;
        }
        let mut calls = 0u32;
        let mut all_direct = true;
        let mut u = LLVMGetFirstUse(g);
        while !u.is_null() && all_direct {
            let i = LLVMGetUser(u);
            all_direct = !LLVMIsAInstruction(i).is_null()
                && is_call(i)
                && LLVMGetCalledValue(i) == g
                && (0..LLVMGetNumArgOperands(i)).all(|k| LLVMGetOperand(i, k) != g)
                && {
                    let caller = LLVMGetBasicBlockParent(LLVMGetInstructionParent(i));
                    let mech = covered(caller);
                    defined.contains(&caller)
                        && comdat_of(caller).is_none()
                        && (mech.cc || (mech.bbc && calls_before_come_back(set, i)))
                };
            calls += 1;
            u = LLVMGetNextUse(u);
        }
        if all_direct {
            out.insert(g, calls);
        }
    }
    out
}

/// A function of one block that returns (or ends in `unreachable`): with its entry known
/// from its calls, its block coverage needs no probe (`CfgFunction::entry_from_calls`).
pub(super) unsafe fn one_block(bbs: &[LLVMBasicBlockRef]) -> bool {
    bbs.len() == 1 && LLVMGetNumSuccessors(LLVMGetBasicBlockTerminator(bbs[0])) == 0
}

/// Every call of the entry block but its last comes back: with the function's entry known
/// from its calls, an activation that entered the block and no longer stands in it made
/// every call of it (the entry block's call sites then need no probe).
pub(super) unsafe fn entry_calls_come_back(
    bbs: &[LLVMBasicBlockRef],
    set: &HashSet<LLVMValueRef>,
) -> bool {
    let insts = bbs.first().map(|&b| instructions(b)).unwrap_or_default();
    let Some(last) = insts.iter().rposition(|&i| call_site(i).is_some()) else {
        return false;
    };
    insts[..last]
        .iter()
        .all(|&i| !is_call(i) || comes_back(set, i))
}

/// Every call before `i` in its block comes back (`comes_back`).
unsafe fn calls_before_come_back(set: &HashSet<LLVMValueRef>, i: LLVMValueRef) -> bool {
    let mut j = LLVMGetFirstInstruction(LLVMGetInstructionParent(i));
    while !j.is_null() && j != i {
        if is_call(j) && !comes_back(set, j) {
            return false;
        }
        j = LLVMGetNextInstruction(j);
    }
    true
}

/// The function calls (or invokes) something that may return twice (`setjmp`, `vfork`, ...).
pub(super) unsafe fn has_returns_twice_call(bbs: &[LLVMBasicBlockRef]) -> bool {
    let name = c"returns_twice";
    let kind = LLVMGetEnumAttributeKindForName(name.as_ptr(), name.to_bytes().len());
    let fn_index = llvm_sys::LLVMAttributeFunctionIndex;
    const NAMES: &[&str] = &[
        "setjmp",
        "_setjmp",
        "__setjmp",
        "sigsetjmp",
        "__sigsetjmp",
        "savectx",
        "vfork",
        "getcontext",
    ];
    bbs.iter().any(|&bb| {
        instructions(bb).into_iter().any(|i| {
            if LLVMIsACallInst(i).is_null() && LLVMIsAInvokeInst(i).is_null() {
                return false;
            }
            if !LLVMGetCallSiteEnumAttribute(i, fn_index, kind).is_null() {
                return true;
            }
            let callee = LLVMGetCalledValue(i);
            !LLVMIsAFunction(callee).is_null()
                && (!LLVMGetEnumAttributeAtIndex(callee, fn_index, kind).is_null()
                    || NAMES.contains(&value_name(callee).as_str()))
        })
    })
}

/// The instructions before which `zeroing` puts its stores: after the entry block's allocas,
/// at a block's first insertion point, or on each entering edge of a loop head from outside
/// — before the source's terminator when it has one successor, else in a block splitting the
/// edge (the one path tracing split it with, if it did).
pub(super) unsafe fn zeroing_points(
    c: &Ctx,
    bbs: &[LLVMBasicBlockRef],
    facts: &BlockFacts,
    zeroing: Zeroing,
) -> Result<Vec<LLVMValueRef>, &'static str> {
    let h = match zeroing {
        Zeroing::AtStart(0) => return Ok(vec![after_allocas(bbs[0])]),
        Zeroing::AtStart(b) => return Ok(vec![c.first_insertion(bbs[b])]),
        Zeroing::OnEntryEdges(h) => h,
    };
    let known: BTreeSet<LLVMBasicBlockRef> = bbs.iter().copied().collect();
    let mut out = Vec::new();
    let g = &facts.graph;
    for &p in g.preds(h).iter().filter(|&&p| !g.dominates(h, p)) {
        let term = LLVMGetBasicBlockTerminator(bbs[p]);
        if LLVMGetNumSuccessors(term) == 1 {
            out.push(term);
            continue;
        }
        let succ = |k: u32| LLVMGetSuccessor(term, k);
        let n = LLVMGetNumSuccessors(term);
        if let Some(k) = (0..n).find(|&k| succ(k) == bbs[h]) {
            let nbb = csi_split_critical_edge(term, k);
            if nbb.is_null() {
                return Err("a loop entry edge could not be split");
            }
            out.push(LLVMGetBasicBlockTerminator(nbb));
        } else {
            // Path tracing split this edge already: the new block's only successor is `h`.
            let split = (0..n)
                .map(succ)
                .find(|&s| {
                    let t = LLVMGetBasicBlockTerminator(s);
                    !known.contains(&s)
                        && LLVMGetNumSuccessors(t) == 1
                        && LLVMGetSuccessor(t, 0) == bbs[h]
                })
                .ok_or("a loop entry edge is missing")?;
            out.push(LLVMGetBasicBlockTerminator(split));
        }
    }
    Ok(out)
}

/// Where a function's call-site coverage goes: which sites are probed and into which slot of
/// the coverage arrays, how many slots the local array has, and where it is zeroed.
pub(super) struct CcLayout {
    /// The record's call-site nodes, in order (one per call site).
    call_nodes: Vec<u32>,
    /// Per call site: probed (`None`) or implied by two probed sites (see `cc_probe_placement`).
    placement: Vec<Option<(usize, usize)>>,
    /// Per call site: implied by the probe of its block's last site, `k` (`implied_by_last`).
    by_last: Vec<Option<usize>>,
    /// Blocks whose call sites have no probe at all: the dominated blocks' probes cover them
    /// (the record's `cc_unprobed`).
    unprobed_blocks: Vec<u32>,
    /// Per call site: its probe's slot.
    pub(super) slot: Vec<Option<u64>>,
    /// Slots in the global array.
    pub(super) n_probes: u64,
    /// Slots in the local array (the first ones).
    pub(super) n_local: u64,
    /// The local array is replaced by the frame's path (`cc_local_by_path`).
    local_by_path: bool,
    /// Every site probed (see `cc_probe_placement`).
    keep_all: bool,
    pub(super) zeroing: Zeroing,
    /// The entry block's sites have no probe: the callers' coverage says whether it ran
    /// (`CfgFunction::entry_from_calls`).
    pub(super) from_calls: bool,
}

/// The call-site placement across blocks (`CcLayout::new`): the blocks that can end an
/// activation (`ends_activation`), and whether the callers' coverage says if the entry block
/// ran (`CfgFunction::entry_from_calls`).
pub(super) struct AcrossBlocks<'a> {
    pub(super) ends: &'a [bool],
    /// Per block: every call in it comes back (`comes_back`).
    pub(super) calls_come_back: &'a [bool],
    pub(super) entry_from_calls: bool,
}

impl CcLayout {
    /// Places the probes of the `n_calls` call sites of `cfg` (see `cc_probe_placement`) and
    /// numbers their slots.
    pub(super) unsafe fn new(
        cfg: &CfgFunction,
        n_calls: usize,
        bbs: &[LLVMBasicBlockRef],
        facts: &BlockFacts,
        numbering: Option<&Numbering>,
        cc_all_probes: bool,
        across: Option<AcrossBlocks>,
    ) -> CcLayout {
        let call_nodes: Vec<u32> = cfg
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::CallSite)
            .map(|(i, _)| i as u32)
            .collect();
        // Probe placement: which call sites store coverage, and each probe's array slot.
        let call_blocks: Vec<u32> = call_nodes
            .iter()
            .map(|&n| cfg.nodes[n as usize].block.unwrap_or(u32::MAX))
            .collect();
        let keep_all = cc_all_probes || has_returns_twice_call(bbs);
        let placement = cc_probe_placement(&call_blocks, keep_all);
        // Across blocks, the dissertation's dominator-based placement with only the blocks
        // that have a call desired and probe-able (ch. 4, Fig. 4.4, I = D): a block whose
        // calls all come back (`ends`) needs no probe when every way out of its dominator
        // subtree passes a probed block of the subtree, whose bit then says the block ran
        // in full (`BlockGraph::coverage_probes_of`; the reader: `derive_unprobed`). `None`:
        // every block keeps its probes (v1.4.0's text metadata, whose readers read every
        // slot).
        let mut from_calls = false;
        let calls_come_back = across
            .as_ref()
            .filter(|_| !keep_all)
            .map(|a| a.calls_come_back);
        let unprobed: Vec<bool> = match across.filter(|_| !keep_all) {
            Some(AcrossBlocks {
                ends,
                entry_from_calls,
                ..
            }) => {
                let mut desired = vec![false; bbs.len()];
                for &b in call_blocks.iter().filter(|&&b| (b as usize) < bbs.len()) {
                    desired[b as usize] = true;
                }
                let mut probed = facts.graph.coverage_probes_of(&desired, ends);
                // The entry block's sites when the placement keeps their probes but the
                // callers' coverage says whether the block ran (`CfgFunction::entry_from_calls`;
                // where the placement drops them, the blocks below say more: "did not run"
                // too, see `derive_unprobed`).
                if entry_from_calls && probed.first() == Some(&true) {
                    probed[0] = false;
                    from_calls = true;
                }
                (0..bbs.len()).map(|b| desired[b] && !probed[b]).collect()
            }
            None => vec![false; bbs.len()],
        };
        // The last of two or more sites of an entry block whose bit comes from the callers
        // keeps its probe: set, it says an activation ran the block whole, which the entry's
        // bit cannot when a frame stands in the block (the reader: `unprobed_call_sites`).
        let entry_sites = call_blocks.iter().filter(|&&b| b == 0).count();
        let last_entry_site = call_blocks.iter().rposition(|&b| b == 0);
        let last_of_entry = |k: usize| from_calls && entry_sites > 1 && last_entry_site == Some(k);
        // Within a probed block whose calls all come back, the last site's probe alone says
        // whether the block's sites ran: straight-line code from an earlier site reaches it
        // unless the frame stops in between, where the reader sees it
        // (`CfgNode::implied_by_last`). Elsewhere a callee may `exit`, `longjmp` or unwind
        // between two sites, and the first keeps its probe (`cc_probe_placement`).
        let by_last: Vec<Option<usize>> = (0..n_calls)
            .map(|k| {
                let b = call_blocks[k] as usize;
                let come_back = calls_come_back?.get(b).copied().unwrap_or(false);
                let last = call_blocks.iter().rposition(|&x| x as usize == b)?;
                (come_back && last != k && !unprobed.get(b).copied().unwrap_or(true))
                    .then_some(last)
            })
            .collect();
        let probed = |k: usize| {
            placement[k].is_none()
                && by_last[k].is_none()
                && (last_of_entry(k)
                    || !unprobed
                        .get(call_blocks[k] as usize)
                        .copied()
                        .unwrap_or(false))
        };
        // Probes whose local bit a live frame's position decides store only into the global
        // array (`cc_by_position`): a site in block X ran in the frame's activation iff the
        // frame is stopped after it in X, or in a block that X dominates; it did not if the
        // frame is before it in X or in a block X cannot reach. When X is on no cycle and
        // dominates every block it reaches (except quiet blocks — no call, nothing that can
        // fault — where only a signal stops a frame and the reader says "unknown"), one of
        // the two holds wherever a call or a crash stops a frame — the entry block, branches
        // that end in their own `return`, code after the last merge are the common cases. Those probes get the last slots, beyond the local array's length
        // (`cc_local_len`), so a reader that does not know this sees no local bit for them
        // (unknown, sound). Not with `setjmp`-like calls (a block can be resumed mid-way) or
        // `--csi-cc-probes=all`.
        let by_position = if keep_all {
            vec![false; bbs.len()]
        } else {
            facts.position_decided()
        };
        let global_only = |k: usize| by_position[call_blocks[k] as usize];
        let mut slot: Vec<Option<u64>> = vec![None; n_calls];
        let mut n_probes = 0u64;
        for pass in [false, true] {
            for (k, s) in slot.iter_mut().enumerate() {
                if probed(k) && global_only(k) == pass {
                    *s = Some(n_probes);
                    n_probes += 1;
                }
            }
        }
        // A path-traced function without back edges needs no local array at all: a live
        // frame's running sum decodes to its whole path from the entry (Theorem 2.1), which
        // says which of its call sites ran (`cc_local_by_path`).
        let local_by_path = !keep_all && numbering.is_some_and(|nb| nb.back_edges.is_empty());
        let n_local = if local_by_path {
            0
        } else {
            (0..n_calls)
                .filter(|&k| probed(k) && !global_only(k))
                .count() as u64
        };
        // Where the local array is zeroed (see `BlockFacts::zeroing_block`); at entry when
        // every probe is kept (a `setjmp` resumption can re-enter a block mid-way).
        let zeroing = if keep_all || n_local == 0 {
            Zeroing::AtStart(0)
        } else {
            let local_blocks: Vec<usize> = (0..n_calls)
                .filter(|&k| probed(k) && !global_only(k))
                .map(|k| call_blocks[k] as usize)
                .collect();
            facts.zeroing_block(&local_blocks)
        };
        let unprobed_blocks = (0..bbs.len() as u32)
            .filter(|&b| unprobed[b as usize])
            .collect();
        CcLayout {
            call_nodes,
            placement,
            by_last,
            unprobed_blocks,
            slot,
            n_probes,
            n_local,
            local_by_path,
            keep_all,
            zeroing,
            from_calls,
        }
    }

    /// The probed sites with a slot in the local array: (slot, block).
    pub(super) fn local_slots(&self, cfg: &CfgFunction) -> Vec<(u64, usize)> {
        self.slot
            .iter()
            .zip(&self.call_nodes)
            .filter_map(|(s, &n)| {
                let j = (*s).filter(|&j| j < self.n_local)?;
                Some((j, cfg.nodes[n as usize].block? as usize))
            })
            .collect()
    }

    /// Writes the layout into the record: the local array's length and zeroing block, and
    /// each call-site node's label (`CC<slot>`), or the probes that imply its coverage.
    pub(super) fn label(&self, cfg: &mut CfgFunction) -> Result<(), &'static str> {
        let (n_local, n_probes) = (self.n_local, self.n_probes);
        cfg.cc_local_len = (n_local < n_probes).then_some(n_local);
        cfg.cc_local_zeroed_in =
            (n_local > 0 && !self.keep_all).then_some(self.zeroing.block() as u32);
        cfg.cc_local_by_path = self.local_by_path;
        cfg.cc_unprobed = self.unprobed_blocks.clone();
        let slot = &self.slot;
        for (k, &n) in self.call_nodes.iter().enumerate() {
            let in_unprobed = cfg.nodes[n as usize]
                .block
                .is_some_and(|b| self.unprobed_blocks.contains(&b));
            if in_unprobed && slot[k].is_none() {
                continue;
            }
            if let Some(last) = self.by_last[k] {
                let j = slot[last].expect("probed");
                cfg.nodes[n as usize].implied_by_last = Some(format!("CC{j}"));
                continue;
            }
            match (slot[k], self.placement[k]) {
                (Some(j), _) => cfg.nodes[n as usize].labels.push(format!("CC{j}")),
                (None, Some((a, b))) => {
                    cfg.nodes[n as usize].implied = Some(CfgImplied {
                        first: format!("CC{}", slot[a].expect("probed")),
                        last: format!("CC{}", slot[b].expect("probed")),
                    })
                }
                (None, None) => return Err("a call site neither probed nor implied"),
            }
        }
        Ok(())
    }
}
