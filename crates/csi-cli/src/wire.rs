//! The JSON documents' own types (`csi analyze --format json`, `csi slice --format json`):
//! what each object is called and spelled on the wire, built from the model and reader types,
//! which carry no serde derives for it. The schema is documented in `docs/analyze-json.md`;
//! a change here is a change of that format.

use std::path::Path;

use serde::Serialize;

use csi_analysis::slice::{FrameSliceStats, SliceStats};
use csi_analysis::EdgeKind;
use csi_dump::debug_files::DebugSource;
use csi_dump::dwarf::{InlineFrame, SourceLoc, VarKind, Variable};
use csi_dump::unwind::UnwindMethod;
use csi_dump::{Metadata, ModuleInfo};
use csi_model::SignalInfo;

/// `signal`: the signal that killed the process.
#[derive(Serialize)]
pub struct Signal<'a> {
    pub signo: i32,
    pub name: &'a str,
    pub code: i32,
    pub fault_address: Option<u64>,
}

impl<'a> From<&'a SignalInfo> for Signal<'a> {
    fn from(s: &'a SignalInfo) -> Self {
        Signal {
            signo: s.signo,
            name: &s.name,
            code: s.code,
            fault_address: s.fault_address,
        }
    }
}

/// `metadata`: where the program graph came from.
pub fn metadata(m: &Metadata) -> &'static str {
    match m {
        Metadata::CsiCfg => "csi-cfg",
        Metadata::GraphMl => "graph-ml",
        Metadata::None => "none",
    }
}

/// One of `modules`.
#[derive(Serialize)]
pub struct Module<'a> {
    pub name: &'a str,
    pub file: Option<&'a Path>,
    pub build_id: Option<&'a str>,
    pub debug: DebugOrigin<'a>,
}

impl<'a> From<&'a ModuleInfo> for Module<'a> {
    fn from(m: &'a ModuleInfo) -> Self {
        Module {
            name: &m.name,
            file: m.file.as_deref(),
            build_id: m.build_id.as_deref(),
            debug: DebugOrigin::from(&m.debug),
        }
    }
}

/// A module's `debug`: where its debug info came from, `kind` saying which.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DebugOrigin<'a> {
    Embedded,
    BuildId { path: &'a Path },
    DebugLink { path: &'a Path },
    Debuginfod { url: &'a str, path: &'a Path },
    None,
}

impl<'a> From<&'a DebugSource> for DebugOrigin<'a> {
    fn from(d: &'a DebugSource) -> Self {
        match d {
            DebugSource::Embedded => DebugOrigin::Embedded,
            DebugSource::BuildId { path } => DebugOrigin::BuildId { path },
            DebugSource::DebugLink { path } => DebugOrigin::DebugLink { path },
            DebugSource::Debuginfod { url, path } => DebugOrigin::Debuginfod { url, path },
            DebugSource::None => DebugOrigin::None,
        }
    }
}

/// A source position (`location` of an inlined frame).
#[derive(Serialize)]
pub struct Location<'a> {
    pub file: &'a str,
    pub line: u32,
    pub column: u32,
}

impl<'a> From<&'a SourceLoc> for Location<'a> {
    fn from(l: &'a SourceLoc) -> Self {
        Location {
            file: &l.file,
            line: l.line,
            column: l.column,
        }
    }
}

/// One of a thread frame's `inlined`.
#[derive(Serialize)]
pub struct Inlined<'a> {
    pub function: Option<&'a str>,
    pub location: Option<Location<'a>>,
}

impl<'a> From<&'a InlineFrame> for Inlined<'a> {
    fn from(f: &'a InlineFrame) -> Self {
        Inlined {
            function: f.function.as_deref(),
            location: f.location.as_ref().map(Location::from),
        }
    }
}

/// One of a thread frame's `variables`.
#[derive(Serialize)]
pub struct Var<'a> {
    pub name: &'a str,
    pub kind: &'static str,
    pub type_name: &'a str,
    pub value: &'a str,
    pub address: Option<u64>,
    pub inlined_in: Option<&'a str>,
}

impl<'a> From<&'a Variable> for Var<'a> {
    fn from(v: &'a Variable) -> Self {
        Var {
            name: &v.name,
            kind: match v.kind {
                VarKind::Parameter => "parameter",
                VarKind::Local => "local",
            },
            type_name: &v.type_name,
            value: &v.value,
            address: v.address,
            inlined_in: v.inlined_in.as_deref(),
        }
    }
}

/// A thread frame's `unwind`: how its caller was found.
pub fn unwind(u: UnwindMethod) -> &'static str {
    match u {
        UnwindMethod::Context => "context",
        UnwindMethod::Cfi => "cfi",
        UnwindMethod::FramePointer => "frame-pointer",
        UnwindMethod::StackTop => "stack-top",
    }
}

/// The kind of an `active.edges` entry.
pub fn edge_kind(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Flow => "flow",
        EdgeKind::Call => "call",
        EdgeKind::Return => "return",
    }
}

/// `stats` of `csi slice --stats`.
#[derive(Serialize)]
pub struct Stats<'a> {
    pub total: usize,
    pub restricted: usize,
    pub unrestricted: usize,
    pub restricted_lines: usize,
    pub unrestricted_lines: usize,
    pub frames: Vec<FrameStats<'a>>,
}

impl<'a> From<&'a SliceStats> for Stats<'a> {
    fn from(s: &'a SliceStats) -> Self {
        Stats {
            total: s.total,
            restricted: s.restricted,
            unrestricted: s.unrestricted,
            restricted_lines: s.restricted_lines,
            unrestricted_lines: s.unrestricted_lines,
            frames: s.frames.iter().map(FrameStats::from).collect(),
        }
    }
}

/// One of `stats.frames`.
#[derive(Serialize)]
pub struct FrameStats<'a> {
    pub frame: usize,
    pub function: &'a str,
    pub total: usize,
    pub restricted: usize,
    pub unrestricted: usize,
}

impl<'a> From<&'a FrameSliceStats> for FrameStats<'a> {
    fn from(f: &'a FrameSliceStats) -> Self {
        FrameStats {
            frame: f.frame,
            function: &f.function,
            total: f.total,
            restricted: f.restricted,
            unrestricted: f.unrestricted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(&serde_json::to_value(v).unwrap()).unwrap()
    }

    /// Spellings the fixture comparison (bench/refactor/compare.sh) does not reach.
    #[test]
    fn spellings() {
        let d = DebugSource::Debuginfod {
            url: "https://d".into(),
            path: PathBuf::from("/c/x.debug"),
        };
        assert_eq!(
            json(&DebugOrigin::from(&d)),
            r#"{"kind":"debuginfod","path":"/c/x.debug","url":"https://d"}"#
        );
        let d = DebugSource::BuildId {
            path: PathBuf::from("/b"),
        };
        assert_eq!(
            json(&DebugOrigin::from(&d)),
            r#"{"kind":"build-id","path":"/b"}"#
        );
        assert_eq!(
            json(&DebugOrigin::from(&DebugSource::None)),
            r#"{"kind":"none"}"#
        );
        let s = SliceStats {
            total: 5,
            restricted: 1,
            unrestricted: 2,
            restricted_lines: 3,
            unrestricted_lines: 4,
            frames: vec![FrameSliceStats {
                frame: 0,
                function: "f".into(),
                total: 5,
                restricted: 1,
                unrestricted: 2,
            }],
        };
        assert_eq!(
            json(&Stats::from(&s)),
            r#"{"frames":[{"frame":0,"function":"f","restricted":1,"total":5,"unrestricted":2}],"restricted":1,"restricted_lines":3,"total":5,"unrestricted":2,"unrestricted_lines":4}"#
        );
        assert_eq!(metadata(&Metadata::GraphMl), "graph-ml");
        assert_eq!(unwind(UnwindMethod::FramePointer), "frame-pointer");
        assert_eq!(edge_kind(EdgeKind::Return), "return");
    }
}
