"""The backend seam: where memories live, behind one protocol the layers and the pipeline use.

A :class:`Backend` stores and searches episodes, knowledge documents and facts, allocates ids
and keeps the counters and cursors of the lifecycle. Layers never hold durable state of their
own: they describe every change as ops (:mod:`trimem._backend.ops`) and hand them to
:meth:`Backend.write` in one batch, and read back through the methods below. The embedded
backend (:mod:`trimem._backend.embedded`: the Rust engine and its write-ahead store) is the one
there is today; a database backend implements the same contract.

The contract, which ``tests/backend`` checks for every backend:

* **Writes** — ``write(ops)`` applies a batch atomically: all of it or, when it raises, none of
  it, and the caller's ids may be reused. It returns once the batch is as durable as the
  backend's durability setting says. Every read after it sees it. A retain of a near-duplicate
  (when its op asks for dedup) stores nothing and reinforces the episode it duplicates; the
  result maps the new id to that episode's id.
* **Ids** — ``reserve_ids(n)`` gives ``n`` consecutive new ids (episodes and documents share
  one sequence); ids only grow and are never reused once a write holding them succeeded.
* **Scopes** — every read takes the namespace it reads (``"agent/user"`` for a user's
  episodes and private documents, ``"agent"`` for an agent's shared documents, from
  :mod:`trimem.scope`); no search returns a record of another namespace.
* **Search** — hybrid (BM25 + vector, fused by reciprocal rank), BM25-only or vector-only;
  time range and session filter inside the search; the policy's decay and importance terms in
  the score. Floors rank, they do not cut: a hit under them is labelled weak
  (``Scored.weak``) and ordered after every confident one; only a hit that shares no keyword
  and whose vector is less similar than ``Floors.cosine`` is dropped, as unrelated. Each hit
  carries its per-signal scores.
* **Facts** — a fact's write (``OpFact``) may carry its vector; every current fact is
  searchable (``search_facts``) until it is deleted, forgotten or its user is.
* **Use counts** — ``touch`` counts uses and mentions at once; a backend may persist them
  lazily (a crash may lose the last few counts, never a write).
* **Concurrency** — ``lock`` serialises one process; ``scope_lock(namespaces)`` also excludes
  other processes from those namespaces' read-modify-write sequences (a backend one process
  owns may return ``lock`` itself). A retain's near-duplicate check and insert are atomic per
  namespace.
* **Errors** — only :class:`trimem.errors.TrimemError` subclasses; a failed call changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from trimem._backend.ops import Op, OpWorking
from trimem.config import MIN_WHOLE_SHARE
from trimem.records import (
    Episode,
    Fact,
    FactVersion,
    KnowledgeDoc,
    Mention,
    RecalledEpisode,
    RecalledKnowledge,
    Recovery,
    Scored,
    SearchMode,
)

if TYPE_CHECKING:
    import threading

    from trimem._backend.items import ItemReads
    from trimem.config import Policy

__all__ = ["Backend", "Columns", "Floors", "Query", "Stored", "confident"]

Columns = dict[str, npt.NDArray[np.generic]]
"""Per-record columns of a collection: ids, timestamps, last_access, accesses, mentions,
importance, bytes — what the lifecycle's vectorised policy reads."""


class Floors(msgspec.Struct, frozen=True):
    """What a confident match reaches: a BM25 score of ``bm25_share`` of what a document of
    average length holding each query term once scores, or a cosine of ``cosine_alone``. Under
    ``cosine`` a vector match counts for nothing: a hit then needs a keyword to be returned, and
    a keyword match without that support of meaning is confident only from ``whole_share`` of
    the score of every word of the request, also words no record holds (when there is a
    query vector to support it). A hit both legs find, with any keyword and a cosine halfway
    from ``cosine`` to ``cosine_alone``, is confident too. ``support``, when set, replaces
    ``cosine`` as the meaning that supports a keyword match under the whole-request floor, and
    is the least cosine of a hit both legs find (a question asking for a fact: a memory sharing
    only its subject does not answer it)."""

    bm25_share: float
    cosine: float
    cosine_alone: float
    whole_share: float = MIN_WHOLE_SHARE
    support: float | None = None

    @property
    def support_cosine(self) -> float:
        """The cosine from which meaning supports a keyword match under the whole-request floor."""
        return self.cosine if self.support is None else self.support


def confident(
    bm25: npt.NDArray[np.floating],
    cosine: npt.NDArray[np.floating],
    floors: Floors,
    *,
    keyword_floor: float,
    whole_floor: Callable[[], float] | None,
    support: Callable[[npt.NDArray[np.bool_]], npt.NDArray[np.bool_]],
) -> npt.NDArray[np.bool_]:
    """Which hits are confident matches (see :class:`Floors`), every backend by this one rule.
    `bm25` and `cosine` are each leg's score of each hit, NaN where the leg did not find it;
    `whole_floor` gives the whole-request floor (None: no request vector to support a keyword
    match); `support(asked)` says which of the `asked` hits meaning supports (their cosine, read
    from the stored vector where the vector leg did not reach them, at least ``floors.cosine``)."""
    with np.errstate(invalid="ignore"):  # NaN compares False: a leg that did not find a hit vouches for nothing
        keywords = bm25 >= keyword_floor
        if whole_floor is not None and floors.whole_share > 0.0 and keywords.any():
            whole = bm25 >= whole_floor()
            keywords &= whole | support(keywords & ~whole)
        # found by both legs, each part way (a keyword, and a cosine halfway from unrelated to
        # confident alone), a match is confident too; a question for a fact asks its support
        halfway = (floors.cosine + floors.cosine_alone) / 2.0
        both = (bm25 > 0.0) & (cosine >= max(halfway, floors.support_cosine))
        out: npt.NDArray[np.bool_] = keywords | both | (cosine >= floors.cosine_alone)
    return out


class Query(msgspec.Struct, frozen=True, kw_only=True):
    """One search of a collection within one namespace."""

    text: str
    vector: npt.NDArray[np.float32] | None  # the collection's width; None searches keywords only
    namespace: str
    k: int
    floors: Floors
    # the hits the request goes on with, where `k` is a wider pool that the layer above re-orders
    # (None: `k`): a backend sizes its approximate candidate walks for these, not for the pool
    depth: int | None = None
    now: int  # µs: the time decay is measured from
    time_range: tuple[int, int] | None = None  # [lo, hi) µs
    session: str | None = None
    mode: SearchMode = "hybrid"
    vector_weight: float = 1.0  # the vector leg's fusion weight scaled for the request's language


class Stored(msgspec.Struct, frozen=True):
    """A record as stored, with its vector and use counts (export and sharing read these)."""

    item: Episode | KnowledgeDoc
    vector: bytes | None
    accesses: int = 0
    mentions: int = 0
    last_access: int = 0


class Backend(Protocol):
    """Where a :class:`trimem.Memory` keeps everything (see the module docstring for the
    contract)."""

    @property
    def lock(self) -> threading.RLock:
        """Serialises this process's writes (and read-modify-write sequences of the layers above)."""
        ...

    def scope_lock(self, namespaces: Sequence[str]) -> AbstractContextManager[object]:
        """Holds `lock` and, where other processes share the memory, keeps them out of these
        namespaces' read-modify-write sequences (a fact's change, reflect's cursor) until exit.
        Re-entrant within a thread."""
        ...

    @property
    def dim(self) -> int:
        """Width of episode and document vectors (0: keywords only)."""
        ...

    @property
    def concurrent_reads(self) -> bool:
        """Whether searches from several threads run at once (each on its own connection to a
        server), so a recall gains by overlapping its episode search with its other reads."""
        ...

    # -- writes -----------------------------------------------------------------------------------

    def reserve_ids(self, n: int) -> int:
        """The first of ``n`` new consecutive ids."""
        ...

    def release_ids(self, first: int, n: int) -> None:
        """Gives back ids reserved for a write that failed (a no-op where ids cannot be reused)."""
        ...

    def write(self, ops: Sequence[Op]) -> dict[int, int]:
        """Applies ``ops`` atomically; returns {new episode id: the stored one it duplicated}."""
        ...

    def touch(
        self, episode_ids: Sequence[int], knowledge_ids: Sequence[int], at: int, mentions: Sequence[int] = ()
    ) -> None:
        """Counts one use of each record (and one mention of each of ``mentions``) at ``at``."""
        ...

    def flush(self) -> None:
        """Persists pending use counts now."""
        ...

    # -- episodes and knowledge ---------------------------------------------------------------------

    def episodes(self, ids: Sequence[int]) -> list[Episode | None]: ...

    def mentions(self, episode_id: int) -> list[Mention]:
        """The near-duplicates merged into a stored episode, oldest first."""
        ...

    def episode_ids(
        self, namespace: str | None, *, session: str | None = None, time_range: tuple[int, int] | None = None
    ) -> list[int]:
        """Ids of a namespace's episodes (everyone's with None), ascending."""
        ...

    def search_episodes(self, query: Query, policy: Policy) -> list[RecalledEpisode]: ...

    def session_neighbours(self, namespace: str, ids: Sequence[int]) -> list[tuple[int | None, int | None]]:
        """For each episode of `namespace`, the ids of the episodes written just before and after
        it in its session (None at a session's edge, for an episode without a session or one not
        found): the turns said around it."""
        ...

    def document(self, doc_id: int) -> KnowledgeDoc | None: ...

    def document_ids(self, namespace: str | None) -> list[int]: ...

    def document_by_source(self, agent_id: str, user_id: str | None, source: str) -> int | None:
        """The id of the current version of a document ``source`` in a scope."""
        ...

    def search_knowledge(self, query: Query, policy: Policy) -> list[RecalledKnowledge]: ...

    def columns(self, collection: str, namespace: str | None) -> Columns:
        """``collection`` is "episodes" or "knowledge"."""
        ...

    def stored(self, collection: str, ids: Sequence[int]) -> list[Stored]: ...

    # -- facts --------------------------------------------------------------------------------------

    def fact(self, agent_id: str, user_id: str, key: str) -> Fact | None: ...

    def facts(self, agent_id: str | None = None, user_id: str | None = None) -> list[tuple[str, str, Fact]]:
        """(agent, user, fact) for one user's current facts, or everyone's with None."""
        ...

    def fact_history(self, agent_id: str, user_id: str, key: str) -> list[FactVersion]: ...

    def search_facts(self, query: Query, policy: Policy) -> list[tuple[Fact, Scored]]:
        """The current facts of ``query.namespace`` (an ``"agent/user"``) nearest to the query, by
        the fact index: each fact's key phrases (English and Chinese) and value by keywords, the
        vector its write carried by meaning; weak ones labelled and last, like a search."""
        ...

    def fact_vectors(self, agent_id: str, user_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors the fact index holds for these keys of the user (those it has)."""
        ...

    def fact_histories(self) -> list[tuple[str, str, str, list[FactVersion], bool]]:
        """(agent, user, key, history, pinned) of every fact ever set (export reads these)."""
        ...

    def aliases(self) -> dict[str, list[str]]:
        """Word → fact keys (each known key's own name included)."""
        ...

    def alias_table(self) -> dict[str, list[str]]:
        """The aliases callers added (export reads these)."""
        ...

    # -- lifecycle bookkeeping ----------------------------------------------------------------------

    def cursor(self, agent_id: str, user_id: str) -> int:
        """The last episode id reflect has read for the user (0: none)."""
        ...

    def newest_episode(self, agent_id: str, user_id: str) -> int:
        """The newest episode id the user has (0: none)."""
        ...

    def users(self) -> list[tuple[str, str]]:
        """(agent, user) pairs that have stored episodes."""
        ...

    def saved_sessions(self) -> dict[str, OpWorking]:
        """Working memory sessions the caller saved."""
        ...

    def new_episodes(self, after: int) -> Iterator[Episode]:
        """Episodes with an id above ``after``, ascending (the memory graph reads what it has not)."""
        ...

    @property
    def last_id(self) -> int:
        """The highest id reserved so far."""
        ...

    # -- items (a store's key-value entries: the LangGraph store, sessions) ---------------------------

    @property
    def items(self) -> ItemReads: ...

    # -- extensions (a backend without one raises NotSupportedError) ----------------------------------

    def perceptual(self) -> Any:
        """Perceptual memory's store, created on first use."""
        ...

    def graph(self) -> Any:
        """The memory graph's persisted view, created on first use."""
        ...

    # -- the store ------------------------------------------------------------------------------------

    @property
    def path(self) -> str | None:
        """Where the memory lives: a folder, a DSN, or None in process."""
        ...

    def checkpoint(self) -> None: ...

    def purge(self) -> None:
        """Rewrites the store so that no byte of a forgotten record remains in it."""
        ...

    def recovery(self) -> Recovery | None: ...

    def index_stats(self) -> dict[str, dict[str, int | float | str | None]]: ...

    def close(self) -> None: ...
