"""Operations: every change to a `Memory` is one of these, written to the log first and then
applied by the same code whether it is live or replayed on open (so the two cannot differ).
"""

from __future__ import annotations

import msgspec

from trimem.records import Episode, KnowledgeDoc


class OpMeta(msgspec.Struct, tag="meta", frozen=True):
    """The store's embedder, recorded once so a different one is refused on reopen."""

    embedder: str | None
    dim: int


class OpRetain(msgspec.Struct, tag="retain", frozen=True):
    episodes: list[Episode]
    vectors: bytes | None = None  # float32 rows, one per episode


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
    users: list[tuple[str, str]] = []  # (agent_id, user_id) whose facts and history go too


class OpCursor(msgspec.Struct, tag="cursor", frozen=True):
    """Reflect has read the user's episodes up to and including `episode_id`."""

    agent_id: str
    user_id: str
    episode_id: int


Op = OpMeta | OpRetain | OpKnowledge | OpFact | OpAlias | OpPin | OpForget | OpCursor

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Op)


def encode_op(op: Op) -> bytes:
    return _encoder.encode(op)


def decode_op(data: bytes) -> Op:
    return _decoder.decode(data)
