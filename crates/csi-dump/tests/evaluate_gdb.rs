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
    let (compared, mismatches) = agree(&dir, "null_deref", &cases);
    assert!(
        mismatches.is_empty(),
        "differences from gdb:\n{}",
        mismatches.join("\n")
    );
    assert!(compared >= 40, "compared {compared}");
}

/// Evaluates each function's expressions in its frame of the crash in `dir` and compares them
/// with gdb's `print`: (how many agree, the differences).
fn agree(dir: &Path, program: &str, cases: &[(&str, &[&str])]) -> (usize, Vec<String>) {
    let (exe, core) = (dir.join(program), dir.join("core"));
    let crash = csi_dump::Crash::open(&exe, &core, &Default::default()).expect("fixture opens");
    let thread = 0;
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (function, exprs) in cases {
        let frame = crash.threads[thread]
            .frames
            .iter()
            .position(|f| f.function.as_deref() == Some(*function))
            .unwrap_or_else(|| panic!("no frame of {function}"));
        let theirs = gdb_print(&exe, &core, frame, exprs);
        for (e, g) in exprs.iter().zip(theirs) {
            let ours = crash
                .evaluate(thread, frame, e)
                .map(|v| crash.print_value(&v));
            let Some(g) = g else {
                mismatches.push(format!(
                    "{function}: gdb cannot print `{e}` (ours {ours:?})"
                ));
                continue;
            };
            match ours {
                Ok(o) if o == g => compared += 1,
                other => mismatches.push(format!("{function}: `{e}`: ours {other:?}, gdb {g:?}")),
            }
        }
    }
    (compared, mismatches)
}

/// The `values` fixture (structs, unions, bit-fields, enums, 2-D arrays, floats, function
/// pointers, booleans) in the fixture matrix that `fixtures/build.sh` builds (`CSI_FIXTURES`):
/// at -O0 in the path-tracing and the block-coverage builds.
#[test]
fn every_kind_of_value_agrees_with_gdb() {
    if !have_gdb() {
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        return;
    }
    let Some(root) = std::env::var_os("CSI_FIXTURES").map(std::path::PathBuf::from) else {
        // The values fixture is only in the built matrix: scripts/test runs this again with
        // CSI_FIXTURES after building it, where a missing build fails below.
        eprintln!("CSI_FIXTURES not set: the values fixture is only in the built matrix");
        return;
    };
    let cases: [(&str, &[&str]); 2] = [
        (
            "measure",
            &[
                "*s",
                "s->flags",
                "s->flags.delta",
                "s->next->flags",
                "s->next->next->flags.delta",
                "s->w",
                "s->w.f",
                "s->corners",
                "s->corners[1]",
                "s->corners[2].y",
                "s->grid",
                "s->grid[1]",
                "s->grid[1][2]",
                "&s->grid[1]",
                "*s->grid",
                "s->label",
                "s->label[6]",
                "s->area",
                "s->ticket",
                "s->next->ticket - s->ticket",
                "s->scale",
                "s->next->scale",
                "s->visible",
                "s->next->visible",
                "s->small",
                "s->sc",
                "s->color",
                "s->next->color",
                "s->next->next->color",
                "(enum color)6",
                "*s->next->next",
                "shapes",
                "shapes[2].name",
                "global_head == s",
                "counter",
                "names",
                "names[1]",
                "*names[2]",
                "depth",
                "total",
                "lost",
                "sizeof(struct shape)",
                "sizeof(s->grid[0])",
                "sizeof(ticket_t)",
                "&shapes[1]",
                "&shapes[2] - &shapes[0]",
                "(long)&shapes[2] - (long)&shapes[0]",
                "s->flags.mode * 3 + s->flags.ready",
                "(unsigned char)s->flags.tail",
                "s->grid[0][1] << 4",
            ],
        ),
        (
            "main",
            &["shapes[1].flags", "global_head->next->label", "counter"],
        ),
    ];
    let mut total = 0;
    for variant in ["realistic-O0", "bb-O0"] {
        let dir = root.join("values").join(variant);
        assert!(
            dir.join("core").is_file(),
            "no {} (fixtures/build.sh)",
            dir.display()
        );
        let (compared, mismatches) = agree(&dir, "values", &cases);
        assert!(
            mismatches.is_empty(),
            "{variant}: differences from gdb:\n{}",
            mismatches.join("\n")
        );
        total += compared;
    }
    assert_eq!(total, 2 * (50 + 3));
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
