"""The embedded backend: the Rust engine's indexes and write-ahead folder store, in process."""

from trimem._backend.embedded.backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
