//! Everything together: stacks of all threads, frame variables, csi-cc trace data, and the
//! failure report over the program graph.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use csi_model::ballarus::{unrotate_ring, DecodedPath, PathGraph, PathStart};
use csi_model::dominance::BlockGraph;
use csi_model::paths::same_source;
use csi_model::sections::cfg::{cfg_linked_program_graph, parse_cfg_all, CfgFunction, CfgModule};
use csi_model::{FailureReport, Frame, FuncId, NodeId, NodeKind, ProgramGraph, SignalInfo, Thread};
use object::{Object, ObjectSection, ObjectSymbol};

use crate::core::{signal_name, CoreFile, ThreadState};
use crate::dwarf::{DebugInfo, FrameRegs, InlineFrame, SourceLoc, Variable, Variant};
use crate::error::DumpError;
use crate::process::{ImageBytes, Process};
use crate::unwind::{UnwindMethod, Unwinder, WalkEnd};

#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// A csi-grissom GraphML CFG for binaries from the original csi-cc (no `.debug_CSI_CFG`).
    pub graphml: Option<PathBuf>,
    /// Where to find debug files of stripped modules (`--debug-dir`, debuginfod).
    pub debug: crate::debug_files::DebugSearch,
    /// The crashed machine's file system (`--sysroot`): libraries are looked up under it by
    /// the path the core records, and matched by build id.
    pub sysroot: Option<PathBuf>,
    /// Share the program half of loading (debug info, CSI records, program graph) with other
    /// crashes of the same build.
    pub cache: Option<Arc<LoadCache>>,
}

/// Where the program graph came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Metadata {
    /// Our `.debug_CSI_CFG` section.
    CsiCfg,
    /// A GraphML file given by the user.
    GraphMl,
    /// None: the stack only, without must/may/never.
    None,
}

/// A module of the crashed process, for the JSON and the editor.
#[derive(Clone, Debug)]
pub struct ModuleInfo {
    pub name: String,
    /// The file read for it on this machine.
    pub file: Option<PathBuf>,
    pub build_id: Option<String>,
    /// Where its debug info came from.
    pub debug: crate::debug_files::DebugSource,
}

/// One step of a decoded path trace.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PathStep {
    pub file: String,
    pub line: u32,
    #[serde(skip)]
    pub node: NodeId,
}

#[derive(Clone, Debug)]
pub struct CrashFrame {
    pub pc: u64,
    /// File name of the module the pc is in (`[vdso]`, `/lib/.../libc.so.6`, the executable).
    pub module: String,
    /// The function's name (DWARF `DW_AT_name`, else the symbol's name).
    pub function: Option<String>,
    /// Its linkage (mangled) name, when DWARF or the symbol table gives one.
    pub linkage_name: Option<String>,
    pub location: Option<SourceLoc>,
    /// Position in the frame's own function: `location` unless code inlined into it is running,
    /// then the position of the outermost inlined call.
    pub call_location: Option<SourceLoc>,
    /// Inlined calls at this pc, innermost first (empty when nothing is inlined here).
    pub inlined: Vec<InlineFrame>,
    pub variables: Vec<Variable>,
    /// The frame's function in the program graph.
    pub graph_function: Option<FuncId>,
    /// Index of this frame in the report's thread (program frames only).
    pub report_frame: Option<usize>,
    /// Per call of `inlined`, the index of its own activation in the report's thread: code
    /// instrumented before optimization keeps each inlined copy's probes, so the copy is a
    /// frame of the analysis (`None` for calls without records).
    pub inlined_report_frames: Vec<Option<usize>>,
    /// Per call of `inlined`, its activation's decoded path trace (as `path`; empty for calls
    /// without records or traces).
    pub inlined_paths: Vec<Vec<PathStep>>,
    /// Decoded path trace, oldest first, ending at the frame's current point.
    pub path: Vec<PathStep>,
    /// Why the path trace is missing or partial.
    pub path_note: Option<String>,
    pub unwind: UnwindMethod,
    /// What a debugger needs to read more of the frame later (values, registers); opaque.
    pub context: FrameContext,
}

/// Where an activation stands, as `Extract::activation` takes it.
#[derive(Clone, Copy)]
struct Position<'a> {
    /// The source position that names its point (a call's, for a frame in a call).
    at: Option<&'a SourceLoc>,
    /// The position the frame reports (its pc's).
    location: Option<&'a SourceLoc>,
    /// In a call (a return address, or code inlined into it running).
    at_call: bool,
    /// The position names no statement reliably: every node is a candidate.
    unknown: bool,
    /// Code instrumented before optimization stopped at the instruction a synchronous fault
    /// came from: its line names the statement, unless the probes say otherwise (then the
    /// position is unknown after all).
    checked_by_probes: bool,
    /// The frame runs a function's uninstrumented replica (`csi-cc --csi-scheme=custom`), or
    /// may (a dispatch scope alone): its variables hold no probe state, whatever its switch
    /// says (a switched-off caller's replica calls its callees' replicas).
    uninstrumented: bool,
}

/// A frame's registers and where its debug info is, kept for on-demand reading
/// (`Crash::frame_values`, `Crash::evaluate`, `Crash::frame_registers`).
#[derive(Clone, Debug, Default)]
pub struct FrameContext {
    pub(crate) regs: crate::core::Registers,
    /// Index into `Process::modules` of the module the pc is in.
    pub(crate) module: Option<usize>,
    /// The subprogram the pc is in, with the link-time pc.
    pub(crate) subprogram: Option<(crate::dwarf::Subprogram, u64)>,
}

impl CrashFrame {
    /// The function's name as the views show it (demangled; `??` when unknown).
    pub fn display_name(&self) -> String {
        match &self.function {
            Some(n) => csi_model::names::display_name(n, self.linkage_name.as_deref()).into_owned(),
            None => "??".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct CrashThread {
    pub tid: u32,
    /// The thread that received the fatal signal.
    pub crashed: bool,
    pub frames: Vec<CrashFrame>,
    /// Why the stack walk stopped early, if it did.
    pub walk_problem: Option<String>,
    /// Index of this thread in the report.
    pub report_thread: Option<usize>,
}

pub struct Crash {
    pub exe: PathBuf,
    pub core: PathBuf,
    pub command: Option<String>,
    pub signal: Option<SignalInfo>,
    /// Crashing thread first.
    pub threads: Vec<CrashThread>,
    /// Shared with other crashes of the same build when loaded with a [`LoadCache`].
    pub graph: Arc<ProgramGraph>,
    pub report: FailureReport,
    pub metadata: Metadata,
    /// Things the user should know (missing libraries, stack-only analysis, ...), one sentence
    /// each.
    pub notices: Vec<String>,
    /// Bytes of memory the process had mapped (for load-time benchmarks).
    pub mapped_bytes: u64,
    /// The process image and debug info, for reading more on demand (hovers, globals).
    pub(crate) process: Process,
    /// Debug info of each module of `process.modules` (same index), where it has any.
    pub(crate) debug: Vec<Option<Arc<DebugInfo>>>,
    /// The CSI records the graph was built from (coverage of passing runs is read with them).
    linked: Arc<LinkedCfg>,
}

impl Crash {
    /// The global coverage a passing run of this crash's program recorded: node → ran, for
    /// the probed nodes of every instrumented module the run has a coverage file of (matched
    /// by build id; a module without one, or without a build id, contributes nothing). `None`
    /// when the run is not of this build (no instrumented module has a file).
    pub fn passing_run_coverage(
        &self,
        run: &crate::coverage_file::PassingRun,
    ) -> Option<BTreeMap<NodeId, bool>> {
        let build_id = |mi: usize| self.process.modules[mi].build_id.as_deref();
        let file_of = |mi: usize| {
            let id = build_id(mi).filter(|id| !id.is_empty())?;
            run.files.iter().find(|f| f.build_id == id)
        };
        if !self
            .linked
            .module_of
            .iter()
            .any(|&mi| file_of(mi).is_some())
        {
            return None;
        }
        let ctx = Extract::new(&self.process, &self.debug, &self.graph, &self.linked);
        let bytes_of = |fi: usize, name: &str, n: usize| {
            let (mi, addr) = ctx.global_address(fi, name)?;
            let vaddr = addr.wrapping_sub(self.process.modules[mi].bias);
            file_of(mi)?.bytes_at(vaddr, n).map(<[u8]>::to_vec)
        };
        let mut ignored = Vec::new();
        // The passing run's own switches, from its coverage file.
        let traced = ctx.tracing_switches(&|fi, name| bytes_of(fi, name, 1));
        // Activations may have been in progress when the run wrote its coverage (SIGUSR2, or
        // `exit` inside a loop). Where its files say which (`passing_run_threads`), the
        // slots only a return sets and the blocks without a probe are decided as in a core;
        // else a clear slot set at a return stays unknown and the unprobed blocks are
        // derived with activations unseen.
        let threads = ctx.passing_run_threads(&file_of);
        let live = threads
            .as_deref()
            .and_then(|t| ctx.every_activation_seen(t));
        let mut coverage = ctx.coverage_from(&bytes_of, &traced, live, &mut ignored);
        ctx.derive_unprobed_global(&mut coverage, live);
        ctx.entries_from_calls(&mut coverage, live);
        Some(coverage)
    }

    /// Values of global variables by name, formatted like frame variables (`None` when unknown
    /// or unreadable).
    /// The line a function is declared on (its signature), when DWARF says so unambiguously.
    pub fn decl_line(&self, function: &str) -> Option<u32> {
        let mut lines = self
            .debug
            .iter()
            .flatten()
            .filter_map(|d| d.decl_lines.get(function))
            .flatten();
        let first = *lines.next()?;
        lines.all(|&l| l == first).then_some(first)
    }

    /// The executable's GNU build id, in hex.
    pub fn executable_build_id(&self) -> Option<String> {
        let m = &self.process.modules[self.process.exe];
        m.build_id
            .as_deref()
            .or(m.core_build_id.as_deref())
            .map(crate::process::hex)
    }

    /// Every module of the process with its build id and where its debug info came from.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        self.process
            .modules
            .iter()
            .filter(|m| m.bytes.is_some() || m.problem.is_some())
            .map(|m| ModuleInfo {
                name: m.name.clone(),
                file: m.file.clone(),
                build_id: m
                    .build_id
                    .as_deref()
                    .or(m.core_build_id.as_deref())
                    .map(crate::process::hex),
                debug: m.debug_source.clone(),
            })
            .collect()
    }

    /// The crashing (first) thread's stack pointer as the core recorded it.
    pub fn crashing_stack_pointer(&self) -> Option<u64> {
        self.process.core.threads.first()?.regs[crate::core::RSP]
    }

    /// Globals are looked up in the executable first, then in the libraries in load order
    /// (the dynamic linker's search order).
    pub fn global_values(&self, names: &[String]) -> Vec<Option<String>> {
        names
            .iter()
            .map(|n| {
                self.modules_exe_first().find_map(|(m, d)| {
                    d.global_value(n, self.process.modules[m].bias, &self.process)
                })
            })
            .collect()
    }

    /// Modules with debug info, the executable first.
    fn modules_exe_first(&self) -> impl Iterator<Item = (usize, &DebugInfo)> {
        let exe = self.process.exe;
        std::iter::once(exe)
            .chain((0..self.debug.len()).filter(move |&m| m != exe))
            .filter_map(|m| Some((m, self.debug[m].as_deref()?)))
    }
}

pub(crate) fn load(exe: &Path, core_path: &Path, opts: &LoadOptions) -> Result<Crash, DumpError> {
    let exe_file = std::fs::File::open(exe).map_err(|e| DumpError::io(exe, e))?;
    // SAFETY: read-only mapping; readers bounds-check.
    let exe_map = unsafe { memmap2::Mmap::map(&exe_file) }.map_err(|e| DumpError::io(exe, e))?;
    let core = CoreFile::open(core_path)?;
    load_parts(exe, ImageBytes::File(exe_map), core, opts)
}

/// Loads a crash from an executable and a core already in memory (fuzzing, tests).
pub fn load_bytes(exe: Vec<u8>, core: Vec<u8>) -> Result<Crash, DumpError> {
    let core = CoreFile::parse(Path::new("<core>"), ImageBytes::Owned(core))?;
    load_parts(
        Path::new("<exe>"),
        ImageBytes::Owned(exe),
        core,
        &LoadOptions::default(),
    )
}

fn load_parts(
    exe: &Path,
    exe_bytes: ImageBytes,
    core: CoreFile,
    opts: &LoadOptions,
) -> Result<Crash, DumpError> {
    let core_path = core.path.clone();
    let core_path = core_path.as_path();
    let search = crate::process::LibrarySearch {
        sysroot: opts.sysroot.clone(),
        debuginfod: opts.debug.clone(),
    };
    let mut process = Process::open(exe, core, exe_bytes, &search)?;
    let mut notices: Vec<String> = std::mem::take(&mut process.notices);
    attach_debug_files(&mut process, &opts.debug, &mut notices);
    push_core_notices(&process, core_path, &mut notices);
    let program = match &opts.cache {
        Some(cache) => cache.program(exe, &process, opts)?,
        None => std::sync::Arc::new(load_program(exe, &process, opts)?),
    };
    notices.extend(program.notices.iter().cloned());
    let debug = program.debug.clone();
    let graph = program.graph.clone();
    let linked = program.linked.clone();
    let metadata = program.metadata.clone();

    let signal = process.core.siginfo.as_ref().map(|s| SignalInfo {
        signo: s.signo,
        name: signal_name(s.signo),
        code: s.code,
        fault_address: s.fault_address,
    });

    let ctx = Extract::new(&process, &debug, &graph, &linked);
    let mut threads = Vec::new();
    let mut report = FailureReport::default();
    let mut unwinder = Unwinder::new(&process);
    for (ti, t) in process.core.threads.iter().enumerate() {
        threads.push(ctx.thread(ti, t, &mut unwinder, &signal, &mut report, &mut notices));
    }
    for t in &threads {
        if let Some(p) = &t.walk_problem {
            notices.push(format!("thread {}: {p}", t.tid));
        }
    }
    notices.extend(modules_without_lines(&process, &debug, &threads));
    if metadata != Metadata::None {
        report.global_coverage = ctx.global_coverage(&report.threads, &mut notices);
        // Points of frames stopped mid-node (see `Extract::thread`).
        for f in report.threads.iter().flat_map(|t| &t.frames) {
            if f.stopped_at.is_some() {
                for p in &f.point {
                    if report.global_coverage.get(p) == Some(&false) {
                        report.global_coverage.remove(p);
                    }
                }
            }
        }
        ctx.derive_unprobed_global(&mut report.global_coverage, Some(&report.threads));
        ctx.entries_from_calls(&mut report.global_coverage, Some(&report.threads));
        let off = ctx.traced.iter().filter(|&&t| !t).count();
        if off > 0 {
            notices.push(format!(
                "{off} function(s) have tracing switched off (`csi tracing`): their coverage and path traces are unknown"
            ));
        }
        if ctx.unpatched > 0 {
            notices.push(format!(
                "{} of them are on in the core, but their entries in the file do not jump to their instrumented bodies (linked without csi-cc, or switched off since): `csi tracing --exe FILE --set NAME=on` patches them for the next run",
                ctx.unpatched
            ));
        }
        if report.threads.first().is_none_or(|t| t.frames.is_empty()) {
            notices.push(
                "the crashing thread has no frame in the program; the analysis uses the other threads and coverage only"
                    .into(),
            );
        }
    }
    let mapped_bytes = process.core.mapped_bytes();
    let command = process.core.args.clone().or(process.core.command.clone());
    drop(ctx);
    drop(unwinder);
    Ok(Crash {
        process,
        debug,
        exe: exe.to_path_buf(),
        core: core_path.to_path_buf(),
        command,
        signal,
        threads,
        graph,
        report,
        metadata,
        notices,
        mapped_bytes,
        linked,
    })
}

/// What the user should know about the core itself: a minidump's limits, a cut stream, a
/// truncated core, and the modules' problems (missing or different libraries).
fn push_core_notices(process: &Process, core_path: &Path, notices: &mut Vec<String>) {
    if process.core.minidump {
        notices.push(
            "minidump: only the memory its writer saved is available (thread stacks, memory \
             around registers, ranges the program registered): per-frame path traces and local \
             coverage are read from the stacks; global coverage arrays are unknown unless the \
             program registered them (see docs/production.md)"
                .into(),
        );
    }
    if let Some(why) = &process.core.stream_cut {
        notices.push(format!(
            "{}: {why}; read as a truncated core",
            core_path.display()
        ));
    }
    if process.core.truncated_bytes > 0 {
        notices.push(format!(
            "the core dump is truncated: {} bytes of memory are missing ({}); values there are shown as unavailable and count as unknown, never as evidence",
            process.core.truncated_bytes,
            describe_cut_off(process)
        ));
    }
    for m in &process.modules {
        if let Some(p) = &m.problem {
            notices.push(p.clone());
        }
    }
}

/// The program half of a crash: debug info, CSI records and the program graph of the
/// process's modules — the same for every crash of one build (see [`LoadCache`]).
pub(crate) struct Program {
    debug: Vec<Option<Arc<DebugInfo>>>,
    linked: Arc<LinkedCfg>,
    graph: Arc<ProgramGraph>,
    metadata: Metadata,
    /// What loading it said, repeated for every crash that uses it.
    notices: Vec<String>,
}

/// What loading a program costs once per build, shared by the crashes of that build (`csi
/// triage` opens hundreds of cores of one program). Keyed by everything [`load_program`]
/// reads: the executable's path, each module's name, file, build ids and debug file. A file
/// without a build id rebuilt during one triage run with the same size is not noticed.
#[derive(Default)]
pub struct LoadCache {
    programs: std::sync::Mutex<HashMap<ProgramKey, Arc<std::sync::OnceLock<Arc<Program>>>>>,
}

type ProgramKey = (PathBuf, Option<PathBuf>, Vec<ModuleKey>);
type ModuleKey = (
    String,
    Option<PathBuf>,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Option<usize>,
    Option<usize>,
);

impl std::fmt::Debug for LoadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadCache")
    }
}

impl LoadCache {
    /// The program of `process`, loaded by the first crash that needs it (others of the same
    /// build wait for it). A program that fails to load is not kept: each crash says why.
    fn program(
        &self,
        exe: &Path,
        process: &Process,
        opts: &LoadOptions,
    ) -> Result<Arc<Program>, DumpError> {
        let key: ProgramKey = (
            exe.to_path_buf(),
            opts.graphml.clone(),
            process
                .modules
                .iter()
                .map(|m| {
                    (
                        m.name.clone(),
                        m.file.clone(),
                        m.build_id.clone(),
                        m.core_build_id.clone(),
                        m.bytes.as_ref().map(|b| b.len()),
                        m.debug_file.as_ref().map(|b| b.len()),
                    )
                })
                .collect(),
        );
        let cell = self
            .programs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_default()
            .clone();
        if let Some(p) = cell.get() {
            return Ok(p.clone());
        }
        let p = Arc::new(load_program(exe, process, opts)?);
        Ok(cell.get_or_init(|| p).clone())
    }
}

/// Loads the program half of a crash (see [`Program`]).
fn load_program(exe: &Path, process: &Process, opts: &LoadOptions) -> Result<Program, DumpError> {
    let mut notices = Vec::new();
    let exe_mod = process.exe();
    exe_mod.elf().ok_or_else(|| DumpError::NotElf {
        path: exe.to_path_buf(),
    })?;
    let elf = exe_mod.debug_elf().ok_or_else(|| DumpError::NotElf {
        path: exe.to_path_buf(),
    })?;
    let exe_debug = if crate::dwarf::has_debug_info(&elf) {
        match DebugInfo::load(&elf) {
            Ok(d) => Some(d),
            Err(e) => {
                notices.push(format!(
                    "{}: unreadable debug info ({e}); showing symbols only",
                    exe.display()
                ));
                None
            }
        }
    } else {
        notices.push(format!(
            "{} has no debug info (stripped?) and no debug file was found (build-id tree, .gnu_debuglink, debuginfod): frames show symbols only and no lines can be analysed",
            exe.display()
        ));
        None
    };
    // The program graph: the executable's records, then each instrumented library's.
    let section = |name: &str| {
        elf.section_by_name(name)
            .and_then(|s| s.uncompressed_data().ok())
    };
    let mut linked = LinkedCfg::default();
    let exe_cfg = section(".debug_CSI_CFG");
    if let Some(bytes) = &exe_cfg {
        let label = format!("{} (.debug_CSI_CFG)", exe.display());
        let (funcs, modules) =
            parse_cfg_all(bytes, &label).map_err(|e| DumpError::BadMetadata {
                path: exe.to_path_buf(),
                what: e.to_string(),
            })?;
        linked.add(process.exe, None, funcs, modules);
    }
    drop(elf);
    let mut debug: Vec<Option<DebugInfo>> = Vec::with_capacity(process.modules.len());
    for (mi, m) in process.modules.iter().enumerate() {
        if mi == process.exe {
            debug.push(None);
            continue;
        }
        let (d, cfg) = library_metadata(m, &mut notices);
        if let Some((funcs, modules)) = cfg {
            linked.add(mi, Some(m.name.clone()), funcs, modules);
        }
        debug.push(d);
    }
    debug[process.exe] = exe_debug;
    let exe_label = format!("{} (.debug_CSI_CFG)", exe.display());
    let (graph, metadata) = if exe_cfg.is_some()
        || (!linked.funcs.is_empty() && opts.graphml.is_none())
    {
        let g = cfg_linked_program_graph(
            &mut linked.funcs,
            &linked.objects,
            &linked.modules,
            &exe_label,
        )
        .map_err(|e| DumpError::BadMetadata {
            path: exe.to_path_buf(),
            what: e.to_string(),
        })?;
        (g, Metadata::CsiCfg)
    } else if let Some(gml) = &opts.graphml {
        let g = csi_model::read_graphml(gml).map_err(|e| DumpError::BadMetadata {
            path: gml.clone(),
            what: e.to_string(),
        })?;
        notices.push(
            "program graph from GraphML: path traces of original csi-cc binaries are not decoded yet; \
             stack and coverage are used"
                .into(),
        );
        linked = LinkedCfg::default();
        (g, Metadata::GraphMl)
    } else {
        notices.push(format!(
            "{} has no CSI metadata (not built with csi-cc): showing the stack and variables only; \
             build with `csi-cc --csi-scheme=none` for stack-only must/may/never, or the default scheme for traces",
            exe.display()
        ));
        (ProgramGraph::default(), Metadata::None)
    };
    if exe_cfg.is_none() && metadata == Metadata::CsiCfg {
        notices.push(format!(
            "{} has no CSI metadata (not built with csi-cc): only the instrumented libraries' frames are analysed",
            exe.display()
        ));
    }
    let mut graph = graph;
    for (fi, f) in graph.functions.iter_mut().enumerate() {
        let m = linked.module_of.get(fi).copied().unwrap_or(process.exe);
        if let Some(d) = &debug[m] {
            f.inlined_elsewhere = d.inlined.contains(&f.name)
                || f.linkage_name
                    .as_ref()
                    .is_some_and(|l| d.inlined.contains(l));
        }
    }
    if metadata == Metadata::CsiCfg {
        keep_positions_with_code(&mut graph, &linked, process.exe, &debug);
    }
    Ok(Program {
        debug: debug.into_iter().map(|d| d.map(Arc::new)).collect(),
        linked: Arc::new(linked),
        graph: Arc::new(graph),
        metadata,
        notices,
    })
}

/// Separate debug files for the modules whose images lack debug info: the executable and the
/// program's own libraries (system libraries' debug info would only name libc's lines, and is
/// not downloaded). Each one found is said in a notice.
fn attach_debug_files(
    process: &mut Process,
    search: &crate::debug_files::DebugSearch,
    notices: &mut Vec<String>,
) {
    use crate::debug_files::{find, has_debug_sections, DebugSource};
    let exe = process.exe;
    for (mi, m) in process.modules.iter_mut().enumerate() {
        if m.mismatched() || m.name == "[vdso]" {
            continue;
        }
        let Some(elf) = m.elf() else { continue };
        if has_debug_sections(&elf) {
            m.debug_source = DebugSource::Embedded;
            continue;
        }
        let system = is_system_path(&m.name);
        if mi != exe && system && search.debug_dirs.is_empty() {
            continue;
        }
        let image: &[u8] = m.bytes.as_deref().unwrap_or(&[]);
        let Some(found) = find(
            image,
            m.file.as_deref(),
            search,
            !system || mi == exe,
            notices,
        ) else {
            continue;
        };
        notices.push(format!(
            "{}: stripped; debug info {}",
            m.name,
            found.source.describe()
        ));
        m.debug_source = found.source;
        m.debug_file = Some(found.bytes);
    }
}

/// Installed by the system's package manager.
fn is_system_path(p: &str) -> bool {
    ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"]
        .iter()
        .any(|d| p.starts_with(d))
}

/// What the memory cut off from a truncated core held: thread stacks, a module's data
/// (where csi-cc's coverage arrays live), or other anonymous memory.
fn describe_cut_off(process: &Process) -> String {
    let core = &process.core;
    let mut parts: Vec<(String, u64, u64)> = Vec::new();
    for (start, end) in core.cut_off_ranges() {
        let stacks: Vec<String> = core
            .threads
            .iter()
            .filter(|t| t.regs[crate::core::RSP].is_some_and(|sp| core.same_segment(sp, start)))
            .map(|t| t.tid.to_string())
            .collect();
        let what = if !stacks.is_empty() {
            format!("the stack of thread {}", stacks.join(", "))
        } else if let Some(m) = process.module_at(start) {
            format!("data of {}", m.name)
        } else {
            "anonymous memory (heap, other mappings)".to_string()
        };
        // Adjacent mappings of the same kind read as one range.
        match parts.last_mut() {
            Some((w, _, e)) if *w == what && *e == start => *e = end,
            _ => parts.push((what, start, end)),
        }
    }
    parts
        .iter()
        .map(|(what, start, end)| format!("{what} at {start:#x}..{end:#x}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The `.debug_CSI_CFG` records of every instrumented module, the executable's first.
#[derive(Default)]
struct LinkedCfg {
    funcs: Vec<CfgFunction>,
    /// Per function record: the shared object it came from (`None`: the executable).
    objects: Vec<Option<String>>,
    /// Per function record: its module's index in `Process::modules`.
    module_of: Vec<usize>,
    modules: Vec<CfgModule>,
}

impl LinkedCfg {
    fn add(
        &mut self,
        module: usize,
        object: Option<String>,
        funcs: Vec<CfgFunction>,
        modules: Vec<CfgModule>,
    ) {
        self.objects.extend(funcs.iter().map(|_| object.clone()));
        self.module_of.extend(funcs.iter().map(|_| module));
        self.funcs.extend(funcs);
        self.modules.extend(modules);
    }
}

/// One notice per library that has frames on some stack but no debug info to give them
/// source lines. System libraries (whose debug info lives in separate packages) are left out:
/// their frames showing symbols only is expected.
fn modules_without_lines(
    process: &Process,
    debug: &[Option<Arc<DebugInfo>>],
    threads: &[CrashThread],
) -> Vec<String> {
    let system = is_system_path;
    let mut with_frames: Vec<usize> = threads
        .iter()
        .flat_map(|t| &t.frames)
        .filter_map(|f| process.module_index_at(f.pc))
        .collect();
    with_frames.sort_unstable();
    with_frames.dedup();
    with_frames
        .into_iter()
        .filter(|&mi| mi != process.exe && debug[mi].is_none())
        .map(|mi| &process.modules[mi])
        .filter(|m| !m.mismatched() && !system(&m.name) && m.name != "[vdso]")
        // Unreadable debug info or metadata got their own notice.
        .filter(|m| {
            m.debug_elf().is_some_and(|e| {
                !crate::dwarf::has_debug_info(&e) && e.section_by_name(".debug_CSI_CFG").is_none()
            })
        })
        .map(|m| {
            format!(
                "{} has no debug info (built without -g or stripped); its frames show symbols only",
                m.name
            )
        })
        .collect()
}

/// A shared library's debug info and CSI records, when it has them and they can be used; a
/// notice says why not otherwise.
#[allow(clippy::type_complexity)]
fn library_metadata(
    m: &crate::process::Module,
    notices: &mut Vec<String>,
) -> (
    Option<DebugInfo>,
    Option<(Vec<CfgFunction>, Vec<CfgModule>)>,
) {
    if m.mismatched() {
        return (None, None); // the module's own notice says so
    }
    let Some(elf) = m.debug_elf() else {
        return (None, None);
    };
    let cfg_bytes = elf
        .section_by_name(".debug_CSI_CFG")
        .and_then(|s| s.uncompressed_data().ok());
    let debug = if crate::dwarf::has_debug_info(&elf) {
        match DebugInfo::load(&elf) {
            Ok(d) => Some(d),
            Err(e) => {
                notices.push(format!(
                    "{}: unreadable debug info ({e}); its frames show symbols only",
                    m.name
                ));
                None
            }
        }
    } else {
        None
    };
    let Some(bytes) = cfg_bytes else {
        return (debug, None);
    };
    if debug.is_none() {
        notices.push(format!(
            "{} has CSI metadata but no usable debug info; its frames are not analysed",
            m.name
        ));
        return (None, None);
    }
    let label = format!("{} (.debug_CSI_CFG)", m.name);
    match parse_cfg_all(&bytes, &label) {
        Ok(cfg) => (debug, Some(cfg)),
        Err(e) => {
            notices.push(format!(
                "{}: unreadable CSI metadata ({e}); its frames are not analysed",
                m.name
            ));
            (debug, None)
        }
    }
}

/// A frame's decoded path trace.
struct FramePath {
    /// Nodes that ran in this activation before the point, oldest first.
    path: Vec<NodeId>,
    /// The point candidates, narrowed to the block the running sum decodes at.
    point: Vec<NodeId>,
    /// Nothing ran in this activation before `path[0]`.
    from_entry: bool,
    /// Nodes that ran in this activation before `path` but not right before it: the stored
    /// paths before iterations of a loop that stores none (`CfgFunction::pt_elided`).
    ran_earlier: Vec<NodeId>,
    /// Why the path is missing, when it is.
    note: Option<String>,
}

/// A thread's frames, as `Extract::thread_frames` reads them from its stack walk.
struct ThreadFrames {
    /// One per physical frame, innermost first.
    frames: Vec<CrashFrame>,
    /// The report's frames: the program frames' activations (inlined copies' own first).
    rframes: Vec<Frame>,
    /// Frames whose own stack memory was cut off with the end of a truncated core.
    lost_frames: Vec<String>,
}

struct Extract<'a> {
    process: &'a Process,
    /// Per module of the process.
    debug: &'a [Option<Arc<DebugInfo>>],
    graph: &'a ProgramGraph,
    cfg: &'a [CfgFunction],
    /// Per graph function (with CSI records): its module's index in the process.
    module_of: &'a [usize],
    /// Trace-point label → node, per function.
    labels: Vec<HashMap<&'a str, NodeId>>,
    /// Coverage array symbols → runtime address, per module.
    symbols: Vec<HashMap<String, u64>>,
    /// Each function's basic-block graph from its CFG record, built on first use (every
    /// frame of the function asks the same questions of it).
    record_blocks: Vec<std::cell::OnceCell<BlockGraph>>,
    /// Each function's entry-block node (see [`entry_block_node`](Self::entry_block_node)),
    /// found on first use: the derivations across calls ask for it per call site.
    entry_nodes: Vec<std::cell::OnceCell<Option<NodeId>>>,
    /// Per function record: its probes ran (no tracing switch, or one set to 1; see
    /// `tracing_switches`). A switched-off function runs an uninstrumented replica: its
    /// frames have no probe state and its coverage arrays stay zero.
    traced: Vec<bool>,
    /// How many of the switched-off (`traced` false) are on in the core, but their patched
    /// entry in the file is no jump to their body (`unpatched_entries_off`).
    unpatched: usize,
    /// The modules with CSI records (indices in the process's modules, sorted).
    instrumented: Vec<usize>,
}

impl<'a> Extract<'a> {
    fn new(
        process: &'a Process,
        debug: &'a [Option<Arc<DebugInfo>>],
        graph: &'a ProgramGraph,
        linked: &'a LinkedCfg,
    ) -> Self {
        let cfg = linked.funcs.as_slice();
        let labels = graph
            .functions
            .iter()
            .map(|f| {
                let mut m = HashMap::new();
                for &n in &f.nodes {
                    for l in &graph.node(n).labels {
                        m.insert(l.as_str(), n);
                    }
                }
                m
            })
            .collect();
        let mut symbols = vec![HashMap::new(); process.modules.len()];
        let mut instrumented: Vec<usize> = linked.module_of.clone();
        instrumented.sort_unstable();
        instrumented.dedup();
        for &mi in &instrumented {
            let m = &process.modules[mi];
            let Some(elf) = m.debug_elf() else { continue };
            for s in elf.symbols() {
                if let Ok(n) = s.name() {
                    if n.starts_with("__CC_arr_")
                        || n.starts_with("__BBC_arr_")
                        || n.starts_with("__FC_arr_")
                        || n.starts_with("__csi_sw_")
                    {
                        symbols[mi].insert(n.to_string(), s.address().wrapping_add(m.bias));
                    }
                }
            }
        }
        let mut x = Extract {
            process,
            debug,
            graph,
            cfg,
            module_of: &linked.module_of,
            labels,
            symbols,
            record_blocks: (0..cfg.len()).map(|_| std::cell::OnceCell::new()).collect(),
            entry_nodes: (0..cfg.len()).map(|_| std::cell::OnceCell::new()).collect(),
            traced: Vec::new(),
            unpatched: 0,
            instrumented,
        };
        x.traced = x.tracing_switches(&|fi, name| x.global_bytes(fi, name, 1));
        x.unpatched_entries_off();
        x
    }

    /// A function switched on in the core whose patched entry (`entry_patch`) is no jump to
    /// its body in the file — linked without csi-cc's link step, or switched off since —
    /// runs its replica when called from other units: its arrays are no evidence, as if off.
    fn unpatched_entries_off(&mut self) {
        for &mi in &self.instrumented {
            let ours = |fi: usize| self.module_of.get(fi) == Some(&mi);
            let at_stake: Vec<usize> = (0..self.cfg.len())
                .filter(|&fi| ours(fi) && self.cfg[fi].entry_patch && self.traced[fi])
                .collect();
            if at_stake.is_empty() {
                continue;
            }
            let m = &self.process.modules[mi];
            // The records are read already: only their symbols and entries are looked up.
            let file = m.bytes.as_deref().and_then(|image| {
                let meta = m.debug_file.as_deref().unwrap_or(image);
                csi_model::sections::switches::SwitchFile::new(meta, image).ok()
            });
            let patched = |fi: usize| {
                file.as_ref().is_some_and(|file| {
                    matches!(file.switch(&self.cfg[fi]),
                        Ok(Some(s)) if s.entry.as_ref().is_some_and(|e| e.jumps))
                })
            };
            for fi in at_stake {
                if !patched(fi) {
                    self.traced[fi] = false;
                    self.unpatched += 1;
                }
            }
        }
    }

    /// Per function record: whether its probes ran — false where a switch (`csi-cc
    /// --csi-scheme=custom`, set by `csi tracing`) reads 0, or cannot be read (then its
    /// coverage and frame state are no evidence either way), from `byte_of(record, switch)`.
    fn tracing_switches(&self, byte_of: &dyn Fn(usize, &str) -> Option<Vec<u8>>) -> Vec<bool> {
        self.cfg
            .iter()
            .enumerate()
            .map(|(fi, rec)| match &rec.switch {
                None => true,
                Some(name) => byte_of(fi, name).is_some_and(|b| b.first().is_some_and(|&v| v != 0)),
            })
            .collect()
    }

    /// The graph function of a DWARF subprogram: same name and same file (static functions of
    /// the same name live in different files), else the only function of that name.
    fn graph_function(
        &self,
        name: &str,
        linkage: Option<&str>,
        cu: Option<&str>,
        object: Option<&str>,
    ) -> Option<FuncId> {
        let g = self.graph;
        let named: Vec<FuncId> = (0..g.functions.len() as FuncId)
            .filter(|&f| {
                let gf = g.function(f);
                gf.object.as_deref() == object
                    && (gf.name == name
                        || (linkage.is_some() && gf.linkage_name.as_deref() == linkage))
            })
            .collect();
        if let (Some(cu), true) = (cu, named.len() > 1) {
            if let Some(&f) = named.iter().find(|&&f| {
                g.function(f)
                    .file
                    .is_some_and(|fid| same_source(g.file_name(fid), cu))
            }) {
                return Some(f);
            }
        }
        (named.len() == 1).then(|| named[0])
    }

    /// One thread of the core (`ti`: its index there, the crashing thread first), its stack
    /// walked and its frames read. The report gets the thread when it has program frames,
    /// crashed, or may hide program frames.
    fn thread(
        &self,
        ti: usize,
        t: &ThreadState,
        unwinder: &mut Unwinder,
        signal: &Option<SignalInfo>,
        report: &mut FailureReport,
        notices: &mut Vec<String>,
    ) -> CrashThread {
        let graph = self.graph;
        let (phys, end) = unwinder.walk(t.regs);
        let walk_problem = match end {
            WalkEnd::Complete => None,
            WalkEnd::Limit(n) => Some(format!("stack walk stopped after {n} frames")),
            WalkEnd::Stuck(why) => Some(format!("stack walk stopped: {why}")),
        };
        let walk_complete = walk_problem.is_none();
        let ThreadFrames {
            frames,
            mut rframes,
            lost_frames,
        } = self.thread_frames(ti, t.fs_base, &phys, notices);
        // Where library code (or the runtime) called into the program: the outermost program
        // frame, frames whose next frame out is library code, and frames whose next program
        // frame out does not call them in the graph (a tail call left no frame). A physical
        // frame's report frames are its inlined copies' activations, innermost first, then its
        // own (`report_frame`, the last), so the caller of report frame `k` is `k + 1`: the
        // innermost activation of the next physical frame out, not that frame's own function,
        // which stands further out when code is inlined into it.
        for (i, cf) in frames.iter().enumerate() {
            let Some(k) = cf.report_frame else { continue };
            let outer = frames
                .get(i + 1)
                .and_then(|o| o.report_frame)
                .map(|_| k + 1);
            rframes[k].called_from_outside = match outer {
                None => true,
                Some(ko) => {
                    let f = rframes[k].function;
                    !rframes[ko]
                        .point
                        .iter()
                        .any(|&p| f.is_some_and(|f| graph.callees(p).contains(&f)))
                }
            };
        }
        // A frame stopped inside its point node (the crash, or a signal) ran it only partly:
        // its coverage store (right before the call) may not have happened yet.
        for f in rframes.iter_mut().filter(|f| f.stopped_at.is_some()) {
            let point = f.point.clone();
            for p in &point {
                if f.local_coverage.get(p) == Some(&false) {
                    f.local_coverage.remove(p);
                }
            }
        }
        // Where the walk stopped early, the frames beyond it are unknown — unless it had
        // already passed the program's entry function into the runtime that called it.
        let entry_function = graph.program_entry.map(|e| graph.node(e).function);
        let outer_frames_unknown = !walk_complete
            && !frames
                .iter()
                .rposition(|f| f.report_frame.is_some())
                .is_some_and(|k| {
                    frames[k].graph_function == entry_function && k + 1 < frames.len()
                });
        let last_sp = phys.last().and_then(|f| f.regs[crate::core::RSP]);
        notices.extend(self.missing_stack_notice(
            t.tid,
            walk_complete,
            last_sp,
            frames.len(),
            &lost_frames,
        ));
        let crashed = ti == 0 && signal.is_some();
        // The crashing thread is always the report's first, even without program frames
        // (then the analysis has no crashing walk, rather than taking another thread's).
        // So is a thread whose stack may hide program frames.
        let report_thread = (!rframes.is_empty() || crashed || outer_frames_unknown)
            .then_some(report.threads.len());
        if report_thread.is_some() {
            report.threads.push(Thread {
                id: Some(t.tid as u64),
                name: None,
                signal: if crashed { signal.clone() } else { None },
                frames: rframes,
                outer_frames_unknown,
            });
        }
        CrashThread {
            tid: t.tid,
            crashed,
            frames,
            walk_problem,
            report_thread,
        }
    }

    /// The frames of a thread's stack walk `phys` (`ti`: the thread's index in the core).
    fn thread_frames(
        &self,
        ti: usize,
        fs_base: u64,
        phys: &[crate::unwind::PhysFrame],
        notices: &mut Vec<String>,
    ) -> ThreadFrames {
        let process = self.process;
        let mut frames: Vec<CrashFrame> = Vec::with_capacity(phys.len());
        let mut rframes: Vec<Frame> = Vec::new();
        // Frames whose own stack memory was cut off with the end of a truncated core.
        let mut lost_frames: Vec<String> = Vec::new();
        for (k, pf) in phys.iter().enumerate() {
            // The instruction that faulted (kernel-sent SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGTRAP,
            // the crashing thread's innermost frame): what ran up to it is the statement's.
            let faulted = ti == 0
                && k == 0
                && pf.exact_pc
                && process
                    .core
                    .siginfo
                    .as_ref()
                    .is_some_and(|s| s.fault_address.is_some());
            let inner = frames.last().and_then(|f| f.function.as_deref());
            let (cf, rf) = self.frame(pf, fs_base, faulted, inner, notices);
            let mut cf = cf;
            let sp = pf.regs[crate::core::RSP];
            if sp.is_some_and(|sp| process.core.is_cut_off(sp))
                || pf
                    .cfa
                    .is_some_and(|c| process.core.is_cut_off(c.wrapping_sub(8)))
            {
                lost_frames.push(format!("#{} {}", frames.len(), cf.display_name()));
                if !rf.is_empty() {
                    cf.path_note = Some(
                        "this frame's stack memory is missing from the truncated core: its path \
                         trace and local coverage are unknown"
                            .into(),
                    );
                }
            }
            // Inlined copies' own activations (instrumented before optimization) come first,
            // innermost first; the crash frame stands for its function's, the last.
            let activations = rf.len();
            let rf = self.without_springboards(rf, rframes.last());
            if activations > 0 && rf.is_empty() {
                // Only a springboard's call into its replica (one that cannot tail-call):
                // no frame of the program's, the replica's caller is the next one out.
                continue;
            }
            if !rf.is_empty() {
                cf.report_frame = Some(rframes.len() + rf.len() - 1);
                cf.inlined_report_frames = self.inlined_activations(&cf, &rf, rframes.len());
                rframes.extend(rf);
            }
            frames.push(cf);
        }
        ThreadFrames {
            frames,
            rframes,
            lost_frames,
        }
    }

    /// The instruction at `pc` is a direct call or jump (x86-64 `call`/`jmp rel32`) to the
    /// start of a switchable function's body or replica (`<f>.__csi_on` / `<f>.__csi_off`):
    /// a call's dispatch, stopped before the callee began.
    fn dispatch_call_at(&self, pc: u64) -> bool {
        let mut b = [0u8; 5];
        if !self.process.read(pc, &mut b) || !matches!(b[0], 0xE8 | 0xE9) {
            return false;
        }
        let target = pc
            .wrapping_add(5)
            .wrapping_add(i32::from_le_bytes([b[1], b[2], b[3], b[4]]) as i64 as u64);
        self.process
            .module_at(target)
            .and_then(|m| m.symbolize(target))
            .is_some_and(|(n, off)| {
                off == 0
                    && (n.ends_with(csi_model::sections::REPLICA_SUFFIX)
                        || n.ends_with(csi_model::sections::BODY_SUFFIX))
            })
    }

    /// The inlined calls at a pc (innermost first) without the scope of a switched-off
    /// function's springboard around its inlined replica — the same function, at a line-0 call
    /// (see `without_springboards`) — nor a call's dispatch scope around the body or replica
    /// it called ([`Variant::Dispatch`]).
    fn without_inlined_springboards(
        &self,
        inl: Vec<InlineFrame>,
        cu: Option<&str>,
        object: Option<&str>,
    ) -> Vec<InlineFrame> {
        let mut out: Vec<InlineFrame> = Vec::with_capacity(inl.len());
        for f in inl {
            let same_inside = out.last().is_some_and(|inner| inner.function == f.function);
            let springboard = same_inside
                && f.location.as_ref().is_none_or(|l| l.line == 0)
                && f.function.as_deref().is_some_and(|name| {
                    self.graph_function(name, f.linkage_name.as_deref(), cu, object)
                        .is_some_and(|g| self.traced.get(g as usize) == Some(&false))
                });
            // A call's dispatch scope around the body or replica it called: one activation.
            let dispatch = same_inside && f.variant == Variant::Dispatch;
            if !springboard && !dispatch {
                out.push(f);
            }
        }
        out
    }

    /// Which of `cf`'s inlined calls each of its activations `rf` but the last (its own) is,
    /// as report frame indices from `base`: both run innermost first, and a call without an
    /// activation (no records) is skipped, so each activation is the next call of its
    /// function's name.
    fn inlined_activations(
        &self,
        cf: &CrashFrame,
        rf: &[Frame],
        base: usize,
    ) -> Vec<Option<usize>> {
        let mut out = vec![None; cf.inlined.len()];
        let mut calls = cf.inlined.iter().enumerate();
        for (j, fr) in rf.iter().enumerate().take(rf.len().saturating_sub(1)) {
            let Some(f) = fr.function else { continue };
            let name = &self.graph.function(f).name;
            if let Some((d, _)) = calls
                .by_ref()
                .find(|(_, c)| c.function.as_deref() == Some(name.as_str()))
            {
                out[d] = Some(base + j);
            }
        }
        out
    }

    /// `rf` (a physical frame's activations, innermost first) without the springboards of
    /// switched-off functions (`csi-cc --csi-scheme=custom`): where a caller inlined a
    /// function's springboard, the caller's frame shows that function inlined at a line-0
    /// call (the tail call into its replica, which never returns there); the activation is the
    /// replica's, the next frame in (`inner`), and no code of the springboard's own ran.
    fn without_springboards(&self, rf: Vec<Frame>, inner: Option<&Frame>) -> Vec<Frame> {
        let mut out: Vec<Frame> = Vec::with_capacity(rf.len());
        let mut inner_fn = inner.and_then(|f| f.function);
        for fr in rf {
            let springboard = fr.function.is_some()
                && fr.function == inner_fn
                && fr
                    .function
                    .is_some_and(|f| self.traced.get(f as usize) == Some(&false))
                && fr.location.as_ref().is_none_or(|l| l.1 == 0);
            inner_fn = fr.function;
            if !springboard {
                out.push(fr);
            }
        }
        out
    }

    /// The notice for a thread whose stack memory is missing from a truncated core: where the
    /// walk stopped early (`last_sp`: the stack pointer of its last frame of `frames`), that the
    /// frames beyond are unknown; else which frames lost their memory.
    fn missing_stack_notice(
        &self,
        tid: u32,
        walk_complete: bool,
        last_sp: Option<u64>,
        frames: usize,
        lost_frames: &[String],
    ) -> Option<String> {
        let core = &self.process.core;
        if !walk_complete {
            let missing = last_sp.is_some_and(|sp| {
                core.cut_off_ranges()
                    .iter()
                    .any(|&(a, b)| core.same_segment(sp, a) && b > sp)
            });
            if missing || !lost_frames.is_empty() {
                return Some(format!(
                    "thread {}: stack memory is missing from the truncated core{}; frames beyond #{} are unknown and the analysis assumes any function may be active there",
                    tid,
                    if lost_frames.is_empty() {
                        String::new()
                    } else {
                        format!(" (frames {})", lost_frames.join(", "))
                    },
                    frames.saturating_sub(1)
                ));
            }
        } else if !lost_frames.is_empty() {
            return Some(format!(
                "thread {}: stack memory of frames {} is missing from the truncated core; their variables, path traces and local coverage are unknown",
                tid,
                lost_frames.join(", ")
            ));
        }
        None
    }

    /// One physical frame: its crash frame (function, position, variables, inlined calls) and
    /// its report frames (inlined activations first). `inner`: the function of the next frame
    /// in, if any.
    fn frame(
        &self,
        pf: &crate::unwind::PhysFrame,
        fs_base: u64,
        faulted: bool,
        inner: Option<&str>,
        notices: &mut Vec<String>,
    ) -> (CrashFrame, Vec<Frame>) {
        let p = self.process;
        let module = p.module_at(pf.pc);
        let mut cf = CrashFrame {
            pc: pf.pc,
            module: module.map(|m| m.name.clone()).unwrap_or_else(|| "?".into()),
            function: None,
            linkage_name: None,
            location: None,
            call_location: None,
            inlined: Vec::new(),
            variables: Vec::new(),
            graph_function: None,
            report_frame: None,
            inlined_report_frames: Vec::new(),
            inlined_paths: Vec::new(),
            path: Vec::new(),
            path_note: None,
            unwind: pf.method,
            context: FrameContext {
                regs: pf.regs,
                module: p.module_index_at(pf.pc),
                subprogram: None,
            },
        };
        let (Some(m), Some(mi)) = (module, p.module_index_at(pf.pc)) else {
            return (cf, Vec::new());
        };
        let lookup_pc = if pf.exact_pc {
            pf.pc
        } else {
            pf.pc.wrapping_sub(1)
        };
        let svma = lookup_pc.wrapping_sub(m.bias);
        let object = (mi != p.exe).then_some(m.name.as_str());
        let Some(debug) = self.debug[mi].as_ref() else {
            cf.function = m.symbolize(lookup_pc).map(|(n, _)| n);
            cf.linkage_name = cf.function.clone().filter(|n| n.starts_with("_Z"));
            return (cf, Vec::new());
        };
        let mut inl = debug.inline_frames(svma);
        // Stopped in a call's dispatch scope at its own call into the body or replica — the
        // callee is the next frame in, or has not begun (a stack overflow faults on the
        // call's push): the caller stands at that call, whose position is where the scope is
        // inlined. (Elsewhere a dispatch scope alone is code merged from both bodies.)
        if inl.len() > 1
            && inl[0].variant == Variant::Dispatch
            && if pf.exact_pc {
                self.dispatch_call_at(pf.pc)
            } else {
                inner.is_some_and(|n| inl[0].function.as_deref() == Some(n))
            }
        {
            inl.remove(0);
        }
        cf.location = inl
            .first()
            .and_then(|f| f.location.clone())
            .or_else(|| debug.location(svma));
        let sp = debug.subprogram(svma);
        let crate::dwarf::SubprogramNames {
            name,
            linkage,
            cu,
            variant,
        } = sp.map(|s| debug.subprogram_names(s)).unwrap_or_default();
        cf.linkage_name = linkage.clone();
        cf.function = name
            .clone()
            .or_else(|| m.symbolize(lookup_pc).map(|(n, _)| n));
        cf.call_location = cf.location.clone();
        if inl.len() > 1 {
            cf.call_location = inl
                .pop()
                .and_then(|f| f.location)
                .or(cf.call_location.take());
            cf.inlined = self.without_inlined_springboards(inl, cu.as_deref(), object);
        }
        if let Some(sp) = sp {
            let regs = FrameRegs {
                regs: &pf.regs,
                cfa: pf.cfa,
                fs_base,
            };
            cf.variables = debug.variables(sp, svma, m.bias, &regs, p);
            cf.context.subprogram = Some((sp, svma));
        }
        let Some(name) = cf.function.clone() else {
            return (cf, Vec::new());
        };
        let Some(f) = self.graph_function(&name, linkage.as_deref(), cu.as_deref(), object) else {
            return (cf, Vec::new());
        };
        cf.graph_function = Some(f);
        // A C++ member function's replica keeps its declaration's linkage name in DWARF (the
        // definition's own is not emitted): its symbol says what it is — looked up only for a
        // switchable function (a scan of the symbol table, per frame).
        let uninstrumented = variant != Variant::Plain
            || (self.cfg.get(f as usize).is_some_and(|r| r.switch.is_some())
                && m.symbolize(lookup_pc)
                    .is_some_and(|(n, _)| n.ends_with(csi_model::sections::REPLICA_SUFFIX)));
        // Outer frames (and a program frame whose callee is library code) sit at a call.
        // A return address means a call in progress; an exact pc (the innermost frame, or one
        // interrupted by a signal) stopped anywhere in its node.
        let mut at_call = !pf.exact_pc;
        let mut at = cf.location.as_ref();
        let mut position_unknown = false;
        let mut inlined_frames = Vec::new();
        let optimized_after = self.graph.function(f).optimized_after;
        if optimized_after {
            // Instrumented before optimization: the probes are the source's, the machine code
            // between two of them is not. A call keeps its line (and calls do not move across
            // the volatile probes), so a frame in a call — a real one, or code inlined into
            // it, whose probes and state are the inlined copy's own — is at the call sites of
            // that line. An instruction that faulted is the statement's own memory access or
            // division: LLVM does not speculate one, gives it line 0 when it hoists or merges
            // it, and moves it across the probes only where the statement runs next anyway
            // (GVN's load PRE into a predecessor) — so its line is where the -O0 program
            // stops, checked against the probes (`Position::checked_by_probes`). Any other
            // stop (another thread, a signal sent by a process) may carry the line of code
            // moved from elsewhere between the same probes — an arithmetic instruction can
            // keep the line of a statement that never ran: the position is unknown and the
            // path sum decides.
            if !cf.inlined.is_empty() {
                (inlined_frames, cf.inlined_paths) =
                    self.inlined_frames(&cf, cu.as_deref(), object, pf, faulted, notices);
                at_call = true;
                at = cf.call_location.as_ref();
            } else if !at_call && !faulted {
                position_unknown = true;
            }
        }
        let (rf, steps, note) = self.activation(
            f,
            &name,
            pf.pc,
            &cf.variables,
            Position {
                at,
                location: cf.location.as_ref(),
                at_call,
                unknown: position_unknown,
                checked_by_probes: optimized_after && faulted && !at_call,
                uninstrumented,
            },
            notices,
        );
        cf.path = steps;
        cf.path_note = note;
        inlined_frames.push(rf);
        (cf, inlined_frames)
    }

    /// The report frames of the copies of functions instrumented before optimization that are
    /// inlined at the pc (`cf.inlined`, innermost first): each with its own probes' state (the
    /// variables of its inlined scope), the innermost stopped anywhere (or at a call when the
    /// pc is a return address), each outer one at the call of the next; and per call of
    /// `cf.inlined`, its activation's path as source steps.
    fn inlined_frames(
        &self,
        cf: &CrashFrame,
        cu: Option<&str>,
        object: Option<&str>,
        pf: &crate::unwind::PhysFrame,
        faulted: bool,
        notices: &mut Vec<String>,
    ) -> (Vec<Frame>, Vec<Vec<PathStep>>) {
        let mut out = Vec::new();
        let mut paths = vec![Vec::new(); cf.inlined.len()];
        for (i, inl) in cf.inlined.iter().enumerate() {
            let Some(name) = inl.function.as_deref() else {
                continue;
            };
            let Some(g) = self
                .graph_function(name, inl.linkage_name.as_deref(), cu, object)
                .filter(|&g| self.graph.function(g).optimized_after)
            else {
                continue;
            };
            let vars: Vec<Variable> = cf
                .variables
                .iter()
                .filter(|v| v.inlined_in.as_deref() == Some(name))
                .map(|v| Variable {
                    inlined_in: None,
                    ..v.clone()
                })
                .collect();
            let at_call = i > 0 || !pf.exact_pc;
            let (mut rf, steps, _) = self.activation(
                g,
                name,
                pf.pc,
                &vars,
                Position {
                    at: inl.location.as_ref(),
                    location: inl.location.as_ref(),
                    at_call,
                    unknown: !at_call && !faulted,
                    checked_by_probes: faulted && !at_call,
                    uninstrumented: inl.variant != Variant::Plain,
                },
                notices,
            );
            rf.called_from_outside = false;
            out.push(rf);
            paths[i] = steps;
        }
        (out, paths)
    }

    /// One activation of `f` as a report frame: its current point, path trace and local
    /// coverage from its variables (the probes' state), and the path as source steps.
    fn activation(
        &self,
        f: FuncId,
        name: &str,
        pc: u64,
        variables: &[Variable],
        position: Position<'_>,
        notices: &mut Vec<String>,
    ) -> (Frame, Vec<PathStep>, Option<String>) {
        let Position {
            at,
            location,
            at_call,
            unknown,
            checked_by_probes,
            uninstrumented,
        } = position;
        let instrumented = !uninstrumented && self.traced.get(f as usize) != Some(&false);
        let mut path_note = None;
        let mut point = if unknown {
            Vec::new()
        } else {
            self.point_candidates(f, at, at_call)
        };
        let position_unknown = point.is_empty();
        if position_unknown {
            // Unknown position (a line-0 row: code merged from several lines): every
            // candidate is possible (never guess) — also for the path decoder, which must not
            // end the path before any of them.
            point = self.every_point_candidate(f, at_call);
            if !self.graph.function(f).optimized_after {
                notices.push(format!(
                    "{name}: pc {:#x} matches no node of the program graph; using every {} of the function",
                    pc,
                    if at_call { "call site" } else { "node" }
                ));
            }
        }
        let mut rf = Frame {
            function: Some(f),
            pc: Some(pc),
            location: location.map(|l| (l.file.clone(), l.line, l.column)),
            ..Frame::default()
        };
        // A switched-off function's frame is its uninstrumented replica's: no probe state.
        let no_state: &[Variable] = &[];
        let variables = if instrumented { variables } else { no_state };
        // Local block coverage (zeroed at entry: it holds its bits anywhere in the frame but
        // at the entry block's start — a thread stopped there by the crash, not in a call,
        // may not have zeroed it yet; the entry block has no predecessor, so there the
        // position alone decides every bit).
        let bbc_zeroed = at_call || !self.in_entry_block(f, &point);
        if let Some(bytes) = variable_bytes(variables, "__BBC_arr").filter(|_| bbc_zeroed) {
            self.read_local_array(f, bytes, "BBC", &mut rf);
        }
        // Path trace.
        let mut contradicted = false;
        if let Some(rec) = self
            .cfg
            .get(f as usize)
            .filter(|r| r.path_traced && r.pt.is_some() && instrumented)
        {
            match self.decode_path(f, rec, variables, &point, position_unknown) {
                Ok(fp) => {
                    point = fp.point;
                    rf.path = fp.path;
                    rf.path_from_entry = fp.from_entry;
                    for n in fp.ran_earlier {
                        rf.local_coverage.insert(n, true);
                    }
                    path_note = fp.note;
                }
                Err(why) => {
                    contradicted = true;
                    path_note = Some(why);
                }
            }
        }
        // A faulting instruction's line is trusted only where the probes agree: the path sum
        // decodes at one of its nodes and the frame's block coverage has one of them run.
        contradicted |= point.is_empty()
            || point
                .iter()
                .all(|n| rf.local_coverage.get(n) == Some(&false));
        if checked_by_probes && !position_unknown && contradicted {
            notices.push(format!(
                "{name}: the probes disagree with the faulting instruction's line; its position in the function is unknown"
            ));
            let position = Position {
                unknown: true,
                checked_by_probes: false,
                ..position
            };
            return self.activation(f, name, pc, variables, position, notices);
        }
        rf.point = point;
        let rec = self.cfg.get(f as usize).filter(|_| instrumented);
        if rec.is_some_and(|r| r.entry_from_calls.is_some()) {
            // Its one block, which a frame of it stands in.
            if let Some(n) = self.entry_block_node(f) {
                rf.local_coverage.insert(n, true);
            }
        }
        let block_covered = rec.is_some_and(|r| r.bbc.is_some());
        if block_covered {
            for (n, ran) in self.bbc_by_position(f, &rf.point, !bbc_zeroed) {
                rf.local_coverage.entry(n).or_insert(ran);
            }
            for (n, ran) in self.bbc_on_path(f, &rf.local_coverage, &rf.point) {
                rf.local_coverage.entry(n).or_insert(ran);
            }
            let activation = [rf.point.clone()];
            let derived = self.unprobed_blocks(f, &rf.local_coverage, Some(&activation));
            rf.local_coverage.extend(derived);
        }
        self.local_call_site_coverage(f, variables, at_call, &mut rf);
        rf.stopped_at = (!at_call)
            .then(|| {
                location.map(|l| csi_model::SourcePos {
                    line: l.line,
                    column: l.column,
                })
            })
            .flatten();
        if position_unknown && !at_call {
            // Stopped somewhere among the points (a line-0 row, or code instrumented before
            // optimization): any of them may have run only in part, so none's coverage store
            // is evidence it did not run, and none of their lines surely ran in this
            // activation (`csi_analysis::project_lines_cut`).
            rf.stopped_at = Some(csi_model::SourcePos { line: 0, column: 0 });
        }
        let steps = self.path_steps(&rf);
        (rf, steps, path_note)
    }

    /// Every node of `f` the frame may stand at when its position is unknown: every call site
    /// (in a call), else every node but the entry and exit.
    fn every_point_candidate(&self, f: FuncId, at_call: bool) -> Vec<NodeId> {
        self.graph
            .function(f)
            .nodes
            .iter()
            .copied()
            .filter(|&n| {
                let k = self.graph.node(n).kind;
                if at_call {
                    k == NodeKind::CallSite
                } else {
                    k != NodeKind::Entry && k != NodeKind::Exit
                }
            })
            .collect()
    }

    /// The local call-site coverage of the activation `rf` of `f`, now that the frame's
    /// position is known.
    fn local_call_site_coverage(
        &self,
        f: FuncId,
        variables: &[Variable],
        at_call: bool,
        rf: &mut Frame,
    ) {
        // The array where it holds the activation's bits (`cc_local_zeroed_in`), then the
        // call sites without a probe of their own, then what the position decides.
        let array_holds_bits = self.cc_array_holds_bits(f, &rf.point, at_call);
        if let Some(bytes) = variable_bytes(variables, "__CC_arr").filter(|_| array_holds_bits) {
            self.read_local_array(f, bytes, "CC", rf);
            let bits: Vec<Option<bool>> = bytes.iter().map(|&b| Some(b != 0)).collect();
            for (n, ran) in self.implied_cc(f, &bits, Some((&rf.point, at_call))) {
                rf.local_coverage.insert(n, ran);
            }
        }
        for (n, ran) in self.cc_by_position(f, &rf.point, at_call, !array_holds_bits) {
            rf.local_coverage.entry(n).or_insert(ran);
        }
        // Call sites of a loop-free path-traced function without local bits
        // (`cc_local_by_path`): the path decoded from the entry up to the (single) point says
        // which ran; the point's own site ran if the frame is in its call.
        if let (Some(rec), true, [p]) = (
            self.cfg
                .get(f as usize)
                .filter(|r| r.cc.is_some() && r.cc_local_by_path),
            rf.path_from_entry,
            rf.point.as_slice(),
        ) {
            let gnodes = &self.graph.function(f).nodes;
            if gnodes.len() == rec.nodes.len() {
                for (k, node) in rec.nodes.iter().enumerate() {
                    let covered = node.labels.iter().any(|l| l.starts_with("CC"))
                        || node.implied.is_some()
                        || node.implied_by_last.is_some();
                    if node.kind != NodeKind::CallSite || !covered {
                        continue;
                    }
                    let n = gnodes[k];
                    let ran = if n == *p {
                        if !at_call {
                            continue;
                        }
                        true
                    } else {
                        rf.path.contains(&n)
                    };
                    rf.local_coverage.entry(n).or_insert(ran);
                }
            }
        }
        // Call sites in blocks without a probe (`cc_unprobed`): from the sites above and
        // the frame's position, this activation alone.
        let activation = [rf.point.clone()];
        let derived = self.unprobed_call_sites(
            f,
            &rf.local_coverage,
            Some(&activation),
            Some((&rf.point, at_call)),
        );
        for (n, ran) in derived {
            rf.local_coverage.entry(n).or_insert(ran);
        }
    }

    /// The activation's path and (single) point as source steps, one per line in a row.
    fn path_steps(&self, rf: &Frame) -> Vec<PathStep> {
        let mut steps: Vec<PathStep> = rf
            .path
            .iter()
            .chain(rf.point.first().filter(|_| rf.point.len() == 1))
            .flat_map(|&n| self.steps(n))
            .fold(Vec::new(), |mut acc: Vec<PathStep>, s| {
                if acc
                    .last()
                    .is_none_or(|l| l.line != s.line || l.file != s.file)
                {
                    acc.push(s);
                }
                acc
            });
        // The point node ran only up to the stop position: its later lines are not steps.
        if let (Some(stop), [p]) = (rf.stopped_at, rf.point.as_slice()) {
            if let Some(k) = steps
                .iter()
                .rposition(|s| s.node == *p && s.line == stop.line)
            {
                steps.truncate(k + 1);
            }
        }
        steps
    }

    fn node_file(&self, n: NodeId) -> Option<&str> {
        let node = self.graph.node(n);
        node.file
            .or_else(|| self.graph.function(node.function).file)
            .map(|f| self.graph.file_name(f))
    }

    fn steps(&self, n: NodeId) -> Vec<PathStep> {
        let file = self.node_file(n).unwrap_or("?").to_string();
        let mut out: Vec<PathStep> = Vec::new();
        for l in self.graph.node(n).lines() {
            if out.last().is_none_or(|s| s.line != l) {
                out.push(PathStep {
                    file: file.clone(),
                    line: l,
                    node: n,
                });
            }
        }
        out
    }

    /// Nodes of `f` whose instructions include the position (exact column first, then line).
    fn point_candidates(&self, f: FuncId, loc: Option<&SourceLoc>, at_call: bool) -> Vec<NodeId> {
        let Some(loc) = loc else { return Vec::new() };
        let g = self.graph;
        let nodes: Vec<NodeId> = g
            .function(f)
            .nodes
            .iter()
            .copied()
            .filter(|&n| {
                let k = g.node(n).kind;
                (!at_call || k == NodeKind::CallSite)
                    && self
                        .node_file(n)
                        .is_some_and(|file| same_source(file, &loc.file))
            })
            .collect();
        let exact: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|&n| {
                g.node(n)
                    .positions
                    .iter()
                    .any(|p| p.line == loc.line && p.column == loc.column)
            })
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        nodes
            .into_iter()
            .filter(|&n| g.node(n).lines().any(|l| l == loc.line))
            .collect()
    }

    /// Decodes the frame's ring buffer and running sum. Returns the path (oldest first, the
    /// point excluded), the point narrowed to the block the sum decodes at, and whether the
    /// path starts at the function's entry.
    fn decode_path(
        &self,
        f: FuncId,
        rec: &CfgFunction,
        vars: &[Variable],
        point: &[NodeId],
        position_unknown: bool,
    ) -> Result<FramePath, String> {
        let pt = rec.pt.as_ref().ok_or("no path graph")?;
        // Without back edges a live frame has completed no path (csi-cc v1.4.0 stores one
        // only right before `ret`; our csi-cc makes no exit store and gives such functions
        // no ring buffer at all): the buffer, if any, is not read.
        let looping = pt.edges.iter().any(|e| e.back);
        let PathProbes { arr, idx, sum } = read_path_probes(vars, looping, pt.num_paths)?;
        let g = self.graph;
        let gf = g.function(f);
        let pg = PathGraph {
            entry: pt.entry,
            exit: pt.exit,
            edges: pt.edges.clone(),
        };
        // Nodes of each PT block, in order.
        let mut block_nodes: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
        for (k, n) in rec.nodes.iter().enumerate() {
            if let Some(b) = n.pt_block {
                block_nodes.entry(b).or_default().push(gf.nodes[k]);
            }
        }
        let block_of = |n: NodeId| -> Option<u32> {
            let k = gf.nodes.iter().position(|&x| x == n)?;
            rec.nodes[k].pt_block
        };
        let blocks: Vec<u32> = point.iter().filter_map(|&n| block_of(n)).collect();
        let contracted = ContractedLoops::of(rec);
        let mut feasible = feasible_blocks(&pg, sum, blocks, position_unknown, &contracted);
        let (cur_block, partial) = match feasible.len() {
            0 if point.is_empty() => {
                return Err("current position unknown; path not decoded".into())
            }
            0 => {
                return Err(format!(
                    "running path sum {sum} does not decode at the current block"
                ))
            }
            1 => feasible.pop().unwrap(),
            _ => {
                // Still, the frame is in one of the blocks where the sum decodes — or in the
                // entry block before the sum is set.
                let blocks: Vec<u32> = feasible
                    .iter()
                    .map(|(b, _)| *b)
                    .chain(std::iter::once(pt.entry))
                    .collect();
                return Ok(FramePath {
                    path: Vec::new(),
                    point: point
                        .iter()
                        .copied()
                        .filter(|&n| block_of(n).is_none_or(|b| blocks.contains(&b)))
                        .collect(),
                    from_entry: false,
                    ran_earlier: Vec::new(),
                    note: Some(
                        "the current position is ambiguous between blocks; path not decoded".into(),
                    ),
                });
            }
        };
        let point: Vec<NodeId> = point
            .iter()
            .copied()
            .filter(|&n| block_of(n) == Some(cur_block))
            .collect();
        if point.len() > 1 {
            // The path must run exactly up to the point; with several candidate nodes in the
            // block, which nodes of the block ran before the crash is unknown.
            let note =
                "the current position matches several nodes of its block; path trace not used";
            return Ok(FramePath {
                path: Vec::new(),
                point,
                from_entry: false,
                ran_earlier: Vec::new(),
                note: Some(note.into()),
            });
        }
        let wrapped = *arr.last().unwrap() != -1;
        let ids = unrotate_ring(&arr, idx);
        // The entry block has no predecessors, so a frame still in it took no back edge: its
        // ring buffer and running sum may not even be initialised yet (a stack overflow
        // faults in the prologue), and are not used.
        let in_entry_block = cur_block == pt.entry;
        let partial = if in_entry_block {
            DecodedPath {
                blocks: vec![pt.entry],
                start: PathStart::Entry,
                end: csi_model::ballarus::PathEnd::Partial,
            }
        } else {
            partial
        };
        let (completed, ok) = if in_entry_block {
            (Vec::new(), false)
        } else {
            completed_paths(&pg, &ids, &partial, wrapped, rec.pt_runs, &rec.pt_elided)
        };
        // A path that starts at the head of a loop whose iterations are not stored follows a
        // stretch that stored nothing, and one through a contracted loop leaves it after
        // unknown iterations: the suffix the analyses take as contiguous starts after the
        // last such place, and what ran before it only ran earlier in the activation.
        let mut seq = completed;
        seq.push(partial);
        let mut earlier: Vec<u32> = Vec::new();
        let mut gap = None;
        for k in (0..seq.len()).rev() {
            let in_partial_entry = in_entry_block && k + 1 == seq.len();
            if let Some((ran, after)) = contracted.cut(&seq[k]).filter(|_| !in_partial_entry) {
                let rest = seq.split_off(k + 1);
                seq.pop();
                earlier = seq.iter().flat_map(|d| contracted.ran(&d.blocks)).collect();
                earlier.extend(ran);
                seq = after.into_iter().chain(rest).collect();
                gap = Some(k);
                break;
            }
            if !in_partial_entry && after_unstored_stretch(&seq[k], &rec.pt_elided) {
                let rest = seq.split_off(k);
                earlier = seq.iter().flat_map(|d| contracted.ran(&d.blocks)).collect();
                seq = rest;
                gap = Some(k);
                break;
            }
        }
        let partial = seq.pop().expect("the partial path is last");
        let completed = seq;
        let ran_earlier: Vec<NodeId> = earlier
            .iter()
            .flat_map(|b| block_nodes.get(b).into_iter().flatten())
            .copied()
            .collect();
        let path_from_partial_only = completed.is_empty();
        let path = path_to_point(&block_nodes, &completed, &partial, &point)?;
        let from_entry = if gap.is_some() {
            false
        } else if path_from_partial_only {
            partial.start == PathStart::Entry
                && (in_entry_block || (!wrapped && ok && ids.is_empty()))
        } else {
            !wrapped && completed[0].start == PathStart::Entry
        };
        Ok(FramePath {
            path,
            point,
            from_entry,
            ran_earlier,
            note: None,
        })
    }

    /// The activations in progress when a passing run wrote its coverage files: per
    /// instrumented module with a file in the run (`file_of`, by module index), one thread of
    /// the frames of its functions on the exit stack the file holds (`ExitStack`, taken when
    /// no other thread was left and reaching `_start`), its return addresses moved to where
    /// the module sits in this process. `None` when such a file holds no stack (a SIGUSR2
    /// snapshot, other threads left, a version 1 file): then activations may be unseen. A
    /// module the run has no file of gives no coverage, so its activations do not matter:
    /// every derivation reads a function's own module's bits and frames.
    fn passing_run_threads<'f>(
        &self,
        file_of: &dyn Fn(usize) -> Option<&'f crate::coverage_file::CoverageFile>,
    ) -> Option<Vec<Thread>> {
        let mut threads = Vec::new();
        for &mi in &self.instrumented {
            let Some(file) = file_of(mi) else { continue };
            let stack = file.stack.as_ref()?;
            let bias = self.process.modules[mi].bias;
            let phys: Vec<crate::unwind::PhysFrame> = stack
                .return_addresses
                .iter()
                .map(|&ra| ra.wrapping_sub(stack.load_bias).wrapping_add(bias))
                .filter(|&pc| self.process.module_index_at(pc) == Some(mi))
                .map(|pc| crate::unwind::PhysFrame {
                    pc,
                    regs: Default::default(),
                    cfa: None,
                    exact_pc: false,
                    method: UnwindMethod::Cfi,
                })
                .collect();
            // Each frame stands at a call; no registers, so no probe state: positions only.
            // Not the crashing thread (index 0): no frame faulted.
            let frames = self.thread_frames(1, 0, &phys, &mut Vec::new()).rframes;
            threads.push(Thread {
                id: None,
                name: None,
                signal: None,
                frames,
                outer_frames_unknown: false,
            });
        }
        Some(threads)
    }

    /// `threads` when their frames are every activation in progress of a function with CSI
    /// records: not when a thread's walk stopped early, or a frame in a module with records
    /// (or in none) has no function, which may hide an activation of any. A frame of a
    /// library without records (the C library, a crash shim) is no such activation.
    fn every_activation_seen<'t>(
        &self,
        threads: &'t [csi_model::report::Thread],
    ) -> Option<&'t [csi_model::report::Thread]> {
        let outside = |pc: u64| {
            self.process
                .module_index_at(pc)
                .is_some_and(|mi| self.instrumented.binary_search(&mi).is_err())
        };
        threads
            .iter()
            .all(|t| {
                !t.outer_frames_unknown
                    && t.frames
                        .iter()
                        .all(|f| f.function.is_some() || f.pc.is_some_and(outside))
            })
            .then_some(threads)
    }

    /// Global coverage from the process's memory; `threads`, the report's frames, decide the
    /// slots set only at a return (see `coverage_from`).
    fn global_coverage(
        &self,
        threads: &[csi_model::report::Thread],
        notices: &mut Vec<String>,
    ) -> BTreeMap<NodeId, bool> {
        self.coverage_from(
            &|fi, name, n| self.global_bytes(fi, name, n),
            &self.traced,
            self.every_activation_seen(threads),
            notices,
        )
    }

    /// Per function record: whether its coverage arrays are evidence, given which functions
    /// are `traced` (switched on): not when its uninstrumented replica may have run — it is
    /// switched off, or the replica of a function whose replica may have run calls its
    /// replica (`CfgFunction::off_calls`, directly or through inlined copies).
    fn arrays_are_evidence(&self, traced: &[bool]) -> Vec<bool> {
        let mut replica_may_run: std::collections::HashSet<&str> = self
            .cfg
            .iter()
            .zip(traced)
            .filter(|(_, &t)| !t)
            .filter_map(|(rec, _)| rec.switch.as_deref())
            .collect();
        let mut work: Vec<&str> = replica_may_run.iter().copied().collect();
        let mut calls: HashMap<&str, Vec<&str>> = HashMap::new();
        for rec in self.cfg {
            if let Some(sw) = rec.switch.as_deref() {
                calls
                    .entry(sw)
                    .or_default()
                    .extend(rec.off_calls.iter().map(String::as_str));
            }
        }
        while let Some(sw) = work.pop() {
            for &callee in calls.get(sw).into_iter().flatten() {
                if replica_may_run.insert(callee) {
                    work.push(callee);
                }
            }
        }
        self.cfg
            .iter()
            .zip(traced)
            .map(|(rec, &t)| {
                t && rec
                    .switch
                    .as_deref()
                    .is_none_or(|sw| !replica_may_run.contains(sw))
            })
            .collect()
    }

    /// Global coverage from the coverage arrays `bytes_of(function record, array, length)`
    /// gives: the process's memory, or a passing run's coverage files; the arrays of functions
    /// not `traced` there (tracing switched off) are skipped. A slot that only its loop's exits
    /// set (`cc_global_at_return`, `bbc_global_at_return`) and is clear ran iff an activation
    /// in progress ran it: decided from `live`, every activation's frame, when known.
    fn coverage_from(
        &self,
        bytes_of: &ArrayBytes<'_>,
        traced: &[bool],
        live: Option<&[csi_model::report::Thread]>,
        notices: &mut Vec<String>,
    ) -> BTreeMap<NodeId, bool> {
        let mut out = BTreeMap::new();
        let mut missing = 0usize;
        let evidence = self.arrays_are_evidence(traced);
        for (fi, rec) in self.cfg.iter().enumerate() {
            if !evidence[fi] {
                continue; // its replica may have run, leaving its arrays zero
            }
            let labels = &self.labels[fi];
            for (global, prefix) in [(&rec.cc, "CC"), (&rec.bbc, "BBC")] {
                let Some(name) = global else { continue };
                let n = (0..)
                    .take_while(|k| labels.contains_key(format!("{prefix}{k}").as_str()))
                    .count();
                if n == 0 && prefix == "CC" {
                    continue; // no slot (`entry_from_calls` took every probe), no array
                }
                let Some(bytes) = bytes_of(fi, name, n) else {
                    missing += 1;
                    continue;
                };
                let unprobed = self.unprobed_slots(fi, prefix);
                let at_return = |k: usize| match prefix {
                    "CC" => rec.cc_global_at_return.contains(&(k as u64)),
                    _ => rec.bbc_global_at_return.contains(&(k as u32)),
                };
                let nodes: Vec<Option<NodeId>> = (0..bytes.len())
                    .map(|k| labels.get(format!("{prefix}{k}").as_str()).copied())
                    .collect();
                let bits: Vec<Option<bool>> = bytes
                    .iter()
                    .zip(&nodes)
                    .enumerate()
                    .map(|(k, (&b, node))| match b != 0 || !at_return(k) {
                        true => node.map(|_| b != 0),
                        false => self.ran_in_live_activation(fi as FuncId, (*node)?, live?),
                    })
                    .collect();
                for (k, (node, bit)) in nodes.iter().zip(&bits).enumerate() {
                    if let (Some(node), Some(b), false) =
                        (node, bit, unprobed.contains(&(k as u32)))
                    {
                        out.insert(*node, *b);
                    }
                }
                if prefix == "CC" {
                    out.extend(self.implied_cc(fi as FuncId, &bits, None));
                    // A site implied by its block's last probe, whose global bit is clear,
                    // ran iff an activation in progress stands at it or after it in the
                    // block: every other activation that ran it went on to that probe.
                    let gnodes = &self.graph.function(fi as FuncId).nodes;
                    let same = gnodes.len() == rec.nodes.len();
                    for (k, node) in rec.nodes.iter().enumerate().filter(|_| same) {
                        let clear = node
                            .implied_by_last
                            .as_deref()
                            .and_then(cc_slot)
                            .is_some_and(|j| bits.get(j) == Some(&Some(false)));
                        if let (true, Some(&n), Some(live)) = (clear, gnodes.get(k), live) {
                            if let Some(ran) = self.ran_in_live_activation(fi as FuncId, n, live) {
                                out.insert(n, ran);
                            }
                        }
                    }
                }
            }
            if let Some(name) = &rec.fc {
                match bytes_of(fi, name, 1) {
                    Some(b) => {
                        out.insert(self.graph.functions[fi].entry, b[0] != 0);
                    }
                    None => missing += 1,
                }
            }
        }
        if missing > 0 {
            notices.push(format!(
                "{missing} coverage arrays could not be read (stripped symbols or memory missing from the core); their coverage is unknown"
            ));
        }
        out
    }

    /// Whether some activation of `f` in progress — a frame in `threads`, which holds every
    /// one — ran `node`, by the frame's local coverage: `None` if one may have and its local
    /// bit is unknown.
    fn ran_in_live_activation(
        &self,
        f: FuncId,
        node: NodeId,
        threads: &[csi_model::report::Thread],
    ) -> Option<bool> {
        let mut ran = Some(false);
        for fr in threads.iter().flat_map(|t| &t.frames) {
            if fr.function == Some(f) {
                match fr.local_coverage.get(&node) {
                    Some(true) => return Some(true),
                    Some(false) => {}
                    None => ran = None,
                }
            }
        }
        ran
    }

    /// Coverage of the call sites of `f` whose probe csi-cc omitted (`CfgImplied`: probed
    /// sites `first` before and `last` after them in the same basic block), from a `__CC_arr`
    /// array's bytes. `last` set ⇒ ran; `first` clear ⇒ did not run; otherwise unknown —
    /// except for a live frame's local array (`stop` = its candidate points and whether it
    /// sits at a call): then the frame is stopped inside that block, having run `first` but
    /// not yet `last` in this activation, and a position after the site means it ran, before
    /// it that it did not (all candidates must agree). A site implied by its block's last
    /// probe alone (`implied_by_last`) ran iff that bit is set, or, in a live frame's local
    /// array, the frame stands in the block at or after the site; a clear global bit is left
    /// to `coverage_from`, which knows the activations in progress.
    fn implied_cc(
        &self,
        f: FuncId,
        bits: &[Option<bool>],
        stop: Option<(&[NodeId], bool)>,
    ) -> Vec<(NodeId, bool)> {
        let mut out = Vec::new();
        let Some(rec) = self.cfg.get(f as usize).filter(|r| r.cc.is_some()) else {
            return out;
        };
        let gnodes = &self.graph.function(f).nodes;
        if gnodes.len() != rec.nodes.len() {
            return out;
        }
        let bit = |label: &str| -> Option<bool> {
            let j = cc_slot(label)?;
            bits.get(j).copied().flatten()
        };
        for (k, node) in rec.nodes.iter().enumerate() {
            if let Some(last) = &node.implied_by_last {
                // Clear in a live frame's local array: the activation ran the site only if
                // the frame stands in its block at it or after it (every call between them
                // comes back, so nothing else stops the way to the last site's probe).
                let ran = match bit(last) {
                    Some(true) => Some(true),
                    Some(false) => stop.and_then(|(points, at_call)| {
                        let votes: Option<Vec<bool>> = points
                            .iter()
                            .map(|p| {
                                let ip = gnodes.iter().position(|x| x == p)?;
                                if rec.nodes[ip].block != node.block {
                                    return Some(false);
                                }
                                site_in_frames_block(ip, k, at_call, true)
                            })
                            .collect();
                        unanimous(&votes?)
                    }),
                    None => None,
                };
                if let Some(r) = ran {
                    out.push((gnodes[k], r));
                }
                continue;
            }
            let Some(imp) = &node.implied else { continue };
            let ran = match (bit(&imp.first), bit(&imp.last)) {
                (_, Some(true)) => Some(true),
                (Some(false), _) => Some(false),
                (Some(true), Some(false)) => stop.and_then(|(points, at_call)| {
                    let first = rec
                        .nodes
                        .iter()
                        .position(|n| n.labels.contains(&imp.first))?;
                    let votes: Option<Vec<bool>> = points
                        .iter()
                        .map(|p| {
                            let ip = gnodes.iter().position(|x| x == p)?;
                            if rec.nodes[ip].block != node.block {
                                return None; // contradicts the probes: do not guess
                            }
                            site_in_frames_block(ip, k, at_call, ip >= first)
                        })
                        .collect();
                    unanimous(&votes?)
                }),
                _ => None,
            };
            if let Some(r) = ran {
                out.push((gnodes[k], r));
            }
        }
        out
    }

    /// Local coverage of the call sites of `f` whose probe csi-cc stored only globally
    /// (slots from `cc_local_len` on, and the implied sites between them), from the frame's
    /// candidate points. A site in block X ran in this activation if the frame is stopped
    /// after it in X (or in its call), or in a block X dominates; it did not if the frame is
    /// before it in X (X on no cycle) or in a block X cannot reach (`BlockGraph::site_ran`,
    /// the facts csi-cc placed the probes with); otherwise, or if the candidates disagree, it
    /// stays unknown.
    fn cc_by_position(
        &self,
        f: FuncId,
        points: &[NodeId],
        at_call: bool,
        all_sites: bool,
    ) -> Vec<(NodeId, bool)> {
        let mut out = Vec::new();
        let Some(rec) = self.cfg.get(f as usize).filter(|r| r.cc.is_some()) else {
            return out;
        };
        let local_len = match (rec.cc_local_len, all_sites) {
            (_, true) => 0,
            (Some(n), false) => n,
            (None, false) => return out,
        };
        let gnodes = &self.graph.function(f).nodes;
        if gnodes.len() != rec.nodes.len() || points.is_empty() {
            return out;
        }
        let Some(at) = points
            .iter()
            .map(|p| gnodes.iter().position(|x| x == p))
            .collect::<Option<Vec<usize>>>()
        else {
            return out;
        };
        let slot = |l: &str| cc_slot(l).map(|j| j as u64);
        let blocks = self.record_blocks[f as usize].get_or_init(|| record_blocks(rec));
        let mut cache: BTreeMap<usize, Vec<bool>> = BTreeMap::new();
        for (k, node) in rec.nodes.iter().enumerate() {
            let global_only = node
                .labels
                .iter()
                .filter_map(|l| slot(l))
                .any(|j| j >= local_len)
                || node
                    .implied
                    .as_ref()
                    .and_then(|i| slot(&i.first))
                    .is_some_and(|j| j >= local_len)
                || node
                    .implied_by_last
                    .as_deref()
                    .and_then(slot)
                    .is_some_and(|j| j >= local_len);
            let Some(x) = node.block.map(|b| b as usize) else {
                continue;
            };
            if node.kind != NodeKind::CallSite || !global_only || blocks.is_empty() {
                continue;
            }
            let from_x = cache.entry(x).or_insert_with(|| blocks.reached_from(x));
            let votes: Option<Vec<bool>> = at
                .iter()
                .map(|&ip| {
                    let pb = rec.nodes[ip].block? as usize;
                    if pb == x {
                        return site_in_frames_block(ip, k, at_call, !from_x[x]);
                    }
                    blocks.site_ran(x, from_x, pb)
                })
                .collect();
            if let Some(ran) = votes.as_deref().and_then(unanimous) {
                out.push((gnodes[k], ran));
            }
        }
        out
    }

    /// Whether a frame of `f` stopped at `points` has a `__CC_arr` holding its activation's
    /// bits: always for records before `cc_local_zeroed_in`; otherwise only when every
    /// candidate point lies in a block that the zeroing block H dominates — H itself only
    /// when it is on a cycle (zeroed on the edges entering it) or the frame is in a call
    /// (zeroed at H's start, where a crash or signal could stop it first;
    /// `BlockGraph::holds_activation`).
    fn cc_array_holds_bits(&self, f: FuncId, points: &[NodeId], at_call: bool) -> bool {
        let Some(rec) = self.cfg.get(f as usize) else {
            return false;
        };
        let Some(z) = rec.cc_local_zeroed_in.map(|z| z as usize) else {
            return true;
        };
        let gnodes = &self.graph.function(f).nodes;
        if gnodes.len() != rec.nodes.len() || points.is_empty() {
            return false;
        }
        let blocks = self.record_blocks[f as usize].get_or_init(|| record_blocks(rec));
        if z >= blocks.len() {
            return false;
        }
        points.iter().all(|p| {
            gnodes
                .iter()
                .position(|x| x == p)
                .and_then(|k| rec.nodes[k].block)
                .is_some_and(|b| blocks.holds_activation(z, b as usize, at_call))
        })
    }

    /// The record's basic block of each of the points of a frame of `f` (`None` for a point
    /// in no block); `None` when the record does not match the program graph.
    fn point_blocks(&self, f: FuncId, points: &[NodeId]) -> Option<Vec<Option<usize>>> {
        let rec = self.cfg.get(f as usize)?;
        let gnodes = &self.graph.function(f).nodes;
        (gnodes.len() == rec.nodes.len()).then(|| {
            points
                .iter()
                .map(|p| {
                    let ip = gnodes.iter().position(|x| x == p)?;
                    rec.nodes[ip].block.map(|b| b as usize)
                })
                .collect()
        })
    }

    /// For a frame of `f` whose record passes `want`: the record, its block graph and the
    /// blocks of the frame's candidate points — `None` if there are none, or if one is in no
    /// block of the graph.
    fn frame_blocks(
        &self,
        f: FuncId,
        points: &[NodeId],
        want: impl Fn(&CfgFunction) -> bool,
    ) -> Option<(&CfgFunction, &BlockGraph, Vec<usize>)> {
        let rec = self.cfg.get(f as usize).filter(|r| want(r))?;
        let blocks = self.record_blocks[f as usize].get_or_init(|| record_blocks(rec));
        let at: Vec<usize> = self
            .point_blocks(f, points)?
            .into_iter()
            .map(|b| b.filter(|&b| b < blocks.len()))
            .collect::<Option<_>>()?;
        (!at.is_empty()).then_some((rec, blocks, at))
    }

    /// Whether some of the candidate `points` of a frame of `f` lie in its entry block.
    fn in_entry_block(&self, f: FuncId, points: &[NodeId]) -> bool {
        self.point_blocks(f, points)
            .is_some_and(|bs| bs.contains(&Some(0)))
    }

    /// Local block coverage of the probed blocks of `f` whose probe csi-cc stored only
    /// globally (`bbc_local_omitted`; every probed block when `all`: the frame's array is not
    /// read), from the frame's candidate points: such a block X ran in this activation if the
    /// frame stands in X or in a block X dominates, and did not if it stands where X cannot
    /// reach (`BlockGraph::site_ran`, the facts csi-cc placed the probes with); otherwise, or
    /// if the candidates disagree, it stays unknown.
    fn bbc_by_position(&self, f: FuncId, points: &[NodeId], all: bool) -> Vec<(NodeId, bool)> {
        let mut out = Vec::new();
        let Some((rec, blocks, at)) = self.frame_blocks(f, points, |r| {
            r.bbc.is_some() && (all || !r.bbc_local_omitted.is_empty())
        }) else {
            return out;
        };
        let n = blocks.len();
        let which: Vec<u32> = if all {
            (0..n as u32)
                .filter(|k| !rec.bbc_unprobed.contains(k))
                .collect()
        } else {
            rec.bbc_local_omitted.clone()
        };
        for &k in &which {
            let x = k as usize;
            let Some(&node) = self.labels[f as usize].get(format!("BBC{k}").as_str()) else {
                continue;
            };
            if x >= n {
                continue;
            }
            let from_x = blocks.reached_from(x);
            let votes: Option<Vec<bool>> = at
                .iter()
                .map(|&pb| {
                    if pb == x {
                        Some(true)
                    } else {
                        blocks.site_ran(x, &from_x, pb)
                    }
                })
                .collect();
            if let Some(v) = votes {
                if v.iter().all(|&b| b == v[0]) {
                    out.push((node, v[0]));
                }
            }
        }
        out
    }

    /// Local block coverage of a function without cycles whose record omits local probes
    /// (`bbc_local_omitted`), from the frame's stored local bits (`known`) and candidate
    /// points: its activation is one path from the entry to the frame's block, and the
    /// stored bits single it out (`BlockGraph::derive_on_path`, exact; a block stays unknown
    /// where the candidates leave it open or the search exceeds its budget).
    fn bbc_on_path(
        &self,
        f: FuncId,
        known: &BTreeMap<NodeId, bool>,
        points: &[NodeId],
    ) -> Vec<(NodeId, bool)> {
        /// Block visits one frame's derivation may spend.
        const PATH_BUDGET: usize = 2_000_000;
        let Some((rec, blocks, at)) = self.frame_blocks(f, points, |r| {
            r.bbc.is_some() && !r.bbc_local_omitted.is_empty()
        }) else {
            return Vec::new();
        };
        let n = blocks.len();
        let labels = &self.labels[f as usize];
        let node_of = |k: usize| labels.get(format!("BBC{k}").as_str()).copied();
        let stored: Vec<bool> = (0..n as u32).map(|k| rec.bbc_stores_locally(k)).collect();
        let bits: Vec<Option<bool>> = (0..n)
            .map(|k| {
                stored[k]
                    .then(|| node_of(k).and_then(|node| known.get(&node).copied()))
                    .flatten()
            })
            .collect();
        let mut budget = PATH_BUDGET;
        let Some(derived) = blocks.derive_on_path(&stored, &bits, &at, &mut budget) else {
            return Vec::new(); // a cycle: csi-cc omits no local probe by path there
        };
        (0..n)
            .filter_map(|k| Some((node_of(k)?, derived[k]?)))
            .collect()
    }

    /// A local coverage array's bytes as the frame's bits of the nodes labelled
    /// `<prefix><slot>` (not the slots no probe stores into locally).
    fn read_local_array(&self, f: FuncId, bytes: &[u8], prefix: &str, rf: &mut Frame) {
        let unprobed = self.unprobed_slots(f as usize, prefix);
        let rec = self.cfg.get(f as usize);
        for (k, &b) in bytes.iter().enumerate() {
            let k32 = k as u32;
            let stored = match rec {
                Some(rec) if prefix == "BBC" => rec.bbc_stores_locally(k32),
                _ => !unprobed.contains(&k32),
            };
            if !stored {
                continue;
            }
            if let Some(&n) = self.labels[f as usize].get(format!("{prefix}{k}").as_str()) {
                rf.local_coverage.insert(n, b != 0);
            }
        }
    }

    /// The slots of array `prefix` (`BBC`) of function record `fi` that no probe stores
    /// into (`bbc_unprobed`): their bytes say nothing.
    fn unprobed_slots(&self, fi: usize, prefix: &str) -> &[u32] {
        match self.cfg.get(fi) {
            Some(rec) if prefix == "BBC" => &rec.bbc_unprobed,
            _ => &[],
        }
    }

    /// The coverage of `f`'s blocks without a probe (`bbc_unprobed`) from the probed blocks'
    /// coverage in `known` and the positions of `f`'s activations in progress (`live`, each
    /// activation's candidate points; `None` when some may be unseen) —
    /// `BlockGraph::derive_unprobed`, over the same block graph csi-cc placed the probes on.
    fn unprobed_blocks(
        &self,
        f: FuncId,
        known: &BTreeMap<NodeId, bool>,
        live: Option<&[Vec<NodeId>]>,
    ) -> Vec<(NodeId, bool)> {
        let Some(rec) = self
            .cfg
            .get(f as usize)
            .filter(|r| r.bbc.is_some() && !r.bbc_unprobed.is_empty())
        else {
            return Vec::new();
        };
        let gnodes = &self.graph.function(f).nodes;
        let blocks = self.record_blocks[f as usize].get_or_init(|| record_blocks(rec));
        let n = blocks.len();
        if gnodes.len() != rec.nodes.len() || rec.bbc_unprobed.iter().any(|&k| k as usize >= n) {
            return Vec::new();
        }
        let labels = &self.labels[f as usize];
        let node_of = |k: usize| labels.get(format!("BBC{k}").as_str()).copied();
        let mut probed = vec![true; n];
        for &k in &rec.bbc_unprobed {
            probed[k as usize] = false;
        }
        let bits: Vec<Option<bool>> = (0..n)
            .map(|k| node_of(k).and_then(|node| known.get(&node).copied()))
            .collect();
        let live = live_positions(&node_index(gnodes), live).map(|acts| live_blocks(rec, &acts));
        let derived = blocks.derive_unprobed(&probed, &bits, live.as_deref());
        rec.bbc_unprobed
            .iter()
            .filter_map(|&k| Some((node_of(k as usize)?, derived[k as usize]?)))
            .collect()
    }

    /// The coverage of `f`'s call sites in blocks without a probe (`cc_unprobed`) from the
    /// probed sites' coverage in `known` and the activations in progress (`live`, as for
    /// [`unprobed_blocks`](Self::unprobed_blocks)), over the block graph csi-cc placed the
    /// probes on: a block with a probed site ran iff its first site's bit says so (a block
    /// without calls is unknown), and `BlockGraph::derive_unprobed` does the rest. An
    /// unprobed block that did not run ran none of its sites. One that ran ran all of them
    /// when it was left — every call of it comes back — which holds when a probed block it
    /// strictly dominates ran, or when no activation may stand in it. `stop` (a live frame's
    /// own coverage: its candidate points and whether it is in a call): in the block the
    /// frame stands in, the sites before its position ran, and those after it did not when
    /// the block is on no cycle.
    fn unprobed_call_sites(
        &self,
        f: FuncId,
        known: &BTreeMap<NodeId, bool>,
        live: Option<&[Vec<NodeId>]>,
        stop: Option<(&[NodeId], bool)>,
    ) -> Vec<(NodeId, bool)> {
        let mut out = Vec::new();
        let Some(rec) = self
            .cfg
            .get(f as usize)
            .filter(|r| r.cc.is_some() && !r.cc_unprobed.is_empty())
        else {
            return out;
        };
        let gnodes = &self.graph.function(f).nodes;
        let blocks = self.record_blocks[f as usize].get_or_init(|| record_blocks(rec));
        let n = blocks.len();
        if gnodes.len() != rec.nodes.len() || rec.cc_unprobed.iter().any(|&b| b as usize >= n) {
            return out;
        }
        let mut probed = vec![true; n];
        for &b in &rec.cc_unprobed {
            probed[b as usize] = false;
        }
        let mut bits: Vec<Option<bool>> = vec![None; n];
        // The entry block's bit is the function's entry (`entry_from_calls`: from the
        // callers' coverage globally, a frame's own activation locally), which says whether
        // it ran, not whether every way out of its subtree passed a probe: no "did not run"
        // from below for it.
        let from_calls = rec.entry_from_calls.is_some() && rec.cc_unprobed.contains(&0);
        if from_calls {
            probed[0] = true;
            bits[0] = self
                .entry_block_node(f)
                .and_then(|e| known.get(&e).copied());
        }
        let mut seen = vec![false; n];
        if from_calls {
            seen[0] = true;
        }
        let index = node_index(gnodes);
        let live_nodes = live_positions(&index, live);
        for (k, node) in rec.nodes.iter().enumerate() {
            let Some(b) = node.block.map(|b| b as usize).filter(|&b| b < n) else {
                continue;
            };
            if node.kind == NodeKind::CallSite
                && probed[b]
                && !std::mem::replace(&mut seen[b], true)
            {
                bits[b] = known.get(&gnodes[k]).copied();
            }
        }
        let live = live_nodes.as_deref().map(|acts| live_blocks(rec, acts));
        let derived = blocks.derive_unprobed(&probed, &bits, live.as_deref());
        let may_stand_in = |v: usize| {
            live.as_ref()
                .is_none_or(|acts| acts.iter().any(|at| at.is_empty() || at.contains(&v)))
        };
        let at: Option<(Vec<usize>, bool)> = stop.and_then(|(points, at_call)| {
            let at: Vec<usize> = points
                .iter()
                .map(|p| index.get(p).copied())
                .collect::<Option<_>>()?;
            (!at.is_empty()).then_some((at, at_call))
        });
        for &v in &rec.cc_unprobed {
            let v = v as usize;
            let left = (0..n)
                .any(|w| w != v && probed[w] && bits[w] == Some(true) && blocks.dominates(v, w));
            // No probed call block below `v` ran: an execution that passed a site of `v` and
            // is no longer inside `v`'s subtree would have passed one, so only one standing
            // in `v` after the site (or below `v`) can have — none before it in `v` either,
            // when `v` is on no cycle.
            let none_left = !(from_calls && v == 0)
                && (0..n).all(|w| {
                    w == v || !seen[w] || !blocks.dominates(v, w) || bits[w] == Some(false)
                });
            let not_past = |k: usize| {
                live_nodes.as_ref().is_some_and(|acts| {
                    acts.iter().all(|at| {
                        !at.is_empty()
                            && at.iter().all(|ip| {
                                ip.and_then(|ip| rec.nodes[ip].block.map(|b| (ip, b as usize)))
                                    .is_some_and(|(ip, b)| {
                                        b < n
                                            && (!blocks.dominates(v, b)
                                                || (b == v && ip < k && !blocks.on_cycle(v)))
                                    })
                            })
                    })
                })
            };
            let all = match derived[v] {
                Some(false) => Some(false),
                Some(true) if left || !may_stand_in(v) => Some(true),
                _ if left => Some(true),
                _ => None,
            };
            // A site of `v` with a probe of its own (the last of an entry block whose bit is
            // the callers') that ran: an activation ran `v` up to it.
            let ran_to = rec
                .nodes
                .iter()
                .enumerate()
                .filter(|(k, n)| {
                    n.block == Some(v as u32)
                        && n.labels.iter().any(|l| l.starts_with("CC"))
                        && known.get(&gnodes[*k]) == Some(&true)
                })
                .map(|(k, _)| k)
                .max();
            for (k, node) in rec.nodes.iter().enumerate() {
                if node.kind != NodeKind::CallSite
                    || node.block != Some(v as u32)
                    || node.labels.iter().any(|l| l.starts_with("CC"))
                {
                    continue;
                }
                let ran = ran_to
                    .is_some_and(|last| k < last)
                    .then_some(true)
                    .or(all)
                    .or_else(|| (none_left && not_past(k)).then_some(false))
                    .or_else(|| {
                        let (at, at_call) = at.as_ref()?;
                        let votes: Option<Vec<bool>> = at
                            .iter()
                            .map(|&ip| {
                                if rec.nodes[ip].block != Some(v as u32) {
                                    return None;
                                }
                                site_in_frames_block(ip, k, *at_call, !blocks.on_cycle(v))
                            })
                            .collect();
                        unanimous(&votes?)
                    });
                if let Some(r) = ran {
                    out.push((gnodes[k], r));
                }
            }
        }
        out
    }

    /// Global coverage of the blocks without a probe, in every function, from the probed
    /// blocks' global coverage in `coverage` and the activations in progress: the report's
    /// frames when `threads` holds every one (`None`: a passing run's coverage, or unknown).
    fn derive_unprobed_global(
        &self,
        coverage: &mut BTreeMap<NodeId, bool>,
        threads: Option<&[csi_model::report::Thread]>,
    ) {
        let threads = threads.and_then(|t| self.every_activation_seen(t));
        // Every activation in progress, by function: each frame's candidate points.
        let frames = frames_by_function(threads);
        for (fi, rec) in self.cfg.iter().enumerate() {
            if rec.bbc_unprobed.is_empty() && rec.cc_unprobed.is_empty() {
                continue;
            }
            let f = fi as FuncId;
            let of_f = frames.get(&f).map(Vec::as_slice).unwrap_or_default();
            let live: Option<Vec<Vec<NodeId>>> =
                threads.map(|_| of_f.iter().map(|fr| fr.point.clone()).collect());
            let derived = self.unprobed_blocks(f, coverage, live.as_deref());
            coverage.extend(derived);
            if rec.cc_unprobed.is_empty() {
                continue;
            }
            let derived = self.unprobed_call_sites(f, coverage, live.as_deref(), None);
            coverage.extend(derived);
            // What a live frame ran itself (its block may be the unprobed one it stands in).
            for fr in of_f {
                for (&n, _) in fr.local_coverage.iter().filter(|(_, &ran)| ran) {
                    coverage.entry(n).or_insert(true);
                }
            }
        }
    }

    /// Global coverage of the functions whose entry their callers' coverage gives
    /// (`CfgFunction::entry_from_calls`: single blocks without a block probe, entry blocks
    /// whose call sites have none): one ran iff one of its calls was made
    /// ([`call_made`](Self::call_made)), or a frame of it is live; then its entry block's
    /// call sites follow. Such functions call one another: repeated until nothing changes. `threads`: the report's
    /// (`None`: a passing run's coverage).
    fn entries_from_calls(
        &self,
        coverage: &mut BTreeMap<NodeId, bool>,
        threads: Option<&[csi_model::report::Thread]>,
    ) {
        if self.cfg.iter().all(|r| r.entry_from_calls.is_none()) {
            return;
        }
        let calls = DirectCalls::index(self.cfg, self.module_of);
        let derived: Vec<(usize, Option<&[SiteRef]>)> = self
            .cfg
            .iter()
            .enumerate()
            .filter(|(_, r)| r.entry_from_calls.is_some())
            .map(|(g, _)| (g, calls.of(self.cfg, self.module_of, g)))
            .collect();
        let every_one = threads
            .and_then(|t| self.every_activation_seen(t))
            .is_some();
        let frames = frames_by_function(threads);
        // Per block-covered caller, the blocks that ran (its probes' status, which this
        // fixpoint does not change).
        let mut ran_blocks = HashMap::new();
        loop {
            let mut changed = false;
            for (g, sites) in &derived {
                let Some(entry) = self.entry_block_node(*g as FuncId) else {
                    continue;
                };
                if coverage.contains_key(&entry) {
                    continue;
                }
                let ran = if frames.contains_key(&(*g as FuncId)) {
                    Some(true)
                } else {
                    sites.and_then(|sites| {
                        let made: Vec<Option<bool>> = sites
                            .iter()
                            .map(|&(i, k)| {
                                self.call_made(i, k, coverage, &frames, every_one, &mut ran_blocks)
                            })
                            .collect();
                        if made.contains(&Some(true)) {
                            Some(true)
                        } else {
                            made.iter().all(|&m| m == Some(false)).then_some(false)
                        }
                    })
                };
                if let Some(ran) = ran {
                    coverage.insert(entry, ran);
                    changed = true;
                    // Its entry block's call sites follow (`unprobed_call_sites`).
                    let of_g = frames
                        .get(&(*g as FuncId))
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    let live: Option<Vec<Vec<NodeId>>> =
                        every_one.then(|| of_g.iter().map(|fr| fr.point.clone()).collect());
                    for (n, r) in
                        self.unprobed_call_sites(*g as FuncId, coverage, live.as_deref(), None)
                    {
                        coverage.entry(n).or_insert(r);
                    }
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// The node of `f`'s entry block that carries its coverage (the first one, where the
    /// `BBC0` label would be): where the status of a function whose entry comes from its
    /// calls (`entry_from_calls`) goes.
    fn entry_block_node(&self, f: FuncId) -> Option<NodeId> {
        let rec = self.cfg.get(f as usize)?;
        *self.entry_nodes[f as usize].get_or_init(|| {
            let gnodes = &self.graph.function(f).nodes;
            if gnodes.len() != rec.nodes.len() {
                return None;
            }
            let k = rec.nodes.iter().position(|n| n.block == Some(0))?;
            Some(gnodes[k])
        })
    }

    /// Whether the call at node `k` of function record `i` was made: its call-site coverage
    /// when `i` has any; else from the global block
    /// coverage in `coverage` and the live frames (`frames`, by function; `every_one`: they
    /// are every activation in progress; `ran_blocks`: the blocks that ran, per record,
    /// filled on first use): made when a block its block dominates ran (the
    /// block was left, all of it run) or a frame of `i` stands past it in its block; not
    /// made when its block did not run; made when its block ran and no activation may stand
    /// in the block before it — csi-cc placed it after calls that come back only, so an
    /// activation that entered the block and is no longer in it made the call.
    fn call_made(
        &self,
        i: usize,
        k: usize,
        coverage: &BTreeMap<NodeId, bool>,
        frames: &HashMap<FuncId, Vec<&csi_model::report::Frame>>,
        every_one: bool,
        ran_blocks: &mut HashMap<usize, Vec<usize>>,
    ) -> Option<bool> {
        let rec = &self.cfg[i];
        let f = i as FuncId;
        let gnodes = &self.graph.function(f).nodes;
        if gnodes.len() != rec.nodes.len() {
            return None;
        }
        if rec.cc.is_some() {
            // The site's own coverage: its probe runs just before the call.
            return coverage.get(&gnodes[k]).copied();
        }
        let b = rec.nodes[k].block? as usize;
        let blocks = self.record_blocks[i].get_or_init(|| record_blocks(rec));
        let status = |w: usize| -> Option<bool> {
            if rec.bbc.is_some() {
                let node = self.labels[i].get(format!("BBC{w}").as_str())?;
                coverage.get(node).copied()
            } else if rec.entry_from_calls.is_some() && w == 0 {
                coverage.get(&self.entry_block_node(f)?).copied()
            } else {
                None
            }
        };
        // Only block coverage says that a block other than the entry ran, and no other
        // block dominates the entry: the blocks that ran are listed once per record.
        if rec.bbc.is_some() {
            let ran = ran_blocks.entry(i).or_insert_with(|| {
                (0..blocks.len())
                    .filter(|&w| status(w) == Some(true))
                    .collect()
            });
            if ran.iter().any(|&w| w != b && blocks.dominates(b, w)) {
                return Some(true);
            }
        }
        let of_i = frames.get(&f).map(Vec::as_slice).unwrap_or_default();
        let index = if of_i.is_empty() {
            HashMap::new()
        } else {
            node_index(gnodes)
        };
        // Per live frame of `i`: every candidate point past the call in its block.
        let past: Vec<bool> = of_i
            .iter()
            .map(|fr| {
                let at_call = fr.stopped_at.is_none();
                !fr.point.is_empty()
                    && fr.point.iter().all(|p| {
                        index.get(p).is_some_and(|&ip| {
                            rec.nodes[ip].block == Some(b as u32)
                                && site_in_frames_block(ip, k, at_call, true) == Some(true)
                        })
                    })
            })
            .collect();
        if past.contains(&true) {
            return Some(true);
        }
        match status(b)? {
            false => Some(false),
            true => {
                // No activation may stand in the block before the call.
                let clear = of_i.iter().zip(&past).all(|(fr, &p)| {
                    p || (!fr.point.is_empty()
                        && fr.point.iter().all(|q| {
                            index
                                .get(q)
                                .is_some_and(|&ip| rec.nodes[ip].block != Some(b as u32))
                        }))
                });
                (every_one && clear).then_some(true)
            }
        }
    }

    /// The bytes of function `fi`'s coverage array `name`, in the function's own module.
    fn global_bytes(&self, fi: usize, name: &str, n: usize) -> Option<Vec<u8>> {
        let (_, addr) = self.global_address(fi, name)?;
        self.process.read_vec(addr, n)
    }

    /// The module of function record `fi` and the runtime address of its global `name`.
    fn global_address(&self, fi: usize, name: &str) -> Option<(usize, u64)> {
        let mi = self.module_of.get(fi).copied().unwrap_or(self.process.exe);
        let addr = self.symbols[mi].get(name).copied().or_else(|| {
            self.debug[mi]
                .as_ref()
                .and_then(|d| d.global_address(name, self.process.modules[mi].bias, self.process))
        })?;
        Some((mi, addr))
    }
}

/// A call site: (function record, node index).
type SiteRef = (usize, usize);

/// A function's name where a `static` one is unique: (module index, unit, name).
type NameInUnit<'a> = (usize, &'a str, &'a str);

/// The direct calls of the records, by the callee's name in the caller's module and unit, and
/// how many records of each name there are there: the calls of a function with
/// `entry_from_calls` ([`of`](Self::of)), indexed once.
struct DirectCalls<'a> {
    sites: HashMap<NameInUnit<'a>, Vec<SiteRef>>,
    named: HashMap<NameInUnit<'a>, usize>,
}

impl<'a> DirectCalls<'a> {
    fn index(cfg: &'a [CfgFunction], module_of: &[usize]) -> Self {
        let mut sites: HashMap<NameInUnit, Vec<SiteRef>> = HashMap::new();
        let mut named: HashMap<NameInUnit, usize> = HashMap::new();
        for (i, rec) in cfg.iter().enumerate() {
            let (Some(&m), Some(u)) = (module_of.get(i), rec.unit.as_deref()) else {
                continue;
            };
            *named.entry((m, u, rec.name.as_str())).or_default() += 1;
            for (k, n) in rec.nodes.iter().enumerate() {
                if let Some(callee) = n.call.as_ref().filter(|c| !c.indirect) {
                    if let Some(callee) = callee.callee.as_deref() {
                        sites.entry((m, u, callee)).or_default().push((i, k));
                    }
                }
            }
        }
        DirectCalls { sites, named }
    }

    /// The direct calls of record `g` (record, node index) in its module and unit — `None`
    /// unless `g` is the only function of its name there and they are as many as csi-cc
    /// counted (`entry_from_calls`: a copy of the unit in another object, or a caller's record
    /// dropped with its COMDAT group, would differ).
    fn of(
        &self,
        cfg: &'a [CfgFunction],
        module_of: &[usize],
        g: usize,
    ) -> Option<&[(usize, usize)]> {
        let rec = &cfg[g];
        let key = (*module_of.get(g)?, rec.unit.as_deref()?, rec.name.as_str());
        if self.named.get(&key) != Some(&1) {
            return None;
        }
        let sites = self.sites.get(&key).map(Vec::as_slice).unwrap_or_default();
        (sites.len() == rec.entry_from_calls? as usize).then_some(sites)
    }
}

/// The frames of `threads`, by function.
fn frames_by_function(
    threads: Option<&[csi_model::report::Thread]>,
) -> HashMap<FuncId, Vec<&csi_model::report::Frame>> {
    let mut frames: HashMap<FuncId, Vec<&csi_model::report::Frame>> = HashMap::new();
    for fr in threads.into_iter().flatten().flat_map(|t| &t.frames) {
        if let Some(f) = fr.function {
            frames.entry(f).or_default().push(fr);
        }
    }
    frames
}

/// Where coverage arrays are read from: (function record, array name, length) → bytes.
type ArrayBytes<'f> = dyn Fn(usize, &str, usize) -> Option<Vec<u8>> + 'f;

/// A path-traced frame's probes: the ring buffer of completed path ids, its index there, and
/// the running sum of the current path.
struct PathProbes {
    arr: Vec<i64>,
    idx: usize,
    sum: i64,
}

/// Reads a frame's path-trace probes from its variables `vars`; the ring buffer only for a
/// function with back edges (`looping`), else one empty entry. A function of one path
/// (`num_paths`) without back edges has the sum 0 wherever its frame stands, and csi-cc
/// gives it no variable (older builds did: it is not read).
fn read_path_probes(
    vars: &[Variable],
    looping: bool,
    num_paths: u64,
) -> Result<PathProbes, String> {
    let var = |name: &str| {
        vars.iter()
            .find(|v| v.name == name && v.inlined_in.is_none())
            .and_then(|v| v.bytes.clone())
            .ok_or_else(|| format!("`{name}` is not readable in this frame"))
    };
    let (arr, idx) = if looping {
        let arr_bytes = var("__PT_counter_arr")?;
        let idx = le_signed(&var("__PT_counter_idx")?);
        (
            arr_bytes
                .chunks_exact(8)
                .map(le_signed)
                .collect::<Vec<i64>>(),
            idx,
        )
    } else {
        (vec![-1], 0)
    };
    let sum = if !looping && num_paths == 1 {
        0
    } else {
        le_signed(&var("__PT_current_path")?)
    };
    if arr.is_empty() || idx < 0 || idx as usize >= arr.len() {
        return Err(format!(
            "ring buffer index {idx} out of range (corrupt frame?)"
        ));
    }
    Ok(PathProbes {
        arr,
        idx: idx as usize,
        sum,
    })
}

/// The array slot a call-site label (`CC<j>`) names.
fn cc_slot(label: &str) -> Option<usize> {
    label.strip_prefix("CC")?.parse().ok()
}

/// A little-endian signed integer of up to 8 bytes, sign-extended.
fn le_signed(b: &[u8]) -> i64 {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    let v = i64::from_le_bytes(w);
    if n < 8 && n > 0 && b[n - 1] & 0x80 != 0 {
        v | (!0i64 << (8 * n))
    } else {
        v
    }
}

/// The blocks of the point candidates (`blocks`) where the running sum `sum` decodes, each
/// with its partial path.
fn feasible_blocks(
    pg: &PathGraph,
    sum: i64,
    mut blocks: Vec<u32>,
    position_unknown: bool,
    contracted: &ContractedLoops,
) -> Vec<(u32, DecodedPath)> {
    // The running sum must decode at the current block (Theorem 2.1); a candidate whose
    // block does not decode cannot be the current point. Inside a contracted loop the sum
    // is the one it had at the loop's head: it decodes there, and the path goes on to the
    // block by a way not known.
    let mut feasible: Vec<(u32, DecodedPath)> = Vec::new();
    blocks.sort_unstable();
    blocks.dedup();
    for b in blocks {
        let head = contracted.head_of(b);
        if let Ok(mut d) = pg.decode_partial(sum, head.unwrap_or(b)) {
            if head.is_some_and(|h| h != b) {
                d.blocks.push(b);
            }
            feasible.push((b, d));
        } else if position_unknown && b == pg.entry {
            // Stopped at an unknown place, the frame may still be in its entry block
            // before the sum is set (a stack overflow in the prologue): not ruled out.
            feasible.push((
                b,
                DecodedPath {
                    blocks: vec![pg.entry],
                    start: PathStart::Entry,
                    end: csi_model::ballarus::PathEnd::Partial,
                },
            ));
        }
    }
    feasible
}

/// The completed paths of the unrotated ring buffer `ids` (oldest first) that led to the
/// current `partial` path, and whether they are this activation's (else none). A path that
/// starts at one of the `elided` heads follows a stretch that stored nothing, so it may follow
/// any path (and be the first of an unwrapped ring).
fn completed_paths(
    pg: &PathGraph,
    ids: &[i64],
    partial: &DecodedPath,
    wrapped: bool,
    runs: bool,
    elided: &[u32],
) -> (Vec<DecodedPath>, bool) {
    let mut completed: Vec<DecodedPath> = Vec::new();
    let mut ok = true;
    for r in pg.decode_all(ids) {
        match r {
            Ok(d) => completed.push(d),
            Err(_) => ok = false,
        }
    }
    // A live frame stores a completed path only on a back edge, and consecutive paths
    // chain through loop heads; anything else is not this activation's buffer.
    let chains = |a: &DecodedPath, b: &DecodedPath| match &a.end {
        csi_model::ballarus::PathEnd::BackEdge(heads) => {
            (b.start == PathStart::LoopHead && b.blocks.first().is_some_and(|h| heads.contains(h)))
                || after_unstored_stretch(b, elided)
        }
        _ => false,
    };
    if ok {
        let mut next = completed.iter().skip(1).chain(std::iter::once(partial));
        ok = completed.iter().all(|d| {
            let b = next.next().expect("one successor per path");
            chains(d, b)
        }) && (wrapped
            || completed
                .first()
                .is_none_or(|d| d.start == PathStart::Entry || after_unstored_stretch(d, elided)));
    }
    if !ok {
        completed.clear();
    }
    if runs {
        // An entry is a run of one or more iterations (`CfgFunction::pt_runs`): one that can
        // follow itself stands for two, which has every edge and dependency a longer run has.
        completed = completed
            .into_iter()
            .flat_map(|d| {
                let twice = chains(&d, &d);
                let copies = if twice { 2 } else { 1 };
                std::iter::repeat_n(d, copies)
            })
            .collect();
    }
    (completed, ok)
}

/// The loops a record says are contracted out of the running sum (`CfgFunction::pt_contracted`):
/// a decoded path holds a made-up route inside each it passes through.
struct ContractedLoops {
    /// Each loop's head and blocks (sorted, the head among them).
    loops: Vec<(u32, Vec<u32>)>,
}

impl ContractedLoops {
    fn of(rec: &CfgFunction) -> Self {
        let loops = rec
            .pt_contracted
            .iter()
            .filter_map(|l| {
                let (&h, body) = l.split_first()?;
                let mut body = body.to_vec();
                body.sort_unstable();
                Some((h, body))
            })
            .collect();
        ContractedLoops { loops }
    }

    /// The head of the contracted loop holding block `b`.
    fn head_of(&self, b: u32) -> Option<u32> {
        self.loops
            .iter()
            .find(|(_, body)| body.binary_search(&b).is_ok())
            .map(|&(h, _)| h)
    }

    /// Where the blocks `d` enter the contracted loops they pass through: (index of the
    /// head, index of the first block after the loop or `None` if `d` ends inside it), in
    /// order.
    fn passes(&self, d: &[u32]) -> Vec<(usize, Option<usize>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < d.len() {
            match self.loops.iter().find(|(h, _)| *h == d[i]) {
                Some((_, body)) => {
                    let end = (i + 1..d.len()).find(|&j| body.binary_search(&d[j]).is_err());
                    out.push((i, end));
                    i = end.unwrap_or(d.len());
                }
                None => i += 1,
            }
        }
        out
    }

    /// The blocks of `d`, a completed path (or the part of one before a loop it enters), known
    /// to have run: all but those between a contracted loop's head and the block the path
    /// left it from, or ended in.
    fn ran(&self, d: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut from = 0;
        for (i, end) in self.passes(d) {
            out.extend_from_slice(&d[from..=i]);
            let last = end.unwrap_or(d.len()) - 1;
            if last > i {
                out.push(d[last]);
            }
            from = last + 1;
        }
        out.extend_from_slice(&d[from.min(d.len())..]);
        out
    }

    /// `d` cut after the last contracted loop it passes through: the blocks before the cut
    /// known to have run, and the path after it — from the block after the loop; for the
    /// current path ending in the loop, its last block (which ran up to the point); none for
    /// a completed path ending in the loop (on an enclosing loop's back edge).
    fn cut(&self, d: &DecodedPath) -> Option<(Vec<u32>, Option<DecodedPath>)> {
        let &(i, end) = self.passes(&d.blocks).last()?;
        let b = &d.blocks;
        let mut ran = self.ran(&b[..i]);
        let partial = d.end == csi_model::ballarus::PathEnd::Partial;
        let after = match end {
            Some(j) => {
                ran.push(b[i]);
                if j - 1 > i {
                    ran.push(b[j - 1]);
                }
                Some(b[j..].to_vec())
            }
            // Still in the loop: its head ran only if the frame went on from it (else this may
            // be the head's first run, not yet past the point).
            None if partial => {
                if b.len() - 1 > i {
                    ran.push(b[i]);
                }
                Some(vec![b[b.len() - 1]])
            }
            None => {
                ran.extend_from_slice(&self.ran(&b[i..]));
                None
            }
        };
        Some((
            ran,
            after.map(|blocks| DecodedPath {
                blocks,
                start: PathStart::LoopHead,
                end: d.end.clone(),
            }),
        ))
    }
}

/// `d` starts at the head of one of the `elided` loops (`CfgFunction::pt_elided`), after a
/// stretch of its activation that stored nothing.
fn after_unstored_stretch(d: &DecodedPath, elided: &[u32]) -> bool {
    d.start == PathStart::LoopHead && d.blocks.first().is_some_and(|h| elided.contains(h))
}

/// The nodes that ran before the point (`point`, in the last block of `partial`): those of
/// the `completed` paths' blocks, then of `partial`'s, up to the point (`block_nodes`: each
/// PT block's nodes, in order).
fn path_to_point(
    block_nodes: &BTreeMap<u32, Vec<NodeId>>,
    completed: &[DecodedPath],
    partial: &DecodedPath,
    point: &[NodeId],
) -> Result<Vec<NodeId>, String> {
    let mut path: Vec<NodeId> = Vec::new();
    for d in completed {
        for b in &d.blocks {
            path.extend(block_nodes.get(b).into_iter().flatten());
        }
    }
    let (last, before) = partial.blocks.split_last().ok_or("empty partial path")?;
    for b in before {
        path.extend(block_nodes.get(b).into_iter().flatten());
    }
    let first_point = block_nodes
        .get(last)
        .and_then(|ns| ns.iter().position(|n| point.contains(n)))
        .unwrap_or(0);
    path.extend(
        block_nodes
            .get(last)
            .into_iter()
            .flatten()
            .take(first_point),
    );
    Ok(path)
}

/// The bytes read for a frame's local `name`, if any: the frame's own variable, not an inlined
/// copy's of the same name (a function instrumented before optimization has its inlined
/// callees' probe state in its frame too).
fn variable_bytes<'v>(variables: &'v [Variable], name: &str) -> Option<&'v [u8]> {
    variables
        .iter()
        .find(|v| v.name == name && v.inlined_in.is_none())
        .and_then(|v| v.bytes.as_deref())
}

/// Each record node's index, by program-graph node.
fn node_index(gnodes: &[NodeId]) -> HashMap<NodeId, usize> {
    gnodes.iter().enumerate().map(|(i, &g)| (g, i)).collect()
}

/// Each activation's candidate points in `live` as record nodes (`None`: unknown to the
/// record); `None` when some activations may be unseen.
fn live_positions(
    index: &HashMap<NodeId, usize>,
    live: Option<&[Vec<NodeId>]>,
) -> Option<Vec<Vec<Option<usize>>>> {
    live.map(|acts| {
        acts.iter()
            .map(|points| points.iter().map(|p| index.get(p).copied()).collect())
            .collect()
    })
}

/// The record's blocks each activation (its positions, `live_positions`) may stand in; an
/// activation at a point without a block, or unknown to the record, may be anywhere (empty).
fn live_blocks(rec: &CfgFunction, acts: &[Vec<Option<usize>>]) -> Vec<Vec<usize>> {
    acts.iter()
        .map(|at| {
            at.iter()
                .map(|ip| rec.nodes[(*ip)?].block.map(|b| b as usize))
                .collect::<Option<Vec<usize>>>()
                .unwrap_or_default()
        })
        .collect()
}

/// A call site at record node `k` of the block a frame stands in at node `ip`: it ran in the
/// frame's activation if the frame is past it, or in its call (`at_call`); it did not if the
/// frame is before it and `before_is_not_yet` (nothing else can have run it in the
/// activation); otherwise unknown.
fn site_in_frames_block(
    ip: usize,
    k: usize,
    at_call: bool,
    before_is_not_yet: bool,
) -> Option<bool> {
    match ip.cmp(&k) {
        std::cmp::Ordering::Greater => Some(true),
        std::cmp::Ordering::Equal => at_call.then_some(true),
        std::cmp::Ordering::Less => before_is_not_yet.then_some(false),
    }
}

/// The answer all of a frame's candidate points give, if they agree (none: unknown).
fn unanimous(votes: &[bool]) -> Option<bool> {
    let first = *votes.first()?;
    votes.iter().all(|&v| v == first).then_some(first)
}

/// The basic blocks of a `.debug_CSI_CFG` record: an edge from a block's last node to a
/// block's first node (the instrumenter's successor lists, duplicates dropped).
fn record_blocks(rec: &CfgFunction) -> BlockGraph {
    let nblocks = rec
        .nodes
        .iter()
        .filter_map(|n| n.block)
        .max()
        .map_or(0, |b| b as usize + 1);
    let (mut first, mut last) = (vec![usize::MAX; nblocks], vec![0usize; nblocks]);
    for (k, n) in rec.nodes.iter().enumerate() {
        if let Some(b) = n.block {
            first[b as usize] = first[b as usize].min(k);
            last[b as usize] = last[b as usize].max(k);
        }
    }
    let mut succs = vec![Vec::new(); nblocks];
    for &[a, b] in &rec.edges {
        let (a, b) = (a as usize, b as usize);
        if let (Some(x), Some(y)) = (rec.nodes[a].block, rec.nodes[b].block) {
            if last[x as usize] == a && first[y as usize] == b {
                succs[x as usize].push(y);
            }
        }
    }
    BlockGraph::new(succs)
}

/// Drops node positions on lines without machine code in their module's line table: an IR
/// instruction can carry a line and then vanish in code generation (the unconditional `br`
/// that is all `while (1) {` compiles to, a jump to the next block), so such a line never
/// executes an instruction, and a node holding it must not make it "must". Lines are matched
/// by file name without directories, so a line is dropped only when no file of that name has
/// code there. Frames never stop on such a line (a pc always has a row), except a caller's
/// frame standing at the line of a call inlined into it whose line kept no row of its own
/// (`DebugInfo::inlined_call_lines`): those positions stay, so the frame is located — as they
/// are in the unit's own source file (the statement is this unit's code at any optimization
/// level), weak elsewhere (a header's line: its code may be gone, or live in a library at -O0,
/// as an `extern template`'s does in libstdc++).
fn keep_positions_with_code(
    graph: &mut ProgramGraph,
    linked: &LinkedCfg,
    exe: usize,
    debug: &[Option<crate::dwarf::DebugInfo>],
) {
    let module_of = &linked.module_of;
    let with_code: Vec<Option<std::collections::HashSet<(String, u32)>>> = debug
        .iter()
        .map(|d| d.as_ref().map(|d| d.lines_with_code()))
        .collect();
    let inlined_calls: Vec<Option<std::collections::HashSet<(String, u32)>>> = debug
        .iter()
        .map(|d| d.as_ref().map(|d| d.inlined_call_lines()))
        .collect();
    // Per function where DWARF knows it: an IR instruction can compile to nothing in its
    // function (a dead load of an empty base's address in a C++ constructor at -O0) while
    // other functions have code on the same header line.
    let by_function: Vec<Option<crate::dwarf::FunctionLines>> = debug
        .iter()
        .map(|d| d.as_ref().map(|d| d.lines_by_function()))
        .collect();
    for k in 0..graph.nodes.len() {
        let n = &graph.nodes[k];
        let m = module_of.get(n.function as usize).copied().unwrap_or(exe);
        let Some(Some(module_code)) = with_code.get(m) else {
            continue;
        };
        let func = graph.function(n.function);
        let lines = by_function.get(m).and_then(|b| b.as_ref());
        // Instrumented before optimization, a function's lines may have code only in its
        // inlined copies (or other instantiations'): any code on the line in the module will do.
        let lines = lines.filter(|_| !func.optimized_after);
        let known = lines.and_then(|b| {
            [Some(&func.name), func.linkage_name.as_ref()]
                .into_iter()
                .flatten()
                .find(|name| b.knows(name))
        });
        let Some(file) = graph.file_of(k as u32) else {
            continue;
        };
        let name = graph.file_name(file);
        let base = name.rsplit('/').next().unwrap_or(name).to_string();
        let keep: Vec<bool> = n
            .positions
            .iter()
            .map(|p| {
                p.line == 0
                    || match (lines, known) {
                        (Some(b), Some(f)) => b.has_code(f, &base, p.line) == Some(true),
                        _ => module_code.contains(&(base.clone(), p.line)),
                    }
            })
            .collect();
        if keep.iter().all(|&x| x) {
            continue;
        }
        let call_line = |p: &csi_model::SourcePos| {
            inlined_calls
                .get(m)
                .and_then(|c| c.as_ref())
                .is_some_and(|c| c.contains(&(base.clone(), p.line)))
        };
        let base_of = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
        let in_unit = linked
            .funcs
            .get(n.function as usize)
            .and_then(|r| r.unit.as_deref())
            .is_some_and(|u| base_of(u) == base);
        let restored: Vec<bool> = n
            .positions
            .iter()
            .zip(&keep)
            .map(|(p, &k)| !k && call_line(p))
            .collect();
        let made_weak: Vec<bool> = restored.iter().map(|&r| r && !in_unit).collect();
        let keep: Vec<bool> = keep
            .iter()
            .zip(&restored)
            .map(|(&k, &r)| k || (r && in_unit))
            .collect();
        let n = &mut graph.nodes[k];
        let scopes = std::mem::take(&mut n.scopes);
        let weak = std::mem::take(&mut n.weak);
        let anchored = std::mem::take(&mut n.anchored);
        let positions = std::mem::take(&mut n.positions);
        for (i, p) in positions.into_iter().enumerate() {
            if keep[i] || made_weak[i] {
                if weak.contains(&(i as u32)) || made_weak[i] {
                    n.weak.push(n.positions.len() as u32);
                }
                if anchored.contains(&(i as u32)) {
                    n.anchored.push(n.positions.len() as u32);
                }
                n.positions.push(p);
                if let Some(&s) = scopes.get(i) {
                    n.scopes.push(s);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::variable_bytes;
    use crate::dwarf::{VarKind, Variable};

    fn var(inlined_in: Option<&str>, byte: u8) -> Variable {
        Variable {
            name: "__CC_arr".into(),
            kind: VarKind::Local,
            type_name: "volatile __csi_bool [2]".into(),
            value: String::new(),
            address: None,
            inlined_in: inlined_in.map(str::to_string),
            bytes: Some(vec![byte]),
            ty: None,
        }
    }

    /// Lua's `luaS_newlstr` (instrumented before optimization) with `internshrstr` inlined:
    /// the inlined copy's `__CC_arr` comes first in the frame's variables and was read as
    /// the outer function's, so its call site was "never run" on the frame's own path.
    #[test]
    fn a_frames_probe_state_is_its_own_not_an_inlined_copys() {
        let vars = [var(Some("internshrstr"), 0), var(None, 1)];
        assert_eq!(variable_bytes(&vars, "__CC_arr"), Some(&[1u8][..]));
        assert_eq!(variable_bytes(&vars[..1], "__CC_arr"), None);
    }

    /// `for (…) body;` — 0 → 1 (head), 1 → 2 → 1 (back edge), 1 → 3 (exit). With `pt_runs` an
    /// entry that can follow itself (head → back edge to the head) stands for two iterations;
    /// the first iteration's path (from the entry) cannot repeat and stays one.
    #[test]
    fn a_run_of_repeated_iterations_reads_as_two() {
        use csi_model::ballarus::{number, DecodedPath, PathEnd, PathStart};
        let nb = number(0, &[vec![1], vec![2, 3], vec![1], vec![]]).unwrap();
        let g = nb.graph.clone();
        let decoded: Vec<DecodedPath> = (0..nb.num_paths as i64)
            .map(|id| g.decode_complete(id).unwrap())
            .collect();
        let id_of = |start: PathStart, blocks: &[u32]| {
            decoded
                .iter()
                .position(|d| d.start == start && d.blocks == blocks)
                .unwrap() as i64
        };
        let first = id_of(PathStart::Entry, &[0, 1, 2]);
        let again = id_of(PathStart::LoopHead, &[1, 2]);
        let partial = DecodedPath {
            blocks: vec![1],
            start: PathStart::LoopHead,
            end: PathEnd::Partial,
        };
        let blocks = |ps: &[DecodedPath]| ps.iter().map(|d| d.blocks.clone()).collect::<Vec<_>>();
        let (each, ok) = super::completed_paths(&g, &[first, again], &partial, false, false, &[]);
        assert!(ok);
        assert_eq!(blocks(&each), [vec![0, 1, 2], vec![1, 2]]);
        let (runs, ok) = super::completed_paths(&g, &[first, again], &partial, false, true, &[]);
        assert!(ok);
        assert_eq!(blocks(&runs), [vec![0, 1, 2], vec![1, 2], vec![1, 2]]);
    }
}
