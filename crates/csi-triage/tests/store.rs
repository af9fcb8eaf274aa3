//! The crash store against both backends: SQLite in a temporary file, PostgreSQL as a real
//! server from Debian's package started on loopback for the test. One body for both.

mod common;

use std::collections::BTreeSet;

use common::*;
use csi_triage::store::{hash_core, Store};
use csi_triage::CrashRecord;
use serde_json::json;

const APP: &str = "/srv/bin/app";

/// Ingest, idempotent re-ingest, a newer crash that splits a group, an older one that
/// changes which part crashes fall into, queries, `extra`. `open` gives a fresh store's spec.
fn store_body(spec: &str) {
    let mut s = Store::open(spec).unwrap();
    assert!(s.buckets(None).unwrap().is_empty());

    // Two groups of APP and one of another program with the same frames.
    let first: Vec<(String, CrashRecord)> = vec![
        (
            hash(1),
            record(
                "c/1",
                APP,
                100,
                &["f", "main"],
                ev(&[5], &[4]),
                &[1, 2, 5],
                &[7, 8],
            ),
        ),
        (
            hash(2),
            record(
                "c/2",
                APP,
                200,
                &["f", "main"],
                ev(&[5, 6], &[]),
                &[1, 5, 6],
                &[8, 9],
            ),
        ),
        (
            hash(3),
            record(
                "c/3",
                APP,
                300,
                &["f", "main"],
                ev(&[], &[4]),
                &[1, 2, 5, 6],
                &[8],
            ),
        ),
        (
            hash(4),
            record(
                "c/4",
                APP,
                150,
                &["g", "main"],
                ev(&[9], &[]),
                &[1, 9],
                &[3],
            ),
        ),
        (
            hash(5),
            record(
                "c/5",
                "/srv/bin/other",
                50,
                &["f", "main"],
                ev(&[], &[]),
                &[1],
                &[],
            ),
        ),
    ];
    let r = s.ingest(&first, 1).unwrap();
    assert_eq!(
        (r.new, r.already, r.groups, r.buckets_updated),
        (5, 0, 3, 3),
        "{r:?}"
    );
    assert_eq!(stored(&mut s), expected(&first, 1));

    let buckets = s.buckets(None).unwrap();
    let f = &buckets[0];
    assert_eq!(f.signature, "SIGSEGV in f | main");
    assert_eq!((f.program.as_str(), f.count), (APP, 3));
    assert_eq!((f.first_time, f.last_time), (Some(100), Some(300)));
    assert_eq!(
        (f.representative.as_str(), f.representative_core.as_str()),
        (hash(1).as_str(), "c/1")
    );
    assert_eq!(f.must_in_all, lines("app.c", &[1, 5]));
    assert_eq!(f.never_in_any, lines("app.c", &[8]));
    assert_eq!(f.frames, vec!["f", "main"]);
    assert!(f.lines_analysed && f.extra.is_none());
    assert_eq!(f.sites.get("app.c:102"), Some(&3));
    // Per program; the other program's bucket of the same signature stays apart.
    let apps = s.buckets(Some(APP)).unwrap();
    assert_eq!(apps.len(), 2);
    assert!(apps.iter().all(|b| b.program == APP));
    assert_eq!(s.buckets(Some("/srv/bin/other")).unwrap().len(), 1);
    assert_eq!(
        s.bucket_crashes(None, "SIGSEGV in f | main").unwrap().len(),
        4
    );
    let cs = s.bucket_crashes(Some(APP), "SIGSEGV in f | main").unwrap();
    let cores: Vec<&str> = cs.iter().map(|c| c.core.as_str()).collect();
    assert_eq!(cores, ["c/1", "c/2", "c/3"], "oldest first");
    // One crash's whole record, as ingested.
    assert_eq!(s.crash(&hash(2)).unwrap().as_ref(), Some(&first[1].1));
    assert_eq!(s.crash("no-such-hash").unwrap(), None);

    // The same crashes again (one from another path: the hash is the key): nothing changes.
    let mut again = first.clone();
    again[0].1.core = "elsewhere/core".into();
    let r = s.ingest(&again, 1).unwrap();
    assert_eq!(
        (r.new, r.already, r.groups, r.buckets_updated),
        (0, 5, 0, 0),
        "{r:?}"
    );
    assert_eq!(s.buckets(None).unwrap(), buckets);
    // A batch with one crash twice: the second is "already".
    let twice = vec![
        (
            hash(6),
            record(
                "c/6",
                APP,
                160,
                &["g", "main"],
                ev(&[9], &[]),
                &[1, 9, 10],
                &[3],
            ),
        ),
        (
            hash(6),
            record(
                "c/6",
                APP,
                160,
                &["g", "main"],
                ev(&[9], &[]),
                &[1, 9, 10],
                &[3],
            ),
        ),
    ];
    let r = s.ingest(&twice, 1).unwrap();
    assert_eq!(
        (r.new, r.already, r.groups, r.buckets_updated),
        (1, 1, 1, 1),
        "{r:?}"
    );

    // `extra` is carried: set, read back, kept by a re-bucketing that keeps the signature.
    assert!(s
        .set_extra(
            APP,
            "SIGSEGV in g | main",
            Some(&json!({"ochiai": [["app.c", 9, 0.7]]}))
        )
        .unwrap());
    assert!(s
        .set_extra(
            APP,
            "SIGSEGV in f | main",
            Some(&json!("stale after a split"))
        )
        .unwrap());
    assert!(!s
        .set_extra(APP, "SIGSEGV in nowhere", Some(&json!(1)))
        .unwrap());
    let g = |s: &mut Store| {
        s.buckets(Some(APP))
            .unwrap()
            .into_iter()
            .find(|b| b.signature == "SIGSEGV in g | main")
            .unwrap()
    };
    assert_eq!(
        g(&mut s).extra,
        Some(json!({"ochiai": [["app.c", 9, 0.7]]}))
    );
    let more_g = vec![(
        hash(7),
        record(
            "c/7",
            APP,
            170,
            &["g", "main"],
            ev(&[9], &[]),
            &[1, 9],
            &[3, 4],
        ),
    )];
    s.ingest(&more_g, 1).unwrap();
    assert_eq!(g(&mut s).count, 3);
    assert_eq!(
        g(&mut s).extra,
        Some(json!({"ochiai": [["app.c", 9, 0.7]]}))
    );

    // A newer crash whose innermost frame surely ran line 4, which crash 1 surely did not
    // (and did not run 5): the group splits; the old bucket row is gone, every crash moved.
    let split = vec![(
        hash(8),
        record(
            "c/8",
            APP,
            400,
            &["f", "main"],
            ev(&[4], &[5]),
            &[1, 4],
            &[8],
        ),
    )];
    let r = s.ingest(&split, 1).unwrap();
    assert_eq!((r.new, r.groups, r.buckets_updated), (1, 1, 2), "{r:?}");
    let all: Vec<(String, CrashRecord)> = first
        .iter()
        .chain(&twice)
        .chain(&more_g)
        .chain(&split)
        .cloned()
        .collect();
    assert_eq!(stored(&mut s), expected(&all, 1));
    assert!(s
        .bucket_crashes(Some(APP), "SIGSEGV in f | main")
        .unwrap()
        .is_empty());
    let p1 = s
        .bucket_crashes(Some(APP), "SIGSEGV in f | main [path 1/2]")
        .unwrap();
    let p2 = s
        .bucket_crashes(Some(APP), "SIGSEGV in f | main [path 2/2]")
        .unwrap();
    assert_eq!(
        p1.iter().map(|c| c.core.as_str()).collect::<Vec<_>>(),
        ["c/1", "c/2", "c/3"]
    );
    assert_eq!(
        p2.iter().map(|c| c.core.as_str()).collect::<Vec<_>>(),
        ["c/8"]
    );
    // The old signature is gone, and with it its extra.
    assert!(s
        .buckets(Some(APP))
        .unwrap()
        .iter()
        .all(|b| b.extra.is_none() || b.signature.contains(" g ")));

    // An *older* crash that contradicts crash 1 (and 2) but not crash 8 reorders first fit:
    // it opens part 1, which crash 8 joins; crashes 1-3 are part 2 now.
    let older = vec![(
        hash(9),
        record(
            "c/9",
            APP,
            10,
            &["f", "main"],
            ev(&[4], &[6]),
            &[1, 4],
            &[8, 6],
        ),
    )];
    s.ingest(&older, 1).unwrap();
    let all: Vec<(String, CrashRecord)> = all.into_iter().chain(older).collect();
    let want = expected(&all, 1);
    assert_eq!(stored(&mut s), want);
    let p1 = &want[&(
        APP.to_string(),
        "SIGSEGV in f | main [path 1/2]".to_string(),
    )];
    assert_eq!(p1.0, vec![hash(9), hash(8)]);
    let p2 = s
        .bucket_crashes(Some(APP), "SIGSEGV in f | main [path 2/2]")
        .unwrap();
    assert_eq!(
        p2.iter().map(|c| c.core.as_str()).collect::<Vec<_>>(),
        ["c/1", "c/2", "c/3"]
    );

    // Another bucketing than the store's is refused, not mixed in.
    let e = s.ingest(&older_than_all(), 2).unwrap_err().to_string();
    assert!(
        e.contains("--refine-frames 1") && e.contains("asks 2"),
        "{e}"
    );

    // A second handle (another process would be the same) sees it all, read-only too.
    let mut ro = Store::open_existing(spec).unwrap();
    assert_eq!(stored(&mut ro), want);
}

fn older_than_all() -> Vec<(String, CrashRecord)> {
    vec![(
        hash(99),
        record("c/99", APP, 1, &["h", "main"], ev(&[], &[]), &[1], &[]),
    )]
}

/// Two threads ingest overlapping crash sets in interleaved batches into one store; the
/// buckets must be those of one ingest of everything.
fn concurrent_body(spec: &str) {
    let crashes = synthetic(400, 12, 0x5eed);
    let a: Vec<_> = crashes[..260].to_vec();
    let mut b: Vec<_> = crashes[140..].to_vec();
    b.reverse();
    // Schema creation itself must survive two openers at once.
    let (ra, rb) = std::thread::scope(|sc| {
        let ta = sc.spawn(|| {
            let mut s = Store::open(spec).unwrap();
            a.chunks(7)
                .map(|c| s.ingest(c, 1).unwrap())
                .collect::<Vec<_>>()
        });
        let tb = sc.spawn(|| {
            let mut s = Store::open(spec).unwrap();
            b.chunks(11)
                .map(|c| s.ingest(c, 1).unwrap())
                .collect::<Vec<_>>()
        });
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let new: usize = ra.iter().chain(&rb).map(|r| r.new).sum();
    let already: usize = ra.iter().chain(&rb).map(|r| r.already).sum();
    assert_eq!(new, 400, "every crash inserted exactly once");
    assert_eq!(already, 120, "the overlap");
    let mut s = Store::open_existing(spec).unwrap();
    let got = stored(&mut s);
    let want = expected(&crashes, 1);
    assert!(
        want.keys().any(|(_, sig)| sig.contains("[path 2/")),
        "the data splits groups"
    );
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn sqlite_store_ingests_rebuckets_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    store_body(&temp_store(dir.path(), "crashes.db"));
}

#[test]
fn sqlite_store_concurrent_ingests_converge() {
    let dir = tempfile::tempdir().unwrap();
    concurrent_body(&temp_store(dir.path(), "crashes.db"));
}

#[test]
fn postgres_store_same_body_and_concurrent_ingests() {
    let Some(server) = PgServer::start() else {
        return;
    };
    store_body(&server.url("body"));
    concurrent_body(&server.url("conc"));
    // Server gone (another port): one line naming the URL, no panic.
    let e = Store::open(&format!(
        "postgres://csi:pw@127.0.0.1:{}/postgres",
        free_port()
    ))
    .err()
    .expect("no server there")
    .to_string();
    assert!(e.starts_with("postgres://csi:***@127.0.0.1:"), "{e}");
    assert!(!e.contains('\n') && !e.contains("pw@"), "{e}");
    // A database without the tables is no store to read.
    let e = Store::open_existing(&server.url("empty"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a CSI crash store"), "{e}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn bad_stores_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = |r: Result<Store, csi_triage::store::StoreError>| {
        let m = r.err().expect("an error").to_string();
        assert!(!m.contains('\n'), "{m}");
        m
    };
    let msg = e(Store::open(dir.path().to_str().unwrap()));
    assert!(msg.contains("is a directory"), "{msg}");
    let missing = dir.path().join("none.db");
    let msg = e(Store::open_existing(missing.to_str().unwrap()));
    assert!(msg.contains("no such store"), "{msg}");
    assert!(!missing.exists(), "a read-only open creates nothing");
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    let msg = e(Store::open(junk.to_str().unwrap()));
    assert!(
        msg.contains("junk.db") && msg.contains("not a database"),
        "{msg}"
    );
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let msg = e(Store::open_existing(other.to_str().unwrap()));
    assert!(msg.contains("not a CSI crash store"), "{msg}");
    let msg = e(Store::open("postgres://u@h:notaport/db"));
    assert!(msg.contains("bad PostgreSQL URL"), "{msg}");
    let msg = e(Store::open("redis://h/0"));
    assert!(msg.contains("unknown store URL scheme"), "{msg}");
}

#[test]
fn cores_are_keyed_by_content() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.core"),
        dir.path().join("b/core"),
        dir.path().join("c.core"),
    );
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    // Larger than one read buffer: the hash is streamed.
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&a, &bytes).unwrap();
    std::fs::write(&b, &bytes).unwrap();
    let mut other = bytes.clone();
    other[299_999] ^= 1;
    std::fs::write(&c, &other).unwrap();
    assert_eq!(hash_core(&a).unwrap(), hash_core(&b).unwrap());
    assert_ne!(hash_core(&a).unwrap(), hash_core(&c).unwrap());
    assert_eq!(
        hash_core(&a).unwrap(),
        blake3::hash(&bytes).to_hex().to_string()
    );

    let spec = temp_store(dir.path(), "s.db");
    let mut s = Store::open(&spec).unwrap();
    let rec = |core: &std::path::Path, t| {
        record(
            core.to_str().unwrap(),
            APP,
            t,
            &["f", "main"],
            ev(&[], &[]),
            &[1],
            &[],
        )
    };
    let r = s.ingest_cores(&[rec(&a, 1), rec(&c, 2)], 1).unwrap();
    assert_eq!((r.new, r.already), (2, 0));
    // The same core under another path is already stored.
    let r = s.ingest_cores(&[rec(&b, 1)], 1).unwrap();
    assert_eq!((r.new, r.already), (0, 1));
    let stored: BTreeSet<String> = s
        .bucket_crashes(None, "SIGSEGV in f | main")
        .unwrap()
        .into_iter()
        .map(|c| c.core)
        .collect();
    assert_eq!(
        stored,
        [
            a.to_str().unwrap().to_string(),
            c.to_str().unwrap().to_string()
        ]
        .into()
    );
    let gone = dir.path().join("gone.core");
    let msg = s.ingest_cores(&[rec(&gone, 3)], 1).unwrap_err().to_string();
    assert!(
        msg.contains("gone.core") && msg.contains("cannot read"),
        "{msg}"
    );
}
