//! Disassembly of the crashed process's code for the debugger (iced-x86, AT&T syntax as gdb
//! prints it), each instruction with its symbol and source line.
//!
//! x86 cannot be decoded backwards, so instructions before an address are found by decoding
//! forward from the start of the function containing it.

use dap::types::{DisassembledInstruction, Source};
use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction};

use csi_dump::Crash;

/// `count` instructions starting `first` instructions from the one at `address` (negative:
/// before it). Addresses that cannot be read or decoded come back as `??` placeholders, so the
/// client always gets `count` entries.
pub fn around(
    crash: &Crash,
    address: u64,
    first: i64,
    count: usize,
) -> Vec<DisassembledInstruction> {
    let mut before: Vec<(u64, Vec<u8>, String)> = Vec::new();
    if first < 0 {
        let start = match crash.symbol_at(address) {
            Some((_, off)) if off < 1 << 20 => address - off,
            _ => address.saturating_sub(64 * 15),
        };
        before = decode(crash, start, address, usize::MAX);
        // Only instructions that end exactly at `address` keep the alignment.
        if before
            .last()
            .is_some_and(|(a, b, _)| a + b.len() as u64 != address)
        {
            before.clear();
        }
    }
    let want_after = (first + count as i64).max(0) as usize;
    let after = decode(crash, address, u64::MAX, want_after);
    let mut all: Vec<Option<(u64, Vec<u8>, String)>> = Vec::new();
    let skip_before = (-first).max(0) as usize;
    // Placeholders where the function started too late to provide `-first` instructions.
    for _ in before.len()..skip_before {
        all.push(None);
    }
    let n = before.len();
    all.extend(
        before
            .into_iter()
            .skip(n.saturating_sub(skip_before))
            .map(Some),
    );
    let from_after = first.max(0) as usize;
    all.extend(after.into_iter().skip(from_after).map(Some));
    all.truncate(count);
    while all.len() < count {
        all.push(None);
    }
    let mut last_line: Option<(String, u32)> = None;
    all.into_iter()
        .map(|i| match i {
            Some((a, bytes, text)) => {
                let loc = crash.source_at(a);
                let symbol =
                    crash
                        .symbol_at(a)
                        .map(|(s, off)| if off == 0 { s } else { format!("{s}+{off}") });
                let here = loc.as_ref().map(|l| (l.file.clone(), l.line));
                // Lines are given where they change, as debuggers group instructions.
                let new_line = here.is_some() && here != last_line;
                last_line = here;
                DisassembledInstruction {
                    address: format!("{a:#x}"),
                    instruction_bytes: Some(
                        bytes
                            .iter()
                            .map(|b| format!("{b:02x}"))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    instruction: text,
                    symbol,
                    location: loc.as_ref().filter(|_| new_line).map(|l| Source {
                        name: std::path::Path::new(&l.file)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned()),
                        path: Some(l.file.clone()),
                        ..Default::default()
                    }),
                    line: loc.as_ref().filter(|_| new_line).map(|l| l.line as i64),
                    column: None,
                    end_line: None,
                    end_column: None,
                }
            }
            None => DisassembledInstruction {
                address: "0x0".into(),
                instruction_bytes: None,
                instruction: "??".into(),
                symbol: None,
                location: None,
                line: None,
                column: None,
                end_line: None,
                end_column: None,
            },
        })
        .collect()
}

/// Instructions from `start` while below `end`, at most `max`, stopping where memory ends.
fn decode(crash: &Crash, start: u64, end: u64, max: usize) -> Vec<(u64, Vec<u8>, String)> {
    let mut out = Vec::new();
    let mut at = start;
    let mut formatter = GasFormatter::new();
    while at < end && out.len() < max {
        // Readable bytes from here: up to a page's worth per round.
        let window = (end - at).min(4096) as usize;
        let bytes = crash.read_memory(at, window.max(15));
        if bytes.is_empty() {
            break;
        }
        let mut decoder = Decoder::with_ip(64, &bytes, at, DecoderOptions::NONE);
        let mut ins = Instruction::default();
        let mut progressed = false;
        while decoder.can_decode() && out.len() < max {
            let pos = decoder.position();
            decoder.decode_out(&mut ins);
            if ins.is_invalid() {
                // A truncated instruction at the window's end is decoded in the next round.
                if pos + 15 > bytes.len() && bytes.len() == window.max(15) {
                    break;
                }
                return out;
            }
            if ins.ip() >= end {
                return out;
            }
            let mut text = String::new();
            formatter.format(&ins, &mut text);
            out.push((ins.ip(), bytes[pos..pos + ins.len()].to_vec(), text));
            at = ins.next_ip();
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    out
}
