"""Seeded benchmark data; the implementation lives in :mod:`trimem.bench.datasets` so that
``python -m trimem bench`` works from an installed package too.

>>> from benches.datasets import make_dataset
>>> ds = make_dataset(1000, dim=8, n_queries=5)
>>> ds.vectors.shape, len(ds.query_texts)
((1000, 8), 5)
"""

from trimem.bench.datasets import *  # noqa: F403
from trimem.bench.datasets import __all__  # noqa: F401
