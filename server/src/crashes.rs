//! The crash store of `csi triage --store` (docs/triage.md, "The crash store") read for the
//! editor: which store the settings name, its buckets, a bucket's crashes, and a bucket's
//! lines with the source files resolved as a crash's are. Plain data; [`crate::to_proto`]
//! turns it into the `csi/crashBuckets`, `csi/bucketCrashes` and `csi/bucketLineStates`
//! answers. Everything here blocks (SQLite, the sync PostgreSQL client): the handlers run it
//! off the runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use csi_triage::store::{redacted, Store, StoredBucket, StoredCrash};
use csi_triage::FileLineSet;
use serde::Deserialize;

use csi_ide::source::WorkspaceIndex;

use crate::config::Config;

/// The store the settings name, opened read-only, or why there is none to read.
pub enum Opened {
    /// No store is set, or its SQLite file does not exist (yet): not an error, the answer is
    /// empty with this message.
    Absent(String),
    /// The store and its spec as it may be shown (a URL's password as `***`).
    Open(Box<Store>, String),
}

/// The spec of `crashStore`: a URL as given, a relative SQLite path from the workspace root.
pub fn spec_of(config: &Config) -> Option<String> {
    let s = config.crash_store.as_deref().filter(|s| !s.is_empty())?;
    if s.contains("://") {
        return Some(s.to_string());
    }
    let p = Path::new(s);
    Some(match (&config.root, p.is_relative()) {
        (Some(root), true) => root.join(p).display().to_string(),
        _ => s.to_string(),
    })
}

/// One line naming the store: `store SPEC: why` (the backends often name it themselves).
pub fn store_error(spec: &str, e: impl std::fmt::Display) -> String {
    let msg = e.to_string();
    let shown = redacted(spec);
    let line = if msg.starts_with(&shown) {
        format!("store {msg}")
    } else {
        format!("store {shown}: {msg}")
    };
    line.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Opens the store of the settings for queries (nothing is created).
pub fn open(config: &Config) -> Result<Opened, String> {
    let Some(spec) = spec_of(config) else {
        return Ok(Opened::Absent(
            "no crash store is set: set `crashStore` (a SQLite file made by `csi triage --store`, \
             or a postgres:// URL) in the settings, or `crash-store` in .csi.toml"
                .into(),
        ));
    };
    let is_url = spec.contains("://");
    if !is_url && !Path::new(&spec).exists() {
        return Ok(Opened::Absent(format!(
            "the crash store {spec} does not exist (yet): `csi triage --store {spec} CORES…` makes it"
        )));
    }
    let store = Store::open_existing(&spec).map_err(|e| store_error(&spec, e))?;
    Ok(Opened::Open(Box::new(store), redacted(&spec)))
}

/// `csi/crashBuckets`: the store's buckets (of one program, if given), by count.
pub struct Buckets {
    pub store: Option<String>,
    pub message: Option<String>,
    pub buckets: Vec<StoredBucket>,
}

pub fn buckets(config: &Config, program: Option<&str>) -> Result<Buckets, String> {
    match open(config)? {
        Opened::Absent(message) => Ok(Buckets {
            store: None,
            message: Some(message),
            buckets: Vec::new(),
        }),
        Opened::Open(mut store, shown) => {
            let buckets = store.buckets(program).map_err(|e| store_error(&shown, e))?;
            let message = buckets
                .is_empty()
                .then(|| format!("the crash store {shown} holds no crashes"));
            Ok(Buckets {
                store: Some(shown),
                message,
                buckets,
            })
        }
    }
}

/// The open store, or the message of an absent one as an error (a bucket's requests name a
/// bucket: there must be a store to hold it).
fn open_present(config: &Config) -> Result<(Store, String), String> {
    match open(config)? {
        Opened::Absent(m) => Err(m),
        Opened::Open(s, shown) => Ok((*s, shown)),
    }
}

/// The bucket `(program, signature)`, or an error naming it.
fn find_bucket(
    store: &mut Store,
    shown: &str,
    program: &str,
    signature: &str,
) -> Result<StoredBucket, String> {
    store
        .buckets(Some(program))
        .map_err(|e| store_error(shown, e))?
        .into_iter()
        .find(|b| b.signature == signature)
        .ok_or_else(|| format!("store {shown}: no bucket `{signature}` of {program}"))
}

/// `csi/bucketCrashes`: a bucket's crashes, oldest first.
pub fn bucket_crashes(
    config: &Config,
    program: &str,
    signature: &str,
) -> Result<(String, StoredBucket, Vec<StoredCrash>), String> {
    let (mut store, shown) = open_present(config)?;
    let bucket = find_bucket(&mut store, &shown, program, signature)?;
    let crashes = store
        .bucket_crashes(Some(program), signature)
        .map_err(|e| store_error(&shown, e))?;
    Ok((shown, bucket, crashes))
}

/// A suspicious line of `csi triage --passing` (the bucket's `extra.passing.suspicious`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Suspicious {
    pub file: String,
    pub line: u32,
    pub ochiai: [f64; 2],
    #[serde(default)]
    pub failed: [usize; 2],
    #[serde(default)]
    pub passed: [usize; 2],
    #[serde(default)]
    pub on_stack: usize,
}

/// The bucket's `extra.passing` (docs/triage.md): the comparison with the passing runs.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Passing {
    pub runs: usize,
    #[serde(default)]
    pub failing_only: FileLineSet,
    #[serde(default)]
    pub passing_only: FileLineSet,
    #[serde(default)]
    pub suspicious: Vec<Suspicious>,
}

/// The passing-run comparison a bucket carries: `Ok(None)` without one, `Err` when it is
/// there but unreadable.
pub fn passing_of(b: &StoredBucket) -> Result<Option<Passing>, String> {
    let Some(p) = b.extra.as_ref().and_then(|x| x.get("passing")) else {
        return Ok(None);
    };
    serde_json::from_value(p.clone())
        .map(Some)
        .map_err(|e| format!("the bucket's passing-run data is unreadable: {e}"))
}

/// `csi/bucketLineStates`: the bucket, its passing comparison, and every source file key it
/// names → the workspace file it is (None: not found), resolved as a crash's sources are
/// (substitute paths, as written, relative to the workspace and the executable's
/// directories, then the longest matching path suffix).
pub struct BucketLines {
    pub store: String,
    pub bucket: StoredBucket,
    pub passing: Option<Passing>,
    pub sources: BTreeMap<String, Option<PathBuf>>,
    pub notices: Vec<String>,
}

/// One file of a bucket: the source file keys that resolve to it, and its lines (1-based,
/// sorted, each once).
#[derive(Clone, Debug, PartialEq)]
pub struct BucketFileLines {
    /// The workspace file, or the key itself when it is not found.
    pub file: String,
    pub path: Option<PathBuf>,
    pub keys: Vec<String>,
    /// Ran in every crash of the bucket / in none.
    pub must_in_all: BTreeSet<u32>,
    pub never_in_any: BTreeSet<u32>,
    /// With passing-run results: the file's suspicious lines, most suspicious first, each
    /// line once with its best rank in the bucket (1 = most suspicious).
    pub suspicious: Vec<(usize, Suspicious)>,
    pub failing_only: BTreeSet<u32>,
    pub passing_only: BTreeSet<u32>,
}

impl BucketLines {
    /// The bucket's lines per file: keys that resolve to one file are one entry (as a crash's
    /// line states are per file); keys not found in the workspace keep their own, by name.
    pub fn files(&self) -> Vec<BucketFileLines> {
        let mut by_file: BTreeMap<String, (Option<PathBuf>, Vec<&str>)> = BTreeMap::new();
        for (k, p) in &self.sources {
            let name = match p {
                Some(p) => p.display().to_string(),
                None => k.clone(),
            };
            by_file
                .entry(name)
                .or_insert((p.clone(), Vec::new()))
                .1
                .push(k);
        }
        let of = |set: &FileLineSet, keys: &[&str]| -> BTreeSet<u32> {
            keys.iter()
                .filter_map(|k| set.get(*k))
                .flatten()
                .copied()
                .collect()
        };
        by_file
            .into_iter()
            .map(|(file, (path, keys))| {
                let (suspicious, failing_only, passing_only) = match &self.passing {
                    Some(p) => {
                        // Line 0: the line is unknown.
                        let mut s: Vec<(usize, Suspicious)> = p
                            .suspicious
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| keys.contains(&s.file.as_str()) && s.line > 0)
                            .map(|(i, s)| (i + 1, s.clone()))
                            .collect();
                        s.sort_by_key(|(rank, x)| (x.line, *rank));
                        s.dedup_by_key(|(_, x)| x.line);
                        s.sort_by_key(|(rank, _)| *rank);
                        (s, of(&p.failing_only, &keys), of(&p.passing_only, &keys))
                    }
                    None => Default::default(),
                };
                BucketFileLines {
                    file,
                    path,
                    keys: keys.iter().map(|k| k.to_string()).collect(),
                    must_in_all: of(&self.bucket.must_in_all, &keys),
                    never_in_any: of(&self.bucket.never_in_any, &keys),
                    suspicious,
                    failing_only,
                    passing_only,
                }
            })
            .collect()
    }
}

pub fn bucket_lines(
    config: &Config,
    program: &str,
    signature: &str,
) -> Result<BucketLines, String> {
    let (mut store, shown) = open_present(config)?;
    let bucket = find_bucket(&mut store, &shown, program, signature)?;
    let mut notices = Vec::new();
    let passing = passing_of(&bucket).unwrap_or_else(|e| {
        notices.push(e);
        None
    });
    let mut keys: Vec<&str> = bucket
        .must_in_all
        .keys()
        .chain(bucket.never_in_any.keys())
        .map(String::as_str)
        .collect();
    if let Some(p) = &passing {
        keys.extend(p.suspicious.iter().map(|s| s.file.as_str()));
        keys.extend(p.failing_only.keys().map(String::as_str));
        keys.extend(p.passing_only.keys().map(String::as_str));
    }
    keys.sort_unstable();
    keys.dedup();
    let index = WorkspaceIndex::new(config.root.as_deref());
    let search = config.source_paths();
    let exe_dir = Path::new(program).parent();
    let sources: BTreeMap<String, Option<PathBuf>> = keys
        .into_iter()
        .map(|k| (k.to_string(), search.resolve(k, exe_dir, &index)))
        .collect();
    let missing: Vec<&str> = sources
        .iter()
        .filter(|(_, p)| p.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    if !missing.is_empty() {
        notices.push(format!(
            "source files not found in the workspace: {}",
            missing.join(", ")
        ));
    }
    if !bucket.lines_analysed {
        notices.push(
            "some crashes of this bucket have no CSI metadata: no line answers (stack only)".into(),
        );
    }
    Ok(BucketLines {
        store: shown,
        bucket,
        passing,
        sources,
        notices,
    })
}
