//! `csi-cc [--csi-* options] [clang args...]`: a drop-in C compiler that instruments every
//! source file it compiles (DESIGN §4); `csi-c++` (the same program under a name with `++`) is
//! the C++ one. Per source file: clang → bitcode → instrument → object; linking and everything
//! else is clang's. Exit codes and diagnostics are clang's own.

mod callgraph;
mod defuse;
mod instrument;
mod repack;

use instrument::{GlobalStores, Mechanisms, Options, PtLoops};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

const USAGE: &str = "usage: csi-cc [--csi-scheme=realistic|pt|cc|bb|fc|all|none|custom] \
[--csi-schema=FILE] [--csi-pt-size=N] [--csi-pt-repeats=once|every] [--csi-pt-loops=store|elide|elide-innermost|elide-after-entry|elide-all|contract] [--csi-cc-probes=all|placed] [--csi-bb-probes=all|placed|calls] [--csi-probe-stores=plain|checked] [--csi-probe-hoisting=loops|peel|none] [--csi-probe-merging=none|words] \
[--csi-metadata=zstd|text] [--csi-verbose] [clang arguments...]";

const CSI_OPTIONS: &str =
    "CSI options (csi-cc compiles C, csi-c++ C++; everything else is clang's):
  --csi-scheme=S        realistic (default: path tracing + call-site coverage), pt, cc, bb, fc,
                        all, none; custom: realistic's probes, switchable per function after
                        the build (`csi tracing`): each function also has an uninstrumented
                        replica, and its switch byte (section csi_switch) picks one per call
  --csi-schema=FILE     per-function schemes, lines `function;{CC,PT}`
  --csi-pt-size=N       ring buffer of completed paths per frame (default 16; 10, as csi-cc
                        v1.4.0, with --csi-metadata=text); a power of two wraps with a mask
  --csi-pt-repeats=R    `once` (default when optimizing: a loop iteration that repeats the
                        path stored last stores nothing, so the ring holds runs of one or more
                        iterations) or `every` (one entry per iteration, as csi-cc v1.4.0; the
                        default with --csi-metadata=text, whose v1.4.0 readers expect it;
                        always at -O0, with setjmp, and in computed-goto dispatch)
  --csi-pt-loops=L      which loops store a path per iteration. `store` (the default at -O0
                        and with --csi-metadata=text): every iteration of every loop ends a
                        path, which the ring stores; `contract` (the default when
                        optimizing): a loop that some iteration can go round without a call
                        (but to the unit's inline functions), holding no loop that stores,
                        keeps no part of the sum at all: no instruction per iteration, the
                        path up to the loop survives it, which way its iterations went is
                        not known; loops whose every iteration calls store each iteration,
                        which keeps a caller's history for a crash in a callee; `elide`: the
                        same loops only restart the sum on their back edges (the route of
                        the iteration in progress is known, the way to the loop is not);
                        `elide-all`: every loop restarts; `elide-innermost`: innermost loops
                        without calls only; `elide-after-entry`: as `elide-innermost`, but
                        entering such a loop stores the path up to it
  --csi-cc-probes=P     `placed` (default) or `all` call-site probes
  --csi-bb-probes=P     `calls` (default): a block's probe only where the blocks it dominates
                        cannot tell (the dissertation's ch. 4), and no probe in a static
                        function of one block, whose callers' blocks say whether it ran;
                        `placed`: the same but for such functions, which keep theirs; `all`
                        basic-block probes
  --csi-bb-local-budget=N  block visits per function the search for locally minimal local
                        block probes may spend (functions without cycles; the dissertation's
                        Fig. 4.7; default 20000000, 0: keep the dominator placement's)
  --csi-global-stores=G where a call-site or block probe inside a loop sets its global byte:
                        `auto` (default): in a loop whose every call comes back (the unit's
                        own functions no longjmp can pass through, LLVM intrinsics, pure C
                        library functions), the probe sets only the frame's local bit and the
                        loop's exits copy it into the global array; elsewhere where the probe
                        runs. `in-place`: always where it runs. `all-loops`: copied at the
                        exits of every loop — cheaper, but ONLY for programs that never
                        longjmp (or cancel a thread) out of a loop: an activation ended that
                        way loses its loop's global bits (then a never can be wrong)
  --csi-probe-stores=S  `checked` (the default with --csi-scheme=bb): a coverage probe
                        stores a byte only while it reads 0, so a set byte's cache line stays
                        shared by every core (threads running the same code), and a probe on
                        a cycle tests its frame's bit and skips both stores; more code, and an
                        instruction more where a probe runs once per activation. `plain` (the
                        default otherwise): a probe stores its bytes every time it runs
  --csi-probe-hoisting=H  when optimizing: `loops` (default but with --csi-scheme=bb): a
                        coverage probe at the head of a loop, where nothing before it can stop
                        the first iteration, stores once on entering the loop instead of on
                        every iteration, and a probe store an identical one before it makes
                        redundant is dropped (the same bytes at every crash); `peel` (the
                        default with --csi-scheme=bb): besides, a small loop whose every
                        iteration stores a probe gets a copy of its first iteration in front,
                        and the loop itself then stores nothing that copy stored (more code,
                        fewer stores: flex ×1.27 → ×1.03 instructions with bb); `none`: the
                        stores where the optimizer left them
  --csi-probe-merging=M when optimizing: `none` (default) or `words`: a frame array's probe
                        stores side by side become one `or` of their word (fewer
                        instructions, but slower on x86-64: the wider load waits for the byte
                        stores before it)
  --csi-instrument=W    when optimizing (-O1 and up): `before-optimization` (default: probes
                        in the source's CFG, optimized with the program, as the dissertation's
                        csi-cc does; lines decided as at -O0) or `after-optimization` (probes
                        in the optimized code: fewer executed probes, but inside functions
                        that ran a line is rarely decided)
  --csi-metadata=F      `zstd` (default: .debug_CSI_CFG only, each object's piece compressed,
                        and a file csi-cc links holds one compressed piece; all that csi
                        reads) or `text` (uncompressed, and csi-cc v1.4.0's
                        .debug_PT/CC/BBC/FC as well, byte-compatible, for its own tools)
  --csi-verbose         say which functions are not path-traced and why
  --csi-help            this list only
Environment: CSI_CLANG (C compiler, default clang-19), CSI_CLANGXX (C++, default clang++-19),
CSI_OBJCOPY (rewrites a linked file's metadata as one piece, default objcopy), CSI_KEEP_TEMPS
(keep the per-file bitcode).
Programs built with coverage arrays (every scheme but pt and none) write them, when run with
CSI_COVERAGE_OUT=DIR, to DIR/<build-id>.<pid>.csicov per instrumented module at exit and on
SIGUSR2 (coverage of passing runs for `csi triage --passing`); unset, they do nothing.
";

/// `--csi-pt-loops` when optimizing and not told: which loops store no path per iteration
/// (`crates/csi-cc/bench/suite/README.md`, "Loops contracted out of the running sum" and
/// "Loops that go round without a call store no iteration", for what each choice costs and
/// keeps).
const OPTIMIZED_PT_LOOPS: PtLoops = PtLoops::Contract;

/// Options of clang that take the next argument as their value.
const TAKES_ARG: &[&str] = &[
    "-o",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-L",
    "-l",
    "-Xlinker",
    "-Xclang",
    "-Xassembler",
    "-Xpreprocessor",
    "-arch",
    "-target",
    "-T",
    "-u",
    "-z",
    "-e",
    "-isysroot",
    "--sysroot",
    "-aux-info",
    "-mllvm",
    "-main-file-name",
    "-ivfsoverlay",
    "-F",
];

/// Options that only the link step reads (with their value, if they take one): given to a
/// compile step, clang warns that they are unused, which breaks `-Werror` builds and configure
/// tests that look at the compiler's output.
fn link_only(a: &str) -> bool {
    matches!(
        a,
        "-shared"
            | "-static"
            | "-static-pie"
            | "-pie"
            | "-no-pie"
            | "-rdynamic"
            | "-nostdlib"
            | "-nostdlib++"
            | "-nodefaultlibs"
            | "-nostartfiles"
            | "-nolibc"
            | "-static-libgcc"
            | "-static-libstdc++"
            | "-shared-libgcc"
            | "-s"
            | "-r"
            | "-Xlinker"
            | "-T"
            | "-u"
            | "-z"
            | "-e"
    ) || [
        "-L",
        "-l",
        "-Wl,",
        "-fuse-ld=",
        "--ld-path=",
        "-rtlib=",
        "--rtlib=",
        "--unwindlib=",
    ]
    .iter()
    .any(|p| a.starts_with(p))
}

/// Dependency-file options (`-MD -MF x.d -MT x.o`, ...): the front end's only.
fn dependency_option(a: &str) -> bool {
    a.starts_with("-M") && !matches!(a, "-M" | "-MM")
}

/// The compiler csi-cc drives: C, or C++ for `csi-c++` (`++` in the program's name, as clang
/// does it) and `--driver-mode=g++`.
struct Driver {
    cxx: bool,
}

impl Driver {
    fn compiler(&self) -> String {
        if self.cxx {
            std::env::var("CSI_CLANGXX").unwrap_or_else(|_| "clang++-19".into())
        } else {
            std::env::var("CSI_CLANG").unwrap_or_else(|_| "clang-19".into())
        }
    }

    fn name(&self) -> &'static str {
        if self.cxx {
            "csi-c++"
        } else {
            "csi-cc"
        }
    }
}

/// Expands `@file` arguments (response files, GNU quoting: whitespace separates, quotes group,
/// backslash escapes), recursively; an unreadable file stays a literal argument, as in clang.
fn expand_response_files(args: Vec<String>, depth: u32) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        let Some(path) = a.strip_prefix('@').filter(|_| depth < 16) else {
            out.push(a);
            continue;
        };
        match std::fs::read_to_string(path) {
            Ok(text) => out.extend(expand_response_files(split_response(&text), depth + 1)),
            Err(_) => out.push(a),
        }
    }
    out
}

fn split_response(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (_, '\\') if quote != Some('\'') => {
                if let Some(n) = chars.next() {
                    cur.get_or_insert_with(String::new).push(n);
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                cur.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(cur.take()),
            (None, c) => cur.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(cur);
    out
}

fn fail(msg: &str) -> ! {
    eprintln!("csi-cc: error: {msg}");
    exit(1)
}

/// A two-valued option's value: `true` for `yes`, `false` for `no`, else a one-line error.
fn either(value: &str, option: &str, yes: &str, no: &str) -> bool {
    match value {
        v if v == yes => true,
        v if v == no => false,
        v => fail(&format!("{option} must be `{yes}` or `{no}`, not `{v}`")),
    }
}

fn run(cmd: &mut Command) -> i32 {
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => fail(&format!("cannot run {:?}: {e}", cmd.get_program())),
    }
}

fn read_schema(path: &str) -> HashMap<String, Mechanisms> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read schema file `{path}`: {e}")));
    let mut m = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((f, set)) = line.split_once(';') else {
            fail(&format!(
                "{path}:{}: expected `function;{{CC,PT}}`, found `{line}`",
                i + 1
            ))
        };
        let Some(mech) = Mechanisms::from_set(set) else {
            fail(&format!(
                "{path}:{}: bad mechanism set `{set}` (use PT, CC, BBC, FC)",
                i + 1
            ))
        };
        m.insert(f.trim().to_string(), mech);
    }
    m
}

struct TempDir(PathBuf);
impl TempDir {
    /// `std::process::exit` skips destructors: clean up first.
    fn exit(&self, code: i32) -> ! {
        if std::env::var_os("CSI_KEEP_TEMPS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
        exit(code)
    }

    fn fail(&self, msg: &str) -> ! {
        eprintln!("csi-cc: error: {msg}");
        self.exit(1)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("CSI_KEEP_TEMPS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The language of an input: `-x c` / `-x c++` in effect, else its extension. `None`: not
/// C or C++ (objects, archives, assembly, ...).
fn source_language(a: &str, x: Option<&str>) -> Option<&'static str> {
    match x {
        Some("c" | "cpp-output") => return Some("c"),
        Some("c++" | "c++-cpp-output") => return Some("c++"),
        Some(_) => return None,
        None => {}
    }
    let ext = Path::new(a)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    match ext {
        "c" | "i" => Some("c"),
        "cc" | "cp" | "cpp" | "cxx" | "c++" | "CPP" | "C" | "ii" => Some("c++"),
        _ => None,
    }
}

/// An input clang compiles itself that is not C or C++ (assembly, Objective-C, `-x` other
/// languages): it stays on clang's command line as it was.
fn compiled_elsewhere(a: &str, x: Option<&str>) -> bool {
    x.is_some_and(|x| x != "none")
        || matches!(
            Path::new(a).extension().and_then(|e| e.to_str()),
            Some("s" | "S" | "sx" | "asm" | "m" | "mm" | "M" | "cu" | "h" | "hh" | "hpp")
        )
}

/// One input file of the command line.
struct Input {
    /// Its position in the arguments.
    at: usize,
    /// `-x` in effect for it.
    x: Option<String>,
    /// "c" / "c++" for the sources csi-cc instruments.
    lang: Option<&'static str>,
}

/// The command line, classified.
#[derive(Default)]
struct Line {
    inputs: Vec<Input>,
    output: Option<String>,
    compile_only: bool,
    asm_only: bool,
    /// Nothing to instrument: clang runs the line as it is.
    passthrough: bool,
    help: bool,
    version: bool,
    has_dep: bool,
    has_mt: bool,
    has_mf: bool,
    /// For the per-file compile steps: everything but inputs, `-o`, `-c`, `-S`, `-x`,
    /// link-only options.
    compile_flags: Vec<String>,
}

impl Line {
    fn new(args: &[String]) -> Line {
        let mut l = Line::default();
        let mut x: Option<String> = None;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            let value = args.get(i + 1).cloned();
            if TAKES_ARG.contains(&a) {
                match a {
                    "-o" => l.output = value.clone(),
                    "-x" => x = value.clone().filter(|v| v != "none"),
                    "-MT" | "-MQ" => l.has_mt = true,
                    "-MF" => l.has_mf = true,
                    _ => {}
                }
                if !matches!(a, "-o" | "-x") && !link_only(a) {
                    l.compile_flags.push(a.to_string());
                    l.compile_flags.extend(value);
                }
                i += 2;
                continue;
            }
            match a {
                "-c" => l.compile_only = true,
                "-S" => l.asm_only = true,
                "--help" | "-help" => l.help = true,
                "--version" => l.version = true,
                "-E" | "-M" | "-MM" | "-fsyntax-only" | "-emit-llvm" | "-###" | "-dumpversion"
                | "-dumpmachine" | "-" | "-print-search-dirs" => l.passthrough = true,
                "-MD" | "-MMD" => {
                    l.has_dep = true;
                    l.compile_flags.push(a.to_string());
                }
                _ if a.starts_with("-print-") || a.starts_with("--print-") => l.passthrough = true,
                _ if a.starts_with('-') => {
                    if let Some(o) = a.strip_prefix("-o").filter(|_| !a.starts_with("-obj")) {
                        l.output = Some(o.to_string());
                    } else if let Some(v) = a.strip_prefix("-x") {
                        x = Some(v.to_string()).filter(|v| v != "none");
                    } else {
                        l.has_mt |= a.starts_with("-MT") || a.starts_with("-MQ");
                        l.has_mf |= a.starts_with("-MF");
                        if !link_only(a) {
                            l.compile_flags.push(a.to_string());
                        }
                    }
                }
                _ => l.inputs.push(Input {
                    at: i,
                    lang: source_language(a, x.as_deref()),
                    x: x.clone(),
                }),
            }
            i += 1;
        }
        l
    }

    /// Whether clang links this line's output (an executable or shared library, or `-r`).
    fn links(&self) -> bool {
        !(self.passthrough
            || self.compile_only
            || self.asm_only
            || self.help
            || self.version
            || self.inputs.is_empty())
    }

    fn sources(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|s| s.lang.is_some())
    }

    /// The flags of the back end (instrumented bitcode to object): no dependency output.
    fn backend_flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut f = self.compile_flags.iter();
        while let Some(a) = f.next() {
            if matches!(a.as_str(), "-MF" | "-MT" | "-MQ") {
                f.next();
            } else if !dependency_option(a) {
                out.push(a.clone());
            }
        }
        out
    }

    /// Where clang writes a source's dependency file for `-MD` without `-MF`, and the target
    /// it names without `-MT` (clang's `getDependencyFileName`).
    fn dependency_defaults(&self, src: &str, object: &str) -> (String, String) {
        let stem = Path::new(src)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("out");
        let file = match &self.output {
            Some(o) => match o.rfind('.') {
                Some(k) if !o[k..].contains('/') => format!("{}.d", &o[..k]),
                _ => format!("{o}.d"),
            },
            None => format!("{stem}.d"),
        };
        (
            file,
            self.output.clone().unwrap_or_else(|| object.to_string()),
        )
    }
}

/// The `--csi-*` options of a command line (the rest goes to clang, see `args`).
struct CsiOptions {
    scheme: String,
    schema: Option<String>,
    /// `--csi-pt-size`; `None`: 16, or v1.4.0's 10 with text metadata.
    pt_size: Option<u32>,
    /// `--csi-pt-repeats`: `Some(true)` once, `Some(false)` every, `None` the default.
    pt_repeats_once: Option<bool>,
    /// `--csi-pt-loops`; `None`: `OPTIMIZED_PT_LOOPS` when optimizing, else `store`.
    pt_loops: Option<PtLoops>,
    verbose: bool,
    cc_all_probes: bool,
    bb_all_probes: bool,
    bb_from_calls: bool,
    bb_local_budget: usize,
    global_stores: GlobalStores,
    /// `--csi-probe-stores`: `Some(true)` checked, `Some(false)` plain, `None` the default
    /// (checked with `--csi-scheme=bb`, else plain).
    checked_stores: Option<bool>,
    /// `--csi-probe-hoisting=loops` (default): optimized code's loop-head probes store on
    /// entering the loop, repeats dropped (`instrument::hoist`).
    hoist_stores: bool,
    /// `--csi-probe-hoisting=peel`: `Some(true)`; `loops` or `none`: `Some(false)`; `None`
    /// the default (peel with `--csi-scheme=bb`).
    peel_loops: Option<bool>,
    /// `--csi-probe-merging=words` (not the default: fewer instructions, more CPU time):
    /// a frame array's stores side by side become one `or` (`hoist::merge_frame_stores`).
    merge_stores: bool,
    before_optimization: bool,
    /// `--csi-metadata=zstd` (default): `.debug_CSI_CFG` only, compressed (`write_sections`).
    compress_metadata: bool,
    /// clang's arguments: everything but the `--csi-*` options.
    args: Vec<String>,
}

impl CsiOptions {
    /// Checked stores (`--csi-probe-stores`), by default where every block has a probe's
    /// store (`bb`): measured on the suite, zstd's CPU ×1.650 → ×1.257 single-threaded,
    /// ×1.990 → ×1.338 with two threads; call-site coverage's few stores cost less than the
    /// checks' instructions.
    fn checked_stores(&self) -> bool {
        self.checked_stores.unwrap_or(self.scheme == "bb")
    }

    /// Loops peeled so that their iterations repeat no probe store (`--csi-probe-hoisting`),
    /// by default where every block has a probe (`bb`): there it took the suite's `bb`
    /// instructions from ×1.264 to ×1.029 (flex), ×1.402 to ×1.284 (zstd), ×1.345 to ×1.286
    /// (gzip), CPU time ×1.156 to ×1.128 on average, for 10–19 % more `.text`; call-site
    /// coverage and path tracing gained at most 1.7 % of instructions.
    fn peel_loops(&self) -> bool {
        self.hoist_stores && self.peel_loops.unwrap_or(self.scheme == "bb")
    }

    /// Takes the `--csi-*` options out of `argv` (exits on a bad one); `--driver-mode=` sets
    /// the driver's language as in clang. `None`: `--csi-help` was printed, nothing to do.
    fn parse(argv: Vec<String>, driver: &mut Driver) -> Option<CsiOptions> {
        let mut o = CsiOptions {
            scheme: "realistic".to_string(),
            schema: None,
            pt_size: None,
            pt_repeats_once: None,
            pt_loops: None,
            verbose: false,
            cc_all_probes: false,
            bb_all_probes: false,
            bb_from_calls: true,
            bb_local_budget: 20_000_000,
            global_stores: GlobalStores::Auto,
            checked_stores: None,
            hoist_stores: true,
            peel_loops: None,
            merge_stores: false,
            before_optimization: true,
            compress_metadata: true,
            args: Vec::new(),
        };
        for a in argv {
            if let Some(v) = a.strip_prefix("--csi-scheme=") {
                o.scheme = v.to_string();
            } else if let Some(v) = a.strip_prefix("--csi-schema=") {
                o.schema = Some(v.to_string());
            } else if let Some(v) = a.strip_prefix("--csi-pt-size=") {
                o.pt_size = match v.parse() {
                    Ok(n) if (1..=1_000_000).contains(&n) => Some(n),
                    _ => fail(&format!(
                        "--csi-pt-size must be a number in 1..=1000000, not `{v}`"
                    )),
                };
            } else if let Some(v) = a.strip_prefix("--csi-pt-repeats=") {
                o.pt_repeats_once = Some(either(v, "--csi-pt-repeats", "once", "every"));
            } else if let Some(v) = a.strip_prefix("--csi-pt-loops=") {
                o.pt_loops = Some(match v {
                    "store" => PtLoops::Store,
                    "elide" => PtLoops::Elide,
                    "elide-innermost" => PtLoops::ElideInnermost,
                    "elide-after-entry" => PtLoops::ElideAfterEntry,
                    "elide-all" => PtLoops::ElideAll,
                    "contract" => PtLoops::Contract,
                    v => fail(&format!(
                        "--csi-pt-loops must be `store`, `elide`, `elide-innermost`, \
                         `elide-after-entry`, `elide-all` or `contract`, not `{v}`"
                    )),
                });
            } else if let Some(v) = a.strip_prefix("--csi-cc-probes=") {
                o.cc_all_probes = either(v, "--csi-cc-probes", "all", "placed");
            } else if let Some(v) = a.strip_prefix("--csi-bb-probes=") {
                (o.bb_all_probes, o.bb_from_calls) = match v {
                    "all" => (true, false),
                    "placed" => (false, false),
                    "calls" => (false, true),
                    v => fail(&format!(
                        "--csi-bb-probes must be `all`, `placed` or `calls`, not `{v}`"
                    )),
                };
            } else if let Some(v) = a.strip_prefix("--csi-bb-local-budget=") {
                o.bb_local_budget = v.parse().unwrap_or_else(|_| {
                    fail(&format!(
                        "--csi-bb-local-budget must be a number of block visits, not `{v}`"
                    ))
                });
            } else if let Some(v) = a.strip_prefix("--csi-global-stores=") {
                o.global_stores = match v {
                    "auto" => GlobalStores::Auto,
                    "in-place" => GlobalStores::InPlace,
                    "all-loops" => GlobalStores::AllLoops,
                    _ => fail(&format!(
                        "--csi-global-stores must be `auto`, `in-place` or `all-loops`, not `{v}`"
                    )),
                };
            } else if let Some(v) = a.strip_prefix("--csi-probe-stores=") {
                o.checked_stores = Some(either(v, "--csi-probe-stores", "checked", "plain"));
            } else if let Some(v) = a.strip_prefix("--csi-probe-hoisting=") {
                (o.hoist_stores, o.peel_loops) = match v {
                    "loops" => (true, Some(false)),
                    "peel" => (true, Some(true)),
                    "none" => (false, Some(false)),
                    _ => fail(&format!(
                        "--csi-probe-hoisting must be `loops`, `peel` or `none`, not `{v}`"
                    )),
                };
            } else if let Some(v) = a.strip_prefix("--csi-probe-merging=") {
                o.merge_stores = either(v, "--csi-probe-merging", "words", "none");
            } else if let Some(v) = a.strip_prefix("--csi-instrument=") {
                o.before_optimization = either(
                    v,
                    "--csi-instrument",
                    "before-optimization",
                    "after-optimization",
                );
            } else if let Some(v) = a.strip_prefix("--csi-metadata=") {
                o.compress_metadata = either(v, "--csi-metadata", "zstd", "text");
            } else if a == "--csi-verbose" {
                o.verbose = true;
            } else if a == "--csi-help" {
                println!("{USAGE}\n\n{CSI_OPTIONS}");
                return None;
            } else if a.starts_with("--csi-") {
                fail(&format!("unknown option `{a}`\n{USAGE}"));
            } else {
                if let Some(mode) = a.strip_prefix("--driver-mode=") {
                    driver.cxx = mode == "g++";
                }
                o.args.push(a);
            }
        }
        Some(o)
    }
}

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    let mut driver = Driver {
        cxx: Path::new(&argv0)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("++")),
    };
    let argv = expand_response_files(std::env::args().skip(1).collect(), 0);
    let Some(csi) = CsiOptions::parse(argv, &mut driver) else {
        return;
    };
    let args = &csi.args;
    let Some(default) = Mechanisms::from_scheme(&csi.scheme) else {
        fail(&format!(
            "unknown scheme `{}` (expected realistic, pt, cc, bb, fc, all or none)",
            csi.scheme
        ))
    };
    let per_function = csi.schema.as_deref().map(read_schema).unwrap_or_default();
    let line = Line::new(args);
    if line.help {
        println!("{USAGE}\n\n{CSI_OPTIONS}\nclang's options follow.\n");
        exit(run(Command::new(driver.compiler()).args(args)));
    }
    if line.version {
        println!(
            "{} {} (CSI instrumenting compiler over {})",
            driver.name(),
            env!("CARGO_PKG_VERSION"),
            driver.compiler()
        );
        exit(run(Command::new(driver.compiler()).args(args)));
    }
    let single_out = line.compile_only || line.asm_only;
    let n_sources = line.sources().count();
    if line.passthrough
        || n_sources == 0
        || (single_out
            && line.output.is_some()
            && line
                .inputs
                .iter()
                .filter(|i| i.lang.is_some() || compiled_elsewhere(&args[i.at], i.x.as_deref()))
                .count()
                > 1)
    {
        // Nothing to instrument (or clang will reject the combination itself); a link of
        // objects alone still gets its records in one piece.
        exit(run_and_repack(
            Command::new(driver.compiler()).args(args),
            &line,
        ));
    }
    let tmp = TempDir(std::env::temp_dir().join(format!("csi-cc-{}", std::process::id())));
    if let Err(e) = std::fs::create_dir_all(&tmp.0) {
        fail(&format!("cannot create {}: {e}", tmp.0.display()));
    }
    let steps = Steps {
        driver: &driver,
        csi: &csi,
        line: &line,
        default,
        per_function,
        backend_flags: line.backend_flags(),
        single_out,
        tmp: &tmp,
    };
    let mut objects: HashMap<usize, String> = HashMap::new();
    for (k, input) in line.inputs.iter().enumerate() {
        if let Some(out) = steps.compile(k, input) {
            objects.insert(input.at, out);
        }
    }
    if single_out {
        return;
    }
    let link_args = link_line(args, &line, &objects);
    tmp.exit(run_and_repack(
        Command::new(driver.compiler()).args(&link_args),
        &line,
    ));
}

/// Runs clang; when that linked a file, rewrites its records as one compressed piece
/// (`repack`). A file that cannot be rewritten keeps the linker's pieces, which every reader
/// reads: a warning, not a failed build.
fn run_and_repack(cmd: &mut Command, line: &Line) -> i32 {
    let status = run(cmd);
    if status == 0 && line.links() {
        let out = line.output.as_deref().unwrap_or("a.out");
        if let Err(e) = repack::repack_linked(Path::new(out)) {
            eprintln!("csi-cc: warning: {out}: CSI records left in one piece per object: {e}");
        }
        // After the repack, which moves the file's bytes. Not done, calls from other units
        // would run the replicas of functions whose switches say on: no file at all.
        if let Err(e) = repack::switch_entries(Path::new(out)) {
            eprintln!("csi-cc: error: {out}: cannot patch the switched-on entries: {e}");
            let _ = std::fs::remove_file(out);
            return 1;
        }
    }
    status
}

/// The per-file compile steps of one command line (clang's exit status ends the run at the
/// first failing step, see `TempDir::exit`).
struct Steps<'a> {
    driver: &'a Driver,
    csi: &'a CsiOptions,
    line: &'a Line,
    default: Mechanisms,
    per_function: HashMap<String, Mechanisms>,
    backend_flags: Vec<String>,
    /// `-c` or `-S`: one output per input, no link.
    single_out: bool,
    tmp: &'a TempDir,
}

/// An input's file names: the object (or assembly) it is compiled to, the front end's bitcode,
/// the bitcode to instrument (after optimization), the instrumented bitcode.
struct UnitFiles {
    out: String,
    pre: String,
    bc: String,
    ibc: String,
    /// The instrumented unit after the optimization pipeline, for checked stores.
    opt: String,
}

impl Steps<'_> {
    fn args(&self) -> &[String] {
        &self.csi.args
    }

    /// Compiles input number `k`: a C or C++ source through front end, instrumentation and
    /// back end (`Some(object)`); anything else under `-c`/`-S` by clang as it is, and
    /// otherwise not at all (the link step takes it).
    fn compile(&self, k: usize, input: &Input) -> Option<String> {
        let (line, tmp) = (self.line, self.tmp);
        let src = &self.args()[input.at];
        let stem = Path::new(src)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("out");
        let Some(lang) = input.lang else {
            if self.single_out && compiled_elsewhere(src, input.x.as_deref()) {
                // Assembly and the like next to C sources under -c: clang's, uninstrumented.
                let mut cmd = Command::new(self.driver.compiler());
                cmd.args(&line.compile_flags);
                if let Some(x) = &input.x {
                    cmd.arg("-x").arg(x);
                }
                cmd.arg(src)
                    .arg(if line.asm_only { "-S" } else { "-c" })
                    .arg("-o")
                    .arg(self.single_name(stem));
                let code = run(&mut cmd);
                if code != 0 {
                    tmp.exit(code);
                }
            }
            return None;
        };
        let temp = |suffix: &str| {
            tmp.0
                .join(format!("{k}-{stem}.{suffix}"))
                .to_string_lossy()
                .into_owned()
        };
        let files = UnitFiles {
            out: if self.single_out {
                self.single_name(stem)
            } else {
                temp("o")
            },
            bc: temp("bc"),
            ibc: temp("csi.bc"),
            // Optimized units go in two steps — the front end without LLVM passes, then the
            // optimization pipeline on its bitcode (the same IR clang's one step makes) — so the
            // call graph before optimization can be read in between (see `callgraph`).
            pre: temp("pre.bc"),
            opt: temp("opt.bc"),
        };
        // The last -O flag wins, as in clang; -O0 and none mean unoptimized.
        let optimized = line
            .compile_flags
            .iter()
            .rev()
            .find(|f| f.starts_with("-O"))
            .is_some_and(|f| f != "-O0");
        self.front_end(src, lang, stem, optimized, &files);
        // Instrumented before optimization: the front end's bitcode is instrumented as it is
        // (the source's CFG), and the -O pipeline then runs over program and probes together
        // (in the back step below).
        let instrument_first = optimized && self.csi.before_optimization;
        // The passes over optimized code run here when the module instrumented is that code
        // (else after the pipeline, `back_end`).
        let on_optimized_code = optimized && !instrument_first && self.has_coverage();
        let calls_before_optimization = if optimized && !instrument_first {
            Some(self.optimize(&files))
        } else {
            None
        };
        let opts = Options {
            default: self.default,
            per_function: self.per_function.clone(),
            // A power of two wraps the ring's index with a mask (`PathState::store_path`):
            // 16 entries cost fewer instructions than the dissertation's 10 and keep more.
            pt_size: self
                .csi
                .pt_size
                .unwrap_or(if self.csi.compress_metadata { 16 } else { 10 }),
            // v1.4.0's tools (text metadata) read one ring entry per iteration.
            pt_repeats_once: self
                .csi
                .pt_repeats_once
                .unwrap_or(self.csi.compress_metadata),
            // v1.4.0's tools (text metadata) take consecutive ring entries as consecutive paths.
            // Unoptimized builds are for debugging, where every iteration's path is worth its
            // cost.
            pt_loops: match (self.csi.compress_metadata, self.csi.pt_loops) {
                (false, _) => PtLoops::Store,
                (true, Some(l)) => l,
                (true, None) if optimized => OPTIMIZED_PT_LOOPS,
                (true, None) => PtLoops::Store,
            },
            cc_all_probes: self.csi.cc_all_probes,
            bb_all_probes: self.csi.bb_all_probes,
            bb_from_calls: self.csi.bb_from_calls,
            bb_local_budget: self.csi.bb_local_budget,
            global_stores: self.csi.global_stores,
            switchable: self.csi.scheme == "custom",
            compress_metadata: self.csi.compress_metadata,
            check_stores: self.csi.checked_stores() && !instrument_first,
            hoist_stores: self.csi.hoist_stores && on_optimized_code,
            peel_loops: self.csi.peel_loops() && on_optimized_code,
            merge_stores: self.csi.merge_stores && on_optimized_code,
            source: src.clone(),
            optimized: optimized && !instrument_first,
            optimized_after: instrument_first,
            before_optimization: calls_before_optimization,
        };
        let bc = if instrument_first {
            &files.pre
        } else {
            &files.bc
        };
        self.instrument(src, bc, &files.ibc, &opts);
        self.back_end(src, instrument_first, &files);
        Some(files.out)
    }

    /// The output name under `-c`/`-S`: `-o`'s, else the source's stem with `.o`/`.s`.
    fn single_name(&self, stem: &str) -> String {
        let line = self.line;
        line.output
            .clone()
            .unwrap_or_else(|| format!("{stem}.{}", if line.asm_only { "s" } else { "o" }))
    }

    /// The front end: source → bitcode (`pre`, without LLVM passes, when optimized; else
    /// `bc`), with the dependency file clang would write for the object.
    fn front_end(&self, src: &str, lang: &str, stem: &str, optimized: bool, files: &UnitFiles) {
        let line = self.line;
        let mut front = Command::new(self.driver.compiler());
        front.args(&line.compile_flags);
        if line.has_dep {
            let (file, target) = line.dependency_defaults(src, &self.single_name(stem));
            if !line.has_mt {
                front.arg("-MT").arg(target);
            }
            if !line.has_mf {
                front.arg("-MF").arg(file);
            }
        }
        front.args(["-g", "-fno-discard-value-names", "-c", "-emit-llvm"]);
        if optimized {
            front.args(["-Xclang", "-disable-llvm-passes"]);
        }
        front
            .arg("-o")
            .arg(if optimized { &files.pre } else { &files.bc })
            .args(["-x", lang])
            .arg(src);
        let code = run(&mut front);
        if code != 0 {
            self.tmp.exit(code);
        }
    }

    /// The optimization pipeline (`pre` → `bc`), after reading the call graph before
    /// optimization, which it returns.
    fn optimize(&self, files: &UnitFiles) -> callgraph::UnitCalls {
        let tmp = self.tmp;
        let calls = callgraph::unit_calls_of_file(&files.pre).unwrap_or_else(|e| tmp.fail(&e));
        let mut middle = Command::new(self.driver.compiler());
        middle
            .args(&self.backend_flags)
            .args([
                "-g",
                "-Wno-unused-command-line-argument",
                "-c",
                "-emit-llvm",
                "-o",
            ])
            .arg(&files.bc)
            .arg(&files.pre);
        let code = run(&mut middle);
        if code != 0 {
            tmp.exit(code);
        }
        calls
    }

    /// The instrumentation (`bc` → `ibc`), with its warnings: functions compiled without
    /// instrumentation, and with `--csi-verbose` those not path-traced.
    fn instrument(&self, src: &str, bc: &str, ibc: &str, opts: &Options) {
        let name = self.driver.name();
        match instrument::instrument_file(bc, ibc, opts) {
            Ok(r) => {
                if !r.uninstrumented.is_empty() {
                    let list: Vec<String> = r
                        .uninstrumented
                        .iter()
                        .map(|(f, why)| format!("`{f}` ({why})"))
                        .collect();
                    eprintln!(
                        "{}: warning: {src}: compiled without instrumentation: {}",
                        name,
                        list.join(", ")
                    );
                }
                for (f, why) in r.pt_skipped {
                    if self.csi.verbose {
                        eprintln!("{}: {src}: `{f}` not path-traced: {why}", name);
                    }
                }
                self.say_hoisted(src, r.hoisted);
            }
            Err(e) => self.tmp.fail(&format!("{src}: {e}")),
        }
    }

    /// Some function may get coverage arrays (every scheme but `pt` and `none`, or a schema
    /// that names them): only then has `--csi-probe-hoisting` anything to move, and the
    /// other builds keep clang's one back-end step.
    fn has_coverage(&self) -> bool {
        let covers = |m: &Mechanisms| m.cc || m.bbc || m.fc;
        covers(&self.default) || self.per_function.values().any(covers)
    }

    /// With `--csi-verbose`: what `--csi-probe-hoisting` did to the unit `src`.
    fn say_hoisted(&self, src: &str, h: instrument::Hoisted) {
        if self.csi.verbose
            && (h.moved > 0 || h.dropped > 0 || h.merged > 0 || h.peeled > 0 || h.unsunk > 0)
        {
            // Peeling and merging: their counts only where they ran.
            let peeled = if self.csi.peel_loops() {
                format!("{} loops peeled, ", h.peeled)
            } else {
                String::new()
            };
            let merged = if self.csi.merge_stores {
                format!(", {} merged into wider ones", h.merged)
            } else {
                String::new()
            };
            eprintln!(
                "{}: {src}: probe stores: {} through a phi given back to their predecessors, \
                 {peeled}{} moved out of loops, {} repeats dropped{merged}",
                self.driver.name(),
                h.unsunk,
                h.moved,
                h.dropped,
            );
        }
    }

    /// The back end: instrumented bitcode → object (or assembly) `out`; with the optimization
    /// pipeline when the unit was instrumented before optimization. The probes' stores are
    /// treated in the code as it will run (hoisted out of loops, `--csi-probe-hoisting`;
    /// checked, `--csi-probe-stores=checked`): for a unit instrumented before optimization,
    /// the pipeline runs to bitcode first (`opt`), that is rewritten
    /// (`instrument::post_optimization_file`) and compiled without passes — the same two
    /// steps clang's one makes (other units are treated by the instrumentation itself,
    /// `Options::hoist_stores`, `Options::check_stores`).
    fn back_end(&self, src: &str, instrument_first: bool, files: &UnitFiles) {
        let checked = instrument_first && self.csi.checked_stores();
        let coverage_after = instrument_first && self.has_coverage();
        let hoisted = coverage_after && self.csi.hoist_stores;
        let merged = coverage_after && self.csi.merge_stores;
        let stub_dead = instrument_first && self.csi.scheme == "custom";
        let two_steps = checked || hoisted || merged || stub_dead;
        if two_steps {
            self.compile_step(true, &["-c", "-emit-llvm"], &files.opt, &files.ibc);
            let treat = instrument::PostOptimization {
                hoist: hoisted,
                peel: hoisted && self.csi.peel_loops(),
                check: checked,
                merge: merged,
                stub_dead,
            };
            match instrument::post_optimization_file(&files.opt, &files.opt, treat) {
                Ok(done) => {
                    if self.csi.verbose && done.forgotten > 0 {
                        eprintln!(
                            "{}: {src}: {} slots of loop-exit copies that no code left can set \
                             forgotten",
                            self.driver.name(),
                            done.forgotten
                        );
                    }
                    if self.csi.verbose && done.stubbed > 0 {
                        eprintln!(
                            "{}: {src}: {} switchable functions that nothing can enter left \
                             as traps",
                            self.driver.name(),
                            done.stubbed
                        );
                    }
                    self.say_hoisted(src, done.hoisted)
                }
                Err(e) => self.tmp.fail(&e),
            }
        }
        let mode = if self.line.asm_only { "-S" } else { "-c" };
        let (optimize, input) = if two_steps {
            (false, &files.opt)
        } else {
            (instrument_first, &files.ibc)
        };
        self.compile_step(optimize, &[mode], &files.out, input);
    }

    /// One clang step on bitcode `input` to `out`: with the optimization pipeline of the
    /// back-end flags (`optimize`), or without passes.
    fn compile_step(&self, optimize: bool, mode: &[&str], out: &str, input: &str) {
        let mut back = Command::new(self.driver.compiler());
        back.args(&self.backend_flags)
            .args(["-g", "-Wno-unused-command-line-argument"]);
        if optimize {
            // Assignment tracking (clang's default at -O1 and up) would describe the frame
            // state by the values stored, fragment by fragment, some "optimized out" where
            // the memory holds them all: a plain `dbg.declare` keeps one stack location.
            back.args(["-Xclang", "-fexperimental-assignment-tracking=disabled"]);
        } else {
            back.args(["-Xclang", "-disable-llvm-passes"]);
        }
        back.args(mode).arg("-o").arg(out).arg(input);
        let code = run(&mut back);
        if code != 0 {
            self.tmp.exit(code);
        }
    }
}

/// The link step: the original command line with each source replaced by its instrumented
/// object (and no `-x`, which would apply to the objects); other inputs keep their language.
fn link_line(args: &[String], line: &Line, objects: &HashMap<usize, String>) -> Vec<String> {
    let mut link_args: Vec<String> = Vec::new();
    let mut k = 0;
    while k < args.len() {
        let a = &args[k];
        if a == "-x" {
            k += 2;
            continue;
        }
        if a.starts_with("-x") {
            k += 1;
            continue;
        }
        if let Some(obj) = objects.get(&k) {
            link_args.push(obj.clone());
        } else if let Some(input) = line.inputs.iter().find(|i| i.at == k) {
            if let Some(x) = &input.x {
                link_args.extend([
                    "-x".into(),
                    x.clone(),
                    a.clone(),
                    "-x".into(),
                    "none".into(),
                ]);
            } else {
                link_args.push(a.clone());
            }
        } else {
            link_args.push(a.clone());
            if TAKES_ARG.contains(&a.as_str()) {
                link_args.extend(args.get(k + 1).cloned());
                k += 1;
            }
        }
        k += 1;
    }
    link_args
}
