//! The crash store: every crash `csi triage` has seen, kept with its analysis, and the
//! buckets of all of them — in an embedded SQLite file or in a PostgreSQL database that
//! several machines feed at once. One schema, one API ([`Store`]); see docs/triage.md,
//! "The crash store".
//!
//! A crash is keyed by the content hash of its core file (BLAKE3 of the bytes), so the same
//! core ingested twice — again, from another path, from another machine — is one row. An
//! ingest inserts the new crashes, then re-buckets every stack group ([`crate::group_key`])
//! that gained one, from *all* the group's stored crash records with [`crate::bucketize`],
//! and rewrites the group's bucket rows and its crashes' bucket column — in one transaction,
//! holding a per-group lock (PostgreSQL: a transaction-level advisory lock on a hash of the
//! group key; SQLite: the database's write lock), so concurrent ingests of one group end in
//! the buckets one ingest of everything makes.

mod pg;
mod sqlite;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::{bucketize, group_key, CrashRecord, FileLineSet};

/// The schema this code reads and writes (`csi_meta.schema_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// The tables, in SQL both SQLite and PostgreSQL take. JSON is kept as text (the same in
/// both); times are seconds since the epoch; `csi_crashes.bucket` is the signature of the
/// bucket the crash is in, `csi_buckets.group_key` the stack group (JSON
/// `[program, signal, frames]`) whose re-bucketing rewrites it.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS csi_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS csi_crashes (
    hash           TEXT PRIMARY KEY,
    core           TEXT NOT NULL,
    program        TEXT NOT NULL,
    time           BIGINT,
    signal         TEXT NOT NULL,
    frames         TEXT NOT NULL,
    site           TEXT,
    group_key      TEXT NOT NULL,
    bucket         TEXT NOT NULL,
    analysed_lines BOOLEAN NOT NULL,
    record         TEXT NOT NULL,
    ingested       BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS csi_crashes_group ON csi_crashes (group_key);
CREATE INDEX IF NOT EXISTS csi_crashes_bucket ON csi_crashes (bucket, program, time, core);
CREATE TABLE IF NOT EXISTS csi_buckets (
    program             TEXT NOT NULL,
    signature           TEXT NOT NULL,
    group_key           TEXT NOT NULL,
    signal              TEXT NOT NULL,
    frames              TEXT NOT NULL,
    count               BIGINT NOT NULL,
    first_time          BIGINT,
    last_time           BIGINT,
    representative      TEXT NOT NULL,
    representative_core TEXT NOT NULL,
    lines_analysed      BOOLEAN NOT NULL,
    sites               TEXT NOT NULL,
    must_in_all         TEXT NOT NULL,
    never_in_any        TEXT NOT NULL,
    extra               TEXT,
    PRIMARY KEY (program, signature)
);
CREATE INDEX IF NOT EXISTS csi_buckets_count ON csi_buckets (count DESC, signature);
CREATE INDEX IF NOT EXISTS csi_buckets_program ON csi_buckets (program, count DESC);
CREATE INDEX IF NOT EXISTS csi_buckets_group ON csi_buckets (group_key);
";

/// A store error, one line: what failed and why (the store's own message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    message: String,
    /// A transaction lost a deadlock or serialization conflict: trying again may succeed.
    pub(crate) retry: bool,
}

impl StoreError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        let message: String = message.into();
        // One line, whatever the driver said.
        let message = message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        StoreError {
            message,
            retry: false,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// What an ingest did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// Crashes inserted.
    pub new: usize,
    /// Crashes whose core (by content hash) was already in the store (or twice in the input).
    pub already: usize,
    /// Stack groups re-bucketed (those that gained a crash).
    pub groups: usize,
    /// Bucket rows written for those groups.
    pub buckets_updated: usize,
}

/// A bucket as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBucket {
    /// The executable (as the crashes recorded it).
    pub program: String,
    pub signature: String,
    pub signal: String,
    pub frames: Vec<String>,
    pub count: u64,
    pub first_time: Option<u64>,
    pub last_time: Option<u64>,
    /// Content hash of the representative (oldest) crash's core.
    pub representative: String,
    /// Its core's path as found.
    pub representative_core: String,
    pub lines_analysed: bool,
    /// Crash site (`file:line`, `?` when unknown) → crashes.
    pub sites: BTreeMap<String, u64>,
    pub must_in_all: FileLineSet,
    pub never_in_any: FileLineSet,
    /// Whatever another tool attached to the bucket ([`Store::set_extra`]).
    pub extra: Option<Value>,
}

/// A crash as listed (its whole record: [`Store::crash`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCrash {
    pub hash: String,
    pub core: String,
    pub program: String,
    pub time: Option<u64>,
    pub signal: String,
    pub site: Option<String>,
    /// The signature of its bucket.
    pub bucket: String,
    pub analysed_lines: bool,
}

/// A crash store: `Store::open("crashes.db")` (SQLite, created if absent) or
/// `Store::open("postgres://user@host/db")` (tables created if absent).
pub enum Store {
    Sqlite(sqlite::SqliteStore),
    Postgres(pg::PgStore),
}

/// Which backend a spec names.
#[derive(Debug, PartialEq, Eq)]
enum Spec<'a> {
    Sqlite(&'a Path),
    Postgres(&'a str),
}

fn parse_spec(spec: &str) -> Result<Spec<'_>, StoreError> {
    if spec.is_empty() {
        return Err(StoreError::new(
            "empty store spec (a SQLite file path or a postgres:// URL)",
        ));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return Ok(Spec::Postgres(spec));
    }
    if let Some((scheme, _)) = spec.split_once("://") {
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(StoreError::new(format!(
                "unknown store URL scheme `{scheme}://` (a SQLite file path, or postgres:// / postgresql://)"
            )));
        }
    }
    Ok(Spec::Sqlite(Path::new(spec)))
}

/// The spec as it may be shown: a URL's password replaced by `***`.
pub fn redacted(spec: &str) -> String {
    let Some(start) = spec.find("://").map(|i| i + 3) else {
        return spec.to_string();
    };
    let mut out = spec.to_string();
    let authority_end = spec[start..].find('/').map_or(spec.len(), |i| start + i);
    if let Some(at) = spec[start..authority_end].rfind('@').map(|i| start + i) {
        if let Some(colon) = spec[start..at].find(':').map(|i| start + i) {
            out.replace_range(colon + 1..at, "***");
        }
    }
    // `?password=…` in the query string.
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k == "password" => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

impl Store {
    /// Opens (creating the file or the tables if absent) the store `spec`: a path → SQLite,
    /// a `postgres://` or `postgresql://` URL → PostgreSQL.
    pub fn open(spec: &str) -> Result<Store, StoreError> {
        Ok(match parse_spec(spec)? {
            Spec::Sqlite(p) => Store::Sqlite(sqlite::SqliteStore::open(p, false)?),
            Spec::Postgres(u) => Store::Postgres(pg::PgStore::open(u, false)?),
        })
    }

    /// Opens an existing store for queries: nothing is created (a missing file or a database
    /// without the tables is an error).
    pub fn open_existing(spec: &str) -> Result<Store, StoreError> {
        Ok(match parse_spec(spec)? {
            Spec::Sqlite(p) => Store::Sqlite(sqlite::SqliteStore::open(p, true)?),
            Spec::Postgres(u) => Store::Postgres(pg::PgStore::open(u, true)?),
        })
    }

    /// Adds crashes, each with the content hash of its core ([`hash_core`]); re-buckets every
    /// stack group that gained one from all its stored crashes. `refine_frames` is
    /// [`bucketize`]'s: the store keeps the one its first ingest used and refuses another
    /// (its buckets would mix two definitions).
    pub fn ingest(
        &mut self,
        crashes: &[(String, CrashRecord)],
        refine_frames: usize,
    ) -> Result<IngestReport, StoreError> {
        let prepared = prepare(crashes)?;
        match self {
            Store::Sqlite(s) => s.ingest(&prepared, refine_frames),
            Store::Postgres(s) => s.ingest(&prepared, refine_frames),
        }
    }

    /// [`Store::ingest`] of records whose core files are still where they say: hashes them
    /// first (in parallel).
    pub fn ingest_cores(
        &mut self,
        records: &[CrashRecord],
        refine_frames: usize,
    ) -> Result<IngestReport, StoreError> {
        let hashes = hash_cores(records.iter().map(|r| r.core.as_path()))?;
        let crashes: Vec<(String, CrashRecord)> =
            hashes.into_iter().zip(records.iter().cloned()).collect();
        self.ingest(&crashes, refine_frames)
    }

    /// Every bucket (of one program, if given), by count, then signature.
    pub fn buckets(&mut self, program: Option<&str>) -> Result<Vec<StoredBucket>, StoreError> {
        match self {
            Store::Sqlite(s) => s.buckets(program),
            Store::Postgres(s) => s.buckets(program),
        }
    }

    /// The crashes of the bucket `signature` (of one program, if given), oldest first.
    pub fn bucket_crashes(
        &mut self,
        program: Option<&str>,
        signature: &str,
    ) -> Result<Vec<StoredCrash>, StoreError> {
        match self {
            Store::Sqlite(s) => s.bucket_crashes(program, signature),
            Store::Postgres(s) => s.bucket_crashes(program, signature),
        }
    }

    /// One crash's whole record, by the content hash of its core.
    pub fn crash(&mut self, hash: &str) -> Result<Option<CrashRecord>, StoreError> {
        let json = match self {
            Store::Sqlite(s) => s.crash(hash)?,
            Store::Postgres(s) => s.crash(hash)?,
        };
        json.map(|j| {
            serde_json::from_str(&j).map_err(|e| {
                StoreError::new(format!("crash {hash}: stored record unreadable: {e}"))
            })
        })
        .transpose()
    }

    /// Attaches `extra` (or clears it, `None`) to the bucket `(program, signature)`. Returns
    /// whether the bucket exists. A re-bucketing of its group keeps it on the bucket of the
    /// same signature (and drops it if that signature is gone).
    pub fn set_extra(
        &mut self,
        program: &str,
        signature: &str,
        extra: Option<&Value>,
    ) -> Result<bool, StoreError> {
        let text = extra.map(|v| v.to_string());
        match self {
            Store::Sqlite(s) => s.set_extra(program, signature, text.as_deref()),
            Store::Postgres(s) => s.set_extra(program, signature, text.as_deref()),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }
}

/// The content hash of a core file: BLAKE3 of its bytes (streamed), hex.
pub fn hash_core(path: &Path) -> std::io::Result<String> {
    let f = std::fs::File::open(path)?;
    let mut h = blake3::Hasher::new();
    h.update_reader(f)?;
    Ok(h.finalize().to_hex().to_string())
}

/// [`hash_core`] of many files, on as many threads as there are CPUs.
pub fn hash_cores<'a>(paths: impl Iterator<Item = &'a Path>) -> Result<Vec<String>, StoreError> {
    let paths: Vec<&Path> = paths.collect();
    let jobs = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, paths.len().max(1));
    let chunk = paths.len().div_ceil(jobs).max(1);
    let results: Vec<Result<Vec<String>, StoreError>> = std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|p| {
                            hash_core(p).map_err(|e| {
                                StoreError::new(format!(
                                    "{}: cannot read the core to hash it: {e}",
                                    p.display()
                                ))
                            })
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(StoreError::new("hashing cores failed")))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(paths.len());
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// A crash ready to insert: its columns as text.
pub(crate) struct NewCrash {
    pub hash: String,
    pub core: String,
    pub program: String,
    pub time: Option<i64>,
    pub signal: String,
    pub frames: String,
    pub site: Option<String>,
    pub group_key: String,
    pub analysed_lines: bool,
    pub record: String,
}

/// A bucket row to write.
pub(crate) struct BucketRow {
    pub program: String,
    pub signature: String,
    pub group_key: String,
    pub signal: String,
    pub frames: String,
    pub count: i64,
    pub first_time: Option<i64>,
    pub last_time: Option<i64>,
    pub representative: String,
    pub representative_core: String,
    pub lines_analysed: bool,
    pub sites: String,
    pub must_in_all: String,
    pub never_in_any: String,
    pub extra: Option<String>,
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("JSON of plain data")
}

fn to_i64(t: Option<u64>) -> Option<i64> {
    t.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

pub(crate) fn from_i64(t: Option<i64>) -> Option<u64> {
    t.map(|t| u64::try_from(t).unwrap_or(0))
}

/// The text of a group key (`[program, signal, frames]`).
pub(crate) fn group_key_text(c: &CrashRecord) -> String {
    let (exe, signal, frames) = group_key(c);
    json(&(exe.display().to_string(), signal, frames))
}

/// A group's lock key: the first 8 bytes of the BLAKE3 of its key text.
pub(crate) fn group_lock_key(group_key: &str) -> i64 {
    let h = blake3::hash(group_key.as_bytes());
    i64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

fn prepare(crashes: &[(String, CrashRecord)]) -> Result<Vec<NewCrash>, StoreError> {
    crashes
        .iter()
        .map(|(hash, c)| {
            if hash.is_empty() {
                return Err(StoreError::new(format!(
                    "{}: empty content hash",
                    c.core.display()
                )));
            }
            Ok(NewCrash {
                hash: hash.clone(),
                core: c.core.display().to_string(),
                program: c.exe.display().to_string(),
                time: to_i64(c.time),
                signal: c.signal.clone(),
                frames: json(&c.frames),
                site: c.site.clone(),
                group_key: group_key_text(c),
                analysed_lines: c.analysed_lines,
                record: json(c),
            })
        })
        .collect()
}

/// The operations of an ingest inside one backend transaction.
pub(crate) trait IngestTx {
    /// Inserts the crash with an empty bucket unless its hash is stored; true if inserted.
    fn insert_crash(&mut self, c: &NewCrash) -> Result<bool, StoreError>;
    /// `(hash, bucket, record JSON)` of every crash of a group, by hash.
    fn group_crashes(
        &mut self,
        group_key: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError>;
    /// `(signature, extra)` of the group's buckets that have an extra.
    fn group_extras(&mut self, group_key: &str) -> Result<Vec<(String, String)>, StoreError>;
    fn delete_group_buckets(&mut self, group_key: &str) -> Result<(), StoreError>;
    fn insert_bucket(&mut self, b: &BucketRow) -> Result<(), StoreError>;
    fn set_crash_bucket(&mut self, hash: &str, signature: &str) -> Result<(), StoreError>;
    /// The value of `key`, set to `value` first if it has none.
    fn meta_get_or_set(&mut self, key: &str, value: &str) -> Result<String, StoreError>;
}

/// The group keys of `crashes`, sorted (every backend takes group locks in this order: no
/// deadlock between two ingests).
pub(crate) fn sorted_groups(crashes: &[NewCrash]) -> Vec<&str> {
    let set: BTreeSet<&str> = crashes.iter().map(|c| c.group_key.as_str()).collect();
    let mut v: Vec<&str> = set.into_iter().collect();
    v.sort_by_key(|g| (group_lock_key(g), *g));
    v
}

/// The ingest itself, the same for every backend: inside a transaction that holds the locks
/// of every group of `crashes`.
pub(crate) fn ingest_in(
    tx: &mut dyn IngestTx,
    crashes: &[NewCrash],
    refine_frames: usize,
) -> Result<IngestReport, StoreError> {
    let stored = tx.meta_get_or_set("refine_frames", &refine_frames.to_string())?;
    if stored != refine_frames.to_string() {
        return Err(StoreError::new(format!(
            "the store buckets with --refine-frames {stored} (set by its first ingest); this run asks {refine_frames}"
        )));
    }
    let mut report = IngestReport::default();
    let mut affected: BTreeSet<&str> = BTreeSet::new();
    for c in crashes {
        if tx.insert_crash(c)? {
            report.new += 1;
            affected.insert(&c.group_key);
        } else {
            report.already += 1;
        }
    }
    for g in affected {
        report.groups += 1;
        report.buckets_updated += rebucket_group(tx, g, refine_frames)?;
    }
    Ok(report)
}

/// Re-buckets one stack group from all its stored crashes; returns the number of buckets.
fn rebucket_group(
    tx: &mut dyn IngestTx,
    group: &str,
    refine_frames: usize,
) -> Result<usize, StoreError> {
    let rows = tx.group_crashes(group)?;
    let mut hashes = Vec::with_capacity(rows.len());
    let mut current = Vec::with_capacity(rows.len());
    let mut records = Vec::with_capacity(rows.len());
    for (hash, bucket, record) in rows {
        let r: CrashRecord = serde_json::from_str(&record)
            .map_err(|e| StoreError::new(format!("crash {hash}: stored record unreadable: {e}")))?;
        hashes.push(hash);
        current.push(bucket);
        records.push(r);
    }
    let extras: BTreeMap<String, String> = tx.group_extras(group)?.into_iter().collect();
    tx.delete_group_buckets(group)?;
    let buckets = bucketize(&records, refine_frames);
    for b in &buckets {
        let rep = &records[b.crashes[0]];
        let times: Vec<u64> = b.crashes.iter().filter_map(|&i| records[i].time).collect();
        let mut sites: BTreeMap<&str, u64> = BTreeMap::new();
        for &i in &b.crashes {
            *sites
                .entry(records[i].site.as_deref().unwrap_or("?"))
                .or_default() += 1;
        }
        tx.insert_bucket(&BucketRow {
            program: rep.exe.display().to_string(),
            signature: b.signature.clone(),
            group_key: group.to_string(),
            signal: b.signal.clone(),
            frames: json(&b.frames),
            count: b.crashes.len() as i64,
            first_time: to_i64(times.iter().min().copied()),
            last_time: to_i64(times.iter().max().copied()),
            representative: hashes[b.crashes[0]].clone(),
            representative_core: rep.core.display().to_string(),
            lines_analysed: b.crashes.iter().all(|&i| records[i].analysed_lines),
            sites: json(&sites),
            must_in_all: json(&b.must_in_all),
            never_in_any: json(&b.never_in_any),
            extra: extras.get(&b.signature).cloned(),
        })?;
        for &i in &b.crashes {
            if current[i] != b.signature {
                tx.set_crash_bucket(&hashes[i], &b.signature)?;
            }
        }
    }
    Ok(buckets.len())
}

/// A bucket row's columns read back (JSON columns parsed; there are few bucket rows).
#[allow(clippy::too_many_arguments)]
pub(crate) fn stored_bucket(
    program: String,
    signature: String,
    signal: String,
    frames: String,
    count: i64,
    first_time: Option<i64>,
    last_time: Option<i64>,
    representative: String,
    representative_core: String,
    lines_analysed: bool,
    sites: String,
    must_in_all: String,
    never_in_any: String,
    extra: Option<String>,
) -> Result<StoredBucket, StoreError> {
    let bad = |what: &str, e: serde_json::Error| {
        StoreError::new(format!("bucket {signature}: stored {what} unreadable: {e}"))
    };
    Ok(StoredBucket {
        frames: serde_json::from_str(&frames).map_err(|e| bad("frames", e))?,
        sites: serde_json::from_str(&sites).map_err(|e| bad("sites", e))?,
        must_in_all: serde_json::from_str(&must_in_all).map_err(|e| bad("must_in_all", e))?,
        never_in_any: serde_json::from_str(&never_in_any).map_err(|e| bad("never_in_any", e))?,
        extra: extra
            .map(|x| serde_json::from_str(&x).map_err(|e| bad("extra", e)))
            .transpose()?,
        program,
        signal,
        count: u64::try_from(count).unwrap_or(0),
        first_time: from_i64(first_time),
        last_time: from_i64(last_time),
        representative,
        representative_core,
        lines_analysed,
        signature,
    })
}

/// The columns of a bucket row, in [`stored_bucket`]'s order.
pub(crate) const BUCKET_COLUMNS: &str =
    "program, signature, signal, frames, count, first_time, last_time, \
     representative, representative_core, lines_analysed, sites, must_in_all, never_in_any, extra";

/// The columns of a crash list row.
pub(crate) const CRASH_COLUMNS: &str =
    "hash, core, program, time, signal, site, bucket, analysed_lines";

/// Seconds since the epoch, now.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_their_backend() {
        assert_eq!(
            parse_spec("crashes.db").unwrap(),
            Spec::Sqlite(Path::new("crashes.db"))
        );
        assert_eq!(
            parse_spec("/a/b c.sqlite").unwrap(),
            Spec::Sqlite(Path::new("/a/b c.sqlite"))
        );
        assert_eq!(
            parse_spec("postgres://u@h/db").unwrap(),
            Spec::Postgres("postgres://u@h/db")
        );
        assert_eq!(
            parse_spec("postgresql://h:5433/db").unwrap(),
            Spec::Postgres("postgresql://h:5433/db")
        );
        let e = parse_spec("mysql://h/db").unwrap_err().to_string();
        assert!(e.contains("unknown store URL scheme `mysql://`"), "{e}");
        assert!(parse_spec("").is_err());
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redacted("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redacted("postgresql://h/db?user=u&password=pw&sslmode=disable"),
            "postgresql://h/db?user=u&password=***&sslmode=disable"
        );
        assert_eq!(redacted("/var/crashes.db"), "/var/crashes.db");
    }

    #[test]
    fn group_lock_keys_differ_per_group() {
        let a = group_lock_key(r#"["/bin/a","SIGSEGV",["f"]]"#);
        let b = group_lock_key(r#"["/bin/a","SIGSEGV",["g"]]"#);
        assert_ne!(a, b);
        assert_eq!(a, group_lock_key(r#"["/bin/a","SIGSEGV",["f"]]"#));
    }
}
