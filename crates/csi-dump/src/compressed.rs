//! Compressed core dumps, as systemd-coredump (`core.<comm>.….zst`, older `.lz4` / `.xz`)
//! and Ubuntu's apport (`CoreDump.zst`) store them. The format is recognised by its magic
//! bytes, not the file name. The core is streamed into an anonymous sparse temporary file
//! (runs of zero pages become holes, so a multi-GiB core of mostly untouched memory costs
//! little disk) and then memory-mapped like a plain core: it is never held whole in memory.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::DumpError;

/// A compression format of core dumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Zstd,
    Lz4,
    Xz,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Xz => "xz",
        }
    }

    /// The format whose magic number `head` starts with.
    pub fn detect(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
            Some(Compression::Lz4)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else {
            None
        }
    }
}

/// The compression of the file at `path`, if it has a known magic number.
pub fn detect_file(path: &Path) -> Result<Option<Compression>, DumpError> {
    let mut f = File::open(path).map_err(|e| DumpError::io(path, e))?;
    let mut head = [0u8; 6];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DumpError::io(path, e)),
        }
    }
    Ok(Compression::detect(&head[..n]))
}

/// Granularity of holes: a filesystem block.
const BLOCK: usize = 4096;
/// Bytes decompressed per step.
const CHUNK: usize = 1 << 20;
/// Most bytes asked of a decoder in one read.
const READ_STEP: usize = 64 << 10;

/// A decompressed core in its temporary file.
pub struct Decompressed {
    pub file: File,
    /// Set when the compressed stream ends early (a copy or upload cut short, systemd's
    /// size limit): the bytes decoded up to there are a correct prefix of the core, which is
    /// then read as a truncated core.
    pub stream_cut: Option<String>,
}

/// Decompresses `path` (in format `kind`) into an unlinked temporary file and returns it,
/// positioned anywhere. The decompressed data is checked to start like an ELF file.
pub fn decompress_to_temp(path: &Path, kind: Compression) -> Result<File, DumpError> {
    let d = decompress(path, kind)?;
    match d.stream_cut {
        None => Ok(d.file),
        Some(why) => Err(DumpError::Corrupt {
            path: path.to_path_buf(),
            what: why,
        }),
    }
}

/// As [`decompress_to_temp`], but a stream that ends early yields what it held.
pub fn decompress(path: &Path, kind: Compression) -> Result<Decompressed, DumpError> {
    let input =
        BufReader::with_capacity(CHUNK, File::open(path).map_err(|e| DumpError::io(path, e))?);
    let corrupt = |e: std::io::Error| DumpError::Corrupt {
        path: path.to_path_buf(),
        what: format!(
            "{}-compressed, but the stream cannot be decoded: {e}",
            kind.name()
        ),
    };
    let reader: Box<dyn Read + Send> = match kind {
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(input).map_err(corrupt)?)
        }
        Compression::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(input)),
        Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(input)),
    };
    let tmp_dir = std::env::temp_dir();
    let mut out = tempfile::tempfile_in(&tmp_dir).map_err(|e| DumpError::Io {
        path: tmp_dir.clone(),
        source: e,
    })?;
    let write_err = |e: std::io::Error| DumpError::Io {
        path: tmp_dir.clone(),
        source: std::io::Error::new(
            e.kind(),
            format!(
                "decompressing {} into a temporary file: {e}",
                path.display()
            ),
        ),
    };
    // Decoding (one thread) overlaps writing and hole-punching (this one): on a core of
    // incompressible memory the two cost about the same.
    let (chunks, received) = std::sync::mpsc::sync_channel::<Result<Chunk, std::io::Error>>(3);
    let (spare_tx, spare_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let decoder = std::thread::spawn(move || decode_chunks(reader, chunks, spare_rx));
    let mut total: u64 = 0;
    let mut stream_cut: Option<String> = None;
    let mut failure: Option<DumpError> = None;
    for chunk in received {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                failure = Some(corrupt(e));
                break;
            }
        };
        let filled = chunk.len;
        let buf = &chunk.buf[..filled];
        if total == 0 && !buf.starts_with(b"\x7fELF") {
            failure = Some(DumpError::Corrupt {
                path: path.to_path_buf(),
                what: format!(
                    "{}-compressed, but what it holds is not an ELF core dump",
                    kind.name()
                ),
            });
            break;
        }
        // Zero blocks become holes: seek over them instead of writing.
        let mut pos = 0;
        while pos < filled {
            let end = (pos + BLOCK).min(filled);
            if is_zero(&buf[pos..end]) {
                out.seek(SeekFrom::Current((end - pos) as i64))
                    .map_err(write_err)?;
                pos = end;
                continue;
            }
            // Write the run of non-zero blocks in one call.
            let mut run_end = end;
            while run_end < filled {
                let next = (run_end + BLOCK).min(filled);
                if is_zero(&buf[run_end..next]) {
                    break;
                }
                run_end = next;
            }
            out.write_all(&buf[pos..run_end]).map_err(write_err)?;
            pos = run_end;
        }
        total += filled as u64;
        if let Some(e) = chunk.cut {
            if total > 0 {
                stream_cut = Some(format!(
                    "the {}-compressed stream ends early ({e})",
                    kind.name()
                ));
            }
            break;
        }
        let _ = spare_tx.send(chunk.buf);
    }
    // Dropping the receivers stops the decoder at its next chunk.
    drop(spare_tx);
    let _ = decoder.join();
    if let Some(e) = failure {
        return Err(e);
    }
    if total == 0 {
        return Err(DumpError::Corrupt {
            path: path.to_path_buf(),
            what: format!("{}-compressed, but empty", kind.name()),
        });
    }
    // A trailing hole needs the length set explicitly.
    out.set_len(total).map_err(write_err)?;
    Ok(Decompressed {
        file: out,
        stream_cut: stream_cut.map(|why| format!("{why} after {total} bytes of the core")),
    })
}

/// A decoded piece of the core: `buf[..len]`, and why the stream ended inside it, if it did.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    cut: Option<std::io::Error>,
}

/// Fills chunks from the decoder until it ends (an empty chunk is never sent), reusing the
/// buffers the writer hands back.
fn decode_chunks(
    mut reader: Box<dyn Read + Send>,
    chunks: std::sync::mpsc::SyncSender<Result<Chunk, std::io::Error>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
) {
    let mut first = true;
    loop {
        let mut buf = spare.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
        let mut filled = 0;
        let mut cut = None;
        while filled < buf.len() {
            // Small reads: a decoder that fails mid-read drops what that read produced, so a
            // cut stream loses at most one step's worth of its decoded bytes.
            let step = (filled + READ_STEP).min(buf.len());
            match reader.read(&mut buf[filled..step]) {
                Ok(0) => break,
                Ok(k) => filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The input ended inside the stream: what was decoded is a prefix of the
                // core. Anything else (corrupt data) fails: its bytes cannot be trusted.
                Err(e)
                    if e.kind() == std::io::ErrorKind::UnexpectedEof && (!first || filled > 0) =>
                {
                    cut = Some(e);
                    break;
                }
                Err(e) => {
                    let _ = chunks.send(Err(e));
                    return;
                }
            }
        }
        if filled == 0 && cut.is_none() {
            return;
        }
        first = false;
        let last = cut.is_some() || filled < buf.len();
        if chunks
            .send(Ok(Chunk {
                buf,
                len: filled,
                cut,
            }))
            .is_err()
            || last
        {
            return;
        }
    }
}

/// Whether a block is all zero bytes (compared 16 bytes at a time).
fn is_zero(block: &[u8]) -> bool {
    let words = block.chunks_exact(16);
    let rest = words.remainder();
    words
        .map(|w| u128::from_ne_bytes(w.try_into().expect("chunks of 16")))
        .fold(0, |acc, w| acc | w)
        == 0
        && rest.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers() {
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Some(Compression::Zstd)
        );
        assert_eq!(
            Compression::detect(&[0x04, 0x22, 0x4d, 0x18]),
            Some(Compression::Lz4)
        );
        assert_eq!(Compression::detect(b"\xfd7zXZ\0"), Some(Compression::Xz));
        assert_eq!(Compression::detect(b"\x7fELF"), None);
        assert_eq!(Compression::detect(b""), None);
    }
}
