//! The PostgreSQL backend (sync client, no TLS): several `csi triage` processes on several
//! machines may ingest at once. Each ingest is one transaction that first takes a
//! transaction-level advisory lock per stack group it touches (`pg_advisory_xact_lock` on
//! [`super::group_lock_key`], in sorted order: no deadlock between ingests), so the
//! re-bucketing of a group sees every crash committed before it and none is committed under
//! it. A deadlock or serialization failure the server reports anyway is retried.

use std::str::FromStr;
use std::time::Duration;

use postgres::{Client, Config, NoTls};

use super::{
    from_i64, group_lock_key, ingest_in, now, redacted, sorted_groups, stored_bucket, BucketRow,
    IngestReport, IngestTx, NewCrash, StoreError, StoredBucket, StoredCrash, BUCKET_COLUMNS,
    CRASH_COLUMNS, SCHEMA, SCHEMA_VERSION,
};

/// Serialises schema creation between processes (`CREATE TABLE IF NOT EXISTS` races).
const SCHEMA_LOCK: i64 = 0x4353_495f_5354_4f52; // "CSI_STOR"

/// When the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct PgStore {
    client: Client,
    url: String,
}

fn err(url: &str) -> impl Fn(postgres::Error) -> StoreError + '_ {
    move |e| {
        let retry = e.code().is_some_and(|c| {
            *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
        });
        let text = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.severity(), db.message()),
            None => e.to_string(),
        };
        let mut se = StoreError::new(format!("{}: {text}", redacted(url)));
        se.retry = retry;
        se
    }
}

impl PgStore {
    pub(super) fn open(url: &str, existing: bool) -> Result<PgStore, StoreError> {
        let mut config = Config::from_str(url)
            .map_err(|e| StoreError::new(format!("{}: bad PostgreSQL URL: {e}", redacted(url))))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let client = config.connect(NoTls).map_err(err(url))?;
        let mut s = PgStore {
            client,
            url: url.to_string(),
        };
        if !existing {
            let e = err(url);
            let mut tx = s.client.transaction().map_err(&e)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .map_err(&e)?;
            tx.batch_execute(SCHEMA).map_err(&e)?;
            tx.execute(
                "INSERT INTO csi_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO NOTHING",
                &[&SCHEMA_VERSION.to_string()],
            )
            .map_err(&e)?;
            tx.commit().map_err(&e)?;
        }
        s.check_version()?;
        Ok(s)
    }

    fn check_version(&mut self) -> Result<(), StoreError> {
        let e = err(&self.url);
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass('csi_meta') IS NOT NULL", &[])
            .map_err(&e)?
            .get(0);
        if !exists {
            return Err(StoreError::new(format!(
                "{}: not a CSI crash store (no csi_meta table)",
                redacted(&self.url)
            )));
        }
        let v: Option<String> = self
            .client
            .query_opt(
                "SELECT value FROM csi_meta WHERE key = 'schema_version'",
                &[],
            )
            .map_err(&e)?
            .map(|r| r.get(0));
        match v {
            Some(v) if v == SCHEMA_VERSION.to_string() => Ok(()),
            Some(v) => Err(StoreError::new(format!(
                "{}: store schema version {v}; this csi reads version {SCHEMA_VERSION}",
                redacted(&self.url)
            ))),
            None => Err(StoreError::new(format!(
                "{}: not a CSI crash store (no schema version)",
                redacted(&self.url)
            ))),
        }
    }

    pub(super) fn ingest(
        &mut self,
        crashes: &[NewCrash],
        refine_frames: usize,
    ) -> Result<IngestReport, StoreError> {
        let mut attempt = 0;
        loop {
            match self.ingest_once(crashes, refine_frames) {
                Err(e) if e.retry && attempt < 5 => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(50 << attempt));
                }
                r => return r,
            }
        }
    }

    fn ingest_once(
        &mut self,
        crashes: &[NewCrash],
        refine_frames: usize,
    ) -> Result<IngestReport, StoreError> {
        let url = self.url.clone();
        let e = err(&url);
        let mut tx = self.client.transaction().map_err(&e)?;
        let lock = tx.prepare("SELECT pg_advisory_xact_lock($1)").map_err(&e)?;
        for g in sorted_groups(crashes) {
            tx.execute(&lock, &[&group_lock_key(g)]).map_err(&e)?;
        }
        let report = {
            let mut t = Tx {
                tx: &mut tx,
                url: &url,
                statements: Default::default(),
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
        let e = err(&self.url);
        let order = "ORDER BY count DESC, signature COLLATE \"C\", program COLLATE \"C\"";
        let rows = match program {
            Some(p) => self.client.query(
                &format!("SELECT {BUCKET_COLUMNS} FROM csi_buckets WHERE program = $1 {order}"),
                &[&p],
            ),
            None => self.client.query(
                &format!("SELECT {BUCKET_COLUMNS} FROM csi_buckets {order}"),
                &[],
            ),
        }
        .map_err(&e)?;
        rows.iter()
            .map(|r| {
                stored_bucket(
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                    r.get(6),
                    r.get(7),
                    r.get(8),
                    r.get(9),
                    r.get(10),
                    r.get(11),
                    r.get(12),
                    r.get(13),
                )
            })
            .collect()
    }

    pub(super) fn bucket_crashes(
        &mut self,
        program: Option<&str>,
        signature: &str,
    ) -> Result<Vec<StoredCrash>, StoreError> {
        let e = err(&self.url);
        let order = "ORDER BY time IS NOT NULL, time, core COLLATE \"C\", hash";
        let rows = match program {
            Some(p) => self.client.query(
                &format!("SELECT {CRASH_COLUMNS} FROM csi_crashes WHERE bucket = $1 AND program = $2 {order}"),
                &[&signature, &p],
            ),
            None => self.client.query(
                &format!("SELECT {CRASH_COLUMNS} FROM csi_crashes WHERE bucket = $1 {order}"),
                &[&signature],
            ),
        }
        .map_err(&e)?;
        Ok(rows
            .iter()
            .map(|r| StoredCrash {
                hash: r.get(0),
                core: r.get(1),
                program: r.get(2),
                time: from_i64(r.get(3)),
                signal: r.get(4),
                site: r.get(5),
                bucket: r.get(6),
                analysed_lines: r.get(7),
            })
            .collect())
    }

    pub(super) fn crash(&mut self, hash: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .client
            .query_opt("SELECT record FROM csi_crashes WHERE hash = $1", &[&hash])
            .map_err(err(&self.url))?
            .map(|r| r.get(0)))
    }

    pub(super) fn set_extra(
        &mut self,
        program: &str,
        signature: &str,
        extra: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = self
            .client
            .execute(
                "UPDATE csi_buckets SET extra = $3 WHERE program = $1 AND signature = $2",
                &[&program, &signature, &extra],
            )
            .map_err(err(&self.url))?;
        Ok(n > 0)
    }
}

struct Tx<'a, 'b> {
    tx: &'a mut postgres::Transaction<'b>,
    url: &'a str,
    statements: std::collections::HashMap<&'static str, postgres::Statement>,
}

impl Tx<'_, '_> {
    fn statement(&mut self, sql: &'static str) -> Result<postgres::Statement, StoreError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.tx.prepare(sql).map_err(err(self.url))?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }
}

impl IngestTx for Tx<'_, '_> {
    fn insert_crash(&mut self, c: &NewCrash) -> Result<bool, StoreError> {
        let st = self.statement(
            "INSERT INTO csi_crashes (hash, core, program, time, signal, frames, site, group_key, bucket, \
             analysed_lines, record, ingested) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '', $9, $10, $11) \
             ON CONFLICT (hash) DO NOTHING",
        )?;
        let n = self
            .tx
            .execute(
                &st,
                &[
                    &c.hash,
                    &c.core,
                    &c.program,
                    &c.time,
                    &c.signal,
                    &c.frames,
                    &c.site,
                    &c.group_key,
                    &c.analysed_lines,
                    &c.record,
                    &now(),
                ],
            )
            .map_err(err(self.url))?;
        Ok(n == 1)
    }

    fn group_crashes(
        &mut self,
        group_key: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        let st = self.statement("SELECT hash, bucket, record FROM csi_crashes WHERE group_key = $1 ORDER BY hash COLLATE \"C\"")?;
        Ok(self
            .tx
            .query(&st, &[&group_key])
            .map_err(err(self.url))?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }

    fn group_extras(&mut self, group_key: &str) -> Result<Vec<(String, String)>, StoreError> {
        let st = self.statement(
            "SELECT signature, extra FROM csi_buckets WHERE group_key = $1 AND extra IS NOT NULL",
        )?;
        Ok(self
            .tx
            .query(&st, &[&group_key])
            .map_err(err(self.url))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn delete_group_buckets(&mut self, group_key: &str) -> Result<(), StoreError> {
        let st = self.statement("DELETE FROM csi_buckets WHERE group_key = $1")?;
        self.tx.execute(&st, &[&group_key]).map_err(err(self.url))?;
        Ok(())
    }

    fn insert_bucket(&mut self, b: &BucketRow) -> Result<(), StoreError> {
        let st = self.statement(
            "INSERT INTO csi_buckets (program, signature, group_key, signal, frames, count, first_time, \
             last_time, representative, representative_core, lines_analysed, sites, must_in_all, \
             never_in_any, extra) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )?;
        self.tx
            .execute(
                &st,
                &[
                    &b.program,
                    &b.signature,
                    &b.group_key,
                    &b.signal,
                    &b.frames,
                    &b.count,
                    &b.first_time,
                    &b.last_time,
                    &b.representative,
                    &b.representative_core,
                    &b.lines_analysed,
                    &b.sites,
                    &b.must_in_all,
                    &b.never_in_any,
                    &b.extra,
                ],
            )
            .map_err(err(self.url))?;
        Ok(())
    }

    fn set_crash_bucket(&mut self, hash: &str, signature: &str) -> Result<(), StoreError> {
        let st = self.statement("UPDATE csi_crashes SET bucket = $2 WHERE hash = $1")?;
        self.tx
            .execute(&st, &[&hash, &signature])
            .map_err(err(self.url))?;
        Ok(())
    }

    fn meta_get_or_set(&mut self, key: &str, value: &str) -> Result<String, StoreError> {
        let e = err(self.url);
        self.tx
            .execute(
                "INSERT INTO csi_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                &[&key, &value],
            )
            .map_err(&e)?;
        Ok(self
            .tx
            .query_one("SELECT value FROM csi_meta WHERE key = $1", &[&key])
            .map_err(&e)?
            .get(0))
    }
}
