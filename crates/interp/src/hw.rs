//! Hardware-specific speedups that change no result.
//!
//! - [`with_simd`] runs a kernel compiled for AVX2 and FMA when the CPU has them. The
//!   default x86-64 target has neither, so without this every `mul_add` in kiln-math would
//!   be a libm call and every loop 128 bits wide. Rust never contracts `a*b+c` on its own
//!   and IEEE operations round the same at every vector width, so both versions return
//!   identical bits; only the speed differs. Everything the loop calls must be inlined into
//!   it: a closure with a large body (`sin`, `pow`) that LLVM leaves out of line is compiled
//!   for the baseline target and called per element (`elementwise.rs`'s `inlined!`).
//! - [`zeroed`] and [`with_capacity_advised`] allocate output buffers; large ones are
//!   advised onto transparent huge pages (as numpy does), which removes most of the
//!   page-fault cost of touching fresh memory. Outputs whose every element a loop writes
//!   (the elementwise maps, `par::collect`) are not cleared first: a recycled block would
//!   cost a `memset` (a quarter of a fallback `exp` loop's time before this).
//! - [`retain_freed_memory`] (opt-in, process-wide) keeps freed large buffers in the process,
//!   so the next call's outputs reuse them instead of fresh pages the kernel must clear.

/// Outputs at least this large (in bytes) are advised onto huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Whether `with_simd` runs its AVX2 and FMA version on this CPU (256-bit vectors).
#[inline]
pub fn wide_simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU can run `with_simd`'s 512-bit version (AVX-512 F, VL, DQ and BW, with
/// AVX2 and FMA), which [`with_512_bit_vectors`] asks for.
#[inline]
pub fn widest_simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // Exactly the features of `kiln_math::F32x8` (`ymm.rs`'s 256-bit loops).
        kiln_math::F32x8::new().is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

thread_local! {
    /// Set by [`with_512_bit_vectors`] for the duration of its closure.
    static PREFER_512: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside [`with_512_bit_vectors`].
pub fn prefers_512_bit_vectors() -> bool {
    PREFER_512.with(|p| p.get())
}

/// Runs `f` with this thread's `with_simd` loops compiled 512 bits wide where the CPU has
/// AVX-512 ([`widest_simd`]), else as usual: what `--xla_cpu_prefer_vector_width=512` asks
/// of compiled kernels' block math. The operations are the same IEEE ones at every width,
/// so the bits are too; only the speed differs.
pub fn with_512_bit_vectors<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the previous setting, also when `f` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PREFER_512.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PREFER_512.with(|p| p.replace(true)));
    f()
}

/// Runs `f`, compiled with AVX2 and FMA enabled where the CPU supports them (and AVX-512
/// inside [`with_512_bit_vectors`] on a CPU with it).
///
/// `f` is inlined into a function compiled for those features, so the loops it contains are
/// vectorised for them; a small closure that calls an `#[inline(always)]` kernel is enough.
/// `f` has three callers here, so LLVM would keep a large one out of line — compiled for the
/// baseline target, with a library call per `mul_add` — unless it is `#[inline(always)]`
/// itself: the crate therefore calls this only through [`simd!`], which marks it so.
#[inline(always)]
pub(crate) fn with_simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if wide_simd() {
            if prefers_512_bit_vectors() && widest_simd() {
                // SAFETY: the CPU supports the features `avx512` is compiled for.
                return unsafe { avx512(f) };
            }
            // SAFETY: the CPU supports the features `avx2_fma` is compiled for.
            return unsafe { avx2_fma(f) };
        }
    }
    f()
}

/// [`with_simd`] of `|| $body` as an `#[inline(always)]` closure, which every caller's must
/// be; the crate calls `with_simd` only through this.
macro_rules! simd {
    ($body:expr) => {
        $crate::hw::with_simd(
            #[inline(always)]
            || $body,
        )
    };
}
pub(crate) use simd;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_fma<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// A vector of `n` default (zero) values, on huge pages when large.
///
/// Fresh large allocations come from the OS untouched (`vec![0; n]` maps zero pages without
/// writing them), so advising them before the kernel writes makes those writes fault in
/// 2 MiB pages instead of 4 KiB ones.
pub(crate) fn zeroed<T: Default + Clone>(n: usize) -> Vec<T> {
    let v = vec![T::default(); n];
    if n * std::mem::size_of::<T>() >= HUGE_PAGE_MIN_BYTES {
        advise_huge_pages(&v);
    }
    v
}

/// An empty vector with room for `len` elements, advised onto huge pages like [`zeroed`]
/// when large: for outputs whose every element is written before use, which need no
/// clearing pass (a recycled block would otherwise cost a `memset`).
pub(crate) fn with_capacity_advised<T>(len: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(len);
    let bytes = len * std::mem::size_of::<T>();
    if bytes >= HUGE_PAGE_MIN_BYTES {
        advise_huge_pages_raw(v.as_ptr() as *const u8, bytes);
    }
    v
}

/// Allocations from this size up are tried by [`check_allocation`]; smaller ones are not
/// worth a system call.
const CHECKED_ALLOCATION_MIN_BYTES: usize = 64 << 20;

/// Whether `bytes` can be allocated now; `Err` carries the byte count.
///
/// Rust's own allocations (`vec!`, `Vec::with_capacity`) abort the process when the
/// allocator refuses, which a result of `f32[2,1000000000000]` or a program's 64 GiB
/// parameter makes it do. Callers about to allocate a large result ask this first, so the
/// user gets an error naming the value instead of an abort: it reserves `bytes` (for a
/// large block, address space the kernel has not yet backed with pages) and frees them
/// again. Like TensorFlow's `RESOURCE_EXHAUSTED`, this catches what the machine can never
/// hold; memory that runs out later, while pages are being written, is the kernel's
/// out-of-memory handling, as for any process.
pub fn check_allocation(bytes: usize) -> Result<(), usize> {
    if bytes < CHECKED_ALLOCATION_MIN_BYTES {
        return Ok(());
    }
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| bytes)
}

/// A zero-filled buffer of `len` elements of `dtype`, allocated like `zeroed`.
pub fn zeroed_buffer(dtype: kiln_ir::DType, len: usize) -> kiln_ir::Buffer {
    use kiln_ir::{Buffer, DType};
    match dtype {
        DType::F32 => Buffer::F32(zeroed(len).into()),
        DType::F64 => Buffer::F64(zeroed(len).into()),
        DType::I32 => Buffer::I32(zeroed(len).into()),
        DType::I64 => Buffer::I64(zeroed(len).into()),
        DType::U32 => Buffer::U32(zeroed(len).into()),
        DType::U64 => Buffer::U64(zeroed(len).into()),
        DType::I8 => Buffer::I8(zeroed(len).into()),
        DType::U8 => Buffer::U8(zeroed(len).into()),
        DType::I16 => Buffer::I16(zeroed(len).into()),
        DType::U16 => Buffer::U16(zeroed(len).into()),
        DType::Bool => Buffer::Bool(zeroed(len).into()),
        DType::F16 => Buffer::F16(zeroed(len).into()),
        DType::Bf16 => Buffer::Bf16(zeroed(len).into()),
    }
}

/// Buffers of the given dtypes and lengths whose contents are written by `fill`, without
/// clearing them first (large ones advised onto huge pages like `zeroed`). `fill`
/// receives the start of each allocation, in order.
///
/// # Safety
/// `fill` must initialise every element of every buffer with a valid value of its dtype
/// (0 or 1 for bool) before returning.
pub unsafe fn filled_buffers(
    specs: &[(kiln_ir::DType, usize)],
    fill: impl FnOnce(&[*mut u8]),
) -> Vec<kiln_ir::Buffer> {
    use kiln_ir::{Buffer, DType};
    let mut bufs: Vec<Buffer> = specs
        .iter()
        .map(|&(dtype, len)| match dtype {
            DType::F32 => Buffer::F32(with_capacity_advised(len).into()),
            DType::F64 => Buffer::F64(with_capacity_advised(len).into()),
            DType::I32 => Buffer::I32(with_capacity_advised(len).into()),
            DType::I64 => Buffer::I64(with_capacity_advised(len).into()),
            DType::U32 => Buffer::U32(with_capacity_advised(len).into()),
            DType::U64 => Buffer::U64(with_capacity_advised(len).into()),
            DType::I8 => Buffer::I8(with_capacity_advised(len).into()),
            DType::U8 => Buffer::U8(with_capacity_advised(len).into()),
            DType::I16 => Buffer::I16(with_capacity_advised(len).into()),
            DType::U16 => Buffer::U16(with_capacity_advised(len).into()),
            DType::Bool => Buffer::Bool(with_capacity_advised(len).into()),
            DType::F16 => Buffer::F16(with_capacity_advised(len).into()),
            DType::Bf16 => Buffer::Bf16(with_capacity_advised(len).into()),
        })
        .collect();
    let ptrs: Vec<*mut u8> = bufs
        .iter_mut()
        .map(|b| match b {
            Buffer::F32(v) => v.as_mut_ptr() as *mut u8,
            Buffer::F64(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I32(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I64(v) => v.as_mut_ptr() as *mut u8,
            Buffer::U32(v) => v.as_mut_ptr() as *mut u8,
            Buffer::U64(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I8(v) => v.as_mut_ptr() as *mut u8,
            Buffer::U8(v) => v.as_mut_ptr(),
            Buffer::I16(v) => v.as_mut_ptr() as *mut u8,
            Buffer::U16(v) => v.as_mut_ptr() as *mut u8,
            Buffer::Bool(v) => v.as_mut_ptr() as *mut u8,
            Buffer::F16(v) => v.as_mut_ptr() as *mut u8,
            Buffer::Bf16(v) => v.as_mut_ptr() as *mut u8,
        })
        .collect();
    fill(&ptrs);
    for (b, &(_, len)) in bufs.iter_mut().zip(specs) {
        // SAFETY: the caller's `fill` initialised all `len` elements (capacity is `len`).
        unsafe {
            match b {
                Buffer::F32(v) => v.make_mut().set_len(len),
                Buffer::F64(v) => v.make_mut().set_len(len),
                Buffer::I32(v) => v.make_mut().set_len(len),
                Buffer::I64(v) => v.make_mut().set_len(len),
                Buffer::U32(v) => v.make_mut().set_len(len),
                Buffer::U64(v) => v.make_mut().set_len(len),
                Buffer::I8(v) => v.make_mut().set_len(len),
                Buffer::U8(v) => v.make_mut().set_len(len),
                Buffer::I16(v) => v.make_mut().set_len(len),
                Buffer::U16(v) => v.make_mut().set_len(len),
                Buffer::Bool(v) => v.make_mut().set_len(len),
                Buffer::F16(v) => v.make_mut().set_len(len),
                Buffer::Bf16(v) => v.make_mut().set_len(len),
            }
        }
    }
    bufs
}

/// A copy of `b` in a buffer allocated like [`with_capacity_advised`] (one pass: the copy).
pub(crate) fn copy_buffer(b: &kiln_ir::Buffer) -> kiln_ir::Buffer {
    fn copy<T: Copy>(v: &[T]) -> Vec<T> {
        let mut out = with_capacity_advised(v.len());
        out.extend_from_slice(v);
        out
    }
    use kiln_ir::Buffer;
    match b {
        Buffer::F32(v) => Buffer::F32(copy(v).into()),
        Buffer::F64(v) => Buffer::F64(copy(v).into()),
        Buffer::I32(v) => Buffer::I32(copy(v).into()),
        Buffer::I64(v) => Buffer::I64(copy(v).into()),
        Buffer::U32(v) => Buffer::U32(copy(v).into()),
        Buffer::U64(v) => Buffer::U64(copy(v).into()),
        Buffer::I8(v) => Buffer::I8(copy(v).into()),
        Buffer::U8(v) => Buffer::U8(copy(v).into()),
        Buffer::I16(v) => Buffer::I16(copy(v).into()),
        Buffer::U16(v) => Buffer::U16(copy(v).into()),
        Buffer::Bool(v) => Buffer::Bool(copy(v).into()),
        Buffer::F16(v) => Buffer::F16(copy(v).into()),
        Buffer::Bf16(v) => Buffer::Bf16(copy(v).into()),
    }
}

/// Makes the C allocator keep freed memory for reuse instead of returning large blocks to
/// the operating system; returns whether it took effect (glibc on Linux only).
///
/// By default glibc serves every allocation of 32 MiB or more (a 16M-element f32 tensor is
/// 64 MiB) with its own `mmap` and unmaps it on free, so each call's output lands on fresh
/// pages that the kernel must fault in and clear: about a fifth of a 16M-element GELU's
/// time on a 2-core machine. This raises glibc's mmap and trim thresholds to 2 GiB (what
/// `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=…:glibc.malloc.trim_threshold=…` does), so
/// freed blocks stay in the heap and the next allocation of that size reuses them, already
/// mapped — what a pooling allocator (TensorFlow's BFC) achieves.
///
/// - Cost: the process keeps its peak heap instead of shrinking after large frees.
/// - Reach: every block made on the main thread; on other threads, blocks below 64 MiB
///   (glibc's per-thread arenas still map larger ones on their own).
/// - Process-wide, so it is the application's choice: the `kiln` binary makes it at
///   start-up; the library never does.
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        // glibc's <malloc.h>.
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        // SAFETY: mallopt only adjusts allocator parameters; it returns 0 for a value this
        // glibc does not accept (older ones cap the mmap threshold at 32 MiB) and changes
        // nothing then.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, c_int::MAX) == 1 && mallopt(M_TRIM_THRESHOLD, c_int::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn advise_huge_pages_raw(ptr: *const u8, bytes: usize) {
    use std::ffi::{c_int, c_void};
    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    const MADV_HUGEPAGE: c_int = 14;
    const PAGE: usize = 4096;
    let start = ptr as usize;
    let aligned = start & !(PAGE - 1);
    let len = bytes + (start - aligned);
    // SAFETY: MADV_HUGEPAGE is advice: it sets a flag on the mapping and never changes the
    // contents of memory. The range is mapped (it covers our live allocation, extended down
    // to its page boundary). Failure (e.g. THP disabled) is harmless and ignored.
    unsafe {
        madvise(aligned as *mut c_void, len, MADV_HUGEPAGE);
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn advise_huge_pages_raw(_ptr: *const u8, _bytes: usize) {}

fn advise_huge_pages<T>(v: &[T]) {
    advise_huge_pages_raw(v.as_ptr() as *const u8, std::mem::size_of_val(v));
}
