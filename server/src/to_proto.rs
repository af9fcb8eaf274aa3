//! The one place that turns session data and its [`csi_ide::views`] into LSP values and the
//! [`crate::lsp_ext`] types: positions, labels, markdown. Lines are 1-based in the session and
//! 0-based in LSP.

use std::collections::BTreeMap;

use csi_analysis::FileLines;
use csi_model::{Coverage, LineStatus};
use serde_json::json;
use tower_lsp_server::ls_types::*;

use crate::lsp_ext;
use csi_ide::session::{FrameView, Selection, Session};
use csi_ide::views;

/// Text of an open or on-disk document, for placing hints at line ends.
pub struct Text<'a> {
    text: &'a str,
    /// UTF-16 length of every line, computed on first use.
    lens: std::cell::OnceCell<Vec<u32>>,
}

impl<'a> Text<'a> {
    pub fn new(text: &'a str) -> Self {
        Text {
            text,
            lens: std::cell::OnceCell::new(),
        }
    }

    fn line_len(&self, line0: u32) -> u32 {
        let lens = self.lens.get_or_init(|| {
            self.text
                .lines()
                .map(|l| l.encode_utf16().count() as u32)
                .collect()
        });
        lens.get(line0 as usize).copied().unwrap_or(0)
    }
}

fn eol(text: &Text<'_>, line1: u32) -> Position {
    let l0 = line1.saturating_sub(1);
    Position::new(l0, text.line_len(l0))
}

pub fn uri_of(s: &Session, key: &str) -> Option<Uri> {
    Uri::from_file_path(s.sources.get(key)?)
}

/// [`uri_of`] as the wire has it.
fn uri_str(s: &Session, key: &str) -> Option<String> {
    uri_of(s, key).map(|u| u.as_str().to_string())
}

fn signal_text(s: &Session) -> String {
    match &s.signal {
        Some(sig) => match sig.fault_address {
            Some(a) => format!("{} at {a:#x}", sig.name),
            None => sig.name.clone(),
        },
        None => "stopped".into(),
    }
}

fn hint(pos: Position, label: String, tooltip: Option<String>) -> InlayHint {
    InlayHint {
        position: pos,
        label: InlayHintLabel::String(label),
        kind: None,
        text_edits: None,
        tooltip: tooltip.map(InlayHintTooltip::String),
        padding_left: Some(true),
        padding_right: None,
        data: None,
    }
}

fn status_word(s: Option<LineStatus>) -> &'static str {
    match s {
        Some(LineStatus::Must) => "must",
        Some(LineStatus::May) => "may",
        Some(LineStatus::Never) => "never",
        _ => "",
    }
}

/// Inlay hints of one file within `range` (0-based lines).
pub fn inlay_hints(
    s: &Session,
    sel: Selection,
    keys: &[&str],
    text: &Text<'_>,
    range: Range,
    status_hints: bool,
) -> Vec<InlayHint> {
    let in_range = |l1: u32| {
        let l0 = l1.saturating_sub(1);
        l0 >= range.start.line && l0 <= range.end.line
    };
    let thread_suffix = |ti: usize| {
        if s.threads.len() > 1 {
            format!(" (thread {})", ti + 1)
        } else {
            String::new()
        }
    };
    let mut out = Vec::new();
    // Crash point and every frame's current line; frames stopped on the same line (deep
    // recursion) share one hint.
    for mark in views::frame_marks(s, keys) {
        if !in_range(mark.line()) {
            continue;
        }
        let label = match &mark {
            views::FrameMark::Crash {
                thread,
                frame: k,
                callee: None,
                ..
            } => format!(
                "⚡ {} — frame #{k}{}",
                signal_text(s),
                thread_suffix(*thread)
            ),
            views::FrameMark::Crash {
                thread,
                frame: k,
                callee: Some(callee),
                ..
            } => format!(
                "⚡ {} in {callee} — frame #{k}{}",
                signal_text(s),
                thread_suffix(*thread)
            ),
            views::FrameMark::Calls {
                thread,
                callee,
                frames: ks,
                ..
            } => {
                let callee = format!("{callee}{}", thread_suffix(*thread));
                match ks.as_slice() {
                    [k] => format!("frame #{k} → {callee}"),
                    [a, b] => format!("frames #{a}, #{b} → {callee}"),
                    _ => format!(
                        "frames #{}, #{} … #{} ({}×) → {callee}",
                        ks[0],
                        ks[1],
                        ks[ks.len() - 1],
                        ks.len()
                    ),
                }
            }
        };
        out.push(hint(eol(text, mark.line()), label, None));
    }
    // Path steps of the selected frame.
    if let Some(steps) = views::path_steps(s, sel, keys) {
        let n = steps.of;
        for (line, steps_here) in steps.by_line.into_iter().filter(|(l, _)| in_range(*l)) {
            let shown: Vec<String> = steps_here
                .iter()
                .map(|&i| {
                    if i == steps.current + 1 {
                        format!("▶{i}")
                    } else {
                        i.to_string()
                    }
                })
                .collect();
            let label = if shown.len() > 6 {
                format!(
                    "steps {}…{} ({}×)/{n}",
                    shown[0],
                    shown[shown.len() - 1],
                    shown.len()
                )
            } else {
                format!("step {}/{n}", shown.join(","))
            };
            out.push(hint(eol(text, line), label, None));
        }
    }
    // Branch outcomes in the selected frame's function.
    for b in views::branch_outcomes(s, sel, keys) {
        if !in_range(b.line) {
            continue;
        }
        let parts: Vec<String> = b
            .targets
            .iter()
            .map(|t| {
                let target = t.line.map_or("exit".to_string(), |l| format!("line {l}"));
                let mark = match t.ran {
                    Some(Coverage::Yes) => "✔",
                    Some(Coverage::No) => "✘",
                    _ => "?",
                };
                format!("{target} {mark}")
            })
            .collect();
        out.push(hint(
            eol(text, b.line),
            format!("→ {}", parts.join(" · ")),
            Some("branch outcome in this frame".into()),
        ));
    }
    if status_hints {
        for key in keys {
            for st in views::line_states(s, sel, key) {
                if !in_range(st.line) {
                    continue;
                }
                let g = status_word(st.global);
                let label = match st.local {
                    Some(ls) => format!("{g}/{}", status_word(Some(ls))),
                    None => g.to_string(),
                };
                out.push(InlayHint {
                    position: Position::new(st.line - 1, 0),
                    label: InlayHintLabel::String(label),
                    kind: None,
                    text_edits: None,
                    tooltip: Some(InlayHintTooltip::String(
                        "CSI status: global/this frame".into(),
                    )),
                    padding_left: None,
                    padding_right: Some(true),
                    data: None,
                });
            }
        }
    }
    out.sort_by_key(|h| (h.position.line, h.position.character));
    out
}

/// Code lenses above every function of the file: its frames with local counts, and the
/// global counts.
pub fn code_lenses(s: &Session, sel: Selection, keys: &[&str]) -> Vec<CodeLens> {
    let mut out = Vec::new();
    for ff in views::function_frames(s, sel, keys) {
        let f = ff.function;
        let range = Range::new(Position::new(f.line - 1, 0), Position::new(f.line - 1, 0));
        for fr in &ff.frames {
            let views::LineCounts {
                must: m,
                may: y,
                never: n,
            } = fr.local;
            let title = format!(
                "{}frame #{} (thread {}) · must {m} · may {y} · never {n}",
                if fr.selected { "▶ " } else { "" },
                fr.frame,
                fr.thread + 1
            );
            out.push(CodeLens {
                range,
                command: Some(Command {
                    title,
                    command: "csi.selectFrame".into(),
                    arguments: Some(vec![json!(lsp_ext::SelectFrameParams {
                        thread: fr.thread,
                        frame: fr.frame,
                        inline: None,
                    })]),
                }),
                data: None,
            });
            if fr.selected && fr.path_steps > 0 {
                out.push(CodeLens {
                    range,
                    command: Some(Command {
                        title: format!("◀ step back ({} path steps)", fr.path_steps),
                        command: "csi.stepPath".into(),
                        arguments: Some(vec![json!(lsp_ext::StepPathParams { delta: -1 })]),
                    }),
                    data: None,
                });
            }
        }
        if ff.more > 0 {
            out.push(CodeLens {
                range,
                command: Some(Command {
                    title: format!("… {} more frames of {}", ff.more, f.name),
                    command: String::new(),
                    arguments: None,
                }),
                data: None,
            });
        }
        let views::LineCounts {
            must: m,
            may: y,
            never: n,
        } = ff.global;
        if ff.global.total() > 0 {
            out.push(CodeLens {
                range,
                command: Some(Command {
                    title: format!("global · must {m} · may {y} · never {n}"),
                    command: String::new(),
                    arguments: None,
                }),
                data: None,
            });
        }
    }
    out
}

/// Never-executed lines as faded hints.
pub fn diagnostics(s: &Session, keys: &[&str], text: &Text<'_>) -> Vec<Diagnostic> {
    views::never_lines(s, keys)
        .into_iter()
        .map(|l| Diagnostic {
            range: Range::new(Position::new(l - 1, 0), eol(text, l)),
            severity: Some(DiagnosticSeverity::HINT),
            code: None,
            code_description: None,
            source: Some("csi".into()),
            message: "never executed before the crash".into(),
            related_information: None,
            tags: Some(vec![DiagnosticTag::UNNECESSARY]),
            data: None,
        })
        .collect()
}

/// 0-based lines of the sets.
fn line_sets(l: &FileLines) -> lsp_ext::LineSets {
    let z = |v: &Vec<u32>| -> Vec<u32> { v.iter().map(|x| x - 1).collect() };
    lsp_ext::LineSets {
        must: z(&l.must),
        may: z(&l.may),
        never: z(&l.never),
        partial: z(&l.partial),
    }
}

/// `csi/lineStates` for one document (0-based lines): global states at the top level, the
/// selected frame's under `frame`.
pub fn line_states(
    s: &Session,
    sel: Selection,
    keys: &[&str],
    uri: &Uri,
    version: Option<i32>,
) -> lsp_ext::LineStatesParams {
    let lines = views::document_lines(s, sel, keys);
    lsp_ext::LineStatesParams {
        uri: uri.as_str().to_string(),
        version,
        lines: line_sets(&lines.global),
        frame: lines
            .frame
            .map(|(thread, frame, local)| lsp_ext::FrameLineStates {
                thread,
                frame,
                inline: sel.inline,
                lines: line_sets(&local),
            }),
        stale: false,
    }
}

/// `csi/lineStates` of a document edited since it was opened: no lines (they no longer
/// match the analysis).
pub fn stale_line_states(uri: &Uri, version: i32) -> lsp_ext::LineStatesParams {
    lsp_ext::LineStatesParams {
        uri: uri.as_str().to_string(),
        version: Some(version),
        lines: lsp_ext::LineSets::default(),
        frame: None,
        stale: true,
    }
}

fn frame(f: &FrameView, uris: &std::collections::HashMap<&str, Option<String>>) -> lsp_ext::Frame {
    lsp_ext::Frame {
        index: f.index,
        function: f.function.clone(),
        linkage_name: f.linkage_name.clone(),
        file: f.file.clone(),
        uri: f
            .file
            .as_deref()
            .and_then(|k| uris.get(k).cloned().flatten()),
        line: f.line.map(|l| l - 1),
        column: f.column.map(|c| c.saturating_sub(1)),
        module: f.module.clone(),
        pc: format!("{:#x}", f.pc),
        analysed: f.analysis.is_some(),
        path_steps: f.path.len(),
        inlined: f.inlined.iter().map(|i| frame(i, uris)).collect(),
    }
}

/// Frames per thread `csi/stack` returns unless asked for a range: the innermost ones and
/// the outermost few (deep recursion has thousands).
pub const STACK_PAGE: usize = 200;

/// `csi/stack`: threads → frames. Long stacks are cut to their innermost `STACK_PAGE - 20`
/// and outermost 20 frames, with `omitted: {from, to}`; `range: {thread, from, to}` fetches
/// any slice.
pub fn stack(
    s: &Session,
    sel: Selection,
    range: Option<lsp_ext::FrameRange>,
) -> lsp_ext::StackResult {
    let uris: std::collections::HashMap<&str, Option<String>> = s
        .threads
        .iter()
        .flat_map(|t| &t.frames)
        .flat_map(|f| std::iter::once(f).chain(&f.inlined))
        .filter_map(|f| f.file.as_deref())
        .map(|k| (k, uri_str(s, k)))
        .collect();
    // Negative bounds count as 0; bounds beyond the stack as its end.
    let index = |x: i64| usize::try_from(x.max(0)).unwrap_or(usize::MAX);
    let threads = s
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = t.frames.len();
            let (frames, omitted) = match range {
                Some(r) if index(r.thread) == i => {
                    let (from, to) = (index(r.from), index(r.to));
                    (
                        // Reversed or out-of-range requests get what lies in range (nothing).
                        t.frames[from.min(to).min(n)..to.min(n)]
                            .iter()
                            .map(|f| frame(f, &uris))
                            .collect(),
                        None,
                    )
                }
                Some(_) => (Vec::new(), None),
                None if n > STACK_PAGE => {
                    let head = STACK_PAGE - 20;
                    (
                        t.frames[..head]
                            .iter()
                            .chain(&t.frames[n - 20..])
                            .map(|f| frame(f, &uris))
                            .collect(),
                        Some(lsp_ext::Omitted {
                            from: head,
                            to: n - 20,
                        }),
                    )
                }
                None => (t.frames.iter().map(|f| frame(f, &uris)).collect(), None),
            };
            lsp_ext::Thread {
                index: i,
                tid: t.tid,
                crashed: t.crashed,
                frame_count: n,
                frames,
                omitted,
            }
        })
        .collect();
    lsp_ext::StackResult {
        title: s.title.clone(),
        signal: s.signal.as_ref().map(|sig| lsp_ext::Signal {
            signo: sig.signo,
            name: sig.name.clone(),
            code: sig.code,
            fault_address: sig.fault_address,
        }),
        selected: lsp_ext::Selected {
            thread: sel.thread,
            frame: sel.frame,
            step: sel.step,
            inline: sel.inline,
        },
        notices: s.notices.clone(),
        threads,
    }
}

/// `csi/pathTrace`: a frame's decoded path, oldest first (0-based lines).
pub fn path_trace(s: &Session, sel: Selection) -> Option<lsp_ext::PathTraceResult> {
    let f = s.frame(sel)?;
    Some(lsp_ext::PathTraceResult {
        thread: sel.thread,
        frame: sel.frame,
        inline: sel.inline,
        current: sel.step.unwrap_or(f.path.len().saturating_sub(1)),
        note: f.path_note.clone(),
        steps: f
            .path
            .iter()
            .map(|st| lsp_ext::PathStep {
                file: st.file.clone(),
                uri: uri_str(s, &st.file),
                line: st.line - 1,
            })
            .collect(),
    })
}

/// `csi/stepPath`: the selected frame's current step (`None` when it has none).
pub fn step(s: &Session, sel: Selection) -> Option<lsp_ext::StepResult> {
    let f = s.frame(sel)?;
    let i = sel.step?;
    let st = f.path.get(i)?;
    Some(lsp_ext::StepResult {
        step: i,
        of: f.path.len(),
        file: st.file.clone(),
        uri: uri_str(s, &st.file),
        line: st.line.saturating_sub(1),
    })
}

/// The instrumentation's own variables (csi-cc's path trace and coverage state): shown after
/// the program's, in a "CSI trace" part, so the values that matter come first.
pub fn is_instrumentation(name: &str) -> bool {
    ["__PT_", "__CC_", "__FC_"]
        .iter()
        .any(|p| name.starts_with(p))
}

fn var_line(v: &csi_dump::dwarf::Variable) -> String {
    let mut value = v.value.clone();
    if value.chars().count() > 120 {
        value = value.chars().take(117).collect::<String>() + "...";
    }
    let inl = v
        .inlined_in
        .as_deref()
        .map(|f| format!(" (in inlined {f})"))
        .unwrap_or_default();
    format!("    {} {} = {value}{inl}\n", v.type_name, v.name)
}

fn var_lines<'a>(vars: impl Iterator<Item = &'a csi_dump::dwarf::Variable>) -> String {
    vars.map(var_line).collect()
}

fn code_block(md: &mut String, title: &str, body: &str) {
    if !body.is_empty() {
        md.push_str(title);
        md.push_str(":\n```c\n");
        md.push_str(body);
        md.push_str("```\n");
    }
}

/// The C identifier at a 0-based UTF-16 column of a line (the cursor touching it on either
/// side), if any.
pub fn identifier_at(line: &str, character: u32) -> Option<&str> {
    let is_id = |c: char| c == '_' || c.is_ascii_alphanumeric();
    // The byte offset of the UTF-16 column (clamped to the line).
    let mut at = line.len();
    let mut units = 0u32;
    for (i, c) in line.char_indices() {
        if units >= character {
            at = i;
            break;
        }
        units += c.len_utf16() as u32;
    }
    let start = line[..at]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_id(c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = line[at..]
        .char_indices()
        .find(|&(_, c)| !is_id(c))
        .map_or(line.len(), |(i, _)| at + i);
    let word = &line[start..end];
    (!word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit())).then_some(word)
}

/// Hover on a name: the variable of that name in the frame stopped on this line (the selected
/// frame first), else in a frame whose function holds the line — its value at the crash.
fn variable_hover(
    s: &Session,
    sel: Selection,
    keys: &[&str],
    line1: u32,
    name: &str,
) -> Option<String> {
    let (ti, k, v) = views::variable_at(s, sel, keys, line1, name)?;
    let what = match v.kind {
        csi_dump::dwarf::VarKind::Parameter => "argument",
        csi_dump::dwarf::VarKind::Local => "local",
    };
    Some(format!(
        "`{name}` — {what} of **frame #{k}** `{}` (thread {}), at the crash\n```c\n{}```\n",
        s.threads[ti].frames[k].function.as_deref().unwrap_or("??"),
        ti + 1,
        var_line(v).trim_start()
    ))
}

/// Hover on a line: the hovered variable when the cursor is on a name of a frame's variable;
/// else the frame(s) stopped there with their variables (the program's first, the
/// instrumentation's last), or the line's status and the evidence for it.
pub fn hover(
    s: &Session,
    sel: Selection,
    keys: &[&str],
    line1: u32,
    word: Option<&str>,
) -> Option<Hover> {
    if let Some(md) = word.and_then(|w| variable_hover(s, sel, keys, line1, w)) {
        return Some(markdown_hover(md));
    }
    let mut md = String::new();
    for (ti, k) in views::frames_on_line(s, keys, line1) {
        let t = &s.threads[ti];
        let f = &t.frames[k];
        md.push_str(&format!(
            "**frame #{k}** `{}` — thread {} (tid {}){}\n\n",
            f.function.as_deref().unwrap_or("??"),
            ti + 1,
            t.tid,
            if t.crashed && k == 0 {
                format!(", **{}**", signal_text(s))
            } else if t.crashed {
                format!(", crashed with {}", signal_text(s))
            } else {
                String::new()
            }
        ));
        use csi_dump::dwarf::VarKind;
        let program = |kind: VarKind| {
            var_lines(
                f.variables
                    .iter()
                    .filter(move |v| v.kind == kind && !is_instrumentation(&v.name)),
            )
        };
        code_block(&mut md, "Arguments", &program(VarKind::Parameter));
        code_block(&mut md, "Locals", &program(VarKind::Local));
        if !f.path.is_empty() {
            let tail: Vec<String> = f
                .path
                .iter()
                .rev()
                .take(12)
                .rev()
                .map(|st| st.line.to_string())
                .collect();
            md.push_str(&format!(
                "Path trace ({} steps, last {}): {}\n\n",
                f.path.len(),
                tail.len(),
                tail.join(" → ")
            ));
        } else if let Some(n) = &f.path_note {
            md.push_str(&format!("Path trace: {n}\n\n"));
        }
        let covered: Vec<String> = views::call_sites(s, f)
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                let mark = match c.ran {
                    Coverage::Yes => "yes",
                    Coverage::No => "no",
                    Coverage::Maybe => "?",
                };
                let name = c.name.unwrap_or_else(|| "(indirect)".into());
                format!("{name}@{}: {mark}", c.line)
            })
            .collect();
        if !covered.is_empty() {
            md.push_str(&format!(
                "Call sites in this activation: {}\n\n",
                covered.join(", ")
            ));
        }
        code_block(
            &mut md,
            "CSI trace (the instrumentation's state)",
            &var_lines(f.variables.iter().filter(|v| is_instrumentation(&v.name))),
        );
    }
    if md.is_empty() {
        // On a function's declaration: its frames, and its counts globally.
        for f in views::functions_declared_on(s, keys, line1) {
            md.push_str(&format!("**{}**", f.function.name));
            let views::LineCounts {
                must: m,
                may: y,
                never: n,
            } = f.global;
            md.push_str(&format!(
                " — globally: must {m} · may {y} · never {n} lines\n\n"
            ));
            for (ti, ks) in f.frames {
                let ks: Vec<String> = ks.iter().take(20).map(|k| format!("#{k}")).collect();
                md.push_str(&format!(
                    "On the stack of thread {} as frame {}\n\n",
                    ti + 1,
                    ks.join(", ")
                ));
            }
        }
    }
    if md.is_empty() {
        // Status of the line and why.
        let ev = views::line_evidence(s, sel, keys, line1)?;
        md.push_str(&format!(
            "CSI: **{}** before the crash",
            status_word(ev.global)
        ));
        if let Some(ls) = ev.local {
            md.push_str(&format!(
                " · in frame #{}: **{}**",
                sel.frame,
                status_word(Some(ls))
            ));
        }
        md.push_str("\n\n");
        let mut why: Vec<String> = ev
            .evidence
            .iter()
            .map(|e| match e {
                views::Evidence::CallSite { name, ran } => format!(
                    "call site `{name}()` covered: {}",
                    if *ran { "yes" } else { "no" }
                ),
                views::Evidence::CoverageBit(ran) => {
                    format!("coverage bit: {}", if *ran { "set" } else { "clear" })
                }
                views::Evidence::OnPathTrace => "on a frame's path trace".into(),
            })
            .collect();
        if why.is_empty() {
            why.push(match ev.global {
                Some(LineStatus::Never) => {
                    "no execution consistent with the stack and traces reaches it".into()
                }
                Some(LineStatus::Must) => {
                    "every execution consistent with the crash runs it".into()
                }
                _ => "the traces do not decide it".into(),
            });
        }
        md.push_str(&format!("Why: {}", why.join("; ")));
    }
    Some(markdown_hover(md))
}

fn markdown_hover(md: String) -> Hover {
    Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: md,
        }),
        range: None,
    }
}

/// `csi/slice`'s result (docs/protocol.md); lines 0-based.
pub fn slice(s: &Session, sl: &csi_ide::session::ShownSlice) -> lsp_ext::SliceResult {
    let files = |m: &BTreeMap<String, std::collections::BTreeSet<u32>>| -> Vec<lsp_ext::SliceFile> {
        m.iter()
            .map(|(k, ls)| lsp_ext::SliceFile {
                uri: uri_str(s, k),
                file: k.clone(),
                lines: ls.iter().map(|l| l - 1).collect(),
            })
            .collect()
    };
    let (file, line) = match &sl.criterion {
        Some((f, l)) => (Some(f.clone()), Some(l - 1)),
        None => (None, None),
    };
    lsp_ext::SliceResult {
        criterion: lsp_ext::SliceCriterion {
            uri: file.as_deref().and_then(|f| uri_str(s, f)),
            file,
            line,
            function: sl.function.clone(),
            thread: sl.thread,
            frame: sl.frame,
            variables: sl.variables.clone(),
        },
        unknown_variables: sl.unknown_variables.clone(),
        restricted: files(&sl.restricted),
        unrestricted: files(&sl.unrestricted),
        restricted_lines: sl.restricted_lines,
        unrestricted_lines: sl.unrestricted_lines,
        reduction: (sl.reduction * 1000.0).round() / 1000.0,
    }
}

/// `◆ slice` at the end of every restricted-slice line of the document.
pub fn slice_hints(
    sl: &csi_ide::session::ShownSlice,
    keys: &[&str],
    text: &Text<'_>,
    range: Range,
) -> Vec<InlayHint> {
    let mut lines: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
    for k in keys {
        if let Some(ls) = sl.restricted.get(*k) {
            lines.extend(ls);
        }
    }
    lines
        .into_iter()
        .filter(|&l1| {
            let l0 = l1.saturating_sub(1);
            l0 >= range.start.line && l0 <= range.end.line
        })
        .map(|l1| {
            hint(
                eol(text, l1),
                "◆ slice".into(),
                Some("may have affected the slice criterion in this run (restricted slice)".into()),
            )
        })
        .collect()
}

/// The lens above the criterion line: sizes and reduction; clicking hides the slice.
pub fn slice_lens(sl: &csi_ide::session::ShownSlice, keys: &[&str]) -> Option<CodeLens> {
    let (k, l1) = sl.criterion.as_ref()?;
    if !keys.contains(&k.as_str()) {
        return None;
    }
    // The percentage from the same rounded ratio `csi/slice` returns.
    let title = format!(
        "slice: {} line{} (static {}, −{:.0} %) · hide",
        sl.restricted_lines,
        if sl.restricted_lines == 1 { "" } else { "s" },
        sl.unrestricted_lines,
        (sl.reduction * 1000.0).round() / 10.0
    );
    Some(CodeLens {
        range: Range::new(Position::new(l1 - 1, 0), Position::new(l1 - 1, 0)),
        command: Some(Command {
            title,
            command: "csi.slice".into(),
            arguments: Some(vec![json!(lsp_ext::SliceParams {
                clear: true,
                ..Default::default()
            })]),
        }),
        data: None,
    })
}

// ---- The crash store (`csi/crashBuckets`, `csi/bucketCrashes`, `csi/bucketLineStates`) ----

fn utc(t: Option<u64>) -> Option<String> {
    t.map(|t| format!("{} UTC", csi_dump::coredump_store::utc_date(t)))
}

pub fn crash_buckets(b: &crate::crashes::Buckets) -> lsp_ext::CrashBucketsResult {
    lsp_ext::CrashBucketsResult {
        store: b.store.clone(),
        message: b.message.clone(),
        buckets: b
            .buckets
            .iter()
            .map(|b| {
                let passing = b.extra.as_ref().and_then(|x| x.get("passing"));
                lsp_ext::BucketItem {
                    program: b.program.clone(),
                    signature: b.signature.clone(),
                    signal: b.signal.clone(),
                    frames: b.frames.clone(),
                    count: b.count,
                    first_time: b.first_time,
                    last_time: b.last_time,
                    first_time_text: utc(b.first_time),
                    last_time_text: utc(b.last_time),
                    representative: lsp_ext::CrashItem {
                        core: b.representative_core.clone(),
                        executable: b.program.clone(),
                        time: b.first_time,
                        time_text: utc(b.first_time),
                        site: None,
                        hash: b.representative.clone(),
                        signal: Some(b.signal.clone()),
                    },
                    sites: b.sites.clone(),
                    lines_analysed: b.lines_analysed,
                    has_passing: passing.is_some(),
                    passing_runs: passing
                        .and_then(|p| p.get("runs"))
                        .and_then(serde_json::Value::as_u64),
                }
            })
            .collect(),
    }
}

pub fn bucket_crashes(
    store: &str,
    bucket: &csi_triage::store::StoredBucket,
    crashes: &[csi_triage::store::StoredCrash],
) -> lsp_ext::BucketCrashesResult {
    lsp_ext::BucketCrashesResult {
        store: store.to_string(),
        program: bucket.program.clone(),
        signature: bucket.signature.clone(),
        crashes: crashes
            .iter()
            .map(|c| lsp_ext::CrashItem {
                core: c.core.clone(),
                executable: c.program.clone(),
                time: c.time,
                time_text: utc(c.time),
                site: c.site.clone(),
                hash: c.hash.clone(),
                signal: Some(c.signal.clone()),
            })
            .collect(),
    }
}

/// 0-based lines of 1-based ones (line 0, unknown, left out).
fn zero_based(lines: &std::collections::BTreeSet<u32>) -> Vec<u32> {
    lines.iter().filter(|&&l| l > 0).map(|l| l - 1).collect()
}

pub fn bucket_line_states(b: &crate::crashes::BucketLines) -> lsp_ext::BucketLineStatesResult {
    let files = b
        .files()
        .into_iter()
        .map(|f| lsp_ext::BucketFile {
            uri: f
                .path
                .as_ref()
                .and_then(Uri::from_file_path)
                .map(|u| u.as_str().to_string()),
            version: None,
            file: f.file,
            keys: f.keys,
            lines: lsp_ext::LineSets {
                must: zero_based(&f.must_in_all),
                may: Vec::new(),
                never: zero_based(&f.never_in_any),
                partial: Vec::new(),
            },
            frame: None,
            suspicious: f
                .suspicious
                .into_iter()
                .map(|(rank, s)| lsp_ext::SuspiciousLine {
                    line: s.line - 1,
                    ochiai: s.ochiai,
                    failed: s.failed,
                    passed: s.passed,
                    on_stack: s.on_stack,
                    rank,
                })
                .collect(),
            failing_only: zero_based(&f.failing_only),
            passing_only: zero_based(&f.passing_only),
        })
        .collect();
    lsp_ext::BucketLineStatesResult {
        store: b.store.clone(),
        program: b.bucket.program.clone(),
        signature: b.bucket.signature.clone(),
        count: b.bucket.count,
        lines_analysed: b.bucket.lines_analysed,
        passing_runs: b.passing.as_ref().map(|p| p.runs),
        files,
        notices: b.notices.clone(),
    }
}

/// A control-flow query's answer as the wire says it.
pub fn query_answer(a: csi_model::QueryAnswer) -> lsp_ext::QueryAnswer {
    match a {
        csi_model::QueryAnswer::Possible => lsp_ext::QueryAnswer::Possible,
        csi_model::QueryAnswer::Impossible => lsp_ext::QueryAnswer::Impossible,
    }
}

/// `csi/functionSpans` of a document's file keys (0-based lines).
pub fn function_spans(s: &Session, keys: &[&str], uri: String) -> lsp_ext::FunctionSpansResult {
    lsp_ext::FunctionSpansResult {
        uri,
        functions: csi_ide::function_spans::function_spans(s, keys)
            .into_iter()
            .map(|f| lsp_ext::FunctionSpan {
                name: f.function.name.clone(),
                file: f.function.file.clone(),
                first: f.first.saturating_sub(1),
                last: f.last.saturating_sub(1),
                must: f.global.must,
                may: f.global.may,
                never: f.global.never,
            })
            .collect(),
        stale: false,
    }
}
