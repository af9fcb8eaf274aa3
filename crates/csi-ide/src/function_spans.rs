//! Every function defined in a source file, as plain data: its span (from the declaration line,
//! or its first line with code, to its last line with code: the closing brace when code is on
//! it, as a return block's at -O0; at -O2 whatever the CFG nodes say, without the lines of code
//! inlined from functions declared elsewhere in the file) and the global must/may/never counts
//! over that span. The
//! editor's overview lists these instead of finding functions in the text. Lines are the
//! session's (1-based) and files are its keys; nothing here knows LSP (the server's `to_proto`
//! makes the wire's `csi/functionSpans` of it).

use crate::functions::{FunctionView, LineCounts};
use crate::session::Session;

/// A function of the file and its span.
#[derive(Clone, Debug)]
pub struct FunctionSpan<'a> {
    pub function: &'a FunctionView,
    /// 1-based, inclusive: the declaration line (else the first line with code) through the
    /// last line with code.
    pub first: u32,
    pub last: u32,
    /// The global answer's lines within `first..=last`.
    pub global: LineCounts,
}

/// The functions of the file keys `keys` (one document), by first line (then last line and
/// name); a function the graph holds more than once with one name and span (a header's
/// `static inline` in several translation units, or one file under two debug-info names) is
/// listed once.
pub fn function_spans<'a>(s: &'a Session, keys: &[&str]) -> Vec<FunctionSpan<'a>> {
    let mut out: Vec<FunctionSpan<'a>> = s
        .functions
        .iter()
        .filter(|f| keys.contains(&f.file.as_str()))
        .map(|f| {
            let (first, last) = span(s, f);
            FunctionSpan {
                function: f,
                first,
                last,
                global: LineCounts::of(s.global.get(&f.file), first, last),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (a.first, a.last, &a.function.name).cmp(&(b.first, b.last, &b.function.name))
    });
    out.dedup_by(|a, b| (a.first, a.last, &a.function.name) == (b.first, b.last, &b.function.name));
    out
}

/// A function's lines: from its declaration line to its last line with code after it, short
/// of the next function declared in the file (optimized code inlined from other functions of
/// the file is among a function's nodes: `main` holding `charge`'s lines). Without a
/// declaration line: the session's span (first to last line of every node).
fn span(s: &Session, f: &FunctionView) -> (u32, u32) {
    let Some(decl) = f.decl.filter(|&d| d > 0) else {
        return (f.line.min(f.first), f.last);
    };
    let next = s
        .functions
        .iter()
        .filter(|o| o.file == f.file)
        .filter_map(|o| o.decl)
        .filter(|&d| d > decl)
        .min()
        .unwrap_or(u32::MAX);
    let g = &s.graph;
    let last = g
        .function(f.id)
        .nodes
        .iter()
        .filter(|&&n| g.node(n).file.is_none())
        .flat_map(|&n| g.node(n).lines())
        .filter(|&l| l >= decl && l < next)
        .max()
        .unwrap_or(decl);
    (decl, last)
}
