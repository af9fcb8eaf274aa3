//! `csi show`: a crash in the terminal — the signal, every thread's stack, each program
//! frame's function source with must / may / never per line (the frame's own answer and the
//! global one), the path trace that led to the frame's current point, and a global summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use csi_analysis::{Coverages, FileLines};
use csi_dump::dwarf::SourceLoc;
use csi_dump::{Crash, CrashFrame, PathStep};
use csi_ide::functions::{function_lines, function_view, FunctionView, LineCounts, SpanLines};
use csi_ide::SourcePaths;
use csi_model::{Coverage, LineStatus};

use crate::output::source_text;

struct Paint(bool);

impl Paint {
    fn code(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn status(&self, s: Option<LineStatus>) -> String {
        match s {
            Some(LineStatus::Must) => self.code("32", "must "),
            Some(LineStatus::May) => self.code("33", "may  "),
            Some(LineStatus::Never) => self.code("31", "never"),
            None => "     ".into(),
        }
    }
}

fn frame_title(f: &CrashFrame) -> String {
    let args: Vec<String> = f
        .variables
        .iter()
        .filter(|v| v.kind == csi_dump::dwarf::VarKind::Parameter && v.inlined_in.is_none())
        .map(|v| format!("{}={}", v.name, short(&v.value)))
        .collect();
    let name = f.display_name();
    match &f.location {
        Some(l) => format!(
            "{name} ({}) at {}:{}:{}",
            args.join(", "),
            l.file,
            l.line,
            l.column
        ),
        // A demangled C++ name already shows its parameter types.
        None if name.ends_with(')') => format!("{name} from {}", f.module),
        None => format!("{name} () from {}", f.module),
    }
}

fn short(v: &str) -> String {
    if v.chars().count() > 60 {
        let s: String = v.chars().take(57).collect();
        format!("{s}...")
    } else {
        v.to_string()
    }
}

pub struct Options {
    /// Every frame's variables.
    pub locals: bool,
    /// Every line of each frame's function, however long.
    pub all_lines: bool,
    pub color: bool,
    /// Where sources are looked for.
    pub sources: SourcePaths,
}

/// A function longer than this lists only the lines that matter (see [`lines_that_matter`]).
const FULL_LISTING_MAX: u32 = 80;
/// Lines shown before and after a frame's current line in a shortened listing.
const CONTEXT: u32 = 6;

/// The lines of a long function worth listing: a window around the frame's current line,
/// each path step with its neighbours, and every line the frame's answer decides (must or
/// never). An -O2 interpreter loop spans thousands of lines, most of them "may".
fn lines_that_matter(
    lo: u32,
    hi: u32,
    here: Option<u32>,
    on_path: &[u32],
    decided: impl Fn(u32) -> bool,
) -> std::collections::BTreeSet<u32> {
    let mut keep = std::collections::BTreeSet::new();
    let mut around = |l: u32, r: u32| {
        for x in l.saturating_sub(r).max(lo)..=(l + r).min(hi) {
            keep.insert(x);
        }
    };
    if let Some(h) = here {
        around(h, CONTEXT);
    }
    for &l in on_path {
        around(l, 1);
    }
    for l in lo..=hi {
        if decided(l) {
            keep.insert(l);
        }
    }
    keep
}

/// Every thread's stack: each frame's title, inlined calls and (`locals`) variables.
fn stacks(out: &mut String, c: &Crash, paint: &Paint, locals: bool) {
    for t in &c.threads {
        let _ = writeln!(
            out,
            "\n{}",
            paint.code(
                "1",
                &format!(
                    "Thread {}{}",
                    t.tid,
                    if t.crashed { " (crashed)" } else { "" }
                )
            )
        );
        for (k, f) in t.frames.iter().enumerate() {
            let _ = writeln!(out, "  #{k:<3} {}", frame_title(f));
            for inl in &f.inlined {
                let at = inl
                    .location
                    .as_ref()
                    .map(|l| format!(" at {}:{}", l.file, l.line))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "        inlined {}{at}",
                    inl.function
                        .as_deref()
                        .map_or("??".into(), |n| csi_model::names::display_name(n, None))
                );
            }
            if locals {
                for v in &f.variables {
                    let _ = writeln!(out, "        {} {} = {}", v.type_name, v.name, v.value);
                }
            }
        }
        if let Some(p) = &t.walk_problem {
            let _ = writeln!(out, "  ({p})");
        }
    }
}

/// What one program frame's listing shows: its function's span and lines with code, the
/// frame's and the global line states, and the source text when found.
struct Listing<'a> {
    span: &'a FunctionView,
    lines: &'a [u32],
    local: &'a FileLines,
    global: &'a FileLines,
    src: Option<&'a [String]>,
}

/// Where one activation stands: its current line, its decoded path trace and why the trace is
/// missing or partial.
struct Standing<'a> {
    here: Option<u32>,
    path: &'a [PathStep],
    path_note: Option<&'a str>,
}

/// An activation's function line by line (a long one shortened to the lines that matter
/// unless `all_lines`), then its path trace; `crashed_here`: the thread crashed in this frame
/// (its line is marked ✘, else ▶).
fn frame_listing(
    out: &mut String,
    paint: &Paint,
    at: &Standing,
    crashed_here: bool,
    listing: &Listing,
    all_lines: bool,
) {
    let Listing {
        span,
        lines,
        local: ll,
        global: gl,
        src,
    } = *listing;
    let (file, lo, hi) = (&span.file, span.first, span.last);
    let here = at.here;
    let on_path: Vec<u32> = at
        .path
        .iter()
        .filter(|s| s.file == *file)
        .map(|s| s.line)
        .collect();
    let _ = writeln!(out, "  line  frame global");
    let first = if src.is_some() {
        lo.saturating_sub(1).max(1)
    } else {
        lo
    };
    let shown = (!all_lines && hi - first > FULL_LISTING_MAX).then(|| {
        lines_that_matter(first, hi, here, &on_path, |l| {
            matches!(
                ll.status(l),
                Some(LineStatus::Must) | Some(LineStatus::Never)
            )
        })
    });
    let mut elided: Vec<u32> = Vec::new();
    let flush_elided = |out: &mut String, elided: &mut Vec<u32>| {
        if let (Some(&a), Some(&b)) = (elided.first(), elided.last()) {
            let may = elided
                .iter()
                .filter(|&&l| ll.status(l) == Some(LineStatus::May))
                .count();
            let _ = writeln!(
                out,
                "{}",
                paint.code(
                    "2",
                    &format!(
                        "     ⋮ {} lines elided ({a}–{b}: {may} may, the rest without code)",
                        elided.len()
                    )
                )
            );
        }
        elided.clear();
    };
    let mut elided_total = 0usize;
    for line in first..=hi {
        let has_code = lines.contains(&line);
        if !has_code && src.is_none() {
            continue;
        }
        if shown.as_ref().is_some_and(|s| !s.contains(&line)) {
            elided.push(line);
            elided_total += 1;
            continue;
        }
        flush_elided(&mut *out, &mut elided);
        let marker = if Some(line) == here {
            paint.code("1;35", if crashed_here { "✘" } else { "▶" })
        } else if on_path.contains(&line) {
            "·".into()
        } else {
            " ".into()
        };
        let mut row = format!(
            "{line:>6} {} {} {marker}",
            paint.status(ll.status(line)),
            paint.status(gl.status(line))
        );
        if let Some(text) = src.as_ref().and_then(|s| s.get(line as usize - 1)) {
            let _ = write!(row, "│ {text}");
        }
        let _ = writeln!(out, "{}", row.trim_end());
    }
    flush_elided(&mut *out, &mut elided);
    if elided_total > 0 {
        let _ = writeln!(
            out,
            "  ({elided_total} of {} lines elided; `csi show --all-lines` lists them)",
            hi - first + 1
        );
    }
    if !at.path.is_empty() {
        let steps: Vec<String> = at
            .path
            .iter()
            .map(|s| {
                if s.file == *file {
                    s.line.to_string()
                } else {
                    format!("{}:{}", s.file, s.line)
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "  path trace (oldest → current): {}",
            steps.join(" → ")
        );
    }
    if let Some(n) = at.path_note {
        let _ = writeln!(out, "  path trace: {n}");
    }
}

pub fn render(c: &Crash, cov: Option<&Coverages>, opts: Options) -> String {
    let Options {
        locals,
        all_lines,
        color,
        sources: source_paths,
    } = opts;
    let paint = Paint(color);
    let mut out = String::new();
    let g = &c.graph;
    let _ = writeln!(
        out,
        "{} {}",
        paint.code("1", "Crash of"),
        c.command.as_deref().unwrap_or(&c.exe.display().to_string())
    );
    if let Some(s) = &c.signal {
        let addr = s
            .fault_address
            .map(|a| format!(", fault address {a:#x}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Program terminated with signal {} (code {}{addr}).",
            s.name, s.code
        );
    }
    for n in &c.notices {
        let _ = writeln!(out, "{} {n}", paint.code("36", "note:"));
    }
    stacks(&mut out, c, &paint, locals);
    let Some(cov) = cov else {
        let _ = writeln!(
            out,
            "\nNo program graph: must/may/never needs a build with csi-cc."
        );
        return out;
    };
    // Each program frame of the crashing thread: its function with local and global status.
    let (global, frame_lines) = cov.lines(g);
    let empty = FileLines::default();
    let mut sources: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for t in c.threads.iter().filter(|t| t.report_thread.is_some()) {
        let ti = t.report_thread.unwrap();
        for (k, f) in t.frames.iter().enumerate() {
            let (Some(func), Some(rk)) = (f.graph_function, f.report_frame) else {
                continue;
            };
            // Calls inlined into the frame that kept their probes (instrumented before
            // optimization) are activations of their own, innermost first, as gdb lists them.
            let report = &c.report.threads[ti].frames;
            // Each view marks its own position (the innermost the frame's pc, the others the
            // call of the next one in) and its own path trace.
            let line = |l: Option<&SourceLoc>| l.map(|l| l.line);
            let inlined = (f.inlined.iter().zip(&f.inlined_report_frames).enumerate()).filter_map(
                |(d, (inl, r))| {
                    let at = Standing {
                        here: line(inl.location.as_ref()),
                        path: f.inlined_paths.get(d).map_or(&[], Vec::as_slice),
                        path_note: None,
                    };
                    Some((report[(*r)?].function?, (*r)?, at, d == 0, " [inlined]"))
                },
            );
            let own = Standing {
                here: line(f.call_location.as_ref().or(f.location.as_ref())),
                path: &f.path,
                path_note: f.path_note.as_deref(),
            };
            let own = (func, rk, own, f.inlined.is_empty(), "");
            for (func, rk, at, innermost, tag) in inlined.chain([own]) {
                let Some(fi) = cov
                    .frames
                    .iter()
                    .position(|x| x.thread == ti && x.frame == rk)
                else {
                    continue;
                };
                let Some(span) = function_view(g, func, SpanLines::OwnFile, None) else {
                    continue;
                };
                let (file, lo, hi) = (&span.file, span.first, span.last);
                let ll = frame_lines[fi].get(file).unwrap_or(&empty);
                let gl = global.get(file).unwrap_or(&empty);
                let lines = function_lines(g, func, SpanLines::OwnFile);
                let counts = LineCounts::of(Some(ll), lo, hi);
                let _ = writeln!(
                    out,
                    "\n{} — this frame: must {} · may {} · never {}",
                    paint.code(
                        "1",
                        &format!(
                            "== Thread {} #{k} {}{tag} in {file}",
                            t.tid,
                            csi_model::names::call_form(&span.name),
                        )
                    ),
                    counts.must,
                    counts.may,
                    counts.never
                );
                let src = sources
                    .entry(file.clone())
                    .or_insert_with(|| source_text(&source_paths, &c.exe, file));
                if src.is_none() {
                    let _ = writeln!(out, "   (source {file} not found; statuses by line number)");
                }
                let listing = Listing {
                    span: &span,
                    lines: &lines,
                    local: ll,
                    global: gl,
                    src: src.as_deref(),
                };
                let crashed_here = k == 0 && t.crashed && innermost;
                frame_listing(&mut out, &paint, &at, crashed_here, &listing, all_lines);
            }
        }
    }
    let missing: Vec<&str> = sources
        .iter()
        .filter(|(_, t)| t.is_none())
        .map(|(f, _)| f.as_str())
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "\n{} sources not found (statuses shown by line number): {}",
            paint.code("36", "note:"),
            missing.join(", ")
        );
    }
    // Global summary.
    let mut totals = [0usize; 3];
    for l in global.values() {
        totals[0] += l.must.len();
        totals[1] += l.may.len();
        totals[2] += l.never.len();
    }
    let _ = writeln!(
        out,
        "\nWhole program: must {} · may {} · never {} lines in {} files ({} nodes: {} yes, {} maybe, {} no)",
        totals[0],
        totals[1],
        totals[2],
        global.len(),
        g.node_count(),
        cov.count(Coverage::Yes),
        cov.count(Coverage::Maybe),
        cov.count(Coverage::No)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_function_keeps_the_current_line_the_path_and_decided_lines() {
        let keep = lines_that_matter(100, 5000, Some(2000), &[150, 4990], |l| l == 3000);
        let expect: Vec<u32> = (2000 - CONTEXT..=2000 + CONTEXT)
            .chain([149, 150, 151, 3000, 4989, 4990, 4991])
            .collect();
        let mut got: Vec<u32> = keep.into_iter().collect();
        got.sort_unstable();
        let mut want = expect;
        want.sort_unstable();
        assert_eq!(got, want);
        // Windows are clipped to the function.
        let keep = lines_that_matter(100, 200, Some(101), &[200], |_| false);
        assert_eq!(keep.first(), Some(&100));
        assert_eq!(keep.last(), Some(&200));
    }

    fn frame(function: &str, linkage: Option<&str>) -> CrashFrame {
        CrashFrame {
            pc: 0x1000,
            module: "/x/libxml.so".into(),
            function: Some(function.into()),
            linkage_name: linkage.map(str::to_string),
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
            unwind: csi_dump::unwind::UnwindMethod::Cfi,
            context: Default::default(),
        }
    }

    #[test]
    fn frame_titles_are_demangled() {
        let f = frame("LoadFile", Some("_ZN3xml8Document8LoadFileEP8_IO_FILE"));
        assert_eq!(
            frame_title(&f),
            "xml::Document::LoadFile(_IO_FILE*) from /x/libxml.so"
        );
        // A symbol-table name without DWARF.
        let f = frame("_ZN3xml8Document8LoadFileEP8_IO_FILE", None);
        assert_eq!(
            frame_title(&f),
            "xml::Document::LoadFile(_IO_FILE*) from /x/libxml.so"
        );
        assert_eq!(
            frame_title(&frame("walk", None)),
            "walk () from /x/libxml.so"
        );
    }
}
