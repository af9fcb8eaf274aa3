//! Reader for csi-grissom's JSON failure reports.
//!
//! Two forms exist:
//! - `{"crash": [...], "stack": [{"call": [...], "entry": [...]}, ...]}`: crash candidates plus
//!   the stack outermost first, each frame the call to the next frame and that frame's entry;
//! - `{"crashstack": [{"call": [...], "entry": [...]}, ..., {"crash": [...]}]}`.
//!
//! `obsYes` holds unreliable-trace vectors `{"reliable": false, "entries": [[n], [m], ...]}`
//! (a single one-node entry is a coverage bit "ran"), `obsNo` holds groups `[n]` ("never ran").
//! Observations that cannot be used soundly (ambiguous groups) are dropped and recorded in
//! [`FailureReport::dropped`], never silently lost.

use serde_json::Value;

use crate::error::InputError;
use crate::graph::{FuncId, NodeId, NodeKind, ProgramGraph};
use crate::report::{FailureReport, Frame, Thread};

/// Parses a csi-grissom JSON failure report against its graph.
pub fn parse_grissom_report(
    file: &str,
    text: &str,
    graph: &ProgramGraph,
) -> Result<FailureReport, InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        InputError::new(
            file,
            format!("line {}, column {}", e.line(), e.column()),
            format!("not valid JSON: {e}"),
        )
    })?;
    ReportReader { file, graph }.read(&value)
}

pub fn read_grissom_report(
    path: &std::path::Path,
    graph: &ProgramGraph,
) -> Result<FailureReport, InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&name, "", format!("cannot read: {e}")))?;
    parse_grissom_report(&name, &text, graph)
}

struct ReportReader<'a> {
    file: &'a str,
    graph: &'a ProgramGraph,
}

/// One frame as written: the frame's own point candidates and, for all but the innermost, the
/// entry of the next inner frame.
struct RawFrame {
    point: Vec<NodeId>,
    next_entry: Option<Vec<NodeId>>,
    at: String,
}

impl ReportReader<'_> {
    fn err(&self, element: impl Into<String>, reason: impl Into<String>) -> InputError {
        InputError::new(self.file, element, reason)
    }

    fn nodes(&self, v: &Value, at: &str) -> Result<Vec<NodeId>, InputError> {
        let arr = v
            .as_array()
            .ok_or_else(|| self.err(at, "expected an array of node ids"))?;
        if arr.is_empty() {
            return Err(self.err(at, "empty node list"));
        }
        let mut out = Vec::with_capacity(arr.len());
        for (i, n) in arr.iter().enumerate() {
            let s = n
                .as_str()
                .ok_or_else(|| self.err(format!("{at}[{i}]"), "expected a node id string"))?;
            let id = self.graph.node_by_ext_id(s).ok_or_else(|| {
                self.err(
                    format!("{at}[{i}]"),
                    format!("node `{s}` is not in the graph"),
                )
            })?;
            if !out.contains(&id) {
                out.push(id);
            }
        }
        Ok(out)
    }

    fn read(&self, v: &Value) -> Result<FailureReport, InputError> {
        let obj = v
            .as_object()
            .ok_or_else(|| self.err("", "the report must be a JSON object"))?;
        let mut raw: Vec<RawFrame> = Vec::new();
        if let Some(crash) = obj.get("crash") {
            if let Some(stack) = obj.get("stack").filter(|s| !s.is_null()) {
                let frames = stack
                    .as_array()
                    .ok_or_else(|| self.err("stack", "expected an array of frames"))?;
                for (i, f) in frames.iter().enumerate() {
                    raw.push(self.internal_frame(f, &format!("stack[{i}]"))?);
                }
            }
            raw.push(RawFrame {
                point: self.nodes(crash, "crash")?,
                next_entry: None,
                at: "crash".into(),
            });
        } else if let Some(cs) = obj.get("crashstack") {
            let frames = cs
                .as_array()
                .ok_or_else(|| self.err("crashstack", "expected an array of frames"))?;
            if frames.is_empty() {
                return Err(self.err("crashstack", "empty crash stack"));
            }
            for (i, f) in frames.iter().enumerate() {
                let at = format!("crashstack[{i}]");
                if i + 1 == frames.len() {
                    let crash = f
                        .get("crash")
                        .ok_or_else(|| self.err(&at, "the last frame needs `crash`"))?;
                    if f.get("entry").is_some() || f.get("call").is_some() {
                        return Err(self.err(&at, "the crash frame must not have call/entry"));
                    }
                    raw.push(RawFrame {
                        point: self.nodes(crash, &format!("{at}.crash"))?,
                        next_entry: None,
                        at,
                    });
                } else {
                    raw.push(self.internal_frame(f, &at)?);
                }
            }
        } else {
            return Err(self.err("", "missing crash stack: neither `crash` nor `crashstack`"));
        }

        // Outermost-first raw frames → innermost-first frames with functions.
        let mut frames: Vec<Frame> = Vec::with_capacity(raw.len());
        for (i, rf) in raw.iter().enumerate() {
            let function = self.single_function(&rf.point, &rf.at)?;
            if i > 0 {
                let entry = raw[i - 1]
                    .next_entry
                    .as_ref()
                    .expect("internal frame has entry");
                let at = format!("{}.entry", raw[i - 1].at);
                if entry.len() != 1 {
                    return Err(self.err(at, "ambiguous entry sets are not supported"));
                }
                let e = entry[0];
                if self.graph.node(e).kind != NodeKind::Entry {
                    return Err(self.err(
                        at,
                        format!("`{}` is not a function entry", self.graph.node(e).ext_id),
                    ));
                }
                if self.graph.node(e).function != function {
                    return Err(self.err(
                        at,
                        format!(
                            "entry `{}` is not in the function of the next frame's point",
                            self.graph.node(e).ext_id
                        ),
                    ));
                }
            }
            frames.push(Frame {
                function: Some(function),
                point: rf.point.clone(),
                ..Frame::default()
            });
        }
        frames.reverse();

        let mut report = FailureReport {
            threads: vec![Thread {
                frames,
                ..Thread::default()
            }],
            ..FailureReport::default()
        };
        self.read_obs_yes(obj.get("obsYes"), &mut report)?;
        self.read_obs_no(obj.get("obsNo"), &mut report)?;
        Ok(report)
    }

    fn internal_frame(&self, f: &Value, at: &str) -> Result<RawFrame, InputError> {
        if !f.is_object() {
            return Err(self.err(at, "a frame must be an object with `call` and `entry`"));
        }
        if f.get("crash").is_some() {
            return Err(self.err(at, "only the innermost frame may have `crash`"));
        }
        let call = f
            .get("call")
            .ok_or_else(|| self.err(at, "frame without `call`"))?;
        let entry = f
            .get("entry")
            .ok_or_else(|| self.err(at, "frame without `entry`"))?;
        Ok(RawFrame {
            point: self.nodes(call, &format!("{at}.call"))?,
            next_entry: Some(self.nodes(entry, &format!("{at}.entry"))?),
            at: at.to_string(),
        })
    }

    fn single_function(&self, nodes: &[NodeId], at: &str) -> Result<FuncId, InputError> {
        let f = self.graph.node(nodes[0]).function;
        if nodes.iter().any(|&n| self.graph.node(n).function != f) {
            return Err(self.err(at, "candidate nodes lie in different functions"));
        }
        Ok(f)
    }

    fn read_obs_yes(
        &self,
        v: Option<&Value>,
        report: &mut FailureReport,
    ) -> Result<(), InputError> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(());
        };
        let arr = v
            .as_array()
            .ok_or_else(|| self.err("obsYes", "expected an array"))?;
        for (i, obs) in arr.iter().enumerate() {
            let at = format!("obsYes[{i}]");
            let reliable = obs
                .get("reliable")
                .ok_or_else(|| self.err(&at, "missing `reliable`"))?
                .as_bool()
                .ok_or_else(|| self.err(&at, "`reliable` must be true or false"))?;
            let entries = obs
                .get("entries")
                .and_then(Value::as_array)
                .filter(|e| !e.is_empty())
                .ok_or_else(|| self.err(&at, "missing or empty `entries` array"))?;
            let mut vector = Vec::with_capacity(entries.len());
            let mut ambiguous = 0;
            for (j, e) in entries.iter().enumerate() {
                let group = self.nodes(e, &format!("{at}.entries[{j}]"))?;
                if group.len() == 1 {
                    vector.push(group[0]);
                } else {
                    // An element "one of these" is not an unreliable-trace symbol (§6.6.5);
                    // leaving it out only weakens the constraint, which keeps answers sound.
                    ambiguous += 1;
                }
            }
            if ambiguous > 0 {
                report.dropped.push(format!(
                    "{at}: {ambiguous} ambiguous element(s) ignored (cannot be encoded soundly)"
                ));
            }
            if reliable {
                report.dropped.push(format!(
                    "{at}: reliable trace used as unreliable (only its order is kept)"
                ));
            }
            match vector.as_slice() {
                [] => {}
                [n] => {
                    report.global_coverage.insert(*n, true);
                }
                _ => report.ordered_observations.push(vector),
            }
        }
        Ok(())
    }

    fn read_obs_no(&self, v: Option<&Value>, report: &mut FailureReport) -> Result<(), InputError> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(());
        };
        let arr = v
            .as_array()
            .ok_or_else(|| self.err("obsNo", "expected an array"))?;
        for (i, group) in arr.iter().enumerate() {
            let at = format!("obsNo[{i}]");
            let group = self.nodes(group, &at)?;
            if let [n] = group.as_slice() {
                if report.global_coverage.insert(*n, false) == Some(true) {
                    return Err(self.err(
                        at,
                        format!(
                            "node `{}` is observed both executed and not executed",
                            self.graph.node(*n).ext_id
                        ),
                    ));
                }
            } else {
                report.dropped.push(format!(
                    "{at}: ambiguous group ignored (cannot be encoded soundly)"
                ));
            }
        }
        Ok(())
    }
}
