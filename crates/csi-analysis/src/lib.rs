//! CSI's post-mortem analyses (DESIGN §6): plain data in, plain data out, no I/O.
//!
//! - [`active`]: active nodes and edges (Figs. 5.2–5.4);
//! - [`utl`]: unreliable-trace-language emptiness and all-nodes best-effort coverage (§6.5–6.7);
//! - [`becp`]: best-effort coverage of a whole failure report, global and per frame;
//! - [`query`]: control-flow queries (§6.3);
//! - [`lines`]: projection of node answers to source lines.

pub mod active;
pub mod becp;
pub mod context;
pub mod icfg;
pub mod lines;
pub mod passing;
pub mod query;
pub mod sdg;
pub mod slice;
#[doc(hidden)]
pub mod synthetic;
pub mod utl;

pub use active::{active_nodes_edges, ActiveSet, EdgeKind};
pub use becp::{
    best_effort_coverage, best_effort_coverage_compared, Coverages, FrameCoverage, ReportError,
};
pub use lines::{nodes_on_line, project_lines, FileLines};
pub use query::{answer_query, Query};
