//! The crash store from the command line: `csi triage --store SPEC` feeds it
//! ([`open_store`] before the analysis, [`ingest`] after), `csi crashes --store SPEC` lists
//! what it holds (read-only). SPEC is a SQLite file or a `postgres://` URL; see
//! docs/triage.md, "The crash store".

use std::fmt::Write as _;

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::triage::{lines_json, write_lines};
use csi_dump::coredump_store::utc_date as utc;
use csi_triage::store::{redacted, Store, StoredBucket, StoredCrash};
use csi_triage::CrashRecord;

use crate::Failure;

fn failure(spec: &str, e: impl std::fmt::Display) -> Failure {
    // The backends name the store themselves in most messages; say "store" once.
    let msg = e.to_string();
    if msg.starts_with(&redacted(spec)) {
        Failure::BadInput(format!("store {msg}"))
    } else {
        Failure::BadInput(format!("store {}: {msg}", redacted(spec)))
    }
}

/// Opens (creating if needed) the store of `csi triage --store`, before the analysis: a bad
/// spec or an unreachable server fails the run before any work.
pub(crate) fn open_store(spec: Option<&str>) -> Result<Option<(Store, String)>, Failure> {
    spec.map(|s| {
        Store::open(s)
            .map(|st| (st, s.to_string()))
            .map_err(|e| failure(s, e))
    })
    .transpose()
}

/// Ingests this run's crashes (their cores hashed now) and says what the store did, one line
/// on stderr. `extras` (program, bucket signature, value) go to the `extra` column of the
/// stored buckets of those signatures (the passing-run comparison of `--passing`).
pub(crate) fn ingest(
    store: Option<(Store, String)>,
    crashes: &[CrashRecord],
    refine_frames: usize,
    extras: &[(String, String, serde_json::Value)],
) -> Result<(), Failure> {
    let Some((mut store, spec)) = store else {
        return Ok(());
    };
    let r = store
        .ingest_cores(crashes, refine_frames)
        .map_err(|e| failure(&spec, e))?;
    for (program, signature, value) in extras {
        store
            .set_extra(program, signature, Some(value))
            .map_err(|e| failure(&spec, e))?;
    }
    eprintln!(
        "store: {} new crashes, {} already stored, {} buckets updated ({})",
        r.new,
        r.already,
        r.buckets_updated,
        redacted(&spec)
    );
    Ok(())
}

#[derive(clap::Args, Clone)]
pub struct CrashesArgs {
    /// The store: a SQLite file (as `csi triage --store` made it) or a postgres:// URL.
    #[arg(long, value_name = "PATH|URL")]
    store: String,
    #[arg(long, value_enum, default_value_t = CrashesFormat::Text)]
    format: CrashesFormat,
    /// Only the bucket with this signature (as listed).
    #[arg(long, value_name = "SIGNATURE")]
    bucket: Option<String>,
    /// Only the buckets of this executable (as the crashes recorded it).
    #[arg(long, value_name = "EXE")]
    program: Option<String>,
    /// One crash's whole record (JSON), by the content hash of its core.
    #[arg(long, value_name = "HASH", conflicts_with_all = ["bucket", "program"])]
    crash: Option<String>,
    /// Crashes listed per bucket in text (all with --bucket, and always in JSON).
    #[arg(long, default_value_t = 10, value_name = "N")]
    limit: usize,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum CrashesFormat {
    Text,
    Json,
}

pub(crate) fn run(args: &CrashesArgs) -> Result<(), Failure> {
    let spec = args.store.as_str();
    let mut store = Store::open_existing(spec).map_err(|e| failure(spec, e))?;
    if let Some(h) = &args.crash {
        let rec = store.crash(h).map_err(|e| failure(spec, e))?;
        let rec = rec.ok_or_else(|| failure(spec, format!("no crash with hash {h}")))?;
        println!(
            "{}",
            serde_json::to_string_pretty(&rec).expect("JSON of plain data")
        );
        return Ok(());
    }
    let mut buckets = store
        .buckets(args.program.as_deref())
        .map_err(|e| failure(spec, e))?;
    if let Some(sig) = &args.bucket {
        buckets.retain(|b| &b.signature == sig);
        if buckets.is_empty() {
            return Err(failure(spec, format!("no bucket `{sig}`")));
        }
    }
    let mut listed = Vec::with_capacity(buckets.len());
    for b in buckets {
        let crashes = store
            .bucket_crashes(Some(&b.program), &b.signature)
            .map_err(|e| failure(spec, e))?;
        listed.push((b, crashes));
    }
    let out = match args.format {
        CrashesFormat::Json => json_output(spec, &listed),
        CrashesFormat::Text => {
            let limit = if args.bucket.is_some() {
                usize::MAX
            } else {
                args.limit
            };
            text_output(spec, &listed, limit)
        }
    };
    print!("{out}");
    Ok(())
}

/// The shape of `csi triage --format json`'s buckets, plus each crash's `hash`, the
/// bucket's `program`, `sites` and `extra`.
fn json_output(spec: &str, listed: &[(StoredBucket, Vec<StoredCrash>)]) -> String {
    let bs: Vec<Value> = listed
        .iter()
        .map(|(b, crashes)| {
            json!({
                "signature": b.signature,
                "program": b.program,
                "signal": b.signal,
                "frames": b.frames,
                "count": b.count,
                "first_time": b.first_time,
                "last_time": b.last_time,
                "representative": {"core": b.representative_core, "executable": b.program, "hash": b.representative},
                "crashes": crashes.iter().map(|c| json!({
                    "core": c.core,
                    "executable": c.program,
                    "time": c.time,
                    "site": c.site,
                    "hash": c.hash,
                })).collect::<Vec<_>>(),
                "sites": b.sites,
                "lines_analysed": b.lines_analysed,
                "must_in_all": lines_json(&b.must_in_all),
                "never_in_any": lines_json(&b.never_in_any),
                "extra": b.extra,
            })
        })
        .collect();
    let doc = json!({
        "version": 1,
        "store": redacted(spec),
        "summary": {
            "buckets": listed.len(),
            "crashes": listed.iter().map(|(b, _)| b.count).sum::<u64>(),
        },
        "buckets": bs,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("JSON of plain data");
    s.push('\n');
    s
}

fn text_output(spec: &str, listed: &[(StoredBucket, Vec<StoredCrash>)], limit: usize) -> String {
    let mut out = String::new();
    let total: u64 = listed.iter().map(|(b, _)| b.count).sum();
    let _ = writeln!(
        out,
        "store {}: {} buckets, {total} crashes",
        redacted(spec),
        listed.len()
    );
    for (k, (b, crashes)) in listed.iter().enumerate() {
        let _ = writeln!(out, "\n#{:<3} {:>5} × {}", k + 1, b.count, b.signature);
        let _ = writeln!(out, "      program:        {}", b.program);
        if let (Some(lo), Some(hi)) = (b.first_time, b.last_time) {
            let _ = writeln!(out, "      first / last:   {} / {} UTC", utc(lo), utc(hi));
        }
        let _ = writeln!(out, "      representative: {}", b.representative_core);
        if b.sites.len() > 1 {
            let list: Vec<String> = b.sites.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
            let _ = writeln!(out, "      crash sites:    {}", list.join(", "));
        }
        if let Some(x) = &b.extra {
            let _ = writeln!(out, "      extra:          {x}");
        }
        if !b.lines_analysed {
            let _ = writeln!(out, "      (no CSI metadata: stack only, no line answers)");
        } else {
            write_lines(&mut out, "must in all:", &b.must_in_all);
            write_lines(&mut out, "never in any:", &b.never_in_any);
        }
        let _ = writeln!(out, "      crashes:");
        for c in crashes.iter().take(limit) {
            let _ = writeln!(
                out,
                "        {}  {}{}  {}",
                c.time
                    .map_or_else(|| "(no time)".to_string(), |t| utc(t) + " UTC"),
                c.core,
                c.site
                    .as_ref()
                    .map(|s| format!(" (at {s})"))
                    .unwrap_or_default(),
                c.hash.chars().take(16).collect::<String>()
            );
        }
        if crashes.len() > limit {
            let _ = writeln!(
                out,
                "        … and {} more (--bucket to list all)",
                crashes.len() - limit
            );
        }
    }
    out
}
