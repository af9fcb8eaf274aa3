//! `Crash::evaluate` against gdb's `print` on the same core: the same values for C expressions
//! over a frame's variables and the program's globals (names, `.`, `->`, `*`, `&`, `[]`, casts,
//! `sizeof`, arithmetic, comparisons), in two frames of a fixture crash.

use std::path::Path;

/// gdb's `print` of each expression in frame `frame`, with `$N = ` removed (`None` on error).
fn gdb_print(exe: &Path, core: &Path, frame: usize, exprs: &[&str]) -> Vec<Option<String>> {
    let mut cmd = std::process::Command::new("gdb");
    cmd.args(["-batch", "-nx"])
        // Our strings stop at their NUL and repeated elements are listed, as with these.
        .args([
            "-ex",
            "set print null-stop on",
            "-ex",
            "set print repeats unlimited",
        ])
        .args(["-ex", &format!("frame {frame}")]);
    for (i, e) in exprs.iter().enumerate() {
        cmd.args([
            "-ex",
            &format!("echo @@{i}@@"),
            "-ex",
            &format!("print {e}"),
        ]);
    }
    let out = cmd.arg(exe).arg(core).output().expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut res = vec![None; exprs.len()];
    for chunk in text.split("@@").skip(1).collect::<Vec<_>>().chunks(2) {
        let [i, body] = chunk else { continue };
        let Ok(i) = i.parse::<usize>() else { continue };
        if let Some(v) = body.trim().split_once(" = ").map(|x| x.1.to_string()) {
            res[i] = Some(v);
        }
    }
    res
}

fn have_gdb() -> bool {
    std::process::Command::new("gdb")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn evaluate_agrees_with_gdb_print() {
    if !have_gdb() {
        // CI installs gdb (scripts/test); a developer machine without it cannot compare.
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("gdb not installed; skipping");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/crashes/null_deref/realistic-O0");
    let (exe, core) = (dir.join("null_deref"), dir.join("core"));
    let crash = csi_dump::Crash::open(&exe, &core, &Default::default()).expect("fixture opens");
    let thread = 0;
    let frame_of = |name: &str| {
        crash.threads[thread]
            .frames
            .iter()
            .position(|f| f.function.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no frame of {name}"))
    };
    let cases: [(&str, &[&str]); 2] = [
        (
            "charge",
            &[
                "list",
                "*list",
                "list->owner",
                "list->next->next->owner",
                "*list->next",
                "list->next->next->next",
                "list->balance + f",
                "who",
                "*who",
                "who[1]",
                "&list->balance",
                "a",
                "f",
                "kind",
                "f * 2 - 1",
                "(long)list->next - (long)list",
                "list->next - list",
                "sizeof(struct account)",
                "list->next->balance > list->balance",
                "!a",
                "~kind",
                "list[0].next->owner[2]",
                "&*list",
                "(char)list->owner[0]",
                "-f % 7",
                "list->owner[0] == 'a' && f != 5",
                "(unsigned char)-1",
                "0x7fffffff + 1",
                "0xffffffffu + 1",
                "&list->next",
            ],
        ),
        (
            "main",
            &[
                "a",
                "b",
                "c",
                "&c",
                "a.next->next->owner",
                "a.next->next == &c",
                "total",
                "a.balance * 100 / 7",
                "*a.next",
                "c.owner[4]",
            ],
        ),
    ];
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (function, exprs) in cases {
        let frame = frame_of(function);
        let theirs = gdb_print(&exe, &core, frame, exprs);
        for (e, g) in exprs.iter().zip(theirs) {
            let ours = crash
                .evaluate(thread, frame, e)
                .map(|v| crash.print_value(&v));
            let g = g.unwrap_or_else(|| panic!("gdb cannot print `{e}` in {function}"));
            match ours {
                Ok(o) if o == g => compared += 1,
                other => mismatches.push(format!("{function}: `{e}`: ours {other:?}, gdb {g:?}")),
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "differences from gdb:\n{}",
        mismatches.join("\n")
    );
    assert!(compared >= 40, "compared {compared}");
}

#[test]
fn bad_expressions_are_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/crashes/null_deref/realistic-O0");
    let crash = csi_dump::Crash::open(
        &dir.join("null_deref"),
        &dir.join("core"),
        &Default::default(),
    )
    .expect("fixture opens");
    for e in [
        "nosuch",
        "a->balance",
        "*f",
        "f.x",
        "f / 0",
        "(struct nosuch *)a",
        "list[",
        "&f + ",
        "sizeof(struct nosuch)",
    ] {
        assert!(crash.evaluate(0, 0, e).is_err(), "`{e}` evaluated");
    }
    // Out-of-range frames and threads are errors too, never panics.
    assert!(crash.evaluate(99, 0, "f").is_err());
    assert!(crash.evaluate(0, 99, "f").is_err());
}
