//! CSI's post-mortem analyses (DESIGN §6): plain data in, plain data out, no I/O.

pub mod becp;
pub mod context;
pub mod icfg;
pub mod utl;

pub use becp::{best_effort_coverage, Coverages, FrameCoverage, ReportError};
