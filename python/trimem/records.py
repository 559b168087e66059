"""The records trimem stores and returns, as msgspec Structs (compact, typed, no pickle).

>>> ep = Episode(id=1, agent_id="default", user_id="u1", text="port 8080", timestamp=0, topic="ports")
>>> episode_payload(ep, "port 8080\nports") != b"\x90"  # the topic rides in the payload
True

In the engine an episode is a record (id, namespace "agent/user", session, time, importance,
indexed text) plus a small payload with the remaining fields (:func:`episode_payload`); the
text is stored once, as the start of the indexed text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

__all__ = [
    "Durability",
    "Episode",
    "EpisodeExtras",
    "Fact",
    "FactChange",
    "FactVersion",
    "Item",
    "KnowledgeDoc",
    "Mention",
    "Modality",
    "PerceptRecord",
    "Placement",
    "RecalledEpisode",
    "RecalledKnowledge",
    "Recovery",
    "Scored",
    "SearchMode",
    "ToolCall",
    "Turn",
    "decode_knowledge",
    "encode",
    "episode_from_record",
    "episode_payload",
    "replaced_value",
    "retain_item",
    "search_text",
]

Durability = Literal["fsync", "buffered"]
"""How a store write returns: after its fsync, or handed to the OS and fsynced within a second."""
SearchMode = Literal["hybrid", "bm25", "vector"]
"""Which legs a search runs: both, fused, or keywords only, or vectors only."""


class ToolCall(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """A tool the agent ran: its name, arguments and what it returned."""

    name: str
    args: dict[str, Any] = {}
    result: str = ""


class Mention(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """An item retained again that near-duplicated a stored episode: it reinforced that episode
    instead of being stored twice, and this keeps what the caller said about it."""

    at: int  # µs: the item's own timestamp
    text: str  # the words the caller used this time
    session_id: str | None = None
    metadata: dict[str, Any] = {}


# gc=False: records hold plain data only (no reference cycles), and a bulk retain creates
# hundreds of thousands of them; untracked, they cost the cyclic collector nothing. Keywords are
# a tuple for the same reason: an empty list per episode is a tracked object the collector walks
# (the first collection after a 10k batch walked 10k of them), the empty tuple is one shared,
# untracked object.
class Episode(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """One timestamped event of episodic memory."""

    id: int
    agent_id: str
    user_id: str
    text: str
    timestamp: int  # µs since the epoch, UTC
    session_id: str | None = None
    role: str = "user"
    topic: str | None = None
    keywords: tuple[str, ...] = ()
    importance: float = 0.5
    metadata: dict[str, Any] = {}
    tool: ToolCall | None = None
    # Set only on what `retain` returns when the item merged into this stored episode (a near
    # duplicate): the caller's own time, words, session and metadata. Never stored in the episode.
    mention: Mention | None = None
    # When the event happened, if the text dates it ("Yesterday I deployed v2"): time filters and
    # time ranges read this; `timestamp` stays when it was told.
    occurred_at: int | None = None


class FactVersion(msgspec.Struct, frozen=True, omit_defaults=True):
    """One value a fact held, from `valid_from` until `valid_to` (None: still current)."""

    value: str | None  # None: the fact was deleted at valid_from
    valid_from: int
    valid_to: int | None = None
    source: list[int] = []
    op: str = "set"


def replaced_value(earlier: Sequence[FactVersion]) -> str | None:
    """The last value a fact held before its current version (`earlier`: the versions before it),
    None when it held none."""
    return next((v.value for v in reversed(earlier) if v.value is not None), None)


class Fact(msgspec.Struct, frozen=True, omit_defaults=True):
    """A distilled key → value fact of semantic memory, with its full history."""

    key: str
    value: str
    updated_at: int
    version: int
    history: list[FactVersion] = []
    source: list[int] = []
    pinned: bool = False


class FactChange(msgspec.Struct, frozen=True, omit_defaults=True):
    """What `reflect` (or a tool) did to one fact: set, update, delete or no-op."""

    op: str
    key: str
    value: str | None
    old_value: str | None = None
    source: list[int] = []
    evidence: str = ""


class KnowledgeDoc(msgspec.Struct, frozen=True, omit_defaults=True):
    """A general knowledge document (policy, API docs, glossary): not a personal event."""

    id: int
    agent_id: str
    text: str
    timestamp: int
    source: str | None = None
    user_id: str | None = None  # set when the document is private to one user
    title: str | None = None
    version: int = 1
    metadata: dict[str, Any] = {}


class Item(msgspec.Struct, frozen=True, omit_defaults=True):
    """A key-value item of a store (a LangGraph store's ``Item``): a JSON object under a key in
    a hierarchical namespace, searchable by the text of some of its fields. Times are
    microseconds since the epoch; ``expires_at`` None never expires, ``ttl`` (minutes) is what a
    read that refreshes it adds again."""

    id: int
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: int
    updated_at: int
    expires_at: int | None = None
    ttl: float | None = None


class Scored(msgspec.Struct, frozen=True, omit_defaults=True):
    """How a recalled item scored: the fused score and each signal that made it. `explain`
    splits the score into its terms (relevance, decay, importance) and the use counts behind
    the importance."""

    score: float
    bm25: float | None = None
    cosine: float | None = None
    bm25_rank: int = 0
    vector_rank: int = 0
    decay: float = 1.0
    importance: float = 0.0  # effective: base plus reinforcement from use
    base_importance: float = 0.0
    accesses: int = 0
    mentions: int = 0
    explain: dict[str, Any] = {}
    weak: bool = False  # under the floors of a confident match: ranked after every confident hit


class RecalledEpisode(msgspec.Struct, frozen=True):
    episode: Episode
    scored: Scored
    via_fact: str | None = None  # set when recalled as the source of a fact the question touches

    @property
    def explain(self) -> dict[str, Any]:
        return self.scored.explain


class RecalledKnowledge(msgspec.Struct, frozen=True):
    doc: KnowledgeDoc
    scored: Scored

    @property
    def explain(self) -> dict[str, Any]:
        return self.scored.explain


class Placement(msgspec.Struct, frozen=True):
    """Where `Memory.add` put an item, and why: the layer, the kind (turn, episode, fact,
    knowledge), its importance, the router's reason, and what was stored (a Turn, an Episode,
    a FactChange or a KnowledgeDoc)."""

    layer: str
    kind: str
    importance: float
    reason: str
    item: Any


class Turn(msgspec.Struct, frozen=True):
    """One turn of a session's working memory."""

    role: str
    text: str
    timestamp: int  # µs since the epoch
    importance: float = 0.0


class Modality(msgspec.Struct, frozen=True):
    """A registered perceptual modality: its vector space and the encoder (by name and width)
    that maps its items into it."""

    name: str
    space: str
    encoder: str
    dim: int


class PerceptRecord(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """One perceived item: where it lives (modality, space, user scope), when, and what the
    caller said about it. The raw item is not kept; ``ref`` is the caller's pointer to it."""

    id: int
    modality: str
    space: str
    agent_id: str
    user_id: str
    timestamp: int  # µs since the epoch, UTC
    caption: str | None = None
    ref: str | None = None
    importance: float = 0.5
    metadata: dict[str, Any] = {}


class Recovery(msgspec.Struct, frozen=True):
    """What opening a store found (:meth:`trimem.Memory.recovery`)."""

    generation: int  # the log generation the store is at
    snapshot: bool  # a snapshot was loaded (else everything came from the log)
    log_records: int  # log records replayed after it
    torn_bytes: int  # bytes of a torn tail cut from the log (a crash mid-write)
    removed_files: list[str]  # older generations and unfinished snapshots deleted
    seconds: float  # time the open took


class EpisodeExtras(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True, gc=False):
    """An episode's fields the engine record does not hold. `text_chars` is set when the
    indexed text carries more than the episode's own text (topic, keywords, tool call)."""

    role: str = "user"
    text_chars: int | None = None
    importance: float = 0.5  # exact (the engine's copy is float32)
    topic: str | None = None
    keywords: tuple[str, ...] = ()
    metadata: dict[str, Any] = {}
    tool: ToolCall | None = None
    recorded: int | None = None  # when told, if the record's timestamp is when it happened


_encoder = msgspec.msgpack.Encoder()
_extras_decoder = msgspec.msgpack.Decoder(EpisodeExtras)
_PLAIN_EXTRAS = _encoder.encode([])  # an empty array decodes to all defaults


def retain_item(e: Episode) -> dict[str, Any]:
    """The fields `retain` takes to store `e` again (under a new id): sharing and import."""
    return {f: getattr(e, f) for f in _RETAIN_FIELDS}


_RETAIN_FIELDS = (
    "text", "user_id", "agent_id", "session_id", "role", "topic", "keywords", "timestamp", "importance", "metadata",
    "tool", "occurred_at",
)  # fmt: skip


def search_text(e: Episode) -> str:
    """What the indexes see of an episode: its text plus topic, keywords and tool call."""
    if not e.topic and not e.keywords and e.tool is None:
        return e.text
    parts = [e.text]
    if e.topic:
        parts.append(e.topic)
    parts.extend(e.keywords)
    if e.tool is not None:
        parts.append(f"{e.tool.name} {' '.join(f'{k} {v}' for k, v in e.tool.args.items())}")
        parts.append(e.tool.result[:2000])
    return "\n".join(parts)


def episode_payload(e: Episode, indexed_text: str) -> bytes:
    """The engine payload of `e`, whose record holds `indexed_text` (starting with its text)."""
    chars = None if len(indexed_text) == len(e.text) else len(e.text)
    if (
        chars is None and e.role == "user" and e.importance == 0.5 and not e.metadata and not e.topic
        and e.occurred_at is None
    ):  # fmt: skip
        return _PLAIN_EXTRAS  # the common case: nothing beyond the record
    recorded = None if e.occurred_at is None else e.timestamp
    return _encoder.encode(
        EpisodeExtras(e.role, chars, e.importance, e.topic, e.keywords, e.metadata, e.tool, recorded)
    )


def indexed_time(e: Episode) -> int:
    """The time the indexes file an episode under: when it happened, else when it was told."""
    return e.timestamp if e.occurred_at is None else e.occurred_at


def episode_from_record(rec: Any) -> Episode:
    """Rebuilds an :class:`Episode` from an engine record (see :func:`episode_payload`)."""
    x = _extras_decoder.decode(rec.payload)
    agent_id, user_id = rec.namespace.split("/", 1)
    text = rec.text if x.text_chars is None else rec.text[: x.text_chars]
    return Episode(
        id=rec.id,
        agent_id=agent_id,
        user_id=user_id,
        text=text,
        timestamp=rec.timestamp if x.recorded is None else x.recorded,
        session_id=rec.session,
        role=x.role,
        topic=x.topic,
        keywords=x.keywords,
        importance=x.importance,
        metadata=x.metadata,
        tool=x.tool,
        occurred_at=None if x.recorded is None else rec.timestamp,
    )


_knowledge_decoder = msgspec.msgpack.Decoder(KnowledgeDoc)


def encode(obj: msgspec.Struct) -> bytes:
    return _encoder.encode(obj)


def decode_knowledge(data: bytes) -> KnowledgeDoc:
    return _knowledge_decoder.decode(data)
