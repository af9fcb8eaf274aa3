//! The instrumentation of one LLVM module (bitcode in, bitcode out), over the LLVM C API.
//!
//! Per function, by scheme: Ball–Larus path tracing (numbering from `csi_model::ballarus`, the
//! same code the decoder uses), call-site / basic-block / function coverage. Runtime variables
//! and their DWARF names follow csi-cc v1.4.0 (DESIGN §4); metadata sections are written as
//! non-allocated ELF sections through module-level assembly.

use csi_model::ballarus::{self, Numbering};
use csi_model::graph::NodeKind;
use csi_model::sections::{
    mash, BbcBlock, BbcFunction, CcFunction, CcSite, CfgCall, CfgFunction, CfgImplied, CfgModule,
    CfgNode, CfgPathTracing, FcFunction, PtBlock, PtBlockKind, PtFunction, PtItem, BODY_SUFFIX,
    CFG_FORMAT_VERSION, REPLICA_SUFFIX,
};
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate, LLVMLinkage, LLVMOpcode};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::ptr;

mod calls;
mod checked;
mod coverage;
mod hoist;
mod paths;
mod records;
mod sections;

use calls::*;
use coverage::*;
use paths::*;
use records::*;
use sections::*;

extern "C" {
    fn csi_split_critical_edge(term: LLVMValueRef, succ: u32) -> LLVMBasicBlockRef;
    fn csi_split_if_then(
        cond: LLVMValueRef,
        before: LLVMValueRef,
        unlikely: std::ffi::c_int,
    ) -> LLVMValueRef;
    fn csi_clone_function(f: LLVMValueRef, name: *const std::ffi::c_char) -> LLVMValueRef;
    fn csi_add_springboard(
        f: LLVMValueRef,
        off: LLVMValueRef,
        switch: LLVMValueRef,
        may_move_body: std::ffi::c_int,
    ) -> LLVMValueRef;
    fn csi_dispatch_call(
        call: LLVMValueRef,
        switch: LLVMValueRef,
        on: LLVMValueRef,
        off: LLVMValueRef,
        scope: LLVMMetadataRef,
    ) -> std::ffi::c_int;
    fn csi_dispatch_scope(on: LLVMValueRef) -> LLVMMetadataRef;
    fn csi_entry_alias(
        f: LLVMValueRef,
        on: LLVMValueRef,
        off: LLVMValueRef,
        switch: LLVMValueRef,
    ) -> LLVMValueRef;
    fn csi_add_global_to_cu(m: LLVMModuleRef, gve: LLVMMetadataRef) -> i32;
    fn csi_peel_probed_loops(
        f: LLVMValueRef,
        probes: *mut LLVMValueRef,
        keys: *const u32,
        n: u32,
        max_size: u32,
    ) -> u32;
    fn csi_dedicate_landing_pads(f: LLVMValueRef) -> i32;
    fn csi_stub_body(f: LLVMValueRef);
    fn csi_first_insertion_pt(bb: LLVMBasicBlockRef) -> LLVMValueRef;
    fn csi_comdat_name(f: LLVMValueRef, len: *mut usize) -> *const std::ffi::c_char;
    fn csi_anchoring_call(i: LLVMValueRef) -> i32;
    fn csi_loc_subprogram(i: LLVMValueRef, len: *mut usize) -> *const std::ffi::c_char;
    fn csi_link_runtime(
        dest: LLVMModuleRef,
        src: LLVMModuleRef,
        init: *const std::ffi::c_char,
        fini: *const std::ffi::c_char,
    ) -> i32;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mechanisms {
    pub pt: bool,
    pub cc: bool,
    pub bbc: bool,
    pub fc: bool,
}

impl Mechanisms {
    pub fn from_scheme(s: &str) -> Option<Self> {
        let (pt, cc, bbc, fc) = match s {
            // `custom`: realistic's, every function switchable (`Options::switchable`).
            "realistic" | "custom" => (true, true, false, false),
            "pt" => (true, false, false, false),
            "cc" => (false, true, false, false),
            "bb" => (false, false, true, false),
            "fc" => (false, false, false, true),
            "all" => (true, true, true, true),
            "none" => (false, false, false, false),
            _ => return None,
        };
        Some(Mechanisms { pt, cc, bbc, fc })
    }

    /// `{CC,PT}` / `{BBC}` / `{}` of a schema file line.
    pub fn from_set(s: &str) -> Option<Self> {
        let inner = s.trim().strip_prefix('{')?.strip_suffix('}')?;
        let mut m = Mechanisms::default();
        for t in inner.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t {
                "PT" => m.pt = true,
                "CC" => m.cc = true,
                "BBC" | "SC" | "BB" => m.bbc = true,
                "FC" => m.fc = true,
                _ => return None,
            }
        }
        Some(m)
    }
}

/// Where a probe on a cycle that also stores into a local array sets its global slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalStores {
    /// Where it runs: two stores per probe and loop iteration.
    InPlace,
    /// The loop's exits copy the local bit into the global slot
    /// (`CfgFunction::cc_global_at_return`, `bbc_global_at_return`): one store per probe and
    /// iteration. Only in loops whose every call comes back (`comes_back`: the unit's own
    /// functions no `longjmp` passes through, intrinsics, pure C library functions): an
    /// activation that a `longjmp` ends inside a loop (Lua's errors and coroutines) never
    /// leaves it through an exit, and its global bits would be lost. The default.
    Auto,
    /// As `Auto` in every loop, trusting the program never to `longjmp` (or cancel a thread)
    /// out of one (opt-in).
    AllLoops,
}

/// `--csi-pt-loops`: what path tracing stores of a loop's iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtLoops {
    /// Every iteration ends a path, which the ring stores (the dissertation's).
    Store,
    /// In a loop that some iteration can go round without a call (calls to the unit's inline
    /// functions aside, which the optimizer inlines), the back edges only restart the sum: no
    /// iteration is stored, nor anything on entry. Where every iteration calls, the store is
    /// small beside the call, and a crash in a callee keeps the caller's earlier iterations.
    Elide,
    /// As `Elide`, in innermost loops without any call only.
    ElideInnermost,
    /// As `ElideInnermost`, but the edges entering the loop end a path, which is stored: the
    /// path up to the loop survives any number of iterations, for a store per entry into it.
    ElideAfterEntry,
    /// As `Elide`, in every natural loop: loops whose every iteration calls as well (a crash
    /// in a callee then knows the caller's path from the head of the loop's last iteration).
    ElideAll,
    /// `Elide`'s loops, contracted out of the running sum where no loop inside them stores
    /// its iterations: no edge inside the loop changes the sum and its back edges do nothing
    /// (no store per iteration at all), an edge leaving it adds a fixed route's increments
    /// (`paths::contracted_loops`, the record's `pt_contracted`). The path up to the loop
    /// survives it; which way the iterations went is not known.
    Contract,
}

pub struct Options {
    pub default: Mechanisms,
    pub per_function: HashMap<String, Mechanisms>,
    pub pt_size: u32,
    /// `--csi-pt-repeats=once`: where the ring index is kept in a register (optimized builds,
    /// no `setjmp`), a completed path equal to the one stored last is not stored again (see
    /// `PathState::store_path`; the record's `pt_runs`).
    pub pt_repeats_once: bool,
    /// `--csi-pt-loops`: which loops store a path per iteration (`paths::elidable_loops`;
    /// the record's `pt_elided`).
    pub pt_loops: PtLoops,
    /// Probe every call site (no placement optimization; see `cc_probe_placement`).
    pub cc_all_probes: bool,
    /// Probe every basic block (no placement; see `BlockGraph::coverage_probes`). Text
    /// metadata (csi-cc v1.4.0's tools read `.debug_BBC`, which cannot say a slot is implied)
    /// probes every block as well.
    pub bb_all_probes: bool,
    /// `--csi-bb-probes=calls` (the default): a static function of one block gets no block
    /// probe when its callers' blocks say whether it ran (`entries_known_from_calls`). The
    /// reader needs every activation in progress for it: a core's threads, or the exit stack
    /// a passing run's coverage file holds (runtime/coverage_out.c); without one the
    /// function is unknown where its caller's block ran.
    pub bb_from_calls: bool,
    /// Block visits per function for the locally minimal local block probes of functions
    /// without cycles (`BlockGraph::path_local_probes`); 0 keeps the dominator placement's.
    pub bb_local_budget: usize,
    /// `--csi-global-stores`: where probes on a cycle store their global bit.
    pub global_stores: GlobalStores,
    /// `--csi-scheme=custom`: every instrumented function gets an uninstrumented replica and a
    /// switch byte that picks one of the two at each call (the dissertation's ch. 3; see
    /// `Unit::make_switchable`).
    pub switchable: bool,
    /// `--csi-metadata=zstd`: write `.debug_CSI_CFG` only, each piece zstd-compressed (see
    /// `write_sections`); else all five sections as text.
    pub compress_metadata: bool,
    /// `--csi-probe-stores=checked` for a unit whose instrumented module is the code as it
    /// will run (not optimized afterwards): check the probes' global stores before writing it
    /// (`checked::check_probe_stores`; a unit optimized after instrumentation is checked after
    /// the pipeline, `post_optimization_file`).
    pub check_stores: bool,
    /// `--csi-probe-hoisting=loops` for a unit whose instrumented module is optimized code as
    /// it will run: move loop heads' probe stores to the loops' entries before writing it
    /// (`hoist::hoist_probe_stores`; a unit optimized after instrumentation is hoisted after
    /// the pipeline, `post_optimization_file`).
    pub hoist_stores: bool,
    /// `--csi-probe-hoisting=peel` (with `hoist_stores`): small loops whose every iteration
    /// repeats a probe's store lose their first iteration to a copy, so that the rest repeat
    /// nothing (`hoist::peel_probed_loops`).
    pub peel_loops: bool,
    /// `--csi-probe-merging=words` for a unit whose instrumented module is optimized code as
    /// it will run (`hoist::merge_frame_stores`).
    pub merge_stores: bool,
    /// The source path as given on the command line (for `<mash>`).
    pub source: String,
    /// Compiled with optimization (-O1 and up): debug lines of moved or folded code are
    /// approximate, which the line projection must know.
    pub optimized: bool,
    /// Instrumented before the optimization pipeline, which runs afterwards over program and
    /// probes (`--csi-instrument=before-optimization`): the CFG is the source's, but the
    /// machine code's lines may have moved (see `CfgFunction::optimized_after`).
    pub optimized_after: bool,
    /// The unit's call graph before optimization (optimized units; see `callgraph`).
    pub before_optimization: Option<crate::callgraph::UnitCalls>,
}

/// Outcome of instrumenting one module.
pub struct Report {
    pub pt_skipped: Vec<(String, String)>,
    /// Functions compiled without instrumentation, and why (see `instrument_file`).
    pub uninstrumented: Vec<(String, String)>,
    /// Some function got a shadow alloca for `mem2reg` (see `RingIndex`).
    pub shadows: bool,
    /// Probe stores moved out of loops and dropped as repeats (`Options::hoist_stores`).
    pub hoisted: Hoisted,
}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap()
}

pub(crate) unsafe fn value_name(v: LLVMValueRef) -> String {
    let mut len = 0usize;
    let p = LLVMGetValueName2(v, &mut len);
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
}

pub(crate) unsafe fn instructions(bb: LLVMBasicBlockRef) -> Vec<LLVMValueRef> {
    let mut v = Vec::new();
    let mut i = LLVMGetFirstInstruction(bb);
    while !i.is_null() {
        v.push(i);
        i = LLVMGetNextInstruction(i);
    }
    v
}

/// Every function of the module that has a body, with its blocks — `available_externally`
/// copies too, unlike [`defined_functions`]: the passes over the code as it will run treat
/// whatever will be compiled (none of them adds or removes functions).
pub(crate) unsafe fn function_bodies(
    m: LLVMModuleRef,
) -> Vec<(LLVMValueRef, Vec<LLVMBasicBlockRef>)> {
    let mut v = Vec::new();
    let mut f = LLVMGetFirstFunction(m);
    while !f.is_null() {
        let bbs = blocks(f);
        if !bbs.is_empty() {
            v.push((f, bbs));
        }
        f = LLVMGetNextFunction(f);
    }
    v
}

pub(crate) unsafe fn blocks(f: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    let mut v = Vec::new();
    let mut b = LLVMGetFirstBasicBlock(f);
    while !b.is_null() {
        v.push(b);
        b = LLVMGetNextBasicBlock(b);
    }
    v
}

/// A call or invoke (C++: a call that may throw into a landing pad) — a call instruction.
pub(crate) unsafe fn is_call(i: LLVMValueRef) -> bool {
    !LLVMIsACallInst(i).is_null() || !LLVMIsAInvokeInst(i).is_null()
}

/// A call that counts as a call site: not an intrinsic, not inline assembly. An `invoke` is
/// one too; it ends its block, and the call returns into its normal destination.
pub(crate) unsafe fn call_site(i: LLVMValueRef) -> Option<LLVMValueRef> {
    if !is_call(i) {
        return None;
    }
    let callee = LLVMGetCalledValue(i);
    if !LLVMIsAInlineAsm(callee).is_null() {
        return None;
    }
    if !LLVMIsAFunction(callee).is_null() && LLVMGetIntrinsicID(callee) != 0 {
        return None;
    }
    Some(callee)
}

pub(crate) unsafe fn loc(i: LLVMValueRef) -> Option<(u32, u32, String)> {
    let md = LLVMInstructionGetDebugLoc(i);
    if md.is_null() {
        return None;
    }
    let line = LLVMDILocationGetLine(md);
    if line == 0 {
        return None;
    }
    let col = LLVMDILocationGetColumn(md);
    Some((line, col, scope_file_path(LLVMDILocationGetScope(md))))
}

/// The file of a debug-info scope (a subprogram, a lexical block); empty without one.
pub(crate) unsafe fn scope_file_path(scope: LLVMMetadataRef) -> String {
    if scope.is_null() {
        String::new()
    } else {
        di_file_path(LLVMDIScopeGetFile(scope))
    }
}

pub(crate) unsafe fn di_file_path(file: LLVMMetadataRef) -> String {
    if file.is_null() {
        return String::new();
    }
    let mut n = 0u32;
    let p = LLVMDIFileGetFilename(file, &mut n);
    let name = if p.is_null() {
        String::new()
    } else {
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, n as usize)).into_owned()
    };
    let mut d = 0u32;
    let q = LLVMDIFileGetDirectory(file, &mut d);
    let dir = if q.is_null() {
        String::new()
    } else {
        String::from_utf8_lossy(std::slice::from_raw_parts(q as *const u8, d as usize)).into_owned()
    };
    if name.starts_with('/') || dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

struct Ctx {
    ctx: LLVMContextRef,
    module: LLVMModuleRef,
    builder: LLVMBuilderRef,
    dib: LLVMDIBuilderRef,
    i8t: LLVMTypeRef,
    i64t: LLVMTypeRef,
    /// Instrumented before optimization: every frame-state local escapes (see `local_parts`).
    escape_locals: bool,
}

impl Ctx {
    unsafe fn gep(&self, ty: LLVMTypeRef, base: LLVMValueRef, idx: LLVMValueRef) -> LLVMValueRef {
        let mut idxs = [LLVMConstInt(self.i64t, 0, 0), idx];
        LLVMBuildInBoundsGEP2(self.builder, ty, base, idxs.as_mut_ptr(), 2, c"".as_ptr())
    }

    unsafe fn vstore(&self, val: LLVMValueRef, p: LLVMValueRef) {
        let s = LLVMBuildStore(self.builder, val, p);
        LLVMSetVolatile(s, 1);
    }

    unsafe fn vload(&self, ty: LLVMTypeRef, p: LLVMValueRef) -> LLVMValueRef {
        let l = LLVMBuildLoad2(self.builder, ty, p, c"".as_ptr());
        LLVMSetVolatile(l, 1);
        l
    }

    /// `len` zero bytes at `p` (8-aligned) as one volatile `llvm.memset`, which the backend
    /// lowers to the widest stores available (16-byte vector stores on x86-64).
    unsafe fn vmemset0(&self, p: LLVMValueRef, len: u64) {
        let name = "llvm.memset";
        let id = LLVMLookupIntrinsicID(name.as_ptr() as _, name.len());
        let mut tys = [LLVMTypeOf(p), self.i64t];
        let decl = LLVMGetIntrinsicDeclaration(self.module, id, tys.as_mut_ptr(), 2);
        let fty = LLVMIntrinsicGetType(self.ctx, id, tys.as_mut_ptr(), 2);
        let mut args = [
            p,
            LLVMConstInt(self.i8t, 0, 0),
            LLVMConstInt(self.i64t, len, 0),
            LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 1, 0),
        ];
        let call = LLVMBuildCall2(self.builder, fty, decl, args.as_mut_ptr(), 4, c"".as_ptr());
        // Destination alignment 8 (the allocas are 8-aligned).
        let kind = LLVMGetEnumAttributeKindForName(c"align".as_ptr(), 5);
        let attr = LLVMCreateEnumAttribute(self.ctx, kind, 8);
        LLVMAddCallSiteAttribute(call, 1, attr);
    }

    unsafe fn i32t(&self) -> LLVMTypeRef {
        LLVMInt32TypeInContext(self.ctx)
    }

    /// A private constant array of the `slots` (u32), for `__csi_rt_copy` (`slot_list`).
    unsafe fn slot_list(&self, slots: &[u64]) -> LLVMValueRef {
        slot_list(self.module, slots)
    }

    /// `__csi_rt_copy(slots, n, local, global)` (runtime/coverage_out.c): copies the set
    /// local bits of the listed slots into the global array; nonzero when every listed global
    /// byte is set.
    unsafe fn call_rt_copy(
        &self,
        slots: LLVMValueRef,
        n: u64,
        local: LLVMValueRef,
        global: LLVMValueRef,
    ) -> LLVMValueRef {
        let ptr = LLVMPointerTypeInContext(self.ctx, 0);
        let mut params = [ptr, self.i32t(), ptr, ptr];
        let fty = LLVMFunctionType(self.i32t(), params.as_mut_ptr(), 4, 0);
        let name = c"__csi_rt_copy";
        let mut f = LLVMGetNamedFunction(self.module, name.as_ptr());
        if f.is_null() {
            f = LLVMAddFunction(self.module, name.as_ptr(), fty);
        }
        let mut args = [slots, LLVMConstInt(self.i32t(), n, 0), local, global];
        LLVMBuildCall2(self.builder, fty, f, args.as_mut_ptr(), 4, c"".as_ptr())
    }

    unsafe fn position_before(&self, i: LLVMValueRef) {
        LLVMPositionBuilderBefore(self.builder, i);
    }

    /// First instruction that is not a PHI or a landingpad (instrumentation of an unwind
    /// edge goes after the pad's landingpad).
    unsafe fn first_insertion(&self, bb: LLVMBasicBlockRef) -> LLVMValueRef {
        csi_first_insertion_pt(bb)
    }

    unsafe fn basic_type(&self, name: &str, bits: u64, enc: u32) -> LLVMMetadataRef {
        LLVMDIBuilderCreateBasicType(self.dib, name.as_ptr() as _, name.len(), bits, enc, 0)
    }

    unsafe fn volatile_array(&self, elem: LLVMMetadataRef, bits: u64, n: u64) -> LLVMMetadataRef {
        let mut sub = [LLVMDIBuilderGetOrCreateSubrange(self.dib, 0, n as i64)];
        let arr = LLVMDIBuilderCreateArrayType(self.dib, bits * n, 8, elem, sub.as_mut_ptr(), 1);
        LLVMDIBuilderCreateQualifiedType(self.dib, 0x35, arr)
    }

    /// Declares a local with DWARF info (`name`) at the start of the function.
    unsafe fn local(
        &self,
        f: LLVMValueRef,
        sp: LLVMMetadataRef,
        ty: LLVMTypeRef,
        align: u32,
        name: &str,
        di_ty: LLVMMetadataRef,
    ) -> LLVMValueRef {
        self.local_parts(f, sp, ty, align, name, &[(name, di_ty, 0)])
    }

    /// One alloca (`ty`, named `alloca_name`) holding several DWARF-described locals, each
    /// `(name, type, byte offset)`: adjacent variables that one wide store can initialise.
    unsafe fn local_parts(
        &self,
        f: LLVMValueRef,
        sp: LLVMMetadataRef,
        ty: LLVMTypeRef,
        align: u32,
        alloca_name: &str,
        parts: &[(&str, LLVMMetadataRef, u64)],
    ) -> LLVMValueRef {
        let entry = LLVMGetEntryBasicBlock(f);
        let first = LLVMGetFirstInstruction(entry);
        self.position_before(first);
        let a = LLVMBuildAlloca(self.builder, ty, cstr(alloca_name).as_ptr());
        LLVMSetAlignment(a, align);
        if self.escape_locals {
            // Optimized after instrumentation, SROA would split the frame state into
            // scalars (volatile accesses and all) that DWARF describes piece by piece, some
            // pieces "optimized out": the core would not show the state whole. An empty asm
            // taking its address keeps it one object in memory. Its operand is the object in
            // memory (`*m`), not its address in a register (`r`), which cost an `lea` per
            // local at every call.
            self.position_before(after_allocas(entry));
            let ptr_ty = LLVMTypeOf(a);
            let mut params = [ptr_ty];
            let fn_ty =
                LLVMFunctionType(LLVMVoidTypeInContext(self.ctx), params.as_mut_ptr(), 1, 0);
            let (text, constraints) = ("", "*m");
            let asm = LLVMGetInlineAsm(
                fn_ty,
                text.as_ptr() as _,
                text.len(),
                constraints.as_ptr() as _,
                constraints.len(),
                1,
                0,
                llvm_sys::LLVMInlineAsmDialect::LLVMInlineAsmDialectATT,
                0,
            );
            let mut args = [a];
            let call = LLVMBuildCall2(self.builder, fn_ty, asm, args.as_mut_ptr(), 1, c"".as_ptr());
            // An indirect memory operand names the type it points to.
            let name = c"elementtype";
            let kind = LLVMGetEnumAttributeKindForName(name.as_ptr(), name.count_bytes());
            let attr = LLVMCreateTypeAttribute(self.ctx, kind, ty);
            LLVMAddCallSiteAttribute(call, 1, attr);
            // It touches nothing but the object (`memory(argmem: readwrite)`, LLVM's
            // `MemoryEffects` encoding: ModRef in the argument-memory bits): without it the
            // asm is a call that may write any memory, and every inlined copy's entry would
            // keep the optimizer from moving loads across it.
            let name = c"memory";
            let kind = LLVMGetEnumAttributeKindForName(name.as_ptr(), name.count_bytes());
            let attr = LLVMCreateEnumAttribute(self.ctx, kind, 3);
            LLVMAddCallSiteAttribute(call, llvm_sys::LLVMAttributeFunctionIndex, attr);
        }
        if sp.is_null() {
            return a;
        }
        let file = LLVMDIScopeGetFile(sp);
        let line = LLVMDISubprogramGetLine(sp);
        for &(name, di_ty, offset) in parts {
            let var = LLVMDIBuilderCreateAutoVariable(
                self.dib,
                sp,
                name.as_ptr() as _,
                name.len(),
                file,
                line,
                di_ty,
                1,
                0,
                0,
            );
            const DW_OP_PLUS_UCONST: u64 = 0x23;
            let mut ops = [DW_OP_PLUS_UCONST, offset];
            let expr = if offset == 0 {
                LLVMDIBuilderCreateExpression(self.dib, ptr::null_mut(), 0)
            } else {
                LLVMDIBuilderCreateExpression(self.dib, ops.as_mut_ptr(), 2)
            };
            let dl = LLVMDIBuilderCreateDebugLocation(self.ctx, line, 0, sp, ptr::null_mut());
            let next = LLVMGetNextInstruction(a);
            LLVMDIBuilderInsertDeclareRecordBefore(self.dib, a, var, expr, dl, next);
        }
        a
    }

    /// A zero-initialised internal global `[n x i8]` with DWARF info, for function `f`: in
    /// `f`'s COMDAT group if it has one, so that the linker keeps the copy the kept code uses.
    /// With `odr_group` (a COMDAT function instrumented before optimization, see
    /// `Unit::function`) it is instead one hidden `weak_odr` global of that group, shared by every
    /// unit: inlined copies in any unit update it, whichever unit's group the linker keeps.
    /// A new global of type `ty` in the coverage section, linked as `f`'s coverage data: in
    /// the COMDAT group `odr_group` (weak_odr, hidden) when given, else internal, in `f`'s
    /// COMDAT if it has one.
    unsafe fn coverage_global(
        &self,
        name: &str,
        ty: LLVMTypeRef,
        f: LLVMValueRef,
        odr_group: Option<&str>,
    ) -> LLVMValueRef {
        let g = LLVMAddGlobal(self.module, ty, cstr(name).as_ptr());
        if let Some(group) = odr_group {
            LLVMSetLinkage(g, LLVMLinkage::LLVMWeakODRLinkage);
            LLVMSetVisibility(g, llvm_sys::LLVMVisibility::LLVMHiddenVisibility);
            let comdat = llvm_sys::comdat::LLVMGetOrInsertComdat(self.module, cstr(group).as_ptr());
            llvm_sys::comdat::LLVMSetComdat(g, comdat);
        } else {
            LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
            let comdat = llvm_sys::comdat::LLVMGetComdat(f);
            if !comdat.is_null() {
                llvm_sys::comdat::LLVMSetComdat(g, comdat);
            }
        }
        LLVMSetAlignment(g, 1);
        LLVMSetSection(g, cstr(COVERAGE_SECTION).as_ptr());
        g
    }

    /// A global coverage array of `n` slots, followed by `flags` bytes (`LoopExitCopies`'s flags)
    /// and, when there are any, padded to whole 8-byte words (which its check reads; DWARF
    /// still says `n`).
    unsafe fn global(
        &self,
        name: &str,
        n: u64,
        flags: u64,
        sp: LLVMMetadataRef,
        f: LLVMValueRef,
        odr_group: Option<&str>,
    ) -> (LLVMValueRef, LLVMTypeRef) {
        let len = match flags {
            0 => n,
            _ => (n + flags).div_ceil(8) * 8,
        };
        let ty = LLVMArrayType2(self.i8t, len);
        let g = self.coverage_global(name, ty, f, odr_group);
        LLVMSetInitializer(g, LLVMConstNull(ty));
        if !sp.is_null() {
            let file = LLVMDIScopeGetFile(sp);
            let b = self.basic_type("__csi_bool", 8, 0x02);
            let dty = self.volatile_array(b, 8, n);
            let expr = LLVMDIBuilderCreateExpression(self.dib, ptr::null_mut(), 0);
            let cu_scope = file;
            let gve = LLVMDIBuilderCreateGlobalVariableExpression(
                self.dib,
                cu_scope,
                name.as_ptr() as _,
                name.len(),
                name.as_ptr() as _,
                name.len(),
                file,
                0,
                dty,
                1,
                expr,
                ptr::null_mut(),
                8,
            );
            let kind = LLVMGetMDKindIDInContext(self.ctx, c"dbg".as_ptr(), 3);
            LLVMGlobalSetMetadata(g, kind, gve);
            csi_add_global_to_cu(self.module, gve);
        }
        (g, ty)
    }
}

/// Reads the bitcode file `path` into a new context: (context, module), both the caller's to
/// dispose.
pub(crate) unsafe fn read_bitcode(path: &str) -> Result<(LLVMContextRef, LLVMModuleRef), String> {
    let ctx = LLVMContextCreate();
    let mut buf = ptr::null_mut();
    let mut msg = ptr::null_mut();
    if LLVMCreateMemoryBufferWithContentsOfFile(cstr(path).as_ptr(), &mut buf, &mut msg) != 0 {
        let m = CStr::from_ptr(msg).to_string_lossy().into_owned();
        LLVMDisposeMessage(msg);
        LLVMContextDispose(ctx);
        return Err(format!("cannot read {path}: {m}"));
    }
    let mut module = ptr::null_mut();
    if llvm_sys::bit_reader::LLVMParseBitcodeInContext2(ctx, buf, &mut module) != 0 {
        LLVMDisposeMemoryBuffer(buf);
        LLVMContextDispose(ctx);
        return Err(format!("cannot parse bitcode {path}"));
    }
    LLVMDisposeMemoryBuffer(buf);
    Ok((ctx, module))
}

pub use checked::{post_optimization_file, PostOptimization};
pub use hoist::Hoisted;

/// Instruments the module in `bc_in`, writes `bc_out`. Returns what was skipped.
///
/// A function csi-cc cannot instrument (an internal limit, or instrumented IR that does not
/// verify) is compiled without instrumentation instead: the module is read again and
/// instrumented with that function left as it is, its CFG record saying why
/// (`pt_skipped`, no coverage), until every function is done.
pub fn instrument_file(bc_in: &str, bc_out: &str, opts: &Options) -> Result<Report, String> {
    let mut skip: BTreeMap<String, String> = BTreeMap::new();
    loop {
        match instrument_attempt(bc_in, bc_out, opts, &skip)? {
            Ok(mut report) => {
                report.uninstrumented = skip.into_iter().collect();
                return Ok(report);
            }
            Err((f, why)) => {
                if skip.insert(f.clone(), why).is_some() {
                    return Err(format!("`{f}` cannot be compiled even uninstrumented"));
                }
            }
        }
    }
}

thread_local! {
    /// The function being instrumented, for a panic's fallback (see `instrument_attempt`).
    static CURRENT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    static PANIC_MESSAGE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A function that could not be instrumented, and why.
type Unsupported = (String, String);

/// One pass over the module with the functions of `skip` left uninstrumented. The outer
/// `Err` is a failure of the file; the inner one names a function to leave alone.
fn instrument_attempt(
    bc_in: &str,
    bc_out: &str,
    opts: &Options,
    skip: &BTreeMap<String, String>,
) -> Result<Result<Report, Unsupported>, String> {
    unsafe {
        let (ctx, module) = read_bitcode(bc_in)?;
        LLVMSetIsNewDbgInfoFormat(module, 1);
        let c = Ctx {
            ctx,
            module,
            builder: LLVMCreateBuilderInContext(ctx),
            dib: LLVMCreateDIBuilder(module),
            i8t: LLVMInt8TypeInContext(ctx),
            i64t: LLVMInt64TypeInContext(ctx),
            escape_locals: opts.optimized_after,
        };
        // An invariant broken by input csi-cc does not know (a bug, not the user's) costs that
        // function its instrumentation, not the build: the panic is caught, its message kept.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| {
            PANIC_MESSAGE.with(|m| *m.borrow_mut() = info.to_string());
        }));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            instrument_module(&c, opts, skip)
        }));
        std::panic::set_hook(hook);
        let outcome = outcome.unwrap_or_else(|_| {
            Err((
                CURRENT.with(|f| f.borrow().clone()),
                PANIC_MESSAGE.with(|m| m.borrow().clone()),
            ))
        });
        let report = match outcome {
            Ok(r) => r,
            Err(unsupported) => {
                LLVMDisposeDIBuilder(c.dib);
                LLVMDisposeBuilder(c.builder);
                LLVMDisposeModule(module);
                LLVMContextDispose(ctx);
                return Ok(Err(unsupported));
            }
        };
        LLVMDIBuilderFinalize(c.dib);
        // Instrumented before optimization, the pipeline promotes the shadows (and the rest).
        if report.shadows && !opts.optimized_after {
            promote_shadows(module)?;
        }
        LLVMDisposeDIBuilder(c.dib);
        LLVMDisposeBuilder(c.builder);
        link_coverage_runtime(ctx, module)?;
        let mut err = ptr::null_mut();
        if llvm_sys::analysis::LLVMVerifyModule(
            module,
            llvm_sys::analysis::LLVMVerifierFailureAction::LLVMReturnStatusAction,
            &mut err,
        ) != 0
        {
            let m = CStr::from_ptr(err).to_string_lossy().into_owned();
            LLVMDisposeMessage(err);
            return Err(format!("instrumented module does not verify: {m}"));
        }
        if !err.is_null() {
            LLVMDisposeMessage(err);
        }
        let mut hoisted = if opts.hoist_stores {
            hoist::hoist_probe_stores(ctx, module, opts.peel_loops)?
        } else {
            Default::default()
        };
        if opts.check_stores {
            checked::check_probe_stores(ctx, module);
        }
        if opts.merge_stores {
            hoisted.merged = hoist::merge_frame_stores(ctx, module);
        }
        if llvm_sys::bit_writer::LLVMWriteBitcodeToFile(module, cstr(bc_out).as_ptr()) != 0 {
            return Err(format!("cannot write {bc_out}"));
        }
        LLVMDisposeModule(module);
        LLVMContextDispose(ctx);
        Ok(Ok(Report { hoisted, ..report }))
    }
}

/// The runtime that writes coverage of runs that do not crash (runtime/coverage_out.c, see
/// there), compiled to bitcode by build.rs.
static COVERAGE_RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/coverage_out.bc"));

/// The section every coverage array is placed in: the runtime writes the whole of it (its
/// `__start_`/`__stop_` bounds are per linked module).
pub const COVERAGE_SECTION: &str = "csi_cov";

/// Links the coverage runtime into `module` when the unit has coverage arrays (one copy per
/// linked module survives: see `csi_link_runtime` in shim.cpp). A unit for another target
/// than the runtime's is left without it (its arrays are still read from cores).
unsafe fn link_coverage_runtime(ctx: LLVMContextRef, module: LLVMModuleRef) -> Result<(), String> {
    let mut g = LLVMGetFirstGlobal(module);
    let mut any = false;
    while !g.is_null() && !any {
        let s = LLVMGetSection(g);
        any = !s.is_null() && CStr::from_ptr(s).to_bytes() == COVERAGE_SECTION.as_bytes();
        g = LLVMGetNextGlobal(g);
    }
    if !any {
        return Ok(());
    }
    let buf = LLVMCreateMemoryBufferWithMemoryRange(
        COVERAGE_RUNTIME.as_ptr() as *const _,
        COVERAGE_RUNTIME.len(),
        c"coverage_out.bc".as_ptr(),
        0,
    );
    let mut rt = ptr::null_mut();
    let failed = llvm_sys::bit_reader::LLVMParseBitcodeInContext2(ctx, buf, &mut rt) != 0;
    LLVMDisposeMemoryBuffer(buf);
    if failed {
        return Err("cannot parse csi-cc's coverage runtime (a build problem of csi-cc)".into());
    }
    match csi_link_runtime(
        module,
        rt,
        c"__csi_rt_init".as_ptr(),
        c"__csi_rt_fini".as_ptr(),
    ) {
        0 | 1 => Ok(()),
        e => Err(format!(
            "cannot link csi-cc's coverage runtime into the unit ({e})"
        )),
    }
}

/// Instruments every defined function of the module (see `Unit::function`), then appends the
/// metadata sections: the functions' records by section group, and the module record.
unsafe fn instrument_module(
    c: &Ctx,
    opts: &Options,
    skip: &BTreeMap<String, String>,
) -> Result<Report, Unsupported> {
    let funcs = defined_functions(c.module);
    let address_taken = address_taken_functions(c.module, opts);
    let module_record = module_record(c.module, opts, &address_taken);
    let no_longjmp_through = no_longjmp_through(&funcs);
    let mut unit = Unit {
        entries_from_calls: HashMap::new(),
        no_longjmp_through,
        c,
        opts,
        skip,
        unit_mash: mash(&opts.source),
        address_taken,
        candidates_of_type: HashMap::new(),
        pt_base: 0,
        replicas: Vec::new(),
        record: 0,
        report: Report {
            pt_skipped: Vec::new(),
            uninstrumented: Vec::new(),
            shadows: false,
            hoisted: Hoisted::default(),
        },
    };
    // Not for v1.4.0's readers (text metadata: they read every slot), nor in customizable
    // builds (a switched-off caller calls the replica).
    if opts.compress_metadata && !opts.switchable {
        let set = &unit.no_longjmp_through;
        unit.entries_from_calls = entries_known_from_calls(
            &funcs,
            &|f| unit.mechanisms(f),
            &|f| {
                let m = unit.mechanisms(f);
                let bbs = blocks(f);
                !has_returns_twice_call(&bbs)
                    && ((m.bbc && opts.bb_from_calls && one_block(&bbs))
                        || (m.cc && entry_calls_come_back(&bbs, set)))
            },
            set,
        );
    }
    // Metadata text by section group: `None` for the unit's own sections, else the COMDAT of
    // the functions whose records it holds (see `comdat_of`).
    let mut groups: BTreeMap<Option<String>, [String; 5]> = BTreeMap::new();
    let mut functions: Vec<(Option<String>, [String; 4], CfgFunction)> = Vec::new();
    for f in funcs {
        let name = value_name(f);
        if name.starts_with("__csi") {
            continue;
        }
        unit.record = functions.len();
        functions.push(unit.function(f, name)?);
    }
    for (record, callees) in call_past_dispatchers(c.module, &unit.replicas, opts.optimized) {
        functions[record].2.off_calls = callees;
    }
    // Last, once no call is left to redirect: the dispatchers that a patched entry replaces.
    for r in &unit.replicas {
        if let (Some(on), true) = (r.on, functions[r.record].2.entry_patch) {
            csi_entry_alias(r.original, on, r.off, r.switch_global);
        }
    }
    for (group, records, cfg) in functions {
        let texts = groups.entry(group).or_default();
        for (k, t) in records.into_iter().enumerate() {
            texts[k].push_str(&t);
        }
        texts[4].push_str(&cfg.to_line());
    }
    append_sections(c.module, groups, &module_record, opts.compress_metadata);
    Ok(unit.report)
}

/// The functions the module defines (not declarations, not `available_externally` copies of
/// other units' code), in module order: the ones to instrument.
unsafe fn defined_functions(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut funcs = Vec::new();
    let mut f = LLVMGetFirstFunction(module);
    while !f.is_null() {
        if LLVMIsDeclaration(f) == 0
            && LLVMGetLinkage(f) != LLVMLinkage::LLVMAvailableExternallyLinkage
        {
            funcs.push(f);
        }
        f = LLVMGetNextFunction(f);
    }
    funcs
}

/// One unit's instrumentation in progress: what every function's instrumentation reads from
/// the module, and what it adds to the unit (path-tracing block ids, the report).
struct Unit<'a> {
    c: &'a Ctx,
    opts: &'a Options,
    /// Functions to leave uninstrumented, and why (see `instrument_file`).
    skip: &'a BTreeMap<String, String>,
    /// The unit's tag in coverage array names (`mash` of the source path).
    unit_mash: String,
    /// Address-taken functions (see `address_taken_functions`).
    address_taken: Vec<(LLVMValueRef, String)>,
    /// The functions no `longjmp` can pass through (see `no_longjmp_through`): their calls
    /// end no activation, for the block placement and `GlobalStores::Auto`'s loops.
    no_longjmp_through: HashSet<LLVMValueRef>,
    /// The functions whose coverage their callers' gives, with their number of calls (see
    /// `entries_known_from_calls`): no probe, no array.
    entries_from_calls: HashMap<LLVMValueRef, u32>,
    /// Address-taken functions by function type, for indirect calls.
    candidates_of_type: HashMap<LLVMTypeRef, Vec<String>>,
    /// Path-tracing block ids are unique in the unit: the next function's first.
    pt_base: u32,
    /// `--csi-scheme=custom`: the switchable functions so far.
    replicas: Vec<Replica>,
    /// The index of the record of the function being instrumented.
    record: usize,
    report: Report,
}

/// A switchable function (`Unit::make_switchable`): the original (the dispatch, or the
/// instrumented body behind an in-body springboard), its instrumented body when that moved
/// out, its uninstrumented replica, its switch (name and global), and the index of its record
/// in the unit.
struct Replica {
    original: LLVMValueRef,
    on: Option<LLVMValueRef>,
    off: LLVMValueRef,
    /// In a COMDAT: one unit's copy of its record stands for every unit's code.
    shared: bool,
    switch: String,
    switch_global: LLVMValueRef,
    record: usize,
}

/// After optimization, the switchable functions of the unit that nothing can enter any more:
/// static, every call inlined (the unit's calls test the switch and call the instrumented
/// body or the replica, `call_past_dispatchers`), the entry alias gone, no address taken.
/// Their instrumented body and replica stayed only because `csi_entry_alias` keeps them in
/// `llvm.used` (for the jump a switch patches into the replica's entry); both become
/// a trap (`csi_stub_body`), their symbols and the replica's patchable entry kept for
/// `csi tracing` and the reader. zstd with `--csi-scheme=custom`: 476 KB of its 3.3 MB
/// `.text`, with their debug information. Returns how many pairs.
pub(crate) unsafe fn stub_dead_variants(module: LLVMModuleRef) -> usize {
    let used = LLVMGetNamedGlobal(module, c"llvm.used".as_ptr());
    if used.is_null() {
        return 0;
    }
    let list = LLVMGetInitializer(used);
    if list.is_null() {
        return 0;
    }
    // Functions of local linkage whose one use is `llvm.used`'s list, by name.
    let mut dead: HashMap<String, LLVMValueRef> = HashMap::new();
    for k in 0..LLVMGetNumOperands(list) as u32 {
        let f = LLVMGetOperand(list, k);
        if LLVMIsAFunction(f).is_null() || LLVMIsDeclaration(f) != 0 {
            continue;
        }
        let local = matches!(
            LLVMGetLinkage(f),
            LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
        );
        let mut u = LLVMGetFirstUse(f);
        let mut only_listed = true;
        while !u.is_null() {
            only_listed &= LLVMGetUser(u) == list;
            u = LLVMGetNextUse(u);
        }
        if local && only_listed {
            dead.insert(value_name(f), f);
        }
    }
    let mut n = 0;
    for (name, &off) in &dead {
        let Some(base) = name.strip_suffix(REPLICA_SUFFIX) else {
            continue;
        };
        // The body must go with the replica: a live replica's entry may jump to it.
        if let Some(&on) = dead.get(&format!("{base}{BODY_SUFFIX}")) {
            csi_stub_body(on);
            csi_stub_body(off);
            n += 1;
        }
    }
    n
}

/// Points the unit's direct calls of switchable functions past their out-of-line dispatch:
/// in a replica at the callee's replica; elsewhere the call tests the callee's switch where
/// it is and calls one body or the other (`csi_dispatch_call`). Switched-off code so stays
/// uninstrumented through inlining: a replica calling the original would inline the
/// callee's test, and its instrumented body beside its replica, at every inlined level (Lua
/// ×1.36 instructions with every switch off). The cost: a switched-on function runs its
/// replica when called from a switched-off one (inlined there or not), so its coverage
/// arrays are evidence only when no switched-off function can reach it through such calls.
/// Returns, per record, the switches of the functions its replica now calls
/// (`CfgFunction::off_calls`).
unsafe fn call_past_dispatchers(
    module: LLVMModuleRef,
    replicas: &[Replica],
    optimized: bool,
) -> Vec<(usize, Vec<String>)> {
    let of: HashMap<LLVMValueRef, &Replica> = replicas.iter().map(|r| (r.original, r)).collect();
    let replica_of: HashMap<LLVMValueRef, &Replica> = replicas.iter().map(|r| (r.off, r)).collect();
    let mut off_calls: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut scopes: HashMap<LLVMValueRef, LLVMMetadataRef> = HashMap::new();
    let mut f = LLVMGetFirstFunction(module);
    while !f.is_null() {
        let caller = f;
        f = LLVMGetNextFunction(f);
        if of.contains_key(&caller) {
            continue;
        }
        let in_replica = replica_of.get(&caller);
        for bb in blocks(caller) {
            for i in instructions(bb) {
                if !is_call(i) {
                    continue;
                }
                let Some(callee) = of.get(&LLVMGetCalledValue(i)) else {
                    continue;
                };
                // Same type as the callee's (a call through a mismatched prototype keeps its
                // callee; the replica and the dispatch have the original's type).
                if LLVMGetCalledFunctionType(i) != LLVMGlobalGetValueType(callee.original) {
                    continue;
                }
                match (in_replica, callee.on) {
                    // A COMDAT function's record (`off_calls`) must hold for every unit's copy:
                    // its replica calls replicas only of COMDAT callees (every unit that emits
                    // it emits them), and only where no optimizer changed the calls first
                    // (instrumented after optimization, the units' copies differ).
                    (Some(caller), _) if caller.shared && (optimized || !callee.shared) => {}
                    (Some(caller), _) => {
                        off_calls
                            .entry(caller.record)
                            .or_default()
                            .insert(callee.switch.clone());
                        // The callee is the last operand of a call or invoke.
                        LLVMSetOperand(i, LLVMGetNumOperands(i) as u32 - 1, callee.off);
                    }
                    (None, Some(on)) => {
                        let scope = *scopes
                            .entry(callee.original)
                            .or_insert_with(|| csi_dispatch_scope(on));
                        csi_dispatch_call(i, callee.switch_global, on, callee.off, scope);
                    }
                    (None, None) => {}
                }
            }
        }
    }
    off_calls
        .into_iter()
        .map(|(r, s)| (r, s.into_iter().collect()))
        .collect()
}

impl Unit<'_> {
    /// What `f` is instrumented with (see `function`: nothing when skipped or the compiler's
    /// own).
    unsafe fn mechanisms(&self, f: LLVMValueRef) -> Mechanisms {
        let name = value_name(f);
        if name.starts_with("__csi")
            || self.skip.contains_key(&name)
            || LLVMGetSubprogram(f).is_null()
        {
            return Mechanisms::default();
        }
        self.opts
            .per_function
            .get(&name)
            .copied()
            .unwrap_or(self.opts.default)
    }

    /// Instruments one function by its scheme and returns its section group and its metadata
    /// records (`.debug_PT`, `.debug_CC`, `.debug_BBC`, `.debug_FC`, `.debug_CSI_CFG`): the
    /// CFG record is read off the unmodified function, then the probes are placed, the
    /// coverage arrays created, and the code inserted — coverage stores, path tracing, the
    /// zeroing of the local arrays, in that order.
    unsafe fn function(
        &mut self,
        f: LLVMValueRef,
        name: String,
    ) -> Result<(Option<String>, [String; 4], CfgFunction), Unsupported> {
        let (c, opts) = (self.c, self.opts);
        let comdat = comdat_of(f);
        // A COMDAT function instrumented before optimization is inlined into code of other
        // groups, which then updates its coverage globals: those and its records go into a
        // group of their own that every unit emits whole (`Ctx::global`), not the function's,
        // which a unit that inlined every call no longer has.
        let odr_group = comdat
            .as_deref()
            .filter(|_| opts.optimized_after)
            .map(|g| format!("__csi_odr.{g}"));
        let unit_tag = if odr_group.is_some() {
            "odr".to_string()
        } else {
            self.unit_mash.clone()
        };
        CURRENT.with(|c| *c.borrow_mut() = name.clone());
        let unsupported = |why: &str| (name.clone(), why.to_string());
        let skipped = self.skip.get(&name);
        let sp = LLVMGetSubprogram(f);
        // Functions without debug info are the compiler's own (`__clang_call_terminate`): no
        // source line to report, and no DWARF for a debugger to read their coverage with.
        let wanted = opts
            .per_function
            .get(&name)
            .copied()
            .unwrap_or(opts.default);
        let skipped = skipped
            .map(|why| format!("not instrumented: {why}"))
            .or_else(|| {
                (sp.is_null() && wanted != Mechanisms::default())
                    .then(|| "not instrumented: compiler-generated (no debug information)".into())
            });
        let mech = if skipped.is_some() {
            Mechanisms::default()
        } else {
            wanted
        };
        // Every unwind edge gets a landing pad of its own, where its instrumentation goes.
        if mech != Mechanisms::default() && csi_dedicate_landing_pads(f) == 0 {
            return Err(unsupported(
                "funclet-based exception handling (catchswitch/cleanuppad)",
            ));
        }
        // Customizable tracing: the replica is cloned before the probes go in (not a function
        // that calls `setjmp`-like functions: a springboard's tail call would return twice).
        let replica = if opts.switchable
            && mech != Mechanisms::default()
            && !has_returns_twice_call(&blocks(f))
        {
            Some(csi_clone_function(
                f,
                cstr(&format!("{name}{REPLICA_SUFFIX}")).as_ptr(),
            ))
            .filter(|r| !r.is_null())
        } else {
            None
        };
        let fn_file = scope_file_path(sp);
        let bbs = blocks(f);
        let mut rec = FunctionRecord::read(
            f,
            &name,
            &fn_file,
            &bbs,
            skipped,
            opts,
            &self.address_taken,
            &mut self.candidates_of_type,
        );
        // ---- Path tracing -------------------------------------------------------------------
        let succs: Vec<Vec<u32>> = rec.info.iter().map(|b| b.succs.clone()).collect();
        let mut numbering: Option<Numbering> = None;
        if mech.pt {
            numbering = number_paths(c, &bbs, &succs, &mut rec, opts.pt_loops);
            if let Some(r) = &rec.cfg.pt_skipped {
                self.report.pt_skipped.push((name.clone(), r.clone()));
            }
        }
        // Coverage the callers' gives (`entries_known_from_calls`): a function of one block
        // needs no block probe; the call sites of the entry block need none when every call
        // but its last comes back (`CcLayout::new`: where the placement keeps them).
        let from_calls = self.entries_from_calls.get(&f).copied();
        let bbc_array =
            mech.bbc && !(from_calls.is_some() && opts.bb_from_calls && one_block(&bbs));
        let cc_from_calls = mech.cc
            && from_calls.is_some()
            && !opts.cc_all_probes
            && !has_returns_twice_call(&bbs)
            && entry_calls_come_back(&bbs, &self.no_longjmp_through);
        // Labels for CC / BBC on the nodes.
        let facts = BlockFacts::new(&succs, &bbs);
        let ends = ends_activation(&bbs, &succs, &self.no_longjmp_through);
        let calls_come_back: Vec<bool> = bbs
            .iter()
            .map(|&b| {
                instructions(b)
                    .into_iter()
                    .all(|i| !is_call(i) || comes_back(&self.no_longjmp_through, i))
            })
            .collect();
        let layout = CcLayout::new(
            &rec.cfg,
            rec.calls.len(),
            &bbs,
            &facts,
            numbering.as_ref(),
            opts.cc_all_probes,
            opts.compress_metadata.then_some(AcrossBlocks {
                ends: &ends,
                calls_come_back: &calls_come_back,
                entry_from_calls: cc_from_calls,
            }),
        );
        if (mech.bbc && !bbc_array) || (mech.cc && !rec.calls.is_empty() && layout.from_calls) {
            rec.cfg.entry_from_calls = from_calls;
        }
        if mech.cc && !rec.calls.is_empty() {
            layout.label(&mut rec.cfg).map_err(unsupported)?;
        }
        if bbc_array {
            for (bi, &n) in rec.block_first_node.iter().enumerate() {
                rec.cfg.nodes[n as usize].labels.push(format!("BBC{bi}"));
            }
        }
        let mut pt_text = String::new();
        if let Some(nb) = &numbering {
            pt_text = pt_record(&mut rec, nb, self.pt_base, &name);
            self.pt_base += nb.n + 1;
        }
        // ---- Coverage globals / metadata ----------------------------------------------------
        // Probes on a cycle that store into a local array leave their global slot to the
        // exits of their loop, which copy the local bit (`LoopExitCopies`): a loop then
        // stores one byte per probe and iteration, not two. Not where an activation can end without returning
        // and without staying on the stack (a `longjmp` through it: `GlobalStores`;
        // unwinding; `setjmp`-like calls keep every probe), nor for v1.4.0's readers (text
        // metadata).
        let copied_loops = if opts.global_stores != GlobalStores::InPlace
            && opts.compress_metadata
            && is_nounwind(f)
            && !has_returns_twice_call(&bbs)
        {
            let eligible: Vec<bool> = calls_come_back
                .iter()
                .map(|&back| opts.global_stores == GlobalStores::AllLoops || back)
                .collect();
            copied_loops(&succs, &eligible)
        } else {
            Vec::new()
        };
        let owner = ArrayOwner {
            c,
            f,
            sp,
            flags: copied_loops.len() as u64,
            name: &name,
            unit_tag: &unit_tag,
            odr_group: odr_group.as_deref(),
        };
        let (cc, cc_text) = if mech.cc && !rec.calls.is_empty() {
            owner.cc(&mut rec.cfg, &rec.calls, &layout)
        } else {
            (None, String::new())
        };
        let (bbc, bbc_text) = if bbc_array {
            let all = opts.bb_all_probes || !opts.compress_metadata || has_returns_twice_call(&bbs);
            let probed = if all {
                vec![true; bbs.len()]
            } else {
                facts.graph.coverage_probes(&ends)
            };
            // Blocks whose local bit a live frame's position decides store only globally, as
            // call sites do (`CcLayout::new`): on no cycle, dominating every non-quiet block
            // they reach. Not with `setjmp`-like calls (a block can be resumed mid-way), text
            // metadata (v1.4.0's readers read every slot) or `--csi-bb-probes=all`.
            let by_position = if all {
                vec![false; bbs.len()]
            } else {
                facts.position_decided()
            };
            let mut local: Vec<bool> = (0..bbs.len())
                .map(|k| probed[k] && !by_position[k])
                .collect();
            // Without cycles an activation is one path from the entry, and the local bits
            // need only tell apart the paths that end in the same block (the dissertation's
            // Fig. 4.1a and Fig. 4.7): the reader recovers the rest (`derive_on_path`).
            if !all && opts.bb_local_budget > 0 {
                let mut budget = opts.bb_local_budget;
                if let Some(kept) = facts.graph.path_local_probes(&local, &mut budget) {
                    local = kept;
                }
            }
            owner.bbc(&mut rec.cfg, &rec.info, probed, local)
        } else {
            (None, String::new())
        };
        let (fc, fc_text) = if mech.fc {
            owner.fc(&mut rec.cfg)
        } else {
            (None, String::new())
        };
        let mut arrays = CoverageArrays {
            cc,
            bbc,
            fc,
            loop_exits: LoopExitCopies::default(),
        };
        if !copied_loops.is_empty() {
            arrays.loop_exits = LoopExitCopies::new(
                &arrays,
                &succs,
                &copied_loops,
                &facts,
                &rec.cfg,
                &rec.calls,
                &layout,
            );
            arrays.loop_exits.record(&mut rec.cfg);
        }
        // ---- Code -----------------------------------------------------------------------------
        // Coverage stores first (they only insert before existing instructions).
        arrays.store(c, &bbs, &rec.calls, &layout);
        // A function with one path and no loop needs no probe state: its frame's sum is 0
        // wherever it stands (the reader knows it from `num_paths`). Inlined, such helpers
        // (zstd's `MEM_read32`, the hashes) would otherwise set a dead sum at every call.
        // v1.4.0's tools (text metadata) read every path-traced frame's sum, so they keep it.
        let one_path = |nb: &Numbering| nb.num_paths == 1 && nb.back_edges.is_empty();
        if let Some(nb) = numbering
            .as_ref()
            .filter(|nb| !(opts.compress_metadata && one_path(nb)))
        {
            let shadowed =
                (opts.optimized || opts.optimized_after) && !has_returns_twice_call(&bbs);
            let made = instrument_paths(
                c,
                f,
                sp,
                &bbs,
                &rec.info,
                nb,
                opts.pt_size,
                shadowed,
                opts.pt_repeats_once,
                &rec.pt_elided,
                &rec.pt_contracted,
            )
            .map_err(unsupported)?;
            self.report.shadows |= made.shadows;
            rec.cfg.pt_runs = made.runs;
        }
        // Zeroing after path tracing, which may have split the same edges.
        arrays
            .zero_locals(c, &bbs, &facts, layout.zeroing)
            .map_err(unsupported)?;
        // Last: it splits the loops' exit blocks.
        arrays.copy_at_loop_exits(c, &bbs);
        let body = match replica {
            Some(off) => {
                self.make_switchable(f, off, &name, &unit_tag, odr_group.as_deref(), &mut rec.cfg)
            }
            None => f,
        };
        let fails = |g| {
            llvm_sys::analysis::LLVMVerifyFunction(
                g,
                llvm_sys::analysis::LLVMVerifierFailureAction::LLVMReturnStatusAction,
            ) != 0
        };
        if mech != Mechanisms::default() && (fails(f) || fails(body)) {
            return Err(unsupported("the instrumented function does not verify"));
        }
        Ok((
            odr_group.or(comdat),
            [pt_text, cc_text, bbc_text, fc_text],
            rec.cfg,
        ))
    }
}

impl Unit<'_> {
    /// Gives the instrumented `f` its switch, `__csi_sw_<unit>_<name>` (one byte, initially 1,
    /// in the coverage section, named in the record's `switch`), and the springboard that
    /// tail-calls the uninstrumented replica `off` when the switch is 0 (the dissertation's
    /// ch. 3, Fig. 3.1; outside a COMDAT the dispatcher later makes way for a patched entry,
    /// `csi_entry_alias`: a deployment sets the byte and the entry in the binary with
    /// `csi tracing`, nothing is rebuilt). Returns the function that
    /// now holds the instrumented body: `f` itself, or `<f>.__csi_on` when `f` became a
    /// dispatcher (`csi_add_springboard` in shim.cpp).
    unsafe fn make_switchable(
        &mut self,
        f: LLVMValueRef,
        off: LLVMValueRef,
        name: &str,
        unit_tag: &str,
        odr_group: Option<&str>,
        cfg: &mut CfgFunction,
    ) -> LLVMValueRef {
        let c = self.c;
        let gname = format!("__csi_sw_{unit_tag}_{name}");
        // A scalar (GlobalOpt would split a one-element array into `<name>.0`), linked like
        // the coverage arrays; found by its symbol (no DWARF).
        let g = c.coverage_global(&gname, c.i8t, f, odr_group);
        LLVMSetInitializer(g, LLVMConstInt(c.i8t, 1, 0));
        // Set in the file after the build: the optimizer must not take the initializer for
        // the value (an internal global nothing stores to would fold to a constant).
        LLVMSetExternallyInitialized(g, 1);
        // A COMDAT function's body may move out of its group only where its arrays and
        // record live in a group every unit emits whole (`odr_group`: instrumented before
        // optimization); elsewhere the group's kept copy must be the one its record describes.
        let shared = comdat_of(f).is_some();
        let may_move_body = !shared || odr_group.is_some();
        let body = csi_add_springboard(f, off, g, may_move_body.into());
        self.replicas.push(Replica {
            original: f,
            on: (body != f).then_some(body),
            off,
            shared,
            switch_global: g,
            switch: gname.clone(),
            record: self.record,
        });
        // Outside COMDATs (whose alias could not stay with the group it stands for), the
        // dispatcher makes way for a patched entry (`csi_entry_alias`, at the unit's end).
        cfg.entry_patch = body != f && !shared;
        cfg.switch = Some(gname);
        body
    }
}

/// A private constant array of the `slots` (u32) in `module`: the list a loop's copy hands
/// `__csi_rt_copy` (read back by `coverage::slot_list_of`).
pub(super) unsafe fn slot_list(module: LLVMModuleRef, slots: &[u64]) -> LLVMValueRef {
    let i32t = LLVMInt32TypeInContext(LLVMGetModuleContext(module));
    let mut vals: Vec<LLVMValueRef> = slots.iter().map(|&j| LLVMConstInt(i32t, j, 0)).collect();
    let init = LLVMConstArray2(i32t, vals.as_mut_ptr(), vals.len() as u64);
    let g = LLVMAddGlobal(module, LLVMTypeOf(init), c"__csi_slots".as_ptr());
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMLinkage::LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, llvm_sys::LLVMUnnamedAddr::LLVMGlobalUnnamedAddr);
    g
}

/// `callee` is an inline asm with no instructions (the one that makes a frame's coverage
/// array escape, `Ctx::local`): it does nothing.
pub(super) unsafe fn is_empty_asm(callee: LLVMValueRef) -> bool {
    if LLVMIsAInlineAsm(callee).is_null() {
        return false;
    }
    let mut len = 0;
    LLVMGetInlineAsmAsmString(callee, &mut len);
    len == 0
}

/// First instruction after the leading allocas of the entry block.
unsafe fn after_allocas(entry: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstInstruction(entry);
    while !i.is_null() && !LLVMIsAAllocaInst(i).is_null() {
        i = LLVMGetNextInstruction(i);
    }
    i
}

#[cfg(test)]
mod tests {
    use super::{cc_probe_placement, copied_loops, instrument_file, Mechanisms, Options};

    /// A loop whose blocks may all be left only through its exits is copied whole; one with
    /// a block whose call may not come back is not, but its inner loops are.
    #[test]
    fn loops_are_copied_whole_or_by_their_inner_loops() {
        // 0 → 1 → 2 ⇄ 3 → 4 → 1 (the outer loop), 4 → 5 → 6, which loops on itself.
        let succs: Vec<Vec<u32>> = vec![
            vec![1],
            vec![2],
            vec![3],
            vec![2, 4],
            vec![1, 5],
            vec![6],
            vec![6],
        ];
        let all = vec![true; 7];
        assert_eq!(copied_loops(&succs, &all), vec![vec![1, 2, 3, 4], vec![6]]);
        let mut four_calls_out = all.clone();
        four_calls_out[4] = false;
        assert_eq!(
            copied_loops(&succs, &four_calls_out),
            vec![vec![2, 3], vec![6]]
        );
        let mut three_calls_out = all.clone();
        three_calls_out[3] = false;
        assert_eq!(copied_loops(&succs, &three_calls_out), vec![vec![6]]);
        assert!(copied_loops(&succs, &[false; 7]).is_empty());
    }

    /// A function csi-cc cannot instrument (funclet-based EH, as clang emits for MSVC targets;
    /// the instrumentation is IR-level, so the target does not matter here) is left as it
    /// is, with the reason; the others are instrumented, and the module verifies.
    #[test]
    fn an_uninstrumentable_function_is_left_uninstrumented_with_the_reason() {
        let d = std::env::temp_dir().join(format!("csi-cc-unit-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let src = d.join("w.cpp");
        std::fs::write(
            &src,
            "struct G { ~G(); };\nvoid may(int);\n\
             int f(int x) { try { G g; may(x); } catch (...) { return 1; } return 0; }\n\
             int h(int x) { may(x); return x > 2 ? x : -x; }\n",
        )
        .unwrap();
        let bc = d.join("w.bc");
        let status = std::process::Command::new("clang++-19")
            .args([
                "--target=x86_64-pc-windows-msvc",
                "-g",
                "-c",
                "-emit-llvm",
                "-o",
            ])
            .arg(&bc)
            .arg(&src)
            .status()
            .unwrap();
        assert!(status.success());
        let opts = Options {
            default: Mechanisms::from_scheme("all").unwrap(),
            per_function: Default::default(),
            pt_size: 10,
            pt_repeats_once: true,
            pt_loops: super::PtLoops::Store,
            cc_all_probes: false,
            bb_all_probes: false,
            bb_from_calls: false,
            bb_local_budget: 0,
            global_stores: super::GlobalStores::AllLoops,
            switchable: false,
            compress_metadata: true,
            check_stores: false,
            hoist_stores: false,
            peel_loops: false,
            merge_stores: false,
            source: "w.cpp".into(),
            optimized: false,
            optimized_after: false,
            before_optimization: None,
        };
        let out = d.join("w.csi.bc");
        let r = instrument_file(bc.to_str().unwrap(), out.to_str().unwrap(), &opts).unwrap();
        let names: Vec<&str> = r.uninstrumented.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names, ["?f@@YAHH@Z"], "{:?}", r.uninstrumented);
        assert!(r.uninstrumented[0].1.contains("funclet"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn probes_first_and_last_call_of_each_block() {
        // Blocks: 0 has four calls, 1 one, 2 two, 3 three.
        let p = cc_probe_placement(&[0, 0, 0, 0, 1, 2, 2, 3, 3, 3], false);
        assert_eq!(
            p,
            vec![
                None,
                Some((0, 3)),
                Some((0, 3)),
                None,
                None,
                None,
                None,
                None,
                Some((7, 9)),
                None
            ]
        );
        assert!(cc_probe_placement(&[0, 0, 0], true)
            .iter()
            .all(Option::is_none));
    }
}
