//! The store's file layer. Every write, fsync and truncation of the store goes through
//! [`DataFile`], which can be told to fail ([`Faults`]) so tests exercise full disks, short
//! writes and failing fsyncs exactly where real I/O would fail.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{EngineError, Result, EIO, ENOSPC};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Writes fail with "no space left on device" once the budget is spent (nothing more lands).
    DiskFull,
    /// Once the budget is spent, the next write lands only partly and then fails.
    ShortWrite,
    /// The next fsync fails (as after a lost write-back).
    SyncFails,
}

impl FaultKind {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "disk_full" => Ok(FaultKind::DiskFull),
            "short_write" => Ok(FaultKind::ShortWrite),
            "sync_fails" => Ok(FaultKind::SyncFails),
            _ => Err(EngineError::InvalidArgument(format!(
                "unknown fault {s:?}; expected \"disk_full\", \"short_write\" or \"sync_fails\""
            ))),
        }
    }
}

#[derive(Debug)]
struct Fault {
    kind: FaultKind,
    /// Bytes that may still be written before the fault fires.
    budget: u64,
    /// How many more times it fires after the first.
    repeat: u32,
}

/// Armed failures, shared by every file of one store.
#[derive(Default, Debug)]
pub struct Faults {
    armed: Mutex<Option<Fault>>,
}

impl Faults {
    /// Arms `kind` to fire after `after_bytes` more bytes are written (fsync faults fire on the
    /// next fsync), `times` times in a row.
    #[cfg(feature = "fault-injection")]
    pub fn arm(&self, kind: FaultKind, after_bytes: u64, times: u32) {
        *self.armed.lock() = (times > 0).then_some(Fault {
            kind,
            budget: after_bytes,
            repeat: times - 1,
        });
    }

    #[cfg(feature = "fault-injection")]
    pub fn clear(&self) {
        *self.armed.lock() = None;
    }

    /// How many of `len` bytes a write may put down, and whether it then fails.
    fn on_write(&self, len: usize) -> (usize, Option<FaultKind>) {
        let mut armed = self.armed.lock();
        let Some(f) = armed.as_mut() else {
            return (len, None);
        };
        if f.kind == FaultKind::SyncFails || (len as u64) <= f.budget {
            if f.kind != FaultKind::SyncFails {
                f.budget -= len as u64;
            }
            return (len, None);
        }
        let kind = f.kind;
        let allowed = match kind {
            FaultKind::ShortWrite => (f.budget as usize).max(len / 2).min(len.saturating_sub(1)),
            _ => f.budget as usize,
        };
        Self::consume(&mut armed);
        (allowed, Some(kind))
    }

    fn on_sync(&self) -> bool {
        let mut armed = self.armed.lock();
        if matches!(armed.as_ref(), Some(f) if f.kind == FaultKind::SyncFails) {
            Self::consume(&mut armed);
            return true;
        }
        false
    }

    fn consume(armed: &mut Option<Fault>) {
        match armed {
            Some(f) if f.repeat > 0 => {
                f.repeat -= 1;
                f.budget = 0;
            }
            _ => *armed = None,
        }
    }
}

pub fn io_error(op: &str, path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Io {
        msg: format!("{op} {}: {e}", path.display()),
        errno: e.raw_os_error(),
    }
}

/// The error an injected fault reports: the OS's own error for `errno`, marked as injected.
fn injected_error(op: &str, path: &Path, errno: i32, detail: &str) -> EngineError {
    let os = std::io::Error::from_raw_os_error(errno);
    EngineError::Io {
        msg: format!("{op} {}: {os}{detail} (injected)", path.display()),
        errno: Some(errno),
    }
}

/// One open store file.
pub struct DataFile {
    file: File,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl DataFile {
    /// Creates `path` (failing if it exists).
    pub fn create_new(path: &Path, faults: &Arc<Faults>) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_error("cannot create", path, e))?;
        Ok(DataFile {
            file,
            path: path.to_owned(),
            faults: faults.clone(),
        })
    }

    /// Opens an existing file for reading and appending.
    pub fn open(path: &Path, faults: &Arc<Faults>) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_error("cannot open", path, e))?;
        Ok(DataFile {
            file,
            path: path.to_owned(),
            faults: faults.clone(),
        })
    }

    /// A second handle on the same file (same fault plan), e.g. for a background fsync.
    pub fn try_clone(&self) -> Result<DataFile> {
        Ok(DataFile {
            file: self.try_clone_file()?,
            path: self.path.clone(),
            faults: self.faults.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes all of `buf` at the current position.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let (allowed, fault) = self.faults.on_write(buf.len());
        self.file
            .write_all(&buf[..allowed])
            .map_err(|e| io_error("cannot write", &self.path, e))?;
        self.injected(fault, allowed, buf.len())
    }

    /// The error of an injected write fault that let `allowed` of `len` bytes land.
    fn injected(&self, fault: Option<FaultKind>, allowed: usize, len: usize) -> Result<()> {
        match fault {
            None => Ok(()),
            Some(FaultKind::ShortWrite) => Err(injected_error(
                "cannot write",
                &self.path,
                ENOSPC,
                &format!(", short write: {allowed} of {len} bytes"),
            )),
            Some(_) => Err(injected_error("cannot write", &self.path, ENOSPC, "")),
        }
    }

    /// Writes all of `buf` at `offset` (the cursor does not move).
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let (allowed, fault) = self.faults.on_write(buf.len());
        self.file
            .write_all_at(&buf[..allowed], offset)
            .map_err(|e| io_error("cannot write", &self.path, e))?;
        self.injected(fault, allowed, buf.len())
    }

    /// Writes zeros over `[from, to)`. Outside the injected fault plan, like [`DataFile::set_len`]:
    /// it prepares or undoes, it never writes data, and faults stay armed for the writes they
    /// were meant for.
    pub fn write_zeros(&self, from: u64, to: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        static BLOCK: [u8; 64 << 10] = [0; 64 << 10];
        let mut at = from;
        while at < to {
            let n = ((to - at) as usize).min(BLOCK.len());
            self.file
                .write_all_at(&BLOCK[..n], at)
                .map_err(|e| io_error("cannot write", &self.path, e))?;
            at += n as u64;
        }
        Ok(())
    }

    /// [`DataFile::write_zeros`], then an fsync also outside the fault plan: space prepared
    /// ahead of writes, whose failure fails no write.
    pub fn preallocate(&self, from: u64, to: u64) -> Result<()> {
        self.write_zeros(from, to)?;
        self.file
            .sync_data()
            .map_err(|e| io_error("cannot fsync", &self.path, e))
    }

    /// fsync of the file's data (and the metadata needed to read it back).
    pub fn sync(&self) -> Result<()> {
        if self.faults.on_sync() {
            return Err(injected_error("cannot fsync", &self.path, EIO, ""));
        }
        self.file
            .sync_data()
            .map_err(|e| io_error("cannot fsync", &self.path, e))
    }

    pub fn set_len(&mut self, len: u64) -> Result<()> {
        self.file
            .set_len(len)
            .map_err(|e| io_error("cannot truncate", &self.path, e))?;
        self.file
            .seek(SeekFrom::Start(len))
            .map_err(|e| io_error("cannot seek", &self.path, e))?;
        Ok(())
    }

    /// The file's size in bytes.
    pub fn size(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| io_error("cannot stat", &self.path, e))?
            .len())
    }

    pub fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact(buf)
            .map_err(|e| io_error("cannot read", &self.path, e))
    }

    /// Reads exactly `buf.len()` bytes at `offset` (does not move the cursor; usable from
    /// several threads at once).
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| io_error("cannot read", &self.path, e))
    }

    pub fn seek_to(&mut self, offset: u64) -> Result<()> {
        self.file
            .seek(SeekFrom::Start(offset))
            .map(|_| ())
            .map_err(|e| io_error("cannot seek", &self.path, e))
    }

    pub fn read_all(&mut self) -> Result<Vec<u8>> {
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| io_error("cannot seek", &self.path, e))?;
        let mut out = Vec::new();
        self.file
            .read_to_end(&mut out)
            .map_err(|e| io_error("cannot read", &self.path, e))?;
        Ok(out)
    }

    /// A second handle on the same file, for the background flusher's fsyncs.
    pub fn try_clone_file(&self) -> Result<File> {
        self.file
            .try_clone()
            .map_err(|e| io_error("cannot duplicate handle of", &self.path, e))
    }
}

/// fsync of a directory, so a created, renamed or removed entry survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("cannot fsync folder", dir, e))
}

pub fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| io_error("cannot rename", from, e))
}

pub fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io_error("cannot remove", path, e))
        }
        _ => Ok(()),
    }
}
