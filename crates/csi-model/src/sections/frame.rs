//! Compressed pieces of the metadata sections: what csi-cc writes into each object instead of
//! the text, and what every reader of [`super`] decodes first.
//!
//! The linker concatenates each section's pieces — one per object, and one per COMDAT group
//! (C++ templates and inline functions) — possibly with NUL alignment padding in between. So
//! every piece is compressed on its own and carries its own length in a small header:
//!
//! ```text
//! magic  "\xffCSZ"            4 bytes (0xFF never occurs in UTF-8 text, so a frame can
//!                                      never be mistaken for a text piece's bytes)
//! version                     1 byte  (FRAME_VERSION)
//! compressed length           8 bytes, little-endian
//! uncompressed length         8 bytes, little-endian
//! zstd frame                  `compressed length` bytes: the piece's text
//! ```
//!
//! A section may mix frames and plain text: binaries of the original csi-cc and of csi-cc
//! before compression hold text only, and an object compiled by one of those may be linked
//! with new ones. [`decode`] returns the text of the whole section, pieces in section order.

use crate::InputError;
use std::borrow::Cow;
use std::io::Read;

/// Starts every compressed piece.
pub const FRAME_MAGIC: [u8; 4] = *b"\xffCSZ";
/// The frame layout this crate writes and reads.
pub const FRAME_VERSION: u8 = 1;
const HEADER_LEN: usize = FRAME_MAGIC.len() + 1 + 8 + 8;

/// One compressed piece (header and zstd frame) holding `text`, at zstd `level`.
pub fn encode(text: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let z = zstd::bulk::compress(text, level)?;
    let mut out = Vec::with_capacity(HEADER_LEN + z.len());
    out.extend_from_slice(&FRAME_MAGIC);
    out.push(FRAME_VERSION);
    out.extend_from_slice(&(z.len() as u64).to_le_bytes());
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(&z);
    Ok(out)
}

/// The text of a section's bytes: the bytes themselves when they hold no frame (no copy), else
/// the plain pieces and the frames' decompressed texts, in order. A damaged frame (truncated,
/// of another version, lengths that do not match its data) is an error naming its offset.
pub fn decode<'a>(bytes: &'a [u8], file: &str) -> Result<Cow<'a, [u8]>, InputError> {
    let Some(first) = find_magic(bytes, 0) else {
        return Ok(Cow::Borrowed(bytes));
    };
    let bad = |at: usize, reason: String| {
        InputError::new(file, format!("compressed piece at byte {at}"), reason)
    };
    let mut out = Vec::new();
    out.extend_from_slice(&bytes[..first]);
    let mut at = first;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + HEADER_LEN)
            .ok_or_else(|| bad(at, "header cut short".into()))?;
        let version = header[4];
        if version != FRAME_VERSION {
            return Err(bad(
                at,
                format!(
                    "frame version {version}, this reader knows version {FRAME_VERSION} \
                     (written by a newer csi-cc?)"
                ),
            ));
        }
        let len = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().expect("8 bytes"));
        let (clen, ulen) = (len(5), len(13));
        let data = usize::try_from(clen)
            .ok()
            .and_then(|c| bytes.get(at + HEADER_LEN..(at + HEADER_LEN).checked_add(c)?))
            .ok_or_else(|| {
                bad(
                    at,
                    format!(
                        "{clen} compressed bytes announced, {} left in the section",
                        bytes.len() - at - HEADER_LEN
                    ),
                )
            })?;
        // Streamed into `out` with the announced size as the limit, not allocated up front
        // from it: a damaged header cannot make us reserve memory the data does not fill.
        let before = out.len();
        zstd::stream::read::Decoder::with_buffer(data)
            .map_err(|e| bad(at, format!("zstd: {e}")))?
            .single_frame()
            .take(ulen.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|e| bad(at, format!("zstd: {e}")))?;
        let got = (out.len() - before) as u64;
        if got != ulen {
            return Err(bad(
                at,
                format!(
                    "{} bytes decompressed, {ulen} announced",
                    if got > ulen {
                        format!("more than {ulen}")
                    } else {
                        got.to_string()
                    }
                ),
            ));
        }
        at += HEADER_LEN + data.len();
        // Text pieces (older objects) and padding up to the next frame.
        let next = find_magic(bytes, at).unwrap_or(bytes.len());
        out.extend_from_slice(&bytes[at..next]);
        at = next;
    }
    Ok(Cow::Owned(out))
}

/// The section's bytes as one compressed piece at zstd `level`, when they hold a frame and one
/// piece is smaller: what csi-cc's link step writes into the linked file (`repack` in csi-cc).
/// Each object's piece is compressed on its own, so the repeats across objects (the build's
/// paths, callee and type names, the records' shape) are paid for once per object; over a
/// whole linked section one frame is 10–13 % smaller. [`decode`] of the result is exactly
/// [`decode`] of `bytes` (padding and text pieces included). `None` for a section of text
/// only (`--csi-metadata=text`: its readers need text) or when one piece would not be smaller.
pub fn repack(bytes: &[u8], level: i32, file: &str) -> Result<Option<Vec<u8>>, InputError> {
    if find_magic(bytes, 0).is_none() {
        return Ok(None);
    }
    let text = decode(bytes, file)?;
    let one = encode(&text, level)
        .map_err(|e| InputError::new(file, "compressing the section", format!("zstd: {e}")))?;
    Ok((one.len() < bytes.len()).then_some(one))
}

fn find_magic(bytes: &[u8], from: usize) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(FRAME_MAGIC.len())
        .position(|w| w == FRAME_MAGIC)
        .map(|i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> Vec<u8> {
        encode(text.as_bytes(), 3).unwrap()
    }

    #[test]
    fn text_without_frames_is_borrowed() {
        let b = b"#\nmain\n$\n";
        assert!(matches!(decode(b, "x").unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn frames_padding_and_text_pieces_round_trip_in_order() {
        let mut s = frame("{\"a\":1}\n");
        s.extend_from_slice(b"\0\0\0"); // alignment padding between objects
        s.extend_from_slice(b"{\"old\":2}\n"); // an uncompressed object's piece
        s.extend(frame("{\"b\":3}\n")); // a COMDAT group's piece
        s.extend(frame(""));
        assert_eq!(
            &*decode(&s, "x").unwrap(),
            b"{\"a\":1}\n\0\0\0{\"old\":2}\n{\"b\":3}\n"
        );
    }

    #[test]
    fn a_repacked_section_is_one_frame_of_the_same_text() {
        let record = "{\"csi_cfg\":12,\"name\":\"f\",\"file\":\"/build/dir/src/unit.c\"}\n";
        let mut s = frame(&record.repeat(20));
        s.extend_from_slice(b"\0\0");
        s.extend_from_slice(record.as_bytes());
        s.extend(frame(&record.repeat(30)));
        let one = repack(&s, 19, "x").unwrap().expect("smaller as one piece");
        assert!(one.len() < s.len());
        assert_eq!(one.windows(4).filter(|w| *w == FRAME_MAGIC).count(), 1);
        assert_eq!(decode(&one, "x").unwrap(), decode(&s, "x").unwrap());
        // Text only: left as it is; one piece already as small as it gets: left too.
        assert_eq!(repack(record.as_bytes(), 19, "x").unwrap(), None);
        assert_eq!(repack(&one, 19, "x").unwrap(), None);
        let mut cut = s.clone();
        cut.truncate(s.len() - 3);
        assert!(repack(&cut, 19, "x").is_err());
    }

    #[test]
    fn damaged_frames_are_errors_with_their_offset() {
        let good = frame("hello\n");
        let mut prefixed = b"text\n".to_vec();
        prefixed.extend_from_slice(&good[..10]);
        let e = decode(&prefixed, "f").unwrap_err().to_string();
        assert!(
            e.contains("compressed piece at byte 5") && e.contains("cut short"),
            "{e}"
        );

        let mut v = good.clone();
        v[4] = 9;
        assert!(decode(&v, "f")
            .unwrap_err()
            .to_string()
            .contains("version 9"));

        let mut short = good.clone();
        short.pop();
        assert!(decode(&short, "f")
            .unwrap_err()
            .to_string()
            .contains("announced"));

        let mut big = good.clone();
        big[13..21].copy_from_slice(&1000u64.to_le_bytes());
        assert!(decode(&big, "f")
            .unwrap_err()
            .to_string()
            .contains("1000 announced"));

        let mut small = good.clone();
        small[13..21].copy_from_slice(&2u64.to_le_bytes());
        assert!(decode(&small, "f")
            .unwrap_err()
            .to_string()
            .contains("more than 2"));

        let mut huge = good.clone();
        huge[5..13].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge, "f").is_err());

        let mut garbage = good;
        for b in &mut garbage[HEADER_LEN..] {
            *b ^= 0x5a;
        }
        assert!(decode(&garbage, "f")
            .unwrap_err()
            .to_string()
            .contains("zstd"));
    }
}
