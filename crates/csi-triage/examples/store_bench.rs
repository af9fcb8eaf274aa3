//! The crash store's benchmark (bench/store/run.sh runs it on SQLite and PostgreSQL):
//! fills a store with synthetic crash records through the real API, then times the queries.
//!
//! store_bench SPEC [CRASHES=100000] [GROUPS=200] [BATCH=1000] [GROUPS_PER_BATCH=10]
//!
//! Each ingest (one transaction, as one `csi triage --store` run) holds BATCH crashes of
//! GROUPS_PER_BATCH stack groups (a sliding window over the groups), so every group is fed
//! by several runs and each run re-buckets the groups it touches from all their stored
//! crashes. A third of the groups split into two paths. Then: the bucket list, a bucket's
//! crashes (the largest bucket, and a bucket of median size), one crash's record — median of
//! 20 each — and one more run that touches every group (the worst case of re-bucketing).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use csi_triage::store::Store;
use csi_triage::{CrashRecord, FileLineSet, FrameEvidence};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn lineset(rng: &mut Rng, base: u32, n: usize) -> BTreeSet<u32> {
    (0..n).map(|_| base + rng.below(400) as u32).collect()
}

/// A crash of group `g`: 5 signature frames, one frame of path evidence (~15 must and
/// ~15 never lines), whole-program must / never lines (~80 each, over 3 files).
fn crash(rng: &mut Rng, i: usize, g: usize) -> (String, CrashRecord) {
    let f = |ls: BTreeSet<u32>| -> BTreeSet<(String, u32)> {
        ls.into_iter()
            .map(|l| ("src/eval.c".to_string(), l))
            .collect()
    };
    let mut local_must = lineset(rng, 1, 15);
    let mut local_never = lineset(rng, 1000, 15);
    if g.is_multiple_of(3) {
        // Two paths through the crashing frame: line 500 ran in one, not in the other.
        if rng.below(2) == 0 {
            local_must.insert(500);
            local_never.insert(501);
        } else {
            local_must.insert(501);
            local_never.insert(500);
        }
    }
    let mut must = FileLineSet::new();
    let mut never = FileLineSet::new();
    for file in ["src/main.c", "src/eval.c", "src/util.c"] {
        let mut m = lineset(rng, 1, 27);
        m.extend(1..=10); // shared by every crash: must-in-all is not empty
        must.insert(file.to_string(), m);
        let mut n = lineset(rng, 2000, 27);
        n.extend(3000..3010);
        never.insert(file.to_string(), n);
    }
    let rec = CrashRecord {
        core: format!("/var/crash/{g}/core.{i}").into(),
        exe: format!("/srv/bin/app{}", g % 4).into(),
        build_id: None,
        time: Some(1_790_000_000 + i as u64 * 13 % 5_000_000),
        signal: if g.is_multiple_of(5) {
            "SIGABRT"
        } else {
            "SIGSEGV"
        }
        .to_string(),
        frames: vec![
            format!("handler_{g}"),
            format!("dispatch_{}", g % 17),
            "serve".into(),
            "run".into(),
            "main".into(),
        ],
        site: Some(format!("src/eval.c:{}", 100 + g)),
        stack_lines: vec![],
        local: vec![FrameEvidence {
            must: f(local_must),
            never: f(local_never),
        }],
        must,
        never,
        analysed_lines: true,
        slice: None,
    };
    (
        blake3::hash(format!("synthetic core {i}").as_bytes())
            .to_hex()
            .to_string(),
        rec,
    )
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..20)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[10]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(spec) = args.get(1) else {
        eprintln!("usage: store_bench SPEC [CRASHES] [GROUPS] [BATCH] [GROUPS_PER_BATCH]");
        std::process::exit(2);
    };
    let num = |k: usize, d: usize| args.get(k).map_or(d, |s| s.parse().expect("a number"));
    let (n, groups, batch, gpb) = (num(2, 100_000), num(3, 200), num(4, 1000), num(5, 10));
    let mut store = match Store::open(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(1);
        }
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let started = Instant::now();
    let mut ingest_time = Duration::ZERO;
    let mut record_bytes = 0usize;
    let mut i = 0;
    let mut b = 0;
    while i < n {
        let k = batch.min(n - i);
        let base = (b * gpb) % groups;
        let crashes: Vec<(String, CrashRecord)> = (i..i + k)
            .map(|j| {
                let g = (base + rng.below(gpb as u64) as usize) % groups;
                crash(&mut rng, j, g)
            })
            .collect();
        record_bytes += crashes
            .iter()
            .map(|(_, r)| serde_json::to_string(r).unwrap().len())
            .sum::<usize>();
        let s = Instant::now();
        let r = store.ingest(&crashes, 1).expect("ingest");
        ingest_time += s.elapsed();
        assert_eq!(r.new, k, "a fresh store: every crash is new");
        i += k;
        b += 1;
    }
    let buckets = store.buckets(None).unwrap();
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    println!(
        "{} store: {n} crashes ({} bytes of record JSON each on average) in {groups} groups, {} buckets; {b} ingests of {batch} crashes over {gpb} groups",
        store.kind(),
        record_bytes / n.max(1),
        buckets.len()
    );
    assert_eq!(total as usize, n, "the buckets hold every crash");
    println!(
        "  ingest: {:.1} s, {:.0} crashes/s ({} per ingest; wall {:.1} s with generating)",
        ingest_time.as_secs_f64(),
        n as f64 / ingest_time.as_secs_f64(),
        ms(ingest_time / b as u32),
        started.elapsed().as_secs_f64()
    );
    let list = median(|| {
        store.buckets(None).unwrap();
    });
    let program = buckets[0].program.clone();
    let list_one = median(|| {
        store.buckets(Some(&program)).unwrap();
    });
    let big = buckets[0].clone();
    let mid = buckets[buckets.len() / 2].clone();
    let crashes_big = median(|| {
        assert_eq!(
            store
                .bucket_crashes(Some(&big.program), &big.signature)
                .unwrap()
                .len() as u64,
            big.count
        );
    });
    let crashes_mid = median(|| {
        store
            .bucket_crashes(Some(&mid.program), &mid.signature)
            .unwrap();
    });
    let one = store.bucket_crashes(None, &mid.signature).unwrap()[0]
        .hash
        .clone();
    let record = median(|| {
        store.crash(&one).unwrap().expect("stored");
    });
    println!(
        "  bucket list ({} buckets): {} median of 20; one program's ({}): {}",
        buckets.len(),
        ms(list),
        program,
        ms(list_one)
    );
    println!(
        "  a bucket's crashes: largest ({} crashes) {}, median-size ({} crashes) {}; one crash's record {}",
        big.count,
        ms(crashes_big),
        mid.count,
        ms(crashes_mid),
        ms(record)
    );
    // One run touching every group: re-buckets all n stored crashes.
    let crashes: Vec<(String, CrashRecord)> =
        (0..groups).map(|g| crash(&mut rng, n + g, g)).collect();
    let s = Instant::now();
    let r = store.ingest(&crashes, 1).expect("ingest");
    println!(
        "  one ingest of {} crashes touching all {} groups (re-buckets all {} crashes): {:.2} s",
        r.new,
        r.groups,
        n + groups,
        s.elapsed().as_secs_f64()
    );
}
