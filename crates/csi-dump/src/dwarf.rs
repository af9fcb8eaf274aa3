//! The executable's DWARF: source positions of program counters (addr2line), the function
//! (subprogram) containing a pc, its parameters and locals with their locations evaluated
//! against a frame's registers and CFA, and their values formatted the way a C programmer
//! reads them (gimli).

use std::collections::HashMap;
use std::sync::Arc;

use gimli::{AttributeValue, EndianArcSlice, LittleEndian, Reader, UnitOffset};
use object::{Object, ObjectSection};

use crate::core::Registers;
use crate::process::Process;

pub type Rd = EndianArcSlice<LittleEndian>;

/// A source position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLoc {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl SourceLoc {
    /// The position addr2line gives, its file name normalized (`csi_model::paths::normalize`:
    /// the graph's names are), when it has a file and a line.
    fn of(l: addr2line::Location<'_>) -> Option<SourceLoc> {
        Some(SourceLoc {
            file: csi_model::paths::normalize(l.file?).into_owned(),
            line: l.line?,
            column: l.column.unwrap_or(0),
        })
    }
}

/// One function (out-of-line or inlined) at a pc, innermost first.
#[derive(Clone, Debug)]
pub struct InlineFrame {
    pub function: Option<String>,
    /// The inlined subprogram's linkage name (mangled in C++), when it has one.
    pub linkage_name: Option<String>,
    pub location: Option<SourceLoc>,
    /// What csi-cc's customizable tracing made of the subprogram ([`variant_of`]).
    pub variant: Variant,
}

/// What csi-cc's customizable tracing (`--csi-scheme=custom`) made of a subprogram, told by
/// the suffix of its DWARF linkage name (`<linkage or name>.<suffix>`; its name is the
/// function's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Variant {
    /// The function as compiled (instrumented, if at all).
    #[default]
    Plain,
    /// `.__csi_off`: the uninstrumented replica; no probe runs in it.
    Replica,
    /// `.__csi_dispatch`: the scope of a call's switch test, around the inlined body or
    /// replica of the function it calls. Alone (code the optimizer merged from both), it is
    /// that function's activation at an unknown position, either body.
    Dispatch,
}

/// A DWARF linkage name without the suffix of its [`Variant`], and the variant.
pub fn variant_of(linkage: Option<String>) -> (Option<String>, Variant) {
    let Some(l) = linkage else {
        return (None, Variant::Plain);
    };
    for (suffix, v) in [
        (csi_model::sections::REPLICA_SUFFIX, Variant::Replica),
        (csi_model::sections::DISPATCH_SUFFIX, Variant::Dispatch),
    ] {
        if let Some(base) = l.strip_suffix(suffix) {
            return (Some(base.to_string()), v);
        }
    }
    (Some(l), Variant::Plain)
}

/// What [`DebugInfo::subprogram_names`] says of a subprogram.
#[derive(Clone, Debug, Default)]
pub struct SubprogramNames {
    pub name: Option<String>,
    pub linkage: Option<String>,
    pub cu: Option<String>,
    pub variant: Variant,
}

/// A subprogram containing some pc.
#[derive(Clone, Copy, Debug)]
pub struct Subprogram {
    pub(crate) unit: usize,
    offset: UnitOffset<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VarKind {
    Parameter,
    Local,
}

/// A variable of a frame with its value read from the core.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Variable {
    pub name: String,
    pub kind: VarKind,
    pub type_name: String,
    /// gdb-style rendering, or `<optimized out>` / `<unavailable: ...>`.
    pub value: String,
    /// Memory address of the variable, when it lives in memory.
    pub address: Option<u64>,
    /// Name of the inlined function the variable belongs to, when not the frame's own.
    pub inlined_in: Option<String>,
    #[serde(skip)]
    pub bytes: Option<Vec<u8>>,
    /// The variable's DWARF type (unit index, DIE), for expanding and evaluating it.
    #[serde(skip)]
    pub(crate) ty: Option<(usize, UnitOffset<usize>)>,
}

/// Registers and CFA of a frame, for location evaluation.
pub struct FrameRegs<'a> {
    pub regs: &'a Registers,
    pub cfa: Option<u64>,
    pub fs_base: u64,
}

pub struct DebugInfo {
    dwarf: Arc<gimli::Dwarf<Rd>>,
    /// addr2line's lazily filled context is not `Sync`; the lock lets crashes of one build
    /// share a `DebugInfo` across threads (`LoadCache`). Uncontended within one crash.
    ctx: std::sync::Mutex<addr2line::Context<Rd>>,
    pub(crate) units: Vec<gimli::Unit<Rd>>,
    /// (low, high, unit, subprogram DIE) of every out-of-line subprogram, sorted by `low`.
    subprograms: Vec<(u64, u64, usize, UnitOffset<usize>)>,
    /// Named types by their C spelling (`struct node`, `size_t`, `unsigned int`): (unit, DIE),
    /// built on first use (casts in expressions).
    type_index: std::sync::OnceLock<HashMap<String, (usize, UnitOffset<usize>)>>,
    /// Global variables by name: (unit, DIE).
    pub(crate) globals: HashMap<String, Vec<(usize, UnitOffset<usize>)>>,
    /// Names of functions with inlined instances somewhere.
    pub inlined: std::collections::HashSet<String>,
    /// Declaration lines of out-of-line functions, by name (several for same-named statics).
    pub decl_lines: HashMap<String, Vec<u32>>,
    /// `(unit, DW_AT_call_file, DW_AT_call_line)` of every inlined call with code.
    inlined_calls: Vec<(usize, u64, u32)>,
}

impl DebugInfo {
    /// `(file name without directories, line)` of every row of every line table: the lines
    /// with machine code. A line the IR gave an instruction that the code generator then
    /// removed (the `br` of `while (1) {`, a branch to the next block) has none.
    pub fn lines_with_code(&self) -> std::collections::HashSet<(String, u32)> {
        let mut out = std::collections::HashSet::new();
        for unit in &self.units {
            let Some(program) = unit.line_program.clone() else {
                continue;
            };
            let mut rows = program.rows();
            while let Ok(Some((header, row))) = rows.next_row() {
                let Some(line) = row.line().map(|l| l.get() as u32) else {
                    continue;
                };
                if row.end_sequence() {
                    continue;
                }
                let Some(file) = row.file(header) else {
                    continue;
                };
                let Ok(name) = self.dwarf.attr_string(unit, file.path_name()) else {
                    continue;
                };
                let name = name.to_string_lossy().unwrap_or_default();
                let base = name.rsplit('/').next().unwrap_or(&name).to_string();
                out.insert((base, line));
            }
        }
        out
    }
}

impl DebugInfo {
    /// `(file name without directories, line)` of every inlined call with code: the line
    /// of a call whose callee was inlined has the callee's code (under the callee's lines),
    /// possibly no row of its own (`printf("%d", f(x))` after the `printf` was found
    /// unreachable), and a frame in the inlined code stands at that line in its caller.
    pub fn inlined_call_lines(&self) -> std::collections::HashSet<(String, u32)> {
        let mut out = std::collections::HashSet::new();
        for &(ui, file, line) in &self.inlined_calls {
            let unit = &self.units[ui];
            let Some(program) = &unit.line_program else {
                continue;
            };
            let Some(entry) = program.header().file(file) else {
                continue;
            };
            let Ok(name) = self.dwarf.attr_string(unit, entry.path_name()) else {
                continue;
            };
            let name = name.to_string_lossy().unwrap_or_default();
            out.insert((name.rsplit('/').next().unwrap_or(&name).to_string(), line));
        }
        out
    }
}

/// Lines with machine code per function: `(file name without directories, line)` of the
/// line-table rows inside each out-of-line function's address ranges, by name and linkage
/// name (same-named functions of several units share one set: their union).
#[derive(Default)]
pub struct FunctionLines {
    /// File names without directories → id.
    files: HashMap<String, u32>,
    by_function: HashMap<String, std::collections::HashSet<(u32, u32)>>,
}

impl FunctionLines {
    /// `Some(has code)` when DWARF knows `function`'s ranges, `None` otherwise.
    pub fn has_code(&self, function: &str, file_base: &str, line: u32) -> Option<bool> {
        let set = self.by_function.get(function)?;
        Some(
            self.files
                .get(file_base)
                .is_some_and(|&f| set.contains(&(f, line))),
        )
    }

    pub fn knows(&self, function: &str) -> bool {
        self.by_function.contains_key(function)
    }
}

impl DebugInfo {
    /// See [`FunctionLines`]. Ranges starting at 0 (or at a tombstone) are those of copies the
    /// linker discarded (a COMDAT kept elsewhere): ignored.
    pub fn lines_by_function(&self) -> FunctionLines {
        let mut out = FunctionLines::default();
        let mut rows: Vec<(u64, u32, u32)> = Vec::new();
        for unit in &self.units {
            let Some(program) = unit.line_program.clone() else {
                continue;
            };
            // File index of this unit's header → id, resolved once per file entry.
            let mut ids: HashMap<u64, u32> = HashMap::new();
            let mut it = program.rows();
            while let Ok(Some((header, row))) = it.next_row() {
                if row.end_sequence() {
                    continue;
                }
                let Some(line) = row.line() else { continue };
                let index = row.file_index();
                let id = match ids.get(&index) {
                    Some(&id) => id,
                    None => {
                        let Some(file) = row.file(header) else {
                            continue;
                        };
                        let Ok(name) = self.dwarf.attr_string(unit, file.path_name()) else {
                            continue;
                        };
                        let name = name.to_string_lossy().unwrap_or_default();
                        let base = name.rsplit('/').next().unwrap_or(&name).to_string();
                        let next = out.files.len() as u32;
                        let id = *out.files.entry(base).or_insert(next);
                        ids.insert(index, id);
                        id
                    }
                };
                rows.push((row.address(), id, line.get() as u32));
            }
        }
        rows.sort_unstable_by_key(|r| r.0);
        for &(low, high, ui, off) in &self.subprograms {
            if low == 0 || low >= u64::MAX - 1 {
                continue;
            }
            let unit = &self.units[ui];
            let Ok(e) = unit.entry(off) else { continue };
            let mut names: Vec<String> = self.die_name(unit, &e).into_iter().collect();
            let linkage = self
                .follow_attr(unit, &e, gimli::DW_AT_linkage_name)
                .and_then(|a| self.string(unit, a));
            names.extend(variant_of(linkage).0);
            let from = rows.partition_point(|r| r.0 < low);
            let to = rows.partition_point(|r| r.0 < high);
            for name in names {
                out.by_function
                    .entry(name)
                    .or_default()
                    .extend(rows[from..to].iter().map(|r| (r.1, r.2)));
            }
        }
        out
    }
}

/// Is there any DWARF at all in this image?
pub fn has_debug_info(elf: &object::read::elf::ElfFile64<'_, object::LittleEndian>) -> bool {
    elf.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
}

impl DebugInfo {
    pub fn load(
        elf: &object::read::elf::ElfFile64<'_, object::LittleEndian>,
    ) -> Result<DebugInfo, String> {
        let load = |id: gimli::SectionId| -> Result<Rd, gimli::Error> {
            let data = elf
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .map(|d| Arc::<[u8]>::from(&*d))
                .unwrap_or_else(|| Arc::from(&[][..]));
            Ok(EndianArcSlice::new(data, LittleEndian))
        };
        let dwarf = gimli::Dwarf::load(load).map_err(|e| format!("DWARF: {e}"))?;
        let dwarf = Arc::new(dwarf);
        let ctx =
            addr2line::Context::from_arc_dwarf(dwarf.clone()).map_err(|e| format!("DWARF: {e}"))?;
        let mut units = Vec::new();
        let mut headers = dwarf.units();
        while let Ok(Some(h)) = headers.next() {
            if let Ok(u) = dwarf.unit(h) {
                units.push(u);
            }
        }
        let mut subprograms = Vec::new();
        let mut globals: HashMap<String, Vec<(usize, UnitOffset<usize>)>> = HashMap::new();
        let mut inlined_offsets: Vec<(usize, UnitOffset<usize>)> = Vec::new();
        let mut inlined_calls: Vec<(usize, u64, u32)> = Vec::new();
        let mut decl_offsets: Vec<(usize, UnitOffset<usize>, u32)> = Vec::new();
        for (ui, unit) in units.iter().enumerate() {
            let mut entries = unit.entries();
            while let Ok(Some(e)) = entries.next_dfs() {
                let depth = e.depth();
                match e.tag() {
                    gimli::DW_TAG_subprogram => {
                        if let Some(l) = e
                            .attr_value(gimli::DW_AT_decl_line)
                            .and_then(|a| a.udata_value())
                        {
                            decl_offsets.push((ui, e.offset(), l as u32));
                        }
                        if let Ok(mut ranges) = dwarf.die_ranges(unit, e) {
                            while let Ok(Some(r)) = ranges.next() {
                                if r.begin < r.end {
                                    subprograms.push((r.begin, r.end, ui, e.offset()));
                                }
                            }
                        }
                    }
                    gimli::DW_TAG_inlined_subroutine => {
                        if let Some(AttributeValue::UnitRef(o)) =
                            e.attr_value(gimli::DW_AT_abstract_origin)
                        {
                            inlined_offsets.push((ui, o));
                        }
                        let file = e.attr_value(gimli::DW_AT_call_file).and_then(|a| match a {
                            AttributeValue::FileIndex(i) => Some(i),
                            a => a.udata_value(),
                        });
                        let line = e
                            .attr_value(gimli::DW_AT_call_line)
                            .and_then(|a| a.udata_value());
                        let has_code = dwarf
                            .die_ranges(unit, e)
                            .ok()
                            .and_then(|mut r| r.next().ok().flatten())
                            .is_some();
                        if let (Some(file), Some(line), true) = (file, line, has_code) {
                            inlined_calls.push((ui, file, line as u32));
                        }
                    }
                    gimli::DW_TAG_variable if depth == 1 => {
                        if let Some(n) = e
                            .attr_value(gimli::DW_AT_name)
                            .and_then(|a| dwarf.attr_string(unit, a).ok())
                        {
                            if let Ok(n) = n.to_string_lossy() {
                                globals
                                    .entry(n.into_owned())
                                    .or_default()
                                    .push((ui, e.offset()));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        subprograms.sort_by_key(|s| (s.0, s.1));
        let mut info = DebugInfo {
            dwarf,
            ctx: std::sync::Mutex::new(ctx),
            units,
            subprograms,
            type_index: Default::default(),
            globals,
            inlined: Default::default(),
            decl_lines: HashMap::new(),
            inlined_calls,
        };
        for (ui, o, line) in decl_offsets {
            let unit = &info.units[ui];
            if let Some(n) = unit.entry(o).ok().and_then(|e| info.die_name(unit, &e)) {
                let v = info.decl_lines.entry(n).or_default();
                if !v.contains(&line) {
                    v.push(line);
                }
            }
        }
        let mut inlined = std::collections::HashSet::new();
        for (ui, o) in inlined_offsets {
            let unit = &info.units[ui];
            if let Ok(e) = unit.entry(o) {
                let name = info.die_name(unit, &e);
                // C++ functions are known by their linkage names (see `Function::name`).
                let linkage = info
                    .follow_attr(unit, &e, gimli::DW_AT_linkage_name)
                    .and_then(|a| info.string(unit, a));
                // (A call's dispatch scope counts too: code merged from both inlined bodies
                // may be all that is left of them.)
                inlined.extend(variant_of(linkage).0);
                inlined.extend(name);
            }
        }
        info.inlined = inlined;
        Ok(info)
    }

    /// Source position of a link-time address.
    pub fn location(&self, svma: u64) -> Option<SourceLoc> {
        let ctx = self.ctx.lock().unwrap_or_else(|p| p.into_inner());
        SourceLoc::of(ctx.find_location(svma).ok()??)
    }

    /// The inline chain at a link-time address, innermost first; the last entry is the
    /// out-of-line function.
    pub fn inline_frames(&self, svma: u64) -> Vec<InlineFrame> {
        let mut out = Vec::new();
        let ctx = self.ctx.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(mut frames) = ctx.find_frames(svma).skip_all_loads() else {
            return out;
        };
        // The DIEs of the inlined calls are in the unit of the out-of-line function: named
        // from there, by DW_AT_name as that function is (addr2line's name is the linkage
        // name, mangled in C++).
        let unit = self.subprogram(svma).map(|s| &self.units[s.unit]);
        while let Ok(Some(f)) = frames.next() {
            let own_name = unit.zip(f.dw_die_offset).and_then(|(u, o)| {
                let e = u.entry(o).ok()?;
                self.die_name(u, &e)
            });
            let raw = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok().map(|s| s.into_owned()));
            let (linkage_name, variant) = variant_of(raw);
            out.push(InlineFrame {
                function: own_name.or_else(|| linkage_name.clone()),
                linkage_name,
                variant,
                location: f.location.and_then(SourceLoc::of),
            });
        }
        out
    }

    /// The out-of-line subprogram containing `svma`.
    pub fn subprogram(&self, svma: u64) -> Option<Subprogram> {
        let i = self.subprograms.partition_point(|s| s.0 <= svma);
        self.subprograms[..i]
            .iter()
            .rev()
            .take(64)
            .find(|s| s.0 <= svma && svma < s.1)
            .map(|&(_, _, unit, offset)| Subprogram { unit, offset })
    }

    /// Name, linkage name (without a variant's suffix) and compilation-unit file of a
    /// subprogram, and its [`Variant`].
    pub fn subprogram_names(&self, sp: Subprogram) -> SubprogramNames {
        let unit = &self.units[sp.unit];
        let Ok(e) = unit.entry(sp.offset) else {
            return SubprogramNames::default();
        };
        let name = self.die_name(unit, &e);
        let linkage = self
            .follow_attr(unit, &e, gimli::DW_AT_linkage_name)
            .and_then(|a| self.string(unit, a));
        let (linkage, variant) = variant_of(linkage);
        let cu = unit
            .name
            .as_ref()
            .and_then(|n| n.to_string_lossy().ok().map(|s| s.into_owned()));
        SubprogramNames {
            name,
            linkage,
            cu,
            variant,
        }
    }

    fn string(&self, unit: &gimli::Unit<Rd>, a: AttributeValue<Rd>) -> Option<String> {
        let s = self.dwarf.attr_string(unit, a).ok()?;
        Some(s.to_string_lossy().ok()?.into_owned())
    }

    /// An attribute, looked up through `DW_AT_abstract_origin` / `DW_AT_specification`.
    pub(crate) fn follow_attr(
        &self,
        unit: &gimli::Unit<Rd>,
        e: &gimli::DebuggingInformationEntry<Rd>,
        name: gimli::DwAt,
    ) -> Option<AttributeValue<Rd>> {
        let mut cur = e.clone();
        for _ in 0..8 {
            if let Some(v) = cur.attr_value(name) {
                return Some(v);
            }
            let next = cur
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| cur.attr_value(gimli::DW_AT_specification))?;
            let AttributeValue::UnitRef(off) = next else {
                return None;
            };
            cur = unit.entry(off).ok()?;
        }
        None
    }

    pub(crate) fn die_name(
        &self,
        unit: &gimli::Unit<Rd>,
        e: &gimli::DebuggingInformationEntry<Rd>,
    ) -> Option<String> {
        self.follow_attr(unit, e, gimli::DW_AT_name)
            .and_then(|a| self.string(unit, a))
    }

    /// Parameters and locals in scope at `svma` in the subprogram, with values.
    pub fn variables(
        &self,
        sp: Subprogram,
        svma: u64,
        bias: u64,
        frame: &FrameRegs<'_>,
        process: &Process,
    ) -> Vec<Variable> {
        let unit = &self.units[sp.unit];
        let mut out = Vec::new();
        let Ok(mut tree) = unit.entries_tree(Some(sp.offset)) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let frame_base = root
            .entry()
            .attr_value(gimli::DW_AT_frame_base)
            .and_then(|a| self.eval_location(unit, a, svma, bias, frame, None, process))
            .and_then(|loc| match loc {
                Loc::Register(v) => Some(v),
                Loc::Memory(a) => Some(a),
                _ => None,
            });
        self.collect(
            unit, root, svma, bias, frame, frame_base, process, None, &mut out,
        );
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        unit: &gimli::Unit<Rd>,
        node: gimli::EntriesTreeNode<'_, '_, Rd>,
        svma: u64,
        bias: u64,
        frame: &FrameRegs<'_>,
        frame_base: Option<u64>,
        process: &Process,
        inlined_in: Option<&str>,
        out: &mut Vec<Variable>,
    ) {
        let unit_index = self.unit_index(unit);
        let mut children = node.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry().clone();
            match e.tag() {
                gimli::DW_TAG_formal_parameter | gimli::DW_TAG_variable => {
                    let Some(name) = self.die_name(unit, &e) else {
                        continue;
                    };
                    let kind = if e.tag() == gimli::DW_TAG_formal_parameter {
                        VarKind::Parameter
                    } else {
                        VarKind::Local
                    };
                    let ty = self
                        .follow_attr(unit, &e, gimli::DW_AT_type)
                        .and_then(|a| match a {
                            AttributeValue::UnitRef(o) => Some(o),
                            _ => None,
                        });
                    let type_name = ty
                        .map(|t| self.type_name(unit, t, 0))
                        .unwrap_or_else(|| "?".into());
                    let size = ty.and_then(|t| self.type_size(unit, t, 0));
                    let loc = match e.attr_value(gimli::DW_AT_location) {
                        Some(a) => self
                            .eval_location(unit, a, svma, bias, frame, frame_base, process)
                            .unwrap_or(Loc::Unavailable),
                        None => match e.attr_value(gimli::DW_AT_const_value) {
                            Some(AttributeValue::Sdata(v)) => Loc::Bytes(v.to_le_bytes().to_vec()),
                            Some(AttributeValue::Udata(v)) => Loc::Bytes(v.to_le_bytes().to_vec()),
                            Some(AttributeValue::Data1(v)) => Loc::Bytes(vec![v]),
                            Some(AttributeValue::Data2(v)) => Loc::Bytes(v.to_le_bytes().to_vec()),
                            Some(AttributeValue::Data4(v)) => Loc::Bytes(v.to_le_bytes().to_vec()),
                            Some(AttributeValue::Data8(v)) => Loc::Bytes(v.to_le_bytes().to_vec()),
                            _ => Loc::OptimizedOut,
                        },
                    };
                    let (bytes, address) = match (&loc, size) {
                        (Loc::Memory(a), Some(n)) if n <= 1 << 20 => {
                            (process.read_vec(*a, n as usize), Some(*a))
                        }
                        (Loc::Memory(a), _) => (None, Some(*a)),
                        (Loc::Register(v), _) => (Some(v.to_le_bytes().to_vec()), None),
                        (Loc::Bytes(b), _) => (Some(b.clone()), None),
                        _ => (None, None),
                    };
                    let value = match (&loc, &bytes, ty) {
                        (Loc::OptimizedOut, ..) => "<optimized out>".to_string(),
                        (Loc::Unavailable, ..) => "<unavailable>".to_string(),
                        (_, Some(b), Some(t)) => self.format(unit, t, b, process),
                        (Loc::Memory(a), None, _) => format!("<memory at {a:#x} not in the core>"),
                        _ => "<unavailable>".to_string(),
                    };
                    out.push(Variable {
                        name,
                        kind,
                        type_name,
                        value,
                        address,
                        inlined_in: inlined_in.map(str::to_string),
                        bytes,
                        ty: ty.map(|t| (unit_index, t)),
                    });
                }
                gimli::DW_TAG_lexical_block
                    if self.die_contains(unit, &e, svma).unwrap_or(true) =>
                {
                    self.collect(
                        unit, child, svma, bias, frame, frame_base, process, inlined_in, out,
                    );
                }
                gimli::DW_TAG_inlined_subroutine
                    if self.die_contains(unit, &e, svma) == Some(true) =>
                {
                    let name = self.die_name(unit, &e);
                    self.collect(
                        unit,
                        child,
                        svma,
                        bias,
                        frame,
                        frame_base,
                        process,
                        name.as_deref().or(Some("?")),
                        out,
                    );
                }
                _ => {}
            }
        }
    }

    fn die_contains(
        &self,
        unit: &gimli::Unit<Rd>,
        e: &gimli::DebuggingInformationEntry<Rd>,
        svma: u64,
    ) -> Option<bool> {
        let mut ranges = self.dwarf.die_ranges(unit, e).ok()?;
        let mut any = false;
        while let Ok(Some(r)) = ranges.next() {
            any = true;
            if r.begin <= svma && svma < r.end {
                return Some(true);
            }
        }
        any.then_some(false)
    }

    /// Evaluates a location attribute (expression or location list) at `svma`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn eval_location(
        &self,
        unit: &gimli::Unit<Rd>,
        attr: AttributeValue<Rd>,
        svma: u64,
        bias: u64,
        frame: &FrameRegs<'_>,
        frame_base: Option<u64>,
        process: &Process,
    ) -> Option<Loc> {
        let expr = match attr {
            AttributeValue::Exprloc(e) => e,
            other => {
                let mut list = self.dwarf.attr_locations(unit, other).ok()??;
                let mut found = None;
                while let Ok(Some(entry)) = list.next() {
                    if entry.range.begin <= svma && svma < entry.range.end {
                        found = Some(entry.data);
                        break;
                    }
                }
                match found {
                    Some(e) => e,
                    // No entry covers the pc: the variable has no location here.
                    None => return Some(Loc::OptimizedOut),
                }
            }
        };
        let mut eval = expr.evaluation(unit.encoding());
        let mut r = eval.evaluate().ok()?;
        loop {
            r = match r {
                gimli::EvaluationResult::Complete => break,
                gimli::EvaluationResult::RequiresMemory { address, size, .. } => {
                    let mut b = [0u8; 8];
                    if !process.read(address, &mut b[..size.min(8) as usize]) {
                        return Some(Loc::Unavailable);
                    }
                    eval.resume_with_memory(gimli::Value::Generic(u64::from_le_bytes(b)))
                        .ok()?
                }
                gimli::EvaluationResult::RequiresRegister { register, .. } => {
                    let Some(v) = frame.regs.get(register.0 as usize).copied().flatten() else {
                        return Some(Loc::OptimizedOut);
                    };
                    eval.resume_with_register(gimli::Value::Generic(v)).ok()?
                }
                gimli::EvaluationResult::RequiresFrameBase => {
                    eval.resume_with_frame_base(frame_base?).ok()?
                }
                gimli::EvaluationResult::RequiresCallFrameCfa => {
                    eval.resume_with_call_frame_cfa(frame.cfa?).ok()?
                }
                gimli::EvaluationResult::RequiresRelocatedAddress(a) => eval
                    .resume_with_relocated_address(a.wrapping_add(bias))
                    .ok()?,
                gimli::EvaluationResult::RequiresIndexedAddress { index, relocate } => {
                    let a = self.dwarf.address(unit, index).ok()?;
                    let a = if relocate { a.wrapping_add(bias) } else { a };
                    eval.resume_with_indexed_address(a).ok()?
                }
                _ => return Some(Loc::Unavailable),
            };
        }
        let pieces = eval.result();
        if pieces.len() != 1 {
            // Split variables (pieces) are rare in C at -O0/-O2 for what we read.
            return Some(if pieces.is_empty() {
                Loc::OptimizedOut
            } else {
                Loc::Unavailable
            });
        }
        Some(match &pieces[0].location {
            gimli::Location::Empty => Loc::OptimizedOut,
            gimli::Location::Register { register } => {
                match frame.regs.get(register.0 as usize).copied().flatten() {
                    Some(v) => Loc::Register(v),
                    None => Loc::OptimizedOut,
                }
            }
            gimli::Location::Address { address } => Loc::Memory(*address),
            gimli::Location::Value { value } => match value.to_u64(!0) {
                Ok(v) => Loc::Bytes(v.to_le_bytes().to_vec()),
                Err(_) => Loc::Unavailable,
            },
            gimli::Location::Bytes { value } => Loc::Bytes(value.to_slice().ok()?.into_owned()),
            _ => Loc::Unavailable,
        })
    }

    /// Address of a global variable by name (from its DWARF location).
    pub fn global_address(&self, name: &str, bias: u64, process: &Process) -> Option<u64> {
        let &(ui, off) = self.globals.get(name)?.first()?;
        let unit = &self.units[ui];
        let e = unit.entry(off).ok()?;
        let regs: Registers = [None; 17];
        let frame = FrameRegs {
            regs: &regs,
            cfa: None,
            fs_base: 0,
        };
        match self.eval_location(
            unit,
            e.attr_value(gimli::DW_AT_location)?,
            0,
            bias,
            &frame,
            None,
            process,
        )? {
            Loc::Memory(a) => Some(a),
            _ => None,
        }
    }

    /// A global variable's value, formatted like a variable's.
    pub fn global_value(&self, name: &str, bias: u64, process: &Process) -> Option<String> {
        let &(ui, off) = self.globals.get(name)?.first()?;
        let unit = &self.units[ui];
        let e = unit.entry(off).ok()?;
        let Some(AttributeValue::UnitRef(t)) = self.follow_attr(unit, &e, gimli::DW_AT_type) else {
            return None;
        };
        let addr = self.global_address(name, bias, process)?;
        let size = self.type_size(unit, t, 0)? as usize;
        let bytes = process.read_vec(addr, size)?;
        Some(self.format(unit, t, &bytes, process))
    }

    /// A value of type `t` held in `bytes`, as gdb prints it.
    pub(crate) fn format(
        &self,
        unit: &gimli::Unit<Rd>,
        t: UnitOffset<usize>,
        bytes: &[u8],
        process: &Process,
    ) -> String {
        Formatter {
            info: self,
            unit,
            process,
        }
        .value(t, bytes, 0)
    }

    /// An array of `elem` with dimensions `dims` (the rows of a multi-dimensional array).
    pub(crate) fn format_array(
        &self,
        unit: &gimli::Unit<Rd>,
        elem: UnitOffset<usize>,
        dims: &[Option<u64>],
        bytes: &[u8],
        process: &Process,
    ) -> String {
        Formatter {
            info: self,
            unit,
            process,
        }
        .array(elem, dims, bytes, 0)
    }

    pub(crate) fn strip(
        &self,
        unit: &gimli::Unit<Rd>,
        mut t: UnitOffset<usize>,
    ) -> Option<(UnitOffset<usize>, gimli::DebuggingInformationEntry<Rd>)> {
        for _ in 0..32 {
            let e = unit.entry(t).ok()?;
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => match e.attr_value(gimli::DW_AT_type) {
                    Some(AttributeValue::UnitRef(o)) => t = o,
                    _ => return Some((t, e)),
                },
                _ => return Some((t, e)),
            }
        }
        None
    }

    pub(crate) fn type_size(
        &self,
        unit: &gimli::Unit<Rd>,
        t: UnitOffset<usize>,
        depth: u32,
    ) -> Option<u64> {
        if depth > 16 {
            return None;
        }
        let (_, e) = self.strip(unit, t)?;
        if let Some(s) = e
            .attr_value(gimli::DW_AT_byte_size)
            .and_then(|a| a.udata_value())
        {
            return Some(s);
        }
        match e.tag() {
            gimli::DW_TAG_pointer_type => Some(8),
            gimli::DW_TAG_array_type => {
                let elem = match e.attr_value(gimli::DW_AT_type)? {
                    AttributeValue::UnitRef(o) => o,
                    _ => return None,
                };
                let es = self.type_size(unit, elem, depth + 1)?;
                let dims = self.array_dims(unit, t);
                Some(dims.iter().try_fold(es, |acc, d| acc.checked_mul((*d)?))?)
            }
            _ => None,
        }
    }

    pub(crate) fn array_dims(
        &self,
        unit: &gimli::Unit<Rd>,
        t: UnitOffset<usize>,
    ) -> Vec<Option<u64>> {
        let mut dims = Vec::new();
        let Some((t, _)) = self.strip(unit, t) else {
            return dims;
        };
        let Ok(mut tree) = unit.entries_tree(Some(t)) else {
            return dims;
        };
        let Ok(root) = tree.root() else { return dims };
        let mut ch = root.children();
        while let Ok(Some(c)) = ch.next() {
            let e = c.entry();
            if e.tag() != gimli::DW_TAG_subrange_type {
                continue;
            }
            let n = e
                .attr_value(gimli::DW_AT_count)
                .and_then(|a| a.udata_value())
                .or_else(|| {
                    e.attr_value(gimli::DW_AT_upper_bound)
                        .and_then(|a| a.udata_value())
                        .map(|u| u + 1)
                });
            dims.push(n);
        }
        dims
    }

    /// C spelling of a type (`int`, `struct pt *`, `char [16]`).
    pub fn type_name(&self, unit: &gimli::Unit<Rd>, t: UnitOffset<usize>, depth: u32) -> String {
        if depth > 16 {
            return "...".into();
        }
        let Ok(e) = unit.entry(t) else {
            return "?".into();
        };
        let inner = |d: &gimli::DebuggingInformationEntry<Rd>| match d.attr_value(gimli::DW_AT_type)
        {
            Some(AttributeValue::UnitRef(o)) => self.type_name(unit, o, depth + 1),
            _ => "void".into(),
        };
        let name = self.die_name(unit, &e);
        match e.tag() {
            gimli::DW_TAG_base_type | gimli::DW_TAG_typedef => name.unwrap_or_else(|| "?".into()),
            gimli::DW_TAG_structure_type => {
                format!("struct {}", name.unwrap_or_else(|| "{...}".into()))
            }
            gimli::DW_TAG_union_type => format!("union {}", name.unwrap_or_else(|| "{...}".into())),
            gimli::DW_TAG_enumeration_type => {
                format!("enum {}", name.unwrap_or_else(|| "{...}".into()))
            }
            gimli::DW_TAG_pointer_type => {
                // Pointers to functions and arrays are spelled around the star, as gdb does:
                // `int (*)(int, char *)`, `int (*)[4]`.
                if let Some(AttributeValue::UnitRef(o)) = e.attr_value(gimli::DW_AT_type) {
                    if let Ok(pe) = unit.entry(o) {
                        match pe.tag() {
                            gimli::DW_TAG_subroutine_type => {
                                return format!(
                                    "{} (*){}",
                                    inner(&pe),
                                    self.parameter_list(unit, o, depth)
                                );
                            }
                            gimli::DW_TAG_array_type => {
                                let (elem, dims) = self
                                    .type_name(unit, o, depth + 1)
                                    .split_once(" [")
                                    .map_or((String::new(), String::new()), |(a, b)| {
                                        (a.to_string(), format!("[{b}"))
                                    });
                                return format!("{elem} (*){dims}");
                            }
                            _ => {}
                        }
                    }
                }
                let i = inner(&e);
                if i.ends_with('*') {
                    format!("{i}*")
                } else {
                    format!("{i} *")
                }
            }
            gimli::DW_TAG_const_type => format!("const {}", inner(&e)),
            gimli::DW_TAG_volatile_type => format!("volatile {}", inner(&e)),
            gimli::DW_TAG_restrict_type => format!("{} restrict", inner(&e)),
            gimli::DW_TAG_atomic_type => format!("_Atomic {}", inner(&e)),
            gimli::DW_TAG_array_type => {
                let dims: String = self
                    .array_dims(unit, t)
                    .iter()
                    .map(|d| d.map(|n| format!("[{n}]")).unwrap_or_else(|| "[]".into()))
                    .collect();
                format!("{} {dims}", inner(&e))
            }
            gimli::DW_TAG_subroutine_type => {
                format!("{} {}", inner(&e), self.parameter_list(unit, t, depth))
            }
            _ => name.unwrap_or_else(|| "?".into()),
        }
    }
}

impl DebugInfo {
    /// `(int, char *)` of a subroutine type; `(void)` for a prototype without parameters.
    fn parameter_list(&self, unit: &gimli::Unit<Rd>, t: UnitOffset<usize>, depth: u32) -> String {
        let mut params = Vec::new();
        let mut variadic = false;
        if let Ok(mut tree) = unit.entries_tree(Some(t)) {
            if let Ok(root) = tree.root() {
                let mut ch = root.children();
                while let Ok(Some(c)) = ch.next() {
                    match c.entry().tag() {
                        gimli::DW_TAG_formal_parameter => {
                            params.push(match c.entry().attr_value(gimli::DW_AT_type) {
                                Some(AttributeValue::UnitRef(o)) => {
                                    self.type_name(unit, o, depth + 1)
                                }
                                _ => "?".into(),
                            })
                        }
                        gimli::DW_TAG_unspecified_parameters => variadic = true,
                        _ => {}
                    }
                }
            }
        }
        if variadic {
            params.push("...".into());
        }
        let prototyped = unit
            .entry(t)
            .ok()
            .and_then(|e| e.attr_value(gimli::DW_AT_prototyped))
            .is_some_and(|a| matches!(a, AttributeValue::Flag(true)));
        if params.is_empty() && prototyped {
            return "(void)".into();
        }
        format!("({})", params.join(", "))
    }

    /// Index of `unit` in `self.units` (units are only ever borrowed from there).
    pub(crate) fn unit_index(&self, unit: &gimli::Unit<Rd>) -> usize {
        self.units
            .iter()
            .position(|u| std::ptr::eq(u, unit))
            .expect("units are borrowed from DebugInfo::units")
    }

    /// A named type by its C spelling: `struct node`, `union u`, `enum color`, a typedef or a
    /// base type (`unsigned int`); C++ classes and structs by their bare name too.
    pub(crate) fn named_type(&self, spelling: &str) -> Option<(usize, UnitOffset<usize>)> {
        let index = self.type_index.get_or_init(|| {
            let mut index = HashMap::new();
            for (ui, unit) in self.units.iter().enumerate() {
                let mut entries = unit.entries();
                while let Ok(Some(e)) = entries.next_dfs() {
                    let prefix = match e.tag() {
                        gimli::DW_TAG_base_type | gimli::DW_TAG_typedef => "",
                        gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type => "struct ",
                        gimli::DW_TAG_union_type => "union ",
                        gimli::DW_TAG_enumeration_type => "enum ",
                        _ => continue,
                    };
                    if e.attr_value(gimli::DW_AT_declaration).is_some() {
                        continue;
                    }
                    let Some(name) = self.die_name(unit, e) else {
                        continue;
                    };
                    if !prefix.is_empty() {
                        index.entry(name.clone()).or_insert((ui, e.offset()));
                    }
                    index
                        .entry(format!("{prefix}{name}"))
                        .or_insert((ui, e.offset()));
                }
            }
            index
        });
        index.get(spelling).copied()
    }
}

/// Where a variable's value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Loc {
    Memory(u64),
    Register(u64),
    Bytes(Vec<u8>),
    OptimizedOut,
    Unavailable,
}

/// gdb-like value printing, bounded in depth and length.
struct Formatter<'a> {
    info: &'a DebugInfo,
    unit: &'a gimli::Unit<Rd>,
    process: &'a Process,
}

const MAX_ELEMENTS: usize = 200;
const MAX_STRING: usize = 200;

impl Formatter<'_> {
    fn value(&self, t: UnitOffset<usize>, b: &[u8], depth: u32) -> String {
        if depth > 6 {
            return "{...}".into();
        }
        let Some((t, e)) = self.info.strip(self.unit, t) else {
            return "?".into();
        };
        let size = e
            .attr_value(gimli::DW_AT_byte_size)
            .and_then(|a| a.udata_value());
        match e.tag() {
            gimli::DW_TAG_base_type => {
                let enc = match e.attr_value(gimli::DW_AT_encoding) {
                    Some(AttributeValue::Encoding(x)) => x,
                    _ => gimli::DW_ATE_signed,
                };
                base_value(
                    enc,
                    &b[..(size.unwrap_or(b.len() as u64) as usize).min(b.len())],
                )
            }
            gimli::DW_TAG_enumeration_type => {
                let v = int_le(&b[..(size.unwrap_or(4) as usize).min(b.len())], true);
                self.enumerator(t, v).unwrap_or_else(|| v.to_string())
            }
            gimli::DW_TAG_pointer_type => {
                let p = int_le(&b[..8.min(b.len())], false) as u64;
                if p == 0 {
                    return "0x0".into();
                }
                let pointee = match e.attr_value(gimli::DW_AT_type) {
                    Some(AttributeValue::UnitRef(o)) => self.info.strip(self.unit, o),
                    _ => None,
                };
                let mut s = format!("{p:#x}");
                if let Some((_, pe)) = pointee {
                    if pe.tag() == gimli::DW_TAG_base_type
                        && pe
                            .attr_value(gimli::DW_AT_byte_size)
                            .and_then(|a| a.udata_value())
                            == Some(1)
                        && matches!(
                            pe.attr_value(gimli::DW_AT_encoding),
                            Some(AttributeValue::Encoding(
                                gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char
                            ))
                        )
                    {
                        match self.c_string(p) {
                            Some(text) => s.push_str(&format!(" {text}")),
                            None => s.push_str(" <error: Cannot access memory>"),
                        }
                    } else if pe.tag() == gimli::DW_TAG_subroutine_type {
                        if let Some((name, 0)) =
                            self.process.module_at(p).and_then(|m| m.symbolize(p))
                        {
                            s.push_str(&format!(" <{name}>"));
                        }
                    } else {
                        s.push_str(&data_symbol(self.process, p));
                    }
                } else {
                    s.push_str(&data_symbol(self.process, p));
                }
                s
            }
            gimli::DW_TAG_array_type => {
                let elem = match e.attr_value(gimli::DW_AT_type) {
                    Some(AttributeValue::UnitRef(o)) => o,
                    _ => return "?".into(),
                };
                let dims = self.info.array_dims(self.unit, t);
                self.array(elem, &dims, b, depth)
            }
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                let Ok(mut tree) = self.unit.entries_tree(Some(t)) else {
                    return "{...}".into();
                };
                let Ok(root) = tree.root() else {
                    return "{...}".into();
                };
                let mut ch = root.children();
                let mut parts = Vec::new();
                while let Ok(Some(c)) = ch.next() {
                    let m = c.entry();
                    if m.tag() != gimli::DW_TAG_member {
                        continue;
                    }
                    let name = self.info.die_name(self.unit, m).unwrap_or_default();
                    let Some(AttributeValue::UnitRef(mt)) = m.attr_value(gimli::DW_AT_type) else {
                        continue;
                    };
                    let off = m
                        .attr_value(gimli::DW_AT_data_member_location)
                        .and_then(|a| a.udata_value())
                        .unwrap_or(0) as usize;
                    let bit_size = m
                        .attr_value(gimli::DW_AT_bit_size)
                        .and_then(|a| a.udata_value());
                    let text = if let Some(bits) = bit_size {
                        let bit_off = m
                            .attr_value(gimli::DW_AT_data_bit_offset)
                            .and_then(|a| a.udata_value())
                            .unwrap_or(off as u64 * 8);
                        let mut word = [0u8; 16];
                        let start = (bit_off / 8) as usize;
                        let avail = b.len().saturating_sub(start).min(16);
                        word[..avail].copy_from_slice(&b[start..start + avail]);
                        let mut v =
                            (u128::from_le_bytes(word) >> (bit_off % 8)) & ((1u128 << bits) - 1);
                        // A signed bit-field's top bit is its sign.
                        let signed = self.info.strip(self.unit, mt).is_some_and(|(_, te)| {
                            te.tag() == gimli::DW_TAG_enumeration_type
                                || matches!(
                                    te.attr_value(gimli::DW_AT_encoding),
                                    Some(AttributeValue::Encoding(
                                        gimli::DW_ATE_signed | gimli::DW_ATE_signed_char
                                    ))
                                )
                        });
                        if signed && bits > 0 && (v >> (bits - 1)) & 1 == 1 {
                            v |= !0u128 << bits;
                        }
                        let mut word = [0u8; 16];
                        word.copy_from_slice(&v.to_le_bytes());
                        let size = self.info.type_size(self.unit, mt, 0).unwrap_or(4).min(16);
                        self.value(mt, &word[..size as usize], depth + 1)
                    } else {
                        let ms = self.info.type_size(self.unit, mt, 0).unwrap_or(0) as usize;
                        match b.get(off..off + ms) {
                            Some(mb) => self.value(mt, mb, depth + 1),
                            None => "?".into(),
                        }
                    };
                    if name.is_empty() {
                        parts.push(text);
                    } else {
                        parts.push(format!("{name} = {text}"));
                    }
                }
                format!("{{{}}}", parts.join(", "))
            }
            _ => "?".into(),
        }
    }

    /// An array of `elem` with dimensions `dims` (`int [2][3]` → `{{0, 1, 2}, {10, 11, 12}}`,
    /// as gdb nests them) held in `b`.
    pub(crate) fn array(
        &self,
        elem: UnitOffset<usize>,
        dims: &[Option<u64>],
        b: &[u8],
        depth: u32,
    ) -> String {
        let Some(es) = self.info.type_size(self.unit, elem, 0).filter(|&s| s > 0) else {
            return "{...}".into();
        };
        let es = es as usize;
        if dims.len() > 1 {
            // Rows of the remaining dimensions.
            let row: Option<u64> = dims[1..]
                .iter()
                .try_fold(es as u64, |a, d| a.checked_mul((*d)?));
            let Some(row) = row.filter(|&r| r > 0) else {
                return "{...}".into();
            };
            let mut parts: Vec<String> = b
                .chunks_exact(row as usize)
                .take(MAX_ELEMENTS)
                .map(|c| self.array(elem, &dims[1..], c, depth + 1))
                .collect();
            if b.len() / row as usize > MAX_ELEMENTS {
                parts.push("...".into());
            }
            return format!("{{{}}}", parts.join(", "));
        }
        // Arrays of chars print as strings, like gdb.
        if let Some((_, ee)) = self.info.strip(self.unit, elem) {
            if es == 1
                && ee.tag() == gimli::DW_TAG_base_type
                && matches!(
                    ee.attr_value(gimli::DW_AT_encoding),
                    Some(AttributeValue::Encoding(
                        gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char
                    ))
                )
            {
                return quote(b);
            }
        }
        let n = b.len() / es;
        let mut parts: Vec<String> = b
            .chunks_exact(es)
            .take(MAX_ELEMENTS)
            .map(|c| self.value(elem, c, depth + 1))
            .collect();
        if n > MAX_ELEMENTS {
            parts.push("...".into());
        }
        format!("{{{}}}", parts.join(", "))
    }

    fn enumerator(&self, t: UnitOffset<usize>, v: i128) -> Option<String> {
        let mut tree = self.unit.entries_tree(Some(t)).ok()?;
        let root = tree.root().ok()?;
        let mut ch = root.children();
        while let Ok(Some(c)) = ch.next() {
            let e = c.entry();
            let cv = match e.attr_value(gimli::DW_AT_const_value)? {
                AttributeValue::Sdata(x) => x as i128,
                AttributeValue::Udata(x) => x as i128,
                AttributeValue::Data1(x) => x as i128,
                AttributeValue::Data2(x) => x as i128,
                AttributeValue::Data4(x) => x as i128,
                AttributeValue::Data8(x) => x as i128,
                _ => continue,
            };
            if cv == v {
                return self.info.die_name(self.unit, e);
            }
        }
        None
    }

    fn c_string(&self, p: u64) -> Option<String> {
        c_string(self.process, p)
    }
}

/// ` <shapes+152>` when `p` points into a global or static object (as gdb prints pointers),
/// else nothing.
pub(crate) fn data_symbol(process: &Process, p: u64) -> String {
    match process.module_at(p).and_then(|m| m.symbolize_data(p)) {
        Some((name, 0)) => format!(" <{name}>"),
        Some((name, off)) => format!(" <{name}+{off}>"),
        None => String::new(),
    }
}

/// The NUL-terminated string at `p`, quoted and cut at `MAX_STRING` characters like gdb's;
/// `None` when its first bytes are not in the core.
pub(crate) fn c_string(process: &Process, p: u64) -> Option<String> {
    let mut bytes = Vec::new();
    for chunk in 0..(MAX_STRING / 40 + 1) {
        let addr = p.wrapping_add((chunk * 40) as u64);
        let mut got = None;
        for n in [40usize, 8, 1] {
            if let Some(b) = process.read_vec(addr, n) {
                got = Some(b);
                break;
            }
        }
        let b = got?;
        if let Some(z) = b.iter().position(|&c| c == 0) {
            bytes.extend_from_slice(&b[..z]);
            return Some(quote(&bytes));
        }
        bytes.extend_from_slice(&b);
        if b.len() < 40 {
            break;
        }
    }
    bytes.truncate(MAX_STRING);
    Some(format!("{}...", quote(&bytes)))
}

pub(crate) fn int_le(b: &[u8], signed: bool) -> i128 {
    let mut w = [0u8; 16];
    let n = b.len().min(16);
    w[..n].copy_from_slice(&b[..n]);
    let v = u128::from_le_bytes(w);
    if signed && n > 0 && n < 16 && b[n - 1] & 0x80 != 0 {
        (v | (!0u128 << (8 * n))) as i128
    } else {
        v as i128
    }
}

pub(crate) fn base_value(enc: gimli::DwAte, b: &[u8]) -> String {
    match enc {
        gimli::DW_ATE_boolean => {
            if b.iter().all(|&x| x == 0) {
                "false".into()
            } else if b.first() == Some(&1) {
                "true".into()
            } else {
                int_le(b, false).to_string()
            }
        }
        gimli::DW_ATE_float => match b.len() {
            4 => gdb_float(f32::from_le_bytes(b.try_into().unwrap()) as f64, 9),
            8 => gdb_float(f64::from_le_bytes(b.try_into().unwrap()), 17),
            _ => format!("<{}-byte float>", b.len()),
        },
        gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char if b.len() == 1 => {
            let v = if enc == gimli::DW_ATE_signed_char {
                b[0] as i8 as i32
            } else {
                b[0] as i32
            };
            format!("{v} {}", quote_char(b[0]))
        }
        gimli::DW_ATE_signed | gimli::DW_ATE_signed_char => int_le(b, true).to_string(),
        _ => int_le(b, false).to_string(),
    }
}

/// A floating-point value as gdb prints it: C's `%g` with `digits` significant digits (9 for
/// `float`, 17 for `double`), so `0.1` prints as `0.10000000000000001`.
pub(crate) fn gdb_float(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() {
            "-nan(0x8000000000000)".into()
        } else {
            "nan(0x8000000000000)".into()
        };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to `digits` significant digits decides the style.
    let sci = format!("{:.*e}", digits - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= digits as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (digits as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'\\' => "'\\\\'".into(),
        0 => "'\\000'".into(),
        b'\n' => "'\\n'".into(),
        b'\t' => "'\\t'".into(),
        0x20..=0x7e => format!("'{}'", c as char),
        _ => format!("'\\{c:03o}'"),
    }
}

fn quote(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut s = String::from("\"");
    for &c in &b[..end.min(MAX_STRING)] {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\{c:03o}")),
        }
    }
    s.push('"');
    if end > MAX_STRING {
        s.push_str("...");
    }
    s
}
