//! Opens a snapshot: maps the file and validates all of it (header, every block crc, the
//! chain, the trailer and its counts, every item and reference) before handing out a
//! [`Snapshot`]. Iterating afterwards cannot fail, so recovery never meets a half-good file.

use crate::cursor::Cursor;
use crate::error::SnapError;
use crate::format::{self, Chain, FormatError, Trailer, HEADER_LEN, KIND_ITEMS};
use crate::item::{decode, Item};
use crate::validate::Validator;
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A validated snapshot, memory-mapped. Items borrow from the map.
pub struct Snapshot {
    path: PathBuf,
    map: Mmap,
    start_zxid: i64,
    identity: Option<u64>,
    trailer: Trailer,
    /// Payload ranges of the items blocks, in file order.
    blocks: Vec<Range<usize>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("path", &self.path)
            .field("start_zxid", &self.start_zxid)
            .field("trailer", &self.trailer)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

impl Snapshot {
    /// Maps and validates the whole file. Any damage is [`SnapError::Corrupt`] with the
    /// offset where it was found; a newer format is [`SnapError::Version`]. If the file name
    /// is a snapshot name, its zxid must match the header's (retention and log purging trust
    /// the name).
    pub fn open(path: &Path) -> Result<Snapshot, SnapError> {
        let file = File::open(path).map_err(SnapError::io(path))?;
        let len = file.metadata().map_err(SnapError::io(path))?.len();
        let corrupt = |offset: u64, reason: String| SnapError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        if len < HEADER_LEN as u64 {
            // Also keeps empty files away from mmap.
            return Err(corrupt(
                len,
                format!("the file is {len} bytes, shorter than the {HEADER_LEN}-byte header"),
            ));
        }
        // SAFETY: snapshot files are written once under a .tmp name and never modified after
        // the rename; nothing in Palisade truncates or rewrites them in place. (Another
        // process truncating the file while mapped would fault; that is outside the model.)
        // No populate(): prefaulting 150 MB measured slower than letting the crc pass fault
        // it in (the kernel maps cached pages around each fault).
        #[allow(unsafe_code)]
        let map = unsafe { MmapOptions::new().map(&file) }.map_err(SnapError::io(path))?;
        let scanned = scan(&map).map_err(|e| match e {
            FormatError::Corrupt { offset, reason } => corrupt(offset, reason),
            FormatError::Version { found } => SnapError::Version {
                path: path.to_path_buf(),
                found,
            },
        })?;
        let named = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(format::parse_file_name);
        if let Some(named) = named.filter(|&z| z != scanned.start_zxid) {
            return Err(corrupt(
                8,
                format!(
                    "header start zxid {:#x} does not match the file name's {named:#x}",
                    scanned.start_zxid
                ),
            ));
        }
        Ok(Snapshot {
            path: path.to_path_buf(),
            map,
            start_zxid: scanned.start_zxid,
            identity: scanned.identity,
            trailer: scanned.trailer,
            blocks: scanned.blocks,
        })
    }

    /// The data-dir identity in the header; None for a version-1 file (earlier builds).
    pub fn identity(&self) -> Option<u64> {
        self.identity
    }

    /// The last zxid applied when the capture started; replay the log from the next one.
    pub fn start_zxid(&self) -> i64 {
        self.start_zxid
    }

    pub fn trailer(&self) -> &Trailer {
        &self.trailer
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of items blocks.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// The items in file order. Infallible: `open` decoded and checked every one of them.
    pub fn items(&self) -> Items<'_> {
        Items {
            map: &self.map,
            blocks: self.blocks.iter(),
            cur: Cursor::new(&[]),
        }
    }
}

/// What a successful scan learned.
pub(crate) struct Scanned {
    pub start_zxid: i64,
    pub identity: Option<u64>,
    pub trailer: Trailer,
    pub blocks: Vec<Range<usize>>,
}

/// Validates a whole snapshot image. Each block is checked (crc) and then decoded while it
/// is still in cache, so the file is read from memory once.
pub(crate) fn scan(file: &[u8]) -> Result<Scanned, FormatError> {
    let header = format::decode_header(file)?;
    let start_zxid = header.start_zxid;
    let mut check = Validator::default();
    let mut chain = Chain::new();
    let mut blocks = Vec::new();
    let mut offset = HEADER_LEN;
    loop {
        let Some(block) = format::read_block(file, offset)? else {
            return Err(format::corrupt(
                offset,
                "no trailer: the file ends after the last items block",
            ));
        };
        let payload_at = offset.saturating_add(format::BLOCK_HEADER_LEN);
        let end = payload_at.saturating_add(block.payload.len());
        if block.kind == KIND_ITEMS {
            check
                .block(block.payload)
                .map_err(|(at, reason)| format::corrupt(payload_at.saturating_add(at), reason))?;
            chain.push(block.crc);
            blocks.push(payload_at..end);
            offset = end;
            continue;
        }
        let t = format::decode_trailer(block.payload, offset)?;
        if end != file.len() {
            return Err(format::corrupt(
                end,
                format!("{} bytes after the trailer", file.len().saturating_sub(end)),
            ));
        }
        check
            .trailer(&t, chain.value(), start_zxid)
            .map_err(|reason| format::corrupt(offset, reason))?;
        return Ok(Scanned {
            start_zxid,
            identity: header.identity,
            trailer: t.trailer,
            blocks,
        });
    }
}

/// Iterator over a validated snapshot's items.
pub struct Items<'a> {
    map: &'a [u8],
    blocks: std::slice::Iter<'a, Range<usize>>,
    cur: Cursor<'a>,
}

impl<'a> Iterator for Items<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        while self.cur.is_empty() {
            let range = self.blocks.next()?;
            self.cur = Cursor::new(self.map.get(range.clone()).unwrap_or_default());
        }
        match decode(&mut self.cur) {
            Ok(item) => Some(item),
            Err(reason) => {
                // Unreachable: open() decoded these very bytes. Stop rather than panic.
                tracing::error!(reason, "snapshot item failed to decode after validation");
                self.blocks = [].iter();
                self.cur = Cursor::new(&[]);
                None
            }
        }
    }
}

impl std::iter::FusedIterator for Items<'_> {}
