//! Def/use sets of `.debug_CSI_CFG` nodes (format version 3), the input of slicing.
//!
//! Every name a node uses or defines is one of:
//! - a local variable's stack slot (`alloca`), by its LLVM name (`x`, `x.addr`);
//! - a global variable, `@name`;
//! - an SSA value defined in another node, `%<k>` (`k` = the instruction's index in the
//!   function), or a parameter, `%arg<i>`;
//! - `$ret`, the function's return value (defined where it returns);
//! - `*`, memory reached through a pointer the compiler cannot name: it may be any global, any
//!   `escaped` local (one whose address is used other than to load or store it), or the heap.
//!
//! A store to a named slot is a must-def only when it covers the slot (not through a `getelementptr`
//! into an array or struct). Calls carry their arguments (`args`: the names each actual uses)
//! and their result (`result`), so the slicer can build actual-in/out nodes; what the callee
//! reads and writes of globals and `*` is computed by the slicer from the callee's own sets.
//! Intrinsics that touch memory (`memcpy`, `memset`, atomics) and inline assembly are accounted
//! in the node that contains them.

use csi_model::sections::cfg::{CfgCall, CfgFunction};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};
use std::collections::{BTreeSet, HashMap};

use crate::instrument::{blocks, instructions, value_name};

/// What a pointer designates: a named slot (`exact` when the pointer is the slot itself), or
/// unknown memory.
enum Location {
    Named {
        name: String,
        exact: bool,
    },
    /// Read-only memory (`const` globals, string literals): reading it depends on nothing.
    Constant,
    Unknown,
}

struct Names {
    index: HashMap<LLVMValueRef, usize>,
    by_index: Vec<LLVMValueRef>,
    params: HashMap<LLVMValueRef, usize>,
}

impl Names {
    unsafe fn new(f: LLVMValueRef) -> Self {
        let mut index = HashMap::new();
        let mut by_index = Vec::new();
        for bb in blocks(f) {
            for i in instructions(bb) {
                index.insert(i, by_index.len());
                by_index.push(i);
            }
        }
        let mut params = HashMap::new();
        for p in 0..LLVMCountParams(f) {
            params.insert(LLVMGetParam(f, p), p as usize);
        }
        Names {
            index,
            by_index,
            params,
        }
    }

    /// Name of an alloca or global (the slot), `None` for anything else.
    unsafe fn slot(&self, v: LLVMValueRef) -> Option<String> {
        if !LLVMIsAAllocaInst(v).is_null() {
            let n = value_name(v);
            return Some(if n.is_empty() {
                format!("%slot{}", self.index[&v])
            } else {
                n
            });
        }
        if !LLVMIsAGlobalVariable(v).is_null() {
            return Some(format!("@{}", value_name(v)));
        }
        None
    }

    unsafe fn location(&self, p: LLVMValueRef) -> Location {
        let mut v = p;
        let mut exact = true;
        for _ in 0..16 {
            if !LLVMIsAGlobalVariable(v).is_null() && LLVMIsGlobalConstant(v) != 0 {
                return Location::Constant;
            }
            if let Some(name) = self.slot(v) {
                return Location::Named { name, exact };
            }
            if !LLVMIsAGetElementPtrInst(v).is_null() {
                v = LLVMGetOperand(v, 0);
                exact = false;
                continue;
            }
            if !LLVMIsAConstantExpr(v).is_null()
                && LLVMGetConstOpcode(v) == LLVMOpcode::LLVMGetElementPtr
            {
                v = LLVMGetOperand(v, 0);
                exact = false;
                continue;
            }
            break;
        }
        Location::Unknown
    }

    /// The SSA name of a value as used in node `at` (`None` for constants, globals' addresses
    /// and values computed in the same node, whose inputs the node's own sets already hold).
    unsafe fn value(
        &self,
        v: LLVMValueRef,
        at: u32,
        node_of: &HashMap<LLVMValueRef, u32>,
    ) -> Option<String> {
        if let Some(&p) = self.params.get(&v) {
            return Some(format!("%arg{p}"));
        }
        if LLVMIsAInstruction(v).is_null() || !LLVMIsAAllocaInst(v).is_null() {
            return None;
        }
        match node_of.get(&v) {
            Some(&n) if n == at => None,
            Some(_) => Some(format!("%{}", self.index[&v])),
            None => None,
        }
    }

    /// Like [`value`], but also names a value computed in the same node (call arguments and
    /// returned values need a name to connect to).
    unsafe fn value_anywhere(&self, v: LLVMValueRef) -> Option<String> {
        if let Some(&p) = self.params.get(&v) {
            return Some(format!("%arg{p}"));
        }
        if LLVMIsAInstruction(v).is_null() || !LLVMIsAAllocaInst(v).is_null() {
            return None;
        }
        Some(format!("%{}", self.index[&v]))
    }
}

fn push(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// Locals whose address escapes: used other than as the address of a load or store (through
/// `getelementptr`s), or as a memory intrinsic's operand.
unsafe fn escaped_allocas(f: LLVMValueRef, names: &Names) -> Vec<String> {
    let mut out = BTreeSet::new();
    for bb in blocks(f) {
        for i in instructions(bb) {
            if !LLVMIsAAllocaInst(i).is_null() && address_escapes(i) {
                if let Some(n) = names.slot(i) {
                    out.insert(n);
                }
            }
        }
    }
    out.into_iter().collect()
}

unsafe fn address_escapes(v: LLVMValueRef) -> bool {
    let mut u = LLVMGetFirstUse(v);
    while !u.is_null() {
        let user = LLVMGetUser(u);
        let ok = if !LLVMIsALoadInst(user).is_null() {
            true
        } else if !LLVMIsAStoreInst(user).is_null() {
            LLVMGetOperand(user, 0) != v
        } else if !LLVMIsAGetElementPtrInst(user).is_null() {
            LLVMGetOperand(user, 0) == v && !address_escapes(user)
        } else if !LLVMIsACallInst(user).is_null() {
            matches!(
                intrinsic_kind(user),
                Some(Intrinsic::Memory | Intrinsic::Ignored)
            )
        } else {
            false
        };
        if !ok {
            return true;
        }
        u = LLVMGetNextUse(u);
    }
    false
}

enum Intrinsic {
    /// `memcpy`/`memmove` (dst, src) and `memset` (dst).
    Memory,
    /// No effect on program data (`llvm.dbg.*`, `llvm.lifetime.*`, `llvm.assume`, ...).
    Ignored,
    /// Anything else: may read and write what its pointer operands point to.
    Other,
}

unsafe fn intrinsic_kind(call: LLVMValueRef) -> Option<Intrinsic> {
    let callee = LLVMGetCalledValue(call);
    if LLVMIsAFunction(callee).is_null() || LLVMGetIntrinsicID(callee) == 0 {
        return None;
    }
    let name = value_name(callee);
    Some(
        if ["llvm.memcpy", "llvm.memmove", "llvm.memset"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            Intrinsic::Memory
        } else if [
            "llvm.dbg.",
            "llvm.lifetime.",
            "llvm.assume",
            "llvm.expect",
            "llvm.experimental.noalias",
            "llvm.invariant.",
            "llvm.pseudoprobe",
            "llvm.donothing",
        ]
        .iter()
        .any(|p| name.starts_with(p))
        {
            Intrinsic::Ignored
        } else {
            Intrinsic::Other
        },
    )
}

unsafe fn is_pointer(v: LLVMValueRef) -> bool {
    LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMTypeKind::LLVMPointerTypeKind
}

/// Fills `uses`/`must_defs`/`may_defs` of every node, `args`/`result` of every call and the
/// function's `params`/`escaped`. `node_of` maps each instruction to the node holding it.
pub(crate) unsafe fn fill(
    f: LLVMValueRef,
    node_of: &HashMap<LLVMValueRef, u32>,
    cfg: &mut CfgFunction,
) {
    let names = Names::new(f);
    cfg.params = Some(LLVMCountParams(f));
    cfg.escaped = Some(escaped_allocas(f, &names));
    for bb in blocks(f) {
        for i in instructions(bb) {
            let Some(&n) = node_of.get(&i) else { continue };
            let node = &mut cfg.nodes[n as usize];
            let op = LLVMGetInstructionOpcode(i);
            let use_loc =
                |node: &mut csi_model::sections::cfg::CfgNode, p: LLVMValueRef| match names
                    .location(p)
                {
                    Location::Named { name, .. } => push(&mut node.uses, name),
                    Location::Constant => {}
                    Location::Unknown => push(&mut node.uses, "*".into()),
                };
            let def_loc =
                |node: &mut csi_model::sections::cfg::CfgNode, p: LLVMValueRef, whole: bool| {
                    match names.location(p) {
                        Location::Named { name, exact } if exact && whole => {
                            push(&mut node.must_defs, name)
                        }
                        Location::Named { name, .. } => push(&mut node.may_defs, name),
                        // Writing read-only memory faults; it defines nothing another load reads.
                        Location::Constant => {}
                        Location::Unknown => push(&mut node.may_defs, "*".into()),
                    }
                };
            // SSA inputs from other nodes (the address operands of loads and stores too: a
            // pointer computed elsewhere is a dependence on that computation).
            let ops = LLVMGetNumOperands(i).max(0) as u32;
            let is_call = !LLVMIsACallInst(i).is_null();
            for k in 0..ops {
                let o = LLVMGetOperand(i, k);
                if o.is_null() {
                    continue;
                }
                if let Some(s) = names.value(o, n, node_of) {
                    push(&mut node.uses, s);
                }
            }
            match op {
                LLVMOpcode::LLVMLoad => use_loc(node, LLVMGetOperand(i, 0)),
                LLVMOpcode::LLVMStore => def_loc(node, LLVMGetOperand(i, 1), true),
                LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => {
                    use_loc(node, LLVMGetOperand(i, 0));
                    def_loc(node, LLVMGetOperand(i, 0), false);
                }
                LLVMOpcode::LLVMVAArg => {
                    push(&mut node.uses, "*".into());
                    push(&mut node.may_defs, "*".into());
                }
                // The returned value's inputs are already the node's uses.
                LLVMOpcode::LLVMRet if ops > 0 => push(&mut node.must_defs, "$ret".into()),
                _ => {}
            }
            if is_call {
                let callee = LLVMGetCalledValue(i);
                if !LLVMIsAInlineAsm(callee).is_null() {
                    push(&mut node.uses, "*".into());
                    push(&mut node.may_defs, "*".into());
                    continue;
                }
                match intrinsic_kind(i) {
                    Some(Intrinsic::Ignored) => {}
                    Some(Intrinsic::Memory) => {
                        let name = value_name(callee);
                        def_loc(node, LLVMGetOperand(i, 0), false);
                        if !name.starts_with("llvm.memset") {
                            use_loc(node, LLVMGetOperand(i, 1));
                        }
                    }
                    Some(Intrinsic::Other) => {
                        for k in 0..LLVMGetNumArgOperands(i) {
                            let a = LLVMGetOperand(i, k);
                            if is_pointer(a) {
                                use_loc(node, a);
                                def_loc(node, a, false);
                            }
                        }
                    }
                    None => {
                        // A call site: its node ends here, the call's effects are the callee's.
                        if let Some(call) = node.call.as_mut() {
                            fill_call(call, i, &names);
                        }
                    }
                }
            }
        }
    }
    // Each SSA value referenced from elsewhere is must-defined by the node computing it, except
    // a call's result, which its call's actual-out defines.
    let mut referenced = BTreeSet::new();
    for node in &cfg.nodes {
        let args = node
            .call
            .iter()
            .flat_map(|c| c.args.iter().flatten().flatten());
        for s in node.uses.iter().chain(args) {
            if let Some(k) = s.strip_prefix('%').and_then(|k| k.parse::<usize>().ok()) {
                referenced.insert(k);
            }
        }
    }
    for k in referenced {
        let v = names.by_index[k];
        if crate::instrument::call_site(v).is_some() {
            continue;
        }
        if let Some(&m) = node_of.get(&v) {
            push(&mut cfg.nodes[m as usize].must_defs, format!("%{k}"));
        }
    }
    for node in &mut cfg.nodes {
        node.uses.sort();
        node.must_defs.sort();
        node.may_defs.sort();
    }
}

unsafe fn fill_call(call: &mut CfgCall, i: LLVMValueRef, names: &Names) {
    let mut args = Vec::new();
    for k in 0..LLVMGetNumArgOperands(i) {
        let a = LLVMGetOperand(i, k);
        args.push(names.value_anywhere(a).into_iter().collect::<Vec<_>>());
    }
    call.args = Some(args);
    if LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMTypeKind::LLVMVoidTypeKind
        && !LLVMGetFirstUse(i).is_null()
    {
        call.result = names.value_anywhere(i);
    }
}
