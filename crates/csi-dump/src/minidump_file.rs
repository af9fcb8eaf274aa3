//! Minidumps (Breakpad, Crashpad, Sentry Native, `minidump-writer`) read as the same
//! [`CoreFile`] an ELF core gives: thread contexts become registers, the memory list becomes
//! dumped segments, `/proc/PID/maps` (the `LinuxMaps` stream) gives the file mappings, and
//! `LinuxAuxv` the auxiliary vector, so unwinding, DWARF variables and csi-cc's per-frame state
//! (`__PT_*`, `__CC_arr` live on the stack) work unchanged. Writable mappings the minidump
//! does not hold (`.data`/`.bss`, where the global coverage arrays live, unless the program
//! registered them as an extra memory range) are marked *unknown*: never read from the file,
//! never taken as evidence.

use std::path::Path;

use minidump::{
    format::MINIDUMP_STREAM_TYPE, CodeView, Minidump, MinidumpException, MinidumpModuleList,
    MinidumpRawContext, MinidumpSystemInfo, MinidumpThreadList,
};

use crate::core::{CoreFile, FileMapping, Registers, SegmentSpec, SigInfo, ThreadState};
use crate::error::DumpError;

/// Does the file start like a minidump (`MDMP`)?
pub fn is_minidump(head: &[u8]) -> bool {
    head.starts_with(b"MDMP")
}

/// One line of `/proc/PID/maps`: (start, end, writable, offset, path).
fn parse_maps(text: &str) -> Vec<(u64, u64, bool, u64, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms, off) = (f.next()?, f.next()?, f.next()?);
            let (a, b) = range.split_once('-')?;
            let _dev = f.next()?;
            let _inode = f.next()?;
            let path = f.collect::<Vec<_>>().join(" ");
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
                perms.as_bytes().get(1) == Some(&b'w'),
                u64::from_str_radix(off, 16).ok()?,
                path,
            ))
        })
        .collect()
}

pub fn open(path: &Path) -> Result<CoreFile, DumpError> {
    let bad = |what: String| DumpError::Corrupt {
        path: path.to_path_buf(),
        what: format!("minidump: {what}"),
    };
    let dump = Minidump::read_path(path).map_err(|e| bad(e.to_string()))?;
    let system: MinidumpSystemInfo = dump
        .get_stream()
        .map_err(|e| bad(format!("no system info stream ({e})")))?;
    let threads_stream: MinidumpThreadList = dump
        .get_stream()
        .map_err(|e| bad(format!("no thread list ({e})")))?;
    let exception: Option<MinidumpException> = dump.get_stream().ok();
    // Memory: every range the writer saved, as present segments of one buffer.
    let memory = dump.get_memory();
    let mut ranges: Vec<(u64, &[u8])> = Vec::new();
    if let Some(mem) = &memory {
        for m in mem.iter() {
            ranges.push((m.base_address(), m.bytes()));
        }
    }
    let (bytes, mut segments) = saved_memory(ranges);
    // Mappings and auxv from the Linux streams.
    let maps = dump
        .get_raw_stream(MINIDUMP_STREAM_TYPE::LinuxMaps as u32)
        .map(|b| parse_maps(&String::from_utf8_lossy(b)))
        .unwrap_or_default();
    if maps.is_empty() {
        return Err(bad(
            "no /proc/PID/maps stream (LinuxMaps): not a Linux minidump, or its writer omits the mappings".into(),
        ));
    }
    let mut mappings = Vec::new();
    for (start, end, writable, offset, p) in &maps {
        if p.starts_with('/') {
            mappings.push(FileMapping {
                start: *start,
                end: *end,
                offset: *offset,
                path: p.clone(),
            });
        }
        if *writable {
            // Writable memory not in the minidump is unknown (not the file's initial bytes).
            let unsaved = unknown_segments(&segments, *start, *end);
            segments.extend(unsaved);
        }
    }
    let auxv: Vec<(u64, u64)> = dump
        .get_raw_stream(MINIDUMP_STREAM_TYPE::LinuxAuxv as u32)
        .map(parse_auxv)
        .unwrap_or_default();
    // Build ids of the modules, for the match check (the first page of a module is not in a
    // minidump).
    let mut module_build_ids = Vec::new();
    if let Ok(modules) = dump.get_stream::<MinidumpModuleList>() {
        for m in modules.iter() {
            if let Some(CodeView::Elf(cv)) = &m.codeview_info {
                module_build_ids.push((m.raw.base_of_image, cv.build_id.clone()));
            }
        }
    }
    // Threads: the one the exception names first (the crashing thread).
    let crashing_tid = exception.as_ref().map(|e| e.thread_id);
    let mut threads = amd64_threads(path, &threads_stream, &system)?;
    if threads.is_empty() {
        return Err(bad("no thread with an x86-64 register context".into()));
    }
    if let Some(k) = crashing_tid.and_then(|tid| threads.iter().position(|t| t.tid == tid)) {
        threads.swap(0, k);
    }
    let siginfo = exception.as_ref().and_then(linux_signal);
    if let (Some(s), Some(t)) = (&siginfo, threads.first_mut()) {
        t.cursig = s.signo;
    }
    let command = dump
        .get_raw_stream(MINIDUMP_STREAM_TYPE::LinuxCmdLine as u32)
        .ok()
        .map(parse_command_line);
    Ok(CoreFile::from_parts(
        path,
        bytes,
        segments,
        threads,
        siginfo,
        mappings,
        auxv,
        command,
        module_build_ids,
    ))
}

/// The saved memory ranges (base, bytes) concatenated into one buffer, with a present segment
/// for each.
fn saved_memory(mut ranges: Vec<(u64, &[u8])>) -> (Vec<u8>, Vec<SegmentSpec>) {
    ranges.sort_by_key(|r| r.0);
    let mut bytes: Vec<u8> = Vec::new();
    let mut segments: Vec<SegmentSpec> = Vec::new();
    let mut end_so_far = 0u64;
    for (base, data) in ranges {
        // Overlapping ranges (a thread's stack and the memory around its pc): keep the first.
        let skip = end_so_far.saturating_sub(base).min(data.len() as u64) as usize;
        let (base, data) = (base + skip as u64, &data[skip..]);
        if data.is_empty() {
            continue;
        }
        segments.push(SegmentSpec {
            vaddr: base,
            memsz: data.len() as u64,
            offset: bytes.len() as u64,
            filesz: data.len() as u64,
            present: data.len() as u64,
            executable: false,
        });
        bytes.extend_from_slice(data);
        end_so_far = base + data.len() as u64;
    }
    (bytes, segments)
}

/// Segments of unknown memory (not present) for the parts of the mapping `start..end` that no
/// segment of `segments` covers.
fn unknown_segments(segments: &[SegmentSpec], start: u64, end: u64) -> Vec<SegmentSpec> {
    let mut at = start;
    let covered: Vec<(u64, u64)> = segments
        .iter()
        .filter(|s| s.vaddr < end && s.vaddr + s.memsz > start)
        .map(|s| (s.vaddr.max(start), (s.vaddr + s.memsz).min(end)))
        .collect();
    let mut gaps = Vec::new();
    for (a, b) in covered {
        if a > at {
            gaps.push((at, a));
        }
        at = at.max(b);
    }
    if at < end {
        gaps.push((at, end));
    }
    gaps.into_iter()
        .map(|(a, b)| SegmentSpec {
            vaddr: a,
            memsz: b - a,
            offset: 0,
            filesz: b - a,
            present: 0,
            executable: false,
        })
        .collect()
}

/// The auxiliary vector (`LinuxAuxv` stream): (key, value) pairs up to `AT_NULL`.
fn parse_auxv(b: &[u8]) -> Vec<(u64, u64)> {
    b.chunks_exact(16)
        .map(|c| {
            (
                u64::from_le_bytes(c[..8].try_into().unwrap()),
                u64::from_le_bytes(c[8..].try_into().unwrap()),
            )
        })
        .take_while(|&(k, _)| k != 0)
        .collect()
}

/// The threads that have a register context, in the minidump's order; an error for a
/// non-x86-64 context.
fn amd64_threads(
    path: &Path,
    threads_stream: &MinidumpThreadList,
    system: &MinidumpSystemInfo,
) -> Result<Vec<ThreadState>, DumpError> {
    let mut threads = Vec::new();
    for t in &threads_stream.threads {
        let Some(ctx) = t.context(system, None) else {
            continue;
        };
        let MinidumpRawContext::Amd64(c) = &ctx.raw else {
            return Err(DumpError::Unsupported {
                path: path.to_path_buf(),
                what: "minidump of a non-x86-64 process; only x86-64 is supported".into(),
            });
        };
        let mut regs: Registers = [None; 17];
        for (k, v) in [
            c.rax, c.rdx, c.rcx, c.rbx, c.rsi, c.rdi, c.rbp, c.rsp, c.r8, c.r9, c.r10, c.r11,
            c.r12, c.r13, c.r14, c.r15, c.rip,
        ]
        .into_iter()
        .enumerate()
        {
            regs[k] = Some(v);
        }
        threads.push(ThreadState {
            tid: t.raw.thread_id,
            cursig: 0,
            regs,
            fs_base: 0,
        });
    }
    Ok(threads)
}

/// A Linux signal (writers store the signal number as the exception code; a requested dump
/// has code 0xffffffff).
fn linux_signal(e: &MinidumpException) -> Option<SigInfo> {
    let code = e.raw.exception_record.exception_code;
    (1..=64).contains(&code).then(|| SigInfo {
        signo: code as i32,
        code: e.raw.exception_record.exception_flags as i32,
        fault_address: matches!(code, 4 | 5 | 7 | 8 | 11)
            .then_some(e.raw.exception_record.exception_address),
        sender_pid: None,
    })
}

/// The command line (`LinuxCmdLine` stream: NUL-separated arguments), space-joined.
fn parse_command_line(b: &[u8]) -> String {
    b.split(|&c| c == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
