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

mod calls;
mod paths;
mod records;
mod sections;

use calls::*;
use paths::*;
use records::*;
use sections::*;

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
