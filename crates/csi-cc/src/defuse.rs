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

use csi_model::sections::cfg::{CfgCall, CfgFunction, CfgStmt};
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
        at: Unit,
        unit_of: &HashMap<LLVMValueRef, Unit>,
    ) -> Option<String> {
        if let Some(&p) = self.params.get(&v) {
            return Some(format!("%arg{p}"));
        }
        if LLVMIsAInstruction(v).is_null() || !LLVMIsAAllocaInst(v).is_null() {
            return None;
        }
        match unit_of.get(&v) {
            Some(&u) if u == at => None,
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

/// A statement group: (node, index of the group in the node). A node's instructions are split
/// into groups at source-line changes (instructions without a line stay in the current group;
/// leading ones, such as parameter stores, form a group without a line), so a slice can tell
/// the statements of one node apart.
type Unit = (u32, u32);

/// Def/use sets of one statement group.
#[derive(Default)]
struct Sets {
    line: Option<u32>,
    uses: Vec<String>,
    must_defs: Vec<String>,
    may_defs: Vec<String>,
}

/// Fills `uses`/`must_defs`/`may_defs` of every node (and `stmts`, per statement group, when a
/// node has several), `args`/`result` of every call and the function's `params`/`escaped`.
/// `node_of` maps each instruction to the node holding it.
pub(crate) unsafe fn fill(
    f: LLVMValueRef,
    node_of: &HashMap<LLVMValueRef, u32>,
    cfg: &mut CfgFunction,
) {
    let names = Names::new(f);
    cfg.params = Some(LLVMCountParams(f));
    cfg.escaped = Some(escaped_allocas(f, &names));
    let (unit_of, mut groups) = statement_groups(f, node_of, cfg.nodes.len());
    for bb in blocks(f) {
        for i in instructions(bb) {
            if let Some(&unit) = unit_of.get(&i) {
                instruction_sets(i, unit, &mut groups, &names, &unit_of, cfg);
            }
        }
    }
    define_referenced_values(&mut groups, cfg, &names, &unit_of);
    store_sets(cfg, groups);
}

/// Statement groups, in instruction order: each node's instructions split where the line
/// changes; `unit_of` maps an instruction to its (node, group).
#[allow(clippy::type_complexity)]
unsafe fn statement_groups(
    f: LLVMValueRef,
    node_of: &HashMap<LLVMValueRef, u32>,
    nodes: usize,
) -> (HashMap<LLVMValueRef, Unit>, Vec<Vec<Sets>>) {
    let mut unit_of: HashMap<LLVMValueRef, Unit> = HashMap::new();
    let mut groups: Vec<Vec<Sets>> = (0..nodes).map(|_| Vec::new()).collect();
    for bb in blocks(f) {
        for i in instructions(bb) {
            let Some(&n) = node_of.get(&i) else { continue };
            let gs = &mut groups[n as usize];
            let line = crate::instrument::loc(i).map(|l| l.0);
            match (gs.last_mut(), line) {
                (None, _) => gs.push(Sets {
                    line,
                    ..Sets::default()
                }),
                (Some(g), Some(l)) if g.line != Some(l) => gs.push(Sets {
                    line,
                    ..Sets::default()
                }),
                _ => {}
            }
            unit_of.insert(i, (n, gs.len() as u32 - 1));
        }
    }
    (unit_of, groups)
}

/// What instruction `i` of statement group `unit` uses and defines, added to its group's
/// sets (a call site's actuals to its node's call record).
unsafe fn instruction_sets(
    i: LLVMValueRef,
    unit: Unit,
    groups: &mut [Vec<Sets>],
    names: &Names,
    unit_of: &HashMap<LLVMValueRef, Unit>,
    cfg: &mut CfgFunction,
) {
    let (n, g) = unit;
    let sets = &mut groups[n as usize][g as usize];
    let op = LLVMGetInstructionOpcode(i);
    let use_loc = |sets: &mut Sets, p: LLVMValueRef| match names.location(p) {
        Location::Named { name, .. } => push(&mut sets.uses, name),
        Location::Constant => {}
        Location::Unknown => push(&mut sets.uses, "*".into()),
    };
    let def_loc = |sets: &mut Sets, p: LLVMValueRef, whole: bool| match names.location(p) {
        Location::Named { name, exact } if exact && whole => push(&mut sets.must_defs, name),
        Location::Named { name, .. } => push(&mut sets.may_defs, name),
        // Writing read-only memory faults; it defines nothing another load reads.
        Location::Constant => {}
        Location::Unknown => push(&mut sets.may_defs, "*".into()),
    };
    // SSA inputs from other statement groups (the address operands of loads and stores
    // too: a pointer computed elsewhere is a dependence on that computation).
    let ops = LLVMGetNumOperands(i).max(0) as u32;
    let is_call = crate::instrument::is_call(i);
    for k in 0..ops {
        let o = LLVMGetOperand(i, k);
        if o.is_null() {
            continue;
        }
        if let Some(s) = names.value(o, unit, unit_of) {
            push(&mut sets.uses, s);
        }
    }
    match op {
        LLVMOpcode::LLVMLoad => use_loc(sets, LLVMGetOperand(i, 0)),
        LLVMOpcode::LLVMStore => def_loc(sets, LLVMGetOperand(i, 1), true),
        LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => {
            use_loc(sets, LLVMGetOperand(i, 0));
            def_loc(sets, LLVMGetOperand(i, 0), false);
        }
        LLVMOpcode::LLVMVAArg => {
            push(&mut sets.uses, "*".into());
            push(&mut sets.may_defs, "*".into());
        }
        // The returned value's inputs are already the group's uses.
        LLVMOpcode::LLVMRet if ops > 0 => push(&mut sets.must_defs, "$ret".into()),
        _ => {}
    }
    if is_call {
        let callee = LLVMGetCalledValue(i);
        if !LLVMIsAInlineAsm(callee).is_null() {
            push(&mut sets.uses, "*".into());
            push(&mut sets.may_defs, "*".into());
            return;
        }
        match intrinsic_kind(i) {
            Some(Intrinsic::Ignored) => {}
            Some(Intrinsic::Memory) => {
                let name = value_name(callee);
                def_loc(sets, LLVMGetOperand(i, 0), false);
                if !name.starts_with("llvm.memset") {
                    use_loc(sets, LLVMGetOperand(i, 1));
                }
            }
            Some(Intrinsic::Other) => {
                for k in 0..LLVMGetNumArgOperands(i) {
                    let a = LLVMGetOperand(i, k);
                    if is_pointer(a) {
                        use_loc(sets, a);
                        def_loc(sets, a, false);
                    }
                }
            }
            None => {
                // A call site: its node ends here, the call's effects are the callee's.
                if let Some(call) = cfg.nodes[n as usize].call.as_mut() {
                    fill_call(call, i, names);
                }
            }
        }
    }
}

/// Each SSA value referenced from elsewhere is must-defined by the group computing it,
/// except a call's result, which its call's actual-out defines.
unsafe fn define_referenced_values(
    groups: &mut [Vec<Sets>],
    cfg: &CfgFunction,
    names: &Names,
    unit_of: &HashMap<LLVMValueRef, Unit>,
) {
    let mut referenced = BTreeSet::new();
    for (n, gs) in groups.iter().enumerate() {
        let args = cfg.nodes[n]
            .call
            .iter()
            .flat_map(|c| c.args.iter().flatten().flatten());
        for s in gs.iter().flat_map(|g| g.uses.iter()).chain(args) {
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
        if let Some(&(n, g)) = unit_of.get(&v) {
            push(
                &mut groups[n as usize][g as usize].must_defs,
                format!("%{k}"),
            );
        }
    }
}

/// The groups' sets as the nodes' (sorted), and as statements where a node has several.
fn store_sets(cfg: &mut CfgFunction, groups: Vec<Vec<Sets>>) {
    for (node, gs) in cfg.nodes.iter_mut().zip(groups) {
        for g in &gs {
            for u in &g.uses {
                push(&mut node.uses, u.clone());
            }
            for d in &g.must_defs {
                push(&mut node.must_defs, d.clone());
            }
            for d in &g.may_defs {
                push(&mut node.may_defs, d.clone());
            }
        }
        node.uses.sort();
        node.must_defs.sort();
        node.may_defs.sort();
        if gs.len() > 1 {
            node.stmts = gs
                .into_iter()
                .map(|mut g| {
                    g.uses.sort();
                    g.must_defs.sort();
                    g.may_defs.sort();
                    CfgStmt {
                        line: g.line,
                        uses: g.uses,
                        must_defs: g.must_defs,
                        may_defs: g.may_defs,
                    }
                })
                .collect();
        }
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
