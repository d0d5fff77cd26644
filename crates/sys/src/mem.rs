//! Page-aligned buffers for the data plane: allocated once per stream or
//! worker, so the kernel copies to and from whole, aligned pages.

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Gives the allocator's free memory back to the system where it can
/// (glibc's `malloc_trim`; elsewhere nothing). glibc gives each thread
/// that allocates an arena of its own (up to eight per core) and keeps
/// what each has grown to: a server whose tests run on threads of their
/// own otherwise holds the high-water mark of every arena between tests.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only walks the allocator's
    // own free lists, under the allocator's locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Alignment of [`AlignedBuf`]: a page.
pub const ALIGN: usize = 4096;

/// A zeroed byte buffer whose start is page-aligned.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only reads, like &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` bytes (at least 1), all zero.
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.max(1);
        let Ok(layout) = Layout::from_size_align(len, ALIGN) else {
            panic!("buffer of {len} bytes is too large");
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        AlignedBuf { ptr, len }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points at `len` initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout (it was valid then).
        unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.len, ALIGN)) };
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_zeroed_and_writable() {
        for len in [0, 1, 1000, 128 * 1024, 128 * 1024 + 3] {
            let mut b = AlignedBuf::new(len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.len(), len.max(1));
            assert!(b.iter().all(|&x| x == 0));
            let n = b.len();
            b[n - 1] = 7;
            assert_eq!(b[n - 1], 7);
        }
    }
}
