//! Transparent huge pages for the big arrays a search reads at random (vectors, graph links).
//!
//! A search touches a few hundred vectors scattered over the whole array; on 4 KiB pages
//! nearly every one is a TLB miss and a page walk. On 2 MiB pages the arrays of a 100k × 384
//! index fit in the TLB (measured: ~20 % off an unfiltered search). Most Linux systems enable
//! huge pages only where asked (`madvise` mode), so we ask; elsewhere this does nothing.

/// Below this an array is too small for huge pages to matter.
const MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back `v`'s whole allocation with huge pages. Only pages not yet touched
/// are affected immediately, so call it before filling the array. Failure is harmless.
pub(crate) fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        unsafe extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (v.as_ptr() as usize + bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside `v`'s allocation; MADV_HUGEPAGE changes how pages
            // are backed, never their contents.
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }
}

/// `v.resize_with(len, fill)`, advising huge pages whenever the allocation grows.
pub(crate) fn resize_with<T>(v: &mut Vec<T>, len: usize, fill: impl FnMut() -> T) {
    if len > v.capacity() {
        v.reserve(len - v.len());
        advise(v);
    }
    v.resize_with(len, fill);
}
