//! Readers (and writers) for the metadata sections an instrumented executable carries:
//! csi-cc v1.4.0's text sections `.debug_PT`, `.debug_CC`, `.debug_BBC`, `.debug_FC`
//! (byte-compatible with the original tool) and our versioned `.debug_CSI_CFG` (JSON Lines).
//!
//! Every reader takes the raw section bytes (the linker concatenates the pieces of all objects;
//! NUL padding between pieces is ignored) and the name of the input for error messages, and
//! returns either the parsed records or an [`InputError`] naming the file, the line, and the
//! reason. Readers never panic on bad input. csi-cc writes each piece zstd-compressed (see
//! [`frame`]); the readers decode compressed and plain pieces alike, so binaries of the
//! original csi-cc and of csi-cc before compression read as before.

pub mod cfg;
pub mod coverage;
pub mod frame;
pub mod pt;
pub mod switches;

pub use cfg::{
    cfg_linked_program_graph, cfg_program_graph, cfg_to_program_graph, parse_cfg, parse_cfg_all,
    CfgCall, CfgFunction, CfgImplied, CfgModule, CfgNode, CfgPathTracing, BODY_SUFFIX,
    CFG_FORMAT_VERSION, DISPATCH_SUFFIX, REPLICA_SUFFIX,
};
pub use coverage::{
    parse_bbc, parse_cc, parse_fc, BbcBlock, BbcFunction, CcFunction, CcSite, FcFunction,
};
pub use pt::{parse_pt, PtBlock, PtBlockKind, PtFunction, PtItem};

use crate::InputError;

/// Section names as they appear in the ELF file.
pub const SECTION_PT: &str = ".debug_PT";
pub const SECTION_CC: &str = ".debug_CC";
pub const SECTION_BBC: &str = ".debug_BBC";
pub const SECTION_FC: &str = ".debug_FC";
pub const SECTION_CFG: &str = ".debug_CSI_CFG";

/// Section bytes → text lines with their 1-based line numbers (of the decompressed text, see
/// [`frame::decode`]). NUL bytes (alignment padding the linker may put between the pieces of
/// different objects) are dropped; `\r` is ignored.
pub(crate) fn lines<'a>(bytes: &'a [u8], file: &str) -> Result<Vec<(usize, &'a str)>, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        InputError::new(
            file,
            format!("byte {}", e.valid_up_to()),
            "section is not valid UTF-8",
        )
    })?;
    Ok(text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_matches(|c| c == '\0' || c == '\r')))
        .collect())
}

pub(crate) fn err(file: &str, line: usize, reason: impl Into<String>) -> InputError {
    InputError::new(file, format!("line {line}"), reason)
}

/// Parses a decimal number of type `T`, with a readable reason on failure.
pub(crate) fn num<T: std::str::FromStr>(
    s: &str,
    what: &str,
    file: &str,
    line: usize,
) -> Result<T, InputError> {
    s.trim()
        .parse::<T>()
        .map_err(|_| err(file, line, format!("{what}: `{s}` is not a valid number")))
}

/// `<mash>` of DESIGN §4: every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn mash(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
