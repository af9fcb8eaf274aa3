//! `.debug_CC`, `.debug_BBC` and `.debug_FC` (csi-cc v1.4.0 formats, DESIGN §4).
//!
//! ```text
//! #main|__CC_arr_tests_loop_loop_c_main        .debug_CC
//! 0|CC0|9|rand
//! -1||18|abc                                    (site not instrumented)
//! 0|CC0|18|?                                    (indirect call)
//! #main|__BBC_arr_tests_pi_pi_c_main           .debug_BBC
//! 0|BBC0|11|11|12
//! 4|BBC4|NULL
//! #main|__FC_arr_tests_pi_pi_c_main            .debug_FC
//! ```

use super::{err, lines, num};
use crate::InputError;
use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcSite {
    /// Index into the coverage arrays; negative for call sites that were not instrumented.
    pub index: i64,
    /// `CC<i>`; `None` for uninstrumented sites.
    pub label: Option<String>,
    /// Source line (0 when unknown).
    pub line: u32,
    /// The callee's name; `None` for an indirect call (`?`).
    pub callee: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcFunction {
    pub name: String,
    /// Name of the global coverage array (`__CC_arr_<mash>_<fn>`).
    pub global: String,
    pub sites: Vec<CcSite>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BbcBlock {
    pub index: u32,
    pub label: String,
    pub lines: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BbcFunction {
    pub name: String,
    pub global: String,
    pub blocks: Vec<BbcBlock>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcFunction {
    pub name: String,
    pub global: String,
}

fn header(line: &str, file: &str, ln: usize) -> Result<Option<(String, String)>, InputError> {
    let Some(rest) = line.strip_prefix('#') else {
        return Ok(None);
    };
    let (name, global) = rest
        .split_once('|')
        .ok_or_else(|| err(file, ln, "function header without `|<global array>`"))?;
    if name.is_empty() {
        return Err(err(file, ln, "function header without a name"));
    }
    if global.is_empty() || global.contains('|') {
        return Err(err(file, ln, format!("bad global array name `{global}`")));
    }
    Ok(Some((name.to_string(), global.to_string())))
}

/// Parses `.debug_CC`.
pub fn parse_cc(bytes: &[u8], file: &str) -> Result<Vec<CcFunction>, InputError> {
    let mut out: Vec<CcFunction> = Vec::new();
    let text = super::frame::decode(bytes, file)?;
    for (ln, line) in lines(&text, file)? {
        if line.is_empty() {
            continue;
        }
        if let Some((name, global)) = header(line, file, ln)? {
            out.push(CcFunction {
                name,
                global,
                sites: Vec::new(),
            });
            continue;
        }
        let f = out
            .last_mut()
            .ok_or_else(|| err(file, ln, "call site before any `#function|array` header"))?;
        let parts: Vec<&str> = line.split('|').collect();
        let [idx, label, l, callee] = parts.as_slice() else {
            return Err(err(
                file,
                ln,
                format!("expected `index|CC<index>|line|callee`, found `{line}`"),
            ));
        };
        let index: i64 = num(idx, "call-site index", file, ln)?;
        let label = if index >= 0 {
            if *label != format!("CC{index}") {
                return Err(err(
                    file,
                    ln,
                    format!("label `{label}` does not match index {index}"),
                ));
            }
            Some(label.to_string())
        } else {
            if !label.is_empty() {
                return Err(err(
                    file,
                    ln,
                    "an uninstrumented site (negative index) has a label",
                ));
            }
            None
        };
        let line_no = if l.is_empty() || *l == "NULL" {
            0
        } else {
            num(l, "line number", file, ln)?
        };
        f.sites.push(CcSite {
            index,
            label,
            line: line_no,
            callee: if *callee == "?" {
                None
            } else {
                Some(callee.to_string())
            },
        });
    }
    Ok(out)
}

/// Parses `.debug_BBC`.
pub fn parse_bbc(bytes: &[u8], file: &str) -> Result<Vec<BbcFunction>, InputError> {
    let mut out: Vec<BbcFunction> = Vec::new();
    let text = super::frame::decode(bytes, file)?;
    for (ln, line) in lines(&text, file)? {
        if line.is_empty() {
            continue;
        }
        if let Some((name, global)) = header(line, file, ln)? {
            out.push(BbcFunction {
                name,
                global,
                blocks: Vec::new(),
            });
            continue;
        }
        let f = out
            .last_mut()
            .ok_or_else(|| err(file, ln, "block before any `#function|array` header"))?;
        let mut parts = line.split('|');
        let index: u32 = num(parts.next().unwrap_or(""), "block index", file, ln)?;
        let label = parts.next().unwrap_or("");
        if label != format!("BBC{index}") {
            return Err(err(
                file,
                ln,
                format!("label `{label}` does not match index {index}"),
            ));
        }
        let mut ls = Vec::new();
        for p in parts {
            if p != "NULL" {
                ls.push(num(p, "line number", file, ln)?);
            }
        }
        f.blocks.push(BbcBlock {
            index,
            label: label.to_string(),
            lines: ls,
        });
    }
    Ok(out)
}

/// Parses `.debug_FC`.
pub fn parse_fc(bytes: &[u8], file: &str) -> Result<Vec<FcFunction>, InputError> {
    let mut out = Vec::new();
    let text = super::frame::decode(bytes, file)?;
    for (ln, line) in lines(&text, file)? {
        if line.is_empty() {
            continue;
        }
        match header(line, file, ln)? {
            Some((name, global)) => out.push(FcFunction { name, global }),
            None => {
                return Err(err(
                    file,
                    ln,
                    format!("expected `#function|array`, found `{line}`"),
                ))
            }
        }
    }
    Ok(out)
}

impl CcFunction {
    pub fn write(&self, out: &mut String) {
        let _ = writeln!(out, "#{}|{}", self.name, self.global);
        for s in &self.sites {
            let _ = writeln!(
                out,
                "{}|{}|{}|{}",
                s.index,
                s.label.as_deref().unwrap_or(""),
                s.line,
                s.callee.as_deref().unwrap_or("?")
            );
        }
    }
}

impl BbcFunction {
    pub fn write(&self, out: &mut String) {
        let _ = writeln!(out, "#{}|{}", self.name, self.global);
        for b in &self.blocks {
            let _ = write!(out, "{}|{}", b.index, b.label);
            if b.lines.is_empty() {
                out.push_str("|NULL");
            }
            for l in &b.lines {
                let _ = write!(out, "|{l}");
            }
            out.push('\n');
        }
    }
}

impl FcFunction {
    pub fn write(&self, out: &mut String) {
        let _ = writeln!(out, "#{}|{}", self.name, self.global);
    }
}
