//! The ELF core file: threads and registers (`NT_PRSTATUS`), signal (`NT_SIGINFO`), process
//! (`NT_PRPSINFO`), auxiliary vector (`NT_AUXV`), mapped files (`NT_FILE`), and the dumped
//! memory (`PT_LOAD`). The file is memory-mapped and read lazily; nothing is copied.

use std::path::{Path, PathBuf};

use crate::process::ImageBytes;
use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, ProgramHeader};
use object::LittleEndian as LE;

use crate::error::DumpError;

/// General-purpose registers in DWARF numbering for x86-64 (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi,
/// 5 rdi, 6 rbp, 7 rsp, 8–15 r8–r15, 16 rip). `None` = not known in this frame.
pub type Registers = [Option<u64>; 17];

pub const RBP: usize = 6;
pub const RSP: usize = 7;
pub const RIP: usize = 16;

#[derive(Clone, Debug)]
pub struct ThreadState {
    pub tid: u32,
    /// The signal that was being delivered to this thread (`pr_cursig`), 0 if none.
    pub cursig: i32,
    pub regs: Registers,
    pub fs_base: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigInfo {
    pub signo: i32,
    pub code: i32,
    /// `si_addr` for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP.
    pub fault_address: Option<u64>,
    /// Sender for signals sent by a process (`kill`, `raise`, `abort`).
    pub sender_pid: Option<u32>,
}

/// One `NT_FILE` entry: a file-backed mapping.
#[derive(Clone, Debug)]
pub struct FileMapping {
    pub start: u64,
    pub end: u64,
    /// Byte offset in the file.
    pub offset: u64,
    pub path: String,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub(crate) vaddr: u64,
    pub(crate) memsz: u64,
    /// File offset, bytes the writer dumped (`p_filesz`), and bytes actually present in the
    /// core file (fewer when the file was cut off).
    pub(crate) offset: u64,
    pub(crate) filesz: u64,
    pub(crate) present: u64,
    pub(crate) executable: bool,
}

/// A segment as another dump format describes it (see `minidump_file`).
pub(crate) type SegmentSpec = Segment;

pub struct CoreFile {
    pub path: PathBuf,
    map: ImageBytes,
    segments: Vec<Segment>,
    /// Crashing (signalled) thread first, as the kernel and gdb write them.
    pub threads: Vec<ThreadState>,
    pub siginfo: Option<SigInfo>,
    pub mappings: Vec<FileMapping>,
    pub auxv: Vec<(u64, u64)>,
    /// Process name (`pr_fname`) and arguments (`pr_psargs`).
    pub command: Option<String>,
    pub args: Option<String>,
    pub pid: Option<u32>,
    /// Parts of the file that were cut off (size in the headers vs. on disk), for notices.
    pub truncated_bytes: u64,
    /// A compressed core whose stream ended early: why (read as a truncated core).
    pub stream_cut: Option<String>,
    /// Build ids by module base address, when the dump lists them (minidumps: the first page
    /// of a module, where an ELF core holds its build id, is not in a minidump).
    pub module_build_ids: Vec<(u64, Vec<u8>)>,
    /// Read from a minidump (only the memory its writer saved is there).
    pub minidump: bool,
}

pub const AT_PHDR: u64 = 3;
pub const AT_ENTRY: u64 = 9;
pub const AT_SYSINFO_EHDR: u64 = 33;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn i32_at(b: &[u8], off: usize) -> Option<i32> {
    u32_at(b, off).map(|x| x as i32)
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim_end().to_string()
}

/// `user_regs_struct` (x86-64) field index → DWARF register number.
const USER_REGS_TO_DWARF: [(usize, usize); 17] = [
    (0, 15),  // r15
    (1, 14),  // r14
    (2, 13),  // r13
    (3, 12),  // r12
    (4, 6),   // rbp
    (5, 3),   // rbx
    (6, 11),  // r11
    (7, 10),  // r10
    (8, 9),   // r9
    (9, 8),   // r8
    (10, 0),  // rax
    (11, 2),  // rcx
    (12, 1),  // rdx
    (13, 4),  // rsi
    (14, 5),  // rdi
    (16, 16), // rip
    (19, 7),  // rsp
];

impl CoreFile {
    /// A core assembled from another dump format's parts.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        path: &Path,
        bytes: Vec<u8>,
        mut segments: Vec<Segment>,
        threads: Vec<ThreadState>,
        siginfo: Option<SigInfo>,
        mappings: Vec<FileMapping>,
        auxv: Vec<(u64, u64)>,
        command: Option<String>,
        module_build_ids: Vec<(u64, Vec<u8>)>,
    ) -> CoreFile {
        segments.sort_by_key(|s| s.vaddr);
        CoreFile {
            path: path.to_path_buf(),
            map: ImageBytes::Owned(bytes),
            segments,
            threads,
            siginfo,
            mappings,
            auxv,
            command: command.clone(),
            args: command,
            pid: None,
            truncated_bytes: 0,
            stream_cut: None,
            module_build_ids,
            minidump: true,
        }
    }

    /// Opens a core dump, plain or compressed (zstd, lz4, xz: recognised by magic number), or
    /// a minidump (`MDMP`).
    pub fn open(path: &Path) -> Result<CoreFile, DumpError> {
        {
            use std::io::Read;
            let mut head = [0u8; 4];
            let mut f = std::fs::File::open(path).map_err(|e| DumpError::io(path, e))?;
            if f.read_exact(&mut head).is_ok() && crate::minidump_file::is_minidump(&head) {
                return crate::minidump_file::open(path);
            }
        }
        let (file, stream_cut) = match crate::compressed::detect_file(path)? {
            Some(kind) => {
                let d = crate::compressed::decompress(path, kind)?;
                (d.file, d.stream_cut)
            }
            None => (
                std::fs::File::open(path).map_err(|e| DumpError::io(path, e))?,
                None,
            ),
        };
        // SAFETY: the mapping is read-only; a core file being rewritten while we read it would
        // only produce garbage values, which every reader below bounds-checks.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| DumpError::io(path, e))?;
        let mut core = Self::parse(path, ImageBytes::File(map))?;
        core.stream_cut = stream_cut;
        Ok(core)
    }

    /// Parses a core dump held in memory; `path` names it in messages.
    pub fn parse(path: &Path, map: ImageBytes) -> Result<CoreFile, DumpError> {
        let data: &[u8] = &map;
        if data.len() < 4 || &data[..4] != b"\x7fELF" {
            return Err(DumpError::NotElf {
                path: path.to_path_buf(),
            });
        }
        let header = FileHeader64::<LE>::parse(data).map_err(|_| DumpError::Unsupported {
            path: path.to_path_buf(),
            what: "only 64-bit little-endian (x86-64) core dumps are supported".into(),
        })?;
        let e_type = header.e_type(LE);
        if e_type != elf::ET_CORE {
            let kind = match e_type {
                elf::ET_EXEC => "executable".to_string(),
                elf::ET_DYN => "shared object or PIE executable".to_string(),
                elf::ET_REL => "object file".to_string(),
                other => format!("{}", other.0),
            };
            return Err(DumpError::NotCore {
                path: path.to_path_buf(),
                kind,
            });
        }
        if header.e_machine(LE) != elf::EM_X86_64 {
            return Err(DumpError::Unsupported {
                path: path.to_path_buf(),
                what: format!(
                    "core dump of machine type {}; only x86-64 is supported",
                    header.e_machine(LE).0
                ),
            });
        }
        let phdrs: &[ProgramHeader64<LE>] = header
            .program_headers(LE, data)
            .map_err(|e| DumpError::corrupt(path, format!("program headers: {e}")))?;
        let mut core = Notes::default();
        let mut segments = Vec::new();
        let mut truncated_bytes = 0;
        let file_len = data.len() as u64;
        let mut notes_seen = false;
        for ph in phdrs {
            let (off, filesz) = (ph.p_offset(LE), ph.p_filesz(LE));
            let present = filesz.min(file_len.saturating_sub(off));
            truncated_bytes = u64::saturating_add(truncated_bytes, filesz - present);
            if ph.p_type(LE) == elf::PT_LOAD {
                let (vaddr, memsz) = (ph.p_vaddr(LE), ph.p_memsz(LE));
                let extent = memsz.max(filesz);
                if vaddr.checked_add(extent).is_none() {
                    return Err(DumpError::corrupt(
                        path,
                        format!(
                            "a memory segment at {vaddr:#x} of {extent} bytes runs past the end of the address space"
                        ),
                    ));
                }
                segments.push(Segment {
                    vaddr,
                    memsz,
                    offset: off,
                    filesz,
                    present,
                    executable: ph.p_flags(LE).0 & elf::PF_X.0 != 0,
                });
            } else if ph.p_type(LE) == elf::PT_NOTE {
                notes_seen = true;
                let start = off.min(file_len) as usize;
                let bytes = &data[start..start + present as usize];
                core.read_notes(path, bytes, ph.p_align(LE))?;
                if present < filesz {
                    return Err(DumpError::corrupt(
                        path,
                        format!(
                            "the notes segment is cut off ({} of {} bytes present)",
                            present, filesz
                        ),
                    ));
                }
            }
        }
        if !notes_seen || core.threads.is_empty() {
            return Err(DumpError::corrupt(
                path,
                "no thread state (NT_PRSTATUS) in the core",
            ));
        }
        segments.sort_by_key(|s: &Segment| s.vaddr);
        // The dumping thread comes first in kernel and gdb cores; prefer a thread that was
        // receiving the signal in case a writer ordered them differently.
        if let Some(sig) = &core.siginfo {
            if core.threads[0].cursig != sig.signo {
                if let Some(k) = core.threads.iter().position(|t| t.cursig == sig.signo) {
                    core.threads.swap(0, k);
                }
            }
        }
        Ok(CoreFile {
            path: path.to_path_buf(),
            map,
            segments,
            threads: core.threads,
            siginfo: core.siginfo,
            mappings: core.mappings,
            auxv: core.auxv,
            command: core.command,
            args: core.args,
            pid: core.pid,
            truncated_bytes,
            stream_cut: None,
            module_build_ids: Vec::new(),
            minidump: false,
        })
    }
}

/// What the notes segment says.
#[derive(Default)]
struct Notes {
    threads: Vec<ThreadState>,
    siginfo: Option<SigInfo>,
    mappings: Vec<FileMapping>,
    auxv: Vec<(u64, u64)>,
    command: Option<String>,
    args: Option<String>,
    pid: Option<u32>,
}

impl Notes {
    fn read_notes(&mut self, path: &Path, bytes: &[u8], align: u64) -> Result<(), DumpError> {
        let mut notes =
            object::read::elf::NoteIterator::<FileHeader64<LE>>::new(LE, align.max(4), bytes)
                .map_err(|e| DumpError::corrupt(path, format!("notes: {e}")))?;
        loop {
            let note = match notes.next() {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => return Err(DumpError::corrupt(path, format!("notes: {e}"))),
            };
            let name = note.name();
            if name != b"CORE" && name != b"LINUX" {
                continue;
            }
            let desc = note.desc();
            let t = note.n_type(LE);
            if name == b"CORE" && t == elf::NT_PRSTATUS {
                self.threads.push(
                    parse_prstatus(desc)
                        .ok_or_else(|| DumpError::corrupt(path, "NT_PRSTATUS note too short"))?,
                );
            } else if name == b"CORE" && t == elf::NT_SIGINFO {
                if let (Some(signo), Some(code)) = (i32_at(desc, 0), i32_at(desc, 8)) {
                    let faulting = matches!(signo, 4 | 5 | 7 | 8 | 11);
                    // si_code > 0: sent by the kernel (fault); <= 0: by a process.
                    self.siginfo = Some(SigInfo {
                        signo,
                        code,
                        fault_address: if faulting && code > 0 {
                            u64_at(desc, 16)
                        } else {
                            None
                        },
                        sender_pid: if code <= 0 { u32_at(desc, 16) } else { None },
                    });
                }
            } else if name == b"CORE" && t == elf::NT_PRPSINFO {
                if desc.len() >= 136 {
                    self.pid = u32_at(desc, 24);
                    self.command = Some(c_string(&desc[40..56]));
                    self.args = Some(c_string(&desc[56..136]));
                }
            } else if name == b"CORE" && t == elf::NT_AUXV {
                self.auxv = desc
                    .chunks_exact(16)
                    .map(|c| (u64_at(c, 0).unwrap_or(0), u64_at(c, 8).unwrap_or(0)))
                    .take_while(|&(k, _)| k != 0)
                    .collect();
            } else if name == b"CORE" && t == elf::NT_FILE {
                self.mappings = parse_nt_file(desc)
                    .ok_or_else(|| DumpError::corrupt(path, "malformed NT_FILE note"))?;
            }
        }
        Ok(())
    }
}

impl CoreFile {
    pub fn auxv(&self, key: u64) -> Option<u64> {
        self.auxv.iter().find(|&&(k, _)| k == key).map(|&(_, v)| v)
    }

    /// The path of the executable the process ran, as the kernel recorded it: the `NT_FILE`
    /// mapping that holds the entry point (`AT_ENTRY`). `None` when the core has neither.
    pub fn executable_path(&self) -> Option<&str> {
        let entry = self.auxv(AT_ENTRY)?;
        self.mappings
            .iter()
            .find(|m| m.start <= entry && entry < m.end)
            .map(|m| m.path.as_str())
    }

    /// Bytes of the core's memory image at `addr`, as many as are present contiguously (up to
    /// `len`). Empty when the address was not dumped.
    pub fn memory(&self, addr: u64, len: usize) -> &[u8] {
        let i = self.segments.partition_point(|s| s.vaddr <= addr);
        if i == 0 {
            return &[];
        }
        let s = &self.segments[i - 1];
        let rel = addr - s.vaddr;
        if rel >= s.present {
            return &[];
        }
        let n = (len as u64).min(s.present - rel) as usize;
        let start = (s.offset + rel) as usize;
        &self.map[start..start + n]
    }

    /// Was `addr` dumped by the core's writer but cut off from the file? Such memory is
    /// unknown: it must not be read from the mapped file instead (the process may have written
    /// it), nor taken as zero.
    pub fn is_cut_off(&self, addr: u64) -> bool {
        let i = self.segments.partition_point(|s| s.vaddr <= addr);
        i > 0 && {
            let s = &self.segments[i - 1];
            let rel = addr - s.vaddr;
            rel >= s.present && rel < s.filesz
        }
    }

    /// Do `a` and `b` lie in the same dumped mapping?
    pub fn same_segment(&self, a: u64, b: u64) -> bool {
        let seg = |x: u64| {
            let i = self.segments.partition_point(|s| s.vaddr <= x);
            (i > 0 && x - self.segments[i - 1].vaddr < self.segments[i - 1].memsz).then_some(i)
        };
        seg(a).is_some() && seg(a) == seg(b)
    }

    /// Address ranges `[start, end)` that were dumped but are missing from a truncated file.
    pub fn cut_off_ranges(&self) -> Vec<(u64, u64)> {
        self.segments
            .iter()
            .filter(|s| s.present < s.filesz)
            .map(|s| (s.vaddr + s.present, s.vaddr + s.filesz))
            .collect()
    }

    /// Is `addr` inside some mapping of the process (dumped or not)?
    pub fn is_mapped(&self, addr: u64) -> bool {
        let i = self.segments.partition_point(|s| s.vaddr <= addr);
        i > 0 && addr - self.segments[i - 1].vaddr < self.segments[i - 1].memsz
    }

    /// Is `addr` in an executable mapping?
    pub fn is_executable(&self, addr: u64) -> bool {
        let i = self.segments.partition_point(|s| s.vaddr <= addr);
        i > 0 && {
            let s = &self.segments[i - 1];
            addr - s.vaddr < s.memsz && s.executable
        }
    }

    /// Total bytes of memory the process had mapped (saturating: a corrupt core's segment
    /// sizes can add up past 2^64 — found by fuzzing, `fuzz/regressions/core/`).
    pub fn mapped_bytes(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |total, s| total.saturating_add(s.memsz))
    }

    pub fn file_size(&self) -> u64 {
        self.map.len() as u64
    }
}

fn parse_prstatus(d: &[u8]) -> Option<ThreadState> {
    // struct elf_prstatus (x86-64): siginfo head (12) + cursig (2) + pad, sigpend, sighold,
    // pid @32, ..., times, then pr_reg (user_regs_struct, 27 × u64) @112.
    let cursig = u16::from_le_bytes(d.get(12..14)?.try_into().ok()?) as i32;
    let tid = u32_at(d, 32)?;
    let reg = |k: usize| u64_at(d, 112 + 8 * k);
    let mut regs: Registers = [None; 17];
    for (k, dw) in USER_REGS_TO_DWARF {
        regs[dw] = Some(reg(k)?);
    }
    Some(ThreadState {
        tid,
        cursig,
        regs,
        fs_base: reg(21)?,
    })
}

fn parse_nt_file(d: &[u8]) -> Option<Vec<FileMapping>> {
    let count = u64_at(d, 0)? as usize;
    let page = u64_at(d, 8)?;
    if count > d.len() / 24 {
        return None;
    }
    let mut names = d.get(16 + 24 * count..)?.split(|&c| c == 0);
    (0..count)
        .map(|k| {
            let base = 16 + 24 * k;
            Some(FileMapping {
                start: u64_at(d, base)?,
                end: u64_at(d, base + 8)?,
                offset: u64_at(d, base + 16)?.checked_mul(page)?,
                path: String::from_utf8_lossy(names.next()?).into_owned(),
            })
        })
        .collect()
}

/// Signal name, as `kill -l` prints it.
pub fn signal_name(signo: i32) -> String {
    let n = match signo {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("signal {signo}"),
    };
    n.to_string()
}
