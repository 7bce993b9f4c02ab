//! `retain_freed_memory` in a process of its own (it is process-wide) and on the main
//! thread (no test harness): a freed 64 MiB buffer is reused by the next allocation of that
//! size, already mapped, so writing it again takes no page faults. Without it glibc unmaps
//! such a buffer on free and the next one faults in fresh pages (measured first, for
//! contrast).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn minor_faults() -> i64 {
    use std::ffi::c_int;
    #[repr(C)]
    struct Rusage {
        utime: [i64; 2],
        stime: [i64; 2],
        maxrss: i64,
        ixrss: i64,
        idrss: i64,
        isrss: i64,
        minflt: i64,
        rest: [i64; 9],
    }
    extern "C" {
        fn getrusage(who: c_int, usage: *mut Rusage) -> c_int;
    }
    let mut u = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        ixrss: 0,
        idrss: 0,
        isrss: 0,
        minflt: 0,
        rest: [0; 9],
    };
    // SAFETY: `u` is a `struct rusage` (16 longs after two timevals) that getrusage fills.
    let rc = unsafe { getrusage(0, &mut u) };
    assert_eq!(rc, 0, "getrusage failed");
    u.minflt
}

/// Page faults taken while allocating and writing a 64 MiB buffer for the second time.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn faults_of_second_buffer() -> i64 {
    const N: usize = 16 << 20;
    let first = vec![1.0f32; N];
    std::hint::black_box(&first);
    drop(first);
    let before = minor_faults();
    let second = vec![2.0f32; N];
    std::hint::black_box(&second);
    minor_faults() - before
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    let fresh = faults_of_second_buffer();
    assert!(
        kiln_interp::retain_freed_memory(),
        "glibc refused the thresholds"
    );
    // The first buffer after the call may still be an `mmap` one; from then on they reuse.
    faults_of_second_buffer();
    let reused = faults_of_second_buffer();
    println!("page faults writing a second 64 MiB buffer: {fresh} before, {reused} after");
    assert!(
        fresh >= 32,
        "expected fresh pages before the call, saw {fresh} faults"
    );
    assert!(
        reused <= 4,
        "expected the freed buffer reused, saw {reused} faults"
    );
    println!("test freed_large_buffers_are_reused_without_page_faults ... ok");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    assert!(!kiln_interp::retain_freed_memory());
    println!("skipped: retain_freed_memory acts on glibc only");
}
