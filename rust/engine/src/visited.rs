//! Visited sets for graph search, reused across queries (hnswlib's trick): each list stores a
//! generation tag per slot, so "clearing" it is one increment instead of a memset.

use parking_lot::Mutex;

pub struct VisitedList {
    tags: Vec<u16>,
    current: u16,
}

impl VisitedList {
    fn new(capacity: usize) -> Self {
        VisitedList {
            tags: vec![0; capacity],
            current: 1,
        }
    }

    /// Starts a new search over `capacity` slots.
    pub fn reset(&mut self, capacity: usize) {
        if self.tags.len() < capacity {
            self.tags.resize(capacity, 0);
        }
        self.current = self.current.wrapping_add(1);
        if self.current == 0 {
            // The tag wrapped: old tags could collide with the new one, so clear for real.
            self.tags.fill(0);
            self.current = 1;
        }
    }

    #[inline(always)]
    pub fn is_marked(&self, slot: u32) -> bool {
        self.tags[slot as usize] == self.current
    }

    /// Marks `slot`; returns whether it was already marked in this search.
    #[inline(always)]
    pub fn check_and_mark(&mut self, slot: u32) -> bool {
        let tag = &mut self.tags[slot as usize];
        let seen = *tag == self.current;
        *tag = self.current;
        seen
    }
}

/// A pool of visited lists shared by concurrent searches.
#[derive(Default)]
pub struct VisitedPool {
    free: Mutex<Vec<VisitedList>>,
}

impl VisitedPool {
    pub fn get(&self, capacity: usize) -> VisitedList {
        self.free
            .lock()
            .pop()
            .unwrap_or_else(|| VisitedList::new(capacity))
    }

    pub fn put(&self, list: VisitedList) {
        self.free.lock().push(list);
    }
}
