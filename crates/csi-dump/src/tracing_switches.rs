//! The tracing switches of a binary built with `csi-cc --csi-scheme=custom` (the
//! dissertation's ch. 3, customizable tracing): one byte per function, `__csi_sw_<unit>_<fn>`
//! in the coverage section, named in the function's `.debug_CSI_CFG` record (`switch`). At 1
//! every call runs the instrumented body, at 0 an uninstrumented replica. `csi tracing` reads
//! and sets them in the file, in place; the reader (`Extract::tracing_switches`) reads them
//! from the core, so a crash is read with the switches the process ran with.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

use crate::DumpError;
use csi_model::sections::cfg::parse_cfg_all;

/// One function's switch in a binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracingSwitch {
    /// The function (its record's name; the linkage name in C++).
    pub function: String,
    /// The switch's symbol.
    pub symbol: String,
    /// Where its byte is in the file.
    pub file_offset: u64,
    pub on: bool,
}

/// The switches of the executable or shared library at `path`, by function name.
pub fn tracing_switches(path: &Path) -> Result<Vec<TracingSwitch>, DumpError> {
    let bytes = std::fs::read(path).map_err(|e| DumpError::io(path, e))?;
    let elf = object::File::parse(&*bytes).map_err(|_| DumpError::NotElf {
        path: path.to_path_buf(),
    })?;
    let bad = |what: String| DumpError::BadMetadata {
        path: path.to_path_buf(),
        what,
    };
    let cfg = elf
        .section_by_name(".debug_CSI_CFG")
        .and_then(|s| s.uncompressed_data().ok())
        .ok_or_else(|| {
            bad("no CSI metadata (.debug_CSI_CFG): not built by csi-cc, or stripped".into())
        })?;
    let (funcs, _) =
        parse_cfg_all(&cfg, &path.display().to_string()).map_err(|e| bad(e.to_string()))?;
    let symbols: std::collections::HashMap<&str, object::Symbol<'_, '_>> = elf
        .symbols()
        .filter_map(|s| Some((s.name().ok()?, s)))
        .filter(|(n, _)| n.starts_with("__csi_sw_"))
        .collect();
    let mut out = Vec::new();
    for rec in &funcs {
        let Some(symbol) = &rec.switch else { continue };
        // No symbol: the optimizer removed the function and every inlined copy of it (nothing
        // references the switch), or the symbol table was stripped (checked below).
        let Some(sym) = symbols.get(symbol.as_str()) else {
            continue;
        };
        let offset = sym
            .section_index()
            .and_then(|i| elf.section_by_index(i).ok())
            .and_then(|sec| {
                let (start, len) = sec.file_range()?;
                let at = sym.address().checked_sub(sec.address())?;
                (at < len).then_some(start + at)
            })
            .ok_or_else(|| bad(format!("the switch `{symbol}` has no bytes in the file")))?;
        let on = bytes
            .get(offset as usize)
            .ok_or_else(|| bad(format!("the switch `{symbol}` is past the end of the file")))?;
        out.push(TracingSwitch {
            function: rec.name.clone(),
            symbol: symbol.clone(),
            file_offset: offset,
            on: *on != 0,
        });
    }
    if out.is_empty() && funcs.iter().any(|r| r.switch.is_some()) && elf.symbols().next().is_none()
    {
        return Err(bad(
            "its functions have tracing switches, but the symbol table that locates them was stripped"
                .into(),
        ));
    }
    out.sort_by(|a, b| a.function.cmp(&b.function).then(a.symbol.cmp(&b.symbol)));
    out.dedup_by(|a, b| a.symbol == b.symbol);
    Ok(out)
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
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| DumpError::io(path, e))?;
    for s in &switches {
        file.seek(SeekFrom::Start(s.file_offset))
            .and_then(|_| file.write_all(&[u8::from(s.on)]))
            .map_err(|e| DumpError::io(path, e))?;
    }
    file.sync_all().map_err(|e| DumpError::io(path, e))?;
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
