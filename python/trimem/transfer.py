"""Moving memories: sharing between agents (with provenance and decayed importance), export of
all layers to one msgspec file and import back, and per-layer statistics. `Memory` methods
call these.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("Production database is PostgreSQL 16", user_id="u1", agent_id="ops", importance=0.9)
>>> [e.metadata["shared_from"]["agent_id"] for e in mem.share(from_agent="ops", to_agent="support", user_id="u1")]
['ops']
>>> mem.stats(user_id="u1", agent_id="support")["episodic"]["count"]
1
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem.errors import InvalidArgumentError, StoreCorruptedError, StoreVersionError, UnknownIdError
from trimem.lifecycle import DAY_US
from trimem.ops import OpFact, OpPin
from trimem.records import Episode, FactVersion, KnowledgeDoc, decode_knowledge, episode_from_record
from trimem.scope import check_id, episode_namespace, knowledge_namespace

if TYPE_CHECKING:
    from trimem.memory import Memory

EXPORT_VERSION = 1
_MAGIC = "trimem-export"


class ExportedEpisode(msgspec.Struct, frozen=True, array_like=True):
    episode: Episode
    vector: bytes | None  # float32, as stored (normalised)
    accesses: int = 0
    mentions: int = 0
    last_access: int = 0


class ExportedFact(msgspec.Struct, frozen=True, array_like=True):
    agent_id: str
    user_id: str
    key: str
    history: list[FactVersion]
    pinned: bool = False


class ExportedDoc(msgspec.Struct, frozen=True, array_like=True):
    doc: KnowledgeDoc
    vector: bytes | None


class Export(msgspec.Struct, frozen=True):
    """One file holding all layers of one user (or the whole store)."""

    magic: str
    version: int
    embedder: str | None
    dim: int
    created: int
    episodes: list[ExportedEpisode]
    facts: list[ExportedFact]
    knowledge: list[ExportedDoc]
    aliases: dict[str, list[str]] = {}


def share(
    mem: Memory,
    *,
    from_agent: str,
    to_agent: str,
    user_id: str,
    episode_ids: Iterable[int] | None,
    min_importance: float,
    decay: float,
    now: int,
) -> list[Episode]:
    """Copies the user's episodes of `from_agent` whose effective importance (base plus
    reinforcement) reaches `min_importance` — or exactly `episode_ids` — to `to_agent`, each
    with `metadata["shared_from"]` (agent, episode id, time) and importance × `decay`. Their
    vectors are copied, not re-embedded. Nothing else crosses: no facts, no documents."""
    check_id("agent_id", from_agent)
    check_id("agent_id", to_agent)
    check_id("user_id", user_id)
    if from_agent == to_agent:
        raise InvalidArgumentError("from_agent and to_agent are the same agent")
    if not (0.0 <= min_importance <= 1.0 and 0.0 <= decay <= 1.0):
        raise InvalidArgumentError(f"min_importance and decay must be in [0, 1], got {min_importance}, {decay}")
    ns = episode_namespace(from_agent, user_id)
    cols = mem._episode_index.columns(namespace=ns)
    effective = dict(zip(cols["ids"].tolist(), mem.policy.effective_of(cols).tolist()))
    if episode_ids is not None:
        wanted = sorted({int(i) for i in episode_ids})  # an id named twice is shared once
        missing = [i for i in wanted if i not in effective]
        if missing:
            raise UnknownIdError(f"no episodes {missing} for user {user_id!r} of agent {from_agent!r}")
    else:
        wanted = [i for i, v in effective.items() if v >= min_importance]
    if not wanted:
        return []
    recs = [r for r in mem._episode_index.get_many(sorted(wanted)) if r is not None]
    items, vectors = [], []
    for r in recs:
        e = episode_from_record(r)
        items.append(
            dict(
                text=e.text,
                user_id=user_id,
                agent_id=to_agent,
                session_id=e.session_id,
                role=e.role,
                topic=e.topic,
                keywords=e.keywords,
                timestamp=e.timestamp,
                tool=e.tool,
                importance=round(min(1.0, effective[e.id] * decay), 6),
                metadata={**e.metadata, "shared_from": {"agent_id": from_agent, "episode_id": e.id, "at": now}},
            )
        )
        vectors.append(r.vector)
    present = [v for v in vectors if v is not None]
    if mem.embedder is not None and len(present) == len(vectors):
        return mem.retain_many(items, vectors=np.stack(present).astype(np.float32))
    return mem.retain_many(items)


def export(
    mem: Memory, path: str | os.PathLike[str], *, user_id: str | None, agent_id: str, now: int
) -> dict[str, int]:
    """Writes all layers (of one user of `agent_id`, or everything) to `path` atomically."""
    if user_id is not None:
        check_id("user_id", user_id)
        scopes = [(agent_id, user_id)]
    else:
        scopes = sorted(mem._user_last)
    episodes: list[ExportedEpisode] = []
    for a, u in scopes:
        ids = mem._episode_index.ids(namespace=episode_namespace(a, u))
        for r in mem._episode_index.get_many(ids):
            if r is not None:
                episodes.append(
                    ExportedEpisode(episode_from_record(r), _vector_bytes(r), r.accesses, r.mentions, r.last_access)
                )
    facts = [
        ExportedFact(a, u, key, list(versions), (a, u, key) in mem.facts._pinned)
        for (a, u, key), versions in sorted(mem.facts._history.items())
        if user_id is None or (a, u) == (agent_id, user_id)
    ]
    private = None if user_id is None else knowledge_namespace(agent_id, user_id)
    knowledge = [
        ExportedDoc(decode_knowledge(r.payload), _vector_bytes(r))
        for r in mem._knowledge_index.get_many(mem._knowledge_index.ids(namespace=private))
        if r is not None
    ]
    bundle = Export(
        magic=_MAGIC,
        version=EXPORT_VERSION,
        embedder=None if mem.embedder is None else mem.embedder.name,
        dim=mem.dim,
        created=now,
        episodes=episodes,
        facts=facts,
        knowledge=knowledge,
        aliases=mem.facts._aliases if user_id is None else {},
    )
    data = msgspec.msgpack.encode(bundle)
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".trimem-export-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return {"episodes": len(episodes), "facts": len(facts), "knowledge": len(knowledge), "bytes": len(data)}


def _vector_bytes(rec: Any) -> bytes | None:
    return None if rec.vector is None else rec.vector.astype(np.float32).tobytes()


def load_export(path: str | os.PathLike[str]) -> Export:
    with open(path, "rb") as f:
        data = f.read()
    try:
        bundle = msgspec.msgpack.decode(data, type=Export)
    except msgspec.DecodeError as e:
        raise StoreCorruptedError(f"{os.fspath(path)} is not a trimem export: {e}") from None
    if bundle.magic != _MAGIC:
        raise StoreCorruptedError(f"{os.fspath(path)} is not a trimem export")
    if bundle.version > EXPORT_VERSION:
        raise StoreVersionError(
            f"{os.fspath(path)} is export version {bundle.version}; this trimem reads up to {EXPORT_VERSION}"
        )
    return bundle


def import_export(mem: Memory, path: str | os.PathLike[str]) -> dict[str, int]:
    """Adds an export's memories to `mem` under new ids (facts cite the new episode ids).
    Vectors come along when the export was made with the same embedder, else the texts are
    embedded again. Everything is validated before anything is written."""
    bundle = load_export(path)
    same_space = mem.embedder is not None and bundle.embedder == mem.embedder.name and bundle.dim == mem.dim
    for x in bundle.episodes:
        check_id("agent_id", x.episode.agent_id)
        check_id("user_id", x.episode.user_id)
    items = [
        dict(
            text=x.episode.text,
            user_id=x.episode.user_id,
            agent_id=x.episode.agent_id,
            session_id=x.episode.session_id,
            role=x.episode.role,
            topic=x.episode.topic,
            keywords=x.episode.keywords,
            timestamp=x.episode.timestamp,
            importance=x.episode.importance,
            metadata=x.episode.metadata,
            tool=x.episode.tool,
        )
        for x in bundle.episodes
    ]
    vectors = None
    if same_space and items and all(x.vector is not None for x in bundle.episodes):
        vectors = np.frombuffer(
            b"".join(x.vector for x in bundle.episodes if x.vector is not None), dtype=np.float32
        ).reshape(len(items), mem.dim)
    with mem._lock:
        new = mem.retain_many(items, vectors=vectors) if items else []
        renumber = {x.episode.id: e.id for x, e in zip(bundle.episodes, new)}
        for x, e in zip(bundle.episodes, new):
            if (x.accesses or x.mentions) and e.id == renumber[x.episode.id]:
                mem._touch([e.id] * x.accesses, [], x.last_access, [e.id] * x.mentions)  # use counts come along
        ops: list[Any] = []
        for f in bundle.facts:
            for v in f.history:
                ops.append(
                    OpFact(
                        f.agent_id,
                        f.user_id,
                        f.key,
                        v.value if v.op != "delete" else None,
                        v.valid_from,
                        [renumber[i] for i in v.source if i in renumber],
                    )
                )
            if f.pinned:
                ops.append(OpPin(f.agent_id, f.user_id, f.key, True))
        if ops:
            mem._commit_many(ops)
        docs = [
            dict(
                text=d.doc.text,
                agent_id=d.doc.agent_id,
                user_id=d.doc.user_id,
                source=d.doc.source,
                title=d.doc.title,
                timestamp=d.doc.timestamp,
                metadata=d.doc.metadata,
            )
            for d in bundle.knowledge
        ]
        if docs:
            mem.knowledge.add_many(docs)
    return {"episodes": len(new), "facts": len(bundle.facts), "knowledge": len(docs)}


def stats(mem: Memory, *, user_id: str | None, agent_id: str, now: int) -> dict[str, Any]:
    """Per layer (and for one user when given): counts, bytes and ages in days."""

    def summary(cols: dict[str, np.ndarray]) -> dict[str, Any]:
        n = len(cols["ids"])
        ages = (now - cols["timestamps"]) / DAY_US if n else np.zeros(0)
        return {
            "count": n,
            "bytes": int(cols["bytes"].sum()) if n else 0,
            "oldest_days": round(float(ages.max()), 3) if n else None,
            "newest_days": round(float(ages.min()), 3) if n else None,
            "median_age_days": round(float(np.median(ages)), 3) if n else None,
            "accesses": int(cols["accesses"].sum()) if n else 0,
            "mentions": int(cols["mentions"].sum()) if n else 0,
        }

    if user_id is not None:
        ep = mem._episode_index.columns(namespace=episode_namespace(agent_id, check_id("user_id", user_id)))
        kn = mem._knowledge_index.columns(namespace=knowledge_namespace(agent_id, user_id))
        facts = [f for (a, u, _), f in mem.facts._current.items() if (a, u) == (agent_id, user_id)]
    else:
        ep, kn = mem._episode_index.columns(), mem._knowledge_index.columns()
        facts = list(mem.facts._current.values())
    sessions = list(mem._working.values())
    out: dict[str, Any] = {
        "episodic": summary(ep),
        "semantic": {
            "facts": len(facts),
            "fact_versions": sum(len(f.history) for f in facts),
            "knowledge": summary(kn),
        },
        "working": {"sessions": len(sessions), "turns": sum(len(w) for w in sessions)},
    }
    if user_id is None:
        users: dict[str, int] = {}
        for a, u in sorted(mem._user_last):
            users[f"{a}/{u}"] = len(mem._episode_index.ids(namespace=episode_namespace(a, u)))
        out["users"] = users
    return out
