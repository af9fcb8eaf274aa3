//! Many crashes of one program, as plain data: what one analysed crash contributes
//! ([`CrashRecord`]), how crashes are grouped into buckets ([`bucketize`]), and what a
//! bucket's crashes share. The analysis of each core (csi-dump, csi-analysis) and the
//! rendering (text, JSON, editor) live elsewhere: `csi triage` (csi-cli) produces records,
//! the crash store keeps them, csi-lsp shows them. See docs/triage.md.

pub mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub mod passing;

/// Source lines by file (files named as in DWARF).
pub type FileLineSet = BTreeMap<String, BTreeSet<u32>>;

/// One frame's evidence: the (file, line)s that surely ran and surely did not in that
/// activation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameEvidence {
    pub must: BTreeSet<(String, u32)>,
    pub never: BTreeSet<(String, u32)>,
}

/// What one analysed crash contributes to triage (the loaded crash itself is dropped after
/// analysis, so memory stays at one loaded crash per worker).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashRecord {
    pub core: PathBuf,
    pub exe: PathBuf,
    /// The executable's GNU build id (hex), when it has one.
    #[serde(default)]
    pub build_id: Option<String>,
    /// Core file modification time, seconds since the epoch.
    pub time: Option<u64>,
    pub signal: String,
    /// Signature frames, innermost first.
    pub frames: Vec<String>,
    /// Where the crashing thread stopped, `file:line`.
    pub site: Option<String>,
    /// The line each program frame of the crashing thread was executing, innermost first.
    #[serde(default)]
    pub stack_lines: Vec<(String, u32)>,
    /// Per innermost physical program frame (up to `--refine-frames`): lines that surely ran
    /// and surely did not in that activation.
    pub local: Vec<FrameEvidence>,
    /// Whole-program lines that surely ran.
    pub must: FileLineSet,
    /// Whole-program lines that surely did not run.
    pub never: FileLineSet,
    /// The program has CSI metadata (must/never are meaningful).
    pub analysed_lines: bool,
    /// The restricted slice from the crash point (`csi triage --slices`), by file.
    #[serde(default)]
    pub slice: Option<FileLineSet>,
}

/// Crashes with one signature whose path evidence agrees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub signature: String,
    pub signal: String,
    pub frames: Vec<String>,
    /// Indices into the crashes given to [`bucketize`], oldest first.
    pub crashes: Vec<usize>,
    /// Lines that ran in every crash of the bucket.
    pub must_in_all: FileLineSet,
    /// Lines that ran in no crash of the bucket.
    pub never_in_any: FileLineSet,
    /// Lines in the restricted slice from the crash point of every crash of the bucket (when
    /// every crash has one).
    pub slice_in_all: Option<FileLineSet>,
}

/// `a ∩= b`, files left empty dropped.
pub fn intersect(a: &mut FileLineSet, b: &FileLineSet) {
    a.retain(|file, lines| {
        match b.get(file) {
            Some(other) => lines.retain(|l| other.contains(l)),
            None => lines.clear(),
        }
        !lines.is_empty()
    });
}

/// Do two sets of frame evidence contradict: a line surely ran in one and surely did not in
/// the other, in the same frame position? ("May" never contradicts anything.)
pub fn contradicts(a: &[FrameEvidence], b: &[FrameEvidence]) -> bool {
    a.iter()
        .zip(b)
        .any(|(x, y)| !x.must.is_disjoint(&y.never) || !x.never.is_disjoint(&y.must))
}

/// The stack-signature group of a crash: crashes of different executables, signals or
/// signature frames never share a bucket.
pub fn group_key(c: &CrashRecord) -> (&std::path::Path, &str, &[String]) {
    (&c.exe, &c.signal, &c.frames)
}

/// Groups crashes by [`group_key`], then splits each group so that no two crashes of a part
/// contradict each other's path evidence in their innermost `refine_frames` frames (first
/// fit, oldest first: deterministic). Buckets are ordered by size, then signature.
pub fn bucketize(crashes: &[CrashRecord], refine_frames: usize) -> Vec<Bucket> {
    let mut groups: BTreeMap<_, Vec<usize>> = BTreeMap::new();
    for (i, c) in crashes.iter().enumerate() {
        groups.entry(group_key(c)).or_default().push(i);
    }
    let mut buckets = Vec::new();
    for ((_, signal, frames), mut members) in groups {
        members.sort_by(|&a, &b| {
            (crashes[a].time, &crashes[a].core).cmp(&(crashes[b].time, &crashes[b].core))
        });
        // Each part keeps the union of its members' evidence per frame: a newcomer must
        // contradict none of them.
        let mut parts: Vec<(Vec<usize>, Vec<FrameEvidence>)> = Vec::new();
        for i in members {
            let ev = &crashes[i].local[..crashes[i].local.len().min(refine_frames)];
            match parts.iter().position(|(_, pe)| !contradicts(ev, pe)) {
                Some(p) => {
                    let (m, pe) = &mut parts[p];
                    m.push(i);
                    for (k, e) in ev.iter().enumerate() {
                        if k < pe.len() {
                            pe[k].must.extend(e.must.iter().cloned());
                            pe[k].never.extend(e.never.iter().cloned());
                        } else {
                            pe.push(e.clone());
                        }
                    }
                }
                None => parts.push((vec![i], ev.to_vec())),
            }
        }
        let n_parts = parts.len();
        let base = format!("{signal} in {}", frames.join(" | "));
        for (k, (members, _)) in parts.into_iter().enumerate() {
            let mut must = crashes[members[0]].must.clone();
            let mut never = crashes[members[0]].never.clone();
            let mut slice = crashes[members[0]].slice.clone();
            for &i in &members[1..] {
                intersect(&mut must, &crashes[i].must);
                intersect(&mut never, &crashes[i].never);
                slice = slice.zip(crashes[i].slice.as_ref()).map(|(mut a, b)| {
                    intersect(&mut a, b);
                    a
                });
            }
            buckets.push(Bucket {
                signature: if n_parts > 1 {
                    format!("{base} [path {}/{n_parts}]", k + 1)
                } else {
                    base.clone()
                },
                signal: signal.to_string(),
                frames: frames.to_vec(),
                crashes: members,
                must_in_all: must,
                never_in_any: never,
                slice_in_all: slice,
            });
        }
    }
    buckets.sort_by(|a, b| {
        b.crashes
            .len()
            .cmp(&a.crashes.len())
            .then_with(|| a.signature.cmp(&b.signature))
    });
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(must: &[u32], never: &[u32]) -> Vec<FrameEvidence> {
        let f = |ls: &[u32]| ls.iter().map(|&l| ("a.c".to_string(), l)).collect();
        vec![FrameEvidence {
            must: f(must),
            never: f(never),
        }]
    }

    #[test]
    fn contradiction_is_must_against_never_in_the_same_frame() {
        assert!(contradicts(&ev(&[1, 2], &[5]), &ev(&[5], &[])));
        assert!(contradicts(&ev(&[1], &[7]), &ev(&[2, 7], &[])));
        assert!(!contradicts(&ev(&[1, 2], &[5]), &ev(&[1], &[6])));
        // May in one, must in the other: no evidence of a different path.
        assert!(!contradicts(&ev(&[1], &[]), &ev(&[], &[])));
    }

    #[test]
    fn intersection_drops_files_left_empty() {
        let mut a: FileLineSet =
            [("a.c".into(), [1, 2, 3].into()), ("b.c".into(), [4].into())].into();
        let b: FileLineSet = [("a.c".into(), [2, 3, 9].into()), ("b.c".into(), [5].into())].into();
        intersect(&mut a, &b);
        assert_eq!(a, [("a.c".to_string(), BTreeSet::from([2, 3]))].into());
    }

    fn crash(core: &str, time: u64, local: Vec<FrameEvidence>, must: &[u32]) -> CrashRecord {
        CrashRecord {
            core: core.into(),
            exe: "/bin/app".into(),
            build_id: None,
            time: Some(time),
            signal: "SIGSEGV".into(),
            frames: vec!["f".into(), "main".into()],
            site: Some("a.c:3".into()),
            stack_lines: vec![],
            local,
            must: [("a.c".to_string(), must.iter().copied().collect())].into(),
            never: FileLineSet::new(),
            analysed_lines: true,
            slice: Some([("a.c".to_string(), must.iter().copied().collect())].into()),
        }
    }

    #[test]
    fn contradicting_paths_split_a_signature_oldest_first() {
        let cs = vec![
            crash("c2", 2, ev(&[4], &[5]), &[1, 4]),
            crash("c1", 1, ev(&[5], &[4]), &[1, 5]),
            crash("c3", 3, ev(&[5], &[]), &[1, 5, 6]),
        ];
        let b = bucketize(&cs, 1);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].signature, "SIGSEGV in f | main [path 1/2]");
        assert_eq!(b[0].crashes, vec![1, 2]);
        assert_eq!(b[0].must_in_all["a.c"], BTreeSet::from([1, 5]));
        assert_eq!(
            b[0].slice_in_all.as_ref().unwrap()["a.c"],
            BTreeSet::from([1, 5])
        );
        assert_eq!(b[1].crashes, vec![0]);
        // Without refinement: one bucket.
        assert_eq!(bucketize(&cs, 0).len(), 1);
    }
}
