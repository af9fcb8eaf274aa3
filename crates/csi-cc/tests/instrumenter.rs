//! End-to-end tests of the instrumenter: behaviour preserved in every scheme at -O0/-O2,
//! metadata readable by csi-model, path traces right under gdb, bad input handled.

use csi_model::ballarus::{unrotate_ring, PathEnd, PathStart};
use csi_model::sections::{
    parse_bbc, parse_cc, parse_cfg, parse_fc, parse_pt, CfgFunction, PtFunction,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const CSI_CC: &str = env!("CARGO_BIN_EXE_csi-cc");
const SCHEMES: &[&str] = &["realistic", "pt", "cc", "bb", "fc", "all", "none", "custom"];

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "csi-cc-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> Output {
    // A file just written (a binary whose switches a test set) may still be open for writing
    // in a child another test thread forked and has not exec'd yet: ETXTBSY until it has.
    for _ in 0..50 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}")),
        }
    }
    panic!("cannot run {cmd:?}: text file busy")
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `src` built by csi-cc with `--csi-scheme=<scheme>` and `extra` into `dir/name` (checked).
fn build_scheme(dir: &Path, scheme: &str, src: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    ok(
        &run(Command::new(CSI_CC)
            .arg(format!("--csi-scheme={scheme}"))
            .args(extra)
            .arg(src)
            .arg("-o")
            .arg(&exe)),
        name,
    );
    exe
}

fn section(exe: &Path, name: &str) -> Vec<u8> {
    let dir = exe.parent().unwrap();
    let dump = dir.join(format!(
        "{}{}",
        exe.file_name().unwrap().to_string_lossy(),
        name
    ));
    let out = run(Command::new("objcopy")
        .arg(format!("--dump-section={name}={}", dump.display()))
        .arg(exe)
        .arg(dir.join("objcopy.out")));
    if !out.status.success() {
        return Vec::new();
    }
    std::fs::read(dump).unwrap_or_default()
}

/// `csi-c++`, made next to csi-cc by its build script.
fn csi_cxx() -> PathBuf {
    Path::new(CSI_CC).with_file_name("csi-c++")
}

/// Builds `sources` plainly and with csi-cc in every scheme at -O0 and -O2; the programs must
/// print the same and exit the same; the metadata must parse.
fn same_behaviour(sources: &[&str], args: &[&str]) {
    same_behaviour_with(("clang-19", Path::new(CSI_CC)), sources, args)
}

/// [`same_behaviour`] with a (plain compiler, csi driver) pair; every function instrumented
/// (no fallback warning).
fn same_behaviour_with((plain_cc, csi): (&str, &Path), sources: &[&str], args: &[&str]) {
    let d = scratch();
    let srcs: Vec<String> = sources.iter().map(|s| fixture(s)).collect();
    for opt in ["-O0", "-O2"] {
        let plain = d.join(format!("plain{opt}"));
        ok(
            &run(Command::new(plain_cc)
                .arg(opt)
                .args(&srcs)
                .arg("-o")
                .arg(&plain)),
            "plain clang",
        );
        let want = run(Command::new(&plain).args(args));
        for scheme in SCHEMES {
            let exe = d.join(format!("csi-{scheme}{opt}"));
            // Both metadata formats: -O0 builds write csi-cc v1.4.0's sections as text too.
            let text = opt == "-O0";
            let built = run(Command::new(csi)
                .arg(format!("--csi-scheme={scheme}"))
                .args(text.then_some("--csi-metadata=text"))
                .arg(opt)
                .args(&srcs)
                .arg("-o")
                .arg(&exe));
            ok(&built, &format!("{} {scheme} {opt}", csi.display()));
            assert!(
                built.stderr.is_empty(),
                "{sources:?} {scheme} {opt}: {}",
                String::from_utf8_lossy(&built.stderr)
            );
            let got = run(Command::new(&exe).args(args));
            assert_eq!(
                got.stdout, want.stdout,
                "{sources:?} {scheme} {opt}: stdout differs"
            );
            assert_eq!(
                got.status.code(),
                want.status.code(),
                "{sources:?} {scheme} {opt}: exit"
            );
            let file = exe.display().to_string();
            let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), &file).unwrap();
            assert!(!cfg.is_empty());
            csi_model::sections::cfg_to_program_graph(&cfg, &file).unwrap();
            let pt = parse_pt(&section(&exe, ".debug_PT"), &file).unwrap();
            let cc = parse_cc(&section(&exe, ".debug_CC"), &file).unwrap();
            let bbc = parse_bbc(&section(&exe, ".debug_BBC"), &file).unwrap();
            let fc = parse_fc(&section(&exe, ".debug_FC"), &file).unwrap();
            let has_pt = matches!(*scheme, "realistic" | "pt" | "all" | "custom");
            assert_eq!(
                !pt.is_empty(),
                has_pt && text,
                "{scheme}: .debug_PT presence"
            );
            assert_eq!(
                !cc.is_empty(),
                matches!(*scheme, "realistic" | "cc" | "all" | "custom") && text
            );
            assert_eq!(!bbc.is_empty(), matches!(*scheme, "bb" | "all") && text);
            assert_eq!(!fc.is_empty(), matches!(*scheme, "fc" | "all") && text);
            for f in &pt {
                let g = f.path_graph().unwrap();
                let n = g.num_paths().unwrap();
                for id in 0..n.min(50) as i64 {
                    g.decode_complete(id).unwrap();
                }
            }
            assert!(cfg
                .iter()
                .all(|f| f.path_traced == (has_pt && f.pt_skipped.is_none())));
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn loops_switch_goto_recursion_behave_the_same() {
    same_behaviour(&["loops.c"], &["27"]);
}

#[test]
fn cxx_exceptions_behave_the_same_in_every_scheme() {
    // The built-in inputs throw both handled exception types through two frames.
    same_behaviour_with(("clang++-19", &csi_cxx()), &["eh.cpp"], &[]);
}

/// Runs csi-cc (or `driver`) in `dir` with `args`; returns the output.
fn drive(driver: &Path, dir: &Path, args: &[&str]) -> Output {
    run(Command::new(driver).current_dir(dir).args(args))
}

#[test]
fn build_system_command_lines() {
    let d = scratch();
    std::fs::copy(fixture("eh.cpp"), d.join("a.cpp")).unwrap();
    std::fs::write(
        d.join("a.c"),
        "int g(void) { return 1; }\nint f(void) { return g() + 1; }\n",
    )
    .unwrap();
    // CMake's dependency flags.
    let out = drive(
        &csi_cxx(),
        &d,
        &[
            "-MD", "-MT", "obj.o", "-MF", "obj.o.d", "-c", "a.cpp", "-o", "obj.o",
        ],
    );
    ok(&out, "csi-c++ -MD -MT -MF");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(d.join("obj.o").exists());
    let deps = std::fs::read_to_string(d.join("obj.o.d")).unwrap();
    assert!(deps.starts_with("obj.o: a.cpp"), "{deps}");
    // automake's (gcc3 depmode): -MF without -MT, the target is the object.
    std::fs::create_dir_all(d.join(".deps")).unwrap();
    let out = drive(
        Path::new(CSI_CC),
        &d,
        &["-MD", "-MP", "-MF", ".deps/x.Tpo", "-c", "-o", "x.o", "a.c"],
    );
    ok(&out, "csi-cc -MD -MP -MF");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deps = std::fs::read_to_string(d.join(".deps/x.Tpo")).unwrap();
    assert!(deps.starts_with("x.o: a.c"), "{deps}");
    assert!(d.join("x.o").exists());
    // A link line: link-only flags never reach a compile step (no "unused" warning).
    let out = drive(
        Path::new(CSI_CC),
        &d,
        &[
            "-shared",
            "-fPIC",
            "-L.",
            "-Wl,-z,defs",
            "a.c",
            "-o",
            "liba.so",
        ],
    );
    ok(&out, "csi-cc -shared");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!section(&d.join("liba.so"), ".debug_CSI_CFG").is_empty());
    // A response file, quoting included.
    std::fs::write(d.join("rsp"), "-O2 '-DNAME=\"a b\"' -c a.c -o rsp.o\n").unwrap();
    let out = drive(Path::new(CSI_CC), &d, &["@rsp"]);
    ok(&out, "csi-cc @rsp");
    assert!(d.join("rsp.o").exists());
    // -x c++ on a .c file: compiled (and instrumented) as C++.
    let out = drive(
        Path::new(CSI_CC),
        &d,
        &["-x", "c++", "-c", "a.c", "-o", "ax.o"],
    );
    ok(&out, "csi-cc -x c++");
    let syms = run(Command::new("nm").arg(d.join("ax.o")));
    let syms = String::from_utf8_lossy(&syms.stdout);
    assert!(
        syms.contains("_Z1fv") && syms.contains("__CC_arr_"),
        "{syms}"
    );
    // -E: clang's preprocessor output.
    let out = drive(Path::new(CSI_CC), &d, &["-E", "a.c"]);
    ok(&out, "csi-cc -E");
    assert!(String::from_utf8_lossy(&out.stdout).contains("int f(void)"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn version_and_help() {
    let d = scratch();
    for (driver, name, compiler) in [
        (PathBuf::from(CSI_CC), "csi-cc", "clang-19"),
        (csi_cxx(), "csi-c++", "clang++-19"),
    ] {
        let out = drive(&driver, &d, &["--version"]);
        ok(&out, "--version");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        assert!(
            first.starts_with(&format!("{name} ")) && first.contains(compiler),
            "{text}"
        );
        assert!(
            lines.next().is_some_and(|l| l.contains("clang version")),
            "{text}"
        );
        let out = drive(&driver, &d, &["--help"]);
        ok(&out, "--help");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("--csi-scheme") && text.contains("OPTIONS:"),
            "{text}"
        );
    }
    // --driver-mode=g++ makes csi-cc the C++ driver.
    let out = drive(Path::new(CSI_CC), &d, &["--driver-mode=g++", "--version"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("csi-c++ "));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn function_pointers_behave_the_same() {
    same_behaviour(&["fnptr.c"], &[]);
}

#[test]
fn multiple_files_with_static_functions_behave_the_same() {
    same_behaviour(&["multi_main.c", "multi_lib.c"], &[]);
}

/// `.debug_CSI_CFG` as `--csi-metadata=zstd` (default) writes it — one compressed piece per
/// object and per COMDAT group (a template instantiated in two units, kept at -O0) — reads as
/// the same records as `--csi-metadata=text`'s, also when objects of both kinds are linked
/// together.
#[test]
fn compressed_metadata_reads_as_the_text() {
    let d = scratch();
    let unit = |name: &str, f: &str| {
        let src = d.join(format!("{name}.cpp"));
        std::fs::write(
            &src,
            format!(
                "template <class T> T twice(T x) {{\n\
                   for (int i = 0; i < 2; i++) x = x + x;\n  return x;\n}}\n\
                 int {f}(int v) {{ return twice(v) + (int)twice(1.5 * v); }}\n"
            ),
        )
        .unwrap();
        src
    };
    let (a, b) = (unit("a", "fa"), unit("b", "fb"));
    let main = d.join("main.cpp");
    std::fs::write(
        &main,
        "int fa(int); int fb(int);\nint main(int c, char **) { return fa(c) + fb(c) == 0; }\n",
    )
    .unwrap();
    let object = |src: &Path, format: &str| {
        let o = d.join(format!(
            "{}-{format}.o",
            src.file_stem().unwrap().to_string_lossy()
        ));
        ok(
            &run(Command::new(csi_cxx())
                .arg("--csi-scheme=all")
                // Text metadata probes every block (`.debug_BBC` cannot say a slot is
                // implied), places call-site probes only within blocks (its readers know
                // only `CfgImplied`) and stores global bits in place: with every probe kept,
                // the compressed build's records are the same.
                .arg("--csi-bb-probes=all")
                .arg("--csi-cc-probes=all")
                .arg("--csi-global-stores=in-place")
                .arg(format!("--csi-metadata={format}"))
                .args(["-O0", "-c"])
                .arg(src)
                .arg("-o")
                .arg(&o)),
            "csi-c++ -c",
        );
        o
    };
    let link = |objs: &[PathBuf], name: &str| {
        let exe = d.join(name);
        ok(
            &run(Command::new(csi_cxx()).args(objs).arg("-o").arg(&exe)),
            "link",
        );
        exe
    };
    let all = |format: &str| [&a, &b, &main].map(|s| object(s, format)).to_vec();
    let text = link(&all("text"), "text");
    let zstd = link(&all("zstd"), "zstd");
    let z = all("zstd");
    let t = all("text");
    let mixed = link(&[z[0].clone(), t[1].clone(), z[2].clone()], "mixed");
    let magic = csi_model::sections::frame::FRAME_MAGIC;
    let has_frame = |b: &[u8]| b.windows(4).any(|w| w == magic);
    let cfg = |exe: &Path| section(exe, ".debug_CSI_CFG");
    let (tb, zb, mb) = (cfg(&text), cfg(&zstd), cfg(&mixed));
    assert!(std::str::from_utf8(&tb).is_ok() && !has_frame(&tb));
    assert!(has_frame(&zb) && has_frame(&mb));
    assert!(zb.len() < tb.len(), "{} >= {}", zb.len(), tb.len());
    // The link put the objects' pieces (the text one and the COMDAT groups' too) into one
    // frame (`repack`); the records read the same (below).
    let frames = |b: &[u8]| b.windows(4).filter(|w| *w == magic).count();
    assert_eq!((frames(&zb), frames(&mb)), (1, 1));
    let want = parse_cfg(&tb, "text").unwrap();
    assert!(want.iter().filter(|f| f.name.contains("twice")).count() == 2);
    assert_eq!(parse_cfg(&zb, "zstd").unwrap(), want);
    assert_eq!(parse_cfg(&mb, "mixed").unwrap(), want);
    // csi-cc v1.4.0's sections: text only, for its tools.
    for name in [".debug_PT", ".debug_CC", ".debug_BBC", ".debug_FC"] {
        assert!(!section(&text, name).is_empty(), "{name}");
        assert!(section(&zstd, name).is_empty(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Basic-block coverage probes only the blocks the dissertation's dominator-based placement
/// keeps (ch. 4): never a block that can end an activation (a call that may not come back, a
/// return), and in every loop of `loops.c` fewer blocks than there are; of those, some store
/// only their global bit (`bbc_local_omitted`: the reader derives the local one), never a
/// block without a probe; `--csi-bb-probes=all` and the text metadata (csi-cc v1.4.0's
/// `.debug_BBC` cannot say a slot is implied) probe every block, locally too.
#[test]
fn block_probes_are_placed_by_dominators() {
    let d = scratch();
    let build = |name: &str, extra: &[&str]| {
        let exe = d.join(name);
        ok(
            &run(Command::new(CSI_CC)
                .arg("--csi-scheme=bb")
                .args(extra)
                .arg(fixture("loops.c"))
                .arg("-o")
                .arg(&exe)),
            name,
        );
        parse_cfg(&section(&exe, ".debug_CSI_CFG"), name).unwrap()
    };
    for opt in ["-O0", "-O2"] {
        let placed = build(&format!("placed{opt}"), &[opt]);
        let unprobed: usize = placed.iter().map(|f| f.bbc_unprobed.len()).sum();
        let blocks: usize = placed
            .iter()
            .filter(|f| f.bbc.is_some())
            .map(|f| {
                f.nodes
                    .iter()
                    .filter_map(|n| n.block)
                    .max()
                    .map_or(0, |b| b as usize + 1)
            })
            .sum();
        assert!(
            unprobed * 5 >= blocks,
            "{opt}: {unprobed} of {blocks} blocks unprobed"
        );
        for f in &placed {
            for &k in &f.bbc_unprobed {
                let nodes = f
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.block == Some(k));
                for (i, n) in nodes {
                    // A call there comes back: a function of the unit (loops.c's do) or a
                    // C library function that runs no program code.
                    if let Some(call) = &n.call {
                        let callee = call.callee.as_deref().unwrap_or("");
                        assert!(
                            placed.iter().any(|g| g.name == callee)
                                || csi_model::libc::comes_back_or_ends(callee),
                            "{} block {k}: a call of {callee:?}",
                            f.name
                        );
                    }
                    // Node 1 is the function's synthetic exit: a return leads there.
                    let out: Vec<u32> = f
                        .edges
                        .iter()
                        .filter(|e| e[0] as usize == i)
                        .map(|e| e[1])
                        .collect();
                    assert!(
                        !out.is_empty() && !out.contains(&1),
                        "{} block {k}: {out:?}",
                        f.name
                    );
                }
            }
        }
        let omitted: usize = placed.iter().map(|f| f.bbc_local_omitted.len()).sum();
        assert!(omitted > 0, "{opt}: no local probe omitted");
        for f in &placed {
            for k in &f.bbc_local_omitted {
                assert!(!f.bbc_unprobed.contains(k), "{} block {k}", f.name);
            }
        }
        let all = build(&format!("all{opt}"), &[opt, "--csi-bb-probes=all"]);
        assert!(all.iter().all(|f| f.bbc_unprobed.is_empty()), "{opt}");
        assert!(all.iter().all(|f| f.bbc_local_omitted.is_empty()), "{opt}");
        let text = build(&format!("text{opt}"), &[opt, "--csi-metadata=text"]);
        assert!(text.iter().all(|f| f.bbc_unprobed.is_empty()), "{opt}");
        assert!(text.iter().all(|f| f.bbc_local_omitted.is_empty()), "{opt}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Call-site probes placed across blocks (ch. 4, Fig. 4.4 with only blocks that have a call
/// probe-able): in the repository's `unprobed_calls` fixture, `fork2`'s and `spare`'s entry
/// blocks lose their probes (both arms and the code after them are probed), their sites get
/// neither a slot nor an implication; `report`'s entry calls `printf`, which may not come back,
/// and would keep its probe but for its caller's. `--csi-cc-probes=all` and the text metadata
/// probe every site.
#[test]
fn call_site_probes_are_placed_across_blocks() {
    let d = scratch();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/src/unprobed_calls.c");
    let build = |name: &str, extra: &[&str]| {
        let exe = build_scheme(&d, "cc", &src, name, extra);
        parse_cfg(&section(&exe, ".debug_CSI_CFG"), name).unwrap()
    };
    let probes = |recs: &[CfgFunction]| -> usize {
        recs.iter()
            .flat_map(|f| &f.nodes)
            .filter(|n| n.labels.iter().any(|l| l.starts_with("CC")))
            .count()
    };
    for opt in ["-O0", "-O2"] {
        let placed = build(&format!("placed{opt}"), &[opt]);
        let rec = |name: &str| placed.iter().find(|f| f.name == name).unwrap();
        for name in ["fork2", "spare"] {
            let f = rec(name);
            assert!(
                f.cc_unprobed.contains(&0),
                "{opt} {name}: {:?}",
                f.cc_unprobed
            );
            let sites: Vec<_> = f
                .nodes
                .iter()
                .filter(|n| n.call.is_some() && n.block.is_some_and(|b| f.cc_unprobed.contains(&b)))
                .collect();
            assert!(!sites.is_empty(), "{opt} {name}");
            for n in sites {
                assert!(
                    n.labels.iter().all(|l| !l.starts_with("CC")),
                    "{opt} {name}"
                );
                assert!(n.implied.is_none(), "{opt} {name}");
            }
        }
        // `report`'s entry block calls `printf`, which may not come back, so the placement
        // across blocks keeps its probe; but `report` is static and `main`'s call site says
        // whether it ran, so its entry block's sites need none (`entry_from_calls`).
        assert!(rec("report").cc_unprobed.contains(&0), "{opt}");
        assert_eq!(rec("report").entry_from_calls, Some(1), "{opt}");
        assert_eq!(rec("spare").entry_from_calls, None, "{opt}: not static");
        // Where the placement drops the entry block's probes, the blocks below decide it,
        // "did not run" too: not from the callers.
        assert_eq!(rec("fork2").entry_from_calls, None, "{opt}");
        let all = build(&format!("all{opt}"), &[opt, "--csi-cc-probes=all"]);
        let text = build(&format!("text{opt}"), &[opt, "--csi-metadata=text"]);
        for recs in [&all, &text] {
            assert!(recs.iter().all(|f| f.cc_unprobed.is_empty()), "{opt}");
        }
        assert!(probes(&placed) + 3 <= probes(&text), "{opt}");
    }
}

/// Block coverage carried across calls: a static function of one block, only ever called
/// directly after calls that come back, gets no probe and no array; its record counts its
/// calls (`entry_from_calls`) and the reader derives it from its callers' blocks. Not for a
/// function called after `printf` in its caller's block (it may not come back), nor one whose
/// address is taken, nor with text metadata, and only with `--csi-bb-probes=calls` (opt-in:
/// a passing run's coverage often leaves such a function unknown).
#[test]
fn one_block_functions_are_covered_by_their_calls() {
    let d = scratch();
    let src = d.join("calls.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n\
         static int twice(int x) { return 2 * x; }\n\
         static int after_print(int x) { return x + 1; }\n\
         static int taken(int x) { return x - 1; }\n\
         int (*fp)(int) = taken;\n\
         int main(int argc, char **argv) {\n\
           (void)argv;\n\
           int a = twice(argc) + twice(argc + 1);\n\
           printf(\"%d\\n\", a);\n\
           int b = after_print(a);\n\
           return fp(b);\n\
         }\n",
    )
    .unwrap();
    let build = |name: &str, extra: &[&str]| {
        let exe = build_scheme(&d, "bb", &src, name, extra);
        let out = run(&mut Command::new(&exe));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "6\n", "{name}");
        let nm = String::from_utf8_lossy(&run(Command::new("nm").arg(&exe)).stdout).into_owned();
        (
            parse_cfg(&section(&exe, ".debug_CSI_CFG"), name).unwrap(),
            nm,
        )
    };
    for opt in ["-O0", "-O2"] {
        let (recs, nm) = build(&format!("calls{opt}"), &[opt, "--csi-bb-probes=calls"]);
        let rec = |name: &str| recs.iter().find(|f| f.name == name).unwrap();
        assert_eq!(rec("twice").entry_from_calls, Some(2), "{opt}");
        assert!(rec("twice").bbc.is_none(), "{opt}");
        assert!(!nm.contains("_twice\n"), "{opt}: twice has no array");
        for name in ["after_print", "taken", "main"] {
            assert_eq!(rec(name).entry_from_calls, None, "{opt} {name}");
            assert!(rec(name).bbc.is_some(), "{opt} {name}");
        }
        for extra in [
            "--csi-metadata=text",
            "--csi-bb-probes=all",
            "--csi-bb-probes=placed",
        ] {
            let (recs, _) = build(&format!("all{opt}{extra}"), &[opt, extra]);
            assert!(
                recs.iter()
                    .all(|f| f.entry_from_calls.is_none() && f.bbc.is_some()),
                "{opt} {extra}"
            );
        }
    }
}

/// A library call that runs program code only through the function it is given (`qsort`,
/// `bsearch`, see `csi_model::libc::callback_argument`) comes back when that function does:
/// the repository's `sort_callback` fixture's `rank` loops over `qsort(.., by_key)` and
/// `bsearch(.., by_key)` and its loop is copied at its exits, for call sites and blocks, at
/// -O0 and at -O2, where glibc's `bsearch` is an inline `available_externally` body that calls
/// its comparator indirectly. With the comparator switched for one that may `longjmp` (an
/// external function), the loop keeps its global stores in place.
#[test]
fn loops_calling_back_through_the_library_are_copied_at_their_exits() {
    let d = scratch();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/src/sort_callback.c");
    let external = d.join("external.c");
    let text = std::fs::read_to_string(&src).unwrap();
    std::fs::write(
        &external,
        text.replace(
            "static int by_key(const void *a, const void *b) {",
            "int by_key_elsewhere(const void *, const void *);\n\
             static int by_key(const void *a, const void *b) {\n\
             if (!a) return by_key_elsewhere(a, b);",
        ),
    )
    .unwrap();
    let build = |name: &str, src: &Path, extra: &[&str]| {
        let obj = d.join(format!("{name}.o"));
        ok(
            &run(Command::new(CSI_CC)
                .args(extra)
                .arg("-c")
                .arg(src)
                .arg("-o")
                .arg(&obj)),
            name,
        );
        let recs = parse_cfg(&section(&obj, ".debug_CSI_CFG"), name).unwrap();
        recs.into_iter()
            .find(|f| f.name == "rank")
            .expect("rank's record")
    };
    for opt in ["-O0", "-O2"] {
        let cc = build(&format!("cc{opt}"), &src, &["--csi-scheme=cc", opt]);
        assert!(!cc.cc_global_at_return.is_empty(), "cc {opt}");
        let bb = build(&format!("bb{opt}"), &src, &["--csi-scheme=bb", opt]);
        assert!(!bb.bbc_global_at_return.is_empty(), "bb {opt}");
        let cc = build(
            &format!("ext-cc{opt}"),
            &external,
            &["--csi-scheme=cc", opt],
        );
        assert!(cc.cc_global_at_return.is_empty(), "external, cc {opt}");
        let bb = build(
            &format!("ext-bb{opt}"),
            &external,
            &["--csi-scheme=bb", opt],
        );
        assert!(bb.bbc_global_at_return.is_empty(), "external, bb {opt}");
    }
}

/// Probes inside loops store only their local bit; the loop's exits copy it into the global
/// slot (`cc_global_at_return`, `bbc_global_at_return`). By default (`auto`) only in loops
/// whose calls all come back: loops.c's `noisy` loops over `printf`, so not there, but with
/// `--csi-global-stores=all-loops`. loops.c's loops run every block and call, so after
/// `main` returns (stopped in `exit`) each such global slot must be set — by the copy alone,
/// since no probe stores there.
#[test]
fn loop_probes_set_their_global_slots_at_return() {
    if !gdb_available() {
        eprintln!("skipping: gdb not installed");
        return;
    }
    let d = scratch();
    let leaves: &[&str] = &["collatz", "nested", "with_goto", "scan", "tally", "main"];
    for opt in ["-O0", "-O2"] {
        for (scheme, prefix) in [("bb", "__BBC_arr_"), ("cc", "__CC_arr_")] {
            let build = |exe: &Path, extra: &[&str]| {
                ok(
                    &run(Command::new(CSI_CC)
                        .arg(format!("--csi-scheme={scheme}"))
                        .arg(opt)
                        .args(extra)
                        .arg(fixture("loops.c"))
                        .arg("-o")
                        .arg(exe)),
                    scheme,
                );
                parse_cfg(&section(exe, ".debug_CSI_CFG"), scheme).unwrap()
            };
            let slots = |f: &CfgFunction| -> Vec<u64> {
                match scheme {
                    "bb" => f.bbc_global_at_return.iter().map(|&k| k as u64).collect(),
                    _ => f.cc_global_at_return.clone(),
                }
            };
            for (mode, with_noisy) in [("all-loops", true), ("auto", false)] {
                let exe = d.join(format!("{scheme}{opt}{mode}"));
                let flag = format!("--csi-global-stores={mode}");
                // The default is `auto`.
                let args: Vec<&str> = if with_noisy { vec![&flag] } else { Vec::new() };
                let cfg = build(&exe, &args);
                let with: Vec<&CfgFunction> = cfg.iter().filter(|f| !slots(f).is_empty()).collect();
                let names: Vec<&str> = with.iter().map(|f| f.name.as_str()).collect();
                let expected: &[&str] = match scheme {
                    "bb" => leaves,
                    _ => &["tally", "main"],
                };
                for name in expected {
                    assert!(names.contains(name), "{scheme}{opt} {mode}: {names:?}");
                }
                assert_eq!(
                    names.contains(&"noisy"),
                    with_noisy,
                    "{scheme}{opt} {mode}: {names:?}"
                );
                for f in &with {
                    if scheme == "bb" {
                        for k in &f.bbc_global_at_return {
                            assert!(f.bbc_stores_locally(*k), "{} block {k}", f.name);
                        }
                    }
                    let (bytes, text) = global_array_at_exit(&exe, prefix, &f.name);
                    for j in slots(f) {
                        assert_eq!(
                            bytes[j as usize], 1,
                            "{scheme}{opt} {mode} {} slot {j}: {text}",
                            f.name
                        );
                    }
                }
            }
            let in_place = build(
                &d.join(format!("{scheme}{opt}p")),
                &["--csi-global-stores=in-place"],
            );
            assert!(
                in_place.iter().all(|f| slots(f).is_empty()),
                "{scheme}{opt}"
            );
            let text = build(
                &d.join(format!("{scheme}{opt}t")),
                &["--csi-global-stores=all-loops", "--csi-metadata=text"],
            );
            assert!(text.iter().all(|f| slots(f).is_empty()), "{scheme}{opt}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--csi-probe-stores=checked` (the default for `bb`): each probe's store into a global
/// coverage array is `if (byte == 0) byte = 1`, in the code as it runs (after optimization),
/// and leaves every global byte as plain stores do: the same arrays at exit, the same output,
/// in the coverage schemes, at -O0 and -O2, with the loops' global stores in place and copied
/// at the loops' exits.
#[test]
fn checked_probe_stores_leave_the_same_bytes() {
    if !gdb_available() {
        eprintln!("skipping: gdb not installed");
        return;
    }
    let d = scratch();
    let functions = [
        "collatz",
        "nested",
        "with_goto",
        "scan",
        "tally",
        "noisy",
        "main",
    ];
    let runs = [
        ("bb", "__BBC_arr_", "-O2", "in-place"),
        ("bb", "__BBC_arr_", "-O2", "auto"),
        ("cc", "__CC_arr_", "-O2", "in-place"),
        ("cc", "__CC_arr_", "-O0", "auto"),
        ("fc", "__FC_arr_", "-O2", "auto"),
    ];
    for (scheme, prefix, opt, stores) in runs {
        let what = format!("{scheme} {opt} {stores}");
        let build = |probes: &str| {
            let flags = [
                opt.to_string(),
                format!("--csi-global-stores={stores}"),
                format!("--csi-probe-stores={probes}"),
            ];
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let name = format!("{scheme}{opt}{stores}-{probes}");
            build_scheme(&d, scheme, Path::new(&fixture("loops.c")), &name, &flags)
        };
        let (checked, plain) = (build("checked"), build("plain"));
        let out = |exe: &Path| run(Command::new(exe).arg("27")).stdout;
        assert_eq!(out(&checked), out(&plain), "{what}");
        let cfg = parse_cfg(&section(&checked, ".debug_CSI_CFG"), scheme).unwrap();
        let mut compared = 0;
        for name in functions {
            let has_array = cfg.iter().any(|f| {
                f.name == name
                    && match scheme {
                        "bb" => f.bbc.is_some(),
                        "cc" => f.cc.is_some(),
                        _ => f.fc.is_some(),
                    }
            });
            if !has_array {
                continue;
            }
            let (a, ta) = global_array_at_exit(&checked, prefix, name);
            let (b, tb) = global_array_at_exit(&plain, prefix, name);
            assert_eq!(a, b, "{what} {name}:\n{ta}\n{tb}");
            assert!(a.contains(&1), "{what} {name}: {ta}");
            compared += 1;
        }
        assert!(compared >= 2, "{what}: {compared} arrays compared");
        // A checked probe tests a byte before it stores: a conditional branch more.
        let branches = |exe: &Path| {
            let dis = run(Command::new("objdump").arg("-d").arg(exe));
            String::from_utf8_lossy(&dis.stdout)
                .lines()
                .filter(|l| {
                    let op = l.split('\t').nth(2).unwrap_or("");
                    op.starts_with('j') && !op.starts_with("jmp")
                })
                .count()
        };
        assert!(branches(&checked) > branches(&plain), "{what}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--csi-probe-hoisting=loops` (the default when optimizing) moves loop heads' probe stores
/// to the loops' entries and drops repeated ones: hoist.c's `walk` loop starts with the
/// inlined `tick`'s probes, then calls the inlined `pick` twice (one frame array, zeroed
/// before each call), which faults on a NULL row (argv[2]) before its probes, or divides by
/// zero after them (argv[3]). Hoisted and unhoisted builds must leave the same bytes — the
/// crashing frame's array (`walk`'s or `pick`'s) and the global arrays of `walk`, `tick` and
/// `pick` — for crashes in an iteration's first call, in a later iteration's second, after
/// `pick`'s probes, at the first touch of a VLA too big for the stack (`fill`), at a NULL row
/// in `chain`'s loop (whose frame-array stores `--csi-probe-merging=words` merges, argv[5]),
/// in the second or a later inlined `twice` of `quad`'s unrolled inlined `sum4`, whose stores
/// repeat the first's but for the array of `twice`, zeroed again in the same block (argv[6]),
/// or none; for block and call-site coverage, checked stores or plain. So must a build with
/// `--csi-probe-hoisting=peel`, whose loops run their first iteration in a copy and store in
/// the others no probe that copy stored (the build must say it peeled some). (Hoisting past the faulting load, or
/// past the VLA's first touch, merging across the load or dropping a merged byte, or a
/// peeled loop's store dropped where the copy has not stored, makes it fail.)
#[test]
fn hoisted_probe_stores_leave_the_same_bytes() {
    if !gdb_available() {
        eprintln!("skipping: gdb not installed");
        return;
    }
    let d = scratch();
    let src = fixture("hoist.c");
    let frame_arrays_py = d.join("frame_arrays.py");
    std::fs::write(
        &frame_arrays_py,
        "import gdb\n\
         def csi_frame_arrays(local):\n\
         \x20   f = gdb.newest_frame()\n\
         \x20   while f is not None:\n\
         \x20       try:\n\
         \x20           v = f.read_var(local).format_string(format='d')\n\
         \x20           print('$frame = %s %s' % (f.name(), v))\n\
         \x20       except ValueError:\n\
         \x20           pass\n\
         \x20       f = f.older()\n",
    )
    .unwrap();
    // `placed`: the one-block helpers (`tick`, ...) keep their block probes, whose stores
    // `chain` has side by side; `calls` (the default) leaves them to their callers' blocks.
    // With global stores in place, `quad`'s inlined `twice`s run in one block (no loop exit
    // copies between them): each zeroes its array right after the last one's store.
    let runs = [
        ("bb", "__BBC_arr", "checked", "placed", "auto"),
        ("bb", "__BBC_arr", "plain", "placed", "auto"),
        ("bb", "__BBC_arr", "checked", "calls", "auto"),
        ("cc", "__CC_arr", "plain", "placed", "auto"),
        ("cc", "__CC_arr", "plain", "placed", "in-place"),
    ];
    for (scheme, local, stores, bb_probes, global_stores) in runs {
        let build = |hoisting: &str| {
            let exe = d.join(format!(
                "{scheme}-{stores}-{bb_probes}-{global_stores}-{hoisting}"
            ));
            let out = run(Command::new(CSI_CC)
                .args([&format!("--csi-scheme={scheme}"), "-O2", "--csi-verbose"])
                .arg(format!("--csi-global-stores={global_stores}"))
                .arg(format!("--csi-bb-probes={bb_probes}"))
                .arg(format!("--csi-probe-stores={stores}"))
                .arg(format!("--csi-probe-hoisting={hoisting}"))
                .arg(if hoisting == "loops" {
                    "--csi-probe-merging=words"
                } else {
                    "--csi-probe-merging=none"
                })
                .arg(&src)
                .arg("-o")
                .arg(&exe));
            ok(&out, &format!("{scheme} {stores} {bb_probes} {hoisting}"));
            (exe, String::from_utf8_lossy(&out.stderr).into_owned())
        };
        let ((hoisted, said), (unhoisted, _)) = (build("loops"), build("none"));
        let (peeled, said_peeled) = build("peel");
        assert!(
            said_peeled.contains("loops peeled") && !said_peeled.contains(" 0 loops peeled"),
            "{scheme} {stores} {bb_probes}: nothing peeled: {said_peeled}"
        );
        // (With `calls` the loop head's probe was `tick`'s: repeats are still dropped.)
        assert!(
            said.contains("moved out of loops")
                && !said.contains(if bb_probes == "calls" {
                    " 0 repeats"
                } else {
                    " 0 moved"
                }),
            "{scheme} {stores} {bb_probes}: nothing hoisted: {said}"
        );
        // `scan`'s probe stores through a phi, given back to the ways into its latch.
        assert!(
            scheme != "bb" || (said.contains("through a phi") && !said.contains(" 0 through")),
            "{scheme} {stores} {bb_probes}: nothing given back: {said}"
        );
        // `chain`'s frame-array stores side by side (block coverage keeps their probes),
        // merged with `--csi-probe-merging=words`.
        assert!(
            scheme != "bb" || bb_probes != "placed" || !said.contains(" 0 merged"),
            "{scheme} {stores}: nothing merged: {said}"
        );
        let nm = run(Command::new("nm").arg(&hoisted));
        let globals: Vec<String> = String::from_utf8_lossy(&nm.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .filter(|s| {
                s.starts_with(&format!("{local}_"))
                    && [
                        "_walk", "_tick", "_pick", "_fill", "_chain", "_stage", "_quad", "_sum4",
                        "_twice", "_scan",
                    ]
                    .iter()
                    .any(|f| s.ends_with(f))
            })
            .map(str::to_string)
            .collect();
        assert!(!globals.is_empty(), "{scheme}: no global arrays");
        let crash_points = [
            "0 -1",
            "3 -1",
            "8 -1",
            "-1 5",
            "-1 -1 1000000000",
            "-1 -1 1 0",
            "-1 -1 1 4",
            "-1 -1 1 -1 2",
            "-1 -1 1 -1 5",
            "-1 -1 1 -1 -1 0",
            "-1 -1 1 -1 -1 6",
            "-1 -1",
        ];
        for crash_at in crash_points {
            let bytes = |exe: &Path| {
                let mut gdb = Command::new("gdb");
                gdb.args(["-batch", "-nx", "-ex", "set print repeats unlimited"])
                    .args(["-ex", "set breakpoint pending on", "-ex", "break exit"])
                    .args(["-ex", &format!("run 10 {crash_at}")]);
                let crashes = crash_at != "-1 -1";
                if crashes {
                    // Every live frame's array, by function: which inlined frame a faulting
                    // load is attributed to may differ between the builds (`quad`'s crash
                    // is in `load_one` in one, in `sum4` in the other; neither has an array
                    // under `cc`, nor `pick`).
                    gdb.arg("-x")
                        .arg(&frame_arrays_py)
                        .args(["-ex", &format!("python csi_frame_arrays('{local}')")]);
                }
                for g in &globals {
                    gdb.args(["-ex", &format!("p/d '{g}'")]);
                }
                let out = run(gdb.arg(exe));
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                let values = gdb_values(&text);
                let expected = globals.len() + usize::from(crashes);
                assert!(values.len() >= expected, "{}:\n{text}", exe.display());
                assert!(
                    values.iter().any(|v| v.contains('1')),
                    "{}:\n{text}",
                    exe.display()
                );
                if crashes {
                    assert!(
                        text.contains("SIGSEGV") || text.contains("SIGFPE"),
                        "{text}"
                    );
                }
                values
            };
            let unhoisted = bytes(&unhoisted);
            assert_eq!(
                bytes(&hoisted),
                unhoisted,
                "{scheme} {stores} {bb_probes} {global_stores}, crash at {crash_at}"
            );
            assert_eq!(
                bytes(&peeled),
                unhoisted,
                "{scheme} {stores} {bb_probes} {global_stores} peeled, crash at {crash_at}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A loop's exit copy reads the frame's local array only after its zeroing: exits.c's
/// `parse` has a loop without calls whose exit enters the block that zeroes `__CC_arr`, on a
/// stack `dirty` filled with ones, and the loop that calls `hexval` never runs — so its
/// global slot must stay clear (a copy before the zeroing set it from the stack's garbage).
#[test]
fn loop_exit_copies_read_the_local_array_only_after_its_zeroing() {
    if !gdb_available() {
        eprintln!("skipping: gdb not installed");
        return;
    }
    let d = scratch();
    let exe = d.join("exits");
    ok(
        &run(Command::new(CSI_CC)
            .args(["--csi-scheme=cc", "-O0", &fixture("exits.c"), "-o"])
            .arg(&exe)),
        "exits.c",
    );
    let plain = run(&mut Command::new(&exe));
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "123\n");
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "exits").unwrap();
    let parse = cfg
        .iter()
        .find(|f| f.name == "parse")
        .expect("parse's record");
    assert!(
        !parse.cc_global_at_return.is_empty(),
        "the hexval loop is copied at its exits"
    );
    let (bytes, text) = global_array_at_exit(&exe, "__CC_arr_", "parse");
    for &j in &parse.cc_global_at_return {
        assert_eq!(bytes[j as usize], 0, "slot {j}: {text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A loop inlined into two specializations that each lose one of its call sites: after
/// optimization each function's exit copies list only the slots its code can still set,
/// behind a flag of its own (`coverage::forget_unset_copy_slots`). `scan_a` runs first and
/// sets its flag; `scan_b`'s slot must still be copied into the shared global array — with
/// the lists shortened but the loop's one flag kept, `scan_b`'s exits would find it set and
/// never copy. `scan_ab` holds both specializations under one flag: its lists keep both
/// slots (a list per call would let its first copy set the flag for the second).
#[test]
fn specialized_loops_copy_the_slots_they_can_set() {
    let d = scratch();
    let exe = d.join("specialized");
    let out = run(Command::new(CSI_CC)
        .args(["--csi-scheme=cc", "--csi-verbose", "-O2", "-g"])
        .arg(fixture("specialized.c"))
        .arg("-o")
        .arg(&exe));
    ok(&out, "specialized.c");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(": 2 slots of loop-exit copies that no code left can set forgotten"),
        "{said}"
    );
    for args in [&[][..], &["ab"][..]] {
        let plain = run(Command::new(&exe).args(args));
        let expected = if args.is_empty() { "30\n" } else { "36\n" };
        assert_eq!(String::from_utf8_lossy(&plain.stdout), expected, "{args:?}");
    }
    // The new flags and lists come in the module's order, not the addresses': the same
    // object every build.
    let objects: Vec<Vec<u8>> = ["a.o", "b.o"]
        .iter()
        .map(|o| {
            let o = d.join(o);
            ok(
                &run(Command::new(CSI_CC)
                    .args(["--csi-scheme=cc", "-O2", "-g", "-c"])
                    .arg(fixture("specialized.c"))
                    .arg("-o")
                    .arg(&o)),
                "specialized.c -c",
            );
            std::fs::read(&o).unwrap()
        })
        .collect();
    assert!(objects[0] == objects[1], "two builds of one unit differ");
    if !gdb_available() {
        eprintln!("skipping the arrays at exit: gdb not installed");
        return;
    }
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "specialized").unwrap();
    let scan = cfg
        .iter()
        .find(|f| f.name == "scan")
        .expect("scan's record");
    assert_eq!(
        scan.cc_global_at_return.len(),
        2,
        "both calls copied at the exits"
    );
    for args in [&[][..], &["ab"][..]] {
        let (bytes, text) = global_array_at_exit_of(&exe, args, "__CC_arr_", "scan");
        for &j in &scan.cc_global_at_return {
            assert_eq!(bytes[j as usize], 1, "{args:?} slot {j}: {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The global coverage array (`prefix`: `__CC_arr_`, `__BBC_arr_`) of `function` as gdb
/// prints it with the program stopped in `exit`, and gdb's output.
fn global_array_at_exit(exe: &Path, prefix: &str, function: &str) -> (Vec<i64>, String) {
    global_array_at_exit_of(exe, &[], prefix, function)
}

/// [`global_array_at_exit`] of a run with arguments `args`.
fn global_array_at_exit_of(
    exe: &Path,
    args: &[&str],
    prefix: &str,
    function: &str,
) -> (Vec<i64>, String) {
    let nm = run(Command::new("nm").arg(exe));
    let symbol = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .find(|s| s.starts_with(prefix) && s.ends_with(&format!("_{function}")))
        .unwrap_or_else(|| panic!("{}: no global array of {function}", exe.display()))
        .to_string();
    let out = run(Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "set print repeats unlimited"])
        .args(["-ex", "set breakpoint pending on"])
        .args(["-ex", "break exit", "-ex", "run"])
        .args(["-ex", &format!("p/d '{symbol}'")])
        .arg("--args")
        .arg(exe)
        .args(args));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let bytes = parse_array(gdb_values(&text).last().expect("gdb printed the array"));
    (bytes, text)
}

/// A symbol's address, from `nm`.
fn symbol_address(exe: &Path, symbol: &str) -> u64 {
    let nm = run(Command::new("nm").arg(exe));
    let text = String::from_utf8_lossy(&nm.stdout);
    text.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            let (a, _, n) = (w.next()?, w.next()?, w.next()?);
            (n == symbol).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .unwrap_or_else(|| panic!("{symbol} not in nm's output"))
}

/// Where a global's byte lies in the file: `nm` gives its address, `objdump -h` its
/// section's address and file offset.
fn symbol_file_offset(exe: &Path, symbol: &str) -> u64 {
    let addr = symbol_address(exe, symbol);
    let h = run(Command::new("objdump").arg("-h").arg(exe));
    let text = String::from_utf8_lossy(&h.stdout);
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 6 {
            let (size, vma, off) = (
                u64::from_str_radix(w[2], 16),
                u64::from_str_radix(w[3], 16),
                u64::from_str_radix(w[5], 16),
            );
            if let (Ok(size), Ok(vma), Ok(off)) = (size, vma, off) {
                if (vma..vma + size).contains(&addr) {
                    return off + (addr - vma);
                }
            }
        }
    }
    panic!("{symbol} at {addr:#x} is in no section");
}

/// Customizable tracing (`--csi-scheme=custom`, ch. 3): every function gets a switch, named in
/// its record, initially on; set to 0 in the file, the function runs its uninstrumented
/// replica — same output, and its probes stay untouched (the coverage byte of its first call
/// site stays 0), while the other functions' still run. Also linked with `--gc-sections`
/// (each function in its own section): the replicas, bodies and switches are kept
/// (`llvm.used`, SHF_GNU_RETAIN), though nothing but the jump the link step writes refers to
/// a body — with `llvm.compiler.used` the link dropped them and the link step found no entry
/// to patch.
#[test]
fn tracing_switches_pick_the_uninstrumented_replica() {
    let d = scratch();
    let plain = d.join("plain");
    ok(
        &run(Command::new("clang-19")
            .args(["-O2", &fixture("loops.c"), "-o"])
            .arg(&plain)),
        "plain",
    );
    let want = run(&mut Command::new(&plain));
    let gc: &[&str] = &["-ffunction-sections", "-Wl,--gc-sections"];
    for (opt, extra) in [("-O0", &[][..]), ("-O2", &[][..]), ("-O2", gc)] {
        let exe = d.join(format!("custom{opt}{}", extra.len()));
        ok(
            &run(Command::new(CSI_CC)
                .args(["--csi-scheme=custom", opt])
                .args(extra)
                .args([&fixture("loops.c"), "-o"])
                .arg(&exe)),
            &format!("custom build {opt} {extra:?}"),
        );
        // An external function's symbol is its replica, entered through a 5-byte NOP that the
        // link step made a `jmp` to its instrumented body, the switch being on (ch. 3's
        // springboard: a patched jump, no test).
        if opt == "-O2" {
            let dis = run(Command::new("objdump")
                .args(["-d", "--no-show-raw-insn", "--disassemble=classify"])
                .arg(&exe));
            let text = String::from_utf8_lossy(&dis.stdout);
            let first = text
                .lines()
                .filter_map(|l| l.split_once(":\t").map(|(_, i)| i.trim()))
                .find(|i| !i.is_empty() && !i.starts_with("endbr64"));
            assert!(
                first.is_some_and(|i| i.starts_with("jmp") && i.ends_with("<classify.__csi_on>")),
                "classify does not enter its body through a jump: {text}"
            );
            let nm = run(Command::new("nm").arg(&exe));
            let at = |name: &str| {
                String::from_utf8_lossy(&nm.stdout)
                    .lines()
                    .find(|l| l.ends_with(&format!(" {name}")))
                    .map(|l| l[..16].to_string())
            };
            assert_eq!(
                at("classify"),
                at("classify.__csi_off"),
                "classify is its replica"
            );
        }
        let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "custom").unwrap();
        let switch_of = |f: &str| {
            cfg.iter()
                .find(|r| r.name == f)
                .and_then(|r| r.switch.clone())
                .unwrap_or_else(|| panic!("{opt}: {f} has no switch"))
        };
        for f in ["collatz", "nested", "classify", "with_goto", "fact", "main"] {
            let off = symbol_file_offset(&exe, &switch_of(f));
            let bytes = std::fs::read(&exe).unwrap();
            assert_eq!(bytes[off as usize], 1, "{opt}: {f}'s switch starts on");
        }
        // `nested` off (its byte and its entry, as `csi tracing` sets them): the same output.
        let mut nested = csi_model::sections::switches::tracing_switches(
            &std::fs::read(&exe).unwrap(),
            "custom",
        )
        .unwrap()
        .into_iter()
        .find(|s| s.function == "nested")
        .expect("nested's switch");
        nested.on = false;
        csi_model::sections::switches::write_switches(&exe, &[nested]).unwrap();
        let got = run(&mut Command::new(&exe));
        assert_eq!(got.stdout, want.stdout, "{opt}: output with `nested` off");
        assert_eq!(got.status.code(), want.status.code(), "{opt}");
        // Under gdb: `nested` runs its replica (no `__PT_current_path` in its frame), `fact`
        // its instrumented body.
        // (At -O2 the unit's calls test the switch where they are and may inline either body.)
        if gdb_available() && opt == "-O0" {
            let g = run(Command::new("gdb")
                .args([
                    "-batch",
                    "-nx",
                    "-ex",
                    "break 'nested.__csi_off'",
                    "-ex",
                    "break fact",
                    "-ex",
                    "run",
                    "-ex",
                    "info symbol $pc",
                    "-ex",
                    "continue",
                    "-ex",
                    "print __PT_current_path",
                ])
                .arg(&exe));
            let out = String::from_utf8_lossy(&g.stdout);
            assert!(
                out.contains("csi_off"), // gdb shows the symbol `nested.__csi_off` as `nested..csi_off`
                "{opt}: the first stop is not in the replica: {out}"
            );
            assert!(out.contains("$1 = "), "{opt}: fact's path register: {out}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Compiles each fixture in `sources` to its own object with `driver` at `opt`, links them in
/// that order into `exe`, and runs it.
fn compile_separately_and_run(driver: &Path, opt: &str, sources: &[&str], exe: &Path) {
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|src| {
            let obj = exe.with_file_name(format!("{src}.o"));
            ok(
                &run(Command::new(driver)
                    .args(["-c", opt, &fixture(src), "-o"])
                    .arg(&obj)),
                "compile",
            );
            obj
        })
        .collect();
    ok(
        &run(Command::new(driver).args(&objects).arg("-o").arg(exe)),
        "link",
    );
    ok(&run(&mut Command::new(exe)), "run");
}

#[test]
fn separate_compilation_and_indirect_candidates() {
    let d = scratch();
    let exe = d.join("multi");
    compile_separately_and_run(
        Path::new(CSI_CC),
        "-O1",
        &["multi_main.c", "multi_lib.c"],
        &exe,
    );
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "multi").unwrap();
    let helpers: Vec<&CfgFunction> = cfg.iter().filter(|f| f.name == "helper").collect();
    // Both static `helper`s are described (unless inlined away at -O1).
    assert!(helpers.iter().all(|f| f.is_static));
    let g = csi_model::sections::cfg_to_program_graph(&cfg, "multi").unwrap();
    assert!(g.function_by_name("count_words").is_some());

    // Indirect calls list address-taken candidates of a compatible type.
    let exe = d.join("fnptr");
    ok(
        &run(Command::new(CSI_CC)
            .args(["--csi-metadata=text", "-O0", &fixture("fnptr.c"), "-o"])
            .arg(&exe)),
        "fnptr",
    );
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "fnptr").unwrap();
    let apply = cfg.iter().find(|f| f.name == "apply_all").unwrap();
    let ind = apply
        .nodes
        .iter()
        .filter_map(|n| n.call.as_ref())
        .find(|c| c.indirect)
        .expect("an indirect call in apply_all");
    let mut cands = ind.candidates.clone();
    cands.sort();
    assert_eq!(cands, vec!["negate", "square", "twice"]);
    let cc = parse_cc(&section(&exe, ".debug_CC"), "fnptr").unwrap();
    let site = &cc.iter().find(|f| f.name == "apply_all").unwrap().sites[0];
    assert_eq!(site.callee, None, "indirect sites are `?`");
    let _ = std::fs::remove_dir_all(&d);
}

fn gdb_available() -> bool {
    Command::new("gdb")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Values printed by `gdb -batch` as `$N = ...`, in order.
fn gdb_values(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix('$'))
        .filter_map(|l| l.split_once(" = ").map(|(_, v)| v.trim().to_string()))
        .collect()
}

fn parse_array(v: &str) -> Vec<i64> {
    v.trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect()
}

struct Trace {
    completed: Vec<Vec<u32>>,
    partial: Vec<u32>,
    pt: PtFunction,
    /// The record's `pt_runs`: an entry is one or more iterations.
    runs: bool,
}

/// Builds ptloop.c, stops in `probe` called from `func`, reads the frame's trace variables and
/// decodes them with csi-model.
fn trace_at_probe(opt: &str, func: &str, arg: &str, pt_size: u32) -> Trace {
    let d = scratch();
    let exe = d.join("ptloop");
    ok(
        &run(Command::new(CSI_CC)
            .arg(format!("--csi-pt-size={pt_size}"))
            .arg("--csi-metadata=text")
            .args(opt.split_whitespace())
            .args([&fixture("ptloop.c"), "-o"])
            .arg(&exe)),
        "build ptloop",
    );
    let out = run(Command::new("gdb")
        .args([
            "-batch",
            "-nx",
            "-ex",
            "set print repeats unlimited",
            "-ex",
            "set print elements unlimited",
        ])
        .args([
            "-ex",
            &format!("break probe if $_caller_is(\"{func}\")"),
            "-ex",
            "run",
        ])
        .args([
            "-ex",
            "up",
            "-ex",
            "p __PT_current_path",
            "-ex",
            "p __PT_counter_arr",
            "-ex",
            "p __PT_counter_idx",
        ])
        .args(["-ex", "info locals", "--args"])
        .arg(&exe)
        .arg(arg));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let vals = gdb_values(&text);
    let pts = parse_pt(&section(&exe, ".debug_PT"), "ptloop").unwrap();
    let pt = pts
        .into_iter()
        .find(|f| f.name == func)
        .expect("function is path-traced");
    // Only a function with back edges has a ring buffer (paths are stored on back edges).
    let looping = pt.edges.iter().any(|e| e.back);
    assert_eq!(
        vals.len(),
        if looping { 3 } else { 1 },
        "gdb output:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.contains("__PT_counter_arr = {"),
        looping,
        "info locals shows the ring buffer iff the function loops:\n{text}"
    );
    let cur: i64 = vals[0].parse().unwrap();
    let (arr, idx) = if looping {
        let arr = parse_array(&vals[1]);
        assert_eq!(arr.len(), pt_size as usize);
        (arr, vals[2].parse::<usize>().unwrap())
    } else {
        (vec![-1], 0)
    };
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "ptloop").unwrap();
    let cf = cfg.iter().find(|f| f.name == func).unwrap();
    // The frame is stopped in the call to `probe`: its node's block is the current block.
    let current = cf
        .nodes
        .iter()
        .find(|n| n.call.as_ref().and_then(|c| c.callee.as_deref()) == Some("probe"))
        .and_then(|n| n.pt_block)
        .unwrap();
    let g = pt.path_graph().unwrap();
    let completed = unrotate_ring(&arr, idx)
        .into_iter()
        .map(|id| g.decode_complete(id).unwrap())
        .collect::<Vec<_>>();
    let partial = g.decode_partial(cur, current).unwrap();
    assert_eq!(partial.end, PathEnd::Partial);
    assert_eq!(*partial.blocks.last().unwrap(), current);
    // Consecutive blocks of every path are CFG edges; consecutive paths chain via back edges.
    let all: Vec<_> = completed.iter().chain(std::iter::once(&partial)).collect();
    for p in &all {
        for w in p.blocks.windows(2) {
            assert!(
                pt.edges
                    .iter()
                    .any(|e| !e.back && e.from == w[0] && e.to == w[1]),
                "{w:?} is not an edge"
            );
        }
    }
    for w in all.windows(2) {
        if let PathEnd::BackEdge(heads) = &w[0].end {
            assert_eq!(w[1].start, PathStart::LoopHead);
            assert!(heads.contains(&w[1].blocks[0]));
        }
    }
    let _ = std::fs::remove_dir_all(&d);
    Trace {
        completed: completed.into_iter().map(|p| p.blocks).collect(),
        partial: partial.blocks,
        pt,
        runs: cf.pt_runs,
    }
}

fn lines_of(pt: &PtFunction, blocks: &[u32]) -> Vec<u32> {
    blocks
        .iter()
        .flat_map(|&b| pt.block(b).unwrap().lines().collect::<Vec<_>>())
        .collect()
}

/// Lines of a partial path up to the call the frame is stopped in (the rest of the last block
/// has not run yet).
fn lines_until_call(pt: &PtFunction, blocks: &[u32], call_line: u32) -> Vec<u32> {
    let mut ls = lines_of(pt, blocks);
    let Some(last_call) = ls.iter().rposition(|&l| l == call_line) else {
        panic!("call line {call_line} not on the partial path {ls:?}")
    };
    ls.truncate(last_call + 1);
    ls
}

/// Fig. 2.4: a loop with a back edge; 25 iterations wrap a 10-entry buffer twice. The last ten
/// completed paths are iterations 15..24, whose branch (line 12 when i % 3 == 0, else line 14)
/// is known from the program; the partial path leaves the loop and reaches the call on line 16.
#[test]
fn path_trace_under_gdb_loop_wraparound_o0() {
    if !gdb_available() {
        // scripts/test installs gdb: in CI this runs.
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("skipping: gdb is not installed");
        return;
    }
    // 10 wraps with a compare, 16 (the default, a power of two) with a mask.
    for size in [10u32, 16] {
        let t = trace_at_probe("-O0", "run", "25", size);
        assert_eq!(
            t.completed.len(),
            size as usize,
            "the buffer wrapped: {size} completed paths"
        );
        let branch: Vec<u32> = t
            .completed
            .iter()
            .map(|p| {
                let ls = lines_of(&t.pt, p);
                assert!(
                    ls.contains(&12) != ls.contains(&14),
                    "one branch per iteration: {ls:?}"
                );
                if ls.contains(&12) {
                    12
                } else {
                    14
                }
            })
            .collect();
        let expect: Vec<u32> = (25 - size..25)
            .map(|i| if i % 3 == 0 { 12 } else { 14 })
            .collect();
        assert_eq!(branch, expect, "ring of {size}");
        let last = lines_until_call(&t.pt, &t.partial, 16);
        assert!(last.contains(&10), "loop test on line 10 in {last:?}");
        assert_eq!(
            last.last(),
            Some(&16),
            "ends at the call on line 16: {last:?}"
        );
        assert!(!last.contains(&12) && !last.contains(&14));
    }

    // A larger buffer that does not wrap: all 25 iterations, oldest first.
    let t = trace_at_probe("-O0", "run", "25", 64);
    assert_eq!(t.completed.len(), 25);
    assert_eq!(
        lines_of(&t.pt, &t.completed[0])[..1],
        [9],
        "first path starts at the entry"
    );
}

/// Straight-line code: the partial path at the call is exactly the lines executed.
#[test]
fn path_trace_under_gdb_straight_line() {
    if !gdb_available() {
        // scripts/test installs gdb: in CI this runs.
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("skipping: gdb is not installed");
        return;
    }
    for (arg, then) in [("5", true), ("1", false)] {
        let t = trace_at_probe("-O0", "straight", arg, 10);
        assert!(t.completed.is_empty());
        let ls = lines_until_call(&t.pt, &t.partial, 24);
        let mut dedup = ls.clone();
        dedup.dedup();
        let want: Vec<u32> = if then {
            vec![21, 22, 23, 24]
        } else {
            vec![21, 22, 24]
        };
        assert_eq!(dedup, want, "arg {arg}");
    }
}

#[test]
fn path_trace_under_gdb_o2() {
    if !gdb_available() {
        // scripts/test installs gdb: in CI this runs.
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("skipping: gdb is not installed");
        return;
    }
    // The optimized code's own CFG (after optimization): the shapes below are LLVM's.
    const O2_AFTER: &str = "-O2 --csi-instrument=after-optimization";
    let t = trace_at_probe(O2_AFTER, "run", "25", 10);
    assert!(!t.completed.is_empty());
    // `run`'s branch became a select at -O2; `skip`'s stays a branch. The ring index lives in
    // a register there (and in memory): the wrapped buffer must still read back in order.
    // The loop is rotated at -O2 (test at the bottom), so the last iteration (i = 24) leaves
    // through the exit, not the back edge: it is in the partial path, and the ring holds
    // iterations 14..23, oldest first.
    let s = trace_at_probe(O2_AFTER, "skip", "25", 10);
    assert_eq!(s.completed.len(), 10, "the buffer wrapped");
    let branch: Vec<bool> = s
        .completed
        .iter()
        .map(|p| lines_of(&s.pt, p).contains(&62))
        .collect();
    let expect: Vec<bool> = (14..24).map(|i| i % 3 == 0).collect();
    let all: Vec<Vec<u32>> = s.completed.iter().map(|p| lines_of(&s.pt, p)).collect();
    assert_eq!(branch, expect, "line 62 runs when i % 3 == 0: {all:?}");
    let last = lines_until_call(&s.pt, &s.partial, 66);
    assert!(
        last.contains(&62) && !last.contains(&64) && last.contains(&66),
        "i = 24 takes line 62, then the call on 66: {last:?}"
    );
    assert!(lines_until_call(&t.pt, &t.partial, 16).contains(&16));
    assert!(
        !s.runs,
        "text metadata stores every iteration (v1.4.0's tools)"
    );
    // `--csi-pt-repeats=once`: an iteration that repeats the path stored last stores nothing,
    // so the ring holds runs — i % 3 == 0, then two iterations of the other path — and reaches
    // back over 10 runs (iterations 0..23 are 16 runs), not 10 iterations.
    let r = trace_at_probe(
        &format!("{O2_AFTER} --csi-pt-repeats=once"),
        "skip",
        "25",
        10,
    );
    assert!(r.runs, "the record says entries are runs");
    let branch: Vec<bool> = r
        .completed
        .iter()
        .map(|p| lines_of(&r.pt, p).contains(&62))
        .collect();
    let all: Vec<Vec<u32>> = r.completed.iter().map(|p| lines_of(&r.pt, p)).collect();
    assert_eq!(
        branch,
        [true, false].repeat(5),
        "runs alternate, oldest first: {all:?}"
    );
}

/// A C++ inline function whose address one unit takes and another's not: the linker keeps
/// one unit's record (instrumented before optimization, in its `__csi_odr` group), here the
/// second unit's (`address_taken: false`, linked first), and the analysis must still see the
/// function as callable through pointers (yaml-cpp's `char_traits<char>::compare`,
/// bench/real FINDINGS 5): the taking unit lists it in its module record.
#[test]
fn comdat_address_taken_in_one_unit_is_seen_whichever_record_is_kept() {
    let d = scratch();
    let exe = d.join("odr_taken");
    compile_separately_and_run(
        &csi_cxx(),
        "-O2",
        &["odr_taken_b.cpp", "odr_taken_a.cpp"],
        &exe,
    );
    let (funcs, modules) =
        csi_model::sections::cfg::parse_cfg_all(&section(&exe, ".debug_CSI_CFG"), "odr_taken")
            .unwrap();
    let name = "_Z14twice_plus_onei";
    let kept: Vec<&CfgFunction> = funcs.iter().filter(|f| f.name == name).collect();
    assert_eq!(kept.len(), 1, "one record kept");
    assert_eq!(
        kept[0].address_taken,
        Some(false),
        "the kept record is the calling unit's (linked first)"
    );
    assert!(modules
        .iter()
        .any(|m| m.address_taken_externals.iter().any(|x| x == name)));
    let g = csi_model::sections::cfg_program_graph(&funcs, &modules, "odr_taken").unwrap();
    let f = g.function_by_name(name).expect("in the graph");
    assert!(
        g.async_roots.contains(&f),
        "callable through a pointer whichever record was kept"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Computed goto (Lua's VM dispatch, `goto *ops[*pc++]`): the indirect branch's edges end a
/// path and its targets start one, so the ring buffer holds one completed path per handler
/// run, in order, and the partial path is the handler that calls `probe`.
#[test]
fn path_trace_under_gdb_computed_goto() {
    if !gdb_available() {
        // scripts/test installs gdb: in CI this runs.
        assert!(std::env::var_os("CI").is_none(), "gdb is required in CI");
        eprintln!("skipping: gdb is not installed");
        return;
    }
    for opt in ["-O0", "-O2"] {
        let t = trace_at_probe(opt, "interp", "5", 10);
        let handlers: Vec<&str> = t
            .completed
            .iter()
            .map(|p| {
                let ls = lines_of(&t.pt, p);
                match () {
                    _ if ls.contains(&35) => "inc",
                    _ if ls.contains(&38) => "dbl",
                    _ if ls.contains(&41) => "probe",
                    _ if ls.contains(&44) => "halt",
                    _ => "entry",
                }
            })
            .collect();
        assert_eq!(
            handlers,
            ["entry", "inc", "dbl", "inc", "dbl", "inc"],
            "{opt}: one completed path per handler, oldest first"
        );
        let last = lines_until_call(&t.pt, &t.partial, 41);
        assert!(
            !last.contains(&35) && !last.contains(&38),
            "{opt}: the partial path is the probe handler: {last:?}"
        );
    }
}

#[test]
fn computed_goto_behaves_the_same() {
    same_behaviour(&["ptloop.c"], &["25"]);
    // With every tracing switch off too: a function that takes a block's address (its
    // dispatch table names the original's blocks) gets no replica and stays instrumented.
    same_behaviour_switched_off(&["ptloop.c"], &["25"]);
}

/// A `--csi-scheme=custom` build with every tracing switch set to 0 in the file behaves as
/// the plain build, at -O0 and -O2.
fn same_behaviour_switched_off(sources: &[&str], args: &[&str]) {
    let d = scratch();
    let srcs: Vec<String> = sources.iter().map(|s| fixture(s)).collect();
    let plain = d.join("plain");
    ok(
        &run(Command::new("clang-19")
            .arg("-O2")
            .args(&srcs)
            .arg("-o")
            .arg(&plain)),
        "plain",
    );
    let want = run(Command::new(&plain).args(args));
    for opt in ["-O0", "-O2"] {
        let exe = d.join(format!("off{opt}"));
        let built = run(Command::new(CSI_CC)
            .args(["--csi-scheme=custom", opt])
            .args(&srcs)
            .arg("-o")
            .arg(&exe));
        ok(&built, "custom");
        let warnings = String::from_utf8_lossy(&built.stderr);
        assert!(
            !warnings.contains("without instrumentation"),
            "{sources:?} {opt}: {warnings}"
        );
        // Every byte 0 and every patched entry a NOP, as `csi tracing --set '*=off'` writes.
        let mut switches = csi_model::sections::switches::tracing_switches(
            &std::fs::read(&exe).unwrap(),
            "custom",
        )
        .unwrap();
        assert!(!switches.is_empty(), "{sources:?} {opt}: no switches");
        for s in &mut switches {
            s.on = false;
        }
        csi_model::sections::switches::write_switches(&exe, &switches).unwrap();
        let got = run(Command::new(&exe).args(args));
        assert_eq!(
            got.stdout, want.stdout,
            "{sources:?} {opt}: every switch off"
        );
        assert_eq!(got.status.code(), want.status.code(), "{sources:?} {opt}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Every switch off: structs passed by value (`byval`: x86-64's musttail lowering overwrote
/// the return address forwarding them), function pointers, C++ exceptions.
#[test]
fn switched_off_builds_behave_the_same() {
    same_behaviour_switched_off(&["byval.c"], &[]);
    same_behaviour_switched_off(&["fnptr.c"], &[]);
    same_behaviour_switched_off(&["loops.c"], &[]);
    // always_inline functions: the dispatch's own calls are `noinline` (an always_inline
    // callee's attributes must not come along onto them, or nothing verifies).
    same_behaviour_switched_off(&["always_inline.c"], &[]);
}

#[test]
fn bad_input() {
    let d = scratch();
    // Unknown scheme.
    let o = run(Command::new(CSI_CC).args(["--csi-scheme=bogus", "-c", &fixture("loops.c")]));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown scheme `bogus`"));
    // Unreadable schema file.
    let o = run(Command::new(CSI_CC).args([
        "--csi-schema=/nonexistent/schema",
        "-c",
        &fixture("loops.c"),
    ]));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read schema file"));
    // A file clang rejects: clang's diagnostics and exit code.
    let o = run(Command::new(CSI_CC)
        .current_dir(&d)
        .args(["-c", &fixture("bad.c")]));
    let p = run(Command::new("clang-19")
        .current_dir(&d)
        .args(["-c", &fixture("bad.c")]));
    assert_eq!(o.status.code(), p.status.code());
    assert_ne!(o.status.code(), Some(0));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("use of undeclared identifier 'undeclared_variable'"),
        "{e}"
    );
    // Schema file: per-function mechanisms.
    let schema = d.join("schema");
    std::fs::write(&schema, "nested;{PT}\nclassify;{CC,BBC}\nmain;{}\n").unwrap();
    let exe = d.join("loops");
    ok(
        &run(Command::new(CSI_CC)
            .arg(format!("--csi-schema={}", schema.display()))
            .args([
                "--csi-metadata=text",
                "--csi-scheme=none",
                "-O0",
                &fixture("loops.c"),
                "-o",
            ])
            .arg(&exe)),
        "schema build",
    );
    let pt = parse_pt(&section(&exe, ".debug_PT"), "x").unwrap();
    assert_eq!(
        pt.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        vec!["nested"]
    );
    let bbc = parse_bbc(&section(&exe, ".debug_BBC"), "x").unwrap();
    assert_eq!(
        bbc.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        vec!["classify"]
    );
    // Bad schema line.
    std::fs::write(&schema, "nested;{XX}\n").unwrap();
    let o = run(Command::new(CSI_CC)
        .arg(format!("--csi-schema={}", schema.display()))
        .args(["-c", &fixture("loops.c")]));
    assert_eq!(o.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&d);
}

/// A function with more than 2^63 acyclic paths is compiled, runs, and is recorded as skipped.
#[test]
fn too_many_paths_is_skipped_and_recorded() {
    let d = scratch();
    let src = d.join("many.c");
    let mut s = String::from("#include <stdio.h>\nint many(int x) {\n  int r = 0;\n");
    for i in 0..70 {
        s.push_str(&format!(
            "  if ((x >> ({i} % 31)) & 1) r += {i}; else r ^= {i};\n"
        ));
    }
    s.push_str("  return r;\n}\nint main(void) { printf(\"%d\\n\", many(12345)); return 0; }\n");
    std::fs::write(&src, s).unwrap();
    let exe = d.join("many");
    ok(
        &run(Command::new(CSI_CC)
            .args(["--csi-metadata=text", "-O0", src.to_str().unwrap(), "-o"])
            .arg(&exe)),
        "build",
    );
    let plain = d.join("plain");
    ok(
        &run(Command::new("clang-19")
            .args(["-O0", src.to_str().unwrap(), "-o"])
            .arg(&plain)),
        "plain",
    );
    assert_eq!(
        run(&mut Command::new(&exe)).stdout,
        run(&mut Command::new(&plain)).stdout
    );
    let cfg = parse_cfg(&section(&exe, ".debug_CSI_CFG"), "many").unwrap();
    let many = cfg.iter().find(|f| f.name == "many").unwrap();
    assert!(!many.path_traced);
    assert!(many
        .pt_skipped
        .as_deref()
        .unwrap()
        .contains("acyclic paths"));
    let pt = parse_pt(&section(&exe, ".debug_PT"), "many").unwrap();
    assert!(pt.iter().all(|f| f.name != "many"));
    assert!(pt.iter().any(|f| f.name == "main"));
    let _ = std::fs::remove_dir_all(&d);
}

/// At -O0 the always-inliner has put a header's `static inline` helper into its caller before
/// csi-cc reads the function: the caller's record keeps the helper's lines, in nodes of the
/// header's file (a node ends where the file changes). Dropped, the copy that ran left the
/// helper's lines to its copies in other units that did not run: "never" (zstd's
/// `ZSTD_storeSeq` in `ZSTD_compressBlock_lazy2_row`, bench/real).
#[test]
fn always_inlined_header_code_keeps_its_lines() {
    let d = scratch();
    let header = d.join("helper.h");
    std::fs::write(
        &header,
        "static inline __attribute__((always_inline)) int scaled(int x) {\n\
           int y = x * 3;\n\
           return y + 1;\n\
         }\n",
    )
    .unwrap();
    let src = d.join("user.c");
    std::fs::write(
        &src,
        "#include \"helper.h\"\n\
         int main(int argc, char **argv) {\n\
           (void)argv;\n\
           int v = argc + 1;\n\
           return scaled(v) == 7 ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    for opt in ["-O0", "-O2"] {
        let name = format!("user{opt}");
        let exe = build_scheme(&d, "realistic", &src, &name, &[opt]);
        assert!(run(&mut Command::new(&exe)).status.success(), "{name}");
        let recs = parse_cfg(&section(&exe, ".debug_CSI_CFG"), &name).unwrap();
        let main = recs
            .iter()
            .find(|r| r.name == "main")
            .expect("main's record");
        assert!(main.positions_complete, "{name}");
        let header_lines: Vec<u32> = main
            .nodes
            .iter()
            .filter(|n| n.file.as_deref().is_some_and(|f| f.ends_with("helper.h")))
            .flat_map(|n| n.positions.iter().map(|p| p[0]))
            .collect();
        if opt == "-O0" {
            // Inlined before csi-cc reads the function.
            for line in [2, 3] {
                assert!(header_lines.contains(&line), "{name}: {header_lines:?}");
            }
            // And `main`'s own lines stay in `main`'s nodes.
            let own: Vec<u32> = main
                .nodes
                .iter()
                .filter(|n| n.file.is_none())
                .flat_map(|n| n.positions.iter().map(|p| p[0]))
                .collect();
            for line in [4, 5] {
                assert!(own.contains(&line), "{name}: {own:?}");
            }
        } else {
            // Instrumented before optimization: a call, and the helper's own record.
            assert!(header_lines.is_empty(), "{name}: {header_lines:?}");
            assert!(recs.iter().any(|r| r.name == "scaled"), "{name}");
        }
    }
}
