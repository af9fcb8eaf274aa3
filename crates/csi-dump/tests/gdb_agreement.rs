//! Agreement with gdb on every fixture core (when gdb is installed): the same program frames
//! (function, line) in every thread, and the same values of the csi-cc runtime variables
//! (`__PT_*`, `__CC_arr`, `__BBC_arr`) and of the coverage globals.

mod common;

use std::collections::BTreeMap;

use common::{fixture_crashes, have};

/// gdb's view of one thread: program frames as (function, file, line, locals).
#[derive(Debug, Default)]
struct GdbFrame {
    function: String,
    /// A call's dispatch scope (`csi-cc --csi-scheme=custom`).
    dispatch_scope: bool,
    file: String,
    line: u32,
    locals: BTreeMap<String, String>,
}

fn gdb_threads(exe: &std::path::Path, core: &std::path::Path) -> BTreeMap<u32, Vec<GdbFrame>> {
    let out = std::process::Command::new("gdb")
        .args(["-batch", "-nx"])
        .args(beside(exe))
        .args(["-ex", "set print repeats unlimited"])
        .args([
            "-ex",
            "set print elements unlimited",
            // C++ arguments (std::string) go through libstdc++'s pretty printers, whose
            // errors break a frame line in two.
            "-ex",
            "set print frame-arguments none",
            "-ex",
            "thread apply all bt full",
        ])
        .arg(exe)
        .arg(core)
        .output()
        .expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut threads: BTreeMap<u32, Vec<GdbFrame>> = BTreeMap::new();
    let mut current: Option<u32> = None;
    for line in text.lines() {
        if line.starts_with("Thread ") {
            current = line.split("LWP ").nth(1).and_then(|s| {
                s.trim_end_matches(|c: char| !c.is_ascii_digit())
                    .parse()
                    .ok()
            });
            continue;
        }
        let Some(tid) = current else { continue };
        if let Some(rest) = line.strip_prefix('#') {
            // "#1  0x... in f (a=1) at src/x.c:12" or "#0  f (a=1) at src/x.c:12"
            let rest = rest.split_once(' ').map(|x| x.1).unwrap_or("").trim_start();
            let rest = match rest.split_once(" in ") {
                Some((addr, r)) if addr.starts_with("0x") => r,
                _ => rest,
            };
            // gdb qualifies C++ names (`Stack<int>::sum`); frames carry DWARF's own name.
            let function = unqualified(rest.split(" (").next().unwrap_or("")).to_string();
            let (file, line_no) = match rest.rsplit_once(" at ") {
                Some((_, loc)) => match loc.rsplit_once(':') {
                    Some((f, l)) => (f.to_string(), l.trim().parse().unwrap_or(0)),
                    None => (String::new(), 0),
                },
                None => (String::new(), 0),
            };
            // gdb names the frame of a replica or a call's dispatch scope by its linkage name
            // (`push.__csi_off`, or `f(int) [clone .__csi_off]` in C++); csi by the source
            // function's.
            let dispatch_scope = function.contains(".__csi_dispatch");
            let mut function = function;
            for suffix in [".__csi_off", ".__csi_dispatch"] {
                if let Some(base) = function.strip_suffix(&format!(" [clone {suffix}]")) {
                    // `~Logger() [clone .__csi_dispatch]`: gdb's name of a clone keeps the
                    // parameter list.
                    function = base.split('(').next().unwrap_or(base).to_string();
                } else if let Some(base) = function.strip_suffix(suffix) {
                    function = base.to_string();
                }
            }
            threads.entry(tid).or_default().push(GdbFrame {
                function,
                dispatch_scope,
                file,
                line: line_no,
                ..Default::default()
            });
        } else if let Some(local) = line.strip_prefix("        ") {
            if let (Some((name, value)), Some(f)) = (
                local.split_once(" = "),
                threads.get_mut(&tid).and_then(|v| v.last_mut()),
            ) {
                f.locals.insert(name.to_string(), value.to_string());
            }
        }
    }
    threads
}

fn gdb_print(exe: &std::path::Path, core: &std::path::Path, names: &[String]) -> Vec<String> {
    let mut cmd = std::process::Command::new("gdb");
    cmd.args(["-batch", "-nx"])
        .args(beside(exe))
        .args(["-ex", "set print repeats unlimited"]);
    for n in names {
        cmd.arg("-ex")
            .arg(format!("output {n}"))
            .arg("-ex")
            .arg("echo \\n");
    }
    let out = cmd.arg(exe).arg(core).output().expect("gdb runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{') || l.parse::<i64>().is_ok())
        .map(str::to_string)
        .collect()
}

/// A C++ name without its scopes (`Stack<int>::sum` → `sum`); a C name as it is.
fn unqualified(name: &str) -> &str {
    let (mut depth, mut start) = (0i32, 0);
    let b = name.as_bytes();
    for (k, &c) in b.iter().enumerate() {
        match c {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b':' if depth == 0 && b.get(k + 1) == Some(&b':') => start = k + 2,
            _ => {}
        }
    }
    name.get(start..).unwrap_or(name)
}

#[test]
fn frames_and_trace_variables_match_gdb() {
    if !have("gdb") {
        common::cannot_run("gdb is not installed");
        return;
    }
    let mut checked = 0;
    for fx in fixture_crashes() {
        let crash = csi_dump::Crash::open(&fx.exe, &fx.core, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name()));
        let gdb = gdb_threads(&fx.exe, &fx.core);
        // Functions whose tracing switch is off (`customoff` builds) run replicas without
        // trace variables; where the instrumented copy was inlined, its never-initialized
        // variables are in the caller's frame and the reader does not read them.
        let switches = csi_dump::tracing_switches::tracing_switches(&fx.exe).unwrap_or_default();
        let switchable = !switches.is_empty();
        let off: std::collections::HashSet<String> = switches
            .into_iter()
            .filter(|s| !s.on)
            .map(|s| s.function)
            .collect();
        let graph_file = |f: &str| {
            crash
                .graph
                .files
                .iter()
                .any(|g| csi_dump::same_source(g, f))
        };
        let graph_fn = |f: &str| crash.graph.functions.iter().any(|g| g.name == f);
        for t in &crash.threads {
            // Logical frames (inlined calls expanded), as gdb lists them.
            let ours: Vec<(String, u32)> = t
                .frames
                .iter()
                .filter(|f| f.graph_function.is_some())
                .flat_map(|f| {
                    let inl = f.inlined.iter().map(|i| {
                        (
                            i.function.clone().unwrap_or_default(),
                            i.location.as_ref().map_or(0, |l| l.line),
                        )
                    });
                    let own = (
                        f.function.clone().unwrap_or_default(),
                        f.call_location.as_ref().map_or(0, |l| l.line),
                    );
                    inl.chain(std::iter::once(own)).collect::<Vec<_>>()
                })
                .collect();
            let theirs_all = gdb
                .get(&t.tid)
                .unwrap_or_else(|| panic!("{}: gdb has no thread {}", fx.name(), t.tid));
            // A dispatch scope around the body it called (the next frame in, inlined or not)
            // is that activation's; alone, it is the callee's (code merged from both bodies)
            // unless the pc is the dispatch's own call (a stack overflow faults there) — csi
            // reads the instruction; here its innermost frame says which it took.
            let ours_first = ours.first().map(|o| o.0.as_str());
            let program: Vec<&GdbFrame> = theirs_all
                .iter()
                .enumerate()
                .filter(|&(k, f)| {
                    !(f.dispatch_scope
                        && if k == 0 {
                            ours_first != Some(f.function.as_str())
                                || theirs_all.get(1).is_some_and(|o| o.function == f.function)
                        } else {
                            theirs_all[k - 1].function == f.function
                        })
                })
                .map(|(_, f)| f)
                .filter(|f| {
                    if f.file.is_empty() {
                        graph_fn(&f.function)
                    } else {
                        graph_file(&f.file)
                    }
                })
                .collect();
            // A switched-off function's springboard scope around its inlined replica is a
            // second frame of the same function in gdb; csi drops it: compare with runs of one
            // name collapsed there.
            let collapse = |mut v: Vec<(String, u32)>| {
                if switchable {
                    v.dedup_by(|outer, inner| outer.0 == inner.0);
                }
                v
            };
            let names = |v: &[(String, u32)]| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
            let ours = collapse(ours);
            let theirs = collapse(
                program
                    .iter()
                    .map(|f| (f.function.clone(), f.line))
                    .collect(),
            );
            assert_eq!(
                names(&ours),
                names(&theirs),
                "{}: thread {} program frames differ from gdb",
                fx.name(),
                t.tid
            );
            for (o, g) in ours.iter().zip(&theirs) {
                // At -O2 a pc on a line-0 row (code the compiler merged from several lines)
                // has no line for the analysis; gdb shows the row before it. (csi-dap shows
                // gdb's line too: `Crash::line_for_display`.)
                let merged = o.1 == 0 && fx.name().contains("-O2");
                if g.1 != 0 && !merged {
                    assert_eq!(o.1, g.1, "{}: thread {}: line of {}", fx.name(), t.tid, o.0);
                }
            }
            let program: Vec<&GdbFrame> = program
                .into_iter()
                .filter(|f| !f.file.is_empty() || graph_fn(&f.function))
                .collect();
            // The trace variables, frame by frame.
            // Our physical frames against gdb's frames of the same functions, in order.
            let mut rest = program.iter();
            for f in t.frames.iter().filter(|f| f.graph_function.is_some()) {
                let Some(g) = rest.find(|g| Some(&g.function) == f.function.as_ref()) else {
                    panic!("{}: gdb has no frame of {:?}", fx.name(), f.function);
                };
                for v in &f.variables {
                    if !v.name.starts_with("__PT_")
                        && !v.name.starts_with("__CC_arr")
                        && !v.name.starts_with("__BBC_arr")
                    {
                        continue;
                    }
                    // A variable of code inlined here (csi-cc instrumented before optimization:
                    // the inlined copy's own state) against gdb's frame of that inlined call.
                    let g = match &v.inlined_in {
                        None => *g,
                        Some(inlined) => match program.iter().find(|g| &g.function == inlined) {
                            Some(g) => *g,
                            None => continue,
                        },
                    };
                    let Some(gv) = g.locals.get(&v.name) else {
                        if !off.is_empty() {
                            continue;
                        }
                        panic!("{}: gdb shows no {} in {}", fx.name(), v.name, g.function)
                    };
                    let both_unreadable = gv.starts_with("<error") && v.value.starts_with('<');
                    if !both_unreadable {
                        assert_eq!(&v.value, gv, "{}: {} in {}", fx.name(), v.name, g.function);
                    }
                    checked += 1;
                }
            }
        }
        // Coverage globals.
        let names: Vec<String> = crash
            .graph
            .functions
            .iter()
            .filter(|f| f.coverage_instrumented)
            .map(|f| f.name.clone())
            .collect();
        let _ = names;
        let globals = global_names(&fx.exe);
        if !globals.is_empty() {
            let values = gdb_print(&fx.exe, &fx.core, &globals);
            let ours = csi_dump::global_values(&crash, &globals);
            assert_eq!(
                values.len(),
                globals.len(),
                "{}: gdb printed {values:?}",
                fx.name()
            );
            for ((name, theirs), ours) in globals.iter().zip(&values).zip(&ours) {
                assert_eq!(
                    ours.as_deref(),
                    Some(theirs.as_str()),
                    "{}: {name}",
                    fx.name()
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} values agree with gdb");
}

/// gdb options that find the program's shared libraries beside it when the core's paths are
/// gone (checked-in crashes), as csi-dump does.
fn beside(exe: &std::path::Path) -> [String; 2] {
    let dir = exe.parent().unwrap_or(std::path::Path::new("."));
    [
        "-iex".into(),
        format!("set solib-search-path {}", dir.display()),
    ]
}

/// The shared libraries (`*.so`) that lie beside a fixture program.
fn libraries_beside(exe: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = exe.parent().unwrap_or(std::path::Path::new("."));
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".so"))
        .collect();
    v.sort();
    v
}

/// Names of the coverage globals in the symbol tables of the executable and its libraries.
fn global_names(exe: &std::path::Path) -> Vec<String> {
    use object::{Object, ObjectSymbol};
    let mut v: Vec<String> = Vec::new();
    for path in std::iter::once(exe.to_path_buf()).chain(libraries_beside(exe)) {
        let data = std::fs::read(&path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        v.extend(
            file.symbols()
                .filter_map(|s| s.name().ok().map(str::to_string))
                .filter(|n| {
                    n.starts_with("__CC_arr_")
                        || n.starts_with("__BBC_arr_")
                        || n.starts_with("__FC_arr_")
                }),
        );
    }
    v.sort();
    v.dedup();
    v
}
