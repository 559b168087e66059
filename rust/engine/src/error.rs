//! The engine's one error type. The bindings map each variant to one Python exception.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum EngineError {
    /// A vector's length differs from the index dimension.
    Dimension { expected: usize, got: usize },
    /// A vector holds NaN or an infinity (`row` is its position in the batch).
    NonFinite { row: usize },
    /// A zero vector cannot be normalised for the cosine metric.
    ZeroVector { row: usize },
    /// Parallel inputs of a batch have different lengths.
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// An id that already exists was added without `upsert`.
    DuplicateId(u64),
    /// The same id twice in one batch.
    DuplicateInBatch { id: u64, row: usize },
    /// An id that does not exist was asked for.
    UnknownId(u64),
    /// A time range whose start is after its end.
    InvalidTimeRange { lo: i64, hi: i64 },
    /// A namespace or session name that is empty, too long or holds control characters.
    InvalidName { what: &'static str, reason: String },
    /// A text longer than the index accepts.
    TextTooLong {
        row: usize,
        bytes: usize,
        limit: usize,
    },
    /// Any other argument outside its domain (the message says which and why).
    InvalidArgument(String),
    /// A file operation of the store failed: the message names the operation and the file,
    /// `errno` is the OS error number (`None` when no OS call failed, e.g. a poisoned store).
    Io { msg: String, errno: Option<i32> },
    /// The store was closed; reopen it to go on.
    Closed,
    /// Committed store data failed its checksum or does not decode: damage, not a torn tail.
    Corrupted(String),
    /// Another writer holds the store: another process, or (`in_process`) another open store
    /// of this process on the same folder.
    Locked { path: String, in_process: bool },
    /// A store file written by a newer trimem.
    FormatVersion {
        path: String,
        found: u32,
        supported: u32,
    },
}

pub type Result<T> = std::result::Result<T, EngineError>;

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EngineError::*;
        match self {
            Dimension { expected, got } => write!(
                f,
                "vector dimension mismatch: the index expects {expected} values per vector, got {got}"
            ),
            NonFinite { row } => write!(f, "vector at row {row} contains NaN or infinity"),
            ZeroVector { row } => write!(
                f,
                "vector at row {row} is all zeros and cannot be normalised for the cosine metric"
            ),
            LengthMismatch { what, expected, got } => write!(
                f,
                "length mismatch: {what} has {got} entries but ids has {expected}"
            ),
            DuplicateId(id) => write!(
                f,
                "id {id} already exists; delete it first or pass upsert=True to replace it"
            ),
            DuplicateInBatch { id, row } => write!(
                f,
                "id {id} appears twice in the batch (second time at row {row}); ids must be unique"
            ),
            UnknownId(id) => write!(f, "id {id} is not in the index"),
            InvalidTimeRange { lo, hi } => write!(
                f,
                "invalid time range: start {lo} is after end {hi} (the range is half-open [lo, hi))"
            ),
            InvalidName { what, reason } => write!(f, "invalid {what}: {reason}"),
            TextTooLong { row, bytes, limit } => write!(
                f,
                "text at row {row} has {bytes} bytes, over the limit of {limit}; split it into smaller records"
            ),
            InvalidArgument(msg) | Io { msg, .. } => f.write_str(msg),
            Closed => f.write_str("the store is closed; open it again to go on"),
            Corrupted(msg) => write!(
                f,
                "store damaged: {msg}; restore the folder from a backup (trimem never skips committed data)"
            ),
            Locked {
                path,
                in_process: false,
            } => write!(
                f,
                "{path} is open for writing by another process; one writer at a time"
            ),
            Locked {
                path,
                in_process: true,
            } => write!(
                f,
                "{path} is already open in this process; close that Memory or Store (or reuse it) before opening it again"
            ),
            FormatVersion { path, found, supported } => write!(
                f,
                "{path} has format version {found}, but this trimem reads up to {supported}: upgrade trimem"
            ),
        }
    }
}

impl std::error::Error for EngineError {}

impl EngineError {
    /// An I/O failure without an OS error behind it (the store refuses writes, say); `EIO`
    /// stands in so callers always get a number they can test.
    pub fn io(msg: impl Into<String>) -> Self {
        EngineError::Io {
            msg: msg.into(),
            errno: Some(EIO),
        }
    }
}

/// POSIX error numbers for failures the store reports without an OS call behind them.
pub const EIO: i32 = 5;
pub const ENOSPC: i32 = 28;
