//! `.debug_PT`: per function `#`, the name, block lines, `$`, then edges (DESIGN §4).
//!
//! ```text
//! #
//! main
//! 3|EXIT
//! 2|ENTRY|9|9|9
//! 6|-1|20|21
//! 10|NULL
//! $
//! 2->4|0$0
//! 9~>4|3$3
//! ```

use super::{err, lines, num};
use crate::ballarus::{PathEdge, PathGraph};
use crate::InputError;
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtBlockKind {
    Entry,
    Exit,
    Normal,
}

/// One item of a block's line list: a source line, or the `-1` marker where the completed path
/// id is written into the ring buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtItem {
    Line(u32),
    PathEnd,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtBlock {
    pub id: u32,
    pub kind: PtBlockKind,
    pub items: Vec<PtItem>,
    /// Written as `NULL`: the block has no instruction with a line.
    pub null: bool,
}

impl PtBlock {
    pub fn lines(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.iter().filter_map(|i| match i {
            PtItem::Line(l) => Some(*l),
            PtItem::PathEnd => None,
        })
    }

    /// True when the block stores a completed path (`-1` in its line list).
    pub fn ends_path(&self) -> bool {
        self.items.contains(&PtItem::PathEnd)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtFunction {
    pub name: String,
    pub blocks: Vec<PtBlock>,
    pub edges: Vec<PathEdge>,
}

impl PtFunction {
    pub fn entry(&self) -> Option<u32> {
        self.blocks
            .iter()
            .find(|b| b.kind == PtBlockKind::Entry)
            .map(|b| b.id)
    }

    pub fn exit(&self) -> Option<u32> {
        self.blocks
            .iter()
            .find(|b| b.kind == PtBlockKind::Exit)
            .map(|b| b.id)
    }

    pub fn block(&self, id: u32) -> Option<&PtBlock> {
        self.blocks.iter().find(|b| b.id == id)
    }

    /// The Ball–Larus graph for decoding this function's traces.
    pub fn path_graph(&self) -> Option<PathGraph> {
        Some(PathGraph {
            entry: self.entry()?,
            exit: self.exit()?,
            edges: self.edges.clone(),
        })
    }

    /// Writes the record in csi-cc v1.4.0's format (appends to `out`).
    pub fn write(&self, out: &mut String) {
        out.push_str("#\n");
        out.push_str(&self.name);
        out.push('\n');
        for b in &self.blocks {
            let _ = write!(out, "{}", b.id);
            match b.kind {
                PtBlockKind::Exit => {
                    out.push_str("|EXIT\n");
                    continue;
                }
                PtBlockKind::Entry => out.push_str("|ENTRY"),
                PtBlockKind::Normal => {}
            }
            if b.items.is_empty() {
                out.push_str("|NULL");
            }
            for i in &b.items {
                match i {
                    PtItem::Line(l) => {
                        let _ = write!(out, "|{l}");
                    }
                    PtItem::PathEnd => out.push_str("|-1"),
                }
            }
            out.push('\n');
        }
        out.push_str("$\n");
        for e in &self.edges {
            let arrow = if e.back { "~>" } else { "->" };
            let _ = writeln!(
                out,
                "{}{arrow}{}|{}${}",
                e.from, e.to, e.increment, e.weight
            );
        }
    }
}

/// Parses a `.debug_PT` section (possibly the concatenation of many objects' sections).
pub fn parse_pt(bytes: &[u8], file: &str) -> Result<Vec<PtFunction>, InputError> {
    #[derive(PartialEq)]
    enum St {
        Start,
        Name,
        Blocks,
        Edges,
    }
    let mut out: Vec<PtFunction> = Vec::new();
    let mut st = St::Start;
    let text = super::frame::decode(bytes, file)?;
    for (ln, line) in lines(&text, file)? {
        if line.is_empty() {
            continue;
        }
        if line == "#" {
            if st == St::Name || st == St::Blocks {
                return Err(err(file, ln, "`#` before the previous function's `$`"));
            }
            st = St::Name;
            continue;
        }
        match st {
            St::Start => return Err(err(file, ln, "expected `#` to start a function")),
            St::Name => {
                out.push(PtFunction {
                    name: line.to_string(),
                    blocks: Vec::new(),
                    edges: Vec::new(),
                });
                st = St::Blocks;
            }
            St::Blocks => {
                let f = out.last_mut().expect("a function was started");
                if line == "$" {
                    if f.entry().is_none() {
                        return Err(err(
                            file,
                            ln,
                            format!("function `{}` has no ENTRY block", f.name),
                        ));
                    }
                    if f.exit().is_none() {
                        return Err(err(
                            file,
                            ln,
                            format!("function `{}` has no EXIT block", f.name),
                        ));
                    }
                    st = St::Edges;
                    continue;
                }
                let mut parts = line.split('|');
                let id: u32 = num(parts.next().unwrap_or(""), "block id", file, ln)?;
                if f.block(id).is_some() {
                    return Err(err(file, ln, format!("duplicate block id {id}")));
                }
                let mut kind = PtBlockKind::Normal;
                let mut items = Vec::new();
                let mut null = false;
                for (k, p) in parts.enumerate() {
                    match p {
                        "ENTRY" if k == 0 => kind = PtBlockKind::Entry,
                        "EXIT" if k == 0 => kind = PtBlockKind::Exit,
                        "NULL" => null = true,
                        "-1" => items.push(PtItem::PathEnd),
                        _ => items.push(PtItem::Line(num(p, "line number", file, ln)?)),
                    }
                }
                if kind == PtBlockKind::Exit && !items.is_empty() {
                    return Err(err(file, ln, "the EXIT block cannot have lines"));
                }
                if kind != PtBlockKind::Normal && f.blocks.iter().any(|b| b.kind == kind) {
                    return Err(err(file, ln, format!("second {kind:?} block")));
                }
                f.blocks.push(PtBlock {
                    id,
                    kind,
                    items,
                    null,
                });
            }
            St::Edges => {
                let f = out.last_mut().expect("a function was started");
                let (arrow, back) = if line.contains("~>") {
                    ("~>", true)
                } else if line.contains("->") {
                    ("->", false)
                } else {
                    return Err(err(
                        file,
                        ln,
                        format!("expected an edge `a->b|inc$weight`, found `{line}`"),
                    ));
                };
                let (ends, nums) = line
                    .split_once('|')
                    .ok_or_else(|| err(file, ln, "edge without `|increment$weight`"))?;
                let (a, b) = ends
                    .split_once(arrow)
                    .ok_or_else(|| err(file, ln, "edge without two block ids"))?;
                let (inc, w) = nums
                    .split_once('$')
                    .ok_or_else(|| err(file, ln, "edge without `$weight`"))?;
                let from: u32 = num(a, "edge source", file, ln)?;
                let to: u32 = num(b, "edge target", file, ln)?;
                for id in [from, to] {
                    if f.block(id).is_none() {
                        return Err(err(file, ln, format!("edge mentions unknown block {id}")));
                    }
                }
                f.edges.push(PathEdge {
                    from,
                    to,
                    back,
                    increment: num(inc, "edge increment", file, ln)?,
                    weight: num(w, "edge weight", file, ln)?,
                });
            }
        }
    }
    match st {
        St::Name | St::Blocks => Err(InputError::new(
            file,
            "end of section",
            "the last function is truncated (no `$`)",
        )),
        _ => Ok(out),
    }
}
