//! The texts and payloads of all records, in one buffer.
//!
//! A boxed string per text and per payload cost two 16-byte pointers and two allocations with
//! their headers (~70 B per record beyond the bytes themselves, ~5 % of a 1M × 384 store's
//! memory); here a record costs one 16-byte span. A removed record's bytes are zeroed at once
//! (forgotten text does not linger in memory) and the buffer is compacted once more of it is
//! dead than alive.

/// Most bytes one text or one payload may hold: a span records their lengths in 32 bits.
pub const MAX_FIELD_BYTES: usize = u32::MAX as usize;

#[derive(Clone, Copy, Default)]
struct Span {
    at: u64,
    text: u32,
    payload: u32,
}

impl Span {
    fn len(self) -> usize {
        self.text as usize + self.payload as usize
    }
}

#[derive(Default)]
pub struct Arena {
    bytes: Vec<u8>,
    spans: Vec<Span>,
    /// Bytes in `bytes` that no span covers any more.
    dead: usize,
    /// Live text and payload bytes.
    text_bytes: usize,
    payload_bytes: usize,
}

impl Arena {
    pub fn with_capacity(slots: usize, bytes: usize) -> Self {
        Arena {
            bytes: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(slots),
            ..Default::default()
        }
    }

    /// Adds an empty slot at the end.
    pub fn push_empty(&mut self) {
        self.spans.push(Span::default());
    }

    /// Stores the text and payload of `slot`, replacing what it held.
    pub fn set(&mut self, slot: usize, text: &str, payload: &[u8]) {
        self.clear(slot);
        let len = |n: usize| u32::try_from(n).expect("texts and payloads are under 4 GiB");
        let span = Span {
            at: self.bytes.len() as u64,
            text: len(text.len()),
            payload: len(payload.len()),
        };
        self.bytes.extend_from_slice(text.as_bytes());
        self.bytes.extend_from_slice(payload);
        self.spans[slot] = span;
        self.text_bytes += text.len();
        self.payload_bytes += payload.len();
    }

    /// Empties `slot`, zeroing its bytes.
    pub fn clear(&mut self, slot: usize) {
        let span = std::mem::take(&mut self.spans[slot]);
        let at = span.at as usize;
        self.bytes[at..at + span.len()].fill(0);
        self.dead += span.len();
        self.text_bytes -= span.text as usize;
        self.payload_bytes -= span.payload as usize;
        if self.dead > (1 << 20) && self.dead > self.bytes.len() - self.dead {
            self.compact();
        }
    }

    pub fn text(&self, slot: usize) -> &str {
        let s = self.spans[slot];
        let bytes = &self.bytes[s.at as usize..s.at as usize + s.text as usize];
        // SAFETY: a span's text bytes are copied from a `&str` in `set` and moved only whole,
        // by `compact`; nothing else writes inside a live span.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    pub fn payload_bytes(&self) -> usize {
        self.payload_bytes
    }

    pub fn payload(&self, slot: usize) -> &[u8] {
        let s = self.spans[slot];
        let start = s.at as usize + s.text as usize;
        &self.bytes[start..start + s.payload as usize]
    }

    fn compact(&mut self) {
        let mut bytes = Vec::with_capacity(self.bytes.len() - self.dead);
        for span in &mut self.spans {
            let at = span.at as usize;
            span.at = bytes.len() as u64;
            bytes.extend_from_slice(&self.bytes[at..at + span.len()]);
        }
        // The old buffer holds only live copies and zeros: it can simply be freed.
        self.bytes = bytes;
        self.dead = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_and_compaction_keep_every_live_slot() {
        let mut a = Arena::default();
        let n = 5000;
        for s in 0..n {
            a.push_empty();
            a.set(s, &format!("text {s} é漢"), &[s as u8; 3]);
        }
        // Remove most, overwrite some: compaction runs along the way.
        for s in (0..n).filter(|s| s % 4 != 0) {
            a.clear(s);
        }
        for s in (0..n).step_by(8) {
            a.set(s, &"x".repeat(400), b"p");
        }
        for s in 0..n {
            match (s % 4, s % 8) {
                (0, 0) => assert_eq!(
                    (a.text(s), a.payload(s)),
                    ("x".repeat(400).as_str(), &b"p"[..])
                ),
                (0, _) => assert_eq!(
                    (a.text(s), a.payload(s)),
                    (format!("text {s} é漢").as_str(), &[s as u8; 3][..])
                ),
                _ => assert_eq!((a.text(s), a.payload(s)), ("", &b""[..])),
            }
        }
        assert!(
            a.dead < a.bytes.len(),
            "compacted: dead {} of {}",
            a.dead,
            a.bytes.len()
        );
        let (texts, payloads): (usize, usize) = (0..n)
            .map(|s| (a.text(s).len(), a.payload(s).len()))
            .fold((0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
        assert_eq!((a.text_bytes(), a.payload_bytes()), (texts, payloads));
        // Cleared bytes are zeros, not the forgotten text.
        let live: usize = a.spans.iter().map(|s| s.len()).sum();
        assert!(a.bytes.iter().filter(|&&b| b != 0).count() <= live);
    }
}
