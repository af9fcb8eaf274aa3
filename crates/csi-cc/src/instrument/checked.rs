//! Checked coverage stores (`--csi-probe-stores=checked`, the default): after optimization,
//! every probe's store into a global coverage array (`__CC_arr_*`, `__BBC_arr_*`,
//! `__FC_arr_*`) becomes `if (byte == 0) byte = 1`, as SanitizerCoverage's
//! `inline-bool-flag` does.
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

/// Rewrites bitcode `bc_in` into `bc_out` (may be the same file) with every probe store into
/// a global coverage array checked; returns how many.
pub fn check_probe_stores_file(bc_in: &str, bc_out: &str) -> Result<usize, String> {
    unsafe {
        let (ctx, module) = read_bitcode(bc_in)?;
        let n = check_probe_stores(ctx, module);
        let written = llvm_sys::bit_writer::LLVMWriteBitcodeToFile(module, cstr(bc_out).as_ptr());
        LLVMDisposeModule(module);
        LLVMContextDispose(ctx);
        if written != 0 {
            return Err(format!("cannot write {bc_out}"));
        }
        Ok(n)
    }
}

/// The pass over one module: each `store volatile i8 1` whose address is (a constant offset
/// into) a global coverage array goes into a block of its own, entered only when the byte
/// reads 0 (the branch marked unlikely: after its first run the probe falls through).
pub(super) unsafe fn check_probe_stores(ctx: LLVMContextRef, module: LLVMModuleRef) -> usize {
    let i8t = LLVMInt8TypeInContext(ctx);
    let mut probes = Vec::new();
    let mut f = LLVMGetFirstFunction(module);
    while !f.is_null() {
        for bb in blocks(f) {
            for i in instructions(bb) {
                if is_probe_store(i) {
                    probes.push(i);
                }
            }
        }
        f = LLVMGetNextFunction(f);
    }
    let builder = LLVMCreateBuilderInContext(ctx);
    for &s in &probes {
        let p = LLVMGetOperand(s, 1);
        LLVMPositionBuilderBefore(builder, s);
        let byte = LLVMBuildLoad2(builder, i8t, p, c"".as_ptr());
        LLVMSetVolatile(byte, 1);
        let clear = LLVMBuildICmp(
            builder,
            LLVMIntPredicate::LLVMIntEQ,
            byte,
            LLVMConstInt(i8t, 0, 0),
            c"".as_ptr(),
        );
        let then = csi_split_if_then(clear, s, 1);
        LLVMInstructionRemoveFromParent(s);
        LLVMPositionBuilderBefore(builder, then);
        LLVMInsertIntoBuilder(builder, s);
    }
    LLVMDisposeBuilder(builder);
    probes.len()
}

/// A probe's global store: `store volatile i8 1` into a coverage array.
unsafe fn is_probe_store(i: LLVMValueRef) -> bool {
    if LLVMIsAStoreInst(i).is_null() || LLVMGetVolatile(i) == 0 {
        return false;
    }
    let v = LLVMGetOperand(i, 0);
    if LLVMIsAConstantInt(v).is_null()
        || LLVMGetIntTypeWidth(LLVMTypeOf(v)) != 8
        || LLVMConstIntGetZExtValue(v) != 1
    {
        return false;
    }
    // The address: the array itself, or a constant GEP into it (an expression, or an
    // instruction with constant indices where the optimizer left one).
    let mut p = LLVMGetOperand(i, 1);
    loop {
        if !LLVMIsAGlobalVariable(p).is_null() {
            let name = value_name(p);
            return ARRAYS.iter().any(|a| name.starts_with(a));
        }
        let gep = !LLVMIsAGetElementPtrInst(p).is_null()
            || (!LLVMIsAConstantExpr(p).is_null()
                && LLVMGetConstOpcode(p) == LLVMOpcode::LLVMGetElementPtr);
        if !gep {
            return false;
        }
        p = LLVMGetOperand(p, 0);
    }
}
