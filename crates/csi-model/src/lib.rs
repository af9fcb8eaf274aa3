//! CSI's data model (DESIGN §3): the program graph, the failure report, the shapes of results,
//! and readers for every input format. Plain data; no analysis lives here.

pub mod ballarus;
pub mod dominance;
pub mod error;
pub mod graph;
pub mod graphml;
pub mod grissom_json;
pub mod libc;
pub mod names;
pub mod paths;
pub mod report;
pub mod results;
pub mod sections;

pub use error::InputError;
pub use graph::{
    Call, FileId, FuncId, Function, Node, NodeId, NodeKind, ProgramGraph, ProgramGraphBuilder,
    SourcePos,
};
pub use graphml::{parse_graphml, read_graphml};
pub use grissom_json::{parse_grissom_report, read_grissom_report};
pub use report::{FailureReport, Frame, SignalInfo, Thread};
pub use results::{Coverage, LineStatus, QueryAnswer};
