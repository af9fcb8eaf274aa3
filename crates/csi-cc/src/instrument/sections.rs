//! The metadata sections (`.debug_PT`, `.debug_CC`, `.debug_BBC`, `.debug_FC`,
//! `.debug_CSI_CFG`), written as module-level assembly, per unit or per COMDAT group.

use super::*;

/// The COMDAT group of a function the linker may keep from any of several objects (C++
/// templates and inline functions: `linkonce_odr`), if it has one.
pub(super) unsafe fn comdat_of(f: LLVMValueRef) -> Option<String> {
    let mut len = 0usize;
    let p = csi_comdat_name(f, &mut len);
    (!p.is_null()).then(|| {
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    })
}

/// zstd level of the compressed pieces. Measured on the `.debug_CSI_CFG` pieces of Lua's 34
/// objects (4.1 MB of JSON, most of its metadata): level 12 gives 479 KB in 0.2 s of CPU, 15
/// 463 KB in 0.4 s, 17 444 KB in 0.8 s, 19 438 KB in 1.7 s — past 17 more time buys little.
const ZSTD_LEVEL: i32 = 17;

/// Appends the metadata sections (`.debug_PT`, `.debug_CC`, `.debug_BBC`, `.debug_FC`,
/// `.debug_CSI_CFG`) as assembly. Records of a COMDAT function go into sections of its group,
/// so that the linker keeps exactly the records of the copy whose code it keeps (as it does
/// for the copy's coverage globals, see `Ctx::global`): every object's other sections are
/// concatenated, and with them a record for each copy.
///
/// With `compress` (`--csi-metadata=zstd`), only `.debug_CSI_CFG` is written, each piece one
/// zstd frame with its own header (see `csi_model::sections::frame`): the linker's
/// concatenation, alignment padding and COMDAT pieces then need nothing of the reader but to
/// decode frame after frame. A piece that compression would not make smaller (a tiny COMDAT
/// group's) stays text: readers take both. The four csi-cc v1.4.0 sections are left out
/// there: their only readers besides ours are v1.4.0's own tools, which need them as text
/// (`--csi-metadata=text`), and ours read everything from `.debug_CSI_CFG` (its records hold
/// the same blocks, lines, Ball–Larus edges, labels and array names); compressed, they were
/// still a quarter of the metadata (Lua: 133 of 565 KB).
pub(super) fn write_sections(
    asm: &mut String,
    group: Option<&str>,
    texts: &[String; 5],
    compress: bool,
) {
    use csi_model::sections::{SECTION_BBC, SECTION_CC, SECTION_CFG, SECTION_FC, SECTION_PT};
    let names = [SECTION_PT, SECTION_CC, SECTION_BBC, SECTION_FC, SECTION_CFG];
    for (sec, text) in names.iter().zip(texts) {
        if text.is_empty() || (compress && *sec != SECTION_CFG) {
            continue;
        }
        let framed = compress
            .then(|| csi_model::sections::frame::encode(text.as_bytes(), ZSTD_LEVEL).ok())
            .flatten()
            .filter(|f| f.len() < text.len());
        let bytes = framed.as_deref().unwrap_or(text.as_bytes());
        match group {
            None => asm.push_str(&format!(".pushsection {sec},\"\",@progbits\n")),
            Some(g) => asm.push_str(&format!(
                ".pushsection {sec},\"G\",@progbits,\"{g}\",comdat\n"
            )),
        }
        for chunk in bytes.chunks(200) {
            asm.push_str("\t.ascii \"");
            for &b in chunk {
                match b {
                    b'"' => asm.push_str("\\\""),
                    b'\\' => asm.push_str("\\\\"),
                    0x20..=0x7e => asm.push(b as char),
                    _ => asm.push_str(&format!("\\{b:03o}")),
                }
            }
            asm.push_str("\"\n");
        }
        asm.push_str(".popsection\n");
    }
}

/// Appends the metadata sections of the unit to the module as assembly: each group's records
/// (see `write_sections`), with the module record in the unit's own `.debug_CSI_CFG` when
/// any function has a record.
pub(super) unsafe fn append_sections(
    module: LLVMModuleRef,
    mut groups: BTreeMap<Option<String>, [String; 5]>,
    module_record: &CfgModule,
    compress: bool,
) {
    if !groups.is_empty() {
        groups.entry(None).or_default()[4].push_str(&module_record.to_line());
    }
    let mut asm = String::new();
    for (group, texts) in &groups {
        write_sections(&mut asm, group.as_deref(), texts, compress);
    }
    if !asm.is_empty() {
        LLVMAppendModuleInlineAsm(module, asm.as_ptr() as _, asm.len());
    }
}
