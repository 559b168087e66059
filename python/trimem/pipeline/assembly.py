"""Builds the parts of a :class:`trimem.Memory` — backend, layers and pipeline — from its
arguments, validating each: the facade only exposes their verbs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from trimem._backend import Backend, Floors
from trimem._backend.embedded import EmbeddedBackend
from trimem._backend.postgres import is_dsn, split_schema
from trimem.config import Policy
from trimem.errors import EmbedderMismatchError, InvalidArgumentError
from trimem.layers._shared import Embedding
from trimem.layers.episodic import EpisodicMemory
from trimem.layers.graph_view import GraphView
from trimem.layers.items import ItemStore
from trimem.layers.perceptual import PerceptualMemory
from trimem.layers.semantic import Facts, KnowledgeBase
from trimem.layers.working import Sessions
from trimem.pipeline.lifecycle import Lifecycle
from trimem.pipeline.recall import Recall
from trimem.pipeline.reflection import Reflection
from trimem.records import Durability
from trimem.reflect import Extractor
from trimem.rewrite import Rewriter, RuleRewriter

__all__ = ["Parts", "assemble"]


@dataclass(frozen=True)
class Parts:
    backend: Backend
    embedding: Embedding
    policy: Policy
    episodic: EpisodicMemory
    facts: Facts
    knowledge: KnowledgeBase
    sessions: Sessions
    recall: Recall
    reflection: Reflection
    lifecycle: Lifecycle
    items: ItemStore


def _auto_recorded(spec: Any, exc: EmbedderMismatchError) -> Embedding | None:
    """With ``embedder="auto"``, the model the store was built with (an older default, say),
    when it is one of ours and installed: "auto" never refuses a store it made."""
    from trimem.embedders import resolve_embedder

    if not (isinstance(spec, str) and spec.strip().lower() == "auto") or not exc.recorded:
        return None
    try:
        return Embedding(resolve_embedder(exc.recorded))
    except (InvalidArgumentError, ImportError):
        return None


def _open(
    path: str | os.PathLike[str] | None,
    embedding: Embedding,
    floors: tuple[float, float | None, float | None],
    durability: Durability,
    checkpoint_bytes: int,
    policy: Policy,
) -> tuple[Backend, Floors]:
    """The store opened (and replayed) for `embedding`, and the floors on that model's scale."""
    bm25_share, cosine, cosine_alone = floors
    own = embedding.cosine_floors  # the embedder's scale of similarity, unless the caller set one
    floor = Floors(
        bm25_share=_unit("min_bm25_share", bm25_share, 0.0),
        cosine=_unit("min_cosine", own[0] if cosine is None else cosine, -1.0),
        cosine_alone=_unit("min_cosine_alone", own[1] if cosine_alone is None else cosine_alone, -1.0),
    )
    if is_dsn(path):
        from trimem._backend.postgres.backend import PostgresBackend

        dsn, schema = split_schema(str(path))
        pg = PostgresBackend(
            dsn, dim=embedding.dim, embedder_name=embedding.name, schema=schema, durability=durability,
            touch_flush=policy.touch_flush, stem=policy.stem, stopwords=policy.stopwords,
        )  # fmt: skip
        return pg, floor
    backend = EmbeddedBackend(
        path,
        dim=embedding.dim,
        embedder_name=embedding.name,
        durability=durability,
        checkpoint_bytes=checkpoint_bytes,
        touch_flush=policy.touch_flush,
        stem=policy.stem,
        stopwords=policy.stopwords,
        perceptual=lambda b: PerceptualMemory(lock=b.lock, commit=lambda op: b.write([op])),
        graph=GraphView,
    )
    return backend, floor


def _unit(name: str, value: object, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= 1.0:
        raise InvalidArgumentError(f"{name} must be a number in [{low:g}, 1], got {value!r}")
    return float(value)


def assemble(
    path: str | os.PathLike[str] | None,
    *,
    embedder: Any,
    durability: Durability,
    rewriter: Rewriter | None,
    extractor: Extractor | None,
    tz: tzinfo,
    floors: tuple[float, float | None, float | None],
    checkpoint_bytes: int,
    policy: Policy | None,
) -> Parts:
    """The parts of one memory; the backend opens (and replays) its store here."""
    from trimem.embedders import resolve_embedder

    if policy is not None and not isinstance(policy, Policy):
        raise InvalidArgumentError(f"policy must be a trimem.Policy, got {type(policy).__name__}")
    if not isinstance(tz, tzinfo):
        raise InvalidArgumentError(f"tz must be a datetime.tzinfo, got {type(tz).__name__}")
    if isinstance(checkpoint_bytes, bool) or not isinstance(checkpoint_bytes, int) or checkpoint_bytes < 1:
        raise InvalidArgumentError(f"checkpoint_bytes must be a positive integer, got {checkpoint_bytes!r}")
    policy = policy if policy is not None else Policy()
    embedding = Embedding(resolve_embedder(embedder))
    try:
        backend, floor = _open(path, embedding, floors, durability, checkpoint_bytes, policy)
    except EmbedderMismatchError as exc:
        recorded = _auto_recorded(embedder, exc)
        if recorded is None:
            raise
        embedding = recorded
        backend, floor = _open(path, embedding, floors, durability, checkpoint_bytes, policy)
    episodic = EpisodicMemory(backend, embedding, policy, floor, tz=tz)
    facts = Facts(backend, embedding, policy, floor)
    knowledge = KnowledgeBase(backend, embedding, policy, floor)
    sessions = Sessions(backend, policy)
    recall = Recall(
        backend,
        episodic=episodic,
        facts=facts,
        knowledge=knowledge,
        sessions=sessions,
        embedding=embedding,
        rewriter=rewriter or RuleRewriter(),
        tz=tz,
        policy=policy,
    )
    lifecycle = Lifecycle(backend, episodic=episodic, sessions=sessions, policy=policy)
    return Parts(
        backend, embedding, policy, episodic, facts, knowledge, sessions, recall,
        Reflection(backend, facts, extractor), lifecycle, ItemStore(backend, embedding),
    )  # fmt: skip
