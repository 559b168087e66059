//! Byte encoding for store files: little-endian scalars, length-prefixed strings and raw
//! arrays. The decoder trusts nothing: every length is checked against the bytes left, so a
//! damaged or hostile file gives an error, never a panic or a huge allocation.

use crate::error::{EngineError, Result};

#[cfg(target_endian = "big")]
compile_error!("trimem store files are little-endian; big-endian targets are not supported");

/// CRC32C (Castagnoli), hardware-accelerated where the CPU has it.
pub fn crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Continues a CRC32C over more bytes.
pub fn crc_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// Raw bytes of plain numbers (`f32`, `u32`: no padding, every bit pattern valid).
pub fn bytes_of<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `Plain` types have no padding and any byte pattern is a valid value.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// Mutable raw bytes of plain numbers, to read a file section straight into its final array.
pub fn bytes_of_mut<T: Plain>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as above; writing arbitrary bytes yields valid values.
    unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values))
    }
}

/// Numbers whose every bit pattern is a valid value.
///
/// # Safety
/// Implement only for types without padding or invalid bit patterns.
pub unsafe trait Plain: Copy + Default {}
unsafe impl Plain for f32 {}
unsafe impl Plain for u32 {}
unsafe impl Plain for u8 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for i64 {}

#[derive(Default)]
pub struct Enc {
    pub buf: Vec<u8>,
}

impl Enc {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f32(&mut self, v: f32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Length (u32) then the bytes.
    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
    }
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    /// Unsigned LEB128: small numbers (posting gaps, term frequencies) in one byte.
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    /// Count (u64) then the raw array.
    pub fn array<T: Plain>(&mut self, v: &[T]) {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(bytes_of(v));
    }
}

pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'a str,
}

impl<'a> Dec<'a> {
    /// `what` names the file part in error messages.
    pub fn new(buf: &'a [u8], what: &'a str) -> Self {
        Dec { buf, pos: 0, what }
    }

    pub fn error(&self, reason: impl std::fmt::Display) -> EngineError {
        EngineError::Corrupted(format!("{} at byte {}: {reason}", self.what, self.pos))
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.error(format!("{} unexpected trailing bytes", self.remaining())));
        }
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!("needs {n} bytes, {} left", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.error(format!("bad boolean {b}"))),
        }
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.fixed()?))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.fixed()?))
    }
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.fixed()?))
    }
    pub fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.fixed()?))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<&'a str> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|e| self.error(format!("invalid UTF-8: {e}")))
    }
    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.error("varint longer than 10 bytes"))
    }
    /// A count of items, each at least `min_item_bytes` long: checked against what is left so
    /// a damaged count cannot trigger a huge allocation.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize> {
        let n = self.u64()?;
        if n > (self.remaining() / min_item_bytes.max(1)) as u64 {
            return Err(self.error(format!("count {n} exceeds the bytes left")));
        }
        Ok(n as usize)
    }
    pub fn array<T: Plain>(&mut self) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        let n = self.count(size)?;
        let raw = self.take(n * size)?;
        let mut out = vec![T::default(); n];
        bytes_of_mut(&mut out).copy_from_slice(raw);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let mut e = Enc::default();
        e.u32(7);
        e.str("héllo");
        e.varint(300);
        e.array(&[1.5f32, -2.0]);
        e.i64(-5);
        let mut d = Dec::new(&e.buf, "test");
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.str().unwrap(), "héllo");
        assert_eq!(d.varint().unwrap(), 300);
        assert_eq!(d.array::<f32>().unwrap(), vec![1.5, -2.0]);
        assert_eq!(d.i64().unwrap(), -5);
        d.finish().unwrap();
        // Every truncation fails cleanly.
        for cut in 0..e.buf.len() {
            let mut d = Dec::new(&e.buf[..cut], "test");
            let r = (|| -> Result<()> {
                d.u32()?;
                d.str()?;
                d.varint()?;
                d.array::<f32>()?;
                d.i64()?;
                Ok(())
            })();
            assert!(matches!(r, Err(EngineError::Corrupted(_))), "cut {cut}");
        }
    }

    #[test]
    fn crc_is_castagnoli() {
        // The standard check value of CRC-32C.
        assert_eq!(crc(b"123456789"), 0xE306_9283);
        assert_eq!(crc_append(crc(b"1234"), b"56789"), 0xE306_9283);
    }
}
