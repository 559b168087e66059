"""No argument can crash trimem or make it raise anything but a :class:`trimem.TrimemError`.

Hypothesis calls every public engine call (each ``HybridIndex`` method, ``Store``, ``tokenize``)
and every public ``Memory`` call (its layers, tools, export and import) with hostile values in
one or two arguments, the others valid: ints at and past the 64-bit edges, NaN and infinities,
wrong types, odd Unicode (NUL, lone surrogates, RTL marks, emoji, a 1 MB string). Only trimem's
errors may come out, and afterwards the index answers a query, the store takes a write, and a
``Memory`` on a folder closes, reopens and answers.

The ``Memory`` calls run in a child process per batch: an abort there (a Rust panic that
unwinds into ``abort``, a failed allocation) would otherwise take pytest down with it. The child
prints each call before making it, so a crash names its input. Inputs are derandomised, so CI
sees the same ones every run.

``Memory`` calls that still fail are listed in ``KNOWN_FAILURES``: the random test leaves out
their kind of value, and ``test_known_failures`` keeps each one as a strict xfail, so fixing one
turns its xfail into a failure that asks for the entry to go.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimem

# ------------------------------------------------------------------------------------- values

DIM = 8
HUGE_INTS = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -(2**64), 10**30, -(10**30)]
ODD_TEXT = [
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\u202eevil",  # right-to-left override
    "\u200f",  # right-to-left mark
    "\ufeff",
    "\uffff",
    "\U0010ffff",
    "e\u0301",
    "👩\u200d👩\u200d👧\u200d👦",
    "名前",
    "/",
    "..",
    "a/b",
]
LONG_TEXT = ["x" * (1 << 20), "docker port " * 90_000]
SURROGATES = ["\ud800", "a\udcffb", "\udfff"]
ODD_ARRAYS = [
    np.zeros((2, DIM), np.float64),
    np.full((1, DIM), np.nan, np.float32),
    np.full(DIM, np.inf, np.float32),
    np.zeros((0, DIM), np.float32),
    np.ones((2, 2, DIM), np.float32),
    np.ones(DIM, np.float32),
    np.ones(3, np.float32),
    np.array(["a", "b"]),
    np.array([1, -1]),
    np.array([2**64 - 1], np.uint64),
    np.array([None, 1], dtype=object),
    np.float32(1.0),
    np.int64(-1),
    np.uint64(2**64 - 1),
]

_scalar = st.one_of(
    st.integers(),
    st.sampled_from(HUGE_INTS),
    st.floats(),
    st.text(max_size=4),
    st.sampled_from(SURROGATES),
    st.none(),
    st.booleans(),
)

# Hostile values by kind. A known failure names its kind, so the random test can leave out
# exactly that kind for that argument.
KINDS: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(),
    "huge_int": st.sampled_from(HUGE_INTS),
    # Built at draw time: Hypothesis cannot print an int past 4300 digits while it shrinks.
    "giant_int": st.builds(lambda sign: sign * 10**5000, st.sampled_from([1, -1])),
    "float": st.floats(),
    "nan": st.just(math.nan),
    "inf": st.sampled_from([math.inf, -math.inf]),
    "bool": st.booleans(),
    "none": st.none(),
    "bytes": st.binary(max_size=8),
    "list": st.lists(_scalar, max_size=3),
    "pair": st.tuples(_scalar, _scalar),
    "dict": st.dictionaries(st.text(max_size=3), _scalar, max_size=2),
    "object": st.builds(object),
    "array": st.sampled_from(ODD_ARRAYS),
    "text": st.text(max_size=20),
    "odd_text": st.sampled_from(ODD_TEXT),
    "surrogate": st.sampled_from(SURROGATES),
    "long_text": st.sampled_from(LONG_TEXT),
}


def shown(value: Any) -> str:
    """A value as a report shows it: its repr, cut short."""
    try:
        r = repr(value)
    except ValueError:  # an int with more digits than repr allows
        r = f"<int of {value.bit_length()} bits>"
    return r if len(r) <= 80 else r[:77] + "..."


# ------------------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class Call:
    """A public call: `run(target, **kwargs)` makes it; `base` holds valid values for each of the
    arguments the test replaces."""

    name: str
    run: Callable[..., Any]
    base: dict[str, Any]


class Known(NamedTuple):
    """A call that, for the `kinds` of value in argument `arg`, raises something other than a
    TrimemError, leaves a memory that no longer reopens, or hangs; `value` is one such value
    and `error` what it does."""

    call: str
    arg: str
    kinds: str
    value: Any
    error: str
    hangs: bool = False


# The Python layers' failures this test found, one line per argument (each a strict xfail in
# test_known_failures). "reopen fails" means the call was accepted and logged, and the folder
# no longer opens: the worst kind.
# fmt: off
KNOWN_FAILURES: list[Known] = [
]
# fmt: on


def _excluded(call: str, arg: str) -> set[str]:
    return {kind for k in KNOWN_FAILURES if k.call == call and k.arg == arg for kind in k.kinds.split()}


def _kinds(call: str, arg: str) -> list[str]:
    """The kinds of value the random test tries for `arg`: all but the known failures."""
    out = _excluded(call, arg)
    return [kind for kind in KINDS if kind not in out]


@functools.cache
def _hostile(call: str, arg: str) -> st.SearchStrategy[tuple[str, Any]]:
    return st.one_of([st.tuples(st.just(kind), KINDS[kind]) for kind in _kinds(call, arg)])


def _fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )


# The call being made, for the report when it fails or the process dies.
LAST: dict[str, str] = {}


def fuzz(
    call: Call,
    target: Callable[[], Any],
    healthy: Callable[[Any], None],
    *,
    examples: int,
    trace: bool = False,
    accepted: list[str] | None = None,
) -> None:
    """Calls `call` with one or two hostile arguments, `examples` times; fails on any exception
    that is not a TrimemError, or when `healthy(target())` fails after a call."""
    args = [arg for arg in sorted(call.base) if _kinds(call.name, arg)]
    if not args:
        return  # every kind of value fails: all of them are in KNOWN_FAILURES

    @_fuzz_settings(examples)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(args), min_size=1, max_size=min(2, len(args)), unique=True))
        kwargs = dict(call.base)
        for name in names:
            _, kwargs[name] = data.draw(_hostile(call.name, name), label=name)
        what = f"{call.name}({', '.join(f'{n}={shown(kwargs[n])}' for n in names)})"
        LAST["call"] = what
        if trace:
            print("CALL", what, file=sys.stderr, flush=True)
        try:
            call.run(target(), **kwargs)
        except trimem.TrimemError:
            pass
        else:
            if accepted is not None:
                accepted.append(what)
        healthy(target())

    one()


def in_folder(base: Path, value: Any) -> Any:
    """A hostile path made safe to try: strings and bytes become a name inside `base` (never an
    absolute path or a way out of it); other values go through as they are."""
    if isinstance(value, str):
        return str(base / ("p" + value.replace("/", "_")))
    if isinstance(value, bytes):
        return bytes(base) + b"/p" + value.replace(b"/", b"_")
    return value


# ----------------------------------------------------------------------------- engine calls


def _vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


QUERY = _vectors(1, seed=99)[0]
N = 60


def _populated() -> trimem.HybridIndex:
    idx = trimem.HybridIndex(dim=DIM)
    idx.add(
        ids=np.arange(N, dtype=np.uint64),
        texts=[f"note {i} about docker port {8000 + i}" for i in range(N)],
        timestamps=np.arange(N, dtype=np.int64) * 10,
        namespaces=["u1" if i % 2 else "u2" for i in range(N)],
        vectors=_vectors(N),
        sessions=["s1" if i % 3 else None for i in range(N)],
        payloads=[bytes([i]) for i in range(N)],
        importance=[i / N for i in range(N)],
    )
    return idx


def _index_answers(idx: trimem.HybridIndex) -> None:
    hits = idx.search(text="docker port", vector=QUERY, k=5)
    assert len(hits) <= 5 and len(hits.ids) == len(hits)
    assert len(idx) >= 0


def _exercise_new_index(**kwargs: Any) -> None:
    """Builds an index from `kwargs` and uses it: 300 records link on several threads, a search
    takes the planner's paths."""
    idx = trimem.HybridIndex(**kwargs)
    n = 300
    vectors = _vectors(n, dim=idx.dim) if 0 < idx.dim <= 64 else None
    idx.add(
        ids=list(range(n)),
        texts=[f"record {i} of many" for i in range(n)],
        timestamps=list(range(n)),
        namespaces=["a" if i % 4 else "b" for i in range(n)],
        vectors=vectors,
    )
    query = None if vectors is None else vectors[0]
    idx.search(text="record", vector=query, k=5, namespace="b", time_range=(0, 100))
    idx.delete(list(range(0, n, 2)))
    idx.search(text="many", vector=query, k=5)


def _search_and_read(idx: trimem.HybridIndex, **kwargs: Any) -> None:
    hits = idx.search(**kwargs)
    for column in ("ids", "scores", "bm25_scores", "vector_scores", "bm25_ranks", "vector_ranks", "decay"):
        assert len(getattr(hits, column)) == len(hits)
    for column in ("importance", "base_importance", "accesses", "mentions", "last_access", "timestamps"):
        assert len(getattr(hits, column)) == len(hits)
    repr(hits)


_FILTER = {"namespace": None, "session": None, "time_range": None}

INDEX_CALLS = [
    Call(
        "HybridIndex.add",
        lambda i, **kw: i.add(**kw),
        {
            "ids": [10_000, 10_001],
            "texts": ["fresh text", "more text"],
            "timestamps": [5, 6],
            "namespaces": ["u3", "u3"],
            "vectors": _vectors(2, seed=7),
            "sessions": None,
            "payloads": None,
            "importance": None,
            "upsert": True,
            "dedup": None,
            "reinforce": True,
        },
    ),
    Call("HybridIndex.touch", lambda i, **kw: i.touch(**kw), {"ids": [1, 2], "at": 100}),
    Call("HybridIndex.mention", lambda i, **kw: i.mention(**kw), {"ids": [1, 2], "at": 100}),
    Call("HybridIndex.columns", lambda i, **kw: i.columns(**kw), _FILTER),
    Call("HybridIndex.ids", lambda i, **kw: i.ids(**kw), _FILTER),
    Call("HybridIndex.delete", lambda i, **kw: i.delete(**kw), {"ids": [123_456], "missing_ok": True}),
    Call("HybridIndex.set_importance", lambda i, **kw: i.set_importance(**kw), {"ids": [3], "values": [0.5]}),
    Call("HybridIndex.get", lambda i, **kw: i.get(**kw), {"id": 4}),
    Call("HybridIndex.get_many", lambda i, **kw: i.get_many(**kw), {"ids": [4, 5]}),
    Call("HybridIndex.__contains__", lambda i, key: key in i, {"key": 4}),
    Call("HybridIndex.bm25_score", lambda i, **kw: i.bm25_score(**kw), {"text": "docker", "id": 4}),
    Call("HybridIndex.doc_freq", lambda i, **kw: i.doc_freq(**kw), {"term": "docker"}),
    Call(
        "HybridIndex.search",
        _search_and_read,
        {
            "text": "docker port 8003",
            "vector": QUERY,
            "k": 10,
            "time_range": None,
            "namespace": None,
            "session": None,
            "mode": "hybrid",
            "ef": 64,
            "rrf_k": 60.0,
            "weights": None,
            "window": None,
            "min_bm25": None,
            "min_cosine": None,
            "half_life": None,
            "now": None,
            "decay_weight": 0.005,
            "importance_weight": 0.0,
            "reinforce_step": 0.1,
            "reinforce_cap": 0.5,
            "decay_from_use": True,
        },
    ),
    Call(
        "tokenize", lambda _, **kw: trimem.tokenize(**kw), {"text": "Node.js on 8080", "stem": True, "stopwords": True}
    ),
]

NEW_INDEX = Call(
    "HybridIndex",
    lambda _, **kw: _exercise_new_index(**kw),
    {
        "dim": DIM,
        "metric": "cosine",
        "m": 16,
        "ef_construction": 200,
        "stem": False,
        "stopwords": False,
        "k1": 1.2,
        "b": 0.75,
        "seed": 42,
        "max_text_bytes": 1 << 20,
        "threads": 2,
        "exact_threshold": 100,
        "partition_by_namespace": False,
    },
)


@pytest.fixture(scope="module")
def index() -> trimem.HybridIndex:
    return _populated()


@pytest.mark.parametrize("call", INDEX_CALLS, ids=lambda c: c.name)
def test_index_calls_raise_only_trimem_errors(index: trimem.HybridIndex, call: Call) -> None:
    fuzz(call, lambda: index, _index_answers, examples=40)


def test_index_constructor_raises_only_trimem_errors() -> None:
    fuzz(NEW_INDEX, lambda: None, lambda _: None, examples=50)


class Stores:
    """The store under test, reopened when a call closed it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "store"
        self.store = trimem.Store(self.folder)
        self.index = _populated()
        self.written = 0

    def current(self) -> trimem.Store:
        if self.store.closed:
            self.store = trimem.Store(self.folder)
        return self.store

    def answers(self, _: Any = None) -> None:
        s = self.current()
        s.clear_faults()
        s.append(b"ok")
        self.written += 1
        assert s.log_bytes > 0


def _open_and_close(root: Path, path: Any, durability: Any) -> None:
    with trimem.Store(in_folder(root, path), durability=durability) as s:
        s.append(b"x")


SNAPSHOT_INDEX = _populated()


def _settle(s: Stores, ticket: Any) -> None:
    good = s.store.append_deferred([b"d"])
    try:
        s.store.settle_deferred(ticket)
    finally:
        s.store.settle_deferred(good)


STORE_CALLS = [
    Call("Store.append", lambda s, **kw: s.store.append(**kw), {"payload": b"op"}),
    Call("Store.append_many", lambda s, **kw: s.store.append_many(**kw), {"payloads": [b"a", b"b"]}),
    Call(
        "Store.append_deferred",
        lambda s, payloads: s.store.settle_deferred(s.store.append_deferred(payloads)),
        {"payloads": [b"a"]},
    ),
    Call("Store.settle_deferred", _settle, {"ticket": 0}),
    Call(
        "Store.checkpoint",
        lambda s, **kw: s.store.checkpoint(**kw),
        {"indexes": [("episodes", SNAPSHOT_INDEX)], "state": b"state"},
    ),
    Call("Store.take_index", lambda s, **kw: s.store.take_index(**kw), {"name": "episodes"}),
    Call(
        "Store.inject_fault",
        lambda s, **kw: s.store.inject_fault(**kw),
        {"kind": "disk_full", "after_bytes": 0, "times": 1},
    ),
    Call("Store", lambda s, **kw: _open_and_close(s.root, **kw), {"path": "other", "durability": "fsync"}),
]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    s = Stores(tmp_path_factory.mktemp("robust-store"))
    yield s
    s.current().close()


@pytest.mark.parametrize("call", STORE_CALLS, ids=lambda c: c.name)
def test_store_calls_raise_only_trimem_errors(stores: Stores, call: Call) -> None:
    # Relative paths a call makes land in the test's folder, never in the working directory.
    with contextlib.chdir(stores.root):
        fuzz(call, lambda: stores, stores.answers, examples=30)
    stores.current().close()
    with trimem.Store(stores.folder) as s:
        assert s.take_log().count(b"ok") >= 1


def test_a_checkpoint_naming_an_index_twice_leaves_a_store_that_opens(tmp_path: Path) -> None:
    """Two indexes under one name once made a snapshot no open accepted, after the checkpoint
    had removed the generation before it."""
    with trimem.Store(tmp_path / "s") as s:
        s.append(b"op")
        with pytest.raises(trimem.InvalidArgumentError, match="twice"):
            s.checkpoint([("episodes", SNAPSHOT_INDEX), ("episodes", SNAPSHOT_INDEX)], b"state")
    with trimem.Store(tmp_path / "s") as s:
        assert s.take_log() == [b"op"]


# ----------------------------------------------------------------------------- Memory calls

U = {"user_id": "u1", "agent_id": "default"}


def _seed(m: Any) -> None:
    """What the calls read: episodes (one in a session), a fact, a document, working memory,
    a perceptual record, the graph."""
    from trimem.layers.perceptual import PrecomputedEncoder

    m.retain("Started the Node service in Docker on port 8080", **U, timestamp=1_000_000)
    m.retain("We picked Postgres for the billing database", **U, session_id="s1", timestamp=2_000_000)
    m.retain("An episode to forget", user_id="u_forget", session_id="s1", timestamp=3_000_000)
    m.facts.set("editor", "vim", **U, at=1)
    m.knowledge.add("Deploys go through CI on every merge", source="handbook")
    m.add_turn("s1", "user", "the docker port is 8080", **U)
    m.perceptual.register("img", PrecomputedEncoder("pre-4", 4))
    m.perceptual.add("img", [1.0, 0.0, 0.0, 0.0], **U, caption="a docker diagram")
    m.graph.entities()


def _answers(m: Any) -> None:
    bundle = m.recall("which docker port?", **U, touch=False)
    assert isinstance(bundle.render(), str)


def _new_memory(root: Path, *, path: Any, **kwargs: Any) -> None:
    from trimem import Memory

    m = Memory(in_folder(root, path), **kwargs)
    try:
        m.retain("a first note about docker", **U)
        m.add_turn("s9", "user", "a turn", **U)
        _answers(m)
    finally:
        m.close()


def _retain_many(m: Any, vectors: Any, **item: Any) -> Any:
    return m.retain_many([item], vectors=vectors)


def _working_var(m: Any, name: Any, value: Any) -> None:
    wm = m.working("s2")
    try:
        wm.set(name, value)
        m.save_working("s2")
    finally:
        wm.vars.clear()


def _working_turn(m: Any, **kwargs: Any) -> None:
    wm = m.working("s3")
    wm.add_turn(**kwargs)
    wm.recent()
    m.save_working("s3")


def _render(m: Any, **kwargs: Any) -> str:
    m.retain("The docker port is 8080", **U)  # something to render, whatever came before
    return str(m.recall("docker port", **U).render(**kwargs))


def _by_length(query: str, texts: list[str]) -> list[float]:
    """A reranker: shorter texts first."""
    return [-float(len(t)) for t in texts]


def _has_turns(query: str, turns: list[Any]) -> bool:
    """A layered recall's test of whether working memory is enough."""
    return bool(turns)


def _reflect(m: Any, **kwargs: Any) -> Any:
    m.retain("I use Neovim as my editor now", **U)  # something new to reflect on
    return m.reflect(**kwargs)


def _reflector(m: Any, **kwargs: Any) -> None:
    m.start_reflector(**kwargs)
    m.stop_reflector()


def _export(m: Any, root: Path, path: Any, **kwargs: Any) -> None:
    m.export(in_folder(root, path), **kwargs)


def _import(m: Any, root: Path, path: Any) -> None:
    m.import_from(in_folder(root, path))


def memory_calls(root: Path, export_file: Path) -> list[Call]:
    """Every public call of a Memory and its layers; `root` is where paths may point."""
    from trimem.layers.perceptual import PrecomputedEncoder

    retain = {
        "text": "a note about docker",
        **U,
        "session_id": None,
        "role": "user",
        "topic": None,
        "keywords": (),
        "timestamp": None,
        "importance": 0.5,
        "metadata": None,
        "tool": None,
    }
    who = {**U}
    return [
        Call(
            "Memory",
            lambda _, **kw: _new_memory(root, **kw),
            {
                "path": "m",
                "embedder": "hashing",
                "durability": "buffered",
                "tz": UTC,
                "min_bm25_share": 0.3,
                "min_cosine": 0.3,
                "min_cosine_alone": 0.6,
                "checkpoint_bytes": 1 << 20,
                "policy": None,
            },
        ),
        Call("Memory.retain", lambda m, **kw: m.retain(**kw), retain),
        Call("Memory.retain_many", _retain_many, {**retain, "vectors": None}),
        Call(
            "Memory.add",
            lambda m, **kw: m.add(**kw),
            {
                "content": "my email is a@b.com",
                **who,
                "session_id": None,
                "timestamp": None,
                "classifier": None,
                "context": None,
            },
        ),
        Call("Memory.get", lambda m, **kw: m.get(**kw), {"episode_id": 1}),
        Call("Memory.episodes", lambda m, **kw: m.episodes(**kw), {**who, "session_id": None, "time_range": None}),
        Call(
            "Memory.forget",
            lambda m, **kw: m.forget(**kw),
            {
                "episode_ids": (),
                "user_id": "u_forget",
                "agent_id": "default",
                "session_id": "s1",
                "time_range": None,
                "everything": False,
            },
        ),
        Call("Memory.working", lambda m, **kw: m.working(**kw).recent(), {"session_id": "s1"}),
        Call("Memory.save_working", lambda m, **kw: m.save_working(**kw), {"session_id": "s1"}),
        Call("WorkingMemory.set", _working_var, {"name": "x", "value": 1}),
        Call(
            "WorkingMemory.add_turn",
            _working_turn,
            {"role": "user", "text": "hi", "importance": 0.0, "timestamp": None},
        ),
        Call("WorkingMemory.recent", lambda m, **kw: m.working("s1").recent(**kw), {"n": None}),
        Call("WorkingMemory.matching", lambda m, **kw: m.working("s1").matching(**kw), {"query": "docker"}),
        Call(
            "Memory.add_turn",
            lambda m, **kw: m.add_turn(**kw),
            {"session_id": "s1", "role": "user", "text": "we use docker", **who, "importance": None, "timestamp": None},
        ),
        Call(
            "Memory.consolidate", lambda m, **kw: m.consolidate(**kw), {"session_id": "s1", **who, "everything": True}
        ),
        Call("Memory.forget_expired", lambda m, **kw: m.forget_expired(**kw), {"now": None, **who}),
        Call("Memory.end_session", lambda m, **kw: m.end_session(**kw), {"session_id": "s4", **who}),
        Call(
            "Memory.search",
            lambda m, **kw: m.search(**kw),
            {
                "query": "docker",
                **who,
                "k": 5,
                "time_range": None,
                "session_id": None,
                "vector": None,
                "mode": "hybrid",
                "now": None,
                "touch": False,
            },
        ),
        Call(
            "Memory.recall",
            lambda m, **kw: m.recall(**kw),
            {
                "query": "which port did docker use?",
                **who,
                "session_id": "s1",
                "k": 5,
                "k_knowledge": 3,
                "now": None,
                "tz": None,
                "same_session": False,
                "n_turns": 5,
                "layered": False,
                "rerank": _by_length,
                "rerank_depth": 3,
                "touch": True,
                "as_of": None,
            },
        ),
        Call(
            "Memory.recall(layered)",
            lambda m, **kw: (m.add_turn("s1", "user", "the docker port is 8080", **U), m.recall(**kw)),
            {"query": "docker port", **who, "session_id": "s1", "layered": True, "enough": _has_turns, "n_turns": 5},
        ),
        Call("RecallBundle.render", _render, {"max_tokens": 2000, "counter": None}),
        Call("Memory.reflect", _reflect, {**who, "extractor": None}),
        Call("Memory.start_reflector", _reflector, {"interval": 5.0, "extractor": None}),
        Call(
            "Facts.set",
            lambda m, **kw: m.facts.set(**kw),
            {"key": "editor", "value": "emacs", **who, "source": (), "at": None},
        ),
        Call("Facts.delete", lambda m, **kw: m.facts.delete(**kw), {"key": "shell", **who, "source": (), "at": None}),
        Call("Facts.alias", lambda m, **kw: m.facts.alias(**kw), {"keys": "editor", "words": ["text editor"]}),
        Call("Facts.pin", lambda m, **kw: m.facts.pin(**kw), {"key": "editor", **who, "pinned": True}),
        Call("Facts.get", lambda m, **kw: m.facts.get(**kw), {"key": "editor", **who}),
        Call("Facts.history", lambda m, **kw: m.facts.history(**kw), {"key": "editor", **who}),
        Call("Facts.as_of", lambda m, **kw: m.facts.as_of(**kw), {"key": "editor", "t": 5, **who}),
        Call("Facts.list", lambda m, **kw: m.facts.list(**kw), who),
        Call(
            "KnowledgeBase.add",
            lambda m, **kw: m.knowledge.add(**kw),
            {
                "text": "Releases ship on Fridays",
                "agent_id": "default",
                "user_id": None,
                "source": None,
                "title": None,
                "timestamp": None,
                "metadata": None,
            },
        ),
        Call("KnowledgeBase.get", lambda m, **kw: m.knowledge.get(**kw), {"doc_id": 4}),
        Call(
            "KnowledgeBase.search",
            lambda m, **kw: m.knowledge.search(**kw),
            {"query": "deploy", "agent_id": "default", "user_id": None, "k": 5, "vector": None},
        ),
        Call("Memory.execute", lambda m, **kw: m.execute(**kw), {"name": "memory_stats"}),
        Call(
            "Memory.execute(search_memory)",
            lambda m, **kw: m.execute("search_memory", **kw),
            {"query": "docker", "k": 5, **who},
        ),
        Call(
            "Memory.execute(set_fact)",
            lambda m, **kw: m.execute("set_fact", **kw),
            {"key": "shell", "value": "zsh", **who},
        ),
        Call(
            "Memory.execute(forget)",
            lambda m, **kw: m.execute("forget", **kw),
            {"episode_ids": [], "user_id": "u_forget", "agent_id": "default"},
        ),
        Call("Memory.stats", lambda m, **kw: m.stats(**kw), {"user_id": None, "agent_id": "default", "now": None}),
        Call(
            "Memory.share",
            lambda m, **kw: m.share(**kw),
            {
                "from_agent": "default",
                "to_agent": "other",
                "user_id": "u1",
                "episode_ids": None,
                "min_importance": 0.0,  # share every episode: there is always one to copy
                "decay": 0.8,
                "now": None,
            },
        ),
        Call(
            "Memory.export",
            lambda m, **kw: _export(m, root, **kw),
            {"path": "export.msgpack", "user_id": None, "agent_id": "default", "now": None},
        ),
        Call("Memory.import_from", lambda m, path: _import(m, root, path), {"path": export_file.name}),
        Call(
            "PerceptualMemory.register",
            lambda m, **kw: m.perceptual.register(**kw),
            {"name": "img", "encoder": PrecomputedEncoder("pre-4", 4), "space": None, "text": None},
        ),
        Call(
            "PerceptualMemory.add",
            lambda m, **kw: m.perceptual.add(**kw),
            {
                "modality": "img",
                "item": [0.0, 1.0, 0.0, 0.0],
                **who,
                "caption": None,
                "ref": None,
                "timestamp": None,
                "metadata": None,
                "importance": 0.5,
            },
        ),
        Call(
            "PerceptualMemory.search",
            lambda m, **kw: m.perceptual.search(**kw),
            {
                "query": [1.0, 0.0, 0.0, 0.0],
                "modality": "img",
                **who,
                "k": 5,
                "target": None,
                "time_range": None,
                "mode": "auto",
                "min_cosine": None,
            },
        ),
        Call("PerceptualMemory.get", lambda m, **kw: m.perceptual.get(**kw), {"record_id": 1}),
        Call(
            "PerceptualMemory.records",
            lambda m, **kw: m.perceptual.records(**kw),
            {**who, "modality": None, "time_range": None},
        ),
        Call("PerceptualMemory.delete", lambda m, **kw: m.perceptual.delete(**kw), {"ids": [], **who}),
        Call(
            "MemoryGraph.entity",
            lambda m, **kw: m.graph.entity(**kw),
            {"name": "docker", "user_id": "u1", "agent_id": "default"},
        ),
        Call(
            "MemoryGraph.entities",
            lambda m, **kw: m.graph.entities(**kw),
            {"user_id": None, "agent_id": "default", "type": None},
        ),
        Call(
            "MemoryGraph.relations",
            lambda m, **kw: m.graph.relations(**kw),
            {"user_id": None, "agent_id": "default", "entity": None, "predicate": None},
        ),
        Call(
            "MemoryGraph.neighbours",
            lambda m, **kw: m.graph.neighbours(**kw),
            {"entity": "docker", "user_id": "u1", "agent_id": "default", "depth": 1, "limit": 50},
        ),
        Call("MemoryGraph.to_text", lambda m, **kw: m.graph.to_text(**kw), {"user_id": None, "agent_id": "default"}),
    ]


MEMORY_BATCHES = 3
MEMORY_EXAMPLES = 12


class Memories:
    """The Memory under test, on a folder: reopened after each call's examples, and replaced by
    a fresh one if it no longer opens."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        self.memory: Any = None
        self.start()

    def start(self) -> None:
        self.generation += 1
        self.folder = self.root / f"memory-{self.generation}"
        self.reopen()
        _seed(self.memory)

    def reopen(self) -> None:
        from trimem import Memory

        if self.memory is not None:
            self.memory.close()
        self.memory = None
        self.memory = Memory(self.folder, embedder="hashing", durability="buffered")


def run_memory_batch(batch: int, of: int, root: Path, *, examples: int = MEMORY_EXAMPLES) -> list[dict[str, str]]:
    """Fuzzes every `of`-th Memory call from the `batch`-th on; returns the failures."""
    box = Memories(root)
    export_file = root / "seed.export"
    box.memory.export(export_file)
    failures: list[dict[str, str]] = []
    for call in memory_calls(root, export_file)[batch::of]:
        accepted: list[str] = []
        try:
            fuzz(call, lambda: box.memory, _answers, examples=examples, trace=True, accepted=accepted)
        except Exception as e:
            failures.append({"call": call.name, "input": LAST.get("call", "?"), "error": f"{type(e).__name__}: {e}"})
        try:
            box.reopen()
            _answers(box.memory)
            _seed(box.memory)  # the next call finds what it reads, whatever this one deleted
        except Exception as e:
            failures.append(
                {
                    "call": call.name,
                    "input": "close and reopen after accepting " + " | ".join(accepted[-8:]),
                    "error": f"{type(e).__name__}: {e}",
                }
            )
            box.memory = None
            box.start()
    box.memory.close()
    return failures


@pytest.mark.parametrize("batch", range(MEMORY_BATCHES))
def test_memory_calls_raise_only_trimem_errors(batch: int, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, __file__, "memory", str(batch), str(MEMORY_BATCHES)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,  # a call that opens an int "path" as a file descriptor reads nothing
    )
    if out.returncode != 0 or not out.stdout.strip():
        calls = [line for line in out.stderr.splitlines() if line.startswith("CALL ")]
        last = calls[-1] if calls else "(before the first call)"
        pytest.fail(f"the child process died (exit {out.returncode}) in {last}\n{out.stderr[-3000:]}")
    failures = json.loads(out.stdout.splitlines()[-1])
    assert not failures, "\n".join(f"{f['call']}: {f['input']}\n    -> {f['error']}" for f in failures)


def run_known(known: Known, box: Memories, export_file: Path) -> None:
    """Makes the known failure's call once: only a TrimemError may come out, and the memory must
    answer, reopen and answer again."""
    call = next(c for c in memory_calls(box.root, export_file) if c.name == known.call)
    with contextlib.suppress(trimem.TrimemError):
        call.run(box.memory, **{**call.base, known.arg: known.value})
    _answers(box.memory)
    box.reopen()
    _answers(box.memory)


@pytest.fixture(scope="module")
def known_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memories, Path]]:
    root = tmp_path_factory.mktemp("known")
    box = Memories(root)
    export_file = root / "seed.export"
    box.memory.export(export_file)
    yield box, export_file
    box.memory.close()


# A fixed call returns in milliseconds; a slow start of the child only delays noticing the fix.
HANG_SECONDS = 4


def _known_case(i: int, k: Known) -> Any:
    reason = f"{k.call}({k.arg}={shown(k.value)}): {k.error}"
    return pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=reason), id=f"{k.call}-{k.arg}")


@pytest.mark.parametrize("i", [_known_case(i, k) for i, k in enumerate(KNOWN_FAILURES)])
def test_known_failures(i: int, known_box: tuple[Memories, Path]) -> None:
    known = KNOWN_FAILURES[i]
    if known.hangs:
        # In a child process, which the timeout can stop.
        try:
            out = subprocess.run(
                [sys.executable, __file__, "known", str(i)],
                capture_output=True,
                text=True,
                timeout=HANG_SECONDS,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{known.call} with {known.arg}={shown(known.value)} still runs after {HANG_SECONDS} s")
        assert out.returncode == 0, out.stderr[-2000:]
        return
    box, export_file = known_box
    try:
        run_known(known, box, export_file)
    except BaseException:
        box.start()  # a fresh memory for the next case
        raise


if __name__ == "__main__":
    # `memory BATCH OF`: a child of test_memory_calls_raise_only_trimem_errors;
    # `known I`: a child of test_known_failures for a call that may hang.
    with tempfile.TemporaryDirectory() as d:
        if sys.argv[1] == "memory":
            found = run_memory_batch(int(sys.argv[2]), int(sys.argv[3]), Path(d))
            print(json.dumps(found))
        else:
            memories = Memories(Path(d))
            memories.memory.export(Path(d) / "seed.export")
            run_known(KNOWN_FAILURES[int(sys.argv[2])], memories, Path(d) / "seed.export")
            memories.memory.close()
