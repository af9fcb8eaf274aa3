//! The functions of a file as plain data (csi-ide's function_spans) on the checked-in
//! null_deref crashes: the session's 1-based lines, the counts the code lenses show.

mod common;

use csi_ide::function_spans::function_spans;
use csi_ide::session::Session;
use csi_ide::views::function_frames;
use csi_ide::LineCounts;

const KEYS: &[&str] = &["./src/null_deref.c"];

fn open(dir: &str) -> Session {
    common::open("null_deref", dir)
}

fn spans(s: &Session) -> Vec<(&str, u32, u32, LineCounts)> {
    function_spans(s, KEYS)
        .into_iter()
        .map(|f| (f.function.name.as_str(), f.first, f.last, f.global))
        .collect()
}

#[test]
fn spans_at_o0_are_the_lenses_functions() {
    let s = open("null_deref/realistic-O0");
    let c = |must, may, never| LineCounts { must, may, never };
    assert_eq!(
        spans(&s),
        [
            ("find", 7, 13, c(2, 4, 0)),
            ("fee", 15, 23, c(3, 3, 1)),
            ("charge", 26, 32, c(4, 1, 1)),
            ("main", 35, 43, c(6, 0, 2)),
        ]
    );
    // The lenses count over the same lines.
    for f in function_frames(&s, s.default_selection(), KEYS) {
        let span = spans(&s)
            .into_iter()
            .find(|x| x.0 == f.function.name)
            .unwrap();
        assert_eq!(span.3, f.global, "{}", f.function.name);
    }
    // Another file, or none: no functions.
    assert!(function_spans(&s, &["./src/other.c"]).is_empty());
    assert!(function_spans(&s, &[]).is_empty());
}

#[test]
fn spans_at_o2_leave_out_inlined_functions() {
    let s = open("null_deref/realistic-O2");
    let got: Vec<(&str, u32, u32)> = spans(&s).into_iter().map(|x| (x.0, x.1, x.2)).collect();
    // find and fee are inlined into charge and main: their lines (8, 9, 17–21) are among those
    // functions' nodes but not in their spans.
    assert_eq!(got, [("charge", 26, 32), ("main", 35, 43)]);
}
