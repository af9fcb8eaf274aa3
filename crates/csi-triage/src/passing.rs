//! Failing runs against passing ones: what a bucket's crashes did that no passing run did, and
//! a suspiciousness ranking of lines (Ochiai, as in statistical fault localisation), with
//! every "Maybe" kept as uncertainty rather than guessed.
//!
//! Each run — a crash of the bucket, or a passing run (csi-cc's `CSI_COVERAGE_OUT` coverage)
//! — says per line *ran* (must), *did not run* (never) or nothing (may). For a line, with `T`
//! crashes in the bucket:
//!
//! - `failed` is the interval [crashes where it surely ran, crashes where it may have run
//!   (T − surely not)], `passed` likewise over the passing runs;
//! - Ochiai = failed / √(T · (failed + passed)) grows with `failed` and shrinks with
//!   `passed`, so its interval is [Ochiai(failed_min, passed_max), Ochiai(failed_max,
//!   passed_min)]: every way of resolving the Maybes lies inside it. Lines are ranked by the
//!   lower bound (what is certain), then the upper; a line with a lower bound of 0 is not
//!   ranked.
//! - Among lines Ochiai cannot tell apart (typically every line that ran in all runs, passing
//!   and failing), the crashes' own stacks decide: a line more crashes were executing in a
//!   frame of the crashing thread comes first. Ochiai alone cannot rank a faulty line that
//!   passing runs execute too (an unchecked division, an assertion); the crash stops on it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::{intersect, Bucket, CrashRecord, FileLineSet};

/// One passing run's answer per line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassingLines {
    /// `dir/pid` of the run's coverage files.
    pub run: String,
    pub must: FileLineSet,
    pub never: FileLineSet,
}

/// The passing runs of one program merged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassingSummary {
    pub runs: usize,
    /// Lines that ran in every passing run.
    pub always: FileLineSet,
    /// Lines that ran in some passing run but not surely in all.
    pub sometimes: FileLineSet,
    /// Lines that surely ran in no passing run.
    pub never: FileLineSet,
}

/// A line's suspiciousness in one bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suspicious {
    pub file: String,
    pub line: u32,
    /// Ochiai's interval [lower, upper].
    pub ochiai: [f64; 2],
    /// Crashes of the bucket in which the line ran: [surely, possibly].
    pub failed: [usize; 2],
    /// Passing runs in which the line ran: [surely, possibly].
    pub passed: [usize; 2],
    /// Crashes of the bucket that were executing the line in a frame of the crashing thread.
    pub on_stack: usize,
}

/// What a bucket's crashes did differently from the passing runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PassingComparison {
    pub passing_runs: usize,
    /// Lines that ran in every crash of the bucket and surely in no passing run.
    pub failing_only: FileLineSet,
    /// Lines that ran in every passing run and surely in no crash of the bucket.
    pub passing_only: FileLineSet,
    /// The most suspicious lines, most suspicious first (at most `top`).
    pub suspicious: Vec<Suspicious>,
}

/// The passing runs of one program build with their merge (computed once per build, used by
/// every bucket of it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildRuns {
    pub runs: Vec<PassingLines>,
    pub summary: PassingSummary,
}

impl BuildRuns {
    pub fn new(runs: Vec<PassingLines>) -> Self {
        let summary = summarize(&runs);
        BuildRuns { runs, summary }
    }
}

/// Merges passing runs (all of one program).
pub fn summarize(runs: &[PassingLines]) -> PassingSummary {
    let mut out = PassingSummary {
        runs: runs.len(),
        ..Default::default()
    };
    let Some(first) = runs.first() else {
        return out;
    };
    out.always = first.must.clone();
    out.never = first.never.clone();
    let mut any: FileLineSet = FileLineSet::new();
    for r in runs {
        intersect(&mut out.always, &r.must);
        intersect(&mut out.never, &r.never);
        for (f, ls) in &r.must {
            any.entry(f.clone()).or_default().extend(ls);
        }
    }
    for (f, ls) in any {
        let always = out.always.get(&f);
        let s: BTreeSet<u32> = ls
            .into_iter()
            .filter(|l| !always.is_some_and(|a| a.contains(l)))
            .collect();
        if !s.is_empty() {
            out.sometimes.insert(f, s);
        }
    }
    out
}

fn count(sets: &[&FileLineSet], file: &str, line: u32) -> usize {
    sets.iter()
        .filter(|s| s.get(file).is_some_and(|l| l.contains(&line)))
        .count()
}

/// Ochiai: failed / √(total_failed · (failed + passed)); 0 when nothing failed there.
pub fn ochiai(failed: usize, passed: usize, total_failed: usize) -> f64 {
    if failed == 0 {
        return 0.0;
    }
    failed as f64 / ((total_failed * (failed + passed)) as f64).sqrt()
}

/// Compares a bucket (whose crashes are `crashes`, indexed by `bucket.crashes`) with the
/// passing runs of its program build; ranks the `top` most suspicious lines.
pub fn compare(
    bucket: &Bucket,
    crashes: &[CrashRecord],
    build: &BuildRuns,
    top: usize,
) -> PassingComparison {
    let runs = &build.runs;
    let mut out = PassingComparison {
        passing_runs: runs.len(),
        ..Default::default()
    };
    let crashes: Vec<&CrashRecord> = bucket.crashes.iter().map(|&i| &crashes[i]).collect();
    let t = crashes.len();
    if t == 0 || crashes.iter().any(|c| !c.analysed_lines) {
        return out;
    }
    if !runs.is_empty() {
        out.failing_only = bucket.must_in_all.clone();
        intersect(&mut out.failing_only, &build.summary.never);
        out.passing_only = build.summary.always.clone();
        intersect(&mut out.passing_only, &bucket.never_in_any);
    }
    let f_must: Vec<&FileLineSet> = crashes.iter().map(|c| &c.must).collect();
    let f_never: Vec<&FileLineSet> = crashes.iter().map(|c| &c.never).collect();
    let p_must: Vec<&FileLineSet> = runs.iter().map(|r| &r.must).collect();
    let p_never: Vec<&FileLineSet> = runs.iter().map(|r| &r.never).collect();
    // Candidates: lines that surely ran in some crash (a lower bound above 0).
    let mut candidates: BTreeSet<(&str, u32)> = BTreeSet::new();
    for c in &crashes {
        for (f, ls) in &c.must {
            candidates.extend(ls.iter().map(|&l| (f.as_str(), l)));
        }
    }
    let n = runs.len();
    let mut ranked: Vec<Suspicious> = candidates
        .into_iter()
        .map(|(file, line)| {
            let failed = [count(&f_must, file, line), t - count(&f_never, file, line)];
            let on_stack = crashes
                .iter()
                .filter(|c| c.stack_lines.iter().any(|(f, l)| f == file && *l == line))
                .count();
            let passed = [count(&p_must, file, line), n - count(&p_never, file, line)];
            Suspicious {
                file: file.to_string(),
                line,
                ochiai: [
                    ochiai(failed[0], passed[1], t),
                    ochiai(failed[1], passed[0], t),
                ],
                failed,
                passed,
                on_stack,
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.ochiai[0]
            .total_cmp(&a.ochiai[0])
            .then(b.ochiai[1].total_cmp(&a.ochiai[1]))
            .then(b.on_stack.cmp(&a.on_stack))
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });
    ranked.truncate(top);
    out.suspicious = ranked;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(lines: &[u32]) -> FileLineSet {
        [("a.c".to_string(), lines.iter().copied().collect())].into()
    }

    fn crash(must: &[u32], never: &[u32]) -> CrashRecord {
        CrashRecord {
            core: "core".into(),
            exe: "/bin/app".into(),
            build_id: None,
            time: None,
            signal: "SIGSEGV".into(),
            frames: vec!["f".into()],
            site: None,
            stack_lines: vec![("a.c".into(), 7)],
            local: vec![],
            must: set(must),
            never: set(never),
            analysed_lines: true,
            slice: None,
        }
    }

    fn run(must: &[u32], never: &[u32]) -> PassingLines {
        PassingLines {
            run: "r".into(),
            must: set(must),
            never: set(never),
        }
    }

    /// Compares crashes that make one bucket with `runs`.
    fn compare_all(
        crashes: Vec<CrashRecord>,
        runs: &[PassingLines],
        top: usize,
    ) -> PassingComparison {
        let buckets = crate::bucketize(&crashes, 0);
        assert_eq!(buckets.len(), 1);
        compare(&buckets[0], &crashes, &BuildRuns::new(runs.to_vec()), top)
    }

    #[test]
    fn ochiai_intervals_hold_every_resolution_of_maybe() {
        // Line 5 ran in both crashes and in no passing run; line 1 everywhere; line 7 in one
        // crash, unknown in the other, unknown in one passing run.
        let (a, b) = (crash(&[1, 5, 7], &[]), crash(&[1, 5], &[]));
        let runs = [run(&[1], &[5, 7]), run(&[1], &[5]), run(&[1, 3], &[5, 7])];
        let c = compare_all(vec![a, b], &runs, 10);
        assert_eq!(
            (c.suspicious[0].file.as_str(), c.suspicious[0].line),
            ("a.c", 5)
        );
        assert_eq!(c.suspicious[0].ochiai, [1.0, 1.0]);
        let l7 = c.suspicious.iter().find(|s| s.line == 7).unwrap();
        assert_eq!((l7.failed, l7.passed), ([1, 2], [0, 1]));
        // Every resolution of the Maybes lies inside the interval.
        for f in 1..=2 {
            for p in 0..=1 {
                let o = ochiai(f, p, 2);
                assert!(l7.ochiai[0] <= o && o <= l7.ochiai[1], "{f} {p} {o}");
            }
        }
        let l1 = c.suspicious.iter().find(|s| s.line == 1).unwrap();
        assert!(l1.ochiai[1] < l7.ochiai[1]);
        assert_eq!((l7.on_stack, l1.on_stack), (2, 0));
        assert_eq!(c.failing_only, set(&[5]));
        assert!(c.passing_only.is_empty());
        let s = summarize(&runs);
        assert_eq!(
            (s.always.clone(), s.sometimes.clone(), s.never.clone()),
            (set(&[1]), set(&[3]), set(&[5]))
        );
    }

    #[test]
    fn lines_surely_run_by_every_passing_run_but_no_crash() {
        let (a, b) = (crash(&[1], &[9]), crash(&[1, 2], &[9]));
        let runs = [run(&[1, 9], &[]), run(&[9], &[])];
        let c = compare_all(vec![a, b], &runs, 3);
        assert_eq!(c.passing_only, set(&[9]));
        // Lines 1 and 2 are tied by Ochiai's lower bound; line 2 ran in one crash only.
        assert_eq!(c.suspicious[0].line, 1);
        assert!(c.failing_only.is_empty());
        assert_eq!(c.suspicious.len(), 2);
    }
}
