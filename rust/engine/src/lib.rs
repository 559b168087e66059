//! trimem's retrieval engine, in pure Rust (the Python bindings live in `rust/py`).
//!
//! One [`HybridIndex`] holds records (id, namespace, session, timestamp, text, payload,
//! importance, optional vector), a BM25 inverted index and an HNSW graph, and answers a hybrid
//! query — filters applied inside both legs, reciprocal rank fusion, optional decay and
//! importance terms — in one call.

mod arena;
pub mod bm25;
pub mod dedup;
pub mod distance;
pub mod error;
pub mod filter;
pub mod fusion;
pub mod hnsw;
mod hugepages;
pub mod index;
mod overlap;
pub mod records;
pub mod sketch;
mod spin;
pub mod store;
pub mod tokenize;
pub mod topk;
mod visited;

pub use dedup::DedupParams;
pub use error::{EngineError, Result};
pub use filter::Filter;
pub use fusion::{FusionParams, Hit};
pub use index::{
    Batch, Columns, HybridIndex, IndexConfig, Metric, Mode, Plan, Prepared, SearchParams,
    SearchResult, Stats,
};
pub use records::Record;
pub use tokenize::{Tokenizer, TokenizerOptions};
