//! Where a transcript's lines are written: the trait both stores' writers
//! keep, and the file writer (the database's is beside its store).

use super::{TranscriptError, io};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Where a transcript's lines go.
pub(super) trait LineTarget: Send {
    /// Appends whole lines (each ending in `\n`), in order. On an error,
    /// the lines before the one that failed are kept whole and nothing of
    /// the rest is.
    fn append(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()>;

    /// Makes what was appended durable.
    fn sync(&mut self) -> std::io::Result<()>;
}

/// A transcript file, appended to in one write per line, and locked
/// (`flock`, exclusive) for as long as it is written: a second writer —
/// another process, or another session of this one — is refused.
pub(super) struct FileTarget {
    pub(super) file: Flock<File>,
    /// How long the file is: where a line that fails half-written is cut
    /// back to, so the file always ends on a whole line.
    pub(super) len: u64,
}

impl LineTarget for FileTarget {
    fn append(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        lines.iter().try_for_each(|line| self.write_line(line))
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

impl FileTarget {
    /// Locks `file` for this writer; `InUse` when another holds it.
    pub(super) fn lease(file: File, path: &Path, id: &str) -> Result<Self, TranscriptError> {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(file) => Ok(Self { file, len: 0 }),
            Err((_, Errno::EWOULDBLOCK)) => Err(TranscriptError::InUse(id.to_string())),
            Err((_, errno)) => Err(io(path)(errno.into())),
        }
    }

    /// Writes one whole line at the end of the file. When the write fails
    /// part-way — a disk that fills mid-line writes what fits — the part
    /// is cut off again: a reader then finds the file ending on the last
    /// line that was written whole, not on a torn one.
    fn write_line(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self.file.write_all(bytes) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                if let Err(cut) = self.file.set_len(self.len) {
                    tracing::warn!("cutting a half-written transcript line off failed: {cut}");
                }
                Err(e)
            }
        }
    }
}
