//! The SQLite backend: one file, WAL journal (readers never wait for an ingest), ingests
//! serialised by `BEGIN IMMEDIATE` (the database's write lock) with a busy timeout.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{
    from_i64, ingest_in, now, stored_bucket, BucketRow, IngestReport, IngestTx, NewCrash,
    StoreError, StoredBucket, StoredCrash, BUCKET_COLUMNS, CRASH_COLUMNS, SCHEMA, SCHEMA_VERSION,
};

/// How long an ingest waits for another process's write transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

fn err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::new(format!("{}: {e}", path.display()))
}

impl SqliteStore {
    pub(super) fn open(path: &Path, existing: bool) -> Result<SqliteStore, StoreError> {
        if path.is_dir() {
            return Err(StoreError::new(format!(
                "{}: is a directory, not a SQLite file",
                path.display()
            )));
        }
        let e = err(path);
        let conn = if existing {
            if !path.exists() {
                return Err(StoreError::new(format!(
                    "{}: no such store",
                    path.display()
                )));
            }
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(&e)?
        } else {
            Connection::open(path).map_err(&e)?
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(&e)?;
        let mut s = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        if existing {
            s.check_version()?;
        } else {
            s.create()?;
        }
        Ok(s)
    }

    fn create(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = err(&path);
        // WAL: readers see the last commit while an ingest writes. (Fails harmlessly on a
        // file system without shared memory; the store then uses the rollback journal.)
        let _ = self
            .conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0));
        self.conn
            .execute_batch("PRAGMA synchronous=NORMAL")
            .map_err(&e)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&e)?;
        tx.execute_batch(SCHEMA).map_err(&e)?;
        tx.execute(
            "INSERT INTO csi_meta (key, value) VALUES ('schema_version', ?1) ON CONFLICT (key) DO NOTHING",
            [SCHEMA_VERSION.to_string()],
        )
        .map_err(&e)?;
        tx.commit().map_err(&e)?;
        drop(e);
        self.check_version()
    }

    fn check_version(&mut self) -> Result<(), StoreError> {
        let v: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM csi_meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such table") => {
                    StoreError::new(format!(
                        "{}: not a CSI crash store (no csi_meta table)",
                        self.path.display()
                    ))
                }
                e => err(&self.path)(e),
            })?;
        match v {
            Some(v) if v == SCHEMA_VERSION.to_string() => Ok(()),
            Some(v) => Err(StoreError::new(format!(
                "{}: store schema version {v}; this csi reads version {SCHEMA_VERSION}",
                self.path.display()
            ))),
            None => Err(StoreError::new(format!(
                "{}: not a CSI crash store (no schema version)",
                self.path.display()
            ))),
        }
    }

    pub(super) fn ingest(
        &mut self,
        crashes: &[NewCrash],
        refine_frames: usize,
    ) -> Result<IngestReport, StoreError> {
        let path = self.path.clone();
        let e = err(&path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&e)?;
        let report = {
            let mut t = Tx {
                tx: &tx,
                path: &path,
            };
            ingest_in(&mut t, crashes, refine_frames)?
        };
        tx.commit().map_err(&e)?;
        Ok(report)
    }

    pub(super) fn buckets(
        &mut self,
        program: Option<&str>,
    ) -> Result<Vec<StoredBucket>, StoreError> {
        let e = err(&self.path);
        let sql = format!(
            "SELECT {BUCKET_COLUMNS} FROM csi_buckets WHERE (?1 IS NULL OR program = ?1) \
             ORDER BY count DESC, signature, program"
        );
        let mut st = self.conn.prepare_cached(&sql).map_err(&e)?;
        let rows = st
            .query_map([program], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                ))
            })
            .map_err(&e)?;
        let mut out = Vec::new();
        for row in rows {
            let (a, b, c, d, f, g, h, i, j, k, l, m, n, o) = row.map_err(&e)?;
            out.push(stored_bucket(a, b, c, d, f, g, h, i, j, k, l, m, n, o)?);
        }
        Ok(out)
    }

    pub(super) fn bucket_crashes(
        &mut self,
        program: Option<&str>,
        signature: &str,
    ) -> Result<Vec<StoredCrash>, StoreError> {
        let e = err(&self.path);
        let sql = format!(
            "SELECT {CRASH_COLUMNS} FROM csi_crashes WHERE bucket = ?1 AND (?2 IS NULL OR program = ?2) \
             ORDER BY time IS NOT NULL, time, core, hash"
        );
        let mut st = self.conn.prepare_cached(&sql).map_err(&e)?;
        let rows = st
            .query_map(params![signature, program], |r| {
                Ok(StoredCrash {
                    hash: r.get(0)?,
                    core: r.get(1)?,
                    program: r.get(2)?,
                    time: from_i64(r.get(3)?),
                    signal: r.get(4)?,
                    site: r.get(5)?,
                    bucket: r.get(6)?,
                    analysed_lines: r.get(7)?,
                })
            })
            .map_err(&e)?;
        rows.collect::<Result<_, _>>().map_err(&e)
    }

    pub(super) fn crash(&mut self, hash: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT record FROM csi_crashes WHERE hash = ?1",
                [hash],
                |r| r.get(0),
            )
            .optional()
            .map_err(err(&self.path))
    }

    pub(super) fn set_extra(
        &mut self,
        program: &str,
        signature: &str,
        extra: Option<&str>,
    ) -> Result<bool, StoreError> {
        let e = err(&self.path);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&e)?;
        let n = tx
            .execute(
                "UPDATE csi_buckets SET extra = ?3 WHERE program = ?1 AND signature = ?2",
                params![program, signature, extra],
            )
            .map_err(&e)?;
        tx.commit().map_err(&e)?;
        Ok(n > 0)
    }
}

struct Tx<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    path: &'a Path,
}

impl IngestTx for Tx<'_> {
    fn insert_crash(&mut self, c: &NewCrash) -> Result<bool, StoreError> {
        let mut st = self
            .tx
            .prepare_cached(
                "INSERT INTO csi_crashes (hash, core, program, time, signal, frames, site, group_key, bucket, \
                 analysed_lines, record, ingested) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '', ?9, ?10, ?11) \
                 ON CONFLICT (hash) DO NOTHING",
            )
            .map_err(err(self.path))?;
        let n = st
            .execute(params![
                c.hash,
                c.core,
                c.program,
                c.time,
                c.signal,
                c.frames,
                c.site,
                c.group_key,
                c.analysed_lines,
                c.record,
                now()
            ])
            .map_err(err(self.path))?;
        Ok(n == 1)
    }

    fn group_crashes(
        &mut self,
        group_key: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        let mut st = self
            .tx
            .prepare_cached(
                "SELECT hash, bucket, record FROM csi_crashes WHERE group_key = ?1 ORDER BY hash",
            )
            .map_err(err(self.path))?;
        let rows = st
            .query_map([group_key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err(self.path))?;
        rows.collect::<Result<_, _>>().map_err(err(self.path))
    }

    fn group_extras(&mut self, group_key: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut st = self
            .tx
            .prepare_cached("SELECT signature, extra FROM csi_buckets WHERE group_key = ?1 AND extra IS NOT NULL")
            .map_err(err(self.path))?;
        let rows = st
            .query_map([group_key], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err(self.path))?;
        rows.collect::<Result<_, _>>().map_err(err(self.path))
    }

    fn delete_group_buckets(&mut self, group_key: &str) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("DELETE FROM csi_buckets WHERE group_key = ?1")
            .and_then(|mut st| st.execute([group_key]))
            .map_err(err(self.path))?;
        Ok(())
    }

    fn insert_bucket(&mut self, b: &BucketRow) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT INTO csi_buckets (program, signature, group_key, signal, frames, count, first_time, \
                 last_time, representative, representative_core, lines_analysed, sites, must_in_all, \
                 never_in_any, extra) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    b.program,
                    b.signature,
                    b.group_key,
                    b.signal,
                    b.frames,
                    b.count,
                    b.first_time,
                    b.last_time,
                    b.representative,
                    b.representative_core,
                    b.lines_analysed,
                    b.sites,
                    b.must_in_all,
                    b.never_in_any,
                    b.extra
                ])
            })
            .map_err(err(self.path))?;
        Ok(())
    }

    fn set_crash_bucket(&mut self, hash: &str, signature: &str) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("UPDATE csi_crashes SET bucket = ?2 WHERE hash = ?1")
            .and_then(|mut st| st.execute([hash, signature]))
            .map_err(err(self.path))?;
        Ok(())
    }

    fn meta_get_or_set(&mut self, key: &str, value: &str) -> Result<String, StoreError> {
        self.tx
            .execute(
                "INSERT INTO csi_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
                [key, value],
            )
            .map_err(err(self.path))?;
        self.tx
            .query_row("SELECT value FROM csi_meta WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .map_err(err(self.path))
    }
}
