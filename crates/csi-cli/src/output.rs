//! The three output formats of `csi analyze`. The JSON schema is documented in
//! `docs/analyze-json.md`; keep the two in step. Model and reader values go into the JSON
//! through their wire counterparts (`crate::wire`), never through serde derives of their own.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use csi_analysis::{ActiveSet, Coverages, FileLines};
use csi_dump::Crash;
use csi_ide::functions::{function_lines, function_views, SpanLines};
use csi_ide::location::{node_line, point_location};
use csi_ide::SourcePaths;
use csi_model::{Coverage, FailureReport, FuncId, LineStatus, NodeId, ProgramGraph};

use crate::wire;

pub struct Inputs<'a> {
    pub graph_path: &'a Path,
    pub report_path: &'a Path,
    pub graph: &'a ProgramGraph,
    pub report: &'a FailureReport,
    pub coverage: &'a Coverages,
    pub active: &'a ActiveSet,
    /// Set when the report comes from a core dump.
    pub crash: Option<&'a Crash>,
    /// Where the text listing looks for sources.
    pub sources: &'a SourcePaths,
}

fn ids(g: &ProgramGraph, nodes: impl Iterator<Item = NodeId>) -> Vec<String> {
    nodes.map(|n| g.node(n).ext_id.clone()).collect()
}

fn partition(g: &ProgramGraph, answers: &[(NodeId, Coverage)]) -> Value {
    let pick = |c: Coverage| ids(g, answers.iter().filter(|(_, x)| *x == c).map(|(n, _)| *n));
    json!({"yes": pick(Coverage::Yes), "no": pick(Coverage::No), "maybe": pick(Coverage::Maybe)})
}

fn global_answers(c: &Coverages) -> Vec<(NodeId, Coverage)> {
    c.global
        .iter()
        .enumerate()
        .map(|(i, &x)| (i as NodeId, x))
        .collect()
}

fn count(answers: &[Coverage]) -> Value {
    let k = |c| answers.iter().filter(|&&x| x == c).count();
    json!({"yes": k(Coverage::Yes), "no": k(Coverage::No), "maybe": k(Coverage::Maybe)})
}

/// `csi analyze --format json`'s document: a JSON value with the line states (most of a
/// large optimized crash's document) kept typed beside it and serialized in place, in the
/// key order a `Value` object has.
pub struct JsonDoc {
    doc: Value,
    lines: BTreeMap<String, FileLines>,
    frame_lines: Vec<BTreeMap<String, FileLines>>,
}

/// A file's lines, keys in `Value`'s (sorted) order.
struct SortedFileLines<'a>(&'a FileLines);

impl serde::Serialize for SortedFileLines<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("may", &self.0.may)?;
        m.serialize_entry("must", &self.0.must)?;
        m.serialize_entry("never", &self.0.never)?;
        m.serialize_entry("partial", &self.0.partial)?;
        m.end()
    }
}

struct LinesByFile<'a>(&'a BTreeMap<String, FileLines>);

impl serde::Serialize for LinesByFile<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(f, l)| (f, SortedFileLines(l))))
    }
}

/// An object with a `lines` entry inserted where a sorted map puts it; `frames` (top level)
/// gets each frame's own lines the same way.
struct WithLines<'a> {
    object: &'a serde_json::Map<String, Value>,
    lines: &'a BTreeMap<String, FileLines>,
    frame_lines: Option<&'a [BTreeMap<String, FileLines>]>,
}

impl serde::Serialize for WithLines<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut m = s.serialize_map(Some(self.object.len() + 1))?;
        let mut lines_written = false;
        for (k, v) in self.object {
            if !lines_written && k.as_str() > "lines" {
                m.serialize_entry("lines", &LinesByFile(self.lines))?;
                lines_written = true;
            }
            match (k.as_str(), self.frame_lines) {
                ("frames", Some(per_frame)) => {
                    let frames = v.as_array().ok_or_else(|| S::Error::custom("frames"))?;
                    let with: Vec<WithLines> = frames
                        .iter()
                        .zip(per_frame)
                        .filter_map(|(f, lines)| {
                            Some(WithLines {
                                object: f.as_object()?,
                                lines,
                                frame_lines: None,
                            })
                        })
                        .collect();
                    m.serialize_entry(k, &with)?;
                }
                _ => m.serialize_entry(k, v)?,
            }
        }
        if !lines_written {
            m.serialize_entry("lines", &LinesByFile(self.lines))?;
        }
        m.end()
    }
}

impl serde::Serialize for JsonDoc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        WithLines {
            object: self
                .doc
                .as_object()
                .ok_or_else(|| S::Error::custom("document"))?,
            lines: &self.lines,
            frame_lines: Some(&self.frame_lines),
        }
        .serialize(s)
    }
}

/// `csi analyze --format json`'s document.
pub fn json_doc(i: &Inputs) -> JsonDoc {
    let g = i.graph;
    let global = global_answers(i.coverage);
    let frames: Vec<Value> = i
        .coverage
        .frames
        .iter()
        .map(|f| {
            let answers: Vec<(NodeId, Coverage)> = f.status.iter().map(|(&n, &c)| (n, c)).collect();
            let fr = &i.report.threads[f.thread].frames[f.frame];
            let mut v = partition(g, &answers);
            v["thread"] = json!(f.thread);
            v["frame"] = json!(f.frame);
            let gf = g.function(f.function);
            v["function"] = json!(gf.display_name());
            if let Some(l) = &gf.linkage_name {
                v["linkage_name"] = json!(l);
            }
            v["point"] = json!(ids(g, fr.point.iter().copied()));
            v["path"] = json!(ids(g, fr.path.iter().copied()));
            if let Some((file, line)) = point_location(g, &fr.point) {
                v["file"] = json!(file);
                v["line"] = json!(line);
            }
            v
        })
        .collect();
    let (lines, frame_lines) = i.coverage.lines(g);
    let mut out = partition(g, &global);
    let edges: Vec<Value> = i
        .active
        .edges
        .iter()
        .map(|(a, b, k)| json!([g.node(*a).ext_id, g.node(*b).ext_id, wire::edge_kind(*k)]))
        .collect();
    let mut doc = json!({
        "version": 1,
        "graph": i.graph_path.display().to_string(),
        "report": i.report_path.display().to_string(),
        "summary": {
            "nodes": g.node_count(),
            "global": count(&i.coverage.global),
            "context_insensitive": i.coverage.context_insensitive.as_deref().map(count),
            "active_nodes": i.active.node_count(),
            "active_edges": i.active.edges.len(),
        },
        "global": out.take(),
        "frames": frames,
        "active": {
            "nodes": ids(g, (0..g.node_count() as NodeId).filter(|&n| i.active.nodes[n as usize])),
            "edges": edges,
        },
        "dropped": i.report.dropped,
    });
    if let Some(c) = i.crash {
        doc["executable"] = json!(c.exe.display().to_string());
        doc["core"] = json!(c.core.display().to_string());
        doc["signal"] = json!(c.signal.as_ref().map(wire::Signal::from));
        doc["threads"] = threads_json(c);
        doc["notices"] = json!(c.notices);
        doc["metadata"] = json!(wire::metadata(&c.metadata));
        let modules = c.modules();
        doc["modules"] = json!(modules.iter().map(wire::Module::from).collect::<Vec<_>>());
    }
    JsonDoc {
        doc,
        lines,
        frame_lines,
    }
}

/// Every thread's stack as the core shows it, program and library frames alike.
pub fn threads_json(c: &Crash) -> Value {
    let threads: Vec<Value> = c
        .threads
        .iter()
        .map(|t| {
            let frames: Vec<Value> = t
                .frames
                .iter()
                .map(|f| {
                    let mut v = json!({
                        "pc": format!("{:#x}", f.pc),
                        "function": f.function.as_ref().map(|_| f.display_name()),
                        "module": f.module,
                        "file": f.location.as_ref().map(|l| &l.file),
                        "line": f.location.as_ref().map(|l| l.line),
                        "column": f.location.as_ref().map(|l| l.column),
                        "inlined": f.inlined.iter().map(wire::Inlined::from).collect::<Vec<_>>(),
                        "report_frame": f.report_frame,
                        "inlined_report_frames": f.inlined_report_frames,
                        "path": f.path.iter().map(|s| json!([s.file, s.line])).collect::<Vec<_>>(),
                        "path_note": f.path_note,
                        "variables": f.variables.iter().map(wire::Var::from).collect::<Vec<_>>(),
                        "unwind": wire::unwind(f.unwind),
                    });
                    if let Some(l) = &f.linkage_name {
                        v["linkage_name"] = json!(l);
                    }
                    v
                })
                .collect();
            json!({
                "tid": t.tid,
                "crashed": t.crashed,
                "report_thread": t.report_thread,
                "walk_problem": t.walk_problem,
                "outer_frames_unknown": t
                    .report_thread
                    .and_then(|k| c.report.threads.get(k))
                    .is_some_and(|rt| rt.outer_frames_unknown),
                "frames": frames,
            })
        })
        .collect();
    json!(threads)
}

fn join(lines: &[u32]) -> String {
    lines
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// CSIclipse's 7-field rows: `func;file;local|global;yes;no;maybe;path`. Global rows name the
/// function `unused` and end in `0`, as csi-grissom's front end writes them; local rows (one
/// per stack frame) end in the frame's path-trace lines, oldest first.
pub fn csiclipse(i: &Inputs) -> String {
    let g = i.graph;
    let mut out = String::new();
    let (global, frame_lines) = i.coverage.lines(g);
    for (f, lines) in i.coverage.frames.iter().zip(frame_lines) {
        let fr = &i.report.threads[f.thread].frames[f.frame];
        let path: Vec<u32> = fr
            .path
            .iter()
            .chain(&fr.point)
            .filter_map(|&n| node_line(g, n))
            .collect();
        for (file, l) in lines {
            let _ = writeln!(
                out,
                "{};{};local;{};{};{};{}",
                g.function(f.function).name,
                file,
                join(&l.must),
                join(&l.never),
                join(&l.may),
                join(&path)
            );
        }
    }
    for (file, l) in global {
        let _ = writeln!(
            out,
            "unused;{};global;{};{};{};0",
            file,
            join(&l.must),
            join(&l.never),
            join(&l.may)
        );
    }
    out
}

/// Where the command line looks for sources (csi-ide's resolver): the substitute paths, then
/// as written (absolute or relative to the working directory), then relative to the input's
/// directory and each of its ancestors, then by base name in the input's directory.
pub fn source_paths(substitute_paths: Vec<csi_ide::SubstitutePath>) -> SourcePaths {
    SourcePaths {
        substitute_paths,
        root: Some(".".into()),
        by_name_in_input_dir: true,
    }
}

/// A source file's lines, looked for as `sources` says; `input` is the executable (or the
/// GraphML file), symbolic links followed.
pub fn source_text(sources: &SourcePaths, input: &Path, file: &str) -> Option<Vec<String>> {
    let input = std::fs::canonicalize(input).unwrap_or_else(|_| input.to_path_buf());
    sources.text(file, Some(input.parent().unwrap_or(Path::new("."))))
}

struct Paint(bool);
impl Paint {
    fn status(&self, s: Option<LineStatus>) -> String {
        let (label, code) = match s {
            Some(LineStatus::Must) => ("must ", "32"),
            Some(LineStatus::May) => ("may  ", "33"),
            Some(LineStatus::Never) => ("never", "31"),
            None => ("     ", ""),
        };
        if self.0 && !code.is_empty() {
            format!("\x1b[{code}m{label}\x1b[0m")
        } else {
            label.to_string()
        }
    }
}

pub fn text(i: &Inputs, color: bool) -> String {
    let g = i.graph;
    let paint = Paint(color);
    let mut out = String::new();
    let cov = i.coverage;
    let grissom = cov
        .context_insensitive
        .as_deref()
        .map(|ci| {
            let k = |c| ci.iter().filter(|&&x| x == c).count();
            format!(
                " (csi-grissom's question alone: must {} · never {})",
                k(Coverage::Yes),
                k(Coverage::No)
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "CSI best-effort coverage: {} nodes — must {} · may {} · never {}{grissom}",
        g.node_count(),
        cov.count(Coverage::Yes),
        cov.count(Coverage::Maybe),
        cov.count(Coverage::No),
    );
    for d in &i.report.dropped {
        let _ = writeln!(out, "note: {d}");
    }
    let _ = writeln!(out, "\nCrash stack (innermost first):");
    let mut frame_of: BTreeMap<FuncId, Vec<usize>> = BTreeMap::new();
    for (k, f) in cov.frames.iter().enumerate() {
        let fr = &i.report.threads[f.thread].frames[f.frame];
        let at = point_location(g, &fr.point)
            .map(|(file, line)| format!("{file}:{line}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  #{:<2} {:<24} {at}",
            f.frame,
            g.function(f.function).name
        );
        frame_of.entry(f.function).or_default().push(k);
    }
    let (global, frame_lines) = cov.lines(g);
    // Group functions by file, ordered by their first line.
    let mut by_file: BTreeMap<String, Vec<(u32, FuncId, u32)>> = BTreeMap::new();
    for f in function_views(g, SpanLines::All, &|_| None) {
        by_file
            .entry(f.file)
            .or_default()
            .push((f.first, f.id, f.last));
    }
    for (file, mut funcs) in by_file {
        funcs.sort();
        let source = source_text(i.sources, i.graph_path, &file);
        let empty = FileLines::default();
        let gl = global.get(&file).unwrap_or(&empty);
        let _ = writeln!(out, "\n== {file}");
        for (lo, f, hi) in funcs {
            let func = g.function(f);
            let lines = function_lines(g, f, SpanLines::All);
            let locals: Vec<(usize, FileLines)> = frame_of
                .get(&f)
                .map(|ks| {
                    ks.iter()
                        .map(|&k| {
                            let pl = &frame_lines[k];
                            (
                                cov.frames[k].frame,
                                pl.get(&file).cloned().unwrap_or_default(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let header = if locals.is_empty() {
                String::new()
            } else {
                let ks: Vec<String> = locals.iter().map(|(k, _)| format!("#{k}")).collect();
                format!(
                    "   [frame {} local status after the global one]",
                    ks.join(", ")
                )
            };
            let _ = writeln!(out, "-- {}(){header}", func.display_name());
            for line in lo..=hi {
                let status = gl.status(line);
                let has_code = lines.contains(&line);
                if !has_code && source.is_none() {
                    continue;
                }
                let mut row = format!("{line:>6}  {}", paint.status(status));
                for (_, l) in &locals {
                    let _ = write!(row, " {}", paint.status(l.status(line)));
                }
                if let Some(src) = source.as_ref().and_then(|s| s.get(line as usize - 1)) {
                    let _ = write!(row, " │ {src}");
                }
                let _ = writeln!(out, "{}", row.trim_end());
            }
        }
    }
    out
}
