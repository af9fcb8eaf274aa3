//! What the editor shows of a session, as plain data: in a file, the lines where frames stopped,
//! the selected frame's path steps and branch outcomes, every line's status, each function's
//! frames with their line counts; for hovers, the variable under the cursor, a frame's call
//! sites, and the evidence for a line's status. Lines are the session's (1-based) and files
//! are its keys; nothing here knows LSP: csi-lsp's `to_proto` only turns these into hints,
//! lenses and hovers.

use std::collections::BTreeMap;

use csi_analysis::FileLines;
use csi_model::{Coverage, LineStatus, NodeKind};

use csi_dump::dwarf::Variable;

use crate::functions::FunctionView;
pub use crate::functions::LineCounts;
use crate::location::node_line;
use crate::session::{FrameView, Selection, Session};

/// A line of the file where frames stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameMark {
    /// Where the crashing thread stopped: its innermost frame with a line, `frame`; `callee`
    /// is the function of the frame below it (none when `frame` is 0, `??` when unknown).
    Crash {
        line: u32,
        thread: usize,
        frame: usize,
        callee: Option<String>,
    },
    /// Frames of one thread stopped on one line calling one function (`callee`, as a call:
    /// `descend()`), innermost first: several in deep recursion.
    Calls {
        line: u32,
        thread: usize,
        callee: String,
        frames: Vec<usize>,
    },
}

/// Every line of the file where a frame stopped: the crash points (thread by thread), then the
/// calls by line, thread and callee.
pub fn frame_marks(s: &Session, keys: &[&str]) -> Vec<FrameMark> {
    let in_file = |f: &Option<String>| f.as_deref().is_some_and(|f| keys.contains(&f));
    let callee_of = |frames: &[FrameView], k: usize| {
        let callee = frames
            .get(k.wrapping_sub(1))
            .and_then(|x| x.function.as_deref())
            .unwrap_or("??");
        csi_model::names::call_form(callee)
    };
    let mut marks = Vec::new();
    let mut calls: BTreeMap<(u32, usize, String), Vec<usize>> = BTreeMap::new();
    for (ti, t) in s.threads.iter().enumerate() {
        let first_with_line = t.frames.iter().position(|x| x.line.is_some());
        for (k, f) in t.frames.iter().enumerate() {
            let (Some(line), true) = (f.line, in_file(&f.file)) else {
                continue;
            };
            if t.crashed && Some(k) == first_with_line {
                marks.push(FrameMark::Crash {
                    line,
                    thread: ti,
                    frame: k,
                    callee: (k > 0).then(|| callee_of(&t.frames, k)),
                });
                continue;
            }
            calls
                .entry((line, ti, callee_of(&t.frames, k)))
                .or_default()
                .push(k);
        }
    }
    marks.extend(
        calls
            .into_iter()
            .map(|((line, thread, callee), frames)| FrameMark::Calls {
                line,
                thread,
                callee,
                frames,
            }),
    );
    marks
}

impl FrameMark {
    pub fn line(&self) -> u32 {
        match self {
            FrameMark::Crash { line, .. } | FrameMark::Calls { line, .. } => *line,
        }
    }
}

/// The selected frame's path steps in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSteps {
    /// Steps of the whole path.
    pub of: usize,
    /// The current step (0-based).
    pub current: usize,
    /// Line → the steps on it (1-based step numbers, oldest first).
    pub by_line: BTreeMap<u32, Vec<usize>>,
}

/// The selected frame's path steps in the file (`None` when no frame is selected).
pub fn path_steps(s: &Session, sel: Selection, keys: &[&str]) -> Option<PathSteps> {
    let f = s.frame(sel)?;
    let n = f.path.len();
    let mut by_line: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, step) in f.path.iter().enumerate() {
        if keys.contains(&step.file.as_str()) {
            by_line.entry(step.line).or_default().push(i + 1);
        }
    }
    Some(PathSteps {
        of: n,
        current: sel.step.unwrap_or(n.saturating_sub(1)),
        by_line,
    })
}

/// A conditional of the selected frame's function that ran in its activation, and where it
/// went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchOutcome {
    /// The conditional's (last) line.
    pub line: u32,
    pub targets: Vec<BranchTarget>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchTarget {
    /// The successor's first line; `None`: it has none (the function's exit).
    pub line: Option<u32>,
    /// Whether it ran in the activation (`None`: the analysis has no answer).
    pub ran: Option<Coverage>,
}

/// The branch outcomes of the selected frame in the file, in the order of its function's
/// nodes (none when the frame has no analysis).
pub fn branch_outcomes(s: &Session, sel: Selection, keys: &[&str]) -> Vec<BranchOutcome> {
    let Some(f) = s.frame(sel) else {
        return Vec::new();
    };
    let (Some(func), Some(status)) = (f.graph_function, s.frame_status(f)) else {
        return Vec::new();
    };
    let g = &s.graph;
    let mut out = Vec::new();
    for &n in &g.function(func).nodes {
        let succs = &g.succs[n as usize];
        if succs.len() < 2 || g.node(n).kind == NodeKind::Entry {
            continue;
        }
        let Some(line) = g.node(n).lines().last() else {
            continue;
        };
        if !g.file_of(n).is_some_and(|x| keys.contains(&g.file_name(x))) {
            continue;
        }
        if status.get(&n) != Some(&Coverage::Yes) {
            continue;
        }
        out.push(BranchOutcome {
            line,
            targets: succs
                .iter()
                .map(|&t| BranchTarget {
                    line: node_line(g, t),
                    ran: status.get(&t).copied(),
                })
                .collect(),
        });
    }
    out
}

/// A line's status, globally and in the selected frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineState {
    pub line: u32,
    pub global: Option<LineStatus>,
    pub local: Option<LineStatus>,
}

/// The status of every line of a file key with one (must lines, then may, then never).
pub fn line_states(s: &Session, sel: Selection, key: &str) -> Vec<LineState> {
    let (global, local) = s.lines_of(key, sel);
    let Some(global) = global else {
        return Vec::new();
    };
    global
        .must
        .iter()
        .chain(&global.may)
        .chain(&global.never)
        .map(|&line| LineState {
            line,
            global: global.status(line),
            local: local.and_then(|l| l.status(line)),
        })
        .collect()
}

/// A document's lines, whatever file keys name it: the global answer and, when the selected
/// frame has an analysis, the frame's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocumentLines {
    pub global: FileLines,
    /// The selected frame's (thread, frame) and lines.
    pub frame: Option<(usize, usize, FileLines)>,
}

/// The lines of the keys concatenated, key after key.
/// The line states of the file keys that name one document, line by line as the analysis
/// projects nodes (`csi_analysis::project_lines`): must if some key's is, never only if every
/// key that has the line says never, else may. Two keys can hold one line (a header reached
/// through paths that do not normalize to one name): one key's `never` must not hide
/// another's `must` or `may`.
fn merged(keys: &[&str], pick: impl Fn(&str) -> Option<FileLines>) -> FileLines {
    use csi_model::LineStatus;
    let mut by_line: BTreeMap<u32, (Option<LineStatus>, bool)> = BTreeMap::new();
    for k in keys {
        let Some(l) = pick(k) else { continue };
        for (lines, status) in [
            (&l.must, LineStatus::Must),
            (&l.may, LineStatus::May),
            (&l.never, LineStatus::Never),
        ] {
            for &line in lines {
                let e = by_line.entry(line).or_default();
                e.0 = Some(match (e.0, status) {
                    (Some(LineStatus::Must), _) | (_, LineStatus::Must) => LineStatus::Must,
                    (Some(LineStatus::May), _) | (_, LineStatus::May) => LineStatus::May,
                    _ => LineStatus::Never,
                });
            }
        }
        for &line in &l.partial {
            by_line.entry(line).or_default().1 = true;
        }
    }
    let mut acc = FileLines::default();
    for (line, (status, partial)) in by_line {
        match status {
            Some(LineStatus::Must) => {
                acc.must.push(line);
                if partial {
                    acc.partial.push(line);
                }
            }
            Some(LineStatus::May) => acc.may.push(line),
            Some(LineStatus::Never) => acc.never.push(line),
            _ => {}
        }
    }
    acc
}

/// The lines of a document (the file keys that resolve to it).
pub fn document_lines(s: &Session, sel: Selection, keys: &[&str]) -> DocumentLines {
    DocumentLines {
        global: merged(keys, |k| s.global.get(k).cloned()),
        frame: s.frame(sel).and_then(|f| f.analysis).map(|_| {
            let local = merged(keys, |k| s.lines_of(k, sel).1.cloned());
            (sel.thread, sel.frame, local)
        }),
    }
}

/// The never-executed lines of a document, sorted, each once.
pub fn never_lines(s: &Session, keys: &[&str]) -> Vec<u32> {
    merged(keys, |k| s.global.get(k).cloned()).never
}

/// Frames of one function that get their own lens.
pub const MAX_FRAME_LENSES: usize = 5;

/// A function of the file with its frames on the stacks and its global counts.
#[derive(Clone, Debug)]
pub struct FunctionFrames<'a> {
    pub function: &'a FunctionView,
    /// Its frames, thread by thread, innermost first: the first [`MAX_FRAME_LENSES`] and the
    /// selected one.
    pub frames: Vec<FunctionFrame>,
    /// Its frames not in `frames` (deep recursion).
    pub more: usize,
    pub global: LineCounts,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionFrame {
    pub thread: usize,
    pub frame: usize,
    pub selected: bool,
    /// The function's lines in this activation.
    pub local: LineCounts,
    pub path_steps: usize,
}

/// Every function of the file, in the session's order.
pub fn function_frames<'a>(
    s: &'a Session,
    sel: Selection,
    keys: &[&str],
) -> Vec<FunctionFrames<'a>> {
    let mut out = Vec::new();
    for f in s
        .functions
        .iter()
        .filter(|f| keys.contains(&f.file.as_str()))
    {
        let mut frames = Vec::new();
        let mut more = 0usize;
        for (ti, t) in s.threads.iter().enumerate() {
            for (k, fr) in t.frames.iter().enumerate() {
                if fr.graph_function != Some(f.id) {
                    continue;
                }
                let selected = sel.thread == ti && sel.frame == k;
                if frames.len() >= MAX_FRAME_LENSES && !selected {
                    more += 1;
                    continue;
                }
                let local = fr
                    .analysis
                    .and_then(|a| s.frame_lines.get(a))
                    .and_then(|m| m.get(&f.file));
                frames.push(FunctionFrame {
                    thread: ti,
                    frame: k,
                    selected,
                    local: LineCounts::of(local, f.first, f.last),
                    path_steps: fr.path.len(),
                });
            }
        }
        out.push(FunctionFrames {
            function: f,
            frames,
            more,
            global: LineCounts::of(s.global.get(&f.file), f.first, f.last),
        });
    }
    out
}

// ---- Hover ----

/// The variable `name` hovered on a line: of the selected frame when it holds the line, else of
/// the frames stopped on the line, else of the frames whose function holds it (innermost scope
/// first: a block's local shadows an argument of the same name).
pub fn variable_at<'a>(
    s: &'a Session,
    sel: Selection,
    keys: &[&str],
    line1: u32,
    name: &str,
) -> Option<(usize, usize, &'a Variable)> {
    let in_file = |f: &FrameView| f.file.as_deref().is_some_and(|x| keys.contains(&x));
    let holds_line = |f: &FrameView| {
        in_file(f)
            && (f.line == Some(line1)
                || s.functions.iter().any(|fv| {
                    Some(fv.id) == f.graph_function && fv.first <= line1 && line1 <= fv.last
                }))
    };
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    if s.frame(sel).is_some_and(holds_line) {
        candidates.push((sel.thread, sel.frame));
    }
    for pass_on_line in [true, false] {
        for (ti, t) in s.threads.iter().enumerate() {
            for (k, f) in t.frames.iter().enumerate() {
                let ok = if pass_on_line {
                    in_file(f) && f.line == Some(line1)
                } else {
                    holds_line(f)
                };
                if ok && !candidates.contains(&(ti, k)) {
                    candidates.push((ti, k));
                }
            }
        }
    }
    candidates.into_iter().find_map(|(ti, k)| {
        let f = &s.threads[ti].frames[k];
        let v = f.variables.iter().rev().find(|v| v.name == name)?;
        Some((ti, k, v))
    })
}

/// Frames (thread, frame) stopped on a line of the file.
pub fn frames_on_line(s: &Session, keys: &[&str], line1: u32) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (ti, t) in s.threads.iter().enumerate() {
        for (k, f) in t.frames.iter().enumerate() {
            if f.line == Some(line1) && f.file.as_deref().is_some_and(|x| keys.contains(&x)) {
                out.push((ti, k));
            }
        }
    }
    out
}

/// A call site of a frame's activation and whether it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The called function; `None`: an indirect call.
    pub name: Option<String>,
    /// The call's line (a call-site node ends with its call).
    pub line: u32,
    pub ran: Coverage,
}

/// The call sites of a frame's activation, by node (`None` when the frame has no analysis).
pub fn call_sites(s: &Session, f: &FrameView) -> Option<Vec<CallSite>> {
    let status = s.frame_status(f)?;
    let g = &s.graph;
    Some(
        status
            .iter()
            .filter(|(n, _)| g.node(**n).kind == NodeKind::CallSite)
            .filter_map(|(n, c)| {
                let call = g.node(*n).call.as_ref()?;
                Some(CallSite {
                    name: call.name.clone(),
                    line: g.node(*n).lines().last()?,
                    ran: *c,
                })
            })
            .collect(),
    )
}

/// A function declared on a line, its global counts and its frames on every stack.
#[derive(Clone, Debug)]
pub struct FunctionOnStacks<'a> {
    pub function: &'a FunctionView,
    pub global: LineCounts,
    /// (thread, its frames of the function innermost first) for threads that have some.
    pub frames: Vec<(usize, Vec<usize>)>,
}

/// The functions of the file declared on a line.
pub fn functions_declared_on<'a>(
    s: &'a Session,
    keys: &[&str],
    line1: u32,
) -> Vec<FunctionOnStacks<'a>> {
    s.functions
        .iter()
        .filter(|f| f.line == line1 && keys.contains(&f.file.as_str()))
        .map(|f| FunctionOnStacks {
            function: f,
            global: LineCounts::of(s.global.get(&f.file), f.first, f.last),
            frames: s
                .threads
                .iter()
                .enumerate()
                .map(|(ti, t)| {
                    let ks: Vec<usize> = t
                        .frames
                        .iter()
                        .enumerate()
                        .filter(|(_, fr)| fr.graph_function == Some(f.id))
                        .map(|(k, _)| k)
                        .collect();
                    (ti, ks)
                })
                .filter(|(_, ks)| !ks.is_empty())
                .collect(),
        })
        .collect()
}

/// Why a line has its status: what the crash recorded about its code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// A call site's coverage bit: the call `name` ran or not.
    CallSite { name: String, ran: bool },
    /// Another coverage bit of the line's code: set or clear.
    CoverageBit(bool),
    /// The line's code is on a frame's path trace.
    OnPathTrace,
}

/// A line's status, globally and in the selected frame, and the evidence for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineEvidence {
    pub global: Option<LineStatus>,
    pub local: Option<LineStatus>,
    /// Node by node of the line, each piece once in a row.
    pub evidence: Vec<Evidence>,
}

/// The status of a line and why, from the first file key that gives it one (`None`: none
/// does).
pub fn line_evidence(
    s: &Session,
    sel: Selection,
    keys: &[&str],
    line1: u32,
) -> Option<LineEvidence> {
    let key = keys
        .iter()
        .find(|k| s.global.get(**k).is_some_and(|l| l.status(line1).is_some()))?;
    let (global, local) = s.lines_of(key, sel);
    let g = &s.graph;
    let mut evidence = Vec::new();
    for n in csi_analysis::nodes_on_line(g, key, line1) {
        if let Some(&ran) = s.report.global_coverage.get(&n) {
            evidence.push(match g.node(n).call.as_ref().and_then(|c| c.name.clone()) {
                Some(name) => Evidence::CallSite { name, ran },
                None => Evidence::CoverageBit(ran),
            });
        }
        if s.threads.iter().any(|t| {
            t.frames
                .iter()
                .any(|f| f.path.iter().any(|st| st.node == n))
        }) {
            evidence.push(Evidence::OnPathTrace);
        }
    }
    evidence.dedup();
    Some(LineEvidence {
        global: global.and_then(|l| l.status(line1)),
        local: local.and_then(|l| l.status(line1)),
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two keys naming one document: a line one key says never ran and the other may have
    /// is may; one that some key says ran is must; never only where every key says so.
    #[test]
    fn keys_of_one_document_merge_line_by_line() {
        let a = FileLines {
            must: vec![4],
            may: vec![],
            never: vec![3, 6],
            partial: vec![4],
        };
        let b = FileLines {
            must: vec![],
            may: vec![3],
            never: vec![4, 5, 6],
            partial: vec![],
        };
        let m = merged(&["a", "b"], |k| {
            Some(if k == "a" { a.clone() } else { b.clone() })
        });
        assert_eq!(m.must, vec![4]);
        assert_eq!(m.partial, vec![4]);
        assert_eq!(m.may, vec![3]);
        assert_eq!(m.never, vec![5, 6]);
    }
}
