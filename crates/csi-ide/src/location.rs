//! Where a node of the program graph is in the source: its file key (as the graph and DWARF
//! write it) and its first line. The one place that turns nodes into `file:line`.

use csi_model::{NodeId, ProgramGraph};

/// The node's source file key.
pub fn node_file(g: &ProgramGraph, n: NodeId) -> Option<&str> {
    Some(g.file_name(g.file_of(n)?))
}

/// The node's first line (1-based).
pub fn node_line(g: &ProgramGraph, n: NodeId) -> Option<u32> {
    g.node(n).lines().next()
}

/// The node's file key and first line.
pub fn node_location(g: &ProgramGraph, n: NodeId) -> Option<(String, u32)> {
    Some((node_file(g, n)?.to_string(), node_line(g, n)?))
}

/// Where a frame's point (its nodes, the first one current) is.
pub fn point_location(g: &ProgramGraph, point: &[NodeId]) -> Option<(String, u32)> {
    node_location(g, *point.first()?)
}
