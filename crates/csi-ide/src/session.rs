//! An opened crash as plain data: stacks, per-file and per-frame line states, functions, and
//! where each source file of the program lives in the workspace. Built once (off the async
//! runtime) and shared immutably as `Arc<Session>`; requests only read it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use csi_analysis::{best_effort_coverage, Coverages, FileLines};
use csi_dump::dwarf::Variable;
use csi_dump::{Crash, PathStep};
use csi_model::{Coverage, FailureReport, FuncId, NodeId, ProgramGraph, SignalInfo};

use crate::functions::{function_views, FunctionView, SpanLines};
use crate::location::{node_file, node_line, node_location};
use crate::source::{SourcePaths, WorkspaceIndex};

/// One frame as the editor shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FrameView {
    /// Position in its thread's stack (0 = innermost), library frames included.
    pub index: usize,
    /// Demangled (see `csi_model::names`).
    pub function: Option<String>,
    /// The linkage (mangled) name, when there is one.
    pub linkage_name: Option<String>,
    /// Source file key (as written in DWARF / the graph), when the frame has a line.
    pub file: Option<String>,
    /// 1-based line and column.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub module: String,
    pub pc: u64,
    pub variables: Vec<Variable>,
    pub path: Vec<PathStep>,
    pub path_note: Option<String>,
    /// Index into `Session::frame_lines` when the analysis has a local answer for the frame
    /// (for a physical frame with calls inlined into it, their lines are shown with its own).
    #[serde(skip)]
    pub analysis: Option<usize>,
    #[serde(skip)]
    pub graph_function: Option<FuncId>,
    /// The calls inlined at the frame's pc, innermost first (as `csi_dump::CrashFrame::inlined`),
    /// each the view of its own activation: its position, variables and, where it kept its
    /// probes (instrumented before optimization), its analysis and path trace. Selected with
    /// `Selection::inline`, as a debugger's Call Stack lists them.
    #[serde(skip)]
    pub inlined: Vec<FrameView>,
}

impl FrameView {
    /// The analyses of the calls inlined into the frame that have one.
    fn inlined_analyses(&self) -> impl Iterator<Item = usize> + '_ {
        self.inlined.iter().filter_map(|i| i.analysis)
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ThreadView {
    pub tid: u64,
    pub crashed: bool,
    pub frames: Vec<FrameView>,
}

pub struct Session {
    pub title: String,
    pub signal: Option<SignalInfo>,
    pub threads: Vec<ThreadView>,
    pub graph: ProgramGraph,
    pub report: FailureReport,
    pub coverage: Option<Coverages>,
    /// Global line states per source file key.
    pub global: BTreeMap<String, FileLines>,
    /// Local line states per analysed frame.
    pub frame_lines: Vec<BTreeMap<String, FileLines>>,
    pub functions: Vec<FunctionView>,
    /// Source file key → file on disk (workspace file when found).
    pub sources: HashMap<String, PathBuf>,
    /// Things the user should know, one sentence each.
    pub notices: Vec<String>,
}

/// Which frame the editor looks at, and which path step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Selection {
    pub thread: usize,
    pub frame: usize,
    /// Index into the frame's path steps (the newest when `None`).
    pub step: Option<usize>,
    /// One call inlined into the frame (index into `FrameView::inlined`, 0 = innermost)
    /// instead of the whole frame.
    #[serde(default)]
    pub inline: Option<usize>,
}

impl Session {
    /// Opens a crash: executable + core, read as `load` says; its sources looked for as
    /// `sources` says.
    pub fn open_crash(
        exe: &Path,
        core: &Path,
        load: &csi_dump::LoadOptions,
        sources: &SourcePaths,
    ) -> Result<Session, String> {
        let crash = Crash::open(exe, core, load).map_err(|e| e.to_string())?;
        Ok(Self::open_crash_keeping_memory(crash, sources).0)
    }

    /// The session of an opened crash, and the crash itself without its graph and report (which
    /// move into the session): its process memory and debug info, for a debugger's values.
    pub fn open_crash_keeping_memory(mut crash: Crash, sources: &SourcePaths) -> (Session, Crash) {
        let session = Self::from_crash(&mut crash, sources);
        (session, crash)
    }

    fn from_crash(crash: &mut Crash, sources: &SourcePaths) -> Session {
        let mut notices = crash.notices.clone();
        let coverage = if crash.metadata == csi_dump::Metadata::None {
            None
        } else {
            match best_effort_coverage(&crash.graph, &crash.report) {
                Ok(c) => Some(c),
                Err(e) => {
                    notices.push(format!(
                        "the analysis could not run: {e}; showing the stack only"
                    ));
                    None
                }
            }
        };
        let mut threads = Vec::new();
        for t in &crash.threads {
            // The index into the analysis' frames of report frame `rf` of this thread.
            let analysis_of = |rf: Option<usize>| match (t.report_thread, rf, &coverage) {
                (Some(rt), Some(rf), Some(c)) => c
                    .frames
                    .iter()
                    .position(|x| x.thread == rt && x.frame == rf),
                _ => None,
            };
            let frames = t
                .frames
                .iter()
                .enumerate()
                .map(|(k, f)| FrameView {
                    index: k,
                    function: f.function.as_ref().map(|_| f.display_name()),
                    linkage_name: f.linkage_name.clone(),
                    file: f.location.as_ref().map(|l| l.file.clone()),
                    line: f.location.as_ref().map(|l| l.line),
                    column: f.location.as_ref().map(|l| l.column),
                    module: f.module.clone(),
                    pc: f.pc,
                    variables: f.variables.clone(),
                    path: f.path.clone(),
                    path_note: f.path_note.clone(),
                    analysis: analysis_of(f.report_frame),
                    graph_function: f.graph_function,
                    inlined: inlined_views(k, f, &analysis_of, coverage.as_ref()),
                })
                .collect();
            threads.push(ThreadView {
                tid: t.tid as u64,
                crashed: t.crashed,
                frames,
            });
        }
        let title = format!(
            "{} ({})",
            crash
                .exe
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            crash.core.display()
        );
        let exe_dir = crash.exe.parent().map(Path::to_path_buf);
        let decls: HashMap<String, u32> = crash
            .graph
            .functions
            .iter()
            .filter_map(|f| Some((f.name.clone(), crash.decl_line(&f.name)?)))
            .collect();
        let decl = |name: &str| decls.get(name).copied();
        Self::assemble(
            title,
            crash.signal.clone(),
            threads,
            std::sync::Arc::unwrap_or_clone(std::mem::take(&mut crash.graph)),
            std::mem::take(&mut crash.report),
            coverage,
            notices,
            sources,
            exe_dir.as_deref(),
            &decl,
        )
    }

    /// Opens a csi-grissom failure report with its GraphML CFG (no core: no variables).
    pub fn open_report(
        graph: &Path,
        report: &Path,
        sources: &SourcePaths,
    ) -> Result<Session, String> {
        let g = csi_model::read_graphml(graph).map_err(|e| e.to_string())?;
        let r = csi_model::read_grissom_report(report, &g).map_err(|e| e.to_string())?;
        let mut notices: Vec<String> = r.dropped.clone();
        let coverage = match best_effort_coverage(&g, &r) {
            Ok(c) => Some(c),
            Err(e) => {
                notices.push(format!("the analysis could not run: {e}"));
                None
            }
        };
        let mut threads = Vec::new();
        for (ti, t) in r.threads.iter().enumerate() {
            let frames = t
                .frames
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    let point = f.point.first().copied();
                    let file = point.and_then(|n| node_file(&g, n)).map(str::to_string);
                    FrameView {
                        index: k,
                        function: f
                            .function
                            .map(|x| g.function(x).display_name().into_owned()),
                        linkage_name: f.function.and_then(|x| g.function(x).linkage_name.clone()),
                        file,
                        line: point.and_then(|n| node_line(&g, n)),
                        column: None,
                        module: String::new(),
                        pc: 0,
                        variables: Vec::new(),
                        path: f
                            .path
                            .iter()
                            .chain(point.iter())
                            .filter_map(|&n| {
                                let (file, line) = node_location(&g, n)?;
                                Some(PathStep {
                                    file,
                                    line,
                                    node: n,
                                })
                            })
                            .collect(),
                        path_note: None,
                        analysis: coverage.as_ref().and_then(|c| {
                            c.frames.iter().position(|x| x.thread == ti && x.frame == k)
                        }),
                        graph_function: f.function,
                        inlined: Vec::new(),
                    }
                })
                .collect();
            threads.push(ThreadView {
                tid: t.id.unwrap_or(ti as u64),
                crashed: ti == 0,
                frames,
            });
        }
        let title = report.display().to_string();
        Ok(Self::assemble(
            title,
            r.threads.first().and_then(|t| t.signal.clone()),
            threads,
            g,
            r,
            coverage,
            notices,
            sources,
            graph.parent(),
            &|_| None,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        title: String,
        signal: Option<SignalInfo>,
        threads: Vec<ThreadView>,
        graph: ProgramGraph,
        report: FailureReport,
        coverage: Option<Coverages>,
        mut notices: Vec<String>,
        sources: &SourcePaths,
        input_dir: Option<&Path>,
        decl_line: &dyn Fn(&str) -> Option<u32>,
    ) -> Session {
        let (global, mut frame_lines) = match &coverage {
            Some(c) => c.lines(&graph),
            None => (BTreeMap::new(), Vec::new()),
        };
        // A frame's lines are those of its own activation and of the calls inlined into it:
        // other functions, whose nodes do not overlap, except where a function is inlined
        // into itself; a node the activations answer differently is Maybe.
        if let Some(c) = &coverage {
            for f in threads.iter().flat_map(|t| &t.frames) {
                let Some(own) = f.analysis.filter(|_| f.inlined_analyses().next().is_some()) else {
                    continue;
                };
                let mut merged = c.frames[own].clone();
                for a in f.inlined_analyses() {
                    for (&n, &cov) in &c.frames[a].status {
                        merged
                            .status
                            .entry(n)
                            .and_modify(|e| {
                                if *e != cov {
                                    *e = Coverage::Maybe;
                                }
                            })
                            .or_insert(cov);
                    }
                    merged.cuts.extend(&c.frames[a].cuts);
                }
                frame_lines[own] = c.frame_lines(&graph, &merged);
            }
        }
        let functions = function_views(&graph, SpanLines::OwnFile, decl_line);
        // Where each source file is.
        let mut keys: Vec<String> = graph.files.clone();
        for t in &threads {
            for f in &t.frames {
                keys.extend(f.file.clone());
            }
        }
        keys.sort();
        keys.dedup();
        let index = WorkspaceIndex::new(sources.root.as_deref());
        let search = sources;
        let mut sources = HashMap::new();
        let mut missing = Vec::new();
        for k in keys {
            match search.resolve(&k, input_dir, &index) {
                Some(p) => {
                    sources.insert(k, p);
                }
                None => missing.push(k),
            }
        }
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
            notices.push(format!(
                "{} source files are not in the workspace (add substitute paths in .csi.toml): {}{}",
                missing.len(),
                shown.join(", "),
                if missing.len() > 5 { ", ..." } else { "" }
            ));
        }
        Session {
            title,
            signal,
            threads,
            graph,
            report,
            coverage,
            global,
            frame_lines,
            functions,
            sources,
            notices,
        }
    }

    /// The source file keys that map to `path`.
    pub fn keys_for(&self, path: &Path) -> Vec<&str> {
        self.sources
            .iter()
            .filter(|(_, p)| p.as_path() == path)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// The selected frame, or the selected call inlined into it.
    pub fn frame(&self, sel: Selection) -> Option<&FrameView> {
        let f = self.threads.get(sel.thread)?.frames.get(sel.frame)?;
        match sel.inline {
            None => Some(f),
            Some(k) => f.inlined.get(k),
        }
    }

    /// The default selection: the crashing thread's innermost frame with source.
    pub fn default_selection(&self) -> Selection {
        let frame = self
            .threads
            .first()
            .and_then(|t| {
                t.frames
                    .iter()
                    .position(|f| f.analysis.is_some() || f.line.is_some())
            })
            .unwrap_or(0);
        Selection {
            thread: 0,
            frame,
            step: None,
            inline: None,
        }
    }

    /// Global and selected-frame line states of a file key.
    pub fn lines_of(&self, key: &str, sel: Selection) -> (Option<&FileLines>, Option<&FileLines>) {
        let local = self
            .frame(sel)
            .and_then(|f| f.analysis)
            .and_then(|a| self.frame_lines.get(a))
            .and_then(|m| m.get(key));
        (self.global.get(key), local)
    }

    /// Node statuses of a frame's activation, when analysed.
    pub fn frame_status(&self, f: &FrameView) -> Option<&BTreeMap<NodeId, Coverage>> {
        Some(&self.coverage.as_ref()?.frames.get(f.analysis?)?.status)
    }

    pub fn global_status(&self, n: NodeId) -> Option<Coverage> {
        self.coverage.as_ref()?.global.get(n as usize).copied()
    }
}

/// The views of the calls inlined into physical frame `index` (`f`), innermost first: each at
/// its own position (the innermost at the frame's, the others at the call they are in), with
/// the variables DWARF gives it, and its activation's analysis (`analysis_of` a report frame)
/// and path trace when it kept its probes.
fn inlined_views(
    index: usize,
    f: &csi_dump::CrashFrame,
    analysis_of: &dyn Fn(Option<usize>) -> Option<usize>,
    coverage: Option<&Coverages>,
) -> Vec<FrameView> {
    f.inlined
        .iter()
        .enumerate()
        .map(|(d, inl)| {
            let analysis = analysis_of(f.inlined_report_frames.get(d).copied().flatten());
            FrameView {
                index,
                function: inl.function.clone(),
                linkage_name: inl.linkage_name.clone(),
                file: inl.location.as_ref().map(|l| l.file.clone()),
                line: inl.location.as_ref().map(|l| l.line),
                column: inl.location.as_ref().map(|l| l.column),
                module: f.module.clone(),
                pc: f.pc,
                variables: f
                    .variables
                    .iter()
                    .filter(|v| v.inlined_in.is_some() && v.inlined_in == inl.function)
                    .cloned()
                    .collect(),
                path: f.inlined_paths.get(d).cloned().unwrap_or_default(),
                path_note: None,
                analysis,
                graph_function: coverage
                    .zip(analysis)
                    .and_then(|(c, a)| c.frames.get(a))
                    .map(|fc| fc.function),
                inlined: Vec::new(),
            }
        })
        .collect()
}

/// A slice shown in the editor (`csi/slice`): plain data for hints and lenses.
#[derive(Clone, Debug)]
pub struct ShownSlice {
    /// Source key → restricted-slice lines (1-based).
    pub restricted: BTreeMap<String, std::collections::BTreeSet<u32>>,
    pub unrestricted: BTreeMap<String, std::collections::BTreeSet<u32>>,
    /// Source key and line (1-based) of the criterion.
    pub criterion: Option<(String, u32)>,
    pub function: Option<String>,
    pub thread: usize,
    pub frame: Option<usize>,
    pub variables: Option<Vec<String>>,
    pub unknown_variables: Vec<String>,
    pub restricted_lines: usize,
    pub unrestricted_lines: usize,
    pub reduction: f64,
}

impl Session {
    /// Computes a slice; `slicer` is the session's (built on first use).
    pub fn slice(
        &self,
        slicer: &mut Option<csi_analysis::slice::Slicer>,
        sel: Selection,
        at: Option<(Vec<&str>, u32)>,
        variables: Option<Vec<String>>,
    ) -> Result<ShownSlice, String> {
        use csi_analysis::slice::{crash_criterion, SliceCriterion, Slicer};
        let cov = self
            .coverage
            .as_ref()
            .ok_or("the crash has no analysis (no CSI metadata?): nothing to slice")?;
        let g = &self.graph;
        let criterion = match at {
            None => {
                let mut c = crash_criterion(&self.report, 0)
                    .ok_or("no frame of the crashing thread is in the program graph")?;
                c.variables = variables;
                c
            }
            Some((keys, line)) => {
                let nodes: Vec<NodeId> = keys
                    .iter()
                    .flat_map(|k| csi_analysis::nodes_on_line(g, k, line))
                    .collect();
                if nodes.is_empty() {
                    return Err(format!("no code of the program on line {line}"));
                }
                // The selected frame's context when the line is in its function.
                let here = self
                    .frame(sel)
                    .and_then(|f| f.analysis)
                    .and_then(|a| cov.frames.get(a))
                    .filter(|fc| nodes.iter().any(|&n| g.node(n).function == fc.function));
                match here {
                    Some(fc) => SliceCriterion {
                        thread: fc.thread,
                        frame: Some(fc.frame),
                        nodes: nodes
                            .into_iter()
                            .filter(|&n| g.node(n).function == fc.function)
                            .collect(),
                        variables,
                        line: Some(line),
                    },
                    // Else the innermost frame of the crashing thread in that function, if any.
                    None => csi_analysis::slice::nodes_criterion(
                        g,
                        &self.report,
                        0,
                        nodes,
                        variables,
                        Some(line),
                    ),
                }
            }
        };
        let slicer = slicer.get_or_insert_with(|| Slicer::new(g));
        let pair = slicer.slice_pair(g, &self.report, cov, criterion);
        let c = &pair.criterion;
        // The line asked for (a node can span several lines: its first line is not it), else
        // the node's first line.
        let criterion = c.nodes.first().and_then(|&n| {
            let file = node_file(g, n)?;
            let line = c.line.or_else(|| node_line(g, n))?;
            Some((file.to_string(), line))
        });
        Ok(ShownSlice {
            restricted: pair.restricted.lines.clone(),
            unrestricted: pair.unrestricted.lines.clone(),
            criterion,
            function: c
                .nodes
                .first()
                .map(|&n| g.function(g.node(n).function).name.clone()),
            thread: c.thread,
            frame: c.frame,
            variables: c.variables.clone(),
            unknown_variables: pair.restricted.unknown_variables.clone(),
            restricted_lines: pair.restricted.line_count(),
            unrestricted_lines: pair.unrestricted.line_count(),
            reduction: pair.reduction(),
        })
    }
}
