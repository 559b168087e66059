"""Benchmarks and evaluation: seeded datasets and same-run comparisons with peer libraries."""
