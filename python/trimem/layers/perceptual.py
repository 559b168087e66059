"""Perceptual memory: what an agent saw and heard — images, audio, video, any modality — each
kept in a vector space of its own, encoded by an encoder the caller supplies.

A modality is registered with an encoder (an object with ``name``, ``dim`` and
``__call__(list[Any]) -> float32 (n, dim)``; the inputs are whatever the modality takes:
arrays, bytes, paths). Modalities that name the same ``space`` share one vector index — the
image and the text tower of a CLIP-style pair, say — so a text query finds images; different
spaces never mix. Every record belongs to a user (the engine namespace ``"agent/user"``, the
same scope as episodes), and every search is inside one user's records.

>>> import numpy as np
>>> from trimem.layers.perceptual import PerceptualMemory
>>> class MeanColour:  # a toy image encoder: the mean (r, g, b) of an (h, w, 3) array
...     name, dim = "mean-rgb", 3
...     def __call__(self, images):
...         return np.stack([np.asarray(im, np.float32).reshape(-1, 3).mean(0) for im in images])
>>> class ColourWords:  # a toy text encoder into the same space
...     name, dim = "colour-words", 3
...     def __call__(self, texts):
...         return np.array([[t.count("red"), t.count("green"), t.count("blue")] for t in texts],
...                         dtype=np.float32)
>>> pm = PerceptualMemory()
>>> _ = pm.register("image", MeanColour(), space="rgb")
>>> _ = pm.register("text", ColourWords(), space="rgb")
>>> red = np.zeros((2, 2, 3)); red[..., 0] = 1.0
>>> blue = np.zeros((2, 2, 3)); blue[..., 2] = 1.0
>>> r = pm.add("image", red, user_id="u1", caption="the red mug", ref="file:///photos/mug.png")
>>> b = pm.add("image", blue, user_id="u1")
>>> [h.record.ref for h in pm.search("something red", modality="text", user_id="u1", k=1)]
['file:///photos/mug.png']
>>> pm.search("red", modality="text", user_id="u2")  # another user's memory is empty
[]

Only vectors, captions and the caller's ``ref`` (a URI or path) are stored, never the raw
item. A text query searches caption (BM25) and vector, fused; any other query vectors only
(register a modality whose ``str`` items are not text with ``text=False``). Persistence:
:meth:`PerceptualMemory.indexes` and :meth:`PerceptualMemory.state` (modalities, spaces, the id
counter), taken back by :meth:`PerceptualMemory.load`. Encoders are code, not stored: register
them again after a reopen (a different encoder for a stored modality is refused).
"""

from __future__ import annotations

import math
import operator
import os
import string
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Unpack, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt

from trimem._backend.ops import OpForget, OpPerceptAdd, OpPerceptDelete, OpPerceptRegister, PerceptOp
from trimem._checks import shown
from trimem._core import Hits, HybridIndex, StoredRecord
from trimem._embed.base import NamedModel
from trimem.embedders import check_vectors
from trimem.errors import (
    DimensionError,
    DTypeError,
    EmbedderMismatchError,
    InvalidArgumentError,
    InvalidNameError,
    StoreCorruptedError,
    StoreError,
    StoreVersionError,
    UnknownIdError,
)
from trimem.options import PerceptFields
from trimem.records import Modality, PerceptRecord
from trimem.scope import episode_namespace
from trimem.timeutil import TimeLike, now_micros, to_micros_range

__all__ = [
    "Encoder",
    "Modality",
    "PerceptHit",
    "PerceptRecord",
    "PerceptualMemory",
    "PerceptualState",
    "PrecomputedEncoder",
    "index_name",
]

Vectors = npt.NDArray[np.float32]

MAX_CAPTION_CHARS = 100_000
MAX_REF_CHARS = 4096
STATE_VERSION = 1
INDEX_PREFIX = "percept_"
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_")  # a store section name: at most 64
_ADD_KEYS = frozenset(PerceptFields.__annotations__) | {"modality", "item", "user_id"}


@runtime_checkable
class Encoder(Protocol):
    """What a modality needs: ``name`` identifies the model (a store built with one refuses
    another), ``dim`` is the vector width, and calling it with ``n`` items returns float32
    ``(n, dim)``."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def __call__(self, items: list[Any], /) -> Vectors: ...


class PrecomputedEncoder(NamedModel):
    """An encoder for items that already are vectors (from a model run elsewhere): each item is
    a sequence of ``dim`` numbers, returned as is. ``name`` should name the model that made
    them, so vectors of two models never share a space unnoticed.

    >>> PrecomputedEncoder("clip-vit-b32-image", 2)([[1, 0], [0.5, 0.5]]).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """

    def __init__(self, name: str, dim: int) -> None:
        self._name, self._dim = str(name), int(dim)

    def __repr__(self) -> str:
        return f"PrecomputedEncoder({self._name!r}, {self._dim})"

    def __call__(self, items: list[Any], /) -> Vectors:
        if not items:
            return np.zeros((0, self._dim), np.float32)
        try:
            return np.asarray(items, dtype=np.float32).reshape(len(items), -1)
        except (TypeError, ValueError, OverflowError) as e:
            raise DTypeError(f"{self._name}: each item must be a sequence of {self._dim} numbers ({e})") from None


class PerceptHit(msgspec.Struct, frozen=True):
    """A search hit. ``score`` orders the hits: the cosine for a vector search, the fused
    (reciprocal rank) score for a hybrid one; ``cosine`` and ``bm25`` are each signal (None when
    that leg did not find the record)."""

    record: PerceptRecord
    score: float
    cosine: float | None = None
    bm25: float | None = None


class PerceptualState(msgspec.Struct, frozen=True):
    """Everything of a :class:`PerceptualMemory` outside its engine indexes."""

    version: int
    last_id: int
    spaces: list[tuple[str, int]]  # (space, dim)
    modalities: list[Modality]


class _Extras(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True, gc=False):
    """A record's fields the engine record does not hold (modality is its session, the caption
    its text, the user its namespace)."""

    ref: str | None = None
    importance: float = 0.5  # exact (the engine's copy is float32)
    metadata: dict[str, Any] = {}


_encoder = msgspec.msgpack.Encoder()
_extras_decoder = msgspec.msgpack.Decoder(_Extras)
_state_decoder = msgspec.msgpack.Decoder(PerceptualState)


def index_name(space: str) -> str:
    """The store section name of a space's index.

    >>> index_name("clip")
    'percept_clip'
    """
    return INDEX_PREFIX + _check_name("space", space)


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidNameError(f"{what} must be a string, got {type(value).__name__}")
    if not (1 <= len(value) <= 56 and _NAME_CHARS.issuperset(value)):
        raise InvalidNameError(f"invalid {what} {shown(value)}: use 1-56 ASCII letters, digits or '_'")
    return value


class _Draft(msgspec.Struct, frozen=True, gc=False):
    modality: str
    item: Any
    agent_id: str
    user_id: str
    timestamp: int
    caption: str | None
    ref: str | None
    importance: float
    metadata: dict[str, Any]


class PerceptualMemory:
    """Perceptual memory over one engine index per vector space (see the module docstring).

    ``PerceptualMemory(state=..., indexes=...)`` restores what :meth:`state` and
    :meth:`indexes` saved (the same as :meth:`load` on a new instance).
    """

    def __init__(
        self,
        *,
        state: bytes | None = None,
        indexes: Mapping[str, HybridIndex] | None = None,
        lock: Any = None,
        commit: Any = None,
    ) -> None:
        # A `Memory` passes its lock and its log: every change is then an op written to the
        # memory's log first and applied by `apply` (live and on replay alike).
        self._lock = lock if lock is not None else threading.RLock()
        self._commit = commit if commit is not None else self.apply
        self._modalities: dict[str, Modality] = {}
        self._encoders: dict[str, Any] = {}  # modality → encoder object (registered this run)
        self._text: dict[str, bool | None] = {}  # modality → are its queries text (None: if str)
        self._spaces: dict[str, HybridIndex] = {}
        self._last_id = 0
        if (state is None) != (indexes is None):
            raise InvalidArgumentError("pass both state and indexes to restore, or neither")
        if state is not None and indexes is not None:
            self.load(state, indexes)

    # -- modalities -------------------------------------------------------------------------------

    def register(self, name: str, encoder: Any, *, space: str | None = None, text: bool | None = None) -> Modality:
        """Registers modality ``name`` with its encoder, in vector space ``space`` (by default a
        space of its own, named like the modality). Modalities of one space must have encoders
        of one width (:class:`DimensionError` otherwise). Registering a known modality again
        swaps in the encoder object (after a reopen, say) if its name, width and space are
        unchanged; another encoder is an :class:`EmbedderMismatchError`.

        ``text`` says whether the modality's queries are text to match against captions too:
        None (the default) decides per query (a ``str`` is text), False never (``str`` items
        that are paths or URIs), True always (the query is then ``str(query)``)."""
        name = _check_name("modality", name)
        space = _check_name("space", name if space is None else space)
        enc_name = getattr(encoder, "name", None)
        dim = getattr(encoder, "dim", None)
        if not callable(encoder) or not isinstance(enc_name, str) or not enc_name:
            raise InvalidArgumentError(
                f"the encoder of {shown(name)} must be callable and have a non-empty string `name`"
            )
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise InvalidArgumentError(f"encoder {enc_name!r} must have a positive integer `dim`, got {shown(dim)}")
        if text is not None and not isinstance(text, bool):
            raise InvalidArgumentError(f"text must be True, False or None, got {shown(text)}")
        mod = Modality(name=name, space=space, encoder=enc_name, dim=int(dim))
        with self._lock:
            old = self._modalities.get(name)
            if old is not None:
                _check_same_model(old, mod, known_as="registered")
            index = self._spaces.get(space)
            if index is not None and index.dim != mod.dim:
                raise DimensionError(
                    f"space {space!r} holds {index.dim}-d vectors, but encoder {enc_name!r} of "
                    f"{shown(name)} makes {mod.dim}-d ones"
                )
            if old != mod:
                self._commit(OpPerceptRegister(mod))
            self._encoders[name] = encoder
            self._text[name] = text
        return mod

    def modalities(self) -> list[Modality]:
        """Every known modality (registered here or restored), by name."""
        return sorted(self._modalities.values(), key=lambda m: m.name)

    def _modality(self, name: object) -> Modality:
        mod = self._modalities.get(name) if isinstance(name, str) else None
        if mod is None:
            known = ", ".join(sorted(self._modalities)) or "none"
            raise InvalidArgumentError(f"unknown modality {shown(name)} (registered: {known})")
        return mod

    def _encoder_of(self, mod: Modality) -> Any:
        enc = self._encoders.get(mod.name)
        if enc is None:
            raise InvalidArgumentError(
                f"modality {mod.name!r} is known from the store but has no encoder yet; "
                f"register it with encoder {mod.encoder!r}"
            )
        return enc

    def _encode(self, mod: Modality, items: list[Any]) -> Vectors:
        """Encodes ``items`` and checks the output: float (converted to float32), shape
        ``(len(items), dim)``, finite, no all-zero row."""
        return check_vectors(
            self._encoder_of(mod)(items),
            len(items),
            mod.dim,
            mod.encoder,
            kinds="f",
            who=f"encoder {mod.encoder!r} of {mod.name!r}",
            item="item",
        )

    # -- add --------------------------------------------------------------------------------------

    def _draft(
        self,
        modality: str,
        item: Any,
        *,
        user_id: str,
        agent_id: str = "default",
        caption: str | None = None,
        ref: str | os.PathLike[str] | None = None,
        timestamp: TimeLike | None = None,
        metadata: Mapping[str, Any] | None = None,
        importance: float = 0.5,
    ) -> _Draft:
        """Validates one item and returns its fields (all but the id and the vector)."""
        mod = self._modality(modality)
        self._encoder_of(mod)
        episode_namespace(agent_id, user_id)
        if item is None:
            raise InvalidArgumentError("item is None; there is nothing to remember")
        if caption is not None:
            if not isinstance(caption, str):
                raise InvalidArgumentError(f"caption must be a string or None, got {type(caption).__name__}")
            if not caption.strip():
                raise InvalidArgumentError("caption is empty; pass None for no caption")
            if len(caption) > MAX_CAPTION_CHARS:
                raise InvalidArgumentError(f"caption has {len(caption)} characters, over {MAX_CAPTION_CHARS}")
        if ref is not None:
            if isinstance(ref, os.PathLike):
                ref = os.fspath(ref)
            if not isinstance(ref, str) or not ref or len(ref) > MAX_REF_CHARS:
                raise InvalidArgumentError(
                    f"ref must be a non-empty string (URI or path) of at most {MAX_REF_CHARS} characters"
                )
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0.0 <= importance <= 1.0:
            raise InvalidArgumentError(f"importance must be a number in [0, 1], got {shown(importance)}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgumentError(f"metadata must be a mapping, got {type(metadata).__name__}")
        meta = dict(metadata) if metadata else {}
        if any(not isinstance(k, str) for k in meta):
            raise InvalidArgumentError("metadata keys must be strings")
        try:
            _encoder.encode(meta)
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(f"metadata holds a value that is not plain data: {e}") from None
        return _Draft(
            modality=mod.name,
            item=item,
            agent_id=agent_id,
            user_id=user_id,
            timestamp=now_micros(timestamp),
            caption=caption,
            ref=ref,
            importance=float(importance),
            metadata=meta,
        )

    def add(self, modality: str, item: Any, *, user_id: str, **fields: Unpack[PerceptFields]) -> PerceptRecord:
        """Encodes ``item`` with the modality's encoder and stores its vector with the caption
        (searchable by keyword too), the caller's ``ref`` and metadata, in the user's scope (see
        :class:`trimem.options.PerceptFields` for what else it holds)."""
        return self.add_many([dict(fields, modality=modality, item=item, user_id=user_id)])[0]

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> list[PerceptRecord]:
        """Adds many items (mappings with :meth:`add`'s arguments: ``modality``, ``item``,
        ``user_id``, ...), one encoder call per modality. All or nothing: a bad item, an empty
        batch or an encoder failure changes nothing."""
        if isinstance(items, Mapping):
            raise InvalidArgumentError("add_many takes a list of mappings, not one mapping")
        drafts: list[_Draft] = []
        for n, it in enumerate(items):
            if not isinstance(it, Mapping):
                raise InvalidArgumentError(f"item #{n} is {type(it).__name__}, not a mapping of add()'s arguments")
            extra = set(it) - _ADD_KEYS
            if extra:
                raise InvalidArgumentError(f"item #{n} has unknown keys {sorted(map(str, extra))}")
            if "modality" not in it or "item" not in it or "user_id" not in it:
                raise InvalidArgumentError(f"item #{n} needs 'modality', 'item' and 'user_id'")
            drafts.append(self._draft(**it))
        if not drafts:
            raise InvalidArgumentError("the batch is empty; there is nothing to add")
        by_mod: dict[str, list[int]] = {}
        for i, d in enumerate(drafts):
            by_mod.setdefault(d.modality, []).append(i)
        vectors: dict[int, Vectors] = {}  # row of the batch → its vector
        used: dict[str, Modality] = {}
        for name, rows in by_mod.items():
            mod = used[name] = self._modalities[name]
            vecs = self._encode(mod, [drafts[i].item for i in rows])
            for j, i in enumerate(rows):
                vectors[i] = vecs[j]
        with self._lock:
            # Encoding ran outside the lock: a concurrent register/load must not have changed
            # what the vectors were made for.
            for name, mod in used.items():
                if self._modalities.get(name) != mod:
                    raise InvalidArgumentError(f"modality {shown(name)} changed while its items were encoded")
            first = self._last_id + 1
            records = [self._record(first + i, d) for i, d in enumerate(drafts)]
            self._commit(
                OpPerceptAdd(
                    records, [np.ascontiguousarray(vectors[i], np.float32).tobytes() for i in range(len(records))]
                )
            )
        return records

    # -- applying changes (live, or replayed from a memory's log) -------------------------------

    def apply(self, op: PerceptOp) -> None:
        with self._lock:
            if isinstance(op, OpPerceptAdd):
                self._apply_add(op)
            elif isinstance(op, OpPerceptDelete):
                for index in self._spaces.values():
                    index.delete(op.ids, missing_ok=True)
            else:
                mod = op.modality
                if mod.space not in self._spaces:
                    self._spaces[mod.space] = HybridIndex(mod.dim, partition_by_namespace=True)
                self._modalities[mod.name] = mod

    def _apply_add(self, op: OpPerceptAdd) -> None:
        """Adds the records space by space; if one space fails, those added go again."""
        records = op.records
        by_space: dict[str, list[int]] = {}
        for i, r in enumerate(records):
            by_space.setdefault(r.space, []).append(i)
        added: list[tuple[HybridIndex, list[int]]] = []
        try:
            for space, rows in by_space.items():
                index = self._spaces[space]
                recs = [records[i] for i in rows]
                vecs = np.stack([np.frombuffer(op.vectors[i], dtype=np.float32) for i in rows])
                index.add(
                    ids=np.fromiter((r.id for r in recs), dtype=np.uint64, count=len(recs)),
                    texts=[r.caption or "" for r in recs],
                    timestamps=np.fromiter((r.timestamp for r in recs), dtype=np.int64, count=len(recs)),
                    namespaces=[f"{r.agent_id}/{r.user_id}" for r in recs],
                    vectors=vecs,
                    sessions=[r.modality for r in recs],
                    payloads=[_payload(r) for r in recs],
                    importance=[r.importance for r in recs],
                )
                added.append((index, [r.id for r in recs]))
        except BaseException:
            for index, ids in added:
                index.delete(ids, missing_ok=True)
            raise
        self._last_id = max(self._last_id, max(r.id for r in records))

    def _record(self, rid: int, d: _Draft) -> PerceptRecord:
        return PerceptRecord(
            id=rid,
            modality=d.modality,
            space=self._modalities[d.modality].space,
            agent_id=d.agent_id,
            user_id=d.user_id,
            timestamp=d.timestamp,
            caption=d.caption,
            ref=d.ref,
            importance=d.importance,
            metadata=d.metadata,
        )

    # -- read -------------------------------------------------------------------------------------

    def _from_engine(self, space: str, rec: StoredRecord) -> PerceptRecord:
        x = _extras_decoder.decode(rec.payload)
        agent_id, user_id = rec.namespace.split("/", 1)
        return PerceptRecord(
            id=rec.id,
            modality=rec.session or "",
            space=space,
            agent_id=agent_id,
            user_id=user_id,
            timestamp=rec.timestamp,
            caption=rec.text or None,
            ref=x.ref,
            importance=x.importance,
            metadata=x.metadata,
        )

    def _find(self, rid: int) -> tuple[str, StoredRecord] | None:
        for space, index in self._spaces.items():
            rec = index.get(rid)
            if rec is not None:
                return space, rec
        return None

    def get(self, record_id: int) -> PerceptRecord | None:
        """The stored record, or None (like every other ``get`` of a memory)."""
        if isinstance(record_id, (int, np.integer)) and not isinstance(record_id, (bool, np.bool_)):
            if not 1 <= int(record_id) < 1 << 64:
                return None
        rid = _check_ids([record_id])[0]
        found = self._find(rid)
        return None if found is None else self._from_engine(*found)

    def records(
        self,
        *,
        user_id: str,
        agent_id: str = "default",
        modality: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
    ) -> list[PerceptRecord]:
        """A user's records (optionally of one modality, or in ``[start, end)``), oldest first."""
        ns = episode_namespace(agent_id, user_id)
        spaces = list(self._spaces.items())
        if modality is not None:
            mod = self._modality(modality)
            spaces = [(mod.space, self._spaces[mod.space])]
        tr = to_micros_range(time_range)
        out: list[PerceptRecord] = []
        for space, index in spaces:
            ids = index.ids(namespace=ns, session=modality, time_range=tr)
            out.extend(self._from_engine(space, r) for r in index.get_many(ids) if r is not None)
        return sorted(out, key=lambda r: (r.timestamp, r.id))

    def search(
        self,
        query: Any,
        *,
        modality: str,
        user_id: str,
        agent_id: str = "default",
        k: int = 5,
        target: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
        mode: str = "auto",
        min_cosine: float | None = None,
    ) -> list[PerceptHit]:
        """Encodes ``query`` with ``modality``'s encoder and searches the user's records of the
        same space — only those of modality ``target`` when given (which must share the space).
        ``mode``: "auto" is hybrid (captions by BM25 + vectors) for a text query (see
        :meth:`register`) and "vector" otherwise; "vector" forces vectors only; "hybrid"
        needs a text query. ``min_cosine`` drops vector matches below it. ``time_range`` is
        ``[start, end)``."""
        ns = episode_namespace(agent_id, user_id)
        mod = self._modality(modality)
        self._encoder_of(mod)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InvalidArgumentError(f"k must be an integer of at least 1, got {shown(k)}")
        if target is not None:
            tmod = self._modality(target)
            if tmod.space != mod.space:
                raise InvalidArgumentError(
                    f"target {shown(target)} is in space {tmod.space!r}, but {shown(modality)} encodes into "
                    f"{mod.space!r}; spaces never mix"
                )
        if mode not in ("auto", "vector", "hybrid"):
            raise InvalidArgumentError(f"mode must be 'auto', 'vector' or 'hybrid', got {shown(mode)}")
        textual = self._text.get(mod.name)
        is_text = textual if textual is not None else isinstance(query, str)
        if mode == "hybrid" and not is_text:
            raise InvalidArgumentError(f"mode 'hybrid' needs a text query; {shown(modality)} does not take text")
        if min_cosine is not None and (isinstance(min_cosine, bool) or not isinstance(min_cosine, (int, float))):
            raise InvalidArgumentError(f"min_cosine must be a number, got {shown(min_cosine)}")
        if query is None:
            raise InvalidArgumentError("query is None")
        tr = to_micros_range(time_range)
        words = str(query) if is_text else ""
        hybrid = mode != "vector" and bool(words.strip())
        vector = self._encode(mod, [query])[0]
        index = self._spaces[mod.space]
        hits: Hits = index.search(
            text=words if hybrid else None,
            vector=vector,
            k=int(k),
            namespace=ns,
            session=target,
            time_range=tr,
            mode="hybrid" if hybrid else "vector",
            min_cosine=None if min_cosine is None else float(min_cosine),
        )
        out: list[PerceptHit] = []
        for i, rec in enumerate(index.get_many(hits.ids)):
            if rec is None:  # deleted between the search and the read
                continue
            cos, bm = float(hits.vector_scores[i]), float(hits.bm25_scores[i])
            cosine, bm25 = (None if math.isnan(cos) else cos), (None if math.isnan(bm) else bm)
            score = float(hits.scores[i]) if hybrid else (cosine if cosine is not None else 0.0)
            out.append(PerceptHit(record=self._from_engine(mod.space, rec), score=score, cosine=cosine, bm25=bm25))
        return out

    # -- delete -----------------------------------------------------------------------------------

    def delete(self, ids: Iterable[int], *, user_id: str, agent_id: str = "default") -> int:
        """Deletes the user's records ``ids``. An id that is not the user's (another user's, or
        none at all) is an :class:`UnknownIdError` and nothing is deleted. Returns how many
        went."""
        ns = episode_namespace(agent_id, user_id)
        wanted = sorted(set(_check_ids(ids)))
        with self._lock:
            for rid in wanted:  # all are checked before anything is deleted
                found = self._find(rid)
                if found is None or found[1].namespace != ns:
                    raise UnknownIdError(
                        f"no perceptual record with id {rid} for user {user_id!r} of agent {agent_id!r}"
                    )
            if wanted:
                self._commit(OpPerceptDelete(wanted))
            return len(wanted)

    def forget_user(self, *, user_id: str, agent_id: str = "default") -> int:
        """Deletes every record of the user in every space; returns how many went."""
        ns = episode_namespace(agent_id, user_id)
        with self._lock:
            ids = self._ids_of(ns)
            if ids:
                self._commit(OpPerceptDelete(ids))
            return len(ids)

    def forget(self, op: OpForget) -> None:
        """A memory forgetting a user (``op.users``) forgets their percepts with the rest, in the
        same write: applied live and on replay alike."""
        with self._lock:
            for agent_id, user_id in op.users:
                ids = self._ids_of(f"{agent_id}/{user_id}")
                for index in self._spaces.values():
                    index.delete(ids, missing_ok=True)

    def _ids_of(self, namespace: str) -> list[int]:
        return sorted(int(i) for index in self._spaces.values() for i in index.ids(namespace=namespace).tolist())

    def __len__(self) -> int:
        return sum(len(index) for index in self._spaces.values())

    def stats(self) -> dict[str, Any]:
        """Records in all, per space (with its width and modalities) and per modality."""
        with self._lock:
            spaces = {
                s: {
                    "dim": index.dim,
                    "records": len(index),
                    "modalities": sorted(m.name for m in self._modalities.values() if m.space == s),
                }
                for s, index in sorted(self._spaces.items())
            }
            modalities = {
                m.name: {
                    "space": m.space,
                    "encoder": m.encoder,
                    "dim": m.dim,
                    "registered": m.name in self._encoders,
                    "records": len(self._spaces[m.space].ids(session=m.name)),
                }
                for m in self.modalities()
            }
            return {"records": len(self), "spaces": spaces, "modalities": modalities}

    # -- persistence ------------------------------------------------------------------------------

    def indexes(self) -> list[tuple[str, HybridIndex]]:
        """The engine index of every space, named for a store (:func:`index_name`), by name."""
        with self._lock:
            return sorted((index_name(s), index) for s, index in self._spaces.items())

    def state(self) -> bytes:
        """Everything outside the indexes (modalities, spaces, the id counter) as msgpack."""
        with self._lock:
            return _encoder.encode(
                PerceptualState(
                    version=STATE_VERSION,
                    last_id=self._last_id,
                    spaces=sorted((s, index.dim) for s, index in self._spaces.items()),
                    modalities=self.modalities(),
                )
            )

    @staticmethod
    def index_names(state: bytes) -> list[str]:
        """The index names a saved ``state`` needs (to take from a store before :meth:`load`)."""
        return [index_name(s) for s, _ in _decode_state(state).spaces]

    def load(self, state: bytes, indexes: Mapping[str, HybridIndex]) -> None:
        """Restores what :meth:`state` and :meth:`indexes` saved (``indexes`` maps index names
        to restored indexes; others are ignored). Only into a memory without records; encoders
        registered already stay, and must match the stored modalities. On any error nothing
        changes."""
        st = _decode_state(state)
        spaces: dict[str, HybridIndex] = {}
        for space, dim in st.spaces:
            name = index_name(space)
            index = indexes.get(name)
            if index is None:
                raise StoreError(f"the saved perceptual memory needs index {shown(name)}, which was not given")
            if not isinstance(index, HybridIndex):
                raise InvalidArgumentError(f"index {shown(name)} is {type(index).__name__}, not a HybridIndex")
            if index.dim != dim:
                raise StoreCorruptedError(f"index {shown(name)} holds {index.dim}-d vectors, the state says {dim}")
            spaces[space] = index
        with self._lock:
            if len(self):
                raise InvalidArgumentError("load() restores into an empty perceptual memory; this one has records")
            modalities = {m.name: m for m in st.modalities}
            for name, mine in self._modalities.items():
                saved = modalities.get(name)
                if saved is not None:
                    _check_same_model(saved, mine, known_as="in the store")
                if saved is None and mine.space in spaces and spaces[mine.space].dim != mine.dim:
                    raise DimensionError(
                        f"the store's space {mine.space!r} holds {spaces[mine.space].dim}-d vectors, but "
                        f"{shown(name)} is registered with {mine.dim}-d encoder {mine.encoder!r}"
                    )
            merged_spaces = {s: i for s, i in self._spaces.items() if s not in spaces} | spaces
            merged = {m.name: m for m in self._modalities.values() if m.name not in modalities} | modalities
            self._spaces = dict(sorted(merged_spaces.items()))
            self._modalities = merged
            self._last_id = max(self._last_id, st.last_id)


def _check_same_model(known: Modality, new: Modality, *, known_as: str) -> None:
    """A modality keeps its space and its encoder (name and width) for good: vectors of two
    models, or of one model in two spaces, must never meet in one index."""
    if known.space != new.space:
        raise InvalidArgumentError(
            f"modality {known.name!r} is in space {known.space!r} ({known_as}); it cannot move to {new.space!r}"
        )
    if (known.encoder, known.dim) != (new.encoder, new.dim):
        raise EmbedderMismatchError(
            f"modality {known.name!r} was {known_as} with encoder {known.encoder!r} (dim {known.dim}), "
            f"not {new.encoder!r} (dim {new.dim}); vectors of two models do not mix"
        )


def _payload(r: PerceptRecord) -> bytes:
    return _encoder.encode(_Extras(ref=r.ref, importance=r.importance, metadata=r.metadata))


def _decode_state(state: bytes) -> PerceptualState:
    if not isinstance(state, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"state must be bytes, got {type(state).__name__}")
    try:
        st = _state_decoder.decode(state)
    except msgspec.DecodeError as e:
        raise StoreCorruptedError(f"the perceptual memory state cannot be read: {e}") from None
    if st.version != STATE_VERSION:
        raise StoreVersionError(f"perceptual memory state version {st.version}; this trimem reads {STATE_VERSION}")
    dims: dict[str, int] = {}
    try:
        for space, dim in st.spaces:
            _check_name("space", space)
            if dim < 1 or space in dims:
                raise StoreCorruptedError(f"space {space!r} is listed twice or has no width")
            dims[space] = dim
        names = set()
        for m in st.modalities:
            _check_name("modality", m.name)
            if m.name in names or dims.get(m.space) != m.dim:
                raise StoreCorruptedError(f"modality {m.name!r} is listed twice or does not fit its space")
            names.add(m.name)
    except InvalidNameError as e:
        raise StoreCorruptedError(f"the perceptual memory state holds a bad name: {e}") from None
    if st.last_id < 0:
        raise StoreCorruptedError(f"the perceptual memory state has a negative id counter {st.last_id}")
    return st


def _check_ids(ids: Iterable[int] | Sequence[int]) -> list[int]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise InvalidArgumentError(f"ids must be an iterable of integers, got {type(ids).__name__}")
    out: list[int] = []
    for i in ids:
        if isinstance(i, (bool, np.bool_)):
            raise InvalidArgumentError(f"invalid id {shown(i)}: a bool is not an id")
        try:
            v = operator.index(i)
        except TypeError:
            raise InvalidArgumentError(f"invalid id {shown(i)}: ids are positive integers") from None
        if v < 1 or v >= 1 << 64:
            raise InvalidArgumentError(f"invalid id {shown(v)}: ids are positive integers below 2**64")
        out.append(v)
    if not out:
        raise InvalidArgumentError("no ids given")
    return out
