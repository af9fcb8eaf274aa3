//! A unit's direct call graph, read before and after optimization.
//!
//! Inlining can leave no instruction of a callee in its caller — its code folded into the
//! caller's own lines (`return ch == ' ' || ch == '\t'` becomes one compare on the caller's
//! line) — and then neither the optimized IR nor DWARF says the callee ran there. The
//! unoptimized bitcode does: csi-cc compiles optimized units in two steps (front end without
//! LLVM passes, then the optimization pipeline on that bitcode) and records, per unit, the
//! call graph before optimization, and per function which direct calls optimization removed.
//! The reader takes the closure: what may have run inside a function that may have run.

use llvm_sys::core::*;
use llvm_sys::debuginfo::LLVMGetSubprogram;
use llvm_sys::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::instrument::{blocks, instructions, is_call, loc, scope_file_path, value_name};

/// A callee that stands for any function in [`UnitCalls::address_taken`] (an indirect call).
pub const ANY_ADDRESS_TAKEN: &str = "*";

#[derive(Default, Debug)]
pub struct UnitCalls {
    /// Defined function → direct callees the unit defines, with their number of call sites;
    /// [`ANY_ADDRESS_TAKEN`] for indirect calls.
    pub calls: BTreeMap<String, BTreeMap<String, u32>>,
    /// Defined functions whose address the unit takes (used other than as a direct callee).
    pub address_taken: Vec<String>,
    /// File → defined function → the lines its own instructions are on (before optimization
    /// nothing is inlined, so these are exactly the function's lines with code). A line of a
    /// template or of a header's `static` function belongs to every instantiation / copy:
    /// any of them that may have run, vanished into a caller or not, may have run the line.
    pub code: BTreeMap<String, BTreeMap<String, BTreeSet<u32>>>,
}

impl UnitCalls {
    /// The module record's `calls_before_optimization`.
    pub fn record(&self) -> BTreeMap<String, csi_model::sections::cfg::CallsBefore> {
        self.calls
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(f, c)| {
                (
                    f.clone(),
                    csi_model::sections::cfg::CallsBefore::Counts(c.clone()),
                )
            })
            .collect()
    }

    /// The module record's `code_before_optimization`: lines as sorted `[first, last]` runs.
    pub fn code_record(&self) -> BTreeMap<String, BTreeMap<String, Vec<[u32; 2]>>> {
        self.code
            .iter()
            .map(|(file, funcs)| {
                let runs = funcs
                    .iter()
                    .map(|(f, lines)| {
                        let mut out: Vec<[u32; 2]> = Vec::new();
                        for &l in lines {
                            match out.last_mut() {
                                Some(r) if r[1] + 1 == l => r[1] = l,
                                _ => out.push([l, l]),
                            }
                        }
                        (f.clone(), out)
                    })
                    .collect();
                (file.clone(), runs)
            })
            .collect()
    }

    /// Callees of `function` with fewer call sites in `after` (its optimized body) than before
    /// optimization: inlined or deleted.
    pub fn removed_calls(&self, function: &str, after: &HashMap<String, u32>) -> Vec<String> {
        let Some(before) = self.calls.get(function) else {
            return Vec::new();
        };
        before
            .iter()
            .filter(|(callee, &n)| after.get(callee.as_str()).copied().unwrap_or(0) < n)
            .map(|(callee, _)| callee.clone())
            .collect()
    }
}

/// Direct call sites of `f` by callee name, [`ANY_ADDRESS_TAKEN`] counting indirect calls
/// (inline assembly and intrinsics are not calls).
pub unsafe fn call_counts(f: LLVMValueRef) -> HashMap<String, u32> {
    let mut out: HashMap<String, u32> = HashMap::new();
    for bb in blocks(f) {
        for i in instructions(bb) {
            if !is_call(i) {
                continue;
            }
            let callee = LLVMGetCalledValue(i);
            if callee.is_null() || !LLVMIsAInlineAsm(callee).is_null() {
                continue;
            }
            let name = if LLVMIsAFunction(callee).is_null() {
                ANY_ADDRESS_TAKEN.to_string()
            } else if LLVMGetIntrinsicID(callee) != 0 {
                continue;
            } else {
                value_name(callee)
            };
            *out.entry(name).or_default() += 1;
        }
    }
    out
}

/// The call graph of a module (see [`UnitCalls`]).
pub unsafe fn unit_calls(m: LLVMModuleRef) -> UnitCalls {
    let mut defined: BTreeSet<String> = BTreeSet::new();
    let mut funcs = Vec::new();
    let mut f = LLVMGetFirstFunction(m);
    while !f.is_null() {
        if LLVMIsDeclaration(f) == 0 {
            defined.insert(value_name(f));
            funcs.push(f);
        }
        f = LLVMGetNextFunction(f);
    }
    let mut out = UnitCalls::default();
    for &f in &funcs {
        let calls = call_counts(f)
            .into_iter()
            .filter(|(c, _)| c == ANY_ADDRESS_TAKEN || defined.contains(c))
            .collect();
        let name = value_name(f);
        let sp = LLVMGetSubprogram(f);
        let own_file = scope_file_path(sp);
        for bb in blocks(f) {
            for i in instructions(bb) {
                if let Some((line, _, file)) = loc(i) {
                    let file = if file.is_empty() {
                        own_file.clone()
                    } else {
                        file
                    };
                    if !file.is_empty() {
                        out.code
                            .entry(file)
                            .or_default()
                            .entry(name.clone())
                            .or_default()
                            .insert(line);
                    }
                }
            }
        }
        out.calls.insert(name, calls);
        let mut u = LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !(is_call(user) && LLVMGetCalledValue(user) == f) {
                out.address_taken.push(value_name(f));
                break;
            }
            u = LLVMGetNextUse(u);
        }
    }
    out
}

/// [`unit_calls`] of a bitcode file.
pub fn unit_calls_of_file(bc: &str) -> Result<UnitCalls, String> {
    unsafe {
        let (ctx, module) = crate::instrument::read_bitcode(bc)?;
        let out = unit_calls(module);
        LLVMDisposeModule(module);
        LLVMContextDispose(ctx);
        Ok(out)
    }
}
