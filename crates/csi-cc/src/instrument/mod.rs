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
    CfgNode, CfgPathTracing, FcFunction, PtBlock, PtBlockKind, PtFunction, PtItem,
    CFG_FORMAT_VERSION,
};
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate, LLVMLinkage, LLVMOpcode};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{CStr, CString};
use std::ptr;

extern "C" {
    fn csi_split_critical_edge(term: LLVMValueRef, succ: u32) -> LLVMBasicBlockRef;
    fn csi_add_global_to_cu(m: LLVMModuleRef, gve: LLVMMetadataRef) -> i32;
    fn csi_dedicate_landing_pads(f: LLVMValueRef) -> i32;
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

/// The subprogram (linkage name, else name) an instruction's debug location belongs to: an
/// inlined function's for inlined code.
unsafe fn loc_subprogram(i: LLVMValueRef) -> Option<String> {
    let mut len = 0usize;
    let p = csi_loc_subprogram(i, &mut len);
    (!p.is_null()).then(|| {
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    })
}

/// Indirect-call candidates listed by name at one call site; more become
/// `any_address_taken` (see `CfgCall`).
const MAX_LISTED_CANDIDATES: usize = 16;

/// Subprograms inlined into one function, numbered from 1 in order of appearance (0 is the
/// function's own code): `CfgFunction::inlined` and each node's `scopes`.
#[derive(Default)]
struct InlinedScopes {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl InlinedScopes {
    unsafe fn of(&mut self, i: LLVMValueRef, own: &str) -> u32 {
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
            "realistic" => (true, true, false, false),
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

pub struct Options {
    pub default: Mechanisms,
    pub per_function: HashMap<String, Mechanisms>,
    pub pt_size: u32,
    /// Probe every call site (no placement optimization; see `cc_probe_placement`).
    pub cc_all_probes: bool,
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

/// Per-block facts gathered before any change to the function.
struct BlockInfo {
    succs: Vec<u32>,
    /// Lines for the PT/BBC metadata (unconditional branches skipped).
    lines: Vec<u32>,
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
            // taking its address keeps it one object in memory; it emits no instruction.
            self.position_before(after_allocas(entry));
            let ptr_ty = LLVMTypeOf(a);
            let mut params = [ptr_ty];
            let fn_ty =
                LLVMFunctionType(LLVMVoidTypeInContext(self.ctx), params.as_mut_ptr(), 1, 0);
            let (text, constraints) = ("", "r");
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
            LLVMBuildCall2(self.builder, fn_ty, asm, args.as_mut_ptr(), 1, c"".as_ptr());
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
    /// `instrument_module`) it is instead one hidden `weak_odr` global of that group, shared by every
    /// unit: inlined copies in any unit update it, whichever unit's group the linker keeps.
    unsafe fn global(
        &self,
        name: &str,
        n: u64,
        sp: LLVMMetadataRef,
        f: LLVMValueRef,
        odr_group: Option<&str>,
    ) -> (LLVMValueRef, LLVMTypeRef) {
        let ty = LLVMArrayType2(self.i8t, n);
        let g = LLVMAddGlobal(self.module, ty, cstr(name).as_ptr());
        LLVMSetInitializer(g, LLVMConstNull(ty));
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

/// Where instrumentation for a CFG edge goes.
enum Place {
    EndOf(u32),
    StartOf(u32),
    Split(u32, u32),
}

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
        let ctx = LLVMContextCreate();
        let mut buf = ptr::null_mut();
        let mut msg = ptr::null_mut();
        if LLVMCreateMemoryBufferWithContentsOfFile(cstr(bc_in).as_ptr(), &mut buf, &mut msg) != 0 {
            let m = CStr::from_ptr(msg).to_string_lossy().into_owned();
            LLVMDisposeMessage(msg);
            return Err(format!("cannot read {bc_in}: {m}"));
        }
        let mut module = ptr::null_mut();
        if llvm_sys::bit_reader::LLVMParseBitcodeInContext2(ctx, buf, &mut module) != 0 {
            LLVMDisposeMemoryBuffer(buf);
            return Err(format!("cannot parse bitcode {bc_in}"));
        }
        LLVMDisposeMemoryBuffer(buf);
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
        if llvm_sys::bit_writer::LLVMWriteBitcodeToFile(module, cstr(bc_out).as_ptr()) != 0 {
            return Err(format!("cannot write {bc_out}"));
        }
        LLVMDisposeModule(module);
        LLVMContextDispose(ctx);
        Ok(Ok(report))
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
    match csi_link_runtime(module, rt, c"__csi_rt_init".as_ptr(), c"__csi_rt_fini".as_ptr()) {
        0 | 1 => Ok(()),
        e => Err(format!("cannot link csi-cc's coverage runtime into the unit ({e})")),
    }
}

unsafe fn instrument_module(
    c: &Ctx,
    opts: &Options,
    skip: &BTreeMap<String, String>,
) -> Result<Report, Unsupported> {
    let mut report = Report {
        pt_skipped: Vec::new(),
        uninstrumented: Vec::new(),
        shadows: false,
    };
    let mut funcs = Vec::new();
    let mut f = LLVMGetFirstFunction(c.module);
    while !f.is_null() {
        if LLVMIsDeclaration(f) == 0
            && LLVMGetLinkage(f) != LLVMLinkage::LLVMAvailableExternallyLinkage
        {
            funcs.push(f);
        }
        f = LLVMGetNextFunction(f);
    }
    // Address-taken functions (any use other than being called) for indirect-call candidates.
    let mut address_taken: Vec<(LLVMValueRef, String)> = Vec::new();
    let mut g = LLVMGetFirstFunction(c.module);
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
    // What library code may call back into (module record of .debug_CSI_CFG): functions the
    // C runtime runs itself, and library functions whose address the unit takes.
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
    for (g, n) in &address_taken {
        if LLVMIsDeclaration(*g) != 0 {
            module_record.address_taken_externals.push(n.clone());
        }
    }
    for list in ["llvm.global_ctors", "llvm.global_dtors"] {
        let gv = LLVMGetNamedGlobal(c.module, cstr(list).as_ptr());
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
    let fmash = mash(&opts.source);
    // Metadata text by section group: `None` for the unit's own sections, else the COMDAT of
    // the functions whose records it holds (see `comdat_of`).
    let mut groups: BTreeMap<Option<String>, [String; 5]> = BTreeMap::new();
    // Address-taken functions by function type, for indirect calls.
    let mut candidates_of_type: HashMap<LLVMTypeRef, Vec<String>> = HashMap::new();
    let mut pt_base: u32 = 0;
    for f in funcs {
        let name = value_name(f);
        if name.starts_with("__csi") {
            continue;
        }
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
            "odr"
        } else {
            fmash.as_str()
        };
        let (mut pt_text, mut cc_text, mut bbc_text, mut fc_text) =
            (String::new(), String::new(), String::new(), String::new());
        CURRENT.with(|c| *c.borrow_mut() = name.clone());
        let unsupported = |why: &str| Err((name.clone(), why.to_string()));
        let skipped = skip.get(&name);
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
            return unsupported("funclet-based exception handling (catchswitch/cleanuppad)");
        }
        let fn_file = scope_file_path(sp);
        let bbs = blocks(f);
        let index: HashMap<LLVMBasicBlockRef, u32> = bbs
            .iter()
            .enumerate()
            .map(|(i, &b)| (b, i as u32))
            .collect();
        // ---- Facts about the unmodified function -------------------------------------------
        let mut info = Vec::with_capacity(bbs.len());
        let mut has_callbr = false;
        let mut indirectbr_blocks: Vec<u32> = Vec::new();
        let mut calls: Vec<(LLVMValueRef, u32, String, Option<String>)> = Vec::new(); // inst, line, name, callee
        let mut cfg = CfgFunction {
            csi_cfg: CFG_FORMAT_VERSION,
            address_taken: Some(address_taken.iter().any(|(g, _)| *g == f)),
            optimized: opts.optimized,
            optimized_after: opts.optimized_after,
            inlined: Vec::new(),
            optimized_away_calls: opts
                .before_optimization
                .as_ref()
                .map(|b| b.removed_calls(&name, &crate::callgraph::call_counts(f)))
                .unwrap_or_default(),
            unit: Some(opts.source.clone()),
            name: name.clone(),
            linkage_name: Some(name.clone()),
            file: if fn_file.is_empty() {
                None
            } else {
                Some(fn_file.clone())
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
            bbc: None,
            fc: None,
            nodes: vec![CfgNode::new(NodeKind::Entry), CfgNode::new(NodeKind::Exit)],
            edges: Vec::new(),
            pt: None,
        };
        let mut block_first_node = Vec::with_capacity(bbs.len());
        // An exception can leave this function (C functions are all `nounwind`).
        let unwinds = !is_nounwind(f);
        let mut block_last_node = Vec::with_capacity(bbs.len());
        // Which node holds each instruction (for the def/use sets).
        let mut node_of: HashMap<LLVMValueRef, u32> = HashMap::new();
        let mut node_insts: Vec<LLVMValueRef> = Vec::new();
        let mut scopes = InlinedScopes::default();
        for (bi, &bb) in bbs.iter().enumerate() {
            let term = LLVMGetBasicBlockTerminator(bb);
            let mut succs = Vec::new();
            if !term.is_null() {
                match LLVMGetInstructionOpcode(term) {
                    LLVMOpcode::LLVMIndirectBr => indirectbr_blocks.push(bi as u32),
                    LLVMOpcode::LLVMCallBr => has_callbr = true,
                    _ => {}
                }
                for s in 0..LLVMGetNumSuccessors(term) {
                    succs.push(index[&LLVMGetSuccessor(term, s)]);
                }
            }
            let is_ret = !term.is_null() && LLVMGetInstructionOpcode(term) == LLVMOpcode::LLVMRet;
            let mut lines = Vec::new();
            let mut node = CfgNode::new(NodeKind::Expression);
            node.block = Some(bi as u32);
            // Source positions of the node's instructions, with their files and scopes.
            let mut pending: Vec<PendingPosition> = Vec::new();
            block_first_node.push(cfg.nodes.len() as u32);
            let insts = instructions(bb);
            // A landing pad's bookkeeping (the landingpad, saving the exception and selector)
            // carries the position where the scope ends (its `}`), which no statement of the
            // pad executes: not a position of the pad's node.
            let pad_loc = {
                let first = first_non_phi(bb);
                if !first.is_null() && LLVMGetInstructionOpcode(first) == LLVMOpcode::LLVMLandingPad
                {
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
                let scope = scopes.of(i, &name);
                // An unconditional branch may be no machine instruction (a jump to the next
                // block falls through: the `br` into a `while (1) {` loop) or a real jump:
                // its position is weak — it cannot make its line "must" (see `CfgNode::weak`).
                // The front end's IR (instrumented before optimization) has lifetime markers
                // at every scope's end, on lines (a `}`) that may execute nothing at -O0.
                let no_code = opts.optimized_after && intrinsic_without_code(i);
                if let Some((l, col, file)) = loc(i).filter(|_| !bookkeeping && !no_code) {
                    if !uncond {
                        lines.push(l);
                    }
                    let anchoring = opts.optimized && csi_anchoring_call(i) != 0;
                    pending.push((l, col, file, scope, uncond, anchoring));
                }
                // def/use sets are filled by `defuse::fill` once the nodes exist
                node_insts.push(i);
                if let Some(callee) = call_site(i) {
                    let line = loc(i).map(|x| x.0).unwrap_or(0);
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
                    node.call = Some(call);
                    node.kind = NodeKind::CallSite;
                    let anchor = loc(i).map(|x| x.2);
                    settle_positions(&mut node, &mut pending, anchor, &fn_file);
                    calls.push((i, line, String::new(), direct));
                    let idx = cfg.nodes.len() as u32;
                    for j in node_insts.drain(..) {
                        node_of.insert(j, idx);
                    }
                    cfg.nodes.push(std::mem::replace(
                        &mut node,
                        CfgNode::new(NodeKind::Expression),
                    ));
                    node.block = Some(bi as u32);

                    if k + 1 < insts.len() {
                        cfg.edges.push([idx, idx + 1]);
                    }
                    // An exception the callee throws and this function does not catch leaves
                    // it from the call: an exit (an invoke's landing pad is a block edge).
                    if LLVMIsAInvokeInst(i).is_null() && unwinds && may_unwind(i) {
                        cfg.edges.push([idx, 1]);
                    }
                    continue;
                }
            }
            settle_positions(&mut node, &mut pending, None, &fn_file);
            if node.positions.is_empty()
                && node.call.is_none()
                && cfg.nodes.len() as u32 > block_first_node[bi]
            {
                // The block ended right after a call: the call-site node is the last node.
            } else {
                cfg.nodes.push(node);
            }
            let last = cfg.nodes.len() as u32 - 1;
            for j in node_insts.drain(..) {
                node_of.insert(j, last);
            }
            block_last_node.push(cfg.nodes.len() as u32 - 1);
            let is_resume =
                !term.is_null() && LLVMGetInstructionOpcode(term) == LLVMOpcode::LLVMResume;
            if succs.is_empty() && (is_ret || is_resume) {
                cfg.edges.push([cfg.nodes.len() as u32 - 1, 1]);
            }
            info.push(BlockInfo { succs, lines });
        }
        cfg.inlined = std::mem::take(&mut scopes.names);
        // A node added for a block that ended with a call may have a pending edge to a node
        // that was never created; drop such edges.
        let total = cfg.nodes.len() as u32;
        cfg.edges.retain(|e| {
            e[1] < total
                && (e[0] + 1 != e[1]
                    || cfg.nodes[e[1] as usize].block == cfg.nodes[e[0] as usize].block)
        });
        cfg.edges.push([0, block_first_node[0]]);
        crate::defuse::fill(f, &node_of, &mut cfg);
        for (bi, b) in info.iter().enumerate() {
            for &s in &b.succs {
                let e = [block_last_node[bi], block_first_node[s as usize]];
                if !cfg.edges.contains(&e) {
                    cfg.edges.push(e);
                }
            }
        }
        // ---- Path tracing -------------------------------------------------------------------
        let succs: Vec<Vec<u32>> = info.iter().map(|b| b.succs.clone()).collect();
        let mut numbering: Option<Numbering> = None;
        if mech.pt {
            if has_callbr {
                cfg.pt_skipped = Some("asm goto (callbr)".into());
            } else {
                let probs: Vec<Vec<f64>> = bbs.iter().map(|&b| branch_weights(c, b)).collect();
                // Computed gotos: an indirect branch's edges cannot be split, so they carry
                // no increment; every edge into one of its targets ends the path (stored
                // before the branch, or on the edge) and the target restarts it, like a loop
                // head (see `instrument_paths`).
                let mut breaks = BTreeSet::new();
                let targets: BTreeSet<u32> = indirectbr_blocks
                    .iter()
                    .flat_map(|&u| info[u as usize].succs.iter().copied())
                    .collect();
                for (u, b) in info.iter().enumerate() {
                    for &t in &b.succs {
                        if targets.contains(&t) {
                            breaks.insert((u as u32, t));
                        }
                    }
                }
                match ballarus::number_with_breaks(0, &succs, &probs, &breaks) {
                    Ok(nb) => numbering = Some(nb),
                    Err(e) => cfg.pt_skipped = Some(e.to_string()),
                }
            }
            if let Some(r) = &cfg.pt_skipped {
                report.pt_skipped.push((name.clone(), r.clone()));
            }
        }
        // Labels for CC / BBC on the nodes.
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
        let keep_all = opts.cc_all_probes || has_returns_twice_call(&bbs);
        let placement = cc_probe_placement(&call_blocks, keep_all);
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
        let facts = BlockFacts::new(&succs, &bbs);
        let by_position = if keep_all {
            vec![false; bbs.len()]
        } else {
            facts.position_decided()
        };
        let global_only = |k: usize| by_position[call_blocks[k] as usize];
        let mut slot: Vec<Option<u64>> = vec![None; calls.len()];
        let mut n_probes = 0u64;
        for pass in [false, true] {
            for (k, p) in placement.iter().enumerate() {
                if p.is_none() && global_only(k) == pass {
                    slot[k] = Some(n_probes);
                    n_probes += 1;
                }
            }
        }
        // A path-traced function without back edges needs no local array at all: a live
        // frame's running sum decodes to its whole path from the entry (Theorem 2.1), which
        // says which of its call sites ran (`cc_local_by_path`).
        let local_by_path = !keep_all
            && numbering
                .as_ref()
                .is_some_and(|nb| nb.back_edges.is_empty());
        let n_local = if local_by_path {
            0
        } else {
            (0..calls.len())
                .filter(|&k| placement[k].is_none() && !global_only(k))
                .count() as u64
        };
        // Where the local array is zeroed (see `BlockFacts::zeroing_block`); at entry when
        // every probe is kept (a `setjmp` resumption can re-enter a block mid-way).
        let zeroing = if keep_all || n_local == 0 {
            Zeroing::AtStart(0)
        } else {
            let local_blocks: Vec<usize> = (0..calls.len())
                .filter(|&k| placement[k].is_none() && !global_only(k))
                .map(|k| call_blocks[k] as usize)
                .collect();
            facts.zeroing_block(&local_blocks)
        };
        if mech.cc && !calls.is_empty() {
            cfg.cc_local_len = (n_local < n_probes).then_some(n_local);
            cfg.cc_local_zeroed_in = (n_local > 0 && !keep_all).then_some(zeroing.block() as u32);
            cfg.cc_local_by_path = local_by_path;
            for (k, &n) in call_nodes.iter().enumerate() {
                match (slot[k], placement[k]) {
                    (Some(j), _) => cfg.nodes[n as usize].labels.push(format!("CC{j}")),
                    (None, Some((a, b))) => {
                        cfg.nodes[n as usize].implied = Some(CfgImplied {
                            first: format!("CC{}", slot[a].expect("probed")),
                            last: format!("CC{}", slot[b].expect("probed")),
                        })
                    }
                    (None, None) => return unsupported("a call site neither probed nor implied"),
                }
            }
        }
        if mech.bbc {
            for (bi, &n) in block_first_node.iter().enumerate() {
                cfg.nodes[n as usize].labels.push(format!("BBC{bi}"));
            }
        }
        let pt_id = |b: u32| pt_base + b;
        if let Some(nb) = &numbering {
            for (bi, &first) in block_first_node.iter().enumerate() {
                for n in first..=block_last_node[bi] {
                    cfg.nodes[n as usize].pt_block = Some(pt_id(bi as u32));
                }
            }
            cfg.path_traced = true;
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
            for (bi, b) in info.iter().enumerate() {
                if !nb.reachable[bi] {
                    continue;
                }
                let mut items: Vec<PtItem> = b.lines.iter().map(|&l| PtItem::Line(l)).collect();
                // Completed paths are stored on back edges only (see `instrument_paths`).
                if nb.back_edge_store_increment.contains_key(&(bi as u32)) {
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
            PtFunction {
                name: name.clone(),
                blocks: blocks_out,
                edges: cfg.pt.as_ref().unwrap().edges.clone(),
            }
            .write(&mut pt_text);
            pt_base += nb.n + 1;
        }
        // ---- Coverage globals / metadata ----------------------------------------------------
        let n_calls = calls.len() as u64;
        let cc_on = mech.cc && n_calls > 0;
        let mut cc_vars = None;
        if cc_on {
            let gname = format!("__CC_arr_{unit_tag}_{name}");
            let (g, gty) = c.global(&gname, n_probes, sp, f, odr_group.as_deref());
            // The local array holds the slots below `n_local`; none at all when every
            // probe is in the entry block (no zeroing then).
            let local = (n_local > 0).then(|| {
                let lty = LLVMArrayType2(c.i8t, n_local.div_ceil(8) * 8);
                let b = c.basic_type("__csi_bool", 8, 0x02);
                let a = c.local(f, sp, lty, 8, "__CC_arr", c.volatile_array(b, 8, n_local));
                (a, lty)
            });
            cc_vars = Some((g, gty, local));
            cfg.cc = Some(gname.clone());
            CcFunction {
                name: name.clone(),
                global: gname,
                // Unprobed sites are listed as uninstrumented (`-1`, `-2`, ...), as csi-cc
                // v1.4.0 does; `.debug_CSI_CFG` says how their coverage is implied.
                sites: {
                    let mut unprobed = 0i64;
                    calls
                        .iter()
                        .zip(&slot)
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
        }
        let mut bbc_vars = None;
        if mech.bbc {
            let n = bbs.len() as u64;
            let gname = format!("__BBC_arr_{unit_tag}_{name}");
            let (g, gty) = c.global(&gname, n, sp, f, odr_group.as_deref());
            let lty = LLVMArrayType2(c.i8t, n.div_ceil(8) * 8);
            let b = c.basic_type("__csi_bool", 8, 0x02);
            let a = c.local(f, sp, lty, 8, "__BBC_arr", c.volatile_array(b, 8, n));
            bbc_vars = Some((g, gty, a, lty));
            cfg.bbc = Some(gname.clone());
            BbcFunction {
                name: name.clone(),
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
        }
        let mut fc_var = None;
        if mech.fc {
            let gname = format!("__FC_arr_{unit_tag}_{name}");
            fc_var = Some(c.global(&gname, 1, sp, f, odr_group.as_deref()));
            cfg.fc = Some(gname.clone());
            FcFunction {
                name: name.clone(),
                global: gname,
            }
            .write(&mut fc_text);
        }
        // ---- Code -----------------------------------------------------------------------------
        // Coverage stores first (they only insert before existing instructions).
        let one = LLVMConstInt(c.i8t, 1, 0);
        if let Some((g, gty, local)) = cc_vars {
            for ((inst, ..), s) in calls.iter().zip(&slot) {
                let Some(j) = *s else { continue };
                c.position_before(*inst);
                let idx = LLVMConstInt(c.i64t, j, 0);
                if let Some((a, lty)) = local.filter(|_| j < n_local) {
                    let lp = c.gep(lty, a, idx);
                    c.vstore(one, lp);
                }
                let gp = c.gep(gty, g, idx);
                c.vstore(one, gp);
            }
        }
        if let Some((g, gty, a, lty)) = bbc_vars {
            for (k, &bb) in bbs.iter().enumerate() {
                c.position_before(if k == 0 {
                    after_allocas(bb)
                } else {
                    c.first_insertion(bb)
                });
                let idx = LLVMConstInt(c.i64t, k as u64, 0);
                let lp = c.gep(lty, a, idx);
                c.vstore(one, lp);
                let gp = c.gep(gty, g, idx);
                c.vstore(one, gp);
            }
        }
        if let Some((g, gty)) = fc_var {
            c.position_before(after_allocas(bbs[0]));
            let gp = c.gep(gty, g, LLVMConstInt(c.i64t, 0, 0));
            c.vstore(one, gp);
        }
        if let Some(nb) = &numbering {
            let shadowed =
                (opts.optimized || opts.optimized_after) && !has_returns_twice_call(&bbs);
            match instrument_paths(c, f, sp, &bbs, &info, nb, opts.pt_size, shadowed) {
                Ok(shadows) => report.shadows |= shadows,
                Err(why) => return unsupported(why),
            }
        }
        // Zero the local coverage arrays: `__BBC_arr` at entry (after the allocas, before
        // anything else), `__CC_arr` where `zeroing` says (after path tracing, which may
        // have split the same edges).
        for (a, lty, at) in [
            cc_vars.and_then(|v| v.2).map(|(a, l)| (a, l, zeroing)),
            bbc_vars.map(|v| (v.2, v.3, Zeroing::AtStart(0))),
        ]
        .into_iter()
        .flatten()
        {
            let len = LLVMGetArrayLength2(lty);
            let points = match zeroing_points(c, &bbs, &facts, at) {
                Ok(p) => p,
                Err(why) => return unsupported(why),
            };
            for at in points {
                c.position_before(at);
                c.vmemset0(a, len);
            }
        }
        if mech != Mechanisms::default()
            && llvm_sys::analysis::LLVMVerifyFunction(
                f,
                llvm_sys::analysis::LLVMVerifierFailureAction::LLVMReturnStatusAction,
            ) != 0
        {
            return unsupported("the instrumented function does not verify");
        }
        let texts = groups.entry(odr_group.or(comdat)).or_default();
        for (k, t) in [pt_text, cc_text, bbc_text, fc_text, cfg.to_line()]
            .into_iter()
            .enumerate()
        {
            texts[k].push_str(&t);
        }
    }
    if !groups.is_empty() {
        groups.entry(None).or_default()[4].push_str(&module_record.to_line());
    }
    let mut asm = String::new();
    for (group, texts) in &groups {
        write_sections(&mut asm, group.as_deref(), texts);
    }
    if !asm.is_empty() {
        LLVMAppendModuleInlineAsm(c.module, asm.as_ptr() as _, asm.len());
    }
    Ok(report)
}

/// The COMDAT group of a function the linker may keep from any of several objects (C++
/// templates and inline functions: `linkonce_odr`), if it has one.
unsafe fn comdat_of(f: LLVMValueRef) -> Option<String> {
    let mut len = 0usize;
    let p = csi_comdat_name(f, &mut len);
    (!p.is_null()).then(|| {
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    })
}

/// Appends the metadata sections (`.debug_PT`, `.debug_CC`, `.debug_BBC`, `.debug_FC`,
/// `.debug_CSI_CFG`) as assembly. Records of a COMDAT function go into sections of its group,
/// so that the linker keeps exactly the records of the copy whose code it keeps (as it does
/// for the copy's coverage globals, see `Ctx::global`): every object's other sections are
/// concatenated, and with them a record for each copy.
fn write_sections(asm: &mut String, group: Option<&str>, texts: &[String; 5]) {
    let names = [
        ".debug_PT",
        ".debug_CC",
        ".debug_BBC",
        ".debug_FC",
        ".debug_CSI_CFG",
    ];
    for (sec, text) in names.iter().zip(texts) {
        if text.is_empty() {
            continue;
        }
        match group {
            None => asm.push_str(&format!(".pushsection {sec},\"\",@progbits\n")),
            Some(g) => asm.push_str(&format!(
                ".pushsection {sec},\"G\",@progbits,\"{g}\",comdat\n"
            )),
        }
        for chunk in text.as_bytes().chunks(200) {
            asm.push_str("\t.ascii \"");
            for &b in chunk {
                match b {
                    b'"' => asm.push_str("\\\""),
                    b'\\' => asm.push_str("\\\\"),
                    0x20..=0x7e => asm.push(b as char),
                    _ => asm.push_str(&format!("\\{b:03o}")),
                }
            }
            asm.push_str("\"\n");
        }
        asm.push_str(".popsection\n");
    }
}

/// One instruction's position while its node is built: line, column, file, scope (see
/// `Scopes`), held by an unconditional branch, held by an anchoring call.
type PendingPosition = (u32, u32, String, u32, bool, bool);

/// Sets a node's file and positions from its instructions' positions: the file of its call
/// (where a frame stops in it) or else of its first positioned instruction, and the positions
/// in that file. Positions carry no file, so those of code inlined from another file (C++
/// headers: std::string's members in every function) would read as lines of this one, and
/// the node would not be found at its call's position.
fn settle_positions(
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

/// Coverage probe placement for the call sites of one function, given each site's basic
/// block (sites in instruction order). `None`: the site is probed; `Some((a, b))`: it is not,
/// and its coverage is implied by the probed sites `a` (before it) and `b` (after it) of the
/// same block — the dissertation's dominator-based placement (ch. 4) restricted to the
/// implications that stay exact when any callee may not return: in a block with calls
/// c1..cn, cn's probe implies that c2..c(n-1) ran (they dominate it in straight-line code),
/// and c1's clear probe that they did not (c1 dominates them). Between the two, a stopped
/// frame's position decides for its local array (see `csi_model::sections::CfgImplied`).
///
/// A later site is never inferred from an earlier one, and sites in different blocks never
/// imply each other: a callee may crash, `exit` or `longjmp`, so no site post-dominates
/// another in the executions that end in a failure report. `keep_all` (requested, or the
/// function calls a `returns_twice` function such as `setjmp`, which can resume a block
/// mid-way) probes every site.
fn cc_probe_placement(blocks: &[u32], keep_all: bool) -> Vec<Option<(usize, usize)>> {
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

/// The block graph facts the coverage placement needs: dominators, cycles, and the blocks
/// where no call or crash can stop a frame.
struct BlockFacts<'a> {
    succs: &'a [Vec<u32>],
    preds: Vec<Vec<usize>>,
    idom: Vec<Option<usize>>,
    /// Blocks where nothing can stop a frame but an asynchronous signal (no call, nothing
    /// that can fault): a frame on a call or a crash is never there.
    quiet: Vec<bool>,
    /// Blocks that must begin with an exception-handling pad (nothing may be inserted first).
    eh_pad: Vec<bool>,
    /// Blocks ending in a `br` or `switch` (their edges can be split).
    plain_branch: Vec<bool>,
}

/// Where a local coverage array is zeroed (see `BlockFacts::zeroing_block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Zeroing {
    /// At the start of a block on no cycle (the entry block: after the allocas).
    AtStart(usize),
    /// On the edges into a loop head from outside, each from a block on no cycle.
    OnEntryEdges(usize),
}

impl Zeroing {
    fn block(self) -> usize {
        match self {
            Zeroing::AtStart(b) | Zeroing::OnEntryEdges(b) => b,
        }
    }
}

/// Nothing in `i` can stop a frame (no call, nothing that can fault), or it only touches the
/// frame's own allocas.
unsafe fn quiet_instruction(i: LLVMValueRef) -> bool {
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

/// A call of an intrinsic that compiles to no machine instruction (debug records, lifetime
/// markers, assumptions): its line never executes anything.
unsafe fn intrinsic_without_code(i: LLVMValueRef) -> bool {
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

impl<'a> BlockFacts<'a> {
    unsafe fn new(succs: &'a [Vec<u32>], bbs: &[LLVMBasicBlockRef]) -> Self {
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
        let mut preds = vec![Vec::new(); succs.len()];
        for (u, ss) in succs.iter().enumerate() {
            for &v in ss {
                if !preds[v as usize].contains(&u) {
                    preds[v as usize].push(u);
                }
            }
        }
        BlockFacts {
            succs,
            preds,
            idom: immediate_dominators(succs),
            quiet,
            eh_pad,
            plain_branch,
        }
    }

    fn dominates(&self, x: usize, mut y: usize) -> bool {
        loop {
            if y == x {
                return true;
            }
            match self.idom[y] {
                Some(d) if d != y => y = d,
                _ => return false,
            }
        }
    }

    /// Blocks reachable from `x`'s successors (`x` itself only if it is on a cycle).
    fn reached_from(&self, x: usize) -> Vec<bool> {
        let mut seen = vec![false; self.succs.len()];
        let mut stack: Vec<usize> = self.succs[x].iter().map(|&s| s as usize).collect();
        while let Some(y) = stack.pop() {
            if !std::mem::replace(&mut seen[y], true) {
                stack.extend(self.succs[y].iter().map(|&s| s as usize));
            }
        }
        seen
    }

    fn on_cycle(&self, x: usize) -> bool {
        self.reached_from(x)[x]
    }

    /// Blocks whose call sites' local coverage a live frame's position decides exactly (see
    /// `cc_by_position` above): on no cycle, and dominating every block they reach, except
    /// quiet blocks (where only a signal stops a frame, and the reader says "unknown").
    fn position_decided(&self) -> Vec<bool> {
        (0..self.succs.len())
            .map(|x| {
                self.idom[x].is_some()
                    && self
                        .reached_from(x)
                        .iter()
                        .enumerate()
                        .all(|(y, &r)| !r || (y != x && (self.dominates(x, y) || self.quiet[y])))
            })
            .collect()
    }

    /// Where to zero a local coverage array whose probes sit in `probe_blocks`: at a block H
    /// that dominates them and every block they reach where a frame can stop on a call or a
    /// crash, as deep as possible, such that the zeroing runs at most once per activation —
    /// at H's start if H is on no cycle, else on H's entering edges from outside its loop,
    /// each from a block on no cycle (only one of those can run, once: a second would need a
    /// path from H back to its source). The first arrival at H zeroes, and every probe runs
    /// after it, so wherever H dominates a frame's position the array holds exactly the
    /// activation's probes; everywhere else no probe's block reaches the position except
    /// quiet blocks, where only a signal can stop a frame, and the position alone decides
    /// the local bits (or leaves them unknown). Calls that take a fast path past all of it
    /// pay no zeroing, nor, often, a stack frame.
    fn zeroing_block(&self, probe_blocks: &[usize]) -> Zeroing {
        let depth = |mut b: usize| {
            let mut d = 0;
            while let Some(p) = self.idom[b].filter(|&p| p != b) {
                b = p;
                d += 1;
            }
            d
        };
        let common = |mut a: usize, mut b: usize| {
            let (mut da, mut db) = (depth(a), depth(b));
            while da > db {
                a = self.idom[a].unwrap_or(0);
                da -= 1;
            }
            while db > da {
                b = self.idom[b].unwrap_or(0);
                db -= 1;
            }
            while a != b {
                a = self.idom[a].unwrap_or(0);
                b = self.idom[b].unwrap_or(0);
            }
            a
        };
        let mut h: Option<usize> = None;
        for &x in probe_blocks {
            if self.idom[x].is_none() {
                continue; // unreachable: its probe never runs
            }
            let reached = self.reached_from(x);
            let stops = (0..reached.len()).filter(|&y| reached[y] && !self.quiet[y]);
            for y in std::iter::once(x).chain(stops) {
                h = Some(h.map_or(y, |h| common(h, y)));
            }
        }
        let mut h = h.unwrap_or(0);
        loop {
            if h == 0 {
                return Zeroing::AtStart(0);
            }
            if !self.on_cycle(h) {
                if !self.eh_pad[h] {
                    return Zeroing::AtStart(h);
                }
            } else if self.preds[h]
                .iter()
                .filter(|&&p| !self.dominates(h, p))
                .all(|&p| !self.on_cycle(p) && self.plain_branch[p])
            {
                return Zeroing::OnEntryEdges(h);
            }
            h = self.idom[h].unwrap_or(0);
        }
    }
}

/// Immediate dominators of the blocks reachable from block 0 (Cooper, Harvey, Kennedy);
/// the entry's is itself, an unreachable block's `None`.
fn immediate_dominators(succs: &[Vec<u32>]) -> Vec<Option<usize>> {
    let n = succs.len();
    let mut order = Vec::with_capacity(n); // postorder
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some(&mut (b, ref mut k)) = stack.last_mut() {
        if let Some(&s) = succs[b].get(*k) {
            *k += 1;
            if !seen[s as usize] {
                seen[s as usize] = true;
                stack.push((s as usize, 0));
            }
        } else {
            order.push(b);
            stack.pop();
        }
    }
    let mut po = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        po[b] = i;
    }
    let mut preds = vec![Vec::new(); n];
    for (u, ss) in succs.iter().enumerate() {
        for &s in ss {
            preds[s as usize].push(u);
        }
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while po[a] < po[c] {
                                a = idom[a].unwrap();
                            }
                            while po[c] < po[a] {
                                c = idom[c].unwrap();
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// A call that may throw an exception (C++): neither the call nor its callee is `nounwind`.
unsafe fn may_unwind(call: LLVMValueRef) -> bool {
    let fn_index = llvm_sys::LLVMAttributeFunctionIndex;
    if !LLVMGetCallSiteEnumAttribute(call, fn_index, nounwind_kind()).is_null() {
        return false;
    }
    let callee = LLVMGetCalledValue(call);
    LLVMIsAFunction(callee).is_null() || !is_nounwind(callee)
}

/// The function is `nounwind`: no exception leaves it (clang marks every C function so, and
/// C++ functions that cannot throw).
unsafe fn is_nounwind(f: LLVMValueRef) -> bool {
    let fn_index = llvm_sys::LLVMAttributeFunctionIndex;
    !LLVMGetEnumAttributeAtIndex(f, fn_index, nounwind_kind()).is_null()
}

unsafe fn nounwind_kind() -> u32 {
    let name = c"nounwind";
    LLVMGetEnumAttributeKindForName(name.as_ptr(), name.to_bytes().len())
}

/// The function calls (or invokes) something that may return twice (`setjmp`, `vfork`, ...).
unsafe fn has_returns_twice_call(bbs: &[LLVMBasicBlockRef]) -> bool {
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

/// The `!prof` branch weights of a block's terminator (`branch_weights`, one per successor, as
/// clang attaches for `__builtin_expect` and LLVM's heuristics keep); empty when absent.
unsafe fn branch_weights(c: &Ctx, bb: LLVMBasicBlockRef) -> Vec<f64> {
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

/// The instructions before which `zeroing` puts its stores: after the entry block's allocas,
/// at a block's first insertion point, or on each entering edge of a loop head from outside
/// — before the source's terminator when it has one successor, else in a block splitting the
/// edge (the one path tracing split it with, if it did).
unsafe fn zeroing_points(
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
    for &p in facts.preds[h].iter().filter(|&&p| !facts.dominates(h, p)) {
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

/// First instruction of `bb` that is not a PHI.
unsafe fn first_non_phi(bb: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstInstruction(bb);
    while !i.is_null() && !LLVMIsAPHINode(i).is_null() {
        i = LLVMGetNextInstruction(i);
    }
    i
}

/// First instruction after the leading allocas of the entry block.
unsafe fn after_allocas(entry: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstInstruction(entry);
    while !i.is_null() && !LLVMIsAAllocaInst(i).is_null() {
        i = LLVMGetNextInstruction(i);
    }
    i
}

/// A frame's `__PT_counter_idx`: the volatile local a core dump shows (the second half of the
/// `__PT_state` pair), and in optimized builds a plain alloca mirroring it for `mem2reg` to
/// promote (see `instrument_paths`).
#[derive(Clone, Copy)]
struct RingIndex {
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

#[allow(clippy::too_many_arguments)]
unsafe fn instrument_paths(
    c: &Ctx,
    f: LLVMValueRef,
    sp: LLVMMetadataRef,
    bbs: &[LLVMBasicBlockRef],
    info: &[BlockInfo],
    nb: &Numbering,
    n: u32,
    shadowed: bool,
) -> Result<bool, &'static str> {
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
    // Predecessor counts (distinct blocks) on the unmodified CFG.
    let mut preds = vec![BTreeSet::new(); bbs.len()];
    for (u, b) in info.iter().enumerate() {
        for &s in &b.succs {
            preds[s as usize].insert(u as u32);
        }
    }
    let nsucc = |u: u32| info[u as usize].succs.iter().collect::<BTreeSet<_>>().len();
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
    // Initialise after the allocas (and the index's address).
    match ring {
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
        }
        None => {
            c.position_before(after_allocas(bbs[0]));
            c.vstore(LLVMConstInt(c.i64t, entry_inc as u64, 1), cur);
        }
    }

    let place = |u: u32, v: u32| -> Place {
        if nsucc(u) == 1 {
            Place::EndOf(u)
        } else if preds[v as usize].len() == 1 {
            Place::StartOf(v)
        } else {
            Place::Split(u, v)
        }
    };
    // Emits "store the completed path (+inc) and advance the index" (back edges only).
    let store_path = |inc: i64| {
        let (arr, idx) = ring.expect("a function with back edges has a ring buffer");
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
        let i = idx.get(c);
        let p = c.gep(arr_ty, arr, i);
        c.vstore(s, p);
        let i1 = LLVMBuildAdd(c.builder, i, LLVMConstInt(c.i64t, 1, 0), c"".as_ptr());
        let wrap = LLVMBuildICmp(
            c.builder,
            LLVMIntPredicate::LLVMIntEQ,
            i1,
            LLVMConstInt(c.i64t, n, 0),
            c"".as_ptr(),
        );
        let next = LLVMBuildSelect(
            c.builder,
            wrap,
            LLVMConstInt(c.i64t, 0, 0),
            i1,
            c"".as_ptr(),
        );
        idx.set(c, next);
    };
    let add = |inc: i64| {
        let s = LLVMBuildAdd(
            c.builder,
            c.vload(c.i64t, cur),
            LLVMConstInt(c.i64t, inc as u64, 1),
            c"".as_ptr(),
        );
        c.vstore(s, cur);
    };
    // Edge actions: increments and back edges.
    enum Act {
        Inc(i64),
        Back(i64, i64),
        Store(i64),
    }
    let mut acts: Vec<(u32, u32, Act)> = Vec::new();
    for (&(u, v), &inc) in &nb.increments {
        if u == 0 && nsucc(0) == 1 {
            continue; // folded into the initial value
        }
        acts.push((u, v, Act::Inc(inc)));
    }
    // Heads all of whose entering edges are back edges (targets of computed gotos) restart
    // the path at their start, once; the edges then only store the completed path — before
    // the terminator of an indirect branch, whose edges cannot be split.
    let indirect = |u: u32| {
        let t = LLVMGetBasicBlockTerminator(bbs[u as usize]);
        !t.is_null() && LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMIndirectBr
    };
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
        let store = nb.back_edge_store_increment[&u];
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
    // The restarts first: a store placed at the start of the same block goes before them.
    for (&h, &reinit) in &restarts {
        c.position_before(c.first_insertion(bbs[h as usize]));
        c.vstore(LLVMConstInt(c.i64t, reinit as u64, 1), cur);
    }
    for (u, v, act) in acts {
        let at = if u == v {
            Place::EndOf(u) // the store before an indirect branch
        } else {
            place(u, v)
        };
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
        match act {
            Act::Inc(i) => add(i),
            Act::Back(store_inc, reinit) => {
                store_path(store_inc);
                c.vstore(LLVMConstInt(c.i64t, reinit as u64, 1), cur);
            }
            Act::Store(store_inc) => store_path(store_inc),
        }
    }
    Ok(ring.is_some_and(|(_, idx)| idx.shadow.is_some()))
}

#[cfg(test)]
mod tests {
    use super::{cc_probe_placement, immediate_dominators, instrument_file, Mechanisms, Options};

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
            cc_all_probes: false,
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
    fn immediate_dominators_of_a_diamond_a_loop_and_an_unreachable_block() {
        // 0 -> 1, 2; 1 -> 3; 2 -> 3; 3 -> 4; 4 -> 3, 5; 6 -> 5 (6 unreachable).
        let succs = vec![
            vec![1, 2],
            vec![3],
            vec![3],
            vec![4],
            vec![3, 5],
            vec![],
            vec![5],
        ];
        assert_eq!(
            immediate_dominators(&succs),
            vec![Some(0), Some(0), Some(0), Some(0), Some(3), Some(4), None]
        );
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
