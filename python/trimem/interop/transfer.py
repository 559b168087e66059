"""Export of every layer to one msgspec file (no pickle) and import back under new ids.

>>> import os, tempfile
>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("Production database is PostgreSQL 16", user_id="u1")
>>> path = os.path.join(tempfile.mkdtemp(), "u1.trimem")
>>> mem.export(path, user_id="u1").episodes
1
>>> Memory(embedder=None).import_from(path).episodes
1
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from trimem._backend.ops import Op, OpAlias, OpFact, OpPin
from trimem._checks import check_path
from trimem.errors import StoreCorruptedError, StoreIOError, StoreVersionError
from trimem.records import Episode, FactVersion, Item, KnowledgeDoc, replaced_value, retain_item
from trimem.scope import SHARED, check_id, episode_namespace, knowledge_namespace

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.layers.episodic import EpisodicMemory
    from trimem.layers.items import ItemStore
    from trimem.layers.semantic import KnowledgeBase


__all__ = [
    "EXPORT_VERSION",
    "Export",
    "Exported",
    "ExportedDoc",
    "ExportedEpisode",
    "ExportedFact",
    "ExportedItem",
    "export",
    "import_export",
    "load_export",
]
EXPORT_VERSION = 2  # 2: items
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


class ExportedItem(msgspec.Struct, frozen=True, array_like=True):
    item: Item
    text: str  # what it is searched by
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
    items: list[ExportedItem] = []  # a whole-store export's (items belong to no user)


class Exported(msgspec.Struct, frozen=True):
    """What an export wrote (or an import added)."""

    episodes: int
    facts: int
    knowledge: int
    bytes: int = 0
    items: int = 0


def export(
    backend: Backend,
    path: str | os.PathLike[str],
    *,
    user_id: str | None,
    agent_id: str,
    now: int,
    embedder: str | None,
) -> Exported:
    """Writes all layers (of one user of `agent_id`, or everything) to `path` atomically."""
    if user_id is not None:
        check_id("user_id", user_id)
        scopes = [(agent_id, user_id)]
    else:
        scopes = backend.users()
    episodes: list[ExportedEpisode] = []
    for a, u in scopes:
        for s in backend.stored("episodes", backend.episode_ids(episode_namespace(a, u))):
            assert isinstance(s.item, Episode)
            episodes.append(ExportedEpisode(s.item, s.vector, s.accesses, s.mentions, s.last_access))
    facts = [
        ExportedFact(a, u, key, versions, pinned)
        for a, u, key, versions, pinned in backend.fact_histories()
        if user_id is None or (a, u) == (agent_id, user_id)
    ]
    private = None if user_id is None else knowledge_namespace(agent_id, user_id)
    knowledge = []
    for s in backend.stored("knowledge", backend.document_ids(private)):
        assert isinstance(s.item, KnowledgeDoc)
        knowledge.append(ExportedDoc(s.item, s.vector))
    bundle = Export(
        magic=_MAGIC,
        version=EXPORT_VERSION,
        embedder=embedder,
        dim=backend.dim,
        created=now,
        episodes=episodes,
        facts=facts,
        knowledge=knowledge,
        aliases=backend.alias_table() if user_id is None else {},
        items=[] if user_id is not None else [ExportedItem(*row) for row in backend.items.stored()],
    )
    data = msgspec.msgpack.encode(bundle)
    target = check_path("path", path)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".trimem-export-")
    except OSError as e:
        raise StoreIOError(e.errno, f"cannot write an export into {folder}: {e.strerror}") from None
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
    return Exported(
        episodes=len(episodes), facts=len(facts), knowledge=len(knowledge), bytes=len(data), items=len(bundle.items)
    )


def load_export(path: str | os.PathLike[str]) -> Export:
    check_path("path", path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise StoreIOError(e.errno, f"cannot read the export {os.fspath(path)}: {e.strerror}") from None
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


def import_export(
    backend: Backend,
    path: str | os.PathLike[str],
    *,
    episodic: EpisodicMemory,
    knowledge: KnowledgeBase,
    item_store: ItemStore,
    embedder: str | None,
    fact_vector: Callable[[str, str, str | None], np.ndarray | None] | None = None,
) -> Exported:
    """Adds an export's memories under new ids (facts cite the new episode ids). Vectors come
    along when the export was made with the same embedder, else the texts are embedded again;
    `fact_vector(key, value, was)` gives a fact's current value (which replaced `was`) its vector
    in the fact index.
    Everything is validated before anything is written."""
    bundle = load_export(path)
    dim = backend.dim
    same_space = embedder is not None and bundle.embedder == embedder and bundle.dim == dim
    for x in bundle.episodes:
        check_id("agent_id", x.episode.agent_id)
        check_id("user_id", x.episode.user_id)
    items = [retain_item(x.episode) for x in bundle.episodes]
    vectors = None
    if same_space and items and all(x.vector is not None for x in bundle.episodes):
        vectors = np.frombuffer(
            b"".join(x.vector for x in bundle.episodes if x.vector is not None), dtype=np.float32
        ).reshape(len(items), dim)
    with backend.lock:
        new = episodic.retain_many(items, vectors=vectors) if items else []
        renumber = {x.episode.id: e.id for x, e in zip(bundle.episodes, new)}
        for x, e in zip(bundle.episodes, new):
            if (x.accesses or x.mentions) and e.id == renumber[x.episode.id]:
                backend.touch([e.id] * x.accesses, [], x.last_access, [e.id] * x.mentions)  # use counts come along
        ops: list[Op] = [OpAlias(words=[w], keys=list(keys)) for w, keys in bundle.aliases.items()]
        for f in bundle.facts:
            for n, v in enumerate(f.history):
                value = v.value if v.op != "delete" else None
                vector = None
                if fact_vector is not None and value is not None and n == len(f.history) - 1:
                    # the standing value is searched by meaning, with the value it replaced
                    found = fact_vector(f.key, value, replaced_value(f.history[:n]))
                    vector = None if found is None else found.astype(np.float32).tobytes()
                ops.append(
                    OpFact(
                        f.agent_id,
                        f.user_id,
                        f.key,
                        value,
                        v.valid_from,
                        [renumber[i] for i in v.source if i in renumber],
                        vector,
                    )
                )
            if f.pinned:
                ops.append(OpPin(f.agent_id, f.user_id, f.key, True))
        if ops:
            backend.write(ops)
        docs = [
            dict(
                text=d.doc.text,
                agent_id=d.doc.agent_id,
                user_id=SHARED if d.doc.user_id is None else d.doc.user_id,
                source=d.doc.source,
                title=d.doc.title,
                timestamp=d.doc.timestamp,
                metadata=d.doc.metadata,
            )
            for d in bundle.knowledge
        ]
        if docs:
            knowledge.add_many(docs)
        restored = item_store.restore([(x.item, x.text, x.vector) for x in bundle.items], same_space=same_space)
    return Exported(episodes=len(new), facts=len(bundle.facts), knowledge=len(docs), items=restored)
