//! Typed values of the crashed process, for a debugger: a frame's variables and globals as a
//! tree expanded on demand, C expressions evaluated against the core (`expr`), printed the way
//! gdb's `print` prints them, and raw memory and registers.
//!
//! A value is a type plus a place. Types are DWARF DIEs, or pointers and integers made by
//! evaluation (`&x`, `a + 1`), for which DWARF has no DIE at hand.

use gimli::{AttributeValue, UnitOffset};

use crate::dwarf::{int_le, DebugInfo, VarKind};
use crate::expr::{self, BinaryOp, Expr, UnaryOp};
use crate::extract::Crash;

/// A value of the crashed process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    ty: Ty,
    place: Place,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ty {
    /// A type DIE of a module's DWARF.
    Die {
        module: usize,
        unit: usize,
        offset: UnitOffset<usize>,
    },
    /// A pointer made by `&`.
    Pointer(Box<Ty>),
    /// The rows of a multi-dimensional array type (a `Ty::Die`) with its first `skip`
    /// dimensions taken: `int [2][3]` with skip 1 is `int [3]`.
    Rows {
        array: Box<Ty>,
        skip: usize,
    },
    /// An integer made by arithmetic or a literal.
    Int {
        size: u8,
        signed: bool,
    },
    Void,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    Memory(u64),
    Bytes(Vec<u8>),
    OptimizedOut,
    Unavailable,
}

/// What a type is, typedefs and qualifiers looked through.
enum Shape {
    Void,
    /// Integers, characters, booleans and enumerations: `size` bytes.
    Integer {
        size: u8,
        signed: bool,
    },
    Float,
    Pointer(Ty),
    Array {
        elem: Ty,
        count: Option<u64>,
    },
    Record,
    Function,
    Unknown,
}

/// A named child of a value or scope.
#[derive(Clone, Debug)]
pub struct NamedValue {
    pub name: String,
    pub value: Value,
    /// For a frame's variables: parameter or local.
    pub kind: Option<VarKind>,
    /// For variables of inlined code: the inlined function's name.
    pub inlined_in: Option<String>,
}

/// The integer types every C program has, by their spellings: (spellings, size, signed).
const C_INTEGERS: [(&[&str], u8, bool); 8] = [
    (&["char", "signed char"], 1, true),
    (&["unsigned char"], 1, false),
    (&["short"], 2, true),
    (&["unsigned short"], 2, false),
    (&["int"], 4, true),
    (&["unsigned int"], 4, false),
    (&["long", "long long"], 8, true),
    (&["unsigned long", "unsigned long long"], 8, false),
];

/// Array elements listed as children at most.
const MAX_CHILDREN: usize = 1000;

/// DWARF register numbers 0–16 of x86-64, by name.
pub const REGISTER_NAMES: [&str; 17] = [
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];

impl Crash {
    /// The parameters and locals of frame `frame` of thread `thread` (indices as in
    /// `Crash::threads`), innermost scope first as DWARF lists them.
    pub fn frame_values(&self, thread: usize, frame: usize) -> Vec<NamedValue> {
        let Some(f) = self.threads.get(thread).and_then(|t| t.frames.get(frame)) else {
            return Vec::new();
        };
        let Some(module) = f.context.module else {
            return Vec::new();
        };
        f.variables
            .iter()
            .map(|v| NamedValue {
                name: v.name.clone(),
                value: Value {
                    ty: match v.ty {
                        Some((unit, offset)) => Ty::Die {
                            module,
                            unit,
                            offset,
                        },
                        None => Ty::Void,
                    },
                    place: match (&v.address, &v.bytes) {
                        (Some(a), _) => Place::Memory(*a),
                        (None, Some(b)) => Place::Bytes(b.clone()),
                        _ if v.value == "<optimized out>" => Place::OptimizedOut,
                        _ => Place::Unavailable,
                    },
                },
                kind: Some(v.kind),
                inlined_in: v.inlined_in.clone(),
            })
            .collect()
    }

    /// The global variables of the frame's compilation unit, by name.
    pub fn frame_globals(&self, thread: usize, frame: usize) -> Vec<NamedValue> {
        let Some(f) = self.threads.get(thread).and_then(|t| t.frames.get(frame)) else {
            return Vec::new();
        };
        let (Some(module), Some((sp, _))) = (f.context.module, f.context.subprogram) else {
            return Vec::new();
        };
        let Some(debug) = self.debug[module].as_ref() else {
            return Vec::new();
        };
        let mut names: Vec<&String> = debug
            .globals
            .iter()
            .filter(|(_, dies)| dies.iter().any(|&(u, _)| u == sp.unit))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| {
                Some(NamedValue {
                    name: n.clone(),
                    value: self.global_in(module, debug, n, Some(sp.unit))?,
                    kind: None,
                    inlined_in: None,
                })
            })
            .collect()
    }

    /// A frame's registers (DWARF numbering; `None` where the unwinder does not know them).
    pub fn frame_registers(&self, thread: usize, frame: usize) -> Vec<(&'static str, Option<u64>)> {
        let Some(f) = self.threads.get(thread).and_then(|t| t.frames.get(frame)) else {
            return Vec::new();
        };
        REGISTER_NAMES
            .iter()
            .zip(f.context.regs.iter())
            .map(|(n, v)| (*n, *v))
            .collect()
    }

    /// Up to `len` bytes of memory from `address`: the readable prefix (a core holds some
    /// mappings only in part, and none of others).
    pub fn read_memory(&self, address: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len.min(1 << 20));
        // Page by page: a read fails as a whole when any byte of it is missing.
        while out.len() < len {
            let a = address.wrapping_add(out.len() as u64);
            let chunk = ((4096 - (a % 4096)) as usize).min(len - out.len());
            match self.process.read_vec(a, chunk) {
                Some(b) => out.extend_from_slice(&b),
                None => break,
            }
        }
        out
    }

    /// Evaluates a C expression in a frame: its variables, then globals (the frame's module
    /// first, then the others in load order).
    pub fn evaluate(&self, thread: usize, frame: usize, text: &str) -> Result<Value, String> {
        let module = self
            .threads
            .get(thread)
            .and_then(|t| t.frames.get(frame))
            .and_then(|f| f.context.module)
            .unwrap_or(self.process.exe);
        let ev = Evaluator {
            crash: self,
            thread,
            frame,
            module,
        };
        if self
            .threads
            .get(thread)
            .and_then(|t| t.frames.get(frame))
            .is_none()
        {
            return Err(format!("no frame #{frame} in thread #{thread}"));
        }
        let is_type = |n: &str| ev.find_type(n).is_some();
        let e = expr::parse(text, &is_type)?;
        let v = ev.eval(&e)?;
        // What cannot be read is an error now, as in gdb, not a value that fails to print.
        if matches!(v.place, Place::Memory(_)) && !matches!(self.shape(&v.ty), Shape::Function) {
            self.bytes(&v)?;
        }
        Ok(v)
    }

    /// A value as a variables view shows it (gdb's `info locals` style: `0x4052a0`,
    /// `{a = 1, next = 0x0}`).
    pub fn display_value(&self, v: &Value) -> String {
        self.format(v, false)
    }

    /// A value as gdb's `print` shows it: pointers with their type (`(struct node *)
    /// 0x4052a0`), the rest as `display_value`.
    pub fn print_value(&self, v: &Value) -> String {
        self.format(v, true)
    }

    /// The value's type, spelled as C (and gdb) spell it.
    pub fn value_type(&self, v: &Value) -> String {
        self.type_name(&v.ty)
    }

    /// Where the value lives in memory, if it does.
    pub fn value_address(&self, v: &Value) -> Option<u64> {
        match v.place {
            Place::Memory(a) => Some(a),
            _ => None,
        }
    }

    /// Whether `value_children` has anything to list (without reading it all).
    pub fn has_children(&self, v: &Value) -> bool {
        if matches!(v.place, Place::OptimizedOut | Place::Unavailable) {
            return false;
        }
        match self.shape(&v.ty) {
            Shape::Record => true,
            Shape::Array { count, .. } => count != Some(0),
            Shape::Pointer(p) => {
                !matches!(
                    self.shape(&p),
                    Shape::Void | Shape::Function | Shape::Unknown
                ) && !self.is_char(&p)
                    && self.scalar(v).is_ok_and(|s| s.bits != 0)
            }
            _ => false,
        }
    }

    /// The members of a struct or union, the elements of an array (the first 1000), the
    /// pointee of a pointer (a struct's members directly).
    pub fn value_children(&self, v: &Value) -> Vec<NamedValue> {
        let named = |name: String, value: Value| NamedValue {
            name,
            value,
            kind: None,
            inlined_in: None,
        };
        match self.shape(&v.ty) {
            Shape::Record => self
                .members(&v.ty)
                .into_iter()
                .filter_map(|m| Some(named(m.display_name(), self.member_value(v, &m).ok()?)))
                .collect(),
            Shape::Array { elem, count } => {
                let n = count.unwrap_or(0).min(MAX_CHILDREN as u64);
                (0..n)
                    .filter_map(|i| Some(named(format!("[{i}]"), self.element(v, &elem, i).ok()?)))
                    .collect()
            }
            Shape::Pointer(p) => {
                let Ok(target) = self.deref(v) else {
                    return Vec::new();
                };
                match self.shape(&p) {
                    Shape::Record => self.value_children(&target),
                    _ => vec![named("*".into(), target)],
                }
            }
            _ => Vec::new(),
        }
    }

    fn debug_of(&self, module: usize) -> Option<&DebugInfo> {
        self.debug.get(module)?.as_deref()
    }

    /// A global by name in one module (preferring a DIE of `unit`).
    fn global_in(
        &self,
        module: usize,
        debug: &DebugInfo,
        name: &str,
        unit: Option<usize>,
    ) -> Option<Value> {
        let dies = debug.globals.get(name)?;
        let &(ui, off) = dies
            .iter()
            .find(|d| Some(d.0) == unit)
            .or_else(|| dies.first())?;
        let u = &debug.units[ui];
        let e = u.entry(off).ok()?;
        let Some(AttributeValue::UnitRef(t)) = debug.follow_attr(u, &e, gimli::DW_AT_type) else {
            return None;
        };
        let address =
            debug.global_address(name, self.process.modules[module].bias, &self.process)?;
        Some(Value {
            ty: Ty::Die {
                module,
                unit: ui,
                offset: t,
            },
            place: Place::Memory(address),
        })
    }

    fn shape(&self, ty: &Ty) -> Shape {
        let (module, unit, offset) = match ty {
            Ty::Void => return Shape::Void,
            Ty::Int { size, signed } => {
                return Shape::Integer {
                    size: *size,
                    signed: *signed,
                }
            }
            Ty::Pointer(t) => return Shape::Pointer((**t).clone()),
            Ty::Rows { array, skip } => {
                let Some((elem, dims)) = self.array_parts(array) else {
                    return Shape::Unknown;
                };
                return Shape::Array {
                    elem: if dims.len() > skip + 1 {
                        Ty::Rows {
                            array: array.clone(),
                            skip: skip + 1,
                        }
                    } else {
                        elem
                    },
                    count: dims.get(*skip).copied().flatten(),
                };
            }
            Ty::Die {
                module,
                unit,
                offset,
            } => (*module, *unit, *offset),
        };
        let Some(debug) = self.debug_of(module) else {
            return Shape::Unknown;
        };
        let u = &debug.units[unit];
        let Some((t, e)) = debug.strip(u, offset) else {
            return Shape::Unknown;
        };
        let size = e
            .attr_value(gimli::DW_AT_byte_size)
            .and_then(|a| a.udata_value());
        let inner = || match e.attr_value(gimli::DW_AT_type) {
            Some(AttributeValue::UnitRef(o)) => Ty::Die {
                module,
                unit,
                offset: o,
            },
            _ => Ty::Void,
        };
        match e.tag() {
            gimli::DW_TAG_base_type => match e.attr_value(gimli::DW_AT_encoding) {
                Some(AttributeValue::Encoding(gimli::DW_ATE_float)) => Shape::Float,
                Some(AttributeValue::Encoding(enc)) => Shape::Integer {
                    size: size.unwrap_or(4) as u8,
                    signed: matches!(enc, gimli::DW_ATE_signed | gimli::DW_ATE_signed_char),
                },
                _ => Shape::Unknown,
            },
            gimli::DW_TAG_enumeration_type => Shape::Integer {
                size: size.unwrap_or(4) as u8,
                signed: true,
            },
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => Shape::Pointer(inner()),
            gimli::DW_TAG_array_type => {
                let dims = debug.array_dims(u, t);
                Shape::Array {
                    elem: if dims.len() > 1 {
                        Ty::Rows {
                            array: Box::new(ty.clone()),
                            skip: 1,
                        }
                    } else {
                        inner()
                    },
                    count: dims.first().copied().flatten(),
                }
            }
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                Shape::Record
            }
            gimli::DW_TAG_subroutine_type => Shape::Function,
            gimli::DW_TAG_unspecified_type => Shape::Void,
            _ => Shape::Unknown,
        }
    }

    fn size_of(&self, ty: &Ty) -> Option<u64> {
        match ty {
            Ty::Void => Some(1),
            Ty::Int { size, .. } => Some(*size as u64),
            Ty::Pointer(_) => Some(8),
            Ty::Rows { array, skip } => {
                let (elem, dims) = self.array_parts(array)?;
                dims.get(*skip..)?
                    .iter()
                    .try_fold(self.size_of(&elem)?, |a, d| a.checked_mul((*d)?))
            }
            Ty::Die {
                module,
                unit,
                offset,
            } => {
                let debug = self.debug_of(*module)?;
                debug.type_size(&debug.units[*unit], *offset, 0)
            }
        }
    }

    /// The element type and the dimensions of an array type DIE.
    fn array_parts(&self, array: &Ty) -> Option<(Ty, Vec<Option<u64>>)> {
        let Ty::Die {
            module,
            unit,
            offset,
        } = array
        else {
            return None;
        };
        let debug = self.debug_of(*module)?;
        let u = &debug.units[*unit];
        let (t, e) = debug.strip(u, *offset)?;
        let Some(AttributeValue::UnitRef(elem)) = e.attr_value(gimli::DW_AT_type) else {
            return None;
        };
        Some((
            Ty::Die {
                module: *module,
                unit: *unit,
                offset: elem,
            },
            debug.array_dims(u, t),
        ))
    }

    fn is_char(&self, ty: &Ty) -> bool {
        let Ty::Die {
            module,
            unit,
            offset,
        } = ty
        else {
            return false;
        };
        let Some(debug) = self.debug_of(*module) else {
            return false;
        };
        debug
            .strip(&debug.units[*unit], *offset)
            .is_some_and(|(_, e)| {
                e.tag() == gimli::DW_TAG_base_type
                    && matches!(
                        e.attr_value(gimli::DW_AT_encoding),
                        Some(AttributeValue::Encoding(
                            gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char
                        ))
                    )
            })
    }

    fn type_name(&self, ty: &Ty) -> String {
        match ty {
            Ty::Void => "void".into(),
            Ty::Int { size, signed } => match (size, signed) {
                (1, true) => "char",
                (1, false) => "unsigned char",
                (2, true) => "short",
                (2, false) => "unsigned short",
                (4, true) => "int",
                (4, false) => "unsigned int",
                (_, true) => "long",
                (_, false) => "unsigned long",
            }
            .into(),
            Ty::Pointer(t) => {
                let inner = self.type_name(t);
                match self.shape(t) {
                    Shape::Array { .. } => match inner.split_once(" [") {
                        Some((elem, dims)) => format!("{elem} (*)[{dims}"),
                        None => format!("{inner} *"),
                    },
                    Shape::Function => match inner.split_once(" (") {
                        Some((ret, params)) => format!("{ret} (*)({params}"),
                        None => format!("{inner} *"),
                    },
                    _ if inner.ends_with('*') => format!("{inner}*"),
                    _ => format!("{inner} *"),
                }
            }
            Ty::Rows { array, skip } => {
                // `int [2][3]` less its first `skip` dimensions.
                let whole = self.type_name(array);
                match whole.split_once(" [") {
                    Some((elem, dims)) => {
                        let rest: Vec<&str> = dims.split('[').skip(*skip).collect();
                        format!("{elem} [{}", rest.join("["))
                    }
                    None => whole,
                }
            }
            Ty::Die {
                module,
                unit,
                offset,
            } => match self.debug_of(*module) {
                Some(d) => d.type_name(&d.units[*unit], *offset, 0),
                None => "?".into(),
            },
        }
    }

    fn bytes(&self, v: &Value) -> Result<Vec<u8>, String> {
        match &v.place {
            Place::Bytes(b) => Ok(b.clone()),
            Place::Memory(a) => {
                let n = self
                    .size_of(&v.ty)
                    .ok_or_else(|| format!("the size of `{}` is unknown", self.type_name(&v.ty)))?;
                if n > 1 << 24 {
                    return Err(format!("`{}` is too large to read", self.type_name(&v.ty)));
                }
                self.process
                    .read_vec(*a, n as usize)
                    .ok_or_else(|| format!("Cannot access memory at address {a:#x}"))
            }
            Place::OptimizedOut => Err("value has been optimized out".into()),
            Place::Unavailable => Err("value is not available".into()),
        }
    }

    fn format(&self, v: &Value, top: bool) -> String {
        match &v.place {
            Place::OptimizedOut => return "<optimized out>".into(),
            Place::Unavailable => return "<unavailable>".into(),
            _ => {}
        }
        let bytes = match self.bytes(v) {
            Ok(b) => b,
            Err(e) => return format!("<error: {e}>"),
        };
        let shape = self.shape(&v.ty);
        if let Shape::Pointer(pointee) = &shape {
            let p = int_le(&bytes[..bytes.len().min(8)], false) as u64;
            if self.is_char(pointee) {
                if p == 0 {
                    return "0x0".into();
                }
                return match crate::dwarf::c_string(&self.process, p) {
                    Some(s) => format!("{p:#x} {s}"),
                    None => format!("{p:#x} <error: Cannot access memory at address {p:#x}>"),
                };
            }
            let mut s = format!("{p:#x}");
            if matches!(self.shape(pointee), Shape::Function) {
                if let Some((name, 0)) = self.process.module_at(p).and_then(|m| m.symbolize(p)) {
                    s.push_str(&format!(" <{name}>"));
                }
            } else if p != 0 {
                s.push_str(&crate::dwarf::data_symbol(&self.process, p));
            }
            return if top {
                format!("({}) {s}", self.type_name(&v.ty))
            } else {
                s
            };
        }
        match &v.ty {
            Ty::Die {
                module,
                unit,
                offset,
            } => match self.debug_of(*module) {
                Some(d) => d.format(&d.units[*unit], *offset, &bytes, &self.process),
                None => "?".into(),
            },
            Ty::Int { size, signed } => {
                let encoding = match (size, signed) {
                    (1, true) => gimli::DW_ATE_signed_char,
                    (1, false) => gimli::DW_ATE_unsigned_char,
                    (_, true) => gimli::DW_ATE_signed,
                    (_, false) => gimli::DW_ATE_unsigned,
                };
                crate::dwarf::base_value(encoding, &bytes)
            }
            Ty::Void => "void".into(),
            Ty::Rows { array, skip } => match (self.array_parts(array), &**array) {
                (Some((Ty::Die { offset: elem, .. }, dims)), Ty::Die { module, unit, .. }) => {
                    match self.debug_of(*module) {
                        Some(d) => d.format_array(
                            &d.units[*unit],
                            elem,
                            &dims[(*skip).min(dims.len())..],
                            &bytes,
                            &self.process,
                        ),
                        None => "?".into(),
                    }
                }
                _ => "?".into(),
            },
            Ty::Pointer(_) => unreachable!("pointers are formatted above"),
        }
    }

    /// An integer or pointer value as bits, with how to read them.
    fn scalar(&self, v: &Value) -> Result<Scalar, String> {
        match self.shape(&v.ty) {
            Shape::Integer { size, signed } => {
                let b = self.bytes(v)?;
                Ok(Scalar {
                    bits: int_le(&b[..b.len().min(size as usize)], signed),
                    ty: Ty::Int {
                        size: size.max(4),
                        signed: signed || size < 4,
                    },
                })
            }
            Shape::Pointer(p) => {
                let b = self.bytes(v)?;
                Ok(Scalar {
                    bits: int_le(&b[..b.len().min(8)], false),
                    ty: Ty::Pointer(Box::new(p)),
                })
            }
            // Arrays and functions decay to pointers to their first element / themselves.
            Shape::Array { elem, .. } => match v.place {
                Place::Memory(a) => Ok(Scalar {
                    bits: a as i128,
                    ty: Ty::Pointer(Box::new(elem)),
                }),
                _ => Err("the array is not in memory".into()),
            },
            Shape::Function => match v.place {
                Place::Memory(a) => Ok(Scalar {
                    bits: a as i128,
                    ty: Ty::Pointer(Box::new(v.ty.clone())),
                }),
                _ => Err("not a function in memory".into()),
            },
            Shape::Float => Err("floating-point arithmetic is not supported".into()),
            _ => Err(format!(
                "`{}` is not a number or a pointer",
                self.type_name(&v.ty)
            )),
        }
    }

    fn members(&self, ty: &Ty) -> Vec<Member> {
        let Ty::Die {
            module,
            unit,
            offset,
        } = ty
        else {
            return Vec::new();
        };
        let Some(debug) = self.debug_of(*module) else {
            return Vec::new();
        };
        let u = &debug.units[*unit];
        let Some((t, _)) = debug.strip(u, *offset) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let Ok(mut tree) = u.entries_tree(Some(t)) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let mut ch = root.children();
        while let Ok(Some(c)) = ch.next() {
            let m = c.entry();
            let base = match m.tag() {
                gimli::DW_TAG_member => false,
                gimli::DW_TAG_inheritance => true,
                _ => continue,
            };
            // Static members have no place in the object.
            if m.attr_value(gimli::DW_AT_external).is_some()
                || m.attr_value(gimli::DW_AT_declaration).is_some()
            {
                continue;
            }
            let Some(AttributeValue::UnitRef(mt)) = m.attr_value(gimli::DW_AT_type) else {
                continue;
            };
            let byte_offset = m
                .attr_value(gimli::DW_AT_data_member_location)
                .and_then(|a| a.udata_value())
                .unwrap_or(0);
            let bits = m
                .attr_value(gimli::DW_AT_bit_size)
                .and_then(|a| a.udata_value())
                .map(|size| {
                    let off = m
                        .attr_value(gimli::DW_AT_data_bit_offset)
                        .and_then(|a| a.udata_value())
                        .unwrap_or(byte_offset * 8);
                    (off, size)
                });
            let ty = Ty::Die {
                module: *module,
                unit: *unit,
                offset: mt,
            };
            let name = debug.die_name(u, m);
            out.push(Member {
                name: if base { None } else { name.clone() },
                base_name: base.then(|| self.type_name(&ty)),
                ty,
                byte_offset,
                bits,
            });
        }
        out
    }

    fn member_value(&self, v: &Value, m: &Member) -> Result<Value, String> {
        if let Some((bit_offset, size)) = m.bits {
            let b = self.bytes(v)?;
            let start = (bit_offset / 8) as usize;
            let mut word = [0u8; 16];
            let avail = b.len().saturating_sub(start).min(16);
            word[..avail].copy_from_slice(&b[start..start + avail]);
            let mut x = (u128::from_le_bytes(word) >> (bit_offset % 8)) & ((1u128 << size) - 1);
            // A signed bit-field's top bit is its sign.
            let signed = matches!(self.shape(&m.ty), Shape::Integer { signed: true, .. });
            if signed && size > 0 && x >> (size - 1) & 1 == 1 {
                x |= !0u128 << size;
            }
            let n = self.size_of(&m.ty).unwrap_or(4).min(16) as usize;
            return Ok(Value {
                ty: m.ty.clone(),
                place: Place::Bytes(x.to_le_bytes()[..n].to_vec()),
            });
        }
        let place = match &v.place {
            Place::Memory(a) => Place::Memory(a.wrapping_add(m.byte_offset)),
            Place::Bytes(b) => {
                let n = self.size_of(&m.ty).unwrap_or(0) as usize;
                let s = m.byte_offset as usize;
                match b.get(s..s + n) {
                    Some(x) => Place::Bytes(x.to_vec()),
                    None => Place::Unavailable,
                }
            }
            other => other.clone(),
        };
        Ok(Value {
            ty: m.ty.clone(),
            place,
        })
    }

    /// `v.name`, looking into anonymous members and base classes.
    fn member(&self, v: &Value, name: &str) -> Result<Value, String> {
        if !matches!(self.shape(&v.ty), Shape::Record) {
            return Err(format!(
                "Attempt to extract a component of a value that is not a structure: `{}`",
                self.type_name(&v.ty)
            ));
        }
        for m in self.members(&v.ty) {
            if m.name.as_deref() == Some(name) {
                return self.member_value(v, &m);
            }
        }
        for m in self.members(&v.ty) {
            if m.name.is_none() {
                if let Ok(x) = self
                    .member_value(v, &m)
                    .and_then(|inner| self.member(&inner, name))
                {
                    return Ok(x);
                }
            }
        }
        Err(format!("There is no member named {name}."))
    }

    fn element(&self, v: &Value, elem: &Ty, i: u64) -> Result<Value, String> {
        let size = self.size_of(elem).ok_or("element size unknown")?;
        let place = match &v.place {
            Place::Memory(a) => Place::Memory(a.wrapping_add(i.wrapping_mul(size))),
            Place::Bytes(b) => {
                let s = (i * size) as usize;
                match b.get(s..s + size as usize) {
                    Some(x) => Place::Bytes(x.to_vec()),
                    None => return Err("index out of the array".into()),
                }
            }
            other => other.clone(),
        };
        Ok(Value {
            ty: elem.clone(),
            place,
        })
    }

    fn deref(&self, v: &Value) -> Result<Value, String> {
        let s = self.scalar(v)?;
        let Ty::Pointer(p) = s.ty else {
            return Err("Attempt to take contents of a non-pointer value.".into());
        };
        if matches!(*p, Ty::Void) || matches!(self.shape(&p), Shape::Void) {
            return Err("Attempt to take contents of a non-pointer value.".into());
        }
        Ok(Value {
            ty: *p,
            place: Place::Memory(s.bits as u64),
        })
    }
}

/// An integer or pointer, as bits and a type (`Ty::Int` or `Ty::Pointer`).
struct Scalar {
    bits: i128,
    ty: Ty,
}

struct Member {
    name: Option<String>,
    /// For a base class: its type's name.
    base_name: Option<String>,
    ty: Ty,
    byte_offset: u64,
    bits: Option<(u64, u64)>,
}

impl Member {
    fn display_name(&self) -> String {
        match (&self.name, &self.base_name) {
            (Some(n), _) => n.clone(),
            (None, Some(b)) => format!("<{b}>"),
            (None, None) => "<anonymous>".into(),
        }
    }
}

struct Evaluator<'a> {
    crash: &'a Crash,
    thread: usize,
    frame: usize,
    module: usize,
}

impl Evaluator<'_> {
    fn find_type(&self, spelling: &str) -> Option<Ty> {
        let c = self.crash;
        let order =
            std::iter::once(self.module).chain((0..c.debug.len()).filter(|&m| m != self.module));
        for m in order {
            if let Some((unit, offset)) = c.debug_of(m).and_then(|d| d.named_type(spelling)) {
                return Some(Ty::Die {
                    module: m,
                    unit,
                    offset,
                });
            }
        }
        // Spellings DWARF names differently (`unsigned` is `unsigned int`, `long` is
        // `long int`), and the integer types every C program has.
        let canonical = match spelling {
            "unsigned" => "unsigned int",
            "long" | "long int" | "signed long" => "long",
            "unsigned long" | "unsigned long int" | "long unsigned int" => "unsigned long",
            "short" | "short int" => "short",
            "signed" | "signed int" => "int",
            other => other,
        };
        if canonical == "void" {
            return Some(Ty::Void);
        }
        if let Some(&(_, size, signed)) = C_INTEGERS.iter().find(|t| t.0.contains(&canonical)) {
            return Some(Ty::Int { size, signed });
        }
        (canonical != spelling)
            .then(|| self.find_type(canonical))
            .flatten()
    }

    fn resolve_type(&self, t: &expr::TypeName) -> Result<Ty, String> {
        let mut ty = self
            .find_type(&t.base)
            .ok_or_else(|| format!("No symbol \"{}\" in current context.", t.base))?;
        for _ in 0..t.pointers {
            ty = Ty::Pointer(Box::new(ty));
        }
        Ok(ty)
    }

    fn name(&self, name: &str) -> Result<Value, String> {
        let c = self.crash;
        if let Some(v) = c
            .frame_values(self.thread, self.frame)
            .into_iter()
            .find(|v| v.name == name)
        {
            return Ok(v.value);
        }
        let order = std::iter::once(self.module)
            .chain(std::iter::once(c.process.exe))
            .chain(0..c.debug.len());
        for m in order {
            if let Some(v) = c.debug_of(m).and_then(|d| c.global_in(m, d, name, None)) {
                return Ok(v);
            }
        }
        Err(format!("No symbol \"{name}\" in current context."))
    }

    fn eval(&self, e: &Expr) -> Result<Value, String> {
        let c = self.crash;
        match e {
            Expr::Name(n) => self.name(n),
            Expr::Int {
                value,
                size,
                signed,
            } => Ok(int_value(*value, *size, *signed)),
            Expr::Member(x, m) => c.member(&self.eval(x)?, m),
            Expr::Arrow(x, m) => c.member(&c.deref(&self.eval(x)?)?, m),
            Expr::Index(x, i) => {
                let base = self.eval(x)?;
                let i = c.scalar(&self.eval(i)?)?;
                if let Shape::Array { elem, .. } = c.shape(&base.ty) {
                    // Arrays held in registers or bytes are indexed in place.
                    if !matches!(base.place, Place::Memory(_)) {
                        return c.element(&base, &elem, i.bits as u64);
                    }
                }
                c.deref(&self.pointer_add(&c.scalar(&base)?, i.bits)?)
            }
            Expr::Unary(UnaryOp::Deref, x) => {
                let v = self.eval(x)?;
                if let Shape::Array { elem, .. } = c.shape(&v.ty) {
                    return c.element(&v, &elem, 0);
                }
                c.deref(&v)
            }
            Expr::Unary(UnaryOp::AddressOf, x) => {
                let v = self.eval(x)?;
                match v.place {
                    Place::Memory(a) => Ok(Value {
                        ty: Ty::Pointer(Box::new(v.ty)),
                        place: Place::Bytes(a.to_le_bytes().to_vec()),
                    }),
                    _ => Err("Attempt to take address of value not located in memory.".into()),
                }
            }
            Expr::Unary(op, x) => {
                let s = c.scalar(&self.eval(x)?)?;
                let (size, signed) = int_shape(&s.ty);
                Ok(match op {
                    UnaryOp::Neg => int_value(s.bits.wrapping_neg(), size, signed),
                    UnaryOp::BitNot => int_value(!s.bits, size, signed),
                    UnaryOp::Not => int_value((s.bits == 0) as i128, 4, true),
                    _ => unreachable!("handled above"),
                })
            }
            Expr::Cast(t, x) => {
                let ty = self.resolve_type(t)?;
                let v = self.eval(x)?;
                let size = match c.shape(&ty) {
                    Shape::Integer { size, .. } => Some(size),
                    Shape::Pointer(_) => Some(8),
                    _ => None,
                };
                match size {
                    Some(size) => {
                        let s = c.scalar(&v)?;
                        Ok(Value {
                            ty,
                            place: Place::Bytes(s.bits.to_le_bytes()[..size as usize].to_vec()),
                        })
                    }
                    // Other casts reinterpret the object in place.
                    None => Ok(Value { ty, place: v.place }),
                }
            }
            Expr::SizeOfType(t) => {
                let ty = self.resolve_type(t)?;
                let n = c.size_of(&ty).ok_or("size unknown")?;
                Ok(int_value(n as i128, 8, false))
            }
            Expr::SizeOfExpr(x) => {
                let v = self.eval(x)?;
                let n = c.size_of(&v.ty).ok_or("size unknown")?;
                Ok(int_value(n as i128, 8, false))
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
        }
    }

    fn pointer_add(&self, p: &Scalar, n: i128) -> Result<Value, String> {
        let Ty::Pointer(t) = &p.ty else {
            return Err("not a pointer".into());
        };
        let size = self.crash.size_of(t).ok_or("pointee size unknown")? as i128;
        let a = p.bits.wrapping_add(n.wrapping_mul(size)) as u64;
        Ok(Value {
            ty: p.ty.clone(),
            place: Place::Bytes(a.to_le_bytes().to_vec()),
        })
    }

    fn binary(&self, op: BinaryOp, a: &Expr, b: &Expr) -> Result<Value, String> {
        let c = self.crash;
        // `&&` and `||` evaluate their right side only when needed, as C does.
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            let l = c.scalar(&self.eval(a)?)?.bits != 0;
            if (op == BinaryOp::And) != l {
                return Ok(int_value(l as i128, 4, true));
            }
            let r = c.scalar(&self.eval(b)?)?.bits != 0;
            return Ok(int_value(r as i128, 4, true));
        }
        let l = c.scalar(&self.eval(a)?)?;
        let r = c.scalar(&self.eval(b)?)?;
        let lp = matches!(l.ty, Ty::Pointer(_));
        let rp = matches!(r.ty, Ty::Pointer(_));
        match op {
            BinaryOp::Add if lp && !rp => return self.pointer_add(&l, r.bits),
            BinaryOp::Add if rp && !lp => return self.pointer_add(&r, l.bits),
            BinaryOp::Sub if lp && !rp => return self.pointer_add(&l, r.bits.wrapping_neg()),
            BinaryOp::Sub if lp && rp => {
                let Ty::Pointer(t) = &l.ty else {
                    unreachable!()
                };
                let size = c.size_of(t).filter(|&s| s > 0).unwrap_or(1) as i128;
                return Ok(int_value((l.bits - r.bits) / size, 8, true));
            }
            _ => {}
        }
        // The usual arithmetic conversions, for integers of 4 and 8 bytes.
        let (ls, lsigned) = int_shape(&l.ty);
        let (rs, rsigned) = int_shape(&r.ty);
        let size = ls.max(rs);
        let signed = match ls.cmp(&rs) {
            std::cmp::Ordering::Equal => lsigned && rsigned,
            std::cmp::Ordering::Greater => lsigned,
            std::cmp::Ordering::Less => rsigned,
        };
        let norm = |x: i128| wrap(x, size, signed);
        let (x, y) = (norm(l.bits), norm(r.bits));
        let cmp = |t: bool| Ok(int_value(t as i128, 4, true));
        let v = match op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div | BinaryOp::Rem if y == 0 => return Err("Division by zero".into()),
            BinaryOp::Div => x.wrapping_div(y),
            BinaryOp::Rem => x.wrapping_rem(y),
            BinaryOp::Shl => x.wrapping_shl((y & 127) as u32),
            BinaryOp::Shr => x.wrapping_shr((y & 127) as u32),
            BinaryOp::BitAnd => x & y,
            BinaryOp::BitOr => x | y,
            BinaryOp::BitXor => x ^ y,
            BinaryOp::Lt => return cmp(x < y),
            BinaryOp::Gt => return cmp(x > y),
            BinaryOp::Le => return cmp(x <= y),
            BinaryOp::Ge => return cmp(x >= y),
            BinaryOp::Eq => return cmp(x == y),
            BinaryOp::Ne => return cmp(x != y),
            BinaryOp::And | BinaryOp::Or => unreachable!("handled above"),
        };
        Ok(int_value(v, size, signed))
    }
}

fn int_shape(ty: &Ty) -> (u8, bool) {
    match ty {
        Ty::Int { size, signed } => (*size, *signed),
        _ => (8, false),
    }
}

/// `x` reduced to an integer of `size` bytes.
fn wrap(x: i128, size: u8, signed: bool) -> i128 {
    let b = x.to_le_bytes();
    int_le(&b[..size as usize], signed)
}

fn int_value(v: i128, size: u8, signed: bool) -> Value {
    Value {
        ty: Ty::Int { size, signed },
        place: Place::Bytes(v.to_le_bytes()[..size as usize].to_vec()),
    }
}

impl Crash {
    /// The symbol containing a runtime address, with the offset into it.
    pub fn symbol_at(&self, address: u64) -> Option<(String, u64)> {
        self.process.module_at(address)?.symbolize(address)
    }

    /// The source position to show for a frame at `pc` (a return address is looked up at
    /// `pc - 1` by the caller): its line-table row, or where that row is line 0 (code an
    /// optimiser merged from several lines), the nearest row before it with a line — what gdb
    /// shows.
    pub fn line_for_display(&self, pc: u64) -> Option<crate::dwarf::SourceLoc> {
        (0..64u64)
            .map_while(|back| pc.checked_sub(back))
            .filter_map(|a| self.source_at(a))
            .find(|l| l.line != 0)
    }

    /// The source position of a runtime code address, from its module's line table.
    pub fn source_at(&self, address: u64) -> Option<crate::dwarf::SourceLoc> {
        let mi = self.process.module_index_at(address)?;
        let bias = self.process.modules[mi].bias;
        self.debug_of(mi)?.location(address.wrapping_sub(bias))
    }
}
