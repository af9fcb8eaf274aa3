//! `csi tracing`'s reading and setting of the tracing switches of a binary built with
//! `csi-cc --csi-scheme=custom` (the dissertation's ch. 3, customizable tracing; what they
//! are and how a file holds them: `csi_model::sections::switches`). It sets them in the file,
//! in place; the reader (`Extract::tracing_switches`) reads them from the core, so a crash is
//! read with the switches the process ran with.

use std::path::Path;

use crate::DumpError;
use csi_model::sections::switches::SwitchError;
pub use csi_model::sections::switches::{EntryPatch, TracingSwitch};

/// The switches of the executable or shared library at `path`, by function name.
pub fn tracing_switches(path: &Path) -> Result<Vec<TracingSwitch>, DumpError> {
    let bytes = std::fs::read(path).map_err(|e| DumpError::io(path, e))?;
    csi_model::sections::switches::tracing_switches(&bytes, &path.display().to_string()).map_err(
        |e| match e {
            SwitchError::NotElf => DumpError::NotElf {
                path: path.to_path_buf(),
            },
            SwitchError::Bad(what) | SwitchError::Entry(what) => DumpError::BadMetadata {
                path: path.to_path_buf(),
                what,
            },
        },
    )
}

/// Sets the switches of the functions matching each pattern (`*` and `?` wildcards, against
/// the function name) in the file at `path`, in order (a later pattern wins), and returns the
/// switches as they are now. A pattern that matches no switch is an error; nothing is written
/// then.
pub fn set_tracing_switches(
    path: &Path,
    settings: &[(String, bool)],
) -> Result<Vec<TracingSwitch>, DumpError> {
    let mut switches = tracing_switches(path)?;
    for (pattern, on) in settings {
        let mut matched = false;
        for s in switches
            .iter_mut()
            .filter(|s| glob_match(pattern, &s.function))
        {
            s.on = *on;
            matched = true;
        }
        if !matched {
            return Err(DumpError::BadMetadata {
                path: path.to_path_buf(),
                what: format!("no switchable function matches `{pattern}`"),
            });
        }
    }
    csi_model::sections::switches::write_switches(path, &switches)
        .map_err(|e| DumpError::io(path, e))?;
    Ok(switches)
}

/// The settings that trace exactly the switchable functions with an activation on the stacks
/// of `crashes` (every thread's report frames, inlined ones included; crashes of this one
/// binary): every switch off, then each of theirs on — the dissertation's deployment loop
/// (ch. 3), tracing where the crashes seen so far were.
pub fn settings_for_crashes(crashes: &[crate::Crash]) -> Result<Vec<(String, bool)>, DumpError> {
    let mut out = vec![("*".to_string(), false)];
    let Some(first) = crashes.first() else {
        return Ok(out);
    };
    let switchable: std::collections::BTreeSet<String> = tracing_switches(&first.exe)?
        .into_iter()
        .map(|s| s.function)
        .collect();
    let on_stack: std::collections::BTreeSet<String> = crashes
        .iter()
        .flat_map(|crash| {
            crash
                .report
                .threads
                .iter()
                .flat_map(|t| &t.frames)
                .filter_map(|f| f.function)
                .map(|f| crash.graph.function(f).name.clone())
        })
        .filter(|n| switchable.contains(n))
        .collect();
    out.extend(on_stack.into_iter().map(|n| (n, true)));
    Ok(out)
}

/// `pattern` matches all of `text`; `*` matches any run of characters, `?` any one.
fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Positions of the text each pattern prefix can end at.
    let mut can = vec![false; t.len() + 1];
    can[0] = true;
    for &c in &p {
        let mut next = vec![false; t.len() + 1];
        for i in 0..=t.len() {
            if !can[i] {
                continue;
            }
            match c {
                '*' => {
                    for n in next.iter_mut().skip(i) {
                        *n = true;
                    }
                }
                '?' if i < t.len() => next[i + 1] = true,
                c if i < t.len() && t[i] == c => next[i + 1] = true,
                _ => {}
            }
        }
        can = next;
    }
    can[t.len()]
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn wildcards() {
        assert!(glob_match("parse*", "parse_digit"));
        assert!(glob_match("*", ""));
        assert!(glob_match("p?rse", "parse"));
        assert!(!glob_match("parse", "parse_digit"));
        assert!(glob_match("*digit", "parse_digit"));
        assert!(!glob_match("a*b", "acbd"));
    }
}
