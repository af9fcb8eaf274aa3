//! The failure report (DESIGN §3, dissertation §5.2): what a crashed run left behind, expressed
//! over program-graph nodes.

use std::collections::BTreeMap;

use crate::graph::{FuncId, NodeId};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignalInfo {
    pub signo: i32,
    pub name: String,
    pub code: i32,
    pub fault_address: Option<u64>,
}

/// One stack frame. Frames are stored innermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The frame's function, when known.
    pub function: Option<FuncId>,
    pub pc: Option<u64>,
    /// `(file, line, column)` of the frame's current point, as the debug info says.
    pub location: Option<(String, u32, u32)>,
    /// Candidate nodes for the frame's current point: the crash point (innermost frame) or the
    /// in-progress call (outer frames). More than one only when the position is ambiguous.
    pub point: Vec<NodeId>,
    /// Path-trace suffix that led to `point`, oldest first, `point` itself excluded.
    pub path: Vec<NodeId>,
    /// True when `path` is known to start at the function's entry (the ring buffer never
    /// wrapped), so nothing ran in this activation before `path[0]`.
    pub path_from_entry: bool,
    /// Stack-local coverage of this activation.
    pub local_coverage: BTreeMap<NodeId, bool>,
    /// The frame was entered from outside the program graph (library code such as `qsort`
    /// or `pthread_create`'s thread start, or the C runtime calling `main`): the next frame
    /// out, if any, is not its caller in the graph.
    pub called_from_outside: bool,
    /// Where the frame stopped inside its point node (the crash position), when the frame is
    /// not at a call: the node ran only up to here in this activation.
    pub stopped_at: Option<crate::graph::SourcePos>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    pub id: Option<u64>,
    pub name: Option<String>,
    pub signal: Option<SignalInfo>,
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// The stack walk stopped before the thread's outermost program frame (stack memory
    /// missing from a truncated core or minidump, no unwind information): frames beyond the
    /// last of `frames` are unknown, so any function may be active there and may have run
    /// before the walk the analysis sees.
    pub outer_frames_unknown: bool,
}

/// Everything recovered from one failing run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureReport {
    /// The crashing thread first.
    pub threads: Vec<Thread>,
    /// Global coverage bits: `true` = ran at least once in the run, `false` = never ran.
    pub global_coverage: BTreeMap<NodeId, bool>,
    /// Further "these ran in this order (each at least once)" observations: unreliable-trace
    /// vectors of §6.5 beyond single coverage bits (csi-grissom multi-entry `obsYes`).
    pub ordered_observations: Vec<Vec<NodeId>>,
    /// Parts of the input that could not be used soundly and were dropped, one sentence each
    /// (for example an ambiguous `obsNo` group). Shown to the user, never silently lost.
    pub dropped: Vec<String>,
}

impl FailureReport {
    /// The crashing thread.
    pub fn crashing_thread(&self) -> Option<&Thread> {
        self.threads.first()
    }

    /// The stacks alone (§6.8.1): no coverage, no path traces, no ordered observations.
    pub fn stack_only(&self) -> FailureReport {
        let mut threads = self.threads.clone();
        for f in threads.iter_mut().flat_map(|t| &mut t.frames) {
            f.path.clear();
            f.path_from_entry = false;
            f.local_coverage.clear();
        }
        FailureReport {
            threads,
            ..FailureReport::default()
        }
    }
}
