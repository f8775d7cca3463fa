//! Paced writeback for large files written next to a WAL. Written bytes are sent to the disk
//! every [`WRITEBACK_BYTES`], and the writer waits for the window before, so at most two
//! windows are dirty in the page cache at a time. Without it a snapshot of 10M znodes left
//! ~2 GB dirty until the final fsync, and the WAL's fdatasync queued behind that flush for up
//! to a second, so no write was acknowledged meanwhile. The final fsync still makes the file
//! durable; pacing only spreads the writing out.

use std::fs::File;
use std::io::{self, Write};

/// The window: how many written bytes are handed to the disk at a time.
pub const WRITEBACK_BYTES: u64 = 4 << 20;

/// How far a file's writeback has been started and has completed.
#[derive(Debug, Default)]
pub struct Writeback {
    /// File bytes handed to the disk (`sync_file_range`) so far, and those known written.
    started_to: u64,
    written_to: u64,
}

impl Writeback {
    /// Called with the file's length so far (all of it written to the `File`, not buffered):
    /// once a window has accumulated, starts its writeback and waits for the previous one's.
    /// The disk works on one window while the writer fills the next.
    pub fn wrote_to(&mut self, file: &File, end: u64) -> io::Result<()> {
        if !self.due(end) {
            return Ok(());
        }
        let previous = self.started_to;
        range_write_back(file, previous, end)?;
        range_wait(file, self.written_to, previous)?;
        self.written_to = previous;
        self.started_to = end;
        Ok(())
    }

    /// Whether a file `end` bytes long has a window's worth not yet handed to the disk.
    pub fn due(&self, end: u64) -> bool {
        end.saturating_sub(self.started_to) >= WRITEBACK_BYTES
    }

    /// Bytes whose writeback to the disk has completed (not yet durable: the file's metadata
    /// waits for its fsync).
    pub fn written_back(&self) -> u64 {
        self.written_to
    }
}

/// Writes `parts` one after the other to `file` (from offset 0), paced by [`Writeback`].
/// The caller fsyncs after.
pub fn write_paced(file: &mut File, parts: &[&[u8]]) -> io::Result<()> {
    let mut pace = Writeback::default();
    let mut at = 0u64;
    for part in parts {
        for window in part.chunks(WRITEBACK_BYTES as usize) {
            file.write_all(window)?;
            at = at.saturating_add(window.len() as u64);
            pace.wrote_to(file, at)?;
        }
    }
    Ok(())
}

/// Starts writeback of `[from, to)` without waiting for it.
#[cfg(target_os = "linux")]
fn range_write_back(file: &File, from: u64, to: u64) -> io::Result<()> {
    sync_range(file, from, to, libc::SYNC_FILE_RANGE_WRITE)
}

/// Waits until `[from, to)` is written back (starting any part not yet started).
#[cfg(target_os = "linux")]
fn range_wait(file: &File, from: u64, to: u64) -> io::Result<()> {
    sync_range(
        file,
        from,
        to,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    )
}

#[cfg(target_os = "linux")]
fn sync_range(file: &File, from: u64, to: u64, flags: libc::c_uint) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if to <= from {
        return Ok(());
    }
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(from),
        libc::off64_t::try_from(to.saturating_sub(from)),
    ) else {
        return Ok(());
    };
    // SAFETY: a plain syscall on an fd this File owns; no memory is passed.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the final fsync does all the writing.
#[cfg(not(target_os = "linux"))]
fn range_write_back(_: &File, _: u64, _: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn range_wait(_: &File, _: u64, _: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn paced_parts_are_written_whole_and_in_order_and_the_windows_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let big: Vec<u8> = (0..(WRITEBACK_BYTES as usize * 2 + 12_345))
            .map(|i| (i % 251) as u8)
            .collect();
        let parts: [&[u8]; 3] = [b"head", &big, b"crc!"];
        let mut f = File::create(&path).unwrap();
        write_paced(&mut f, &parts).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, parts.concat());

        // The pacer itself: a window is started once it has accumulated, and the one before
        // it is waited for on the next.
        let f = File::options().read(true).write(true).open(&path).unwrap();
        let mut pace = Writeback::default();
        pace.wrote_to(&f, WRITEBACK_BYTES - 1).unwrap();
        assert_eq!(pace.written_back(), 0);
        pace.wrote_to(&f, WRITEBACK_BYTES).unwrap();
        assert_eq!(pace.written_back(), 0);
        pace.wrote_to(&f, 2 * WRITEBACK_BYTES + 5).unwrap();
        assert_eq!(pace.written_back(), WRITEBACK_BYTES);
    }
}
