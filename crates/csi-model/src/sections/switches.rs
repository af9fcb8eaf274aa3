//! The tracing switches of a linked file built with `csi-cc --csi-scheme=custom` (the
//! dissertation's ch. 3, customizable tracing), as its bytes hold them: one byte per function,
//! `__csi_sw_<unit>_<fn>` in the coverage section, named in the function's `.debug_CSI_CFG`
//! record (`switch`). At 1 every call runs the instrumented body, at 0 an uninstrumented
//! replica. A function whose record says `entry_patch` is entered from other units at its
//! replica's first instruction, a 5-byte NOP; switched on, that holds a `jmp` to the body.
//! `csi tracing` sets both in place, and csi-cc's link step writes the `jmp`s of the switches
//! it was built with (all on); one reading serves both.

use object::{Object, ObjectSection, ObjectSymbol};

use super::cfg::{parse_cfg_all, CfgFunction};
use super::{BODY_SUFFIX, REPLICA_SUFFIX, SECTION_CFG};

/// One function's switch in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracingSwitch {
    /// The function (its record's name; the linkage name in C++).
    pub function: String,
    /// The switch's symbol.
    pub symbol: String,
    /// Where its byte is in the file.
    pub file_offset: u64,
    pub on: bool,
    /// Where the function's entry is patched with the switch (`entry_patch` records).
    pub entry: Option<EntryPatch>,
}

/// A switchable function's patched entry: the 5 bytes at the start of its replica (after an
/// `endbr64`) that are a NOP while it is switched off and a `jmp` to its body while on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPatch {
    /// Where the 5 bytes are in the file.
    pub file_offset: u64,
    /// `jmp <name>.__csi_on` from there.
    pub jump: [u8; 5],
    /// The file's bytes there are that `jmp` now (else csi-cc's NOP).
    pub jumps: bool,
}

/// The NOP csi-cc's entries hold while switched off (LLVM's 5-byte `nopl 8(%rax,%rax,1)`);
/// any `nopl disp8(%rax,%rax,1)` reads as one.
const ENTRY_NOP: [u8; 5] = [0x0F, 0x1F, 0x44, 0x00, 0x08];
const ENDBR64: [u8; 4] = [0xF3, 0x0F, 0x1E, 0xFA];

impl EntryPatch {
    /// The bytes for a switch set `on`.
    pub fn bytes(&self, on: bool) -> [u8; 5] {
        if on {
            self.jump
        } else {
            ENTRY_NOP
        }
    }
}

/// Why a file's switches cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("not an ELF file")]
    NotElf,
    #[error("{0}")]
    Bad(String),
    /// A record says `entry_patch`, but its entry is not where and what csi-cc leaves.
    #[error("{0}")]
    Entry(String),
}

/// The switches of the executable or shared library whose bytes are `bytes` (`path` for
/// messages), by function name.
pub fn tracing_switches(bytes: &[u8], path: &str) -> Result<Vec<TracingSwitch>, SwitchError> {
    let file = SwitchFile::new(bytes, bytes)?;
    // No switch symbol in a symbol table: no switch to find (csi-cc's link step asks this of
    // every file it links) — the records are read only when they may name one.
    if file.symbols.is_empty() && file.elf.symbols().next().is_some() {
        return Ok(Vec::new());
    }
    let cfg = file
        .elf
        .section_by_name(SECTION_CFG)
        .and_then(|s| s.uncompressed_data().ok())
        .ok_or_else(|| {
            SwitchError::Bad(
                "no CSI metadata (.debug_CSI_CFG): not built by csi-cc, or stripped".into(),
            )
        })?;
    let (funcs, _) = parse_cfg_all(&cfg, path).map_err(|e| SwitchError::Bad(e.to_string()))?;
    let mut out = Vec::new();
    for rec in &funcs {
        out.extend(file.switch(rec)?);
    }
    if out.is_empty()
        && funcs.iter().any(|r| r.switch.is_some())
        && file.elf.symbols().next().is_none()
    {
        return Err(SwitchError::Bad(
            "its functions have tracing switches, but the symbol table that locates them was stripped"
                .into(),
        ));
    }
    out.sort_by(|a, b| a.function.cmp(&b.function).then(a.symbol.cmp(&b.symbol)));
    out.dedup_by(|a, b| a.symbol == b.symbol);
    Ok(out)
}

/// Writes `switches` into the file at `path`, in place: each byte, and each patched entry as
/// its byte says (a `jmp` to the body when on, the NOP when off).
pub fn write_switches(path: &std::path::Path, switches: &[TracingSwitch]) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    for s in switches {
        file.seek(SeekFrom::Start(s.file_offset))?;
        file.write_all(&[u8::from(s.on)])?;
        if let Some(e) = &s.entry {
            file.seek(SeekFrom::Start(e.file_offset))?;
            file.write_all(&e.bytes(s.on))?;
        }
    }
    file.sync_all()
}

/// A file's switches, record by record: the symbol table of `meta` (the image itself, or its
/// separate debug file) and the bytes of `image`, whose file offsets they are. The reader,
/// which has the records already, asks it of the ones it needs.
pub struct SwitchFile<'a> {
    elf: object::File<'a>,
    img: object::File<'a>,
    image: &'a [u8],
    /// The switches' symbols: address and symbol-table index.
    symbols: std::collections::HashMap<&'a str, (u64, usize)>,
    pieces: Pieces,
}

impl<'a> SwitchFile<'a> {
    pub fn new(meta: &'a [u8], image: &'a [u8]) -> Result<SwitchFile<'a>, SwitchError> {
        let elf = object::File::parse(meta).map_err(|_| SwitchError::NotElf)?;
        let img = object::File::parse(image).map_err(|_| SwitchError::NotElf)?;
        let symbols = elf
            .symbols()
            .filter_map(|s| Some((s.name().ok()?, (s.address(), s.index().0))))
            .filter(|(n, _)| n.starts_with("__csi_sw_"))
            .collect();
        let pieces = Pieces::of(&elf);
        Ok(SwitchFile {
            elf,
            img,
            image,
            symbols,
            pieces,
        })
    }

    /// The switch of the function of record `rec`, if it has one in the file. (None: no
    /// switch, or no symbol for it — the optimizer removed the function and every inlined
    /// copy of it, nothing referencing the switch, or the symbol table was stripped.)
    pub fn switch(&self, rec: &CfgFunction) -> Result<Option<TracingSwitch>, SwitchError> {
        let Some(symbol) = &rec.switch else {
            return Ok(None);
        };
        let Some(&(address, index)) = self.symbols.get(symbol.as_str()) else {
            return Ok(None);
        };
        let bad = SwitchError::Bad;
        let offset = file_offset(&self.img, address, 1, object::SectionKind::Data)
            .ok_or_else(|| bad(format!("the switch `{symbol}` has no bytes in the file")))?;
        let on = self
            .image
            .get(offset as usize)
            .ok_or_else(|| bad(format!("the switch `{symbol}` is past the end of the file")))?;
        let entry = if rec.entry_patch {
            Some(
                entry_patch(&self.img, self.image, &self.pieces, index, &rec.name)
                    .map_err(SwitchError::Entry)?,
            )
        } else {
            None
        };
        Ok(Some(TracingSwitch {
            function: rec.name.clone(),
            symbol: symbol.clone(),
            file_offset: offset,
            on: *on != 0,
            entry,
        }))
    }
}

/// Where the `len` bytes at link-time `address` are in the file of `elf`: in a section of
/// `kind` (`Data`: any loaded section with contents) that the file holds.
fn file_offset(
    elf: &object::File<'_>,
    address: u64,
    len: u64,
    kind: object::SectionKind,
) -> Option<u64> {
    elf.sections().find_map(|sec| {
        let fits = match kind {
            object::SectionKind::Text => sec.kind() == object::SectionKind::Text,
            _ => sec.address() != 0 && sec.kind() != object::SectionKind::UninitializedData,
        };
        if !fits {
            return None;
        }
        let (start, size) = sec.file_range()?;
        let at = address.checked_sub(sec.address())?;
        (at + len <= size).then_some(start + at)
    })
}

/// The replicas' and bodies' symbols (`<name>.__csi_off`, `<name>.__csi_on`), by the index
/// of the `STT_FILE` symbol before them (the object file whose local symbols follow it, as
/// linkers write `.symtab`) and by name alone: a static function's pieces are told from
/// another unit's of the same name by the file of its switch.
struct Pieces {
    by_file: std::collections::HashMap<(usize, String), u64>,
    by_name: std::collections::HashMap<String, Vec<u64>>,
    file_of: std::collections::HashMap<usize, usize>,
}

impl Pieces {
    fn of(elf: &object::File<'_>) -> Pieces {
        let mut p = Pieces {
            by_file: Default::default(),
            by_name: Default::default(),
            file_of: Default::default(),
        };
        let mut file = 0;
        for s in elf.symbols() {
            if s.kind() == object::SymbolKind::File {
                file = s.index().0;
                continue;
            }
            p.file_of.insert(s.index().0, file);
            let Ok(n) = s.name() else { continue };
            if s.kind() == object::SymbolKind::Text
                && (n.ends_with(REPLICA_SUFFIX) || n.ends_with(BODY_SUFFIX))
            {
                p.by_file.insert((file, n.to_string()), s.address());
                p.by_name
                    .entry(n.to_string())
                    .or_default()
                    .push(s.address());
            }
        }
        p
    }

    /// The address of `name`'s symbol in the file of the symbol of index `near`, else the
    /// only one.
    fn find(&self, near: usize, name: &str) -> Option<u64> {
        let file = self.file_of.get(&near)?;
        self.by_file
            .get(&(*file, name.to_string()))
            .copied()
            .or_else(|| match self.by_name.get(name).map(Vec::as_slice) {
                Some([one]) => Some(*one),
                _ => None,
            })
    }
}

/// Where `function`'s entry is patched (its record says `entry_patch`; `switch` is its
/// switch's symbol's index) in the image `elf` (its bytes `bytes`): the replica's first 5 bytes after
/// an `endbr64`, which must be csi-cc's NOP or the `jmp` to the body.
fn entry_patch(
    elf: &object::File<'_>,
    bytes: &[u8],
    pieces: &Pieces,
    switch: usize,
    function: &str,
) -> Result<EntryPatch, String> {
    let find = |suffix: &str| {
        pieces
            .find(switch, &format!("{function}{suffix}"))
            .ok_or_else(|| format!("`{function}` has no symbol `{function}{suffix}` to patch"))
    };
    let (replica, body) = (find(REPLICA_SUFFIX)?, find(BODY_SUFFIX)?);
    let file_offset_of = |address: u64| file_offset(elf, address, 5, object::SectionKind::Text);
    let unexpected = || format!("`{function}`'s entry is not csi-cc's patchable entry");
    let mut site = replica;
    let mut at = file_offset_of(site).ok_or_else(unexpected)?;
    if bytes.get(at as usize..at as usize + 4) == Some(&ENDBR64[..]) {
        site += 4;
        at += 4;
    }
    let rel = i32::try_from(body as i64 - (site as i64 + 5)).map_err(|_| unexpected())?;
    let mut jump = [0xE9, 0, 0, 0, 0];
    jump[1..].copy_from_slice(&rel.to_le_bytes());
    let now = bytes
        .get(at as usize..at as usize + 5)
        .ok_or_else(unexpected)?;
    if now != jump && now[..4] != ENTRY_NOP[..4] {
        return Err(unexpected());
    }
    Ok(EntryPatch {
        file_offset: at,
        jump,
        jumps: now == jump,
    })
}
