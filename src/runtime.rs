//! The async runtime every entry point (a CLI command, the board, a stdio role, the
//! bench) runs on: one builder, so they all get the same threads and drivers.

/// A multi-threaded tokio runtime with every driver (time, I/O, signals) enabled.
pub fn multi_thread() -> std::io::Result<tokio::runtime::Runtime> {
    bound_malloc_arenas();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// Cap glibc's malloc arenas at one per core. Store calls run on tokio's blocking
/// pool, so a host driving many units at once spreads its allocations over as many
/// threads; glibc's default (eight arenas per core) gives each of them an arena of
/// its own whose touched pages stay resident, which costs a host more memory per
/// unit than the unit itself needs. One arena per core keeps allocation uncontended
/// on the threads that actually run at once.
fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only adjusts allocator tunables; M_ARENA_MAX bounds arenas
        // created from now on and leaves existing allocations untouched.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
