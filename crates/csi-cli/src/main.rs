//! `csi`: the command line. `analyze` prints must/may/never for a failure report, `query`
//! answers one control-flow question.
//!
//! Exit codes: 0 success, 2 bad input (unreadable or malformed files, unknown nodes, usage),
//! 3 the report is inconsistent with the graph.

mod output;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use csi_analysis::{
    active_nodes_edges, answer_query, best_effort_coverage, nodes_on_line, Query, ReportError,
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

#[derive(Subcommand)]
enum Command {
    /// Best-effort coverage (must / may / never) of a failure report. Without arguments, runs
    /// on the bundled example (examples/fig6-1).
    Analyze {
        /// Control-flow graph (csi-grissom GraphML).
        #[arg(long, requires = "report")]
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

enum Failure {
    BadInput(String),
    Inconsistent(String),
}

impl From<csi_model::InputError> for Failure {
    fn from(e: csi_model::InputError) -> Self {
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
        r = FailureReport {
            threads: r.threads,
            ..FailureReport::default()
        };
    }
    for d in &r.dropped {
        eprintln!("csi: note: {}: {d}", report.display());
    }
    Ok((g, r))
}

fn run(cli: Cli) -> Result<(), Failure> {
    let command = cli.command.unwrap_or(Command::Analyze {
        graph: None,
        report: None,
        format: Format::Text,
        stack_only: false,
    });
    match command {
        Command::Analyze {
            graph,
            report,
            format,
            stack_only,
        } => {
            let (graph, report) = match (graph, report) {
                (Some(g), Some(r)) => (g, r),
                _ => bundled_example()?,
            };
            let (g, r) = load(&graph, &report, stack_only)?;
            let cov = best_effort_coverage(&g, &r)?;
            let active = active_nodes_edges(&g, &r);
            let inputs = output::Inputs {
                graph_path: &graph,
                report_path: &report,
                graph: &g,
                report: &r,
                coverage: &cov,
                active: &active,
            };
            let text = match format {
                Format::Text => output::text(&inputs, color_wanted()),
                Format::Json => output::json(&inputs),
                Format::Csiclipse => output::csiclipse(&inputs),
            };
            print!("{text}");
            Ok(())
        }
        Command::Query {
            graph,
            report,
            may_run,
            may_not_run,
            before,
            stack_only,
        } => {
            let (g, r) = load(&graph, &report, stack_only)?;
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
            println!(
                "{}",
                serde_json::to_value(answer).unwrap().as_str().unwrap()
            );
            Ok(())
        }
    }
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

fn color_wanted() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}
