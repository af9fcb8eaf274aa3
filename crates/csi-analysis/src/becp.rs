//! Best-effort coverage (§6.7) for a whole failure report: global Yes/No/Maybe for every node
//! and a local answer per stack frame (§7.1.1).
//!
//! The pipeline, each step sound on its own:
//! 1. Nodes whose global coverage bit is false never ran (removed everywhere).
//! 2. Per frame, the activation from its function's entry to its path trace / current point,
//!    with calls summarized by whether the callee can return: local Yes/No/Maybe.
//! 3. Context-sensitive may-run set: what those activations may have run, plus complete
//!    invocations of every call they completed (transitively). Nothing else can have run in a
//!    single-threaded execution whose stack is the reported one.
//! 4. Global UTL over csi-grissom's context-insensitive graph restricted to that set, with the
//!    stack (and path traces) as one ordered vector and every surely-run node as a
//!    constraint. Restricting first prunes context-insensitive paths that return to the wrong
//!    caller, so answers are at least as precise as csi-grissom's.
//! 5. Yes nodes that dominate a completed call's callee exit are Yes; frame and global
//!    answers strengthen each other (never ran globally ⇒ not in this frame; ran in a frame ⇒
//!    ran).

use std::collections::{BTreeMap, HashMap};

use csi_model::{Coverage, FailureReport, FuncId, NodeId, ProgramGraph};

use crate::context::Context;
use crate::icfg::Icfg;
use crate::utl::{Inconsistent, UtlProblem};

/// Line states per source file name.
pub type LinesByFile = BTreeMap<String, crate::FileLines>;

/// The report cannot come from any execution of the graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("the graph has no program entry (no `main` and no `program-start`)")]
    NoEntry,
    #[error("the report has no stack frames")]
    NoFrames,
    #[error("frame #{frame} of thread {thread}: {reason}")]
    Frame {
        thread: usize,
        frame: usize,
        reason: String,
    },
    #[error("no execution is consistent with the report: {0}")]
    Inconsistent(String),
}

/// Local result for one stack frame.
#[derive(Clone, Debug)]
pub struct FrameCoverage {
    pub thread: usize,
    /// 0 = innermost.
    pub frame: usize,
    pub function: FuncId,
    /// Status of every node of the frame's function in this activation.
    pub status: BTreeMap<NodeId, Coverage>,
    /// Where this activation stopped inside its point node(s), if it did: those nodes ran
    /// only up to there in this activation (other activations of them are not cut).
    pub cuts: Vec<(NodeId, csi_model::SourcePos)>,
}

#[derive(Clone, Debug)]
pub struct Coverages {
    /// Indexed by node.
    pub global: Vec<Coverage>,
    /// Crashing thread first, innermost frame first; frames whose function is unknown are
    /// skipped.
    pub frames: Vec<FrameCoverage>,
    /// The plain csi-grissom-equivalent answer (context-insensitive UTL without our
    /// refinements), for comparison: only from [`best_effort_coverage_compared`] (a second
    /// solve over the whole graph, a third of the time on a large program).
    pub context_insensitive: Option<Vec<Coverage>>,
    /// Point nodes that ran only up to a position (frames stopped inside them).
    pub stopped: Vec<(NodeId, csi_model::SourcePos)>,
}

impl Coverages {
    /// Global answer per source line: the nodes' global answers, where a node some frame
    /// stopped inside counts only up to there — plus every line some activation surely ran
    /// (a frame's own must lines: a node cut in one activation, e.g. the innermost of a
    /// recursion, may have run whole in another).
    pub fn global_lines(
        &self,
        g: &ProgramGraph,
    ) -> std::collections::BTreeMap<String, crate::FileLines> {
        self.lines(g).0
    }

    /// [`Self::global_lines`] and every frame's [`Self::frame_lines`] (in `frames` order), each
    /// frame's projected once for both.
    pub fn lines(&self, g: &ProgramGraph) -> (LinesByFile, Vec<LinesByFile>) {
        let frames: Vec<LinesByFile> = self.frames.iter().map(|f| self.frame_lines(g, f)).collect();
        let answers = self
            .global
            .iter()
            .enumerate()
            .map(|(i, &c)| (i as NodeId, c));
        let mut out = crate::lines::project_lines_cut(g, answers, &self.stopped);
        for fl in &frames {
            for (file, fl) in fl {
                let Some(global) = out.get_mut(file) else {
                    continue;
                };
                for &line in &fl.must {
                    if let Ok(i) = global.may.binary_search(&line) {
                        global.may.remove(i);
                        if let Err(j) = global.must.binary_search(&line) {
                            global.must.insert(j, line);
                        }
                    }
                }
            }
        }
        (out, frames)
    }

    /// One frame's answer per source line.
    pub fn frame_lines(&self, g: &ProgramGraph, frame: &FrameCoverage) -> LinesByFile {
        let answers = frame.status.iter().map(|(&n, &c)| (n, c));
        crate::lines::project_lines_cut(g, answers, &frame.cuts)
    }

    pub fn count(&self, c: Coverage) -> usize {
        self.global.iter().filter(|&&x| x == c).count()
    }
}

fn names(g: &ProgramGraph, a: u32, b: u32) -> (String, String) {
    let name = |x: u32| {
        g.nodes
            .get(x as usize)
            .map(|n| n.ext_id.clone())
            .unwrap_or_else(|| "<crash>".into())
    };
    (name(a), name(b))
}

fn explain(g: &ProgramGraph, e: &Inconsistent) -> String {
    match e {
        Inconsistent::RequiredDead(x) => {
            format!(
                "observed node {} cannot lie on any path to the crash",
                names(g, *x, *x).0
            )
        }
        Inconsistent::Unordered(a, b) => {
            let (a, b) = names(g, *a, *b);
            format!("observed nodes {a} and {b} cannot both lie on one path to the crash")
        }
        Inconsistent::OrderViolated(a, b) => {
            let (a, b) = names(g, *a, *b);
            format!("{a} cannot run before {b}")
        }
        other => other.to_string(),
    }
}

/// Per-frame inputs derived from the report.
struct FrameWork {
    /// Part of the crashing walk (see [`walk_frames`]).
    in_walk: bool,
    thread: usize,
    frame: usize,
    function: FuncId,
    /// Calls of this activation that returned, and whether each surely ran.
    completed: Vec<(NodeId, bool)>,
    status: HashMap<NodeId, Coverage>,
}

/// Everything derived from the report before the global solve; shared by coverage and
/// queries.
pub struct Prepared {
    /// False when the crashing thread has no program frame: no walk constrains anything.
    pub walk: bool,
    pub icfg: Icfg,
    pub entry: NodeId,
    /// Per icfg node: excluded before solving (never ran, or impossible in context).
    pub removed: Vec<bool>,
    /// The stack vector, ordered observations, and every surely-run node.
    pub vectors: Vec<Vec<u32>>,
    /// Surely ran (per program node), in any thread.
    pub sure: Vec<bool>,
    /// May have run outside the crashing walk: in other threads, in frames entered from
    /// library code, or in functions library code may call (per program node).
    pub elsewhere: Vec<bool>,
    /// csi-grissom's own constraints (no refinement), for comparison.
    plain_removed: Vec<bool>,
    plain_vectors: Vec<Vec<u32>>,
    frames: Vec<FrameWork>,
}

impl Prepared {
    pub fn problem(&self) -> UtlProblem<'_> {
        UtlProblem {
            graph: &self.icfg.graph,
            entry: self.entry,
            crash: self.icfg.crash,
            removed: self.removed.clone(),
            vectors: self.vectors.clone(),
        }
    }
}

/// Best-effort coverage of every node, globally and per frame (see the module docs).
pub fn best_effort_coverage(
    g: &ProgramGraph,
    report: &FailureReport,
) -> Result<Coverages, ReportError> {
    coverage(g, report, false)
}

/// [`best_effort_coverage`] plus csi-grissom's own answer (`context_insensitive`).
pub fn best_effort_coverage_compared(
    g: &ProgramGraph,
    report: &FailureReport,
) -> Result<Coverages, ReportError> {
    coverage(g, report, true)
}

fn coverage(
    g: &ProgramGraph,
    report: &FailureReport,
    compare: bool,
) -> Result<Coverages, ReportError> {
    let p = prepare(g, report)?;
    let n = g.node_count();
    let refined = if p.walk {
        p.problem()
            .best_effort()
            .map_err(|e| ReportError::Inconsistent(explain(g, &e)))?
    } else {
        vec![Coverage::No; n + 1]
    };
    // csi-grissom's own question, for comparison: same graph, no refinement.
    let plain = compare.then(|| {
        UtlProblem {
            graph: &p.icfg.graph,
            entry: p.entry,
            crash: p.icfg.crash,
            removed: p.plain_removed,
            vectors: p.plain_vectors,
        }
        .best_effort()
        .map(|mut v| {
            v.truncate(n);
            v
        })
        .unwrap_or_else(|_| vec![Coverage::Maybe; n])
    });
    let sure = p.sure;
    let frames = p.frames;
    // Step 5b: combine.
    let mut global: Vec<Coverage> = refined[..n].to_vec();
    for x in 0..n {
        if p.elsewhere[x] && global[x] == Coverage::No {
            global[x] = Coverage::Maybe;
        }
        if sure[x] {
            if global[x] == Coverage::No {
                return Err(ReportError::Inconsistent(format!(
                    "node {} surely ran but cannot lie on a path to the crash",
                    g.node(x as u32).ext_id
                )));
            }
            global[x] = Coverage::Yes;
        }
    }
    let mut out_frames = Vec::with_capacity(frames.len());
    for fw in frames {
        let mut status: BTreeMap<NodeId, Coverage> = fw.status.into_iter().collect();
        for (&x, c) in status.iter_mut() {
            if global[x as usize] == Coverage::No {
                if *c == Coverage::Yes {
                    return Err(ReportError::Inconsistent(format!(
                        "node {} ran in frame #{} but nowhere globally",
                        g.node(x).ext_id,
                        fw.frame
                    )));
                }
                *c = Coverage::No;
            }
        }
        let cuts = report
            .threads
            .get(fw.thread)
            .and_then(|t| t.frames.get(fw.frame))
            .and_then(|f| {
                f.stopped_at
                    .map(|p| f.point.iter().map(|&n| (n, p)).collect())
            })
            .unwrap_or_default();
        out_frames.push(FrameCoverage {
            thread: fw.thread,
            frame: fw.frame,
            function: fw.function,
            status,
            cuts,
        });
    }
    let stopped = report
        .threads
        .iter()
        .flat_map(|t| &t.frames)
        .filter_map(|f| f.stopped_at.map(|p| f.point.iter().map(move |&n| (n, p))))
        .flatten()
        .collect();
    Ok(Coverages {
        global,
        frames: out_frames,
        context_insensitive: plain,
        stopped,
    })
}

/// Prepares the global problem of a report: checks it (see `check_report`), narrows frame
/// points by coverage (`narrow_points`), derives each frame's activation (step 2,
/// `frame_activations`), the context-sensitive may-run and surely-run sets (step 3 and 5a,
/// `RunSets`), and the constraints of the global UTL problem (step 4).
pub fn prepare(g: &ProgramGraph, report: &FailureReport) -> Result<Prepared, ReportError> {
    let (entry, walk) = check_report(g, report)?;
    let n = g.node_count();
    let mut never = vec![false; n];
    for (&node, &ran) in &report.global_coverage {
        never[node as usize] = !ran;
    }
    let narrowed = narrow_points(report, &never);
    let report = narrowed.as_ref().unwrap_or(report);
    let crashing = report.crashing_thread().ok_or(ReportError::NoFrames)?;
    let crash_point: &[NodeId] = crashing.frames.first().map_or(&[], |f| f.point.as_slice());
    let ctx = Context::new(g, never);

    // Step 2: every frame's activation.
    let walk_len = walk_frames(report);
    let frames = frame_activations(&ctx, report, walk_len)?;

    // Step 3: the context-sensitive may-run sets and surely-run nodes, for the crashing walk
    // and for everything else (other threads, frames entered from library code).
    let RunSets {
        may,
        sure,
        mut elsewhere,
        sure_walk,
        observed_in_walk,
    } = RunSets::compute(&ctx, report, &frames)?;

    // Step 4: the global UTL problem on the csi-grissom graph.
    if !walk {
        // Whatever the crashing thread ran, it started at `main` or at a thread start.
        for x in reach_from(&ctx, g.program_entry.map(|e| g.node(e).function)) {
            elsewhere[x as usize] = true;
        }
    }
    let icfg = Icfg::build(g, crash_point);
    let mut stack_vector: Vec<u32> = Vec::new();
    let mut walk_entry = entry;
    for (k, fr) in crashing.frames.iter().enumerate().take(walk_len).rev() {
        let Some(f) = fr.function else { continue };
        if stack_vector.is_empty() && fr.called_from_outside {
            // The walk began where library code entered the program: `main`, a thread's
            // start routine, or a callback.
            walk_entry = g.function(f).entry;
        }
        stack_vector.push(g.function(f).entry);
        stack_vector.extend(&fr.path);
        if k == 0 {
            stack_vector.push(icfg.crash);
        } else if let [p] = fr.point.as_slice() {
            stack_vector.push(*p);
        }
    }
    let mut vectors = vec![stack_vector];
    vectors.extend(report.ordered_observations.iter().cloned());
    vectors.extend(
        (0..n as u32)
            .filter(|&x| sure_walk[x as usize] || observed_in_walk[x as usize])
            .map(|x| vec![x]),
    );
    let mut removed: Vec<bool> = (0..n).map(|x| ctx.never[x] || !may[x]).collect();
    // The crash node and the call hubs (icfg) are never removed.
    removed.resize(icfg.graph.node_count(), false);
    let mut plain_vectors = vec![grissom_stack_vector(g, report, icfg.crash)];
    plain_vectors.extend(report.ordered_observations.iter().cloned());
    plain_vectors.extend(
        report
            .global_coverage
            .iter()
            .filter(|(_, &r)| r)
            .map(|(&x, _)| vec![x]),
    );
    let mut plain_removed = ctx.never.clone();
    plain_removed.resize(icfg.graph.node_count(), false);
    Ok(Prepared {
        walk,
        icfg,
        entry: walk_entry,
        removed,
        vectors,
        sure,
        elsewhere,
        plain_removed,
        plain_vectors,
        frames,
    })
}

/// The program's entry, and whether the crashing thread has a program frame (a crashing
/// walk); an error for a report nothing can be derived from (no entry, no frames, no crash
/// point).
fn check_report(g: &ProgramGraph, report: &FailureReport) -> Result<(NodeId, bool), ReportError> {
    let entry = g.program_entry.ok_or(ReportError::NoEntry)?;
    let crashing = report.crashing_thread().ok_or(ReportError::NoFrames)?;
    // The crashing thread may have no frame in the program (it crashed in library code
    // reached from a thread start the stack walk could not get past, or jumped to garbage):
    // then there is no crashing walk, only what any thread may have run.
    let walk = crashing.frames.iter().any(|f| f.function.is_some());
    // A stack with unknown outer frames (a truncated core) still bounds the run through the
    // global coverage, even with no program frame seen.
    if !walk
        && report
            .threads
            .iter()
            .all(|t| t.frames.is_empty() && !t.outer_frames_unknown)
    {
        return Err(ReportError::NoFrames);
    }
    if walk && crashing.frames.first().is_none_or(|f| f.point.is_empty()) {
        return Err(ReportError::Frame {
            thread: 0,
            frame: 0,
            reason: "no crash point".into(),
        });
    }
    Ok((entry, walk))
}

/// A candidate for a frame's point that is recorded as never run cannot be the point; with
/// other candidates left, drop it rather than call the report inconsistent. `Some`: the
/// report with such candidates dropped; `None`: nothing to drop.
fn narrow_points(report: &FailureReport, never: &[bool]) -> Option<FailureReport> {
    let any = report.threads.iter().flat_map(|t| &t.frames).any(|f| {
        f.point.len() > 1
            && f.point
                .iter()
                .any(|x| never[*x as usize] || f.local_coverage.get(x) == Some(&false))
    });
    if !any {
        return None;
    }
    let mut r = report.clone();
    for f in r.threads.iter_mut().flat_map(|t| &mut t.frames) {
        let keep: Vec<NodeId> = f
            .point
            .iter()
            .copied()
            .filter(|x| !never[*x as usize] && f.local_coverage.get(x) != Some(&false))
            .collect();
        if !keep.is_empty() {
            f.point = keep;
        }
    }
    Some(r)
}

/// Step 2: the activation of every program frame of every thread (the first `walk_len`
/// frames of the crashing thread form the crashing walk).
fn frame_activations(
    ctx: &Context<'_>,
    report: &FailureReport,
    walk_len: usize,
) -> Result<Vec<FrameWork>, ReportError> {
    let mut frames: Vec<FrameWork> = Vec::new();
    for (t, thread) in report.threads.iter().enumerate() {
        for (k, fr) in thread.frames.iter().enumerate() {
            let Some(f) = fr.function else { continue };
            let frame_err = |reason: String| ReportError::Frame {
                thread: t,
                frame: k,
                reason,
            };
            let (completed, status) = frame_activation(ctx, fr, f).map_err(frame_err)?;
            frames.push(FrameWork {
                in_walk: t == 0 && k < walk_len,
                thread: t,
                frame: k,
                function: f,
                completed,
                status,
            });
        }
    }
    Ok(frames)
}

/// What frame `fr` (of function `f`) ran in its activation: the calls that completed (and
/// whether each surely ran), and each node's coverage. An error says why the frame is
/// inconsistent.
#[allow(clippy::type_complexity)]
fn frame_activation(
    ctx: &Context<'_>,
    fr: &csi_model::Frame,
    f: FuncId,
) -> Result<(Vec<(NodeId, bool)>, HashMap<NodeId, Coverage>), String> {
    let g = ctx.graph;
    if fr.point.is_empty() {
        return Err("no current point".into());
    }
    let on_path: Vec<NodeId> = fr.path.iter().chain(&fr.point).copied().collect();
    let targets = if fr.path.is_empty() {
        fr.point.clone()
    } else {
        vec![fr.path[0]]
    };
    let local_false = |x: NodeId| fr.local_coverage.get(&x) == Some(&false);
    for &x in &on_path {
        if ctx.never[x as usize] || local_false(x) {
            return Err(format!(
                "path node {} is recorded as never executed",
                g.node(x).ext_id
            ));
        }
    }
    let vectors: Vec<Vec<NodeId>> = fr
        .local_coverage
        .iter()
        .filter(|&(x, &ran)| ran && !on_path.contains(x))
        .map(|(&x, _)| vec![x])
        .collect();
    let before = ctx
        .activation_becp(f, &targets, &local_false, &vectors)
        .map_err(|e| explain(g, &e))?;
    let mut status = before.clone();
    for &x in &fr.path {
        status.insert(x, Coverage::Yes);
    }
    if let [p] = fr.point.as_slice() {
        status.insert(*p, Coverage::Yes);
    } else {
        for &p in &fr.point {
            status.entry(p).and_modify(|c| {
                if *c == Coverage::No {
                    *c = Coverage::Maybe
                }
            });
        }
    }
    // Calls that ran before the targets were reached have returned; a target itself
    // only if execution can go on from it to a target (a loop, or another candidate). Calls on the path trace continued, so they returned.
    let mut completed: Vec<(NodeId, bool)> = Vec::new();
    for (&x, &c) in &before {
        if c != Coverage::No
            && !g.callees(x).is_empty()
            && (!targets.contains(&x) || reaches_any(ctx, x, &targets))
        {
            completed.push((x, c == Coverage::Yes && !targets.contains(&x)));
        }
    }
    for &x in &fr.path {
        if !g.callees(x).is_empty() {
            completed.push((x, true));
        }
    }
    Ok((completed, status))
}

/// Per program node: what may have run in the crashing walk (`may`) or elsewhere
/// (`elsewhere`: other threads, frames entered from library code, what library code may
/// call), what surely ran in any thread (`sure`) and in the walk (`sure_walk`), and what the
/// global coverage saw that only the walk can explain (`observed_in_walk`).
struct RunSets {
    may: Vec<bool>,
    sure: Vec<bool>,
    elsewhere: Vec<bool>,
    sure_walk: Vec<bool>,
    observed_in_walk: Vec<bool>,
}

impl RunSets {
    /// Steps 3 and 5a over the frames' activations: the frames' own nodes, the complete
    /// invocations of the calls they completed (transitively), the unavoidable nodes of
    /// surely-completed direct calls, the async roots and, with unknown outer frames,
    /// everything reachable from the program's entry; then the global coverage, which must
    /// be explained by one of them.
    fn compute(
        ctx: &Context<'_>,
        report: &FailureReport,
        frames: &[FrameWork],
    ) -> Result<RunSets, ReportError> {
        let g = ctx.graph;
        let n = g.node_count();
        let mut may = vec![false; n];
        let mut sure = vec![false; n];
        let mut elsewhere = vec![false; n];
        let mut sure_walk = vec![false; n];
        let mut invoked = [
            vec![false; g.functions.len()],
            vec![false; g.functions.len()],
        ];
        let mut work: Vec<(FuncId, usize)> = Vec::new();
        let mut sure_calls: Vec<(NodeId, bool)> = Vec::new();
        for fw in frames {
            let side = usize::from(!fw.in_walk);
            for (&x, &c) in &fw.status {
                if fw.in_walk {
                    may[x as usize] |= c != Coverage::No;
                    sure_walk[x as usize] |= c == Coverage::Yes;
                } else {
                    elsewhere[x as usize] |= c != Coverage::No;
                }
                sure[x as usize] |= c == Coverage::Yes;
            }
            for &(call, surely) in &fw.completed {
                for &callee in g.callees(call) {
                    if ctx.completes[callee as usize] && !invoked[side][callee as usize] {
                        invoked[side][callee as usize] = true;
                        work.push((callee, side));
                    }
                }
                if surely {
                    sure_calls.push((call, fw.in_walk));
                }
            }
        }
        let mut invocations: HashMap<FuncId, HashMap<NodeId, Coverage>> = HashMap::new();
        while let Some((f, side)) = work.pop() {
            let body = match invocations.get(&f) {
                Some(b) => b.clone(),
                None => match ctx.complete_invocation(f) {
                    Some(b) => b,
                    None => continue,
                },
            };
            for (&x, &c) in &body {
                if c == Coverage::No {
                    continue;
                }
                if side == 0 {
                    may[x as usize] = true;
                } else {
                    elsewhere[x as usize] = true;
                }
                for &callee in g.callees(x) {
                    if ctx.completes[callee as usize] && !invoked[side][callee as usize] {
                        invoked[side][callee as usize] = true;
                        work.push((callee, side));
                    }
                }
            }
            invocations.insert(f, body);
        }
        // Step 5a: a surely-completed direct call surely ran its callee's unavoidable nodes.
        while let Some((call, in_walk)) = sure_calls.pop() {
            let [callee] = g.callees(call) else { continue };
            let Some(body) = invocations.get(callee) else {
                continue;
            };
            for (&x, &c) in body {
                if c == Coverage::Yes
                    && !(if in_walk {
                        sure_walk[x as usize]
                    } else {
                        sure[x as usize]
                    })
                {
                    sure[x as usize] = true;
                    if in_walk {
                        sure_walk[x as usize] = true;
                    }
                    if !g.callees(x).is_empty() {
                        sure_calls.push((x, in_walk));
                    }
                }
            }
        }
        // Library code may have run the async roots at any time, in any thread.
        for x in reach_from(ctx, None) {
            elsewhere[x as usize] = true;
        }
        // A stack whose outer frames are unknown (a truncated core) hides activations that began
        // at `main` or a thread start and may have run anything reachable from there before the
        // part of the walk that is seen.
        if report.threads.iter().any(|t| t.outer_frames_unknown) {
            for x in reach_from(ctx, g.program_entry.map(|e| g.node(e).function)) {
                elsewhere[x as usize] = true;
            }
        }
        let mut observed_in_walk = vec![false; n];
        for (&x, &ran) in &report.global_coverage {
            if ran {
                sure[x as usize] = true;
                if !may[x as usize] && !elsewhere[x as usize] {
                    return Err(ReportError::Inconsistent(format!(
                        "node {} is covered but cannot have run with this stack",
                        g.node(x).ext_id
                    )));
                }
                // Only a run that nothing else can explain constrains the crashing walk.
                observed_in_walk[x as usize] = !elsewhere[x as usize];
            }
        }
        Ok(RunSets {
            may,
            sure,
            elsewhere,
            sure_walk,
            observed_in_walk,
        })
    }
}

/// How many frames of the crashing thread (innermost first) form the crashing walk: up to and
/// including the first frame entered from outside the graph (a callback from library code or
/// a thread's start routine), or all of them.
fn walk_frames(report: &FailureReport) -> usize {
    let Some(t) = report.crashing_thread() else {
        return 0;
    };
    t.frames
        .iter()
        .position(|f| f.function.is_some() && f.called_from_outside)
        .map_or(t.frames.len(), |k| k + 1)
}

/// Nodes that library code may run by calling the graph's async roots (and `extra`), and
/// what they call, never-run nodes excluded.
fn reach_from(ctx: &Context<'_>, extra: Option<FuncId>) -> Vec<NodeId> {
    let g = ctx.graph;
    let mut seen_fn = vec![false; g.functions.len()];
    let mut seen = vec![false; g.node_count()];
    let mut out = Vec::new();
    let mut fstack: Vec<FuncId> = g.async_roots.clone();
    fstack.extend(extra);
    while let Some(f) = fstack.pop() {
        if std::mem::replace(&mut seen_fn[f as usize], true) {
            continue;
        }
        let mut stack = vec![g.function(f).entry];
        while let Some(x) = stack.pop() {
            if ctx.never[x as usize] || std::mem::replace(&mut seen[x as usize], true) {
                continue;
            }
            out.push(x);
            fstack.extend_from_slice(g.callees(x));
            stack.extend_from_slice(&g.succs[x as usize]);
        }
    }
    out
}

/// The stack as csi-grissom encodes it: `[call1, entry2, call2, …, crash]`.
fn grissom_stack_vector(g: &ProgramGraph, report: &FailureReport, crash: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let Some(t) = report.crashing_thread() else {
        return v;
    };
    let last = t.frames.len().saturating_sub(1);
    for (k, fr) in t.frames.iter().enumerate().rev() {
        if k != last {
            if let Some(f) = fr.function {
                v.push(g.function(f).entry);
            }
        }
        if k == 0 {
            v.push(crash);
        } else if let [p] = fr.point.as_slice() {
            v.push(*p);
        }
    }
    v
}

/// Is some target reachable from `x` by a non-empty path of its summary graph?
fn reaches_any(ctx: &Context<'_>, x: NodeId, targets: &[NodeId]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<NodeId> = ctx.summary_succs(x).to_vec();
    while let Some(v) = stack.pop() {
        if ctx.never[v as usize] || !seen.insert(v) {
            continue;
        }
        if targets.contains(&v) {
            return true;
        }
        stack.extend_from_slice(ctx.summary_succs(v));
    }
    false
}
