//! `csi`: the command line. `show` opens a crash (executable + core) in the terminal,
//! `analyze` prints must/may/never for a crash or a csi-grissom failure report, `query`
//! answers one control-flow question.
//!
//! Exit codes: 0 success, 2 bad input (unreadable or malformed files, unknown nodes, usage),
//! 3 the report is inconsistent with the graph.

csi_dump::use_mimalloc!();

mod crashes;
mod output;
mod show;
mod slice;
mod triage;
mod wire;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use csi_analysis::{
    active_nodes_edges, answer_query, best_effort_coverage, best_effort_coverage_compared,
    nodes_on_line, Query, ReportError,
};
use csi_model::{read_graphml, read_grissom_report, FailureReport, NodeId, ProgramGraph};

#[derive(Parser)]
#[command(
    name = "csi",
    version,
    about = "Crash scene investigation: what must, may and never ran before a crash"
)]
struct Cli {
    /// Without a command: `analyze` on the bundled example.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Args, Clone, Default)]
struct CrashArgs {
    /// The crashed program (built with csi-cc for traces; any ELF with debug info works).
    #[arg(long)]
    exe: Option<PathBuf>,
    /// Its core dump: plain, or compressed with zstd, lz4 or xz (systemd-coredump, apport);
    /// a minidump is recognised too.
    #[arg(long, requires = "exe", conflicts_with = "minidump")]
    core: Option<PathBuf>,
    /// A core kept by systemd-coredump (as `coredumpctl list` shows them): `latest`, a pid, or
    /// a program name (its newest core). The executable is the one systemd recorded unless
    /// --exe is given. Read from --coredump-dir, else from `coredumpctl`.
    #[arg(long, value_name = "latest|PID|NAME", conflicts_with_all = ["core", "minidump"])]
    coredump: Option<String>,
    /// systemd-coredump's store.
    #[arg(long, value_name = "DIR", requires = "coredump", default_value = csi_dump::coredump_store::DEFAULT_STORE)]
    coredump_dir: PathBuf,
    /// Its minidump (Breakpad, Crashpad, Sentry Native, minidump-writer), instead of a core.
    #[arg(long, requires = "exe", value_name = "FILE")]
    minidump: Option<PathBuf>,
    /// csi-grissom GraphML CFG, for programs built by the original csi-cc 1.4.0.
    #[arg(long)]
    graphml: Option<PathBuf>,
    /// Directory of separate debug files of stripped binaries: a build-id tree
    /// (`DIR/.build-id/ab/cdef….debug`) and `.gnu_debuglink` targets (repeatable; default
    /// /usr/lib/debug). Then debuginfod servers from DEBUGINFOD_URLS are asked.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// The crashed machine's file system (a copy of the production image): libraries are
    /// read from it by the paths the core records, matched by build id.
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
    /// Source paths (as the debug info writes them) starting with FROM are looked for with TO
    /// instead first, as gdb's `set substitute-path` (repeatable, tried in order): for the
    /// source text of `show` and the text listings.
    #[arg(long = "substitute-path", value_name = "FROM=TO", value_parser = csi_ide::SubstitutePath::parse)]
    substitute_paths: Vec<csi_ide::SubstitutePath>,
}

#[derive(Subcommand)]
enum Command {
    /// Open a crash in the terminal: every thread's stack, each frame's source with must /
    /// may / never per line, the path trace, and the global summary. Without arguments, opens
    /// the bundled fixture crash.
    Show {
        #[command(flatten)]
        crash: CrashArgs,
        /// Show every frame's variables.
        #[arg(long)]
        locals: bool,
        /// List every line of each frame's function; by default a long function shows the
        /// lines that matter (around the current line, the path, decided lines) and says
        /// what it elided.
        #[arg(long)]
        all_lines: bool,
    },
    /// Best-effort coverage (must / may / never) of a crash (`--exe`, `--core`) or of a
    /// csi-grissom failure report (`--graph`, `--report`). Without arguments, runs on the
    /// bundled example (examples/fig6-1).
    Analyze {
        #[command(flatten)]
        crash: CrashArgs,
        /// Control-flow graph (csi-grissom GraphML).
        #[arg(long, requires = "report", conflicts_with = "exe")]
        graph: Option<PathBuf>,
        /// Failure report (csi-grissom JSON).
        #[arg(long, requires = "graph")]
        report: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Use only the crash stack (ignore coverage observations).
        #[arg(long)]
        stack_only: bool,
    },
    /// Restricted slicing (dissertation §5.2.2): the lines that could have affected the
    /// crash point (or `--line`) in this run, next to the static slice. Without arguments,
    /// on the bundled fixture crash.
    Slice {
        #[command(flatten)]
        crash: CrashArgs,
        /// Slice from FILE:LINE instead of the crash point (FILE may be a path suffix).
        #[arg(long, value_name = "FILE:LINE")]
        line: Option<String>,
        /// Only this variable (repeatable); default: every variable used there.
        #[arg(long = "var", value_name = "NAME")]
        variables: Vec<String>,
        /// Thread whose stack gives the calling contexts (0 = the crashing thread).
        #[arg(long, default_value_t = 0)]
        thread: usize,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also print slice sizes per frame (the dissertation's Figs. 5.12-5.13 numbers).
        #[arg(long)]
        stats: bool,
    },
    /// Many crashes: analyse every core (in parallel) and group them into buckets by stack
    /// signature, split where the crashing frames' path traces contradict; per bucket the
    /// lines that ran in every crash and in none. Cores are found recursively in
    /// directories (files named `core`, `core.*`, `*.core`); each core's executable is the
    /// one it recorded unless `--exe` is given. Unusable cores are listed as skipped.
    Triage(triage::TriageArgs),
    /// The crash store `csi triage --store` fills (a SQLite file or a postgres:// URL),
    /// read-only: its buckets by count, each with its crashes, must-in-all and never-in-any
    /// lines (`--bucket` for one, `--crash HASH` for one crash's record).
    Crashes(crashes::CrashesArgs),
    /// Customizable tracing (`csi-cc --csi-scheme=custom`, the dissertation's ch. 3): list the
    /// per-function tracing switches of an executable or shared library, or set them in the
    /// file, in place, without rebuilding (`--set 'parse*=off'`; `*` and `?` match any run /
    /// one character of the function name). A switched-off function runs an uninstrumented
    /// copy of itself; the next crash reports its coverage and path as unknown.
    Tracing {
        /// The executable or shared library (built with `csi-cc --csi-scheme=custom`).
        #[arg(long, value_name = "FILE")]
        exe: PathBuf,
        /// Trace the functions on a crash's stacks (every thread's frames, inlined ones
        /// included) and nothing else: every switch off, then theirs on — before `--set`.
        /// Several cores (of this executable; `--core a b`, a shell glob, or the option
        /// repeated): the functions of every crash given.
        #[arg(long, value_name = "CORE", num_args = 1..)]
        core: Vec<PathBuf>,
        /// PATTERN=on or PATTERN=off (repeatable; a later one wins). The dissertation's
        /// mechanism sets work too: `CC,PT` (the build's whole scheme) is on, `{}` or `none`
        /// off; a function traces all of its scheme or nothing, so `CC` or `PT` alone is refused.
        #[arg(long = "set", value_name = "PATTERN=on|off")]
        set: Vec<String>,
    },
    /// Answer one control-flow query; prints `possible` or `impossible`.
    ///
    /// A location is a node id (`n:-9:12`) or `FILE:LINE` (all nodes on that line; FILE may
    /// be a suffix of the path in the graph).
    Query {
        #[arg(long)]
        graph: PathBuf,
        #[arg(long)]
        report: PathBuf,
        /// May this location have run?
        #[arg(long, value_name = "LOC", group = "q")]
        may_run: Option<String>,
        /// May this location not have run?
        #[arg(long, value_name = "LOC", group = "q")]
        may_not_run: Option<String>,
        /// May the first location have run before the second?
        #[arg(long, num_args = 2, value_names = ["A", "B"], group = "q")]
        before: Option<Vec<String>>,
        /// Use only the crash stack (ignore coverage observations).
        #[arg(long)]
        stack_only: bool,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csiclipse,
}

pub(crate) enum Failure {
    BadInput(String),
    Inconsistent(String),
}

impl From<csi_model::InputError> for Failure {
    fn from(e: csi_model::InputError) -> Self {
        Failure::BadInput(e.to_string())
    }
}

impl From<csi_dump::DumpError> for Failure {
    fn from(e: csi_dump::DumpError) -> Self {
        Failure::BadInput(e.to_string())
    }
}

impl From<ReportError> for Failure {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::NoEntry | ReportError::NoFrames => Failure::BadInput(e.to_string()),
            _ => Failure::Inconsistent(e.to_string()),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(m)) => {
            eprintln!("csi: error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Inconsistent(m)) => {
            eprintln!("csi: inconsistent report: {m}");
            ExitCode::from(3)
        }
    }
}

/// The bundled example, found next to the binary's source tree or the working directory.
fn bundled_example() -> Result<(PathBuf, PathBuf), Failure> {
    let candidates = [
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fig6-1"),
        PathBuf::from("examples/fig6-1"),
    ];
    for dir in candidates {
        let (g, r) = (dir.join("example.graphml"), dir.join("report.json"));
        if g.is_file() && r.is_file() {
            return Ok((g, r));
        }
    }
    Err(Failure::BadInput(
        "no --graph/--report given and the bundled example (examples/fig6-1) was not found".into(),
    ))
}

fn load(
    graph: &Path,
    report: &Path,
    stack_only: bool,
) -> Result<(ProgramGraph, FailureReport), Failure> {
    let g = read_graphml(graph)?;
    let mut r = read_grissom_report(report, &g)?;
    if stack_only {
        r = r.stack_only();
    }
    for d in &r.dropped {
        eprintln!("csi: note: {}: {d}", report.display());
    }
    Ok((g, r))
}

/// The bundled fixture crash (`fixtures/crashes/null_deref/realistic-O0`).
fn bundled_crash() -> Result<(PathBuf, PathBuf), Failure> {
    let rel = Path::new("fixtures/crashes/null_deref/realistic-O0");
    let candidates = [
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel),
        rel.to_path_buf(),
    ];
    for dir in candidates {
        let (e, c) = (dir.join("null_deref"), dir.join("core"));
        if e.is_file() && c.is_file() {
            return Ok((e, c));
        }
    }
    Err(Failure::BadInput(format!(
        "no --exe/--core given and the bundled crash ({}) was not found",
        rel.display()
    )))
}

/// For a stripped executable without a debug file: where csi looked and what failed, so the
/// one error line says what to do.
/// The one-line error for a crash without CSI metadata: what cannot be done, and why.
fn no_metadata(c: &csi_dump::Crash, what: &str) -> Failure {
    Failure::BadInput(format!(
        "{}: no CSI metadata (.debug_CSI_CFG) and no --graphml: {what}{}",
        c.exe.display(),
        stripped_hint(c)
    ))
}

/// The crash's notices on stderr, before its answer.
fn print_notices(c: &csi_dump::Crash) {
    for n in &c.notices {
        eprintln!("csi: note: {n}");
    }
}

fn stripped_hint(c: &csi_dump::Crash) -> String {
    if !c
        .notices
        .iter()
        .any(|n| n.contains("no debug file was found"))
    {
        return String::new();
    }
    let tried: Vec<&str> = c
        .notices
        .iter()
        .filter(|n| n.starts_with("debuginfod") || n.contains("debug file for"))
        .map(String::as_str)
        .collect();
    format!(
        " (stripped, and no debug file was found: give --debug-dir DIR or set DEBUGINFOD_URLS{})",
        if tried.is_empty() {
            String::new()
        } else {
            format!("; {}", tried.join("; "))
        }
    )
}

fn open_crash(args: &CrashArgs) -> Result<csi_dump::Crash, Failure> {
    let mut stored_notice = None;
    let stored = match &args.coredump {
        Some(sel) => {
            let c = csi_dump::coredump_store::select(&args.coredump_dir, sel)?;
            let exe = match (&args.exe, &c.exe) {
                (Some(e), _) => e.clone(),
                (None, Some(e)) if e.is_file() => e.clone(),
                _ => triage::executable_of(&c.path)
                    .map_err(|e| Failure::BadInput(format!("{}: {e}", c.path.display())))?,
            };
            stored_notice = Some(format!(
                "systemd-coredump ({}): {}; {}",
                c.source,
                c.describe(),
                c.path.display()
            ));
            Some((exe, c.path))
        }
        None => None,
    };
    let (exe, core) = match (&args.exe, args.core.as_ref().or(args.minidump.as_ref())) {
        _ if stored.is_some() => stored.expect("checked"),
        (Some(e), Some(c)) => (e.clone(), c.clone()),
        (Some(e), None) => {
            return Err(Failure::BadInput(format!(
                "{}: give its core dump with --core or its minidump with --minidump",
                e.display()
            )))
        }
        _ => bundled_crash()?,
    };
    let opts = csi_dump::LoadOptions {
        graphml: args.graphml.clone(),
        debug: csi_dump::debug_files::DebugSearch {
            debug_dirs: args.debug_dirs.clone(),
            ..Default::default()
        },
        sysroot: args.sysroot.clone(),
        cache: None,
    };
    let mut crash = csi_dump::Crash::open(&exe, &core, &opts)?;
    if let Some(n) = stored_notice {
        crash.notices.insert(0, n);
    }
    Ok(crash)
}

/// The analysis `csi analyze` runs on a crash (and `csi triage` on each one): best-effort
/// coverage of its failure report, after dropping coverage observations for `stack_only`.
/// `None` when the executable has no CSI metadata (only its stack can be used).
pub(crate) fn analyse_crash(
    c: &mut csi_dump::Crash,
    stack_only: bool,
) -> Result<Option<csi_analysis::Coverages>, Failure> {
    if c.metadata == csi_dump::Metadata::None {
        return Ok(None);
    }
    if stack_only {
        c.report = c.report.stack_only();
    }
    Ok(Some(best_effort_coverage(&c.graph, &c.report)?))
}

fn run(cli: Cli) -> Result<(), Failure> {
    let command = cli.command.unwrap_or(Command::Show {
        crash: CrashArgs::default(),
        locals: false,
        all_lines: false,
    });
    match command {
        Command::Show {
            crash,
            locals,
            all_lines,
        } => run_show(&crash, locals, all_lines),
        Command::Analyze {
            crash,
            format,
            stack_only,
            ..
        } if crash.exe.is_some() || crash.coredump.is_some() => {
            run_analyze_crash(&crash, format, stack_only)
        }
        Command::Analyze {
            crash,
            graph,
            report,
            format,
            stack_only,
        } => run_analyze_report(crash, graph, report, format, stack_only),
        Command::Slice {
            crash,
            line,
            variables,
            thread,
            format,
            stats,
        } => {
            let req = slice::SliceRequest {
                line,
                variables,
                thread,
                stats,
            };
            run_slice(crash, &req, format)
        }
        Command::Triage(args) => triage::run(&args),
        Command::Crashes(args) => crashes::run(&args),
        Command::Tracing { exe, core, set } => run_tracing(&exe, &core, &set),
        Command::Query {
            graph,
            report,
            may_run,
            may_not_run,
            before,
            stack_only,
        } => run_query(&graph, &report, may_run, may_not_run, before, stack_only),
    }
}

/// `csi tracing`: lists the tracing switches of `exe`, after setting them for the stacks of
/// `cores` (the dissertation's deployment loop: trace the functions of the crashes seen) and
/// as `set` says.
fn run_tracing(exe: &Path, cores: &[PathBuf], set: &[String]) -> Result<(), Failure> {
    let mut settings: Vec<(String, bool)> = Vec::new();
    if !cores.is_empty() {
        let crashes = cores
            .iter()
            .map(|core| csi_dump::Crash::open(exe, core, &Default::default()))
            .collect::<Result<Vec<_>, _>>()?;
        settings = csi_dump::tracing_switches::settings_for_crashes(&crashes)?;
    }
    let explicit = set
        .iter()
        .map(|s| {
            let (p, value) = s.rsplit_once('=').ok_or_else(|| {
                Failure::BadInput(format!("--set {s}: expected PATTERN=on or PATTERN=off"))
            })?;
            switch_value(value)
                .map(|on| (p.to_string(), on))
                .map_err(|why| Failure::BadInput(format!("--set {s}: {why}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    settings.extend(explicit);
    let switches = if settings.is_empty() {
        csi_dump::tracing_switches::tracing_switches(exe)
    } else {
        csi_dump::tracing_switches::set_tracing_switches(exe, &settings)
    }
    .map_err(|e| Failure::BadInput(e.to_string()))?;
    if switches.is_empty() {
        return Err(Failure::BadInput(format!(
            "{}: no tracing switches (build with csi-cc --csi-scheme=custom)",
            exe.display()
        )));
    }
    let mut text = String::new();
    for s in &switches {
        text.push_str(&format!(
            "{:<3} {}\n",
            if s.on { "on" } else { "off" },
            s.function
        ));
    }
    print_out(&text)
}

/// Writes `text` to standard output; a reader that went away (`csi tracing | head`) ends
/// the output quietly, as it does for any Unix tool.
fn print_out(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::BadInput(format!("writing the output: {e}")))
        }
        _ => Ok(()),
    }
}

/// A `--set` value: `on` / `off`, or a set of mechanisms as a schema writes them (`CC,PT`,
/// `{CC,PT}`, `{}`). A custom build's replicas are all-or-nothing (realistic's CC and PT), so
/// a set naming only one of them cannot be honoured.
fn switch_value(value: &str) -> Result<bool, String> {
    let v = value.trim();
    match v {
        "on" => return Ok(true),
        "off" | "none" => return Ok(false),
        // (An empty shell variable must not switch functions off in the binary.)
        "" => return Err("an empty value: expected on, off, CC,PT or {}".to_string()),
        _ => {}
    }
    let inner = v
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(v);
    let mut mechanisms: Vec<String> = inner
        .split(',')
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| !m.is_empty())
        .collect();
    mechanisms.sort();
    mechanisms.dedup();
    match mechanisms.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => Ok(false),
        ["CC", "PT"] => Ok(true),
        ["CC"] | ["PT"] => Err(
            "a custom build switches call-site coverage and path tracing \
             together (one replica per function, not one per mechanism): use CC,PT (on) or {} \
             (off)"
                .to_string(),
        ),
        _ => Err(format!("expected on, off, CC,PT or {{}}, not `{value}`")),
    }
}

/// `csi query`: prints the answer to one control-flow question.
fn run_query(
    graph: &Path,
    report: &Path,
    may_run: Option<String>,
    may_not_run: Option<String>,
    before: Option<Vec<String>>,
    stack_only: bool,
) -> Result<(), Failure> {
    let (g, r) = load(graph, report, stack_only)?;
    let q = if let Some(a) = may_run {
        Query::MayRun(locate(&g, &a)?)
    } else if let Some(a) = may_not_run {
        Query::MayNotRun(locate(&g, &a)?)
    } else if let Some(ab) = before {
        Query::MayRunBefore(locate(&g, &ab[0])?, locate(&g, &ab[1])?)
    } else {
        return Err(Failure::BadInput(
            "give one of --may-run, --may-not-run, --before".into(),
        ));
    };
    let answer = answer_query(&g, &r, &q)?;
    print_out(&format!("{}\n", answer.as_str()))
}

/// `csi show` (and `csi` without a command): the crash in the terminal.
fn run_show(crash: &CrashArgs, locals: bool, all_lines: bool) -> Result<(), Failure> {
    let sources = output::source_paths(crash.substitute_paths.clone());
    let crash = open_crash(crash)?;
    let cov = if crash.metadata == csi_dump::Metadata::None {
        None
    } else {
        Some(best_effort_coverage(&crash.graph, &crash.report)?)
    };
    print!(
        "{}",
        show::render(
            &crash,
            cov.as_ref(),
            show::Options {
                locals,
                all_lines,
                color: color_wanted(),
                sources,
            }
        )
    );
    Ok(())
}

/// `csi analyze` on a crash (executable + core, minidump or stored core).
fn run_analyze_crash(crash: &CrashArgs, format: Format, stack_only: bool) -> Result<(), Failure> {
    let mut c = open_crash(crash)?;
    // Nothing to analyse is one line of error; notices only go with an answer.
    let Some(cov) = analyse_crash(&mut c, stack_only)? else {
        return Err(no_metadata(
            &c,
            "nothing to analyse; `csi show` prints the stack",
        ));
    };
    print_notices(&c);
    let active = active_nodes_edges(&c.graph, &c.report);
    let sources = output::source_paths(crash.substitute_paths.clone());
    let inputs = output::Inputs {
        graph_path: &c.exe,
        report_path: &c.core,
        graph: &c.graph,
        report: &c.report,
        coverage: &cov,
        active: &active,
        crash: Some(&c),
        sources: &sources,
    };
    print_rendered(&inputs, format)
}

/// `csi analyze` on a csi-grissom graph and failure report (else on the bundled example).
fn run_analyze_report(
    crash: CrashArgs,
    graph: Option<PathBuf>,
    report: Option<PathBuf>,
    format: Format,
    stack_only: bool,
) -> Result<(), Failure> {
    let (graph, report) = match (graph, report) {
        (Some(g), Some(r)) => (g, r),
        _ => bundled_example()?,
    };
    let (g, r) = load(&graph, &report, stack_only)?;
    // csi-grissom inputs: its own answer is printed beside ours for comparison.
    let cov = best_effort_coverage_compared(&g, &r)?;
    let active = active_nodes_edges(&g, &r);
    let sources = output::source_paths(crash.substitute_paths);
    let inputs = output::Inputs {
        graph_path: &graph,
        report_path: &report,
        graph: &g,
        report: &r,
        coverage: &cov,
        active: &active,
        crash: None,
        sources: &sources,
    };
    print_rendered(&inputs, format)
}

/// `csi slice`: the restricted and the static slice from a line or the crash point.
fn run_slice(crash: CrashArgs, req: &slice::SliceRequest, format: Format) -> Result<(), Failure> {
    let c = open_crash(&crash)?;
    if c.metadata == csi_dump::Metadata::None {
        return Err(no_metadata(&c, "nothing to slice"));
    }
    print_notices(&c);
    let cov = best_effort_coverage(&c.graph, &c.report)?;
    let (pair, st) = slice::run(&c, &cov, req)?;
    match format {
        Format::Json => print!("{}", slice::json(&c, &pair, st.as_ref())),
        _ => {
            let sources = output::source_paths(crash.substitute_paths);
            print!("{}", slice::text(&c, &pair, st.as_ref(), &sources))
        }
    }
    Ok(())
}

/// `n:-9:12` or `FILE:LINE`.
fn locate(g: &ProgramGraph, loc: &str) -> Result<Vec<NodeId>, Failure> {
    if let Some(n) = g.node_by_ext_id(loc) {
        return Ok(vec![n]);
    }
    if let Some((file, line)) = loc.rsplit_once(':') {
        if let Ok(line) = line.parse::<u32>() {
            let nodes = nodes_on_line(g, file, line);
            if nodes.is_empty() {
                return Err(Failure::BadInput(format!(
                    "`{loc}`: no code on line {line} of a file named {file}"
                )));
            }
            return Ok(nodes);
        }
    }
    Err(Failure::BadInput(format!(
        "`{loc}` is neither a node id of the graph nor FILE:LINE"
    )))
}

/// Prints the analysis in `format`. JSON is written as it is serialized: the document of a
/// large optimized program's crash is tens of megabytes, and a string of it would be held
/// beside the document and the crash.
fn print_rendered(inputs: &output::Inputs, format: Format) -> Result<(), Failure> {
    use std::io::Write;
    let text = match format {
        Format::Text => output::text(inputs, color_wanted()),
        Format::Csiclipse => output::csiclipse(inputs),
        Format::Json => {
            let doc = output::json_doc(inputs);
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let written = serde_json::to_writer_pretty(&mut out, &doc)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            return match written {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(Failure::BadInput(format!("writing the analysis: {e}")))
                }
                _ => Ok(()),
            };
        }
    };
    print_out(&text)
}

fn color_wanted() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::switch_value;

    /// The issue's `--set 'parse*=CC,PT'`: a schema's mechanism sets, all-or-nothing.
    #[test]
    fn switch_values_take_on_off_and_whole_mechanism_sets() {
        for on in ["on", "CC,PT", "PT,CC", "{CC,PT}", "cc, pt"] {
            assert_eq!(switch_value(on), Ok(true), "{on}");
        }
        for off in ["off", "none", "{}", "{ }"] {
            assert_eq!(switch_value(off), Ok(false), "{off}");
        }
        assert!(switch_value(" ").unwrap_err().contains("empty"));
        for partial in ["CC", "{PT}"] {
            let why = switch_value(partial).unwrap_err();
            assert!(why.contains("together"), "{partial}: {why}");
        }
        assert!(switch_value("BBC").unwrap_err().contains("expected"));
    }
}
