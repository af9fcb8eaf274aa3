//! The CFG record of one function (`.debug_CSI_CFG`), read off the unmodified function before
//! any probe goes in: its nodes (a block split at each call site), their source positions and
//! inlined scopes, call sites with their callees or indirect-call candidates, and edges.

use super::*;

/// The subprogram (linkage name, else name) an instruction's debug location belongs to: an
/// inlined function's for inlined code.
pub(super) unsafe fn loc_subprogram(i: LLVMValueRef) -> Option<String> {
    let mut len = 0usize;
    let p = csi_loc_subprogram(i, &mut len);
    (!p.is_null()).then(|| {
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    })
}

/// Indirect-call candidates listed by name at one call site; more become
/// `any_address_taken` (see `CfgCall`).
pub(super) const MAX_LISTED_CANDIDATES: usize = 16;

/// Subprograms inlined into one function, numbered from 1 in order of appearance (0 is the
/// function's own code): `CfgFunction::inlined` and each node's `scopes`.
#[derive(Default)]
pub(super) struct InlinedScopes {
    pub(super) names: Vec<String>,
    index: HashMap<String, u32>,
}

impl InlinedScopes {
    pub(super) unsafe fn of(&mut self, i: LLVMValueRef, own: &str) -> u32 {
        match loc_subprogram(i) {
            Some(sub) if sub != own => {
                if let Some(&k) = self.index.get(&sub) {
                    return k;
                }
                self.names.push(sub.clone());
                let k = self.names.len() as u32;
                self.index.insert(sub, k);
                k
            }
            _ => 0,
        }
    }
}

/// Per-block facts gathered before any change to the function.
pub(super) struct BlockInfo {
    pub(super) succs: Vec<u32>,
    /// Lines for the PT/BBC metadata (unconditional branches skipped).
    pub(super) lines: Vec<u32>,
}

/// One instruction's position while its node is built: line, column, file, scope (see
/// `Scopes`), held by an unconditional branch, held by an anchoring call.
pub(super) type PendingPosition = (u32, u32, String, u32, bool, bool);

/// Sets a node's file and positions from its instructions' positions: the file of its call
/// (where a frame stops in it) or else of its first positioned instruction, and the positions
/// in that file. Positions carry no file, so those of code inlined from another file (C++
/// headers: std::string's members in every function) would read as lines of this one, and
/// the node would not be found at its call's position.
pub(super) fn settle_positions(
    node: &mut CfgNode,
    pending: &mut Vec<PendingPosition>,
    anchor: Option<String>,
    fn_file: &str,
) {
    let norm = |f: &str| {
        if f.is_empty() {
            fn_file.to_string()
        } else {
            f.to_string()
        }
    };
    let file = anchor
        .map(|f| norm(&f))
        .or_else(|| pending.first().map(|p| norm(&p.2)))
        .unwrap_or_else(|| fn_file.to_string());
    let mut seen: BTreeSet<[u32; 2]> = BTreeSet::new();
    let in_file: Vec<&PendingPosition> = pending.iter().filter(|p| norm(&p.2) == file).collect();
    let kept: Vec<([u32; 2], u32)> = in_file
        .iter()
        .map(|p| ([p.0, p.1], p.3))
        .filter(|p| seen.insert(p.0))
        .collect();
    node.positions = kept.iter().map(|p| p.0).collect();
    // Weak: every instruction at the position is an unconditional branch.
    node.weak = kept
        .iter()
        .enumerate()
        .filter(|(_, k)| in_file.iter().filter(|p| [p.0, p.1] == k.0).all(|p| p.4))
        .map(|(i, _)| i as u32)
        .collect();
    // Anchored (optimized code): some instruction at the position is a call optimization
    // cannot have moved (see `csi_anchoring_call`).
    node.anchored = kept
        .iter()
        .enumerate()
        .filter(|(_, k)| in_file.iter().any(|p| [p.0, p.1] == k.0 && p.5))
        .map(|(i, _)| i as u32)
        .collect();
    node.scopes = if kept.iter().any(|p| p.1 != 0) {
        kept.iter().map(|p| p.1).collect()
    } else {
        Vec::new()
    };
    node.file = (file != fn_file).then_some(file);
    pending.clear();
}

/// A call of an intrinsic that compiles to no machine instruction (debug records, lifetime
/// markers, assumptions): its line never executes anything.
pub(super) unsafe fn intrinsic_without_code(i: LLVMValueRef) -> bool {
    if !is_call(i) {
        return false;
    }
    let callee = LLVMGetCalledValue(i);
    if LLVMIsAFunction(callee).is_null() {
        return false;
    }
    let mut len = 0usize;
    let p = LLVMGetValueName2(callee, &mut len);
    let name = std::str::from_utf8(std::slice::from_raw_parts(p as *const u8, len)).unwrap_or("");
    ["llvm.dbg.", "llvm.lifetime.", "llvm.assume"]
        .iter()
        .any(|q| name.starts_with(q))
}

/// A call that may throw an exception (C++): neither the call nor its callee is `nounwind`.
pub(super) unsafe fn may_unwind(call: LLVMValueRef) -> bool {
    let fn_index = llvm_sys::LLVMAttributeFunctionIndex;
    if !LLVMGetCallSiteEnumAttribute(call, fn_index, nounwind_kind()).is_null() {
        return false;
    }
    let callee = LLVMGetCalledValue(call);
    LLVMIsAFunction(callee).is_null() || !is_nounwind(callee)
}

/// The function is `nounwind`: no exception leaves it (clang marks every C function so, and
/// C++ functions that cannot throw).
pub(super) unsafe fn is_nounwind(f: LLVMValueRef) -> bool {
    let fn_index = llvm_sys::LLVMAttributeFunctionIndex;
    !LLVMGetEnumAttributeAtIndex(f, fn_index, nounwind_kind()).is_null()
}

pub(super) unsafe fn nounwind_kind() -> u32 {
    let name = c"nounwind";
    LLVMGetEnumAttributeKindForName(name.as_ptr(), name.to_bytes().len())
}

/// First instruction of `bb` that is not a PHI.
pub(super) unsafe fn first_non_phi(bb: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstInstruction(bb);
    while !i.is_null() && !LLVMIsAPHINode(i).is_null() {
        i = LLVMGetNextInstruction(i);
    }
    i
}

/// Functions whose address the unit takes (any use other than being called), with their
/// names: the candidates of indirect calls, and the module record's address-taken externals.
pub(super) unsafe fn address_taken_functions(
    module: LLVMModuleRef,
    opts: &Options,
) -> Vec<(LLVMValueRef, String)> {
    let mut address_taken: Vec<(LLVMValueRef, String)> = Vec::new();
    let mut g = LLVMGetFirstFunction(module);
    while !g.is_null() {
        let mut u = LLVMGetFirstUse(g);
        let mut taken = false;
        while !u.is_null() {
            let user = LLVMGetUser(u);
            let is_callee = is_call(user) && LLVMGetCalledValue(user) == g;
            // Instrumented before optimization, an uninstrumented `available_externally`
            // body (a library's inline function: `std::string::begin()`) is inlined into
            // traced code with its calls, which no record shows: as for library code, its
            // callees here may be called from anywhere.
            let from_library_body = opts.optimized_after
                && is_callee
                && LLVMGetLinkage(LLVMGetBasicBlockParent(LLVMGetInstructionParent(user)))
                    == LLVMLinkage::LLVMAvailableExternallyLinkage;
            if !is_callee || from_library_body {
                taken = true;
                break;
            }
            u = LLVMGetNextUse(u);
        }
        if taken && LLVMGetIntrinsicID(g) == 0 {
            address_taken.push((g, value_name(g)));
        }
        g = LLVMGetNextFunction(g);
    }
    address_taken
}

/// What library code may call back into (module record of .debug_CSI_CFG): functions the
/// C runtime runs itself, and functions whose address the unit takes that another unit's
/// record may describe (library functions, COMDAT definitions).
pub(super) unsafe fn module_record(
    module: LLVMModuleRef,
    opts: &Options,
    address_taken: &[(LLVMValueRef, String)],
) -> CfgModule {
    let mut module_record = CfgModule {
        csi_cfg: CFG_FORMAT_VERSION,
        module: opts.source.clone(),
        ..Default::default()
    };
    if let Some(before) = &opts.before_optimization {
        module_record.calls_before_optimization = before.record();
        module_record.address_taken_before_optimization = before.address_taken.clone();
        module_record.code_before_optimization = before.code_record();
    }
    for (g, n) in address_taken {
        // A declaration: another unit's record describes it. A COMDAT definition (an inline or
        // template function): the linker keeps one unit's record, which may be a unit where
        // its address is not taken — yaml-cpp's `char_traits<char>::compare`, called from
        // `std::string`'s `available_externally` bodies in six units and not in the four
        // whose record was kept, read as unreachable although its coverage said it ran.
        if LLVMIsDeclaration(*g) != 0 || comdat_of(*g).is_some() {
            module_record.address_taken_externals.push(n.clone());
        }
    }
    for list in ["llvm.global_ctors", "llvm.global_dtors"] {
        let gv = LLVMGetNamedGlobal(module, cstr(list).as_ptr());
        if gv.is_null() {
            continue;
        }
        let init = LLVMGetInitializer(gv);
        if init.is_null() {
            continue;
        }
        for k in 0..LLVMGetNumOperands(init).max(0) as u32 {
            let entry = LLVMGetOperand(init, k);
            if entry.is_null() || LLVMGetNumOperands(entry) < 2 {
                continue;
            }
            let f = LLVMGetOperand(entry, 1);
            if !f.is_null() && !LLVMIsAFunction(f).is_null() {
                module_record.init_fini.push(value_name(f));
            }
        }
    }
    module_record
}

/// A call site in instruction order: the instruction, its line, an unused name (csi-cc
/// v1.4.0's), the callee of a direct call.
pub(super) type CallSite = (LLVMValueRef, u32, String, Option<String>);

/// The CFG record of one function and the facts about its blocks that the probes need, read
/// off the function before any change to it.
pub(super) struct FunctionRecord {
    pub(super) cfg: CfgFunction,
    /// Per block: successors and lines.
    pub(super) info: Vec<BlockInfo>,
    /// Each block's first and last node in `cfg.nodes`.
    pub(super) block_first_node: Vec<u32>,
    pub(super) block_last_node: Vec<u32>,
    pub(super) calls: Vec<CallSite>,
    /// The function has an `asm goto` (not path-traced).
    pub(super) has_callbr: bool,
    /// Blocks ending in an indirect branch (computed `goto`).
    pub(super) indirectbr_blocks: Vec<u32>,
    /// Heads of the loops whose iterations path tracing does not store (`number_paths`,
    /// `--csi-pt-loops=elide…`, `paths::elidable_loops`), each with its loop's blocks.
    pub(super) pt_elided: BTreeMap<u32, Vec<u32>>,
    /// Of those, the loops contracted out of the running sum (`--csi-pt-loops=contract`,
    /// `paths::contracted_loops`), each with its loop's blocks.
    pub(super) pt_contracted: BTreeMap<u32, Vec<u32>>,
}

impl FunctionRecord {
    /// Reads the record: a node per run of a block's instructions up to and including a
    /// call site, the edges between them, the def/use sets (`defuse::fill`). `skipped` is
    /// why the function is not instrumented, if it is not.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn read(
        f: LLVMValueRef,
        name: &str,
        fn_file: &str,
        bbs: &[LLVMBasicBlockRef],
        skipped: Option<String>,
        opts: &Options,
        address_taken: &[(LLVMValueRef, String)],
        candidates_of_type: &mut HashMap<LLVMTypeRef, Vec<String>>,
    ) -> FunctionRecord {
        let cfg = CfgFunction {
            csi_cfg: CFG_FORMAT_VERSION,
            address_taken: Some(address_taken.iter().any(|(g, _)| *g == f)),
            optimized: opts.optimized,
            optimized_after: opts.optimized_after,
            // Nodes end where the file changes, but for code instrumented after
            // optimization (see `RecordWalk::block`).
            positions_complete: !opts.optimized,
            inlined: Vec::new(),
            optimized_away_calls: opts
                .before_optimization
                .as_ref()
                .map(|b| b.removed_calls(name, &crate::callgraph::call_counts(f)))
                .unwrap_or_default(),
            unit: Some(opts.source.clone()),
            name: name.to_string(),
            linkage_name: Some(name.to_string()),
            file: if fn_file.is_empty() {
                None
            } else {
                Some(fn_file.to_string())
            },
            is_static: matches!(
                LLVMGetLinkage(f),
                LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
            ),
            path_traced: false,
            pt_skipped: skipped,
            params: None,
            escaped: None,
            cc: None,
            cc_local_len: None,
            cc_local_zeroed_in: None,
            cc_local_by_path: false,
            cc_global_at_return: Vec::new(),
            bbc_global_at_return: Vec::new(),
            bbc_unprobed: Vec::new(),
            cc_unprobed: Vec::new(),
            bbc_local_omitted: Vec::new(),
            switch: None,
            entry_patch: false,
            off_calls: Vec::new(),
            bbc: None,
            entry_from_calls: None,
            fc: None,
            nodes: vec![CfgNode::new(NodeKind::Entry), CfgNode::new(NodeKind::Exit)],
            edges: Vec::new(),
            pt: None,
            pt_runs: false,
            pt_elided: Vec::new(),
            pt_contracted: Vec::new(),
        };
        let mut walk = RecordWalk {
            rec: FunctionRecord {
                cfg,
                info: Vec::with_capacity(bbs.len()),
                block_first_node: Vec::with_capacity(bbs.len()),
                block_last_node: Vec::with_capacity(bbs.len()),
                calls: Vec::new(),
                has_callbr: false,
                indirectbr_blocks: Vec::new(),
                pt_elided: BTreeMap::new(),
                pt_contracted: BTreeMap::new(),
            },
            name,
            fn_file,
            opts,
            index: bbs
                .iter()
                .enumerate()
                .map(|(i, &b)| (b, i as u32))
                .collect(),
            // An exception can leave this function (C functions are all `nounwind`).
            unwinds: !is_nounwind(f),
            address_taken,
            candidates_of_type,
            node_of: HashMap::new(),
            node_insts: Vec::new(),
            scopes: InlinedScopes::default(),
        };
        for (bi, &bb) in bbs.iter().enumerate() {
            walk.block(bi, bb);
        }
        walk.finish(f)
    }
}

/// `FunctionRecord::read` in progress: the record so far, and what its blocks are read with.
struct RecordWalk<'a> {
    rec: FunctionRecord,
    name: &'a str,
    fn_file: &'a str,
    opts: &'a Options,
    index: HashMap<LLVMBasicBlockRef, u32>,
    unwinds: bool,
    address_taken: &'a [(LLVMValueRef, String)],
    candidates_of_type: &'a mut HashMap<LLVMTypeRef, Vec<String>>,
    /// Which node holds each instruction (for the def/use sets).
    node_of: HashMap<LLVMValueRef, u32>,
    /// Instructions of the node being built.
    node_insts: Vec<LLVMValueRef>,
    scopes: InlinedScopes,
}

impl RecordWalk<'_> {
    /// Adds the nodes of block `bi`: one ending at each call site and where the source file
    /// changes, one for the rest (if anything is left after the last call), with their
    /// positions, and the edges between them.
    unsafe fn block(&mut self, bi: usize, bb: LLVMBasicBlockRef) {
        let term = LLVMGetBasicBlockTerminator(bb);
        let mut succs = Vec::new();
        if !term.is_null() {
            match LLVMGetInstructionOpcode(term) {
                LLVMOpcode::LLVMIndirectBr => self.rec.indirectbr_blocks.push(bi as u32),
                LLVMOpcode::LLVMCallBr => self.rec.has_callbr = true,
                _ => {}
            }
            for s in 0..LLVMGetNumSuccessors(term) {
                succs.push(self.index[&LLVMGetSuccessor(term, s)]);
            }
        }
        let is_ret = !term.is_null() && LLVMGetInstructionOpcode(term) == LLVMOpcode::LLVMRet;
        let mut lines = Vec::new();
        let mut node = CfgNode::new(NodeKind::Expression);
        node.block = Some(bi as u32);
        // Source positions of the node's instructions, with their files and scopes.
        let mut pending: Vec<PendingPosition> = Vec::new();
        self.rec
            .block_first_node
            .push(self.rec.cfg.nodes.len() as u32);
        let insts = instructions(bb);
        // A landing pad's bookkeeping (the landingpad, saving the exception and selector)
        // carries the position where the scope ends (its `}`), which no statement of the
        // pad executes: not a position of the pad's node.
        let pad_loc = {
            let first = first_non_phi(bb);
            if !first.is_null() && LLVMGetInstructionOpcode(first) == LLVMOpcode::LLVMLandingPad {
                LLVMInstructionGetDebugLoc(first)
            } else {
                ptr::null_mut()
            }
        };
        for (k, &i) in insts.iter().enumerate() {
            let op = LLVMGetInstructionOpcode(i);
            let uncond = op == LLVMOpcode::LLVMBr && LLVMIsConditional(i) == 0;

            let bookkeeping = !pad_loc.is_null() && LLVMInstructionGetDebugLoc(i) == pad_loc;
            // Every instruction's scope counts for `inlined`, kept position or not.
            let scope = self.scopes.of(i, self.name);
            // An unconditional branch may be no machine instruction (a jump to the next
            // block falls through: the `br` into a `while (1) {` loop) or a real jump:
            // its position is weak — it cannot make its line "must" (see `CfgNode::weak`).
            // The front end's IR (instrumented before optimization) has lifetime markers
            // at every scope's end, on lines (a `}`) that may execute nothing at -O0.
            let no_code = self.opts.optimized_after && intrinsic_without_code(i);
            if let Some((l, col, file)) = loc(i).filter(|_| !bookkeeping && !no_code) {
                // A node's positions are of one file (`settle_positions`): where the block
                // goes on in another file, a node ends and the next begins. Code the
                // always-inliner put here at -O0 (a header's `static inline` helper), or a
                // file `#include`d into a function body, keeps its lines; dropped, a copy
                // that ran would leave the line to copies elsewhere that did not, "never".
                // Not in code instrumented after optimization, where instructions of
                // inlined code interleave: the line projection knows their scopes instead.
                let fn_file = self.fn_file;
                let same_file = |a: &str, b: &str| {
                    (if a.is_empty() { fn_file } else { a })
                        == (if b.is_empty() { fn_file } else { b })
                };
                if !self.opts.optimized && pending.first().is_some_and(|p| !same_file(&p.2, &file))
                {
                    let idx = self.end_node(&mut node, &mut pending, None, bi);
                    self.rec.cfg.edges.push([idx, idx + 1]);
                }
                if !uncond {
                    lines.push(l);
                }
                let anchoring = self.opts.optimized && csi_anchoring_call(i) != 0;
                pending.push((l, col, file, scope, uncond, anchoring));
            }
            // def/use sets are filled by `defuse::fill` once the nodes exist
            self.node_insts.push(i);
            if let Some(callee) = call_site(i) {
                let line = loc(i).map(|x| x.0).unwrap_or(0);
                let (call, direct) =
                    call_record(i, callee, self.address_taken, &mut *self.candidates_of_type);
                node.call = Some(call);
                node.kind = NodeKind::CallSite;
                let anchor = loc(i).map(|x| x.2);
                self.rec.calls.push((i, line, String::new(), direct));
                let idx = self.end_node(&mut node, &mut pending, anchor, bi);
                if k + 1 < insts.len() {
                    self.rec.cfg.edges.push([idx, idx + 1]);
                }
                // An exception the callee throws and this function does not catch leaves
                // it from the call: an exit (an invoke's landing pad is a block edge).
                if LLVMIsAInvokeInst(i).is_null() && self.unwinds && may_unwind(i) {
                    self.rec.cfg.edges.push([idx, 1]);
                }
                continue;
            }
        }
        settle_positions(&mut node, &mut pending, None, self.fn_file);
        if node.positions.is_empty()
            && node.call.is_none()
            && self.rec.cfg.nodes.len() as u32 > self.rec.block_first_node[bi]
        {
            // The block ended right after a call: the call-site node is the last node.
        } else {
            self.rec.cfg.nodes.push(node);
        }
        let last = self.rec.cfg.nodes.len() as u32 - 1;
        for j in self.node_insts.drain(..) {
            self.node_of.insert(j, last);
        }
        self.rec
            .block_last_node
            .push(self.rec.cfg.nodes.len() as u32 - 1);
        let is_resume = !term.is_null() && LLVMGetInstructionOpcode(term) == LLVMOpcode::LLVMResume;
        if succs.is_empty() && (is_ret || is_resume) {
            self.rec
                .cfg
                .edges
                .push([self.rec.cfg.nodes.len() as u32 - 1, 1]);
        }
        self.rec.info.push(BlockInfo { succs, lines });
    }

    /// Ends the node being built (`node`, its `pending` positions; `anchor`: its call's file)
    /// as the record's next node, and starts the next one in block `bi`. Returns the ended
    /// node's index.
    fn end_node(
        &mut self,
        node: &mut CfgNode,
        pending: &mut Vec<PendingPosition>,
        anchor: Option<String>,
        bi: usize,
    ) -> u32 {
        settle_positions(node, pending, anchor, self.fn_file);
        let cfg = &mut self.rec.cfg;
        let idx = cfg.nodes.len() as u32;
        for j in self.node_insts.drain(..) {
            self.node_of.insert(j, idx);
        }
        cfg.nodes
            .push(std::mem::replace(node, CfgNode::new(NodeKind::Expression)));
        node.block = Some(bi as u32);
        idx
    }

    /// Completes the record once every block is read: the inlined scopes, the edges (a
    /// dangling one dropped, the entry's, the blocks'), the def/use sets.
    unsafe fn finish(mut self, f: LLVMValueRef) -> FunctionRecord {
        let rec = &mut self.rec;
        let cfg = &mut rec.cfg;
        cfg.inlined = std::mem::take(&mut self.scopes.names);
        // A node added for a block that ended with a call may have a pending edge to a node
        // that was never created; drop such edges.
        let total = cfg.nodes.len() as u32;
        let nodes = &cfg.nodes;
        cfg.edges.retain(|e| {
            e[1] < total
                && (e[0] + 1 != e[1] || nodes[e[1] as usize].block == nodes[e[0] as usize].block)
        });
        cfg.edges.push([0, rec.block_first_node[0]]);
        crate::defuse::fill(f, &self.node_of, cfg);
        for (bi, b) in rec.info.iter().enumerate() {
            for &s in &b.succs {
                let e = [rec.block_last_node[bi], rec.block_first_node[s as usize]];
                if !cfg.edges.contains(&e) {
                    cfg.edges.push(e);
                }
            }
        }
        self.rec
    }
}

/// The record of call site `i` calling `callee`, and the callee's name if it is a direct
/// call. An indirect call lists the address-taken functions of its type (cached by type in
/// `candidates_of_type`), or past `MAX_LISTED_CANDIDATES` says "any address-taken function".
unsafe fn call_record(
    i: LLVMValueRef,
    callee: LLVMValueRef,
    address_taken: &[(LLVMValueRef, String)],
    candidates_of_type: &mut HashMap<LLVMTypeRef, Vec<String>>,
) -> (CfgCall, Option<String>) {
    let direct = if LLVMIsAFunction(callee).is_null() {
        None
    } else {
        Some(value_name(callee))
    };
    let call = match &direct {
        Some(n) => CfgCall {
            callee: Some(n.clone()),
            ..Default::default()
        },
        None => {
            let fty = LLVMGetCalledFunctionType(i);
            let candidates = candidates_of_type.entry(fty).or_insert_with(|| {
                address_taken
                    .iter()
                    .filter(|(g, _)| LLVMGlobalGetValueType(*g) == fty)
                    .map(|(_, n)| n.clone())
                    .collect()
            });
            // A virtual call in a test suite can have thousands of candidates;
            // listed at every call site they made one unit's metadata larger
            // than the assembler takes (yaml-cpp's gen_emitter_test). Past a
            // few, "any address-taken function" says the same, soundly.
            let many = candidates.len() > MAX_LISTED_CANDIDATES;
            CfgCall {
                callee: None,
                indirect: true,
                candidates: if many { Vec::new() } else { candidates.clone() },
                any_address_taken: many,
                ..Default::default()
            }
        }
    };
    (call, direct)
}
