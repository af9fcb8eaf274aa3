//! Stack walking with DWARF call-frame information (`.eh_frame` via `.eh_frame_hdr`, gimli),
//! through libraries, the vDSO and signal trampolines; frame pointers when there is no CFI; and
//! a return-address pop when the program jumped to an address that is not code.
//!
//! Every frame keeps the register values the unwinder could recover (callee-saved registers,
//! stack and frame pointer) and its CFA, because DWARF locations of locals need them.

use gimli::{
    BaseAddresses, CfaRule, EhFrame, EhFrameHdr, EndianSlice, LittleEndian, RegisterRule,
    UnwindContext, UnwindSection,
};

use crate::core::{Registers, RBP, RIP, RSP};
use crate::process::Process;

/// How a frame's caller was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindMethod {
    /// The innermost frame: registers straight from the core.
    Context,
    Cfi,
    FramePointer,
    /// The program counter was not code: the return address was taken from the stack top.
    StackTop,
}

#[derive(Clone, Debug)]
pub struct PhysFrame {
    pub pc: u64,
    /// Registers valid in this frame (`None` = unknown, e.g. caller-saved ones in callers).
    pub regs: Registers,
    /// Canonical frame address of this frame (the stack pointer before the call into it).
    pub cfa: Option<u64>,
    /// True for the innermost frame and frames interrupted by a signal: `pc` is the faulting or
    /// next instruction itself, not a return address.
    pub exact_pc: bool,
    pub method: UnwindMethod,
}

/// Why a walk stopped before reaching the outermost frame, if it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// Reached the outermost frame (return address 0 / undefined, or `_start`).
    Complete,
    Limit(usize),
    Stuck(String),
}

const MAX_FRAMES: usize = 100_000;

type R<'a> = EndianSlice<'a, LittleEndian>;

pub struct Unwinder<'p> {
    process: &'p Process,
    ctx: UnwindContext<usize>,
}

impl<'p> Unwinder<'p> {
    pub fn new(process: &'p Process) -> Self {
        Unwinder {
            process,
            ctx: UnwindContext::new(),
        }
    }

    pub fn walk(&mut self, regs: Registers) -> (Vec<PhysFrame>, WalkEnd) {
        let mut frames: Vec<PhysFrame> = Vec::new();
        let mut cur = PhysFrame {
            pc: regs[RIP].unwrap_or(0),
            regs,
            cfa: None,
            exact_pc: true,
            method: UnwindMethod::Context,
        };
        loop {
            if frames.len() >= MAX_FRAMES {
                frames.push(cur);
                return (frames, WalkEnd::Limit(MAX_FRAMES));
            }
            let step = self.step(&mut cur, frames.is_empty());
            frames.push(cur.clone());
            match step {
                Ok(Some(next)) => {
                    // The stack grows down: a caller's frame must lie above its callee's.
                    let (sp_now, sp_next) = (cur.regs[RSP], next.regs[RSP]);
                    if let (Some(a), Some(b)) = (sp_now, sp_next) {
                        if b <= a && next.method != UnwindMethod::StackTop {
                            return (
                                frames,
                                WalkEnd::Stuck(format!(
                                    "stack pointer did not increase at pc {:#x}",
                                    cur.pc
                                )),
                            );
                        }
                    }
                    cur = next;
                }
                // An end found in the unwind tables of a file that is not the one the
                // program ran with (rebuilt since) is no evidence that the stack ends there:
                // the frames beyond it are unknown, not absent.
                Ok(None) => match self.process.module_at(cur.pc).filter(|m| m.mismatched()) {
                    Some(m) => {
                        return (
                            frames,
                            WalkEnd::Stuck(format!(
                                "ended inside {}, which differs from the file the program \
                                 ran with",
                                m.name
                            )),
                        )
                    }
                    None => return (frames, WalkEnd::Complete),
                },
                Err(why) => return (frames, WalkEnd::Stuck(why)),
            }
        }
    }

    /// Computes the caller of `f` (and `f`'s CFA). `Ok(None)` at the outermost frame.
    fn step(&mut self, f: &mut PhysFrame, innermost: bool) -> Result<Option<PhysFrame>, String> {
        let p = self.process;
        let module = p.module_at(f.pc);
        let pc_is_code = p.core.is_executable(f.pc) || module.is_some();
        if innermost && !pc_is_code {
            // A call through a bad pointer: the return address is on top of the stack.
            let sp = f.regs[RSP].ok_or("no stack pointer")?;
            let ra = p.read_u64(sp).ok_or("stack top not readable")?;
            let mut regs = f.regs;
            regs[RSP] = Some(sp.wrapping_add(8));
            regs[RIP] = Some(ra);
            f.cfa = Some(sp.wrapping_add(8));
            return Ok(Some(PhysFrame {
                pc: ra,
                regs,
                cfa: None,
                exact_pc: false,
                method: UnwindMethod::StackTop,
            }));
        }
        if let Some(m) = module {
            if let Some(u) = &m.unwind {
                if let Some((svma_eh, eh)) = &u.eh_frame {
                    match self.step_cfi(f, m.bias, u, *svma_eh, eh) {
                        Ok(next) => return Ok(next),
                        Err(CfiMiss::NoInfo) => {}
                        Err(CfiMiss::Broken(e)) => return Err(e),
                    }
                }
            }
        }
        // A leaf without call-frame information (hand-written assembly such as a system call
        // wrapper) keeps its return address on top of the stack.
        if innermost {
            if let Some(next) = self.leaf_return(f) {
                return Ok(Some(next));
            }
        }
        // Frame pointer chain.
        let Some(bp) = f.regs[RBP] else {
            return Err(format!("no unwind information for pc {:#x}", f.pc));
        };
        if bp == 0 {
            return Ok(None);
        }
        let ra = p.read_u64(bp.wrapping_add(8));
        let saved_bp = p.read_u64(bp);
        match (ra, saved_bp) {
            (Some(0), _) => Ok(None),
            (Some(ra), Some(saved)) if p.core.is_executable(ra) || p.module_at(ra).is_some() => {
                f.cfa = Some(bp.wrapping_add(16));
                let mut regs: Registers = [None; 17];
                regs[RSP] = Some(bp.wrapping_add(16));
                regs[RBP] = Some(saved);
                regs[RIP] = Some(ra);
                Ok(Some(PhysFrame {
                    pc: ra,
                    regs,
                    cfa: None,
                    exact_pc: false,
                    method: UnwindMethod::FramePointer,
                }))
            }
            _ => Err(format!(
                "no unwind information for pc {:#x} and no usable frame pointer",
                f.pc
            )),
        }
    }

    /// The caller of an innermost leaf frame without CFI, if the stack top holds a return
    /// address (code right after a call instruction).
    fn leaf_return(&self, f: &mut PhysFrame) -> Option<PhysFrame> {
        let p = self.process;
        let sp = f.regs[RSP]?;
        let ra = p.read_u64(sp)?;
        p.module_at(ra)?;
        // A call is 5 bytes (e8 rel32) or 2–7 bytes (ff /2); check the common encodings.
        let mut before = [0u8; 7];
        p.read(ra.wrapping_sub(7), &mut before).then_some(())?;
        let is_call = before[2] == 0xe8
            || (before[5] == 0xff && before[6] & 0x38 == 0x10)
            || (before[4] == 0xff && before[5] & 0x38 == 0x10)
            || (before[1] == 0xff && before[2] & 0x38 == 0x10)
            || (before[0] == 0xff && before[1] & 0x38 == 0x10);
        if !is_call {
            return None;
        }
        f.cfa = Some(sp.wrapping_add(8));
        let mut regs = f.regs;
        for r in [0usize, 1, 2, 4, 5, 8, 9, 10, 11] {
            regs[r] = None; // caller-saved
        }
        regs[RSP] = Some(sp.wrapping_add(8));
        regs[RIP] = Some(ra);
        Some(PhysFrame {
            pc: ra,
            regs,
            cfa: None,
            exact_pc: false,
            method: UnwindMethod::StackTop,
        })
    }

    fn step_cfi(
        &mut self,
        f: &mut PhysFrame,
        bias: u64,
        u: &crate::process::UnwindSections,
        svma_eh: u64,
        eh: &[u8],
    ) -> Result<Option<PhysFrame>, CfiMiss> {
        let p = self.process;
        let eh_frame = EhFrame::new(eh, LittleEndian);
        let mut bases = BaseAddresses::default()
            .set_eh_frame(svma_eh)
            .set_text(u.text);
        // A return address points after the call; look up the call itself.
        let lookup = f.pc.wrapping_sub(bias).wrapping_sub(u64::from(!f.exact_pc));
        let fde = match &u.eh_frame_hdr {
            Some((svma_hdr, hdr)) => {
                bases = bases.set_eh_frame_hdr(*svma_hdr);
                let parsed = EhFrameHdr::new(hdr, LittleEndian)
                    .parse(&bases, 8)
                    .map_err(|e| CfiMiss::Broken(format!(".eh_frame_hdr: {e}")))?;
                match parsed.table() {
                    Some(t) => {
                        t.fde_for_address(&eh_frame, &bases, lookup, EhFrame::cie_from_offset)
                    }
                    None => eh_frame.fde_for_address(&bases, lookup, EhFrame::cie_from_offset),
                }
            }
            None => eh_frame.fde_for_address(&bases, lookup, EhFrame::cie_from_offset),
        };
        let fde = fde.map_err(|_| CfiMiss::NoInfo)?;
        let row = fde
            .unwind_info_for_address(&eh_frame, &bases, &mut self.ctx, lookup)
            .map_err(|_| CfiMiss::NoInfo)?;
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => f
                .regs
                .get(register.0 as usize)
                .copied()
                .flatten()
                .map(|v| v.wrapping_add(*offset as u64)),
            CfaRule::Expression(e) => e
                .get(&eh_frame)
                .ok()
                .and_then(|e| eval_unwind_expr(p, e, &f.regs, None)),
        }
        .ok_or_else(|| CfiMiss::Broken(format!("CFA not computable at pc {:#x}", f.pc)))?;
        f.cfa = Some(cfa);
        let mut regs: Registers = [None; 17];
        // Callee-saved registers keep their values unless a rule says otherwise.
        for r in [3usize, 6, 12, 13, 14, 15] {
            regs[r] = f.regs[r];
        }
        regs[RSP] = Some(cfa);
        let ra_reg = fde.cie().return_address_register().0 as usize;
        let mut ra = None;
        for r in 0..17u16 {
            let rule = row.register(gimli::Register(r));
            let Some(rule) = rule else { continue };
            let value = match rule {
                RegisterRule::Undefined => None,
                RegisterRule::SameValue => f.regs[r as usize],
                RegisterRule::Offset(o) => p.read_u64(cfa.wrapping_add(o as u64)),
                RegisterRule::ValOffset(o) => Some(cfa.wrapping_add(o as u64)),
                RegisterRule::Register(x) => f.regs.get(x.0 as usize).copied().flatten(),
                RegisterRule::Expression(e) => e
                    .get(&eh_frame)
                    .ok()
                    .and_then(|e| eval_unwind_expr(p, e, &f.regs, Some(cfa)))
                    .and_then(|a| p.read_u64(a)),
                RegisterRule::ValExpression(e) => e
                    .get(&eh_frame)
                    .ok()
                    .and_then(|e| eval_unwind_expr(p, e, &f.regs, Some(cfa))),
                RegisterRule::Constant(c) => Some(c),
                _ => None,
            };
            if r as usize == ra_reg {
                // A return address saved in memory that cannot be read (stack memory missing
                // from a truncated core) is not the end of the stack: the walk is stuck.
                let saved = matches!(rule, RegisterRule::Offset(_) | RegisterRule::Expression(_));
                if value.is_none() && saved {
                    return Err(CfiMiss::Broken(format!(
                        "the return address of the frame at pc {:#x} is not in the core (stack memory missing)",
                        f.pc
                    )));
                }
                ra = Some(value);
            } else if (r as usize) < 17 {
                regs[r as usize] = value;
            }
        }
        let ra = match ra {
            Some(Some(v)) => v,
            // Undefined return address: the outermost frame (`_start`, thread start).
            Some(None) => return Ok(None),
            // No rule: x86-64 CIEs always give one; treat as the outermost frame.
            None => return Ok(None),
        };
        if ra == 0 {
            return Ok(None);
        }
        regs[RIP] = Some(ra);
        // A frame interrupted by a signal (its caller is a signal trampoline frame whose
        // return address is the interrupted instruction itself).
        let exact = fde.cie().is_signal_trampoline();
        Ok(Some(PhysFrame {
            pc: ra,
            regs,
            cfa: None,
            exact_pc: exact,
            method: UnwindMethod::Cfi,
        }))
    }
}

enum CfiMiss {
    NoInfo,
    Broken(String),
}

/// Evaluates a CFI expression (used by signal trampolines and some hand-written assembly).
fn eval_unwind_expr(
    p: &Process,
    e: gimli::Expression<R<'_>>,
    regs: &Registers,
    cfa: Option<u64>,
) -> Option<u64> {
    let enc = gimli::Encoding {
        address_size: 8,
        format: gimli::Format::Dwarf64,
        version: 4,
    };
    let mut eval = e.evaluation(enc);
    if let Some(c) = cfa {
        eval.set_initial_value(c);
    }
    let mut r = eval.evaluate().ok()?;
    loop {
        r = match r {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresMemory { address, size, .. } => {
                let mut b = [0u8; 8];
                p.read(address, &mut b[..size as usize]).then_some(())?;
                eval.resume_with_memory(gimli::Value::Generic(u64::from_le_bytes(b)))
                    .ok()?
            }
            gimli::EvaluationResult::RequiresRegister { register, .. } => {
                let v = regs.get(register.0 as usize).copied().flatten()?;
                eval.resume_with_register(gimli::Value::Generic(v)).ok()?
            }
            _ => return None,
        };
    }
    match eval.result().first()?.location {
        gimli::Location::Address { address } => Some(address),
        gimli::Location::Value { value } => value.to_u64(!0).ok(),
        _ => None,
    }
}
