//! What the engine reports about the host it runs on (`envi`, the metrics' file descriptors):
//! read by the runtime (runtime/host.rs), never by the engine — the facts that do not change
//! at startup, the rest afresh with each input that reports them (a four-letter word, an
//! admin query).

/// Facts that do not change while the server runs.
#[derive(Clone, Debug)]
pub struct HostInfo {
    /// The kernel release (`uname -r`), as Java's `os.version`.
    pub os_release: String,
    /// The effective user's name and home directory (Java's user.name, user.home).
    pub user: String,
    pub home: String,
    pub tmp_dir: String,
    /// The working directory (Java's user.dir).
    pub cwd: String,
}

impl Default for HostInfo {
    fn default() -> Self {
        let na = || "<NA>".to_string();
        HostInfo {
            os_release: na(),
            user: na(),
            home: na(),
            tmp_dir: String::new(),
            cwd: String::new(),
        }
    }
}

/// Facts read afresh for the input that reports them.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostProbe {
    /// (open, maximum) file descriptors of this process; None where unknown.
    pub fds: Option<(i64, i64)>,
    /// (this process's resident size, the machine's memory, the memory available), in MB
    /// (zeros where unknown).
    pub memory_mb: (u64, u64, u64),
}

/// Work the engine asks of the runtime, off the core thread.
#[derive(Debug)]
pub enum HostTask {
    /// `dirs`: the bytes in these directories, written to the connection, which then closes
    /// (a walk of the file system: never on the core thread).
    DirSizes {
        out: super::OutTx,
        data_dir: String,
        log_dir: String,
    },
}
