//! A function's span in its source file (its first and last line with code) and the counts of
//! its lines that must, may and never have run: the editor's code lenses and hovers, `csi
//! show`'s frame headers and `csi analyze`'s listing.

use csi_analysis::FileLines;
use csi_model::{FuncId, ProgramGraph};

/// Which nodes' lines make a function's span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanLines {
    /// Nodes of the function's own file only: code inlined from another file (a header's
    /// static function; its nodes name their file) does not stretch the span. The editor and
    /// `csi show`.
    OwnFile,
    /// Every node of the function, wherever its lines are: `csi analyze --format text` (kept
    /// as it printed before the views layer).
    All,
}

/// A function of the program graph with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionView {
    pub id: FuncId,
    /// Demangled (see `csi_model::names`).
    pub name: String,
    /// Its source file key.
    pub file: String,
    /// 1-based line of the lens (declaration line, else first line with code).
    pub line: u32,
    pub first: u32,
    pub last: u32,
    /// 1-based declaration line from the debug info, when it has one.
    pub decl: Option<u32>,
}

/// The lines with code of a function (in node order, with repeats).
pub fn function_lines(g: &ProgramGraph, f: FuncId, which: SpanLines) -> Vec<u32> {
    g.function(f)
        .nodes
        .iter()
        .filter(|&&n| which == SpanLines::All || g.node(n).file.is_none())
        .flat_map(|&n| g.node(n).lines())
        .collect()
}

/// A function's span: `None` when it has no file or no line with code. `decl_line` is its
/// declaration's line when known (used when not after its first line).
pub fn function_view(
    g: &ProgramGraph,
    f: FuncId,
    which: SpanLines,
    decl_line: Option<u32>,
) -> Option<FunctionView> {
    let func = g.function(f);
    let file = g.file_name(func.file?).to_string();
    let lines = function_lines(g, f, which);
    let (&first, &last) = (lines.iter().min()?, lines.iter().max()?);
    Some(FunctionView {
        id: f,
        name: func.display_name().into_owned(),
        file,
        line: decl_line.filter(|&d| d <= first).unwrap_or(first),
        first,
        last,
        decl: decl_line,
    })
}

/// Every function of the graph with a span, in the graph's order.
pub fn function_views(
    g: &ProgramGraph,
    which: SpanLines,
    decl_line: &dyn Fn(&str) -> Option<u32>,
) -> Vec<FunctionView> {
    (0..g.functions.len() as FuncId)
        .filter_map(|f| function_view(g, f, which, decl_line(&g.function(f).name)))
        .collect()
}

/// How many lines of a span must, may and never have run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub must: usize,
    pub may: usize,
    pub never: usize,
}

impl LineCounts {
    /// The lines of `l` within `first..=last` (a line has one status: the three are
    /// disjoint).
    pub fn of(l: Option<&FileLines>, first: u32, last: u32) -> Self {
        let Some(l) = l else {
            return Self::default();
        };
        let c = |v: &Vec<u32>| v.iter().filter(|&&x| x >= first && x <= last).count();
        LineCounts {
            must: c(&l.must),
            may: c(&l.may),
            never: c(&l.never),
        }
    }

    pub fn total(&self) -> usize {
        self.must + self.may + self.never
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csi_model::LineStatus;

    /// Counting the three lists in a span is counting each line's status.
    #[test]
    fn counts_are_statuses_in_the_span() {
        let l = FileLines {
            must: vec![3, 5, 9],
            may: vec![4, 10],
            never: vec![6, 7, 12],
            partial: vec![5],
        };
        for (first, last) in [(1, 20), (4, 7), (5, 5), (11, 11), (8, 3)] {
            let by_status = |s| (first..=last).filter(|&x| l.status(x) == Some(s)).count();
            assert_eq!(
                LineCounts::of(Some(&l), first, last),
                LineCounts {
                    must: by_status(LineStatus::Must),
                    may: by_status(LineStatus::May),
                    never: by_status(LineStatus::Never),
                }
            );
        }
        assert_eq!(LineCounts::of(None, 1, 9).total(), 0);
    }
}
