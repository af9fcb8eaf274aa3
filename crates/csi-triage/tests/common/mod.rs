//! What the store tests share: crash records made to order, the buckets a store should
//! hold (computed with `bucketize` from the records alone), and a real PostgreSQL server on
//! loopback.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use csi_triage::store::Store;
use csi_triage::{bucketize, CrashRecord, FileLineSet, FrameEvidence};

pub fn lines(file: &str, ls: &[u32]) -> FileLineSet {
    if ls.is_empty() {
        return FileLineSet::new();
    }
    [(file.to_string(), ls.iter().copied().collect())].into()
}

pub fn ev(must: &[u32], never: &[u32]) -> Vec<FrameEvidence> {
    let f = |ls: &[u32]| ls.iter().map(|&l| ("app.c".to_string(), l)).collect();
    vec![FrameEvidence {
        must: f(must),
        never: f(never),
    }]
}

/// A crash of `exe` in `frames` at `time`, its innermost frame's evidence `local`, the
/// whole program's must / never lines of app.c.
pub fn record(
    core: &str,
    exe: &str,
    time: u64,
    frames: &[&str],
    local: Vec<FrameEvidence>,
    must: &[u32],
    never: &[u32],
) -> CrashRecord {
    CrashRecord {
        core: core.into(),
        exe: exe.into(),
        build_id: None,
        time: Some(time),
        signal: "SIGSEGV".into(),
        frames: frames.iter().map(|s| s.to_string()).collect(),
        site: Some(format!("app.c:{}", 100 + frames.len())),
        stack_lines: vec![],
        local,
        must: lines("app.c", must),
        never: lines("app.c", never),
        analysed_lines: true,
        slice: None,
    }
}

/// A made-up content hash (the store takes any non-empty text).
pub fn hash(i: usize) -> String {
    format!(
        "{:064x}",
        0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)
    )
}

/// A bucket as compared: program, signature → (member hashes oldest first, must, never).
pub type Expected = BTreeMap<(String, String), (Vec<String>, FileLineSet, FileLineSet)>;

/// The buckets one `bucketize` of all `crashes` makes (the store must hold exactly these).
pub fn expected(crashes: &[(String, CrashRecord)], refine: usize) -> Expected {
    let mut sorted: Vec<&(String, CrashRecord)> = crashes.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted.dedup_by(|a, b| a.0 == b.0);
    let records: Vec<CrashRecord> = sorted.iter().map(|(_, r)| r.clone()).collect();
    bucketize(&records, refine)
        .into_iter()
        .map(|b| {
            let program = records[b.crashes[0]].exe.display().to_string();
            let members = b.crashes.iter().map(|&i| sorted[i].0.clone()).collect();
            (
                (program, b.signature),
                (members, b.must_in_all, b.never_in_any),
            )
        })
        .collect()
}

/// What the store holds, in the same shape (and checks each bucket row against its crashes).
pub fn stored(store: &mut Store) -> Expected {
    let mut out = Expected::new();
    let buckets = store.buckets(None).unwrap();
    for w in buckets.windows(2) {
        assert!(
            (w[1].count, &w[0].signature) <= (w[0].count, &w[1].signature),
            "bucket list not by count, then signature: {} ({}) before {} ({})",
            w[0].signature,
            w[0].count,
            w[1].signature,
            w[1].count
        );
    }
    for b in buckets {
        let crashes = store
            .bucket_crashes(Some(&b.program), &b.signature)
            .unwrap();
        assert_eq!(crashes.len() as u64, b.count, "{}", b.signature);
        assert_eq!(crashes[0].hash, b.representative, "{}", b.signature);
        assert_eq!(crashes[0].core, b.representative_core);
        let times: BTreeSet<u64> = crashes.iter().filter_map(|c| c.time).collect();
        assert_eq!(b.first_time, times.first().copied());
        assert_eq!(b.last_time, times.last().copied());
        assert_eq!(b.sites.values().sum::<u64>(), b.count);
        for c in &crashes {
            assert_eq!(c.bucket, b.signature);
            assert_eq!(c.program, b.program);
        }
        let members = crashes.into_iter().map(|c| c.hash).collect();
        let prev = out.insert(
            (b.program, b.signature),
            (members, b.must_in_all, b.never_in_any),
        );
        assert!(prev.is_none(), "a bucket listed twice");
    }
    out
}

/// A pseudo-random crash set: `n` crashes over `groups` stack groups of two programs, each
/// with one of three innermost-frame paths (two contradict each other, the third neither),
/// times spread so that arrival order and age differ.
pub fn synthetic(n: usize, groups: usize, seed: u64) -> Vec<(String, CrashRecord)> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let g = (next() % groups as u64) as usize;
            let exe = if g.is_multiple_of(2) {
                "/srv/bin/app"
            } else {
                "/srv/bin/tool"
            };
            let f1 = format!("fn{g}");
            let frames = [f1.as_str(), "dispatch", "main"];
            let local = match next() % 3 {
                0 => ev(&[10, 12], &[11]),
                1 => ev(&[11, 12], &[10]),
                _ => ev(&[12], &[]),
            };
            let extra = 20 + (next() % 5) as u32;
            let time = 1_700_000_000 + next() % 100_000;
            let r = record(
                &format!("/cores/{g}/core.{i}"),
                exe,
                time,
                &frames,
                local,
                &[1, 2, 12, extra],
                &[30, 31, extra + 10],
            );
            (hash(i), r)
        })
        .collect()
}

/// The PostgreSQL server binaries of Debian's package (`/usr/lib/postgresql/VERSION/bin`,
/// the newest version), or `None`.
pub fn postgres_bin() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((v, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, b)| b)
}

/// A PostgreSQL server of its own on a free loopback port, with its data and socket in a
/// temporary directory; stopped (and the directory removed) when dropped, also when the
/// test fails.
pub struct PgServer {
    pub port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// The user the server runs as when we are root (initdb refuses root).
    run_as: Option<String>,
}

impl PgServer {
    /// Starts a server, or returns `None` (skip) when the binaries are absent — unless `CI`
    /// is set, where that fails the test.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = postgres_bin() else {
            let msg = "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): \
                       install Debian's `postgresql` package (scripts/test does)";
            if std::env::var_os("CI").is_some() {
                panic!("{msg}");
            }
            eprintln!("skipped: {msg}");
            return None;
        };
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        // As root, run the server as `postgres` (Debian's package makes it), else `nobody`;
        // either must be able to reach the directory, so it goes under /tmp.
        let run_as = root.then(|| {
            let has_postgres = Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|o| o.status.success());
            if has_postgres { "postgres" } else { "nobody" }.to_string()
        });
        let dir = if root {
            tempfile::Builder::new()
                .prefix("csi-pg-")
                .tempdir_in("/tmp")
        } else {
            tempfile::Builder::new().prefix("csi-pg-").tempdir()
        }
        .expect("temporary directory");
        if let Some(user) = &run_as {
            let st = Command::new("chown")
                .arg(user)
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(st.success(), "chown {user} {}", dir.path().display());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = PgServer {
            port,
            bin,
            dir,
            run_as,
        };
        let data = server.dir.path().join("data");
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "csi",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ])
            .output()
            .expect("initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let opts = format!(
            "-k {} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40",
            server.dir.path().display()
        );
        let out = server
            .command("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(server.dir.path().join("log"))
            .args(["-w", "-t", "60", "-o", &opts, "start"])
            .output()
            .expect("pg_ctl");
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(server.dir.path().join("log")).unwrap_or_default()
        );
        Some(server)
    }

    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    /// The URL of database `db` (created when it is not `postgres`).
    pub fn url(&self, db: &str) -> String {
        let base = format!("postgres://csi@127.0.0.1:{}/", self.port);
        if db != "postgres" {
            let mut c =
                postgres::Client::connect(&format!("{base}postgres"), postgres::NoTls).unwrap();
            c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        }
        format!("{base}{db}")
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

pub fn temp_store(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}
