//! Crashes inside shared libraries (checked-in fixtures `shlib_crash`, `plugin_crash`,
//! `shlib_plain`; their cores name libraries under the build directory, which is gone, so the
//! libraries are found beside the executable): frames in an instrumented library are
//! analysed like the executable's, the program graph spans the modules, and a frame in an
//! uninstrumented library with DWARF gets its file and line.

use std::path::{Path, PathBuf};

use csi_dump::{Crash, CrashFrame};

fn fixture(program: &str, variant: &str) -> (PathBuf, PathBuf) {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/crashes")
        .join(program)
        .join(variant);
    (d.join(program), d.join("core"))
}

fn open(program: &str, variant: &str) -> Crash {
    let (exe, core) = fixture(program, variant);
    Crash::open(&exe, &core, &Default::default())
        .unwrap_or_else(|e| panic!("{program}/{variant}: {e}"))
}

fn crashed_frames(crash: &Crash) -> &[CrashFrame] {
    &crash.threads.iter().find(|t| t.crashed).unwrap().frames
}

fn frame<'c>(crash: &'c Crash, function: &str) -> &'c CrashFrame {
    crashed_frames(crash)
        .iter()
        .find(|f| f.function.as_deref() == Some(function))
        .unwrap_or_else(|| panic!("no frame of {function}"))
}

#[test]
fn frames_in_an_instrumented_library_are_analysed() {
    for variant in ["realistic-O0", "realistic-O2"] {
        let crash = open("shlib_crash", variant);
        let g = &crash.graph;
        let walk = frame(&crash, "walk_sum");
        assert!(walk.module.ends_with("libwalk.so"), "{}", walk.module);
        let f = walk.graph_function.expect("walk_sum is in the graph");
        assert!(g
            .function(f)
            .object
            .as_deref()
            .unwrap()
            .ends_with("libwalk.so"));
        assert!(walk.report_frame.is_some());
        let loc = walk.call_location.as_ref().unwrap();
        assert!(
            loc.file.ends_with("src/shlib/walk.c") && loc.line == 25,
            "{loc:?}"
        );
        // The loop ran three times (node `b` skipped): the decoded path shows it.
        assert!(walk.path.len() >= 8, "{variant}: {:?}", walk.path);
        assert!(walk.path_note.is_none(), "{variant}: {:?}", walk.path_note);
        // main's call of walk_sum goes through the PLT into the library: a call edge.
        let main = frame(&crash, "main");
        let rf = &crash.report.threads[0].frames[main.report_frame.unwrap()];
        assert!(
            rf.point.iter().any(|&p| g.callees(p).contains(&f)),
            "{variant}: main's call site does not reach walk_sum"
        );
        assert!(!crash.report.threads[0].frames[walk.report_frame.unwrap()].called_from_outside);
        // The library's coverage arrays are read at its load bias.
        let in_lib = |n: &u32| g.function(g.node(*n).function).object.is_some();
        assert!(
            crash
                .report
                .global_coverage
                .iter()
                .any(|(n, &ran)| in_lib(n) && (ran || variant.ends_with("O2"))),
            "{variant}: no global coverage read in the library"
        );
        assert!(
            crash.notices.iter().all(|n| !n.contains("libwalk")),
            "{:?}",
            crash.notices
        );
    }
}

#[test]
fn same_named_static_functions_stay_in_their_modules() {
    let crash = open("shlib_crash", "realistic-O0");
    let g = &crash.graph;
    let helpers: Vec<_> = (0..g.functions.len() as u32)
        .filter(|&f| g.function(f).name == "helper")
        .collect();
    assert_eq!(helpers.len(), 2);
    let (exe_helper, lib_helper) = if g.function(helpers[0]).object.is_none() {
        (helpers[0], helpers[1])
    } else {
        (helpers[1], helpers[0])
    };
    assert!(g.function(lib_helper).object.is_some());
    // Node ids stay unique: the library's carry its file name.
    let id = &g.node(g.function(lib_helper).entry).ext_id;
    assert!(id.starts_with("libwalk.so!helper@"), "{id}");
    // visit (library) calls the library's helper, main the executable's.
    let callers = g.callers();
    let caller_fn = |f: u32| -> Vec<String> {
        callers[f as usize]
            .iter()
            .map(|&n| g.function(g.node(n).function).name.clone())
            .collect()
    };
    assert_eq!(caller_fn(lib_helper), ["visit"]);
    assert_eq!(caller_fn(exe_helper), ["main"]);
}

#[test]
fn a_dlopened_plugin_is_analysed() {
    for variant in ["realistic-O0", "realistic-O2"] {
        let crash = open("plugin_crash", variant);
        let run = frame(&crash, "plugin_run");
        assert!(run.module.ends_with("libplug.so"), "{}", run.module);
        let f = run.graph_function.expect("plugin_run is in the graph");
        // Called through dlsym's pointer: library code may enter it at any time.
        assert!(crash.graph.async_roots.contains(&f));
        assert!(!run.path.is_empty(), "{variant}: no path");
        let cov = csi_analysis::best_effort_coverage(&crash.graph, &crash.report)
            .unwrap_or_else(|e| panic!("{variant}: {e}"));
        assert!(cov.frames.len() >= 2, "{variant}");
    }
}

#[test]
fn a_frame_in_an_uninstrumented_library_with_dwarf_has_its_line() {
    for variant in ["realistic-O0", "realistic-O2"] {
        let crash = open("shlib_plain", variant);
        let tick = &crashed_frames(&crash)[0];
        assert_eq!(tick.function.as_deref(), Some("tick"));
        assert!(tick.module.ends_with("libshim.so"));
        let loc = tick
            .location
            .as_ref()
            .expect("file:line from the library's DWARF");
        assert!(loc.file.ends_with("src/shlib_plain/shim.c"), "{loc:?}");
        assert_eq!(loc.line, 13, "{variant}");
        assert!(tick.graph_function.is_none());
        assert!(tick.variables.iter().any(|v| v.name == "c"), "{variant}");
    }
}
