//! `csi slice`: the restricted and the static slice from the crash point or a line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use csi_analysis::slice::{crash_criterion, nodes_criterion, SlicePair, SliceStats, Slicer};
use csi_analysis::Coverages;
use csi_dump::Crash;
use csi_ide::location::{node_file, node_line};
use csi_ide::SourcePaths;

use crate::Failure;

pub struct SliceRequest {
    /// `FILE:LINE`; `None` = the crash point.
    pub line: Option<String>,
    pub variables: Vec<String>,
    pub thread: usize,
    pub stats: bool,
}

pub fn run(
    crash: &Crash,
    cov: &Coverages,
    req: &SliceRequest,
) -> Result<(SlicePair, Option<SliceStats>), Failure> {
    let g = &crash.graph;
    let report = &crash.report;
    if req.thread >= report.threads.len() {
        return Err(Failure::BadInput(format!(
            "--thread {}: the crash has {} thread(s) with program frames",
            req.thread,
            report.threads.len()
        )));
    }
    let variables = (!req.variables.is_empty()).then(|| req.variables.clone());
    let criterion = match &req.line {
        None => {
            let mut c = crash_criterion(report, req.thread).ok_or_else(|| {
                Failure::BadInput(
                    "no frame of the thread is in the program graph: give --line".into(),
                )
            })?;
            c.variables = variables;
            c
        }
        Some(loc) => {
            let nodes = crate::locate(g, loc)?;
            let line = loc.rsplit_once(':').and_then(|(_, l)| l.parse().ok());
            nodes_criterion(g, report, req.thread, nodes, variables, line)
        }
    };
    let mut slicer = Slicer::new(g);
    let pair = slicer.slice_pair(g, report, cov, criterion);
    let stats = if req.stats {
        slicer.reduction_stats(g, report, cov)
    } else {
        None
    };
    Ok((pair, stats))
}

fn lines_json(lines: &BTreeMap<String, BTreeSet<u32>>) -> serde_json::Value {
    lines
        .iter()
        .map(|(f, ls)| (f.clone(), serde_json::json!(ls)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

pub fn json(crash: &Crash, pair: &SlicePair, stats: Option<&SliceStats>) -> String {
    let g = &crash.graph;
    let c = &pair.criterion;
    let mut crit_lines: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for &n in &c.nodes {
        if let Some(f) = g.file_of(n) {
            crit_lines
                .entry(g.file_name(f).to_string())
                .or_default()
                .extend(g.node(n).lines());
        }
    }
    let function = c
        .nodes
        .first()
        .map(|&n| g.function(g.node(n).function).name.clone());
    let mut v = serde_json::json!({
        "criterion": {
            "thread": c.thread,
            "frame": c.frame,
            "function": function,
            "lines": lines_json(&crit_lines),
            "variables": c.variables,
        },
        "unknown_variables": pair.restricted.unknown_variables,
        "restricted": lines_json(&pair.restricted.lines),
        "unrestricted": lines_json(&pair.unrestricted.lines),
        "restricted_lines": pair.restricted.line_count(),
        "unrestricted_lines": pair.unrestricted.line_count(),
        "restricted_vertices": pair.restricted.vertices_with_lines,
        "unrestricted_vertices": pair.unrestricted.vertices_with_lines,
        "reduction": (pair.reduction() * 1000.0).round() / 1000.0,
    });
    if let Some(s) = stats {
        v["stats"] = serde_json::to_value(crate::wire::Stats::from(s)).expect("plain data");
    }
    let mut s = serde_json::to_string_pretty(&v).expect("plain data");
    s.push('\n');
    s
}

pub fn text(
    crash: &Crash,
    pair: &SlicePair,
    stats: Option<&SliceStats>,
    sources: &SourcePaths,
) -> String {
    let g = &crash.graph;
    let c = &pair.criterion;
    let mut out = String::new();
    let here = c
        .nodes
        .first()
        .map(|&n| {
            format!(
                "{}:{} in {}()",
                node_file(g, n).unwrap_or("?"),
                node_line(g, n).unwrap_or(0),
                g.function(g.node(n).function).name
            )
        })
        .unwrap_or_else(|| "?".into());
    let ctx = match c.frame {
        Some(k) => format!("frame #{k} of thread {}", c.thread),
        None => "all calling contexts".into(),
    };
    let vars = match &c.variables {
        Some(v) => v.join(", "),
        None => "every variable used there".into(),
    };
    let _ = writeln!(out, "slice from {here} ({ctx}; {vars})");
    if !pair.restricted.unknown_variables.is_empty() {
        let _ = writeln!(
            out,
            "  note: not used on that line: {}",
            pair.restricted.unknown_variables.join(", ")
        );
    }
    let plural = |n: usize| if n == 1 { "line" } else { "lines" };
    let (r, u) = (pair.restricted.line_count(), pair.unrestricted.line_count());
    if r == 0
        && u > 0
        && pair.restricted.unknown_variables.len() < c.variables.as_ref().map_or(1, Vec::len)
    {
        let _ = writeln!(
            out,
            "  note: the traces show this code did not run in this run"
        );
    }
    let _ = writeln!(
        out,
        "restricted by the crash's traces: {r} {}; static slice: {u} {} ({:.0} % fewer)\n",
        plural(r),
        plural(u),
        pair.reduction() * 100.0
    );
    let files: BTreeSet<&String> = pair
        .restricted
        .lines
        .keys()
        .chain(pair.unrestricted.lines.keys())
        .collect();
    for file in files {
        let source = crate::output::source_text(sources, &crash.exe, file);
        let _ = writeln!(out, "{file}");
        let empty = BTreeSet::new();
        let r = pair.restricted.lines.get(file).unwrap_or(&empty);
        let u = pair.unrestricted.lines.get(file).unwrap_or(&empty);
        for &l in r.union(u) {
            let mark = if r.contains(&l) { "●" } else { "○" };
            let text = source
                .as_ref()
                .and_then(|s| s.get(l as usize - 1))
                .map(String::as_str)
                .unwrap_or("")
                .trim_end();
            let _ = writeln!(out, "  {mark} {l:>5}  {text}");
        }
    }
    let _ = writeln!(
        out,
        "\n● in the restricted slice   ○ only in the static slice"
    );
    if let Some(s) = stats {
        let _ = writeln!(
            out,
            "\nslice sizes (SDG vertices with a line; dissertation Figs. 5.12-5.13):"
        );
        let pct = |a: usize, t: usize| {
            if t == 0 {
                0.0
            } else {
                100.0 * a as f64 / t as f64
            }
        };
        let _ = writeln!(
            out,
            "  interprocedural: restricted {} ({:.1} %), static {} ({:.1} %) of {}",
            s.restricted,
            pct(s.restricted, s.total),
            s.unrestricted,
            pct(s.unrestricted, s.total),
            s.total
        );
        for f in &s.frames {
            let _ = writeln!(
                out,
                "  #{:<3} {:<24} restricted {} ({:.1} %), static {} ({:.1} %) of {}",
                f.frame,
                f.function,
                f.restricted,
                pct(f.restricted, f.total),
                f.unrestricted,
                pct(f.unrestricted, f.total),
                f.total
            );
        }
    }
    out
}
