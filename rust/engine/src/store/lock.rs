//! The store's one-writer rule. An advisory `flock` on `LOCK` keeps other processes out; a
//! registry of the folders this process has open tells a second open in the same process
//! apart from another process, so its error can say which it is.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::fs::io_error;
use crate::error::{EngineError, Result};

fn open_here() -> &'static Mutex<HashSet<PathBuf>> {
    static OPEN: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// The writer's hold on one store folder, released when dropped.
pub struct WriterLock {
    _file: File,
    folder: PathBuf,
}

impl WriterLock {
    /// Takes the folder `dir` (which exists) for writing, through its lock file `lock_path`.
    pub fn take(dir: &Path, lock_path: &Path) -> Result<Self> {
        let folder = dir
            .canonicalize()
            .map_err(|e| io_error("cannot resolve", dir, e))?;
        let locked = |in_process| EngineError::Locked {
            path: dir.display().to_string(),
            in_process,
        };
        let mut open = open_here().lock().unwrap_or_else(|e| e.into_inner());
        if open.contains(&folder) {
            return Err(locked(true));
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)
            .map_err(|e| io_error("cannot open", lock_path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(locked(false)),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(io_error("cannot lock", lock_path, e))
            }
        }
        open.insert(folder.clone());
        Ok(WriterLock {
            _file: file,
            folder,
        })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let mut open = open_here().lock().unwrap_or_else(|e| e.into_inner());
        open.remove(&self.folder);
    }
}
