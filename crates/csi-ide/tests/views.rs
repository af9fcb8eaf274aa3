//! The views (what the editor shows of a session, as plain data) on the checked-in null_deref
//! crash: the same facts tests/lsp.rs sees as hints, lenses and hovers, here with the session's
//! 1-based lines and no LSP in between.

mod common;

use csi_ide::session::{Selection, Session};
use csi_ide::views::*;
use csi_model::{Coverage, LineStatus};

const KEYS: &[&str] = &["./src/null_deref.c"];

fn null_deref() -> Session {
    common::open("null_deref", "null_deref/realistic-O0")
}

fn counts(must: usize, may: usize, never: usize) -> LineCounts {
    LineCounts { must, may, never }
}

#[test]
fn hints_and_lenses_of_the_crash_frame() {
    let s = null_deref();
    let sel = s.default_selection();
    assert_eq!(
        sel,
        Selection {
            thread: 0,
            frame: 0,
            step: None,
            inline: None
        }
    );
    assert_eq!(
        frame_marks(&s, KEYS),
        [
            FrameMark::Crash {
                line: 31,
                thread: 0,
                frame: 0,
                callee: None
            },
            FrameMark::Calls {
                line: 41,
                thread: 0,
                callee: "charge()".into(),
                frames: vec![1]
            },
        ]
    );
    let steps = path_steps(&s, sel, KEYS).unwrap();
    assert_eq!((steps.of, steps.current), (4, 3));
    assert_eq!(
        steps.by_line.into_iter().collect::<Vec<_>>(),
        [(27, vec![1]), (28, vec![2]), (29, vec![3]), (31, vec![4])]
    );
    assert_eq!(
        branch_outcomes(&s, sel, KEYS),
        [BranchOutcome {
            line: 29,
            targets: vec![
                BranchTarget {
                    line: Some(30),
                    ran: Some(Coverage::No)
                },
                BranchTarget {
                    line: Some(31),
                    ran: Some(Coverage::Yes)
                },
            ]
        }]
    );
    let functions = function_frames(&s, sel, KEYS);
    let charge = functions
        .iter()
        .find(|f| f.function.name == "charge")
        .unwrap();
    assert_eq!(
        charge.frames,
        [FunctionFrame {
            thread: 0,
            frame: 0,
            selected: true,
            local: counts(4, 1, 1),
            path_steps: 4
        }]
    );
    assert_eq!((charge.more, charge.global), (0, counts(4, 1, 1)));
    let main = functions
        .iter()
        .find(|f| f.function.name == "main")
        .unwrap();
    assert_eq!(main.frames[0].local, counts(6, 0, 2));
    assert!(!main.frames[0].selected);
    assert_eq!(never_lines(&s, KEYS), [20, 30, 42, 43]);
}

#[test]
fn hover_evidence() {
    let s = null_deref();
    let sel = s.default_selection();
    let (thread, frame, a) = variable_at(&s, sel, KEYS, 31, "a").unwrap();
    assert_eq!((thread, frame, a.value.as_str()), (0, 0, "0x0"));
    // On another line of the frame's function, an argument by its name.
    let (_, frame, who) = variable_at(&s, sel, KEYS, 28, "who").unwrap();
    assert_eq!((frame, who.name.as_str()), (0, "who"));
    assert!(variable_at(&s, sel, KEYS, 31, "nope").is_none());
    assert_eq!(frames_on_line(&s, KEYS, 31), [(0, 0)]);
    let f = s.frame(sel).unwrap();
    let sites: Vec<(Option<String>, u32, Coverage)> = call_sites(&s, f)
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.line, c.ran))
        .collect();
    let named = |n: &str| Some(n.to_string());
    assert_eq!(
        sites,
        [
            (named("fee"), 27, Coverage::Yes),
            (named("find"), 28, Coverage::Yes),
            (named("puts"), 30, Coverage::No),
        ]
    );
    let declared = functions_declared_on(&s, KEYS, 26);
    assert_eq!(declared.len(), 1);
    assert_eq!(declared[0].function.name, "charge");
    assert_eq!(declared[0].global, counts(4, 1, 1));
    assert_eq!(declared[0].frames, [(0, vec![0])]);
    assert_eq!(
        line_evidence(&s, sel, KEYS, 30),
        Some(LineEvidence {
            global: Some(LineStatus::Never),
            local: Some(LineStatus::Never),
            evidence: vec![Evidence::CallSite {
                name: "puts".into(),
                ran: false
            }],
        })
    );
}
