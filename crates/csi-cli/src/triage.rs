//! `csi triage`: many crashes of one or more programs, grouped into buckets.
//!
//! Every core is analysed as `csi analyze` does ([`crate::analyse_crash`]), in parallel. A
//! bucket is first a *stack signature* — the signal and the top program frames of the
//! crashing thread (functions of the executable and of instrumented libraries, inlined calls
//! included, libc and other library frames skipped, direct recursion collapsed), like
//! Socorro's — and is then split by what ran: two crashes whose innermost program frames
//! have a line that surely ran in one activation and surely did not in the other reached the
//! crash along different paths, so they are not the same bucket. Per bucket: the lines that
//! ran in every crash (must in all) and in none (never in any). Cores that cannot be used
//! are listed with the reason; they never fail the run. See docs/triage.md.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, UNIX_EPOCH};

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::Failure;

#[derive(clap::Args, Clone)]
pub struct TriageArgs {
    /// Core files, or directories searched recursively for files named `core`, `core.*`,
    /// `*.core`.
    #[arg(required = true, value_name = "CORE|DIR")]
    inputs: Vec<PathBuf>,
    /// The executable of every core (default: the one each core recorded, else a file of
    /// that name beside the core).
    #[arg(long)]
    exe: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = TriageFormat::Text)]
    format: TriageFormat,
    /// Program frames in a stack signature.
    #[arg(long, default_value_t = 5, value_name = "N")]
    frames: usize,
    /// Innermost program frames whose path evidence must agree within a bucket (0: buckets
    /// by stack signature alone).
    #[arg(long, default_value_t = 1, value_name = "K")]
    refine_frames: usize,
    /// Parallel analyses (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Use only the crash stacks (ignore coverage observations), as `csi analyze --stack-only`.
    #[arg(long)]
    stack_only: bool,
    /// Coverage of runs that did not crash: directories searched recursively for the
    /// `*.csicov` files csi-cc builds write when run with `CSI_COVERAGE_OUT=dir`. Each bucket
    /// is then compared with the passing runs of its program (ranked suspicious lines).
    #[arg(long, value_name = "DIR")]
    passing: Vec<PathBuf>,
    /// Also intersect the crashes' restricted slices from the crash point per bucket (as `csi
    /// slice`; a dependence graph per program build and a slice per crash).
    #[arg(long)]
    slices: bool,
    /// Suspicious lines listed per bucket (with --passing).
    #[arg(long, default_value_t = 10, value_name = "N")]
    suspicious: usize,
    /// Also keep the crashes in a crash store and re-bucket it: a SQLite file (created if
    /// absent) or a postgres:// URL (see `csi crashes`).
    #[arg(long, value_name = "PATH|URL")]
    store: Option<String>,
}

/// What the workers of one triage run share.
struct Shared<'a> {
    passing: Option<&'a Passing>,
    /// The program half of loading (debug info, CSI records, graph), once per build.
    cache: Arc<csi_dump::LoadCache>,
    /// With `--slices`: the dependence graph of each program graph (by its address: crashes
    /// of one build share one graph through `cache`).
    dependence_graphs: Mutex<BTreeMap<usize, Arc<OnceLock<csi_analysis::sdg::Sdg>>>>,
}

impl Shared<'_> {
    /// The restricted slice from the crashing thread's crash point, by file.
    fn crash_slice(
        &self,
        c: &csi_dump::Crash,
        cov: &csi_analysis::Coverages,
    ) -> Option<FileLineSet> {
        use csi_analysis::slice::{crash_criterion, restrict, slice_pair};
        let criterion = crash_criterion(&c.report, 0)?;
        let cell = self
            .dependence_graphs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(Arc::as_ptr(&c.graph) as usize)
            .or_default()
            .clone();
        let sdg = cell.get_or_init(|| csi_analysis::sdg::Sdg::build(&c.graph));
        let r = restrict(&c.graph, sdg, &c.report, cov, 0);
        Some(
            slice_pair(&c.graph, sdg, &c.report, &r, criterion)
                .restricted
                .lines,
        )
    }
}

/// A program build: executable and build id.
type Build = (PathBuf, Option<String>);

/// Passing runs, and their line answers per program build (computed by the first crash of
/// that build to be analysed: the coverage is numbered by its loaded program graph).
struct Passing {
    runs: Vec<csi_dump::coverage_file::PassingRun>,
    unreadable: Vec<(PathBuf, String)>,
    by_build: Mutex<BTreeMap<Build, Arc<OnceLock<BuildRuns>>>>,
}

impl Passing {
    /// Each program build's matched runs merged, by executable and build id.
    fn merged(&self) -> Vec<(PathBuf, Option<String>, PassingSummary)> {
        let by_build = self.by_build.lock().unwrap_or_else(|p| p.into_inner());
        by_build
            .iter()
            .filter_map(|((exe, id), cell)| {
                Some((exe.clone(), id.clone(), cell.get()?.summary.clone()))
            })
            .collect()
    }

    /// Reads the passing runs of `c`'s build against its program graph, once per build.
    fn read_for(&self, c: &csi_dump::Crash, build_id: &Option<String>) {
        let cell = self
            .by_build
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((c.exe.clone(), build_id.clone()))
            .or_default()
            .clone();
        cell.get_or_init(|| {
            let projector = csi_analysis::passing::PassingProjector::new(&c.graph);
            let runs = self
                .runs
                .iter()
                .filter_map(|r| {
                    let bits = c.passing_run_coverage(r)?;
                    let (must, never) = must_and_never(projector.lines(&bits));
                    Some(PassingLines {
                        run: r.name.clone(),
                        must,
                        never,
                    })
                })
                .collect();
            BuildRuns::new(runs)
        });
    }
}

/// The surely-run and surely-not-run lines of a line projection.
fn must_and_never(lines: BTreeMap<String, csi_analysis::FileLines>) -> (FileLineSet, FileLineSet) {
    let (mut must, mut never) = (FileLineSet::new(), FileLineSet::new());
    for (file, l) in lines {
        if !l.must.is_empty() {
            must.insert(file.clone(), l.must.into_iter().collect());
        }
        if !l.never.is_empty() {
            never.insert(file, l.never.into_iter().collect());
        }
    }
    (must, never)
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TriageFormat {
    Text,
    Json,
}

use std::sync::{Arc, OnceLock};

use csi_triage::passing::{compare, BuildRuns, PassingComparison, PassingLines, PassingSummary};
use csi_triage::{bucketize, Bucket, CrashRecord as Analysed, FileLineSet, FrameEvidence};

struct Skipped {
    core: PathBuf,
    reason: String,
}

pub fn run(args: &TriageArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let cores = find_cores(&args.inputs)?;
    let store = crate::crashes::open_store(args.store.as_deref())?;
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, cores.len().max(1));
    let passing = (!args.passing.is_empty()).then(|| {
        for d in &args.passing {
            if !d.exists() {
                return Err(Failure::BadInput(format!(
                    "{}: no such file or directory",
                    d.display()
                )));
            }
        }
        let (runs, unreadable) = csi_dump::coverage_file::find_passing_runs(&args.passing);
        Ok(Passing {
            runs,
            unreadable,
            by_build: Mutex::new(BTreeMap::new()),
        })
    });
    let passing = passing.transpose()?;
    let cache = Arc::new(csi_dump::LoadCache::default());
    let shared = Shared {
        passing: passing.as_ref(),
        cache,
        dependence_graphs: Mutex::new(BTreeMap::new()),
    };
    let results = analyse_all(&cores, args, jobs, &shared);
    let mut crashes = Vec::new();
    let mut skipped = Vec::new();
    for (core, r) in cores.iter().zip(results) {
        match r {
            Ok(a) => crashes.push(a),
            Err(reason) => skipped.push(Skipped {
                core: core.clone(),
                reason,
            }),
        }
    }
    let buckets = bucketize(&crashes, args.refine_frames);
    // Each bucket against the passing runs of its program build.
    let comparisons: Option<Vec<PassingComparison>> = passing.as_ref().map(|p| {
        let by_build = p.by_build.lock().unwrap_or_else(|e| e.into_inner());
        buckets
            .iter()
            .map(|b| {
                let rep = &crashes[b.crashes[0]];
                let none = BuildRuns::default();
                let runs = by_build
                    .get(&(rep.exe.clone(), rep.build_id.clone()))
                    .and_then(|c| c.get())
                    .unwrap_or(&none);
                compare(b, &crashes, runs, args.suspicious)
            })
            .collect()
    });
    let report = Report {
        crashes: &crashes,
        buckets: &buckets,
        skipped: &skipped,
        cores: cores.len(),
        elapsed: started.elapsed(),
        passing: passing.as_ref().zip(comparisons.as_deref()),
    };
    let out = match args.format {
        TriageFormat::Json => json_output(&report),
        TriageFormat::Text => text_output(&report),
    };
    print!("{out}");
    let extras: Vec<(String, String, Value)> = comparisons
        .iter()
        .flatten()
        .zip(&buckets)
        .map(|(cmp, b)| {
            let program = crashes[b.crashes[0]].exe.display().to_string();
            (
                program,
                b.signature.clone(),
                json!({ "passing": comparison_json(cmp) }),
            )
        })
        .collect();
    crate::crashes::ingest(store, &crashes, args.refine_frames, &extras)
}

/// Is this file name one of a core dump (`core`, `core.*`, `*.core`)?
fn is_core_name(name: &str) -> bool {
    name == "core" || name.starts_with("core.") || name.ends_with(".core")
}

/// The cores named on the command line: files as given, directories searched recursively
/// (symbolic links to directories are not followed, so a link cycle cannot loop). Sorted,
/// so output does not depend on directory order.
fn find_cores(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .map_err(|e| Failure::BadInput(format!("{}: {e}", input.display())))?;
        if meta.is_dir() {
            walk(input, &mut out);
        } else {
            out.push(input.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    // An unreadable subdirectory hides its cores; nothing else can be done about it here.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&path, out);
        } else if (ft.is_file() || ft.is_symlink())
            && e.file_name().to_str().is_some_and(is_core_name)
        {
            out.push(path);
        }
    }
}

/// Analyses every core on `jobs` threads; a progress line on stderr when it is a terminal.
fn analyse_all(
    cores: &[PathBuf],
    args: &TriageArgs,
    jobs: usize,
    shared: &Shared,
) -> Vec<Result<Analysed, String>> {
    let results: Vec<Mutex<Option<Result<Analysed, String>>>> =
        cores.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal() && cores.len() > 1;
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(core) = cores.get(i) else { break };
                // A bug in the analysis of one core must not lose the others.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    analyse_one(core, args, shared)
                }))
                .unwrap_or_else(|_| {
                    Err("internal error while analysing this core (reported above)".into())
                });
                *results[i].lock().unwrap() = Some(r);
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        if progress {
            let total = cores.len();
            loop {
                let d = done.load(Ordering::Relaxed);
                eprint!("\rcsi triage: analysed {d}/{total} cores");
                if d == total {
                    eprint!("\r\x1b[K");
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every core analysed"))
        .collect()
}

/// Compressors csi-dump does not read cores from (zstd, lz4 and xz it decompresses itself:
/// systemd-coredump's formats).
fn unsupported_compression(core: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut head = [0u8; 3];
    let n = std::fs::File::open(core).ok()?.read(&mut head).ok()?;
    let head = &head[..n];
    [(&b"\x1f\x8b"[..], "gzip"), (&b"BZh"[..], "bzip2")]
        .into_iter()
        .find(|(m, _)| head.starts_with(m))
        .map(|(_, k)| k)
}

/// The executable a core belongs to: the path it recorded, else a file of that name beside
/// the core (cores collected together with their program).
pub(crate) fn executable_of(core: &Path) -> Result<PathBuf, String> {
    let cf = csi_dump::core::CoreFile::open(core).map_err(|e| e.to_string())?;
    let Some(recorded) = cf.executable_path() else {
        return Err(
            "the core records no executable (no NT_FILE mapping at its entry point); pass --exe"
                .into(),
        );
    };
    let recorded = PathBuf::from(recorded);
    if recorded.is_file() {
        return Ok(recorded);
    }
    let beside = core
        .parent()
        .zip(recorded.file_name())
        .map(|(d, n)| d.join(n))
        .filter(|p| p.is_file());
    beside.ok_or_else(|| {
        format!(
            "unknown executable: {} (recorded in the core) is not on this machine nor beside the core; pass --exe",
            recorded.display()
        )
    })
}

fn analyse_one(core: &Path, args: &TriageArgs, shared: &Shared) -> Result<Analysed, String> {
    let (passing, cache) = (shared.passing, &shared.cache);
    if let Some(kind) = unsupported_compression(core) {
        return Err(format!("{kind}-compressed core: decompress it first"));
    }
    let exe = match &args.exe {
        Some(e) => e.clone(),
        None => executable_of(core)?,
    };
    let opts = csi_dump::LoadOptions {
        cache: Some(cache.clone()),
        ..Default::default()
    };
    let opened = csi_dump::Crash::open(&exe, core, &opts).or_else(|e| {
        // The recorded path may hold a newer build; a copy of the program kept beside the
        // core (collected with it) may be the one that ran.
        let beside = core
            .parent()
            .zip(exe.file_name())
            .map(|(d, n)| d.join(n))
            .filter(|b| {
                args.exe.is_none()
                    && b.is_file()
                    && std::fs::canonicalize(b).ok() != std::fs::canonicalize(&exe).ok()
            });
        match (&e, beside) {
            (csi_dump::DumpError::Mismatch { .. }, Some(b)) => {
                csi_dump::Crash::open(&b, core, &opts).map_err(|_| e)
            }
            _ => Err(e),
        }
    });
    let mut c = opened.map_err(|e| match e {
        csi_dump::DumpError::Mismatch { .. } => format!("mixed builds: {e}"),
        _ => e.to_string(),
    })?;
    let cov = crate::analyse_crash(&mut c, args.stack_only).map_err(|f| match f {
        Failure::BadInput(m) | Failure::Inconsistent(m) => m,
    })?;
    let time = std::fs::metadata(core)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    let signal = c
        .signal
        .as_ref()
        .map_or_else(|| "no signal".to_string(), |s| s.name.clone());
    let exe_name = c.exe.display().to_string();
    let thread = c.threads.iter().find(|t| t.crashed).or(c.threads.first());
    // The program's own frames: instrumented functions (executable or library), and any
    // other function of the executable except the C runtime's entry code.
    let program_frame = |f: &&csi_dump::CrashFrame| {
        f.graph_function.is_some()
            || (f.module == exe_name
                && !matches!(
                    f.function.as_deref(),
                    Some(
                        "_start"
                            | "__libc_start_main"
                            | "__libc_start_call_main"
                            | "_init"
                            | "_fini"
                    )
                ))
    };
    let mut frames: Vec<String> = Vec::new();
    let mut site = None;
    let mut stack_lines = Vec::new();
    let mut local = Vec::new();
    if let Some(t) = thread {
        for f in t.frames.iter().filter(program_frame) {
            if site.is_none() {
                site = f
                    .location
                    .as_ref()
                    .map(|l| format!("{}:{}", l.file, l.line));
            }
            if let Some(l) = &f.location {
                stack_lines.push((l.file.clone(), l.line));
            }
            let names = f
                .inlined
                .iter()
                .map(|i| i.function.clone().unwrap_or_else(|| "??".into()))
                .chain(std::iter::once(f.display_name()));
            for n in names {
                // Direct recursion of any depth is one frame: the depth is not the bug.
                if frames.last() != Some(&n) {
                    frames.push(n);
                }
            }
            if local.len() < args.refine_frames {
                if let (Some(cov), Some(rt), Some(rf)) = (&cov, t.report_thread, f.report_frame) {
                    if let Some(fc) = cov.frames.iter().find(|x| x.thread == rt && x.frame == rf) {
                        let mut must = BTreeSet::new();
                        let mut never = BTreeSet::new();
                        for (file, l) in cov.frame_lines(&c.graph, fc) {
                            must.extend(l.must.iter().map(|&n| (file.clone(), n)));
                            never.extend(l.never.iter().map(|&n| (file.clone(), n)));
                        }
                        local.push(FrameEvidence { must, never });
                    }
                }
            }
        }
        frames.truncate(args.frames.max(1));
        if frames.is_empty() {
            // No program frame at all (a crash in a library thread): name the top frame.
            if let Some(f) = t.frames.first() {
                let module = Path::new(&f.module)
                    .file_name()
                    .map_or(f.module.clone(), |n| n.to_string_lossy().into_owned());
                frames.push(format!("{}!{}", module, f.display_name()));
            }
        }
    }
    let (must, never) = cov
        .as_ref()
        .map(|cov| must_and_never(cov.global_lines(&c.graph)))
        .unwrap_or_default();
    let build_id = c.executable_build_id();
    let slice = cov
        .as_ref()
        .filter(|_| args.slices)
        .and_then(|cov| shared.crash_slice(&c, cov));
    if let (Some(p), true) = (passing, cov.is_some()) {
        p.read_for(&c, &build_id);
    }
    Ok(Analysed {
        core: core.to_path_buf(),
        exe: c.exe.clone(),
        build_id,
        time,
        signal,
        frames,
        site,
        stack_lines,
        local,
        must,
        never,
        analysed_lines: cov.is_some(),
        slice,
    })
}

pub(crate) fn lines_json(l: &FileLineSet) -> Value {
    Value::Object(
        l.iter()
            .map(|(f, ls)| (f.clone(), json!(ls.iter().collect::<Vec<_>>())))
            .collect(),
    )
}

/// Everything a triage run prints.
struct Report<'a> {
    crashes: &'a [Analysed],
    buckets: &'a [Bucket],
    skipped: &'a [Skipped],
    cores: usize,
    elapsed: Duration,
    /// With `--passing`: the runs found, and each bucket's comparison (same order).
    passing: Option<(&'a Passing, &'a [PassingComparison])>,
}

fn json_output(r: &Report) -> String {
    let (crashes, buckets, skipped, cores, elapsed) =
        (r.crashes, r.buckets, r.skipped, r.cores, r.elapsed);
    let bs: Vec<Value> = buckets
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let rep = &crashes[b.crashes[0]];
            let times: Vec<u64> = b.crashes.iter().filter_map(|&i| crashes[i].time).collect();
            let mut bucket = json!({
                "signature": b.signature,
                "signal": b.signal,
                "frames": b.frames,
                "count": b.crashes.len(),
                "first_time": times.iter().min(),
                "last_time": times.iter().max(),
                "representative": {"core": rep.core.display().to_string(), "executable": rep.exe.display().to_string()},
                "crashes": b.crashes.iter().map(|&i| {
                    let c = &crashes[i];
                    json!({
                        "core": c.core.display().to_string(),
                        "executable": c.exe.display().to_string(),
                        "time": c.time,
                        "site": c.site,
                    })
                }).collect::<Vec<_>>(),
                "lines_analysed": b.crashes.iter().all(|&i| crashes[i].analysed_lines),
                "must_in_all": lines_json(&b.must_in_all),
                "never_in_any": lines_json(&b.never_in_any),
            });
            if let Some(sl) = &b.slice_in_all {
                bucket["slice_in_all"] = lines_json(sl);
            }
            if let Some((_, cmp)) = r.passing {
                bucket["passing"] = comparison_json(&cmp[k]);
            }
            bucket
        })
        .collect();
    let mut doc = json!({
        "version": 1,
        "summary": {
            "cores": cores,
            "analysed": crashes.len(),
            "skipped": skipped.len(),
            "buckets": buckets.len(),
            "seconds": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
        },
        "buckets": bs,
        "skipped": skipped.iter().map(|s| json!({"core": s.core.display().to_string(), "reason": s.reason})).collect::<Vec<_>>(),
    });
    if let Some((p, _)) = r.passing {
        doc["summary"]["passing_runs"] = json!(p.runs.len());
        // Per program build: its passing runs merged (always / sometimes / never covered).
        doc["passing_programs"] = p
            .merged()
            .iter()
            .map(|(exe, build_id, m)| {
                json!({
                    "executable": exe.display().to_string(),
                    "build_id": build_id,
                    "runs": m.runs,
                    "always": lines_json(&m.always),
                    "sometimes": lines_json(&m.sometimes),
                    "never": lines_json(&m.never),
                })
            })
            .collect();
        doc["passing_unreadable"] = p
            .unreadable
            .iter()
            .map(|(f, why)| json!({"file": f.display().to_string(), "reason": why}))
            .collect();
    }
    let mut s = serde_json::to_string_pretty(&doc).expect("JSON of plain data");
    s.push('\n');
    s
}

/// A labelled set of lines, one file per row (`—` when empty), as the bucket tables print them.
pub(crate) fn write_lines(out: &mut String, label: &str, set: &FileLineSet) {
    if set.is_empty() {
        let _ = writeln!(out, "      {label:<15} —");
    }
    for (i, (file, lines)) in set.iter().enumerate() {
        let head = if i == 0 { label } else { "" };
        let _ = writeln!(out, "      {head:<15} {file}: {}", ranges(lines));
    }
}

/// `3,5-9,12`.
pub(crate) fn ranges(lines: &BTreeSet<u32>) -> String {
    let mut out = String::new();
    let mut it = lines.iter().copied().peekable();
    while let Some(lo) = it.next() {
        let mut hi = lo;
        while it.peek() == Some(&(hi + 1)) {
            hi = it.next().unwrap();
        }
        if !out.is_empty() {
            out.push(',');
        }
        if hi == lo {
            let _ = write!(out, "{lo}");
        } else {
            let _ = write!(out, "{lo}-{hi}");
        }
    }
    out
}

use csi_dump::coredump_store::utc_date as utc;

fn comparison_json(c: &PassingComparison) -> Value {
    json!({
        "runs": c.passing_runs,
        "failing_only": lines_json(&c.failing_only),
        "passing_only": lines_json(&c.passing_only),
        "suspicious": c.suspicious.iter().map(|s| json!({
            "file": s.file, "line": s.line,
            "ochiai": [round3(s.ochiai[0]), round3(s.ochiai[1])],
            "failed": s.failed, "passed": s.passed, "on_stack": s.on_stack,
        })).collect::<Vec<_>>(),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn text_output(r: &Report) -> String {
    let (crashes, buckets, skipped, cores, elapsed) =
        (r.crashes, r.buckets, r.skipped, r.cores, r.elapsed);
    let mut out = String::new();
    let secs = elapsed.as_secs_f64();
    let _ = writeln!(
        out,
        "{cores} cores: {} analysed into {} buckets, {} skipped ({secs:.2} s, {:.1} cores/s)",
        crashes.len(),
        buckets.len(),
        skipped.len(),
        cores as f64 / secs.max(1e-9)
    );
    if let Some((p, _)) = r.passing {
        let _ = writeln!(
            out,
            "{} passing runs found{}",
            p.runs.len(),
            if p.unreadable.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} unreadable coverage files (listed at the end)",
                    p.unreadable.len()
                )
            }
        );
        let count = |l: &FileLineSet| l.values().map(BTreeSet::len).sum::<usize>();
        for (exe, _, m) in p.merged() {
            let _ = writeln!(
                out,
                "  {} of {}: {} lines ran in all, {} in some, {} in none",
                m.runs,
                exe.display(),
                count(&m.always),
                count(&m.sometimes),
                count(&m.never)
            );
        }
    }
    for (k, b) in buckets.iter().enumerate() {
        let rep = &crashes[b.crashes[0]];
        let times: Vec<u64> = b.crashes.iter().filter_map(|&i| crashes[i].time).collect();
        let _ = writeln!(
            out,
            "\n#{:<3} {:>5} × {}",
            k + 1,
            b.crashes.len(),
            b.signature
        );
        let _ = writeln!(out, "      program:        {}", rep.exe.display());
        if let (Some(lo), Some(hi)) = (times.iter().min(), times.iter().max()) {
            let _ = writeln!(out, "      first / last:   {} / {} UTC", utc(*lo), utc(*hi));
        }
        let _ = writeln!(
            out,
            "      representative: {}{}",
            rep.core.display(),
            rep.site
                .as_ref()
                .map(|s| format!(" (at {s})"))
                .unwrap_or_default()
        );
        let mut sites: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &b.crashes {
            *sites
                .entry(crashes[i].site.as_deref().unwrap_or("?"))
                .or_default() += 1;
        }
        if sites.len() > 1 {
            let list: Vec<String> = sites.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
            let _ = writeln!(out, "      crash sites:    {}", list.join(", "));
        }
        if !b.crashes.iter().all(|&i| crashes[i].analysed_lines) {
            let _ = writeln!(out, "      (no CSI metadata: stack only, no line answers)");
            continue;
        }
        write_lines(&mut out, "must in all:", &b.must_in_all);
        write_lines(&mut out, "never in any:", &b.never_in_any);
        if let Some(sl) = &b.slice_in_all {
            write_lines(&mut out, "slice in all:", sl);
        }
        if let Some((_, cmp)) = r.passing {
            text_comparison(&mut out, &cmp[k]);
        }
    }
    if let Some((p, _)) = r.passing.filter(|(p, _)| !p.unreadable.is_empty()) {
        let _ = writeln!(out, "\nunreadable coverage files ({}):", p.unreadable.len());
        for (f, why) in &p.unreadable {
            let _ = writeln!(out, "  {}: {why}", f.display());
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nskipped ({}):", skipped.len());
        for s in skipped {
            let _ = writeln!(out, "  {}: {}", s.core.display(), s.reason);
        }
    }
    out
}

fn text_comparison(out: &mut String, c: &PassingComparison) {
    if c.passing_runs == 0 {
        let _ = writeln!(out, "      {:<15} none of this build", "passing runs:");
        return;
    }
    let _ = writeln!(out, "      {:<15} {}", "passing runs:", c.passing_runs);
    write_lines(out, "only failing:", &c.failing_only);
    write_lines(out, "only passing:", &c.passing_only);
    for (i, s) in c.suspicious.iter().enumerate() {
        let head = if i == 0 {
            "suspicious:    "
        } else {
            "               "
        };
        let _ = writeln!(
            out,
            "      {head:<15} {}:{}  ochiai {:.2}–{:.2}  (failed {}–{} of the bucket, passed {}–{} of {}{})",
            s.file, s.line, s.ochiai[0], s.ochiai[1], s.failed[0], s.failed[1], s.passed[0], s.passed[1], c.passing_runs,
            if s.on_stack > 0 { format!("; on the stack in {}", s.on_stack) } else { String::new() }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_names() {
        for n in ["core", "core.1234", "core.app.77", "app.core"] {
            assert!(is_core_name(n), "{n}");
        }
        for n in ["cores", "score", "app.core.txt", "corefile", "core_dump"] {
            assert!(!is_core_name(n), "{n}");
        }
    }

    #[test]
    fn line_ranges_and_dates() {
        let s: BTreeSet<u32> = [3, 5, 6, 7, 9, 12, 13].into_iter().collect();
        assert_eq!(ranges(&s), "3,5-7,9,12-13");
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
    }
}
