//! Snapshot files: a header, then named sections `kind | name | length | header crc | body |
//! body crc`, then an end section holding the section count. Large arrays (vectors, links)
//! are written straight from memory and read straight into their final buffers.
//!
//! A snapshot is written to a temporary file, fsynced, renamed into place and the folder
//! fsynced, so a snapshot file that exists is complete; any damage to it is corruption.

use std::path::Path;
use std::sync::Arc;

use super::codec::{bytes_of, bytes_of_mut, crc, crc_append, Plain};
use super::fs::{DataFile, Faults};
use crate::error::{EngineError, Result};

pub const MAGIC: &[u8; 8] = b"TRIMEMSN";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 24;
const END: &str = "end";

/// A section body: bytes to decode, or a raw array.
pub enum Body {
    Bytes(Vec<u8>),
    F32(Vec<f32>),
    U32(Vec<u32>),
}

/// A borrowed section body to write.
pub enum Part<'a> {
    Bytes(&'a [u8]),
    F32(&'a [f32]),
    U32(&'a [u32]),
}

pub struct Writer {
    file: DataFile,
    sections: u64,
}

impl Writer {
    pub fn create(path: &Path, generation: u64, faults: &Arc<Faults>) -> Result<Self> {
        let mut file = DataFile::create_new(path, faults)?;
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&generation.to_le_bytes());
        h.extend_from_slice(&crc(&h).to_le_bytes());
        file.write_all(&h)?;
        Ok(Writer { file, sections: 0 })
    }

    pub fn section(&mut self, name: &str, part: Part) -> Result<()> {
        let (kind, body) = match part {
            Part::Bytes(b) => (0u8, b),
            Part::F32(v) => (1, bytes_of(v)),
            Part::U32(v) => (2, bytes_of(v)),
        };
        let mut head = vec![kind];
        head.extend_from_slice(&(name.len() as u16).to_le_bytes());
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(&(body.len() as u64).to_le_bytes());
        head.extend_from_slice(&crc(&head).to_le_bytes());
        self.file.write_all(&head)?;
        // Large bodies go down in chunks so the checksum runs while the data is in cache.
        let mut c = 0;
        for chunk in body.chunks(8 << 20) {
            c = crc_append(c, chunk);
            self.file.write_all(chunk)?;
        }
        self.file.write_all(&c.to_le_bytes())?;
        self.sections += 1;
        Ok(())
    }

    /// Writes the end section and fsyncs; the caller renames the file into place.
    pub fn finish(mut self) -> Result<()> {
        let n = self.sections;
        self.section(END, Part::Bytes(&n.to_le_bytes()))?;
        self.file.sync()
    }
}

/// Reads a whole snapshot: its generation and its sections in order.
pub fn read(path: &Path, faults: &Arc<Faults>) -> Result<(u64, Vec<(String, Body)>)> {
    let what = path.display().to_string();
    let corrupt = |why: String| EngineError::Corrupted(format!("{what}: {why}"));
    let mut file = DataFile::open(path, faults)?;
    let size = file.size()?;
    let mut h = [0u8; HEADER_LEN];
    if size < HEADER_LEN as u64 {
        return Err(corrupt("shorter than its header".into()));
    }
    file.read_exact(&mut h)?;
    if &h[..8] != MAGIC || crc(&h[..20]) != u32::from_le_bytes(h[20..].try_into().expect("4 bytes"))
    {
        return Err(corrupt("not a trimem snapshot (bad header)".into()));
    }
    let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    if version > VERSION {
        return Err(EngineError::FormatVersion {
            path: what,
            found: version,
            supported: VERSION,
        });
    }
    let generation = u64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
    let mut pos = HEADER_LEN as u64;
    let mut sections = Vec::new();
    loop {
        let mut fixed = [0u8; 3];
        if pos + 3 > size {
            return Err(corrupt("ends before its end section".into()));
        }
        file.read_exact(&mut fixed)?;
        let (kind, name_len) = (fixed[0], u16::from_le_bytes([fixed[1], fixed[2]]) as u64);
        if pos + 3 + name_len + 12 > size {
            return Err(corrupt(format!(
                "section header at byte {pos} runs past the end"
            )));
        }
        let mut rest = vec![0u8; name_len as usize + 12];
        file.read_exact(&mut rest)?;
        let mut head = fixed.to_vec();
        head.extend_from_slice(&rest[..name_len as usize + 8]);
        let stored = u32::from_le_bytes(rest[name_len as usize + 8..].try_into().expect("4 bytes"));
        if crc(&head) != stored {
            return Err(corrupt(format!(
                "section header at byte {pos} fails its checksum"
            )));
        }
        let name = String::from_utf8(rest[..name_len as usize].to_vec())
            .map_err(|_| corrupt(format!("section name at byte {pos} is not UTF-8")))?;
        let len = u64::from_le_bytes(
            rest[name_len as usize..name_len as usize + 8]
                .try_into()
                .expect("8 bytes"),
        );
        let body_at = pos + 3 + name_len + 12;
        if len > size - body_at || size - body_at - len < 4 {
            return Err(corrupt(format!("section {name:?} runs past the end")));
        }
        let body = match kind {
            0 => Body::Bytes(read_array::<u8>(&mut file, body_at, len, &name, &what)?),
            1 => Body::F32(read_array::<f32>(&mut file, body_at, len, &name, &what)?),
            2 => Body::U32(read_array::<u32>(&mut file, body_at, len, &name, &what)?),
            k => return Err(corrupt(format!("section {name:?} has unknown kind {k}"))),
        };
        pos = body_at + len + 4;
        if name == END {
            let Body::Bytes(b) = &body else {
                return Err(corrupt("bad end section".into()));
            };
            if b.len() != 8
                || u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) != sections.len() as u64
            {
                return Err(corrupt("the end section's count disagrees".into()));
            }
            if pos != size {
                return Err(corrupt(format!(
                    "{} bytes after the end section",
                    size - pos
                )));
            }
            return Ok((generation, sections));
        }
        sections.push((name, body));
    }
}

/// Reads a section body at `at` (and its checksum) straight into its final array. A large body
/// is read by several threads at once, each checksumming its part (the parts' CRCs combine),
/// since copying from the page cache and faulting in fresh pages is most of a reopen.
fn read_array<T: Plain>(
    file: &mut DataFile,
    at: u64,
    len: u64,
    name: &str,
    what: &str,
) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>() as u64;
    if !len.is_multiple_of(size) {
        return Err(EngineError::Corrupted(format!(
            "{what}: section {name:?} has a partial element"
        )));
    }
    let mut out = vec![T::default(); (len / size) as usize];
    crate::hugepages::advise(&out); // before the read faults the pages in
    let bytes = bytes_of_mut(&mut out);
    const PARALLEL_FROM: usize = 64 << 20;
    let threads = if bytes.len() >= PARALLEL_FROM {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    } else {
        1
    };
    let part = bytes.len().div_ceil(threads).max(1);
    let file_ref = &*file;
    let crcs: Vec<Result<(u32, usize)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bytes
            .chunks_mut(part)
            .enumerate()
            .map(|(i, chunk)| {
                scope.spawn(move || {
                    let mut c = 0;
                    let mut off = at + (i * part) as u64;
                    for piece in chunk.chunks_mut(8 << 20) {
                        file_ref.read_exact_at(piece, off)?;
                        c = crc_append(c, piece);
                        off += piece.len() as u64;
                    }
                    Ok((c, chunk.len()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a reader thread panicked"))
            .collect()
    });
    let mut c = 0;
    for r in crcs {
        let (part_crc, n) = r?;
        c = crc32c::crc32c_combine(c, part_crc, n);
    }
    let mut stored = [0u8; 4];
    file.read_exact_at(&mut stored, at + len)?;
    file.seek_to(at + len + 4)?;
    if c != u32::from_le_bytes(stored) {
        return Err(EngineError::Corrupted(format!(
            "{what}: section {name:?} fails its checksum"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_sections_are_read_in_parallel_and_still_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.trimem");
        let faults = Arc::new(Faults::default());
        let big: Vec<f32> = (0..20_000_000u32)
            .map(|i| (i % 9973) as f32 * 0.5)
            .collect();
        let mut w = Writer::create(&path, 7, &faults).unwrap();
        w.section("small", Part::Bytes(b"abc")).unwrap();
        w.section("big", Part::F32(&big)).unwrap();
        w.section("after", Part::U32(&[1, 2, 3])).unwrap();
        w.finish().unwrap();
        let (g, sections) = read(&path, &faults).unwrap();
        assert_eq!(g, 7);
        let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["small", "big", "after"]);
        match &sections[1].1 {
            Body::F32(v) => assert!(v == &big),
            _ => panic!("wrong kind"),
        }
        match &sections[2].1 {
            Body::U32(v) => assert_eq!(v, &[1, 2, 3]),
            _ => panic!("wrong kind"),
        }
        // A flip late in the big section (a later reader thread's part) is caught.
        let mut data = std::fs::read(&path).unwrap();
        let at = data.len() - 1000;
        data[at - 60_000_000] ^= 4;
        std::fs::write(&path, &data).unwrap();
        assert!(matches!(
            read(&path, &faults),
            Err(EngineError::Corrupted(_))
        ));
    }
}
