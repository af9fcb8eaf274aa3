//! Coverage arrays of one function: the global (and local) arrays of call-site, basic-block
//! and function coverage with their DWARF names, their `.debug_CC` / `.debug_BBC` /
//! `.debug_FC` records, the stores that set them, and the zeroing of the local arrays.

use super::*;

/// The function whose coverage arrays are made, and how they are named and grouped (see
/// `Ctx::global`).
pub(super) struct ArrayOwner<'a> {
    pub(super) c: &'a Ctx,
    pub(super) f: LLVMValueRef,
    pub(super) sp: LLVMMetadataRef,
    /// Flag bytes after the slots of the global arrays (see `Ctx::global`).
    pub(super) flags: u64,
    pub(super) name: &'a str,
    /// `mash` of the unit's source, or `odr` (see `odr_group`).
    pub(super) unit_tag: &'a str,
    pub(super) odr_group: Option<&'a str>,
}

/// A global coverage array and its type.
type Global = (LLVMValueRef, LLVMTypeRef);
/// A local coverage array (an alloca) and its type.
type Local = (LLVMValueRef, LLVMTypeRef);

/// The coverage arrays made for one function.
pub(super) struct CoverageArrays {
    /// `__CC_arr_*` and the local `__CC_arr`, if it has one.
    pub(super) cc: Option<(Global, Option<Local>)>,
    /// `__BBC_arr_*` and the local `__BBC_arr`, if it has one, and which blocks store.
    pub(super) bbc: Option<BbcArrays>,
    /// `__FC_arr_*`.
    pub(super) fc: Option<Global>,
    /// The probes whose global slot is set at their loop's exits.
    pub(super) loop_exits: LoopExitCopies,
}

/// Probes whose global store moves from the probe to the exits of its loop, where the
/// probe's local bit is copied into the global slot (`CfgFunction::cc_global_at_return`,
/// `bbc_global_at_return`).
#[derive(Default)]
pub(super) struct LoopExitCopies {
    /// Slots of `__CC_arr` / `__CC_arr_*`.
    cc: Vec<u64>,
    /// Blocks (slots of `__BBC_arr` / `__BBC_arr_*`).
    bbc: Vec<u32>,
    loops: Vec<CopiedLoop>,
    /// The global array whose bytes after the slots are the loops' "every slot of the loop
    /// is set" flags (`copy_at_loop_exits`): `__BBC_arr_*` if it has such slots, else
    /// `__CC_arr_*`; and the index of the first loop's flag (the array's slot count).
    flag_in_bbc: bool,
    flag_base: u64,
    /// The function calls something (not an intrinsic without code).
    calls: bool,
}

/// A loop whose probes' global slots its exits set.
struct CopiedLoop {
    cc: Vec<u64>,
    bbc: Vec<u64>,
    /// The blocks at whose start the copy goes: every block outside the loop that an edge
    /// from inside it enters (a return leaves the loop through one).
    exits: Vec<usize>,
}

/// The loops whose probes leave their global store to the loop's exits: the maximal strongly
/// connected regions of the block graph whose blocks are all `eligible` (every call in them
/// comes back: `comes_back`), so that an activation which entered one either leaves it
/// through an exit edge, stays in it, or crashes in it (a live frame). A region with an
/// ineligible block is not copied as a whole; its inner loops are, found again without its
/// entry blocks (those entered from outside it, the loop heads).
pub(super) fn copied_loops(succs: &[Vec<u32>], eligible: &[bool]) -> Vec<Vec<usize>> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut out = Vec::new();
    let mut work: Vec<Vec<usize>> = vec![(0..succs.len()).collect()];
    while let Some(region) = work.pop() {
        let index: HashMap<usize, u32> = region
            .iter()
            .enumerate()
            .map(|(i, &b)| (b, i as u32))
            .collect();
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(region.len(), 0);
        for _ in &region {
            g.add_node(());
        }
        for (i, &b) in region.iter().enumerate() {
            for s in &succs[b] {
                if let Some(&j) = index.get(&(*s as usize)) {
                    g.add_edge(NodeIndex::new(i), NodeIndex::new(j as usize), ());
                }
            }
        }
        for scc in petgraph::algo::tarjan_scc(&g) {
            let mut blocks: Vec<usize> = scc.iter().map(|n| region[n.index()]).collect();
            blocks.sort_unstable();
            let cyclic = blocks.len() > 1 || succs[blocks[0]].contains(&(blocks[0] as u32));
            if !cyclic {
                continue;
            }
            if blocks.iter().all(|&b| eligible[b]) {
                out.push(blocks);
                continue;
            }
            let mut entered = vec![false; succs.len()];
            entered[0] = true;
            for (b, s) in succs.iter().enumerate() {
                if blocks.binary_search(&b).is_err() {
                    for &t in s {
                        entered[t as usize] = true;
                    }
                }
            }
            let inner: Vec<usize> = blocks.into_iter().filter(|&b| !entered[b]).collect();
            if !inner.is_empty() {
                work.push(inner);
            }
        }
    }
    out.sort();
    out
}

impl LoopExitCopies {
    /// The probes in `loops` (`copied_loops`) that store into a local array — where a loop
    /// stored both bytes every iteration. A copy at a loop's exit is right only if the local
    /// array holds the activation's bits there: `__BBC_arr` is zeroed at entry, `__CC_arr`
    /// in a block that must then strictly dominate every exit of the loop.
    pub(super) fn new(
        arrays: &CoverageArrays,
        succs: &[Vec<u32>],
        loops: &[Vec<usize>],
        facts: &BlockFacts,
        cfg: &CfgFunction,
        calls: &[CallSite],
        layout: &CcLayout,
    ) -> LoopExitCopies {
        let g = &facts.graph;
        let bbc_local = arrays
            .bbc
            .as_ref()
            .filter(|b| b.local.is_some())
            .map(|b| &b.local_probed);
        let cc_local: Vec<(u64, usize)> = match arrays.cc {
            Some((_, Some(_))) => layout.local_slots(cfg),
            _ => Vec::new(),
        };
        // `__BBC_arr` is zeroed at the start of the entry block, which no loop exit enters;
        // `__CC_arr` in (or on the edges into) a block that must strictly dominate every copy
        // point of the loop: a copy in the zeroing block itself would go before the zeroing
        // and read what the stack held.
        let h = layout.zeroing.block();
        let mut out = LoopExitCopies::default();
        for l in loops {
            let has = |k: usize| l.binary_search(&k).is_ok();
            let mut exits = BTreeSet::new();
            for &b in l {
                exits.extend(succs[b].iter().map(|&t| t as usize).filter(|&t| !has(t)));
            }
            let exits: Vec<usize> = exits.into_iter().collect();
            let bbc: Vec<u64> = match bbc_local {
                Some(p) => l.iter().filter(|&&k| p[k]).map(|&k| k as u64).collect(),
                None => Vec::new(),
            };
            let cc: Vec<u64> = if exits.iter().all(|&r| r != h && g.dominates(h, r)) {
                cc_local
                    .iter()
                    .filter(|&&(_, b)| has(b))
                    .map(|&(j, _)| j)
                    .collect()
            } else {
                Vec::new()
            };
            if cc.is_empty() && bbc.is_empty() {
                continue;
            }
            out.cc.extend(&cc);
            out.bbc.extend(bbc.iter().map(|&k| k as u32));
            out.loops.push(CopiedLoop { cc, bbc, exits });
        }
        out.cc.sort_unstable();
        out.bbc.sort_unstable();
        out.calls = !calls.is_empty();
        (out.flag_in_bbc, out.flag_base) = match out.bbc.is_empty() {
            false => (true, succs.len() as u64),
            true => (false, layout.n_probes),
        };
        out
    }

    pub(super) fn record(&self, cfg: &mut CfgFunction) {
        cfg.cc_global_at_return = self.cc.clone();
        cfg.bbc_global_at_return = self.bbc.clone();
    }

    fn cc_has(&self, j: u64) -> bool {
        self.cc.binary_search(&j).is_ok()
    }

    fn bbc_has(&self, k: usize) -> bool {
        self.bbc.binary_search(&(k as u32)).is_ok()
    }
}

/// Basic-block coverage arrays and where their probes store.
pub(super) struct BbcArrays {
    global: Global,
    /// `__BBC_arr`: none when every probed block's local probe is omitted.
    local: Option<Local>,
    /// Blocks that store into the global array.
    probed: Vec<bool>,
    /// Blocks that also store into the local array (probed, and not `bbc_local_omitted`).
    local_probed: Vec<bool>,
}

impl ArrayOwner<'_> {
    /// Call-site coverage: `__CC_arr_<unit>_<name>` (a slot per probe) and the local
    /// `__CC_arr` (the slots below `layout.n_local`); the `.debug_CC` record.
    pub(super) unsafe fn cc(
        &self,
        cfg: &mut CfgFunction,
        calls: &[CallSite],
        layout: &CcLayout,
    ) -> (Option<(Global, Option<Local>)>, String) {
        let (c, f, sp, name) = (self.c, self.f, self.sp, self.name);
        let n_local = layout.n_local;
        let mut cc_text = String::new();
        let unit_tag = self.unit_tag;
        let gname = format!("__CC_arr_{unit_tag}_{name}");
        // No slot at all (every site's coverage comes from the callers', `entry_from_calls`):
        // no array, whose zero length a debugger would not print.
        let global = (layout.n_probes > 0)
            .then(|| c.global(&gname, layout.n_probes, self.flags, sp, f, self.odr_group));
        // The local array holds the slots below `n_local`; none at all when every
        // probe is in the entry block (no zeroing then).
        let local = (n_local > 0).then(|| {
            let lty = LLVMArrayType2(c.i8t, n_local.div_ceil(8) * 8);
            let b = c.basic_type("__csi_bool", 8, 0x02);
            let a = c.local(f, sp, lty, 8, "__CC_arr", c.volatile_array(b, 8, n_local));
            hoist::mark_coverage_local(c.ctx, a);
            (a, lty)
        });
        cfg.cc = Some(gname.clone());
        CcFunction {
            name: name.to_string(),
            global: gname,
            // Unprobed sites are listed as uninstrumented (`-1`, `-2`, ...), as csi-cc
            // v1.4.0 does; `.debug_CSI_CFG` says how their coverage is implied.
            sites: {
                let mut unprobed = 0i64;
                calls
                    .iter()
                    .zip(&layout.slot)
                    .map(|((_, line, _, callee), s)| CcSite {
                        index: match s {
                            Some(j) => *j as i64,
                            None => {
                                unprobed += 1;
                                -unprobed
                            }
                        },
                        label: s.map(|j| format!("CC{j}")),
                        line: *line,
                        callee: callee.clone(),
                    })
                    .collect()
            },
        }
        .write(&mut cc_text);
        (global.map(|g| (g, local)), cc_text)
    }

    /// Basic-block coverage: `__BBC_arr_<unit>_<name>` and the local `__BBC_arr`, a slot per
    /// block, stored into only in the `probed` blocks (the others are listed in
    /// `bbc_unprobed`), the local one only in the `local_probed` ones (a subset; the other
    /// probed blocks are listed in `bbc_local_omitted`: the reader derives them; no local
    /// array when there are none); the `.debug_BBC` record.
    pub(super) unsafe fn bbc(
        &self,
        cfg: &mut CfgFunction,
        info: &[BlockInfo],
        probed: Vec<bool>,
        local_probed: Vec<bool>,
    ) -> (Option<BbcArrays>, String) {
        let n = probed.len() as u64;
        let (c, f, sp, name) = (self.c, self.f, self.sp, self.name);
        let mut bbc_text = String::new();
        let unit_tag = self.unit_tag;
        let gname = format!("__BBC_arr_{unit_tag}_{name}");
        let global = c.global(&gname, n, self.flags, sp, f, self.odr_group);
        let local = local_probed.contains(&true).then(|| {
            let lty = LLVMArrayType2(c.i8t, n.div_ceil(8) * 8);
            let b = c.basic_type("__csi_bool", 8, 0x02);
            let a = c.local(f, sp, lty, 8, "__BBC_arr", c.volatile_array(b, 8, n));
            hoist::mark_coverage_local(c.ctx, a);
            (a, lty)
        });
        cfg.bbc = Some(gname.clone());
        cfg.bbc_unprobed = (0..probed.len() as u32)
            .filter(|&k| !probed[k as usize])
            .collect();
        cfg.bbc_local_omitted = (0..probed.len() as u32)
            .filter(|&k| probed[k as usize] && !local_probed[k as usize])
            .collect();
        BbcFunction {
            name: name.to_string(),
            global: gname,
            blocks: info
                .iter()
                .enumerate()
                .map(|(k, b)| BbcBlock {
                    index: k as u32,
                    label: format!("BBC{k}"),
                    lines: b.lines.clone(),
                })
                .collect(),
        }
        .write(&mut bbc_text);
        let arrays = BbcArrays {
            global,
            local,
            probed,
            local_probed,
        };
        (Some(arrays), bbc_text)
    }

    /// Function coverage: `__FC_arr_<unit>_<name>`, one slot; the `.debug_FC` record.
    pub(super) unsafe fn fc(&self, cfg: &mut CfgFunction) -> (Option<Global>, String) {
        let (c, f, sp, name) = (self.c, self.f, self.sp, self.name);
        let mut fc_text = String::new();
        let unit_tag = self.unit_tag;
        let gname = format!("__FC_arr_{unit_tag}_{name}");
        let fc_var = Some(c.global(&gname, 1, 0, sp, f, self.odr_group));
        cfg.fc = Some(gname.clone());
        FcFunction {
            name: name.to_string(),
            global: gname,
        }
        .write(&mut fc_text);
        (fc_var, fc_text)
    }
}

impl CoverageArrays {
    /// The coverage stores: before each probed call site, at the start of each block (after
    /// the allocas in the entry block), at the function's entry. They only insert before
    /// existing instructions.
    pub(super) unsafe fn store(
        &self,
        c: &Ctx,
        bbs: &[LLVMBasicBlockRef],
        calls: &[CallSite],
        layout: &CcLayout,
    ) {
        let one = LLVMConstInt(c.i8t, 1, 0);
        if let Some(((g, gty), local)) = self.cc {
            for ((inst, ..), s) in calls.iter().zip(&layout.slot) {
                let Some(j) = *s else { continue };
                c.position_before(*inst);
                let idx = LLVMConstInt(c.i64t, j, 0);
                if let Some((a, lty)) = local.filter(|_| j < layout.n_local) {
                    let lp = c.gep(lty, a, idx);
                    c.vstore(one, lp);
                }
                if self.loop_exits.cc_has(j) {
                    continue;
                }
                let gp = c.gep(gty, g, idx);
                c.vstore(one, gp);
            }
        }
        if let Some(arrays) = &self.bbc {
            let (g, gty) = arrays.global;
            for (k, &bb) in bbs.iter().enumerate().filter(|&(k, _)| arrays.probed[k]) {
                c.position_before(if k == 0 {
                    after_allocas(bb)
                } else {
                    c.first_insertion(bb)
                });
                let idx = LLVMConstInt(c.i64t, k as u64, 0);
                if let Some((a, lty)) = arrays.local.filter(|_| arrays.local_probed[k]) {
                    let lp = c.gep(lty, a, idx);
                    c.vstore(one, lp);
                }
                if self.loop_exits.bbc_has(k) {
                    continue;
                }
                let gp = c.gep(gty, g, idx);
                c.vstore(one, gp);
            }
        }
        if let Some((g, gty)) = self.fc {
            c.position_before(after_allocas(bbs[0]));
            let gp = c.gep(gty, g, LLVMConstInt(c.i64t, 0, 0));
            c.vstore(one, gp);
        }
    }

    /// At the start of each exit of a copied loop (a block an edge from inside it enters),
    /// the loop's probes' local bits go into their global slots. Once every such slot of the
    /// loop is set, nothing is left to copy: the loop's flag byte (after the global array's
    /// slots) says so, and its exits only test it. Until then, a check, word by word (the
    /// arrays are padded to words): a local bit set whose global byte is clear
    /// (`local & !global`). Only then, in a cold block of its own, the runtime's
    /// `__csi_rt_copy` sets the global byte of each listed slot whose local bit is set — only
    /// ones are written, never a zero into a slot that other activations and threads share
    /// (out of line: a copy inlined at every return grew Lua's `.text` by a sixth) — and the
    /// flag is recomputed (a racing thread's store of a stale 0 only costs a check; a 1 is
    /// stored only when every slot is set, and slots are never cleared). Per loop, not per
    /// function: an inner loop's exit inside a hot outer loop checks only its own few slots
    /// (checking the whole function's made flex's `bb` ×1.29 instead of ×1.27 in place). The
    /// flags matter: word loads right after a loop's byte stores wait for them (no store
    /// forwarding from narrower stores), which cost Lua's small looping functions more than
    /// the stores saved; for the same reason a check of a few slots loads bytes. Last of
    /// the instrumentation: it splits the exits' blocks.
    pub(super) unsafe fn copy_at_loop_exits(&self, c: &Ctx, bbs: &[LLVMBasicBlockRef]) {
        let at = &self.loop_exits;
        let cc = self.cc.and_then(|(g, l)| Some((g, l?)));
        let bbc = self.bbc.as_ref().and_then(|b| Some((b.global, b.local?)));
        let flag_array = if at.flag_in_bbc { bbc } else { cc };
        let Some(((fg, fgty), _)) = flag_array.filter(|_| !at.loops.is_empty()) else {
            return;
        };
        let word = |ty: LLVMTypeRef, a: LLVMValueRef, w: u64| {
            let p = c.gep(ty, a, LLVMConstInt(c.i64t, 8 * w, 0));
            let l = c.vload(c.i64t, p);
            LLVMSetAlignment(l, 1);
            l
        };
        let byte = |ty: LLVMTypeRef, a: LLVMValueRef, j: u64| {
            let p = c.gep(ty, a, LLVMConstInt(c.i64t, j, 0));
            LLVMBuildZExt(c.builder, c.vload(c.i8t, p), c.i64t, c"".as_ptr())
        };
        let i64c = |v: u64| LLVMConstInt(c.i64t, v, 0);
        let i8c = |v: u64| LLVMConstInt(c.i8t, v, 0);
        let icmp = |p: LLVMIntPredicate, a: LLVMValueRef, b: LLVMValueRef| {
            LLVMBuildICmp(c.builder, p, a, b, c"".as_ptr())
        };
        // A function that calls nothing copies inline (a call would cost it a stack frame on
        // every call); the others call `__csi_rt_copy` (csi-cc's runtime) with each array's
        // slot list, a constant.
        let leaf = !at.calls;
        for (li, l) in at.loops.iter().enumerate() {
            let flag = c.gep(fgty, fg, i64c(at.flag_base + li as u64));
            let arrays: Vec<(Global, Local, &Vec<u64>)> = [(cc, &l.cc), (bbc, &l.bbc)]
                .into_iter()
                .filter_map(|(a, slots)| Some((a?, slots)))
                .filter(|(_, slots)| !slots.is_empty())
                .map(|((g, loc), slots)| (g, loc, slots))
                .collect();
            let lists: Vec<Option<LLVMValueRef>> = arrays
                .iter()
                .map(|(_, _, slots)| (!leaf).then(|| c.slot_list(slots)))
                .collect();
            for &r in &l.exits {
                // if (!flag) { missing = ...; if (missing) { copy }; flag = every slot set }
                let resume = c.first_insertion(bbs[r]);
                c.position_before(resume);
                let done = c.vload(c.i8t, flag);
                let open = icmp(LLVMIntPredicate::LLVMIntEQ, done, i8c(0));
                let check_end = csi_split_if_then(open, resume, 0);
                c.position_before(check_end);
                let mut missing = i64c(0);
                for &((g, gty), (a, lty), slots) in &arrays {
                    let words: BTreeSet<u64> = slots.iter().map(|j| j / 8).collect();
                    // Few slots: byte loads, which the loop's byte stores forward to.
                    let parts: Vec<(LLVMValueRef, LLVMValueRef)> = if slots.len() <= 2 * words.len()
                    {
                        slots
                            .iter()
                            .map(|&j| (byte(lty, a, j), byte(gty, g, j)))
                            .collect()
                    } else {
                        words
                            .into_iter()
                            .map(|w| (word(lty, a, w), word(gty, g, w)))
                            .collect()
                    };
                    for (local, global) in parts {
                        let global = LLVMBuildNot(c.builder, global, c"".as_ptr());
                        let new = LLVMBuildAnd(c.builder, local, global, c"".as_ptr());
                        missing = LLVMBuildOr(c.builder, missing, new, c"".as_ptr());
                    }
                }
                let any = icmp(LLVMIntPredicate::LLVMIntNE, missing, i64c(0));
                let copy_end = csi_split_if_then(any, check_end, 0);
                c.position_before(copy_end);
                let mut all = LLVMConstInt(LLVMInt1TypeInContext(c.ctx), 1, 0);
                for (&((g, gty), (a, lty), slots), list) in arrays.iter().zip(&lists) {
                    let every = if let &Some(list) = list {
                        let every = c.call_rt_copy(list, slots.len() as u64, a, g);
                        // The copy point's line (the split's branches have none).
                        LLVMInstructionSetDebugLoc(every, LLVMInstructionGetDebugLoc(resume));
                        let zero = LLVMConstInt(c.i32t(), 0, 0);
                        icmp(LLVMIntPredicate::LLVMIntNE, every, zero)
                    } else {
                        // Inline: each slot's byte goes either into its global slot (when set) or
                        // back where it was read from (when clear), branch-free; then every
                        // slot set is (global & mask) == mask in every word, mask = 1 per slot.
                        let mut masks: BTreeMap<u64, u64> = BTreeMap::new();
                        for &j in slots.iter() {
                            let lp = c.gep(lty, a, i64c(j));
                            let bit = c.vload(c.i8t, lp);
                            let set = icmp(LLVMIntPredicate::LLVMIntNE, bit, i8c(0));
                            let gp = c.gep(gty, g, i64c(j));
                            let p = LLVMBuildSelect(c.builder, set, gp, lp, c"".as_ptr());
                            c.vstore(bit, p);
                            *masks.entry(j / 8).or_default() |= 1u64 << (8 * (j % 8));
                        }
                        let mut unset = i64c(0);
                        for (w, mask) in masks {
                            let not = LLVMBuildNot(c.builder, word(gty, g, w), c"".as_ptr());
                            let lacking = LLVMBuildAnd(c.builder, not, i64c(mask), c"".as_ptr());
                            unset = LLVMBuildOr(c.builder, unset, lacking, c"".as_ptr());
                        }
                        icmp(LLVMIntPredicate::LLVMIntEQ, unset, i64c(0))
                    };
                    all = LLVMBuildAnd(c.builder, all, every, c"".as_ptr());
                }
                let v = LLVMBuildZExt(c.builder, all, c.i8t, c"".as_ptr());
                c.vstore(v, flag);
            }
        }
    }

    /// Zeroes the local coverage arrays: `__BBC_arr` at entry (after the allocas, before
    /// anything else), `__CC_arr` where `zeroing` says. After path tracing, which may have
    /// split the same edges (see `zeroing_points`).
    pub(super) unsafe fn zero_locals(
        &self,
        c: &Ctx,
        bbs: &[LLVMBasicBlockRef],
        facts: &BlockFacts,
        zeroing: Zeroing,
    ) -> Result<(), &'static str> {
        for (a, lty, at) in [
            self.cc.and_then(|v| v.1).map(|(a, l)| (a, l, zeroing)),
            self.bbc
                .as_ref()
                .and_then(|v| v.local)
                .map(|(a, l)| (a, l, Zeroing::AtStart(0))),
        ]
        .into_iter()
        .flatten()
        {
            let len = LLVMGetArrayLength2(lty);
            for at in zeroing_points(c, bbs, facts, at)? {
                c.position_before(at);
                c.vmemset0(a, len);
            }
        }
        Ok(())
    }
}

/// After optimization, each function's loop-exit copies (`__csi_rt_copy`'s) without the
/// slots that its code can no longer set, behind a flag of the function's own: returns how
/// many slots were dropped from lists.
///
/// Why: a loop's "every slot set" flag is set once every listed global byte is, and until
/// then each exit of the loop runs the check (a flag test, two words, a `not`, a test). The
/// lists are made before optimization; a callee inlined with constant arguments loses its
/// branches for the other values (zstd's `ZSTD_row_update_internalImpl`, `useCache`; the
/// `dictMode` branches of `ZSTD_RowFindBestMatch`), their probes' frame stores with them,
/// and a listed slot that can never be set keeps its loop's flag clear for good: three
/// 7-instruction checks on each of 481 K calls of zstd's hottest function.
///
/// Exact: a slot whose frame byte nothing stores a 1 into stays 0 in every activation, so
/// it never has anything to copy, and "every slot set" over the others is all the flag has
/// to say. But the flag (a byte after the global array's slots) is one per loop, shared by
/// every inlined copy of it, and another function's copy (another specialization) may set
/// the slots this one cannot: a function whose lists shrink gets a flag byte of its own for
/// that loop, and its calls a list of their own. Per function and flag, the calls that store
/// into the flag (through `icmp`/`and`/`zext`) keep the slots any of their frames can set;
/// every access to the flag in the function then goes to the new byte. Left as they are:
/// global arrays not the unit's own (internal linkage; a COMDAT array is shared with other
/// units' copies, whose code this pass does not see), a frame array handed to anything else
/// than its stores, loads, the zeroing, lifetime markers, the empty asm that makes it escape
/// and the copy, and a function that reaches the global array by a variable address or in a
/// way not recognized.
pub(super) unsafe fn forget_unset_copy_slots(module: LLVMModuleRef) -> usize {
    let copy = LLVMGetNamedFunction(module, c"__csi_rt_copy".as_ptr());
    if copy.is_null() {
        return 0;
    }
    let mut u = LLVMGetFirstUse(copy);
    while !u.is_null() {
        let call = LLVMGetUser(u);
        u = LLVMGetNextUse(u);
        if LLVMIsACallInst(call).is_null() || LLVMGetCalledValue(call) != copy {
            return 0;
        }
    }
    // The calls, by function, in module order (the new globals' order, the output's, must not
    // follow addresses).
    let by_function: Vec<(LLVMValueRef, Vec<LLVMValueRef>)> = function_bodies(module)
        .into_iter()
        .map(|(f, bbs)| {
            let calls = bbs
                .iter()
                .flat_map(|&bb| instructions(bb))
                .filter(|&i| !LLVMIsACallInst(i).is_null() && LLVMGetCalledValue(i) == copy)
                .collect();
            (f, calls)
        })
        .filter(|(_, calls): &(_, Vec<_>)| !calls.is_empty())
        .collect();
    let ctx = LLVMGetModuleContext(module);
    let (i8t, i32t) = (LLVMInt8TypeInContext(ctx), LLVMInt32TypeInContext(ctx));
    let mut dropped = 0;
    let mut old_lists = Vec::new();
    for (f, calls) in by_function {
        // Per flag (global array, offset), in the order of their first call: the calls.
        let mut flags: Vec<((LLVMValueRef, i64), Vec<LLVMValueRef>)> = Vec::new();
        let mut recognized = true;
        for &call in &calls {
            match stored_flag(call) {
                Some(flag) => match flags.iter_mut().find(|(k, _)| *k == flag) {
                    Some((_, v)) => v.push(call),
                    None => flags.push((flag, vec![call])),
                },
                None => recognized = false,
            }
        }
        if !recognized {
            continue;
        }
        let accesses = function_array_accesses(f);
        for ((g, off), calls) in flags {
            let own = matches!(
                LLVMGetLinkage(g),
                LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
            );
            if !own || accesses.variable.contains(&(g as usize)) {
                continue;
            }
            // Per list: the union of what its calls' frames can set.
            let mut settable: Vec<(LLVMValueRef, Option<BTreeSet<u64>>)> = Vec::new();
            for &call in &calls {
                let list = LLVMGetOperand(call, 0);
                let set = if LLVMIsAGlobalVariable(list).is_null() {
                    None
                } else {
                    settable_slots(LLVMGetOperand(call, 2))
                };
                let k = match settable.iter().position(|(l, _)| *l == list) {
                    Some(k) => k,
                    None => {
                        settable.push((list, Some(BTreeSet::new())));
                        settable.len() - 1
                    }
                };
                let e = &mut settable[k].1;
                *e = match (e.take(), set) {
                    (Some(mut all), Some(s)) => {
                        all.extend(s);
                        Some(all)
                    }
                    _ => None,
                };
            }
            let mut kept_lists: Vec<(LLVMValueRef, Vec<u64>, usize)> = Vec::new();
            let mut whole = true;
            for &(list, ref set) in &settable {
                let Some(set) = set else {
                    whole = false;
                    break;
                };
                let slots = slot_list_of(list);
                let kept: Vec<u64> = slots.iter().copied().filter(|j| set.contains(j)).collect();
                let gone = slots.len() - kept.len();
                kept_lists.push((list, kept, gone));
            }
            // The flag's loads and stores, all of one byte (the copies' word loads start at
            // slots, never at a flag).
            let Some(at) = accesses.at.get(&(g as usize, off)) else {
                continue;
            };
            let bytes = at.iter().all(|&(i, operand)| {
                let ty = if operand == 0 {
                    LLVMTypeOf(i)
                } else {
                    LLVMTypeOf(LLVMGetOperand(i, 0))
                };
                LLVMGetTypeKind(ty) == llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind
                    && LLVMGetIntTypeWidth(ty) == 8
            });
            if !whole || !bytes || kept_lists.iter().all(|&(_, _, gone)| gone == 0) {
                continue;
            }
            // The function's own flag for the loop, and its own lists.
            let flag = LLVMAddGlobal(module, i8t, c"__csi_flag".as_ptr());
            LLVMSetInitializer(flag, LLVMConstInt(i8t, 0, 0));
            LLVMSetLinkage(flag, LLVMLinkage::LLVMPrivateLinkage);
            for &(i, operand) in at {
                LLVMSetOperand(i, operand, flag);
            }
            for (list, kept, gone) in kept_lists {
                dropped += gone;
                let new = super::slot_list(module, &kept);
                for &call in calls.iter().filter(|&&c| LLVMGetOperand(c, 0) == list) {
                    LLVMSetOperand(call, 0, new);
                    LLVMSetOperand(call, 1, LLVMConstInt(i32t, kept.len() as u64, 0));
                }
                old_lists.push(list);
            }
        }
    }
    old_lists.sort_unstable();
    old_lists.dedup();
    for list in old_lists {
        if LLVMGetFirstUse(list).is_null() {
            LLVMDeleteGlobal(list);
        }
    }
    dropped
}

/// The slots a constant slot list (`slot_list`) holds.
unsafe fn slot_list_of(list: LLVMValueRef) -> Vec<u64> {
    let init = LLVMGetInitializer(list);
    let n = LLVMGetArrayLength2(LLVMTypeOf(init));
    (0..n as u32)
        .map(|k| LLVMConstIntGetZExtValue(LLVMGetAggregateElement(init, k)))
        .collect()
}

/// The flag byte a copy's result is stored into (`copy_at_loop_exits`: `flag = every slot
/// set`, through `icmp`, `and`, `zext`): its global array and offset, if there is exactly one
/// and nothing else is made of the result.
unsafe fn stored_flag(call: LLVMValueRef) -> Option<(LLVMValueRef, i64)> {
    use LLVMOpcode::*;
    let mut found = None;
    let mut work = vec![call];
    let mut seen = HashSet::new();
    while let Some(v) = work.pop() {
        if !seen.insert(v) {
            continue;
        }
        let mut u = LLVMGetFirstUse(v);
        while !u.is_null() {
            let i = LLVMGetUser(u);
            u = LLVMGetNextUse(u);
            match LLVMGetInstructionOpcode(i) {
                LLVMICmp | LLVMAnd | LLVMZExt | LLVMTrunc => work.push(i),
                LLVMStore if LLVMGetOperand(i, 0) == v && LLVMGetVolatile(i) != 0 => {
                    let (g, off) = super::checked::constant_offset(LLVMGetOperand(i, 1))?;
                    if LLVMIsAGlobalVariable(g).is_null() || found.is_some_and(|x| x != (g, off)) {
                        return None;
                    }
                    found = Some((g, off));
                }
                _ => return None,
            }
        }
    }
    found
}

/// A function's loads and stores into global variables: by (global, constant offset), each
/// instruction and its pointer operand's index; and the globals it loads or stores at an
/// offset not constant.
struct ArrayAccesses {
    at: HashMap<(usize, i64), Vec<(LLVMValueRef, u32)>>,
    variable: HashSet<usize>,
}

unsafe fn function_array_accesses(f: LLVMValueRef) -> ArrayAccesses {
    let mut out = ArrayAccesses {
        at: HashMap::new(),
        variable: HashSet::new(),
    };
    for bb in blocks(f) {
        for i in instructions(bb) {
            let operand = if !LLVMIsALoadInst(i).is_null() {
                0
            } else if !LLVMIsAStoreInst(i).is_null() {
                1
            } else {
                continue;
            };
            let p = LLVMGetOperand(i, operand);
            match super::checked::constant_offset(p) {
                Some((g, off)) if !LLVMIsAGlobalVariable(g).is_null() => out
                    .at
                    .entry((g as usize, off))
                    .or_default()
                    .push((i, operand)),
                Some(_) => {}
                None => {
                    if let Some(g) = global_base(p) {
                        out.variable.insert(g as usize);
                    }
                }
            }
        }
    }
    out
}

/// The global a pointer is based on through GEPs (constant or not), if any.
unsafe fn global_base(mut p: LLVMValueRef) -> Option<LLVMValueRef> {
    while LLVMIsAGlobalVariable(p).is_null() {
        p = super::checked::gep_pointer(p)?;
    }
    Some(p)
}

/// The bytes of the frame array `a` (a local coverage array) that its function's code can set:
/// the offsets of its `store volatile i8 1`s. `None` when `a` is not an alloca or is used
/// otherwise than by those, loads, stores of zeros, the zeroing `llvm.memset`, lifetime
/// markers, the empty asm that makes it escape and `__csi_rt_copy` — through constant or
/// variable GEPs.
unsafe fn settable_slots(a: LLVMValueRef) -> Option<BTreeSet<u64>> {
    if LLVMIsAAllocaInst(a).is_null() {
        return None;
    }
    let mut set = BTreeSet::new();
    let mut work = vec![a];
    while let Some(p) = work.pop() {
        let mut u = LLVMGetFirstUse(p);
        while !u.is_null() {
            let i = LLVMGetUser(u);
            u = LLVMGetNextUse(u);
            if !LLVMIsAGetElementPtrInst(i).is_null() && LLVMGetOperand(i, 0) == p {
                work.push(i);
            } else if !LLVMIsALoadInst(i).is_null() {
            } else if !LLVMIsAStoreInst(i).is_null() {
                let v = LLVMGetOperand(i, 0);
                if v == p {
                    return None; // the address itself stored: it escapes
                }
                if super::checked::is_store_of_one(i) {
                    let (base, off) = super::checked::constant_offset(LLVMGetOperand(i, 1))?;
                    if base != a || off < 0 {
                        return None;
                    }
                    set.insert(off as u64);
                } else if LLVMIsNull(v) == 0 {
                    return None;
                }
            } else if !LLVMIsACallInst(i).is_null() {
                let called = LLVMGetCalledValue(i);
                if is_empty_asm(called) {
                    continue;
                }
                let callee = value_name(called);
                let zeroing = callee.starts_with("llvm.memset.")
                    && LLVMIsNull(LLVMGetOperand(i, 1)) != 0
                    && LLVMGetOperand(i, 0) == p;
                let harmless = callee.starts_with("llvm.lifetime.")
                    || (callee == "__csi_rt_copy" && LLVMGetOperand(i, 2) == p);
                if !zeroing && !harmless {
                    return None;
                }
            } else {
                return None;
            }
        }
    }
    Some(set)
}
