//! The async runtime every entry point (a CLI command, the board, a stdio role, the
//! bench) runs on: one builder, so they all get the same threads and drivers.

/// A multi-threaded tokio runtime with every driver (time, I/O, signals) enabled.
pub fn multi_thread() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}
