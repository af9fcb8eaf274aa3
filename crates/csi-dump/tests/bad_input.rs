//! Bad input gives one clear error (or a notice and a partial view), never a panic: a core of
//! another program, truncated or corrupted cores, an executable where the core should be (and
//! the reverse), stripped executables, executables without CSI metadata.

mod common;

use std::path::{Path, PathBuf};

use common::{fixture_crashes, have, FixtureCrash};
use csi_dump::{Crash, DumpError};

fn open(exe: &Path, core: &Path) -> Result<Crash, DumpError> {
    Crash::open(exe, core, &Default::default())
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("csi-dump-tests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn first() -> Option<FixtureCrash> {
    fixture_crashes().into_iter().next()
}

#[test]
fn core_of_another_program_is_refused() {
    let all = fixture_crashes();
    let Some(b) = all
        .iter()
        .find(|b| std::fs::read(&b.exe).ok() != std::fs::read(&all[0].exe).ok())
    else {
        eprintln!("need two different fixture programs; skipping");
        return;
    };
    let a = &all[0];
    let e = open(&a.exe, &b.core)
        .err()
        .expect("mismatch must be refused");
    assert!(matches!(e, DumpError::Mismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("was not produced by") && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn executable_given_as_core_and_core_as_executable() {
    let Some(fx) = first() else { return };
    let e = open(&fx.exe, &fx.exe)
        .err()
        .expect("an executable is not a core");
    assert!(matches!(e, DumpError::NotCore { .. }), "{e}");
    let e = open(&fx.core, &fx.core)
        .err()
        .expect("a core is not an executable");
    assert!(matches!(e, DumpError::CoreGivenAsExe { .. }), "{e}");
    let junk = scratch("junk");
    std::fs::write(&junk, b"this is not an ELF file at all").unwrap();
    let e = open(&fx.exe, &junk).err().expect("junk is not a core");
    assert!(matches!(e, DumpError::NotElf { .. }), "{e}");
    let e = open(&fx.exe, Path::new("/nonexistent/core")).err().unwrap();
    assert!(matches!(e, DumpError::Io { .. }), "{e}");
}

#[test]
fn truncated_cores_load_partially_or_fail_cleanly() {
    let Some(fx) = first() else { return };
    let bytes = std::fs::read(&fx.core).unwrap();
    let whole = open(&fx.exe, &fx.core).unwrap();
    let mut partial_loads = 0;
    for cut in [
        64,
        1000,
        4096,
        bytes.len() / 4,
        bytes.len() / 2,
        bytes.len() - 4096,
        bytes.len() - 1,
    ] {
        let p = scratch(&format!("core-cut-{cut}"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        match open(&fx.exe, &p) {
            Ok(c) => {
                partial_loads += 1;
                assert!(
                    c.notices.iter().any(|n| n.contains("truncated")),
                    "cut at {cut}: no notice in {:?}",
                    c.notices
                );
                assert_eq!(
                    c.threads.len(),
                    whole.threads.len(),
                    "thread list comes from the notes"
                );
            }
            Err(e) => {
                assert!(
                    matches!(e, DumpError::Corrupt { .. } | DumpError::NotElf { .. }),
                    "cut at {cut}: {e}"
                );
                assert!(!e.to_string().contains('\n'));
            }
        }
    }
    assert!(
        partial_loads > 0,
        "a core cut in its memory part still loads"
    );
}

#[test]
fn corrupted_cores_never_panic() {
    let Some(fx) = first() else { return };
    let exe = std::fs::read(&fx.exe).unwrap();
    let core = std::fs::read(&fx.core).unwrap();
    // Deterministic byte flips over the headers, notes and memory.
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let mut c = core.clone();
        let hot = if round % 2 == 0 {
            8192.min(c.len())
        } else {
            c.len()
        };
        for _ in 0..(1 + next() % 8) {
            let i = (next() as usize) % hot;
            c[i] = next() as u8;
        }
        let _ = csi_dump::load_bytes(exe.clone(), c);
    }
}

#[test]
fn stripped_executable_still_shows_the_stack() {
    let Some(fx) = first() else { return };
    if !have("objcopy") {
        common::cannot_run("objcopy is not installed");
        return;
    }
    let stripped = scratch("stripped");
    let ok = std::process::Command::new("objcopy")
        .arg("--strip-all")
        .arg(&fx.exe)
        .arg(&stripped)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let c =
        open(&stripped, &fx.core).expect("a stripped build of the same program matches its core");
    assert!(
        c.notices.iter().any(|n| n.contains("no debug info")),
        "{:?}",
        c.notices
    );
    assert_eq!(c.metadata, csi_dump::Metadata::None);
    assert!(!c.threads[0].frames.is_empty());
}

#[test]
fn executable_without_csi_metadata_falls_back_to_the_stack() {
    let Some(fx) = first() else { return };
    if !have("objcopy") {
        common::cannot_run("objcopy is not installed");
        return;
    }
    let plain = scratch("no-metadata");
    let mut cmd = std::process::Command::new("objcopy");
    for s in [
        ".debug_CSI_CFG",
        ".debug_PT",
        ".debug_CC",
        ".debug_BBC",
        ".debug_FC",
    ] {
        cmd.arg(format!("--remove-section={s}"));
    }
    assert!(cmd.arg(&fx.exe).arg(&plain).status().unwrap().success());
    let c = open(&plain, &fx.core).unwrap();
    assert_eq!(c.metadata, csi_dump::Metadata::None);
    assert!(
        c.notices.iter().any(|n| n.contains("no CSI metadata")),
        "{:?}",
        c.notices
    );
    // Frames still have functions, lines and variables from DWARF.
    let f0 = c.threads[0]
        .frames
        .iter()
        .find(|f| f.location.is_some())
        .expect("a frame with a line");
    assert!(!f0.variables.is_empty());
}

/// `.debug_CSI_CFG` as csi-cc writes it now — zstd-compressed pieces — gives the same crash as
/// the text the checked-in fixtures hold; a damaged piece is one clear `BadMetadata` error.
#[test]
fn compressed_metadata_reads_as_the_text_and_a_damaged_frame_is_an_error() {
    use csi_model::sections::frame::encode;
    let Some(fx) = first() else { return };
    if !have("objcopy") {
        common::cannot_run("objcopy is not installed");
        return;
    }
    let text = scratch("cfg-text");
    assert!(std::process::Command::new("objcopy")
        .arg(format!("--dump-section=.debug_CSI_CFG={}", text.display()))
        .arg(&fx.exe)
        .arg(scratch("objcopy.out"))
        .status()
        .unwrap()
        .success());
    let text = std::fs::read(&text).unwrap();
    // Two pieces, as from two objects, with alignment padding between them.
    let cut = text
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| i + 1);
    let mut framed = encode(&text[..cut], 3).unwrap();
    framed.extend_from_slice(b"\0\0\0\0");
    framed.extend(encode(&text[cut..], 3).unwrap());
    let with = |name: &str, section: &[u8]| {
        let bytes = scratch(&format!("{name}.cfg"));
        std::fs::write(&bytes, section).unwrap();
        let exe = scratch(name);
        assert!(std::process::Command::new("objcopy")
            .arg(format!(
                "--update-section=.debug_CSI_CFG={}",
                bytes.display()
            ))
            .arg(&fx.exe)
            .arg(&exe)
            .status()
            .unwrap()
            .success());
        open(&exe, &fx.core)
    };
    let want = open(&fx.exe, &fx.core).unwrap();
    let got = with("compressed", &framed).unwrap();
    assert_eq!(got.metadata, want.metadata);
    assert_eq!(got.report, want.report);
    assert_eq!(got.graph.functions.len(), want.graph.functions.len());
    // Frames, paths and variables alike; only the executable's file name differs.
    let frames = |c: &csi_dump::Crash| {
        format!("{:?}", c.threads).replace(&c.exe.display().to_string(), "EXE")
    };
    assert_eq!(frames(&got), frames(&want));
    // The second frame cut short: its header announces more bytes than the section holds.
    framed.truncate(framed.len() - 3);
    let e = with("damaged", &framed)
        .err()
        .expect("a damaged frame is an error");
    assert!(matches!(e, DumpError::BadMetadata { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("compressed piece at byte"), "{msg}");
}
