"""The write vocabulary of the backend seam: every change to a `Memory` is one of these ops.

Layers describe a change as ops and hand them to :meth:`trimem._backend.Backend.write` in one
batch; a backend applies a batch atomically. The embedded backend writes them to its log first
and applies them by the same code whether live or replayed on open (so the two cannot differ);
a database backend turns each into statements of one transaction.
"""

from __future__ import annotations

from typing import Any

import msgspec

from trimem.records import Episode, FactVersion, Item, KnowledgeDoc, Mention, Modality, PerceptRecord, Turn


class OpMeta(msgspec.Struct, tag="meta", frozen=True):
    """The store's embedder, recorded once so a different one is refused on reopen."""

    embedder: str | None
    dim: int


class OpRetain(msgspec.Struct, tag="retain", frozen=True):
    episodes: list[Episode]
    vectors: bytes | None = None  # float32 rows, one per episode
    # (min_jaccard, min_cosine) when near-duplicates reinforce instead of inserting; kept in the
    # op so that a replay repeats the same decisions whatever the reopening policy says.
    dedup: tuple[float, float] | None = None


class OpKnowledge(msgspec.Struct, tag="knowledge", frozen=True):
    docs: list[KnowledgeDoc]
    vectors: bytes | None = None
    replaces: list[int] = []  # older versions of the same source, superseded


class OpFact(msgspec.Struct, tag="fact", frozen=True):
    agent_id: str
    user_id: str
    key: str
    value: str | None  # None deletes
    at: int
    source: list[int] = []
    vector: bytes | None = None  # float32: what the fact index searches by meaning


class OpAlias(msgspec.Struct, tag="alias", frozen=True):
    words: list[str]
    keys: list[str]


class OpPin(msgspec.Struct, tag="pin", frozen=True):
    agent_id: str
    user_id: str
    key: str
    pinned: bool


class OpForget(msgspec.Struct, tag="forget", frozen=True):
    episode_ids: list[int] = []
    knowledge_ids: list[int] = []
    users: list[tuple[str, str]] = []  # (agent_id, user_id) whose facts, history and cursor go too
    facts: list[tuple[str, str, str]] = []  # (agent_id, user_id, key): one fact with its history


class OpTouch(msgspec.Struct, tag="touch", frozen=True):
    """Recalls used these records (one access each, last use `at`); written lazily, with the
    next write, so counting uses costs no fsync of its own."""

    episode_ids: list[int] = []
    knowledge_ids: list[int] = []
    at: int = 0
    episode_mentions: list[int] = []  # one mention each (restored counts of an import)


class OpCursor(msgspec.Struct, tag="cursor", frozen=True):
    """Reflect has read the user's episodes up to and including `episode_id`."""

    agent_id: str
    user_id: str
    episode_id: int


class OpWorking(msgspec.Struct, tag="working", frozen=True):
    """A session's working memory as the caller saved it (`Memory.save_working`); `turns`
    None drops the saved session."""

    session_id: str
    turns: list[Turn] | None = None
    vars: dict[str, Any] = {}


class OpPerceptRegister(msgspec.Struct, tag="percept_register", frozen=True):
    """A modality was registered (its space, encoder name and width; not the encoder)."""

    modality: Modality


class OpPerceptAdd(msgspec.Struct, tag="percept_add", frozen=True):
    records: list[PerceptRecord]
    vectors: list[bytes]  # float32, one per record, in its space's width


class OpPerceptDelete(msgspec.Struct, tag="percept_delete", frozen=True):
    ids: list[int]


PerceptOp = OpPerceptRegister | OpPerceptAdd | OpPerceptDelete


class OpItemPut(msgspec.Struct, tag="item_put", frozen=True):
    """Items written whole, each replacing the one under its namespace and key (whose id and
    creation time it keeps) or new under its own id; `texts` is what the keyword leg reads of
    each ("" when not indexed), `vectors` its float32 vector (None: not indexed by meaning)."""

    items: list[Item]
    texts: list[str]
    vectors: list[bytes | None]


ItemKey = tuple[tuple[str, ...], str]  # (namespace, key)


class OpItemDelete(msgspec.Struct, tag="item_delete", frozen=True):
    """These items go; with `expired_at`, only those that have expired by then (a sweep must not
    take an item a read refreshed since it looked)."""

    keys: list[ItemKey]
    expired_at: int | None = None


class OpItemRefresh(msgspec.Struct, tag="item_refresh", frozen=True):
    """A read refreshed these items' time to live: each now expires at its `expires_at`."""

    keys: list[ItemKey]
    expires_at: list[int]


ItemOp = OpItemPut | OpItemDelete | OpItemRefresh


class FactsState(msgspec.Struct, frozen=True, array_like=True):
    """Semantic memory in a snapshot: every fact's full history (current values are rebuilt
    from it), pins and aliases."""

    history: list[tuple[str, str, str, list[FactVersion]]]
    pinned: list[tuple[str, str, str]]
    aliases: dict[str, list[str]]


class MemoryState(msgspec.Struct, frozen=True):
    """Everything of a `Memory` outside its two engine indexes, saved with each snapshot; the
    log replays on top of it."""

    meta: OpMeta
    last_id: int
    cursors: list[tuple[str, str, int]]
    user_last: list[tuple[str, str, int]]  # newest episode id per (agent, user)
    facts: FactsState
    knowledge_sources: list[tuple[str, str | None, str, int]]  # (agent, user, source) → doc id
    working: list[OpWorking] = []  # sessions the caller saved
    perceptual: bytes | None = None  # PerceptualMemory.state(), when it has been used
    graph: bytes | None = None  # MemoryGraph.encode(), when it has been built
    graph_cursor: int = 0  # the graph holds episodes up to this id
    graph_facts: list[tuple[str, str, str, str]] = []  # (agent, user, key, value) the graph holds
    mentions: list[tuple[int, list[Mention]]] = []  # episode id → the near-duplicates merged into it


_encoder = msgspec.msgpack.Encoder()  # one encoder serves ops and snapshot state
_state_decoder = msgspec.msgpack.Decoder(MemoryState)


def encode_state(state: MemoryState) -> bytes:
    return _encoder.encode(state)


def decode_state(data: bytes) -> MemoryState:
    return _state_decoder.decode(data)


Op = (
    OpMeta
    | OpRetain
    | OpKnowledge
    | OpFact
    | OpAlias
    | OpPin
    | OpForget
    | OpCursor
    | OpWorking
    | OpTouch
    | OpPerceptRegister
    | OpPerceptAdd
    | OpPerceptDelete
    | OpItemPut
    | OpItemDelete
    | OpItemRefresh
)

_decoder = msgspec.msgpack.Decoder(Op)


def encode_op(op: Op) -> bytes:
    return _encoder.encode(op)


def decode_op(data: bytes) -> Op:
    return _decoder.decode(data)
