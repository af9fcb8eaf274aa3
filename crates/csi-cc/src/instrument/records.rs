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
