//! The crashed process: the core's memory plus the ELF images that were mapped into it (the
//! executable, shared libraries from `NT_FILE` when they are on this machine, the vDSO from the
//! core itself). Memory the kernel did not dump (read-only file-backed text and data) is read
//! from those files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{LittleEndian as LE, Object, ObjectSection, ObjectSymbol};

use crate::core::{CoreFile, AT_ENTRY, AT_SYSINFO_EHDR};
use crate::error::DumpError;

/// Bytes of an ELF image: a mapped file, or a copy (the vDSO from core memory).
pub enum ImageBytes {
    File(Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for ImageBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ImageBytes::File(m) => m,
            ImageBytes::Owned(v) => v,
        }
    }
}

/// Unwind tables of one image, copied out once (they are small) so unwinding needs no
/// borrow of the image.
pub struct UnwindSections {
    pub eh_frame: Option<(u64, Arc<[u8]>)>,
    pub eh_frame_hdr: Option<(u64, Arc<[u8]>)>,
    pub text: u64,
}

pub struct Module {
    /// Path as the core recorded it (or the executable's path given by the user).
    pub name: String,
    /// The file we read, when we found one.
    pub file: Option<PathBuf>,
    pub bytes: Option<ImageBytes>,
    /// Address range the module occupied in the process.
    pub start: u64,
    pub end: u64,
    /// Runtime address − link-time address.
    pub bias: u64,
    /// Mappings of this module: (start, end, file offset).
    pub maps: Vec<(u64, u64, u64)>,
    pub build_id: Option<Vec<u8>>,
    /// Build id found in the core's memory image of the module's first page.
    pub core_build_id: Option<Vec<u8>>,
    pub unwind: Option<UnwindSections>,
    /// Why the image could not be used, if so (shown as a notice).
    pub problem: Option<String>,
    /// A separate debug file (the image is stripped): DWARF, symbols and CSI metadata come
    /// from it.
    pub debug_file: Option<ImageBytes>,
    /// Where the module's debug info came from.
    pub debug_source: crate::debug_files::DebugSource,
}

impl Module {
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    pub fn elf(&self) -> Option<ElfFile64<'_, LE>> {
        ElfFile64::parse(&**self.bytes.as_ref()?).ok()
    }

    /// The ELF file holding the module's debug info, symbol table and CSI metadata: the
    /// separate debug file when one was found, else the image itself.
    pub fn debug_elf(&self) -> Option<ElfFile64<'_, LE>> {
        match &self.debug_file {
            Some(d) => ElfFile64::parse(&**d).ok(),
            None => self.elf(),
        }
    }

    /// Does the image on disk differ from what was loaded?
    pub fn mismatched(&self) -> bool {
        matches!((&self.build_id, &self.core_build_id), (Some(a), Some(b)) if a != b)
    }

    /// The data object (a global or static variable's symbol) containing the runtime address
    /// `addr`, with the offset into it — what gdb shows after a pointer as `<shapes+152>`.
    pub fn symbolize_data(&self, addr: u64) -> Option<(String, u64)> {
        self.symbol_containing(addr, object::SymbolKind::Data)
    }

    /// Symbol containing the runtime address `addr`, with the offset into it.
    pub fn symbolize(&self, addr: u64) -> Option<(String, u64)> {
        self.symbol_containing(addr, object::SymbolKind::Text)
    }

    /// The `kind` symbol nearest below `addr` that contains it (a function symbol of size 0
    /// counts at its own address), from the separate debug file's table, else `.symtab`,
    /// else `.dynsym`.
    fn symbol_containing(&self, addr: u64, kind: object::SymbolKind) -> Option<(String, u64)> {
        let elf = self.elf()?;
        let debug = self.debug_file.as_ref().and_then(|_| self.debug_elf());
        let svma = addr.wrapping_sub(self.bias);
        // Of two symbols at one address, a switchable function's piece's: its own symbol is
        // an alias of its replica (`entry_patch`), and the suffix says which code it is.
        let piece = |n: &str| {
            n.ends_with(csi_model::sections::REPLICA_SUFFIX)
                || n.ends_with(csi_model::sections::BODY_SUFFIX)
        };
        let mut best: Option<(String, u64)> = None;
        let tables = debug
            .as_ref()
            .map(|d| d.symbols())
            .into_iter()
            .chain([elf.symbols(), elf.dynamic_symbols()]);
        for table in tables {
            for s in table {
                if s.kind() != kind || s.address() > svma {
                    continue;
                }
                let off = svma - s.address();
                let inside = off < s.size() || (off == 0 && kind == object::SymbolKind::Text);
                let Ok(n) = s.name() else { continue };
                if inside
                    && best
                        .as_ref()
                        .is_none_or(|b| off < b.1 || (off == b.1 && piece(n) && !piece(&b.0)))
                {
                    best = Some((n.to_string(), off));
                }
            }
            if best.is_some() {
                break;
            }
        }
        best
    }
}

/// The whole process image.
pub struct Process {
    /// Where libraries are looked for.
    pub search: LibrarySearch,
    /// Things found while locating libraries (sysroot files of another build), for notices.
    pub notices: Vec<String>,
    pub core: CoreFile,
    pub modules: Vec<Module>,
    /// Index of the executable in `modules`.
    pub exe: usize,
}

fn map_file(path: &Path) -> Result<Mmap, DumpError> {
    let f = std::fs::File::open(path).map_err(|e| DumpError::io(path, e))?;
    // SAFETY: read-only mapping; all readers bounds-check.
    unsafe { Mmap::map(&f) }.map_err(|e| DumpError::io(path, e))
}

/// Where libraries of the crashed process are looked for besides the paths the core records.
#[derive(Clone, Debug, Default)]
pub struct LibrarySearch {
    /// The crashed machine's file system (`--sysroot`): `SYSROOT/<recorded path>`, then
    /// `SYSROOT/<file name>` (a flat directory of the production image's libraries).
    pub sysroot: Option<PathBuf>,
    /// debuginfod servers (`GET /buildid/<hex>/executable`) for a library found nowhere.
    pub debuginfod: crate::debug_files::DebugSearch,
}

/// A library the core names, matched by build id `want` (the core's copy of its first page):
/// from the sysroot, its recorded path, the executable's directory (a crash copied elsewhere
/// together with its libraries, as `rpath $ORIGIN` finds them), then a debuginfod server. The
/// first with the build id wins; without any, the first file found is used and the build-id
/// check reports the difference. Each sysroot file of another build gets a notice.
fn map_library(
    path: &str,
    exe: &Path,
    want: Option<&[u8]>,
    search: &LibrarySearch,
    notices: &mut Vec<String>,
) -> Result<(PathBuf, Mmap), DumpError> {
    let recorded = PathBuf::from(path);
    let matches = |m: &Mmap| want.is_none_or(|w| file_build_id(m).as_deref() == Some(w));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(root) = &search.sysroot {
        candidates.push(root.join(recorded.strip_prefix("/").unwrap_or(&recorded)));
        if let Some(name) = recorded.file_name() {
            candidates.push(root.join(name));
        }
    }
    candidates.push(recorded.clone());
    if let (Some(dir), Some(name)) = (exe.parent(), recorded.file_name()) {
        candidates.push(dir.join(name));
    }
    candidates.dedup();
    let mut first: Option<(PathBuf, Mmap)> = None;
    let mut first_err: Option<DumpError> = None;
    for p in candidates {
        if !p.is_file() {
            if first_err.is_none() {
                first_err = map_file(&p).err();
            }
            continue;
        }
        let m = match map_file(&p) {
            Ok(m) => m,
            Err(e) => {
                first_err.get_or_insert(e);
                continue;
            }
        };
        if want.is_none() {
            // Nothing to match by: any file will do, unless another candidate is of a
            // different build (then which one ran is unknown).
            if let Some((q, other)) = &first {
                if file_build_id(other) != file_build_id(&m) {
                    return Err(DumpError::Unsupported {
                        path: recorded,
                        what: format!(
                            "the core does not hold its build id (truncated?), and {} and {} are different builds: which one ran is unknown, so neither is used",
                            q.display(),
                            p.display()
                        ),
                    });
                }
                continue;
            }
            first = Some((p, m));
            continue;
        }
        if matches(&m) {
            return Ok((p, m));
        }
        let in_sysroot = search.sysroot.as_ref().is_some_and(|r| p.starts_with(r));
        if in_sysroot {
            notices.push(format!(
                "sysroot: {} is not the {} the program ran (build id {}, the core's is {}); not used",
                p.display(),
                path,
                file_build_id(&m).as_deref().map_or("none".into(), hex),
                want.map_or("unknown".into(), hex)
            ));
        } else if first.is_none() {
            first = Some((p, m));
        }
    }
    // Found nowhere with the right build: ask the debuginfod servers for the binary itself.
    if let Some(id) = want {
        if let Some((_, p)) =
            crate::debug_files::debuginfod_fetch(&search.debuginfod, id, "executable", notices)
        {
            if let Ok(m) = map_file(&p) {
                if matches(&m) {
                    return Ok((p, m));
                }
            }
        }
    }
    match (first, first_err) {
        (Some(found), _) => Ok(found),
        (None, Some(e)) => Err(e),
        (None, None) => Err(DumpError::io(
            &recorded,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )),
    }
}

/// One object in the dynamic linker's list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkMapEntry {
    /// Runtime address − link-time address (`l_addr`).
    pub bias: u64,
    /// Path the object was loaded from (empty for the executable).
    pub name: String,
    /// Runtime address of its dynamic section (`l_ld`).
    pub dynamic: u64,
}

/// Link-time address of the image's `PT_DYNAMIC`.
fn dynamic_vaddr(bytes: &[u8]) -> Option<u64> {
    let h = object::elf::FileHeader64::<LE>::parse(bytes).ok()?;
    h.program_headers(LE, bytes)
        .ok()?
        .iter()
        .find(|p| p.p_type(LE) == object::elf::PT_DYNAMIC)
        .map(|p| p.p_vaddr(LE))
}

/// The mappings `PT_LOAD` makes at `bias`: (start, end, file offset), page-aligned.
fn load_segments(bytes: &[u8], bias: u64) -> Option<Vec<(u64, u64, u64)>> {
    let h = object::elf::FileHeader64::<LE>::parse(bytes).ok()?;
    let maps: Vec<(u64, u64, u64)> = h
        .program_headers(LE, bytes)
        .ok()?
        .iter()
        .filter(|p| p.p_type(LE) == object::elf::PT_LOAD)
        .map(|p| {
            let vaddr = p.p_vaddr(LE);
            let skew = vaddr & 0xfff;
            let start = bias.wrapping_add(vaddr - skew);
            let end = bias.wrapping_add(vaddr + p.p_filesz(LE).max(p.p_memsz(LE)));
            (start, end, p.p_offset(LE).wrapping_sub(skew))
        })
        .collect();
    (!maps.is_empty()).then_some(maps)
}

/// Build id from an ELF image's notes.
fn file_build_id(bytes: &[u8]) -> Option<Vec<u8>> {
    let elf = ElfFile64::<LE>::parse(bytes).ok()?;
    elf.build_id().ok().flatten().map(<[u8]>::to_vec)
}

fn unwind_sections(bytes: &[u8]) -> Option<UnwindSections> {
    let elf = ElfFile64::<LE>::parse(bytes).ok()?;
    let grab = |name: &str| {
        let s = elf.section_by_name(name)?;
        let d = s.data().ok()?;
        Some((s.address(), Arc::<[u8]>::from(d)))
    };
    Some(UnwindSections {
        eh_frame: grab(".eh_frame"),
        eh_frame_hdr: grab(".eh_frame_hdr"),
        text: elf
            .section_by_name(".text")
            .map(|s| s.address())
            .unwrap_or(0),
    })
}

/// The lowest `p_vaddr` of the image's `PT_LOAD`s, page-aligned (what offset 0 maps to).
fn first_load_vaddr(bytes: &[u8]) -> Option<u64> {
    let h = object::elf::FileHeader64::<LE>::parse(bytes).ok()?;
    h.program_headers(LE, bytes)
        .ok()?
        .iter()
        .filter(|p| p.p_type(LE) == object::elf::PT_LOAD)
        .map(|p| p.p_vaddr(LE) & !0xfff)
        .min()
}

/// Reads the build id from an ELF image in the core's memory at `base`.
fn memory_build_id(core: &CoreFile, base: u64) -> Option<Vec<u8>> {
    if let Some((_, id)) = core.module_build_ids.iter().find(|(b, _)| *b == base) {
        return Some(id.clone());
    }
    let head = core.memory(base, 64);
    let h = object::elf::FileHeader64::<LE>::parse(head).ok()?;
    let phoff = h.e_phoff(LE);
    let phnum = h.e_phnum(LE) as usize;
    let table = core.memory(base.wrapping_add(phoff), phnum * 56);
    if table.len() < phnum * 56 {
        return None;
    }
    let first_vaddr = (0..phnum)
        .filter_map(|k| {
            let p = &table[k * 56..];
            (u32::from_le_bytes(p[0..4].try_into().ok()?) == 1)
                .then(|| u64::from_le_bytes(p[16..24].try_into().unwrap()) & !0xfff)
        })
        .min()?;
    for k in 0..phnum {
        let p = &table[k * 56..];
        if u32::from_le_bytes(p[0..4].try_into().ok()?) != 4 {
            continue; // PT_NOTE
        }
        let vaddr = u64::from_le_bytes(p[16..24].try_into().ok()?);
        let size = u64::from_le_bytes(p[32..40].try_into().ok()?) as usize;
        let align = u64::from_le_bytes(p[48..56].try_into().ok()?);
        let bytes = core.memory(
            base.wrapping_add(vaddr).wrapping_sub(first_vaddr),
            size.min(1 << 16),
        );
        let Ok(mut it) = object::read::elf::NoteIterator::<object::elf::FileHeader64<LE>>::new(
            LE,
            align.max(4),
            bytes,
        ) else {
            continue;
        };
        while let Ok(Some(n)) = it.next() {
            if n.name() == b"GNU" && n.n_type(LE) == object::elf::NT_GNU_BUILD_ID {
                return Some(n.desc().to_vec());
            }
        }
    }
    None
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The module of one file the core maps (`maps`: its mappings (start, end, offset)). The
/// executable's image is attached later (`attach_exe_image`); a library is mapped from this
/// machine and checked against the build id in the core.
fn file_module(
    path: String,
    maps: Vec<(u64, u64, u64)>,
    is_exe: bool,
    exe: &Path,
    core: &CoreFile,
    search: &LibrarySearch,
    notices: &mut Vec<String>,
) -> Module {
    let start = maps.iter().map(|m| m.0).min().unwrap_or(0);
    let end = maps.iter().map(|m| m.1).max().unwrap_or(0);
    let base = maps
        .iter()
        .filter(|m| m.2 == 0)
        .map(|m| m.0)
        .min()
        .unwrap_or(start);
    let core_build_id = memory_build_id(core, base);
    let (file, bytes, problem) = if is_exe {
        (Some(exe.to_path_buf()), None, None)
    } else {
        match map_library(&path, exe, core_build_id.as_deref(), search, notices) {
            Ok((f, m)) => (Some(f), Some(ImageBytes::File(m)), None),
            Err(e) => (None, None, Some(format!("cannot read {path}: {e}"))),
        }
    };
    let mut m = Module {
        // The executable as the user named it (the core may name a build path).
        name: if is_exe {
            exe.display().to_string()
        } else {
            path
        },
        file,
        bytes,
        start,
        end,
        bias: base,
        maps,
        build_id: None,
        core_build_id,
        unwind: None,
        problem,
        debug_file: None,
        debug_source: crate::debug_files::DebugSource::None,
    };
    if is_exe {
        return m;
    }
    if let Some(b) = &m.bytes {
        if ElfFile64::<LE>::parse(&**b).is_err() {
            // Not an ELF image (a mapped data file): keep only for memory reads.
            m.bytes = None;
        } else {
            m.build_id = file_build_id(b);
            m.bias = base.wrapping_sub(first_load_vaddr(b).unwrap_or(0));
            if m.mismatched() {
                m.problem = Some(format!(
                    "{} on this machine differs from the one the program ran with \
                     (build id {} vs {}); frames inside it may be wrong",
                    m.name,
                    hex(m.build_id.as_deref().unwrap_or(&[])),
                    hex(m.core_build_id.as_deref().unwrap_or(&[]))
                ));
            } else {
                m.unwind = unwind_sections(b);
            }
        }
    }
    m
}

/// The match check of the executable `exe` (its module `m` in the core) against the core:
/// build ids when both exist, else entry point (`entry_bias`: the core's entry point minus
/// the executable's) and file name.
fn check_core_ran_exe(
    core: &CoreFile,
    exe: &Path,
    m: &Module,
    exe_build_id: &Option<Vec<u8>>,
    entry_bias: u64,
    exe_bytes: &[u8],
) -> Result<(), DumpError> {
    match (exe_build_id, &m.core_build_id) {
        (Some(a), Some(b)) if a != b => Err(DumpError::Mismatch {
            core: core.path.clone(),
            exe: exe.to_path_buf(),
            why: format!(
                "build id {} in the core, {} in the executable",
                hex(b),
                hex(a)
            ),
        }),
        (Some(_), Some(_)) => Ok(()),
        _ => {
            let same_name = Path::new(&m.name).file_name() == exe.file_name();
            let expect_bias = m
                .start
                .wrapping_sub(first_load_vaddr(exe_bytes).unwrap_or(0));
            if !same_name || entry_bias != expect_bias {
                return Err(DumpError::Mismatch {
                    core: core.path.clone(),
                    exe: exe.to_path_buf(),
                    why: format!(
                        "the core ran {} and neither has a build id to compare",
                        m.name
                    ),
                });
            }
            Ok(())
        }
    }
}

/// Gives the executable's module its image (the file the user named), with the bias, build
/// id and unwind sections from it.
fn attach_exe_image(m: &mut Module, exe_bytes: ImageBytes, exe_build_id: Option<Vec<u8>>) {
    let unwind = unwind_sections(&exe_bytes);
    let first = first_load_vaddr(&exe_bytes).unwrap_or(0);
    m.bias = m
        .maps
        .iter()
        .filter(|x| x.2 == 0)
        .map(|x| x.0)
        .min()
        .unwrap_or(m.start)
        .wrapping_sub(first);
    m.build_id = exe_build_id;
    m.unwind = unwind;
    m.bytes = Some(exe_bytes);
}

/// The vDSO's module, read from the core's memory at `AT_SYSINFO_EHDR` (it lives only in
/// memory); `None` without one or when that memory is not an ELF image.
fn vdso_module(core: &CoreFile) -> Option<Module> {
    let vdso = core.auxv(AT_SYSINFO_EHDR)?;
    let bytes = core.memory(vdso, 1 << 16).to_vec();
    let elf = ElfFile64::<LE>::parse(&*bytes).ok()?;
    let size = elf
        .segments()
        .map(|s| {
            use object::ObjectSegment;
            s.address().saturating_add(s.size())
        })
        .max()
        .unwrap_or(bytes.len() as u64);
    let first = first_load_vaddr(&bytes).unwrap_or(0);
    // Its headers come from the core, so any values (a corrupt core): saturate.
    Some(Module {
        name: "[vdso]".into(),
        file: None,
        start: vdso,
        end: vdso.saturating_add(size.max(bytes.len() as u64)),
        bias: vdso.wrapping_sub(first),
        maps: vec![(vdso, vdso.saturating_add(bytes.len() as u64), 0)],
        build_id: None,
        core_build_id: None,
        unwind: unwind_sections(&bytes),
        bytes: Some(ImageBytes::Owned(bytes)),
        problem: None,
        debug_file: None,
        debug_source: crate::debug_files::DebugSource::None,
    })
}

impl Process {
    /// Opens the process image of `core`, with `exe` as its executable. Refuses a core that
    /// another executable produced.
    pub fn open(
        exe: &Path,
        core: CoreFile,
        exe_bytes: ImageBytes,
        search: &LibrarySearch,
    ) -> Result<Process, DumpError> {
        let mut notices: Vec<String> = Vec::new();
        // Group NT_FILE mappings by file.
        let mut by_path: BTreeMap<String, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for m in &core.mappings {
            by_path
                .entry(m.path.clone())
                .or_default()
                .push((m.start, m.end, m.offset));
        }
        // The executable is the file mapping holding the entry point.
        let entry = core.auxv(AT_ENTRY);
        let exe_elf = ElfFile64::<LE>::parse(&*exe_bytes).map_err(|_| DumpError::NotElf {
            path: exe.to_path_buf(),
        })?;
        if exe_elf.kind() == object::ObjectKind::Core {
            return Err(DumpError::CoreGivenAsExe {
                path: exe.to_path_buf(),
            });
        }
        let exe_entry = exe_elf.entry();
        let exe_path_in_core = core.executable_path().map(str::to_string);
        let exe_build_id = file_build_id(&exe_bytes);
        let mut modules: Vec<Module> = Vec::new();
        let mut exe_index = None;
        for (path, maps) in by_path {
            let is_exe = Some(&path) == exe_path_in_core.as_ref();
            if is_exe {
                exe_index = Some(modules.len());
            }
            modules.push(file_module(
                path,
                maps,
                is_exe,
                exe,
                &core,
                search,
                &mut notices,
            ));
        }
        let Some(exe_index) = exe_index else {
            return Err(DumpError::Mismatch {
                core: core.path.clone(),
                exe: exe.to_path_buf(),
                why: "the core records no file mapping at its entry point (no NT_FILE note or \
                      no AT_ENTRY); cannot tell which executable it belongs to"
                    .into(),
            });
        };
        // The match check: build ids when both exist, else entry point and file name.
        let entry_bias = entry.unwrap_or(0).wrapping_sub(exe_entry);
        check_core_ran_exe(
            &core,
            exe,
            &modules[exe_index],
            &exe_build_id,
            entry_bias,
            &exe_bytes,
        )?;
        attach_exe_image(&mut modules[exe_index], exe_bytes, exe_build_id);
        // The vDSO lives only in memory.
        modules.extend(vdso_module(&core));
        let mut process = Process {
            search: search.clone(),
            notices,
            core,
            modules,
            exe: exe_index,
        };
        process.add_link_map_modules(exe);
        Ok(process)
    }

    /// The dynamic linker's list of loaded objects (`r_debug.r_map`, reached through the
    /// executable's `DT_DEBUG`), in load order: libraries linked at start and those loaded
    /// with `dlopen`, each with its load bias (`l_addr`). Empty for a static executable or
    /// when that memory is not in the core.
    pub fn link_map(&self) -> Vec<LinkMapEntry> {
        const DT_DEBUG: u64 = 21;
        // Every address below is read from the core, so any value: offsets wrap (a wrapped
        // address reads nothing) rather than overflow (fuzz/regressions/core/link-map-wrap).
        let mut out = Vec::new();
        let exe = self.exe();
        let Some(dynamic) = exe.bytes.as_deref().and_then(dynamic_vaddr) else {
            return out;
        };
        let mut r_debug = None;
        for k in 0..4096u64 {
            let at = dynamic.wrapping_add(exe.bias).wrapping_add(16 * k);
            let (Some(tag), Some(val)) = (self.read_u64(at), self.read_u64(at.wrapping_add(8)))
            else {
                break;
            };
            match tag {
                0 => break, // DT_NULL
                DT_DEBUG => r_debug = Some(val),
                _ => {}
            }
        }
        // struct r_debug { int r_version; struct link_map *r_map; ... }
        let Some(mut lm) = r_debug
            .filter(|&a| a != 0)
            .and_then(|a| self.read_u64(a.wrapping_add(8)))
        else {
            return out;
        };
        // struct link_map { l_addr; char *l_name; l_ld; l_next; l_prev; }
        while lm != 0 && out.len() < 65536 {
            let (Some(bias), Some(name_at), Some(dynamic), Some(next)) = (
                self.read_u64(lm),
                self.read_u64(lm.wrapping_add(8)),
                self.read_u64(lm.wrapping_add(16)),
                self.read_u64(lm.wrapping_add(24)),
            ) else {
                break;
            };
            out.push(LinkMapEntry {
                bias,
                name: self.read_c_string(name_at, 4096).unwrap_or_default(),
                dynamic,
            });
            lm = next;
        }
        out
    }

    /// A NUL-terminated string at `addr` (at most `max` bytes).
    fn read_c_string(&self, addr: u64, max: usize) -> Option<String> {
        let mut bytes = Vec::new();
        let mut b = [0u8; 1];
        while bytes.len() < max {
            if !self.read(addr.wrapping_add(bytes.len() as u64), &mut b) {
                return None;
            }
            if b[0] == 0 {
                break;
            }
            bytes.push(b[0]);
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Libraries the dynamic linker lists but `NT_FILE` does not (a core writer without that
    /// note, or one cut short), mapped from their files at the linker's load bias; and the
    /// linker's bias for those it does, where the mappings suggested another.
    fn add_link_map_modules(&mut self, exe: &Path) {
        for entry in self.link_map() {
            if entry.name.is_empty() {
                continue; // the executable, or the vDSO
            }
            // The same object under another name (a symlink such as /lib → /usr/lib): its
            // dynamic section lies in a module the mappings gave.
            if let Some(m) = self
                .modules
                .iter_mut()
                .find(|m| m.name == entry.name || m.contains(entry.dynamic))
            {
                if m.bytes.is_some() && !m.mismatched() && m.bias != entry.bias {
                    m.bias = entry.bias;
                }
                continue;
            }
            // A shared object's first PT_LOAD is at link-time address 0: its header is at
            // the bias.
            let want = memory_build_id(&self.core, entry.bias);
            let found = map_library(
                &entry.name,
                exe,
                want.as_deref(),
                &self.search,
                &mut self.notices,
            );
            let Ok((file, map)) = found else {
                self.modules.push(Module {
                    name: entry.name.clone(),
                    file: None,
                    bytes: None,
                    start: 0,
                    end: 0,
                    bias: entry.bias,
                    maps: Vec::new(),
                    build_id: None,
                    core_build_id: None,
                    unwind: None,
                    problem: Some(format!(
                        "cannot read {} (loaded by the dynamic linker)",
                        entry.name
                    )),
                    debug_file: None,
                    debug_source: crate::debug_files::DebugSource::None,
                });
                continue;
            };
            let Some(maps) = load_segments(&map, entry.bias) else {
                continue;
            };
            let start = maps.iter().map(|m| m.0).min().unwrap_or(0);
            let end = maps.iter().map(|m| m.1).max().unwrap_or(0);
            let mut m = Module {
                name: entry.name.clone(),
                file: Some(file),
                start,
                end,
                bias: entry.bias,
                maps,
                build_id: file_build_id(&map),
                core_build_id: memory_build_id(&self.core, start),
                unwind: None,
                bytes: None,
                problem: None,
                debug_file: None,
                debug_source: crate::debug_files::DebugSource::None,
            };
            if m.mismatched() {
                m.problem = Some(format!(
                    "{} on this machine differs from the one the program ran with; frames inside it may be wrong",
                    m.name
                ));
            } else {
                m.unwind = unwind_sections(&map);
            }
            m.bytes = Some(ImageBytes::File(map));
            self.modules.push(m);
        }
    }

    pub fn exe(&self) -> &Module {
        &self.modules[self.exe]
    }

    pub fn module_at(&self, addr: u64) -> Option<&Module> {
        self.modules.iter().find(|m| m.contains(addr))
    }

    /// Index in `modules` of the module holding `addr`.
    pub fn module_index_at(&self, addr: u64) -> Option<usize> {
        self.modules.iter().position(|m| m.contains(addr))
    }

    /// Reads `buf.len()` bytes at `addr`: from the core where dumped, else from the file the
    /// address was mapped from. False when some byte is unavailable.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        let mut done = 0;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let want = buf.len() - done;
            let got = self.core.memory(a, want);
            if !got.is_empty() {
                buf[done..done + got.len()].copy_from_slice(got);
                done += got.len();
                continue;
            }
            if self.core.is_cut_off(a) {
                return false; // dumped, then lost with the end of a truncated core
            }
            let Some(n) = self.read_file_backed(a, &mut buf[done..]) else {
                return false;
            };
            done += n;
        }
        true
    }

    fn read_file_backed(&self, addr: u64, buf: &mut [u8]) -> Option<usize> {
        let m = self.module_at(addr)?;
        if m.mismatched() {
            return None;
        }
        let bytes = m.bytes.as_ref()?;
        let &(start, end, off) = m.maps.iter().find(|x| x.0 <= addr && addr < x.1)?;
        let pos = off.wrapping_add(addr - start) as usize;
        let n = buf.len().min((end - addr) as usize);
        let src = bytes.get(pos..pos.checked_add(n)?)?;
        // Stop at the next dumped byte so the core's (possibly written) copy wins.
        buf[..n].copy_from_slice(src);
        Some(n)
    }

    pub fn read_u64(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b).then(|| u64::from_le_bytes(b))
    }

    pub fn read_vec(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v).then_some(v)
    }

    /// Runtime address of a symbol of the executable (`.symtab`, then `.dynsym`).
    pub fn exe_symbol(&self, name: &str) -> Option<(u64, u64)> {
        let m = self.exe();
        let elf = m.elf()?;
        let debug = m.debug_file.as_ref().and_then(|_| m.debug_elf());
        debug
            .iter()
            .flat_map(|d| d.symbols())
            .chain(elf.symbols())
            .chain(elf.dynamic_symbols())
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address().wrapping_add(m.bias), s.size()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(program: &str) -> Process {
        let d = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/crashes")
            .join(program)
            .join("realistic-O0");
        let exe = d.join(program);
        let core = CoreFile::open(&d.join("core")).unwrap();
        let bytes = ImageBytes::File(map_file(&exe).unwrap());
        Process::open(&exe, core, bytes, &LibrarySearch::default()).unwrap()
    }

    /// A library `NT_FILE` does not name is mapped from the link map at the linker's bias,
    /// where the kernel had it.
    #[test]
    fn a_library_missing_from_nt_file_comes_from_the_link_map() {
        let mut p = open("plugin_crash");
        let k = p
            .modules
            .iter()
            .position(|m| m.name.ends_with("libplug.so"))
            .unwrap();
        let exe = p.exe().file.clone().unwrap();
        let gone = p.modules.remove(k);
        let before = p.modules.len() + 1;
        p.exe = p
            .modules
            .iter()
            .position(|m| m.file.as_ref() == Some(&exe))
            .unwrap();
        p.add_link_map_modules(&exe);
        let back = p.modules.last().unwrap();
        assert_eq!(back.name, gone.name);
        // Nothing else was added (the vDSO and libc under another path are known objects).
        assert_eq!(p.modules.len(), before);
        assert_eq!((back.bias, back.start), (gone.bias, gone.start));
        assert!(back.problem.is_none() && back.unwind.is_some());
        // Its text reads the same through the file as through the kernel's mappings.
        let mut a = [0u8; 32];
        assert!(p.read(gone.start + 0x1000, &mut a));
    }

    /// The dynamic linker's list names the linked library and the dlopen'ed plugin, at the
    /// bias the kernel's mappings give them.
    #[test]
    fn link_map_lists_linked_and_dlopened_libraries() {
        for (program, lib) in [
            ("shlib_crash", "libwalk.so"),
            ("plugin_crash", "libplug.so"),
        ] {
            let p = open(program);
            let entries = p.link_map();
            let e = entries
                .iter()
                .find(|e| e.name.ends_with(lib))
                .unwrap_or_else(|| panic!("{program}: {lib} not in {entries:?}"));
            let m = p.modules.iter().find(|m| m.contains(e.dynamic)).unwrap();
            assert!(m.name.ends_with(lib), "{program}: {}", m.name);
            assert_eq!(m.bias, e.bias, "{program}");
            assert!(entries.iter().any(|e| e.name.contains("libc.so")));
            // Nothing is loaded twice (libc under /lib and /usr/lib is one object).
            let named: Vec<&str> = p.modules.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(
                named.iter().filter(|n| n.contains("libc.so")).count(),
                1,
                "{named:?}"
            );
        }
    }
}
