"""Perceptual memory (trimem.layers.perceptual): modalities in their own vector spaces, text → image
search through a shared space, spaces that never mix, user scopes, persistence through the
store, and every error path (typed, and nothing changed)."""

from __future__ import annotations

import doctest
import inspect
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

import trimem.layers.perceptual as perceptual_module
from trimem._core import HybridIndex, Store
from trimem.errors import (
    DimensionError,
    DTypeError,
    EmbedderMismatchError,
    InvalidArgumentError,
    InvalidNameError,
    InvalidTimeRangeError,
    InvalidVectorError,
    StoreCorruptedError,
    StoreError,
    StoreVersionError,
    TrimemError,
    UnknownIdError,
)
from trimem.layers.perceptual import (
    Encoder,
    Modality,
    PerceptHit,
    PerceptRecord,
    PerceptualMemory,
    PerceptualState,
    PrecomputedEncoder,
    index_name,
)

# ------------------------------------------------------------------------------------ encoders

# Eight colour bins: each pixel's channels thresholded at half intensity (r, g, b bits).
COLOURS = ["black", "blue", "green", "cyan", "red", "magenta", "yellow", "white"]


def image(*parts: tuple[str, int]) -> np.ndarray:
    """A tiny 4x4 RGB image (uint8) made of `count` pixels of each named colour."""
    pixels: list[list[int]] = []
    for colour, count in parts:
        bits = COLOURS.index(colour)
        pixels += [[255 * (bits >> 2 & 1), 255 * (bits >> 1 & 1), 255 * (bits & 1)]] * count
    assert len(pixels) == 16
    return np.array(pixels, dtype=np.uint8).reshape(4, 4, 3)


class ColourHistogram:
    """Image encoder: the normalised 8-bin colour histogram of an (h, w, 3) uint8 array."""

    name, dim = "colour-hist-8", 8

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, images: list[Any]) -> np.ndarray:
        self.calls.append(len(images))
        out = np.zeros((len(images), 8), dtype=np.float32)
        for i, im in enumerate(images):
            px = (np.asarray(im).reshape(-1, 3) > 127).astype(int)
            bins = px[:, 0] * 4 + px[:, 1] * 2 + px[:, 2]
            out[i] = np.bincount(bins, minlength=8) / len(bins)
        return out


class ColourWords:
    """Text encoder into the same 8-d space: counts of colour words."""

    name, dim = "colour-words-8", 8

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, texts: list[Any]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in str(t).lower().replace(",", " ").split():
                if w in COLOURS:
                    out[i, COLOURS.index(w)] += 1.0
        return out


class Bands:
    """Audio encoder (another space, also 8-d): energy in 8 frequency bands of a 1-D signal
    of 256 samples."""

    name, dim = "fft-bands-8", 8

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, signals: list[Any]) -> np.ndarray:
        self.calls.append(len(signals))
        spec = np.abs(np.fft.rfft(np.asarray(signals, dtype=np.float64), axis=1))[:, :128] ** 2
        return spec.reshape(len(signals), 8, 16).sum(axis=2).astype(np.float32)


def tone(band: int, *, phase: float = 0.0) -> np.ndarray:
    """A 256-sample sine whose frequency falls in `band` (of 8)."""
    t = np.arange(256)
    return np.sin(2 * np.pi * (band * 16 + 8) * t / 256 + phase)


class Faulty:
    """An encoder returning whatever `make(n)` builds (for the bad-output paths)."""

    def __init__(self, make: Any, *, name: str = "colour-hist-8", dim: Any = 8) -> None:
        self.make, self.name, self.dim = make, name, dim

    def __call__(self, items: list[Any]) -> Any:
        return self.make(len(items))


T0 = datetime(2026, 5, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return T0.replace(day=n)


@pytest.fixture()
def encoders() -> dict[str, Any]:
    return {"image": ColourHistogram(), "text": ColourWords(), "audio": Bands()}


def new_memory(encoders: dict[str, Any]) -> PerceptualMemory:
    pm = PerceptualMemory()
    pm.register("image", encoders["image"], space="clip")
    pm.register("text", encoders["text"], space="clip")
    pm.register("audio", encoders["audio"])  # a space of its own, named "audio"
    return pm


@pytest.fixture()
def pm(encoders: dict[str, Any]) -> PerceptualMemory:
    """u1's photos (red, green, blue, a red/blue mix, yellow), a note, two tones; one photo of
    u2 and one of u1 under another agent."""
    pm = new_memory(encoders)
    pm.add("image", image(("red", 16)), user_id="u1", timestamp=day(1), ref="file:///p/red.png")
    pm.add("image", image(("green", 16)), user_id="u1", timestamp=day(2), ref="file:///p/green.png")
    pm.add("image", image(("blue", 16)), user_id="u1", timestamp=day(3), ref="file:///p/blue.png")
    pm.add("image", image(("red", 8), ("blue", 8)), user_id="u1", timestamp=day(4), ref="file:///p/mix.png")
    pm.add("image", image(("yellow", 12), ("white", 4)), user_id="u1", timestamp=day(5), ref="file:///p/yellow.png")
    pm.add("text", "a red note", user_id="u1", caption="a red note", timestamp=day(6))
    pm.add("audio", tone(1), user_id="u1", timestamp=day(7), ref="file:///a/low.wav")
    pm.add("audio", tone(6), user_id="u1", timestamp=day(8), ref="file:///a/high.wav")
    pm.add("image", image(("red", 16)), user_id="u2", timestamp=day(1), ref="file:///u2/red.png")
    pm.add("image", image(("red", 16)), user_id="u1", agent_id="other", timestamp=day(1), ref="file:///o/red.png")
    return pm


def refs(hits: list[PerceptHit]) -> list[str | None]:
    return [h.record.ref for h in hits]


def observe(pm: PerceptualMemory) -> Any:
    """Everything a caller can see of a perceptual memory, for "nothing changed" checks."""
    out: list[Any] = [pm.state(), pm.stats(), len(pm)]
    for name, index in pm.indexes():
        ids = sorted(index.ids().tolist())
        recs = [
            (r.id, r.namespace, r.session, r.timestamp, r.text, r.payload, r.vector.tolist())
            for r in index.get_many(ids)
            if r is not None and r.vector is not None
        ]
        out.append((name, ids, recs))
    return out


# ------------------------------------------------------------------------------------ search


def test_text_finds_the_matching_image(pm: PerceptualMemory) -> None:
    hits = pm.search("red", modality="text", user_id="u1", target="image", k=3)
    assert refs(hits)[:2] == ["file:///p/red.png", "file:///p/mix.png"]
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
    assert hits[1].cosine == pytest.approx(2**-0.5, abs=1e-5)
    assert all(h.record.modality == "image" and h.record.space == "clip" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    assert refs(pm.search("blue", modality="text", user_id="u1", target="image", k=2)) == [
        "file:///p/blue.png",
        "file:///p/mix.png",
    ]
    assert refs(pm.search("yellow", modality="text", user_id="u1", target="image", k=1)) == ["file:///p/yellow.png"]
    # Two words, one of each: the half-red half-blue photo is the best match.
    assert refs(pm.search("red and blue", modality="text", user_id="u1", target="image", k=1)) == ["file:///p/mix.png"]


def test_image_query_finds_the_closest_image(pm: PerceptualMemory) -> None:
    mostly_green = image(("green", 13), ("white", 3))
    hits = pm.search(mostly_green, modality="image", user_id="u1", target="image", k=2)
    assert refs(hits)[0] == "file:///p/green.png"
    assert hits[0].bm25 is None and hits[0].score == hits[0].cosine  # a vector search scores by cosine
    assert hits[0].cosine == pytest.approx(13 / np.sqrt(13**2 + 3**2), abs=1e-5)


def test_target_filters_the_modality_and_none_searches_the_whole_space(pm: PerceptualMemory) -> None:
    everything = pm.search("red", modality="text", user_id="u1", k=20)
    assert {h.record.modality for h in everything} == {"image", "text"}  # never audio
    assert len(everything) == 6
    only_text = pm.search("red", modality="text", user_id="u1", target="text", k=20)
    assert [h.record.caption for h in only_text] == ["a red note"]
    # The note matches both by caption and by vector: without a target it leads the fusion.
    assert everything[0].record.modality == "text" and everything[0].bm25 is not None
    img_to_text = pm.search(image(("red", 16)), modality="image", user_id="u1", target="text", k=5)
    assert [h.record.caption for h in img_to_text] == ["a red note"]


def test_audio_space_never_returns_images(pm: PerceptualMemory) -> None:
    hits = pm.search(tone(6, phase=0.3), modality="audio", user_id="u1", k=50)
    assert refs(hits) == ["file:///a/high.wav", "file:///a/low.wav"]
    assert {h.record.space for h in hits} == {"audio"}
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-3)
    for query, modality in (("red", "text"), (image(("red", 16)), "image")):
        assert all(h.record.modality != "audio" for h in pm.search(query, modality=modality, user_id="u1", k=50))
    with pytest.raises(InvalidArgumentError, match="spaces never mix"):
        pm.search("red", modality="text", user_id="u1", target="audio")
    with pytest.raises(InvalidArgumentError, match="spaces never mix"):
        pm.search(tone(1), modality="audio", user_id="u1", target="image")


def test_caption_is_searched_by_keyword_in_hybrid_mode(encoders: dict[str, Any]) -> None:
    pm = new_memory(encoders)
    plain = pm.add("image", image(("red", 16)), user_id="u1", timestamp=day(1))
    mug = pm.add("image", image(("red", 16)), user_id="u1", caption="grandma's red mug", timestamp=day(2))
    pm.add("image", image(("blue", 16)), user_id="u1", caption="the sea", timestamp=day(3))
    # Equal vectors; the caption decides.
    hits = pm.search("red mug", modality="text", user_id="u1", target="image", k=3)
    assert [h.record.id for h in hits][:2] == [mug.id, plain.id]
    assert hits[0].bm25 is not None and hits[0].bm25 > 0 and hits[1].bm25 is None
    assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
    # Vector mode ignores captions: the two red photos tie on cosine.
    vec = pm.search("red mug", modality="text", user_id="u1", target="image", k=2, mode="vector")
    assert {h.record.id for h in vec} == {plain.id, mug.id}
    assert all(h.bm25 is None and h.score == pytest.approx(1.0, abs=1e-5) for h in vec)
    # A caption with the words but far in vector space still comes up in hybrid mode.
    sea = pm.search("sea red", modality="text", user_id="u1", target="image", k=3)
    assert "the sea" in [h.record.caption for h in sea]
    # min_cosine drops the vector matches below it (not the keyword ones).
    floor = pm.search("red", modality="text", user_id="u1", target="image", k=3, mode="vector", min_cosine=0.5)
    assert {h.record.id for h in floor} == {plain.id, mug.id}


class PathColour:
    """An image encoder whose items are paths (str): the colour word in the file name."""

    name, dim = "path-colour-8", 8

    def __call__(self, paths: list[Any]) -> np.ndarray:
        return ColourWords()([Path(p).stem.replace("_", " ") for p in paths])


def test_str_items_that_are_not_text(encoders: dict[str, Any]) -> None:
    pm = new_memory(encoders)
    pm.register("photo", PathColour(), space="clip", text=False)
    pm.register("photo_guess", PathColour(), space="clip")  # text=None: a str query is text
    mug = pm.add("photo", "/p/red_mug.png", user_id="u1", caption="red mug", ref="/p/red_mug.png")
    plain = pm.add("photo", "/p/red.png", user_id="u1", ref="/p/red.png")
    by_path = pm.search("/q/red_mug.png", modality="photo", user_id="u1", k=2)
    assert all(h.bm25 is None and h.score == h.cosine for h in by_path)  # the path is not matched as words
    assert {h.record.id for h in by_path} == {mug.id, plain.id}
    guessed = pm.search("/q/red_mug.png", modality="photo_guess", user_id="u1", k=2)
    assert guessed[0].record.id == mug.id and guessed[0].bm25 is not None
    with pytest.raises(InvalidArgumentError, match="does not take text"):
        pm.search("/q/red.png", modality="photo", user_id="u1", mode="hybrid")
    pm.register("words", ColourWords(), space="clip", text=True)
    assert pm.search("red mug", modality="words", user_id="u1", k=1, mode="hybrid")[0].record.id == mug.id
    with pytest.raises(InvalidArgumentError):
        pm.register("bad", ColourWords(), space="clip", text="yes")  # type: ignore[arg-type]


def test_user_and_agent_scopes_are_isolated(pm: PerceptualMemory) -> None:
    u1 = pm.search(image(("red", 16)), modality="image", user_id="u1", k=50)
    assert all((h.record.agent_id, h.record.user_id) == ("default", "u1") for h in u1)
    assert "file:///u2/red.png" not in refs(u1) and "file:///o/red.png" not in refs(u1)
    u2 = pm.search("red", modality="text", user_id="u2", k=50)
    assert refs(u2) == ["file:///u2/red.png"]
    other = pm.search("red", modality="text", user_id="u1", agent_id="other", k=50)
    assert refs(other) == ["file:///o/red.png"]
    assert pm.search("red", modality="text", user_id="nobody", k=5) == []
    assert pm.search(tone(1), modality="audio", user_id="u2", k=5) == []
    assert [r.ref for r in pm.records(user_id="u2")] == ["file:///u2/red.png"]


def test_time_range_filters_half_open(pm: PerceptualMemory) -> None:
    hits = pm.search("red", modality="text", user_id="u1", target="image", k=10, time_range=(day(2), day(4)))
    assert set(refs(hits)) == {"file:///p/green.png", "file:///p/blue.png"}
    micros = (int(day(4).timestamp() * 1e6), int(day(5).timestamp() * 1e6))
    assert refs(pm.search("red", modality="text", user_id="u1", k=10, time_range=micros)) == ["file:///p/mix.png"]
    assert [r.ref for r in pm.records(user_id="u1", modality="audio", time_range=(day(8), day(9)))] == [
        "file:///a/high.wav"
    ]


# ------------------------------------------------------------------------------------ add / records


def test_record_fields_round_trip(encoders: dict[str, Any], tmp_path: Path) -> None:
    pm = new_memory(encoders)
    rec = pm.add(
        "image",
        image(("cyan", 16)),
        user_id="u1",
        agent_id="a1",
        caption="the pool",
        ref=tmp_path / "pool.png",
        timestamp=day(3),
        importance=0.9,
        metadata={"camera": "phone", "size": [4, 4], "tags": {"outdoor": True}},
    )
    assert isinstance(rec, PerceptRecord)
    assert (rec.modality, rec.space, rec.agent_id, rec.user_id) == ("image", "clip", "a1", "u1")
    assert rec.ref == str(tmp_path / "pool.png") and rec.caption == "the pool"
    assert rec.timestamp == int(day(3).timestamp()) * 1_000_000 and rec.importance == 0.9
    assert pm.get(rec.id) == rec
    assert pm.records(user_id="u1", agent_id="a1") == [rec]
    assert msgspec.json.decode(msgspec.json.encode(rec), type=PerceptRecord) == rec
    bare = pm.add("audio", tone(2), user_id="u1")
    assert bare.caption is None and bare.ref is None and bare.metadata == {} and bare.importance == 0.5
    assert bare.id == rec.id + 1 and pm.get(bare.id) == bare
    assert abs(bare.timestamp - datetime.now(UTC).timestamp() * 1e6) < 60e6
    # The raw item is not stored: only the vector, caption and ref.
    index = dict(pm.indexes())[index_name("clip")]
    stored = index.get(rec.id)
    assert stored is not None and stored.text == "the pool" and stored.session == "image"
    assert stored.vector is not None and stored.vector.shape == (8,)


def test_add_many_batches_per_modality_with_consecutive_ids(encoders: dict[str, Any]) -> None:
    pm = new_memory(encoders)
    items: list[dict[str, Any]] = [
        dict(modality="image", item=image(("red", 16)), user_id="u1", caption="red"),
        dict(modality="audio", item=tone(3), user_id="u1"),
        dict(modality="image", item=image(("blue", 16)), user_id="u2"),
        dict(modality="text", item="green", user_id="u1", caption="green"),
        dict(modality="image", item=image(("green", 16)), user_id="u1", importance=0.1),
    ]
    recs = pm.add_many(items)
    assert [r.id for r in recs] == [1, 2, 3, 4, 5]
    assert [r.modality for r in recs] == ["image", "audio", "image", "text", "image"]
    assert encoders["image"].calls == [3] and encoders["audio"].calls == [1] and encoders["text"].calls == [1]
    assert [pm.get(r.id) for r in recs] == recs
    assert pm.stats()["records"] == 5 and len(pm) == 5


def test_precomputed_vectors_and_float64_output(tmp_path: Path) -> None:
    pm = PerceptualMemory()
    pm.register("photo", PrecomputedEncoder("clip-vit-b32-image", 3), space="clip")
    pm.register("query", PrecomputedEncoder("clip-vit-b32-text", 3), space="clip")
    pm.register("f64", Faulty(lambda n: np.ones((n, 3), dtype=np.float64), name="ones64", dim=3), space="clip")
    a = pm.add("photo", [1.0, 0.0, 0.0], user_id="u")
    b = pm.add("photo", np.array([0.0, 1.0, 0.0]), user_id="u")
    c = pm.add("f64", "anything", user_id="u")
    assert [h.record.id for h in pm.search([0.9, 0.1, 0.0], modality="query", user_id="u", k=3)] == [a.id, c.id, b.id]
    assert isinstance(PrecomputedEncoder("x", 2), Encoder) and isinstance(ColourWords(), Encoder)
    out = PrecomputedEncoder("x", 2)([[1.0, 2.0], (3, 4)])  # called as the protocol says
    assert out.dtype == np.float32 and out.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_delete_and_forget_user(pm: PerceptualMemory) -> None:
    u1_images = pm.records(user_id="u1", modality="image")
    red = next(r for r in u1_images if r.ref == "file:///p/red.png")
    audio = pm.records(user_id="u1", modality="audio")
    assert pm.delete([red.id, audio[0].id, red.id], user_id="u1") == 2
    assert pm.get(red.id) is None
    assert "file:///p/red.png" not in refs(pm.search("red", modality="text", user_id="u1", k=20))
    assert refs(pm.search(tone(1), modality="audio", user_id="u1", k=5)) == ["file:///a/high.wav"]
    # Already gone, another user's, another agent's: UnknownIdError and nothing deleted.
    u2_red = pm.records(user_id="u2")[0]
    other = pm.records(user_id="u1", agent_id="other")[0]
    green = next(r for r in u1_images if r.ref == "file:///p/green.png")
    for bad in ([green.id, red.id], [green.id, u2_red.id], [other.id], [10_000]):
        before = observe(pm)
        with pytest.raises(UnknownIdError):
            pm.delete(bad, user_id="u1")
        assert observe(pm) == before
    n_u1 = len(pm.records(user_id="u1"))
    assert pm.forget_user(user_id="u1") == n_u1 == 6
    assert pm.records(user_id="u1") == []
    assert pm.search("red", modality="text", user_id="u1", k=5) == []
    assert pm.search(tone(6), modality="audio", user_id="u1", k=5) == []
    assert [r.ref for r in pm.records(user_id="u2")] == ["file:///u2/red.png"]
    assert [r.ref for r in pm.records(user_id="u1", agent_id="other")] == ["file:///o/red.png"]
    assert pm.forget_user(user_id="u1") == 0


def test_stats(pm: PerceptualMemory) -> None:
    s = pm.stats()
    assert s["records"] == 10
    assert s["spaces"] == {
        "audio": {"dim": 8, "records": 2, "modalities": ["audio"]},
        "clip": {"dim": 8, "records": 8, "modalities": ["image", "text"]},
    }
    assert s["modalities"]["image"] == {
        "space": "clip",
        "encoder": "colour-hist-8",
        "dim": 8,
        "registered": True,
        "records": 7,
    }
    assert s["modalities"]["text"]["records"] == 1 and s["modalities"]["audio"]["records"] == 2
    assert pm.modalities() == [
        Modality("audio", "audio", "fft-bands-8", 8),
        Modality("image", "clip", "colour-hist-8", 8),
        Modality("text", "clip", "colour-words-8", 8),
    ]


def test_concurrent_adds_get_unique_ids(encoders: dict[str, Any]) -> None:
    pm = new_memory(encoders)
    got: list[int] = []
    lock = threading.Lock()

    def work(u: str) -> None:
        for i in range(20):
            r = pm.add("image", image(("red", 8 + i % 8), ("blue", 8 - i % 8)), user_id=u)
            with lock:
                got.append(r.id)

    threads = [threading.Thread(target=work, args=(f"u{t}",)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 81)) and len(pm) == 80
    assert all(len(pm.records(user_id=f"u{t}")) == 20 for t in range(4))


# ------------------------------------------------------------------------------------ registration


def test_register_rules(encoders: dict[str, Any]) -> None:
    pm = new_memory(encoders)
    # Same encoder again (a reopen, say): the object is swapped, nothing else.
    fresh = ColourWords()
    assert pm.register("text", fresh, space="clip") == Modality("text", "clip", "colour-words-8", 8)
    pm.add("text", "red", user_id="u")
    assert fresh.calls == [1]
    before = observe(pm)
    with pytest.raises(DimensionError, match="space 'clip' holds 8-d"):
        pm.register("depth", Faulty(lambda n: np.ones((n, 4), np.float32), name="depth-4", dim=4), space="clip")
    with pytest.raises(EmbedderMismatchError):
        pm.register("text", Faulty(lambda n: np.ones((n, 8), np.float32), name="other-words", dim=8), space="clip")
    with pytest.raises(EmbedderMismatchError):
        pm.register("text", Faulty(lambda n: np.ones((n, 16), np.float32), name="colour-words-8", dim=16), space="clip")
    with pytest.raises(InvalidArgumentError, match="cannot move"):
        pm.register("text", ColourWords(), space="audio")
    with pytest.raises(InvalidArgumentError, match="cannot move"):
        pm.register("text", ColourWords())  # the default space is the modality's own
    for bad_enc in (
        object(),
        Faulty(None, name="", dim=8),
        Faulty(None, name="x", dim=0),
        Faulty(None, name="x", dim=True),
        Faulty(None, name="x", dim=2.5),
    ):
        with pytest.raises(InvalidArgumentError):
            pm.register("new", bad_enc)
    for name in ("", "a/b", "a b", "ü", "x" * 57, 3):
        with pytest.raises(InvalidNameError):
            pm.register(name, ColourWords())  # type: ignore[arg-type]
        with pytest.raises(InvalidNameError):
            pm.register("fine", ColourWords(), space=name)  # type: ignore[arg-type]
    assert observe(pm) == before
    assert [m.name for m in pm.modalities()] == ["audio", "image", "text"]
    # A new modality in its own space with another width is fine.
    pm.register("depth", Faulty(lambda n: np.ones((n, 4), np.float32), name="depth-4", dim=4))
    assert pm.stats()["spaces"]["depth"] == {"dim": 4, "records": 0, "modalities": ["depth"]}


# ------------------------------------------------------------------------------------ errors


BAD_OUTPUTS = [
    (lambda n: np.ones((n, 7), np.float32), DimensionError),  # wrong width
    (lambda n: np.ones((n + 1, 8), np.float32), DimensionError),  # wrong row count
    (lambda n: np.ones(8 * n, np.float32), DimensionError),  # flat
    (lambda n: np.ones((n, 8), np.int64), DTypeError),
    (lambda n: np.array([["a"] * 8] * n), DTypeError),
    (lambda n: [[1.0, 2.0]] + [[1.0]] * n, DTypeError),  # ragged
    (lambda n: np.full((n, 8), np.nan, np.float32), InvalidVectorError),
    (lambda n: np.full((n, 8), np.inf, np.float32), InvalidVectorError),
    (lambda n: np.zeros((n, 8), np.float32), InvalidVectorError),
]


@pytest.mark.parametrize("make, error", BAD_OUTPUTS)
def test_bad_encoder_output_is_typed_and_changes_nothing(pm: PerceptualMemory, make: Any, error: type) -> None:
    pm.register("bad", Faulty(make), space="clip")
    before = observe(pm)
    with pytest.raises(error):
        pm.add("bad", "x", user_id="u1")
    with pytest.raises(error):  # atomic batch: the good items of other modalities do not land
        pm.add_many(
            [
                dict(modality="image", item=image(("red", 16)), user_id="u1"),
                dict(modality="audio", item=tone(2), user_id="u1"),
                dict(modality="bad", item="x", user_id="u1"),
            ]
        )
    with pytest.raises(error):
        pm.search("x", modality="bad", user_id="u1")
    assert observe(pm) == before
    assert pm.add("image", image(("red", 16)), user_id="u1").id == 11  # the id counter did not move
    assert issubclass(error, InvalidArgumentError) and issubclass(error, ValueError)


class FailingAdd:
    """Wraps an engine index; its add fails (a stand-in for an engine error mid-batch)."""

    def __init__(self, inner: HybridIndex) -> None:
        self.inner = inner

    def add(self, *args: Any, **kwargs: Any) -> None:
        raise StoreError("disk full")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __len__(self) -> int:
        return len(self.inner)


def test_engine_failure_mid_batch_rolls_back(pm: PerceptualMemory) -> None:
    real = pm._spaces["clip"]
    before = observe(pm)
    # Spaces are added in the order of the batch: audio lands first, then clip fails.
    pm._spaces["clip"] = FailingAdd(real)  # type: ignore[assignment]
    with pytest.raises(StoreError, match="disk full"):
        pm.add_many(
            [
                dict(modality="audio", item=tone(4), user_id="u1"),
                dict(modality="image", item=image(("red", 16)), user_id="u1"),
            ]
        )
    pm._spaces["clip"] = real
    assert observe(pm) == before
    assert pm.add("audio", tone(4), user_id="u1").id == 11


def test_encoder_exception_propagates_and_changes_nothing(pm: PerceptualMemory) -> None:
    def boom(n: int) -> Any:
        raise RuntimeError("model crashed")

    pm.register("bad", Faulty(boom), space="clip")
    before = observe(pm)
    with pytest.raises(RuntimeError, match="model crashed"):
        pm.add_many(
            [
                dict(modality="image", item=image(("red", 16)), user_id="u1"),
                dict(modality="bad", item="x", user_id="u1"),
            ]
        )
    assert observe(pm) == before


def test_add_argument_errors_change_nothing(pm: PerceptualMemory) -> None:
    red = image(("red", 16))
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        (dict(modality="smell", item=red, user_id="u1"), InvalidArgumentError),
        (dict(modality=None, item=red, user_id="u1"), InvalidArgumentError),
        (dict(modality="image", item=None, user_id="u1"), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="a/b"), InvalidNameError),
        (dict(modality="image", item=red, user_id=""), InvalidNameError),
        (dict(modality="image", item=red, user_id="u1", agent_id="x\n"), InvalidNameError),
        (dict(modality="image", item=red, user_id="u1", caption=""), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", caption="  "), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", caption=5), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", caption="x" * 100_001), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", ref=""), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", ref=b"/p"), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", importance=1.5), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", importance=True), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", importance="high"), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", metadata={"a": object()}), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", metadata={1: "x"}), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", metadata=["x"]), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", timestamp="yesterday"), InvalidArgumentError),
        (dict(modality="image", item=red, user_id="u1", timestamp=True), InvalidArgumentError),
    ]
    before = observe(pm)
    calls = list(pm_encoder_calls(pm))
    for kwargs, error in cases:
        with pytest.raises(error):
            pm.add(**kwargs)
        with pytest.raises(error):  # one bad item spoils the batch
            pm.add_many([dict(modality="image", item=red, user_id="u1"), kwargs])
    for batch in (
        [],
        iter(()),
        [dict(modality="image", item=red)],
        [dict(modality="image", item=red, user_id="u1", colour="red")],
        ["image"],
        dict(modality="image", item=red, user_id="u1"),
    ):
        with pytest.raises(InvalidArgumentError):
            pm.add_many(batch)  # type: ignore[arg-type]
    assert observe(pm) == before
    assert list(pm_encoder_calls(pm)) == calls  # validation runs before any encoding


def pm_encoder_calls(pm: PerceptualMemory) -> list[int]:
    return [len(getattr(pm._encoders[m.name], "calls", [])) for m in pm.modalities()]


def test_search_argument_errors(pm: PerceptualMemory) -> None:
    before = observe(pm)
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        (dict(modality="smell"), InvalidArgumentError),
        (dict(modality="text", target="smell"), InvalidArgumentError),
        (dict(modality="text", k=0), InvalidArgumentError),
        (dict(modality="text", k=True), InvalidArgumentError),
        (dict(modality="text", k=2.0), InvalidArgumentError),
        (dict(modality="text", mode="bm25"), InvalidArgumentError),
        (dict(modality="text", min_cosine="high"), InvalidArgumentError),
        (dict(modality="text", user_id="a/b"), InvalidNameError),
        (dict(modality="text", time_range=(day(5), day(1))), InvalidTimeRangeError),
        (dict(modality="text", time_range=(day(1),)), InvalidArgumentError),
        (dict(modality="text", time_range=("a", "b")), InvalidArgumentError),
        (dict(modality="text", query=None), InvalidArgumentError),
        (dict(modality="text", query="no colour words at all"), InvalidVectorError),  # zero vector
        (dict(modality="image", query=image(("red", 16)), mode="hybrid"), InvalidArgumentError),
    ]
    for kwargs, error in cases:
        args = {"query": "red", "user_id": "u1", **kwargs}
        with pytest.raises(error):
            pm.search(args.pop("query"), **args)
    assert observe(pm) == before


@pytest.mark.parametrize("ids", [[], "12", [0], [-1], [1.5], [True], ["1"], [None], [2**64], 7])
def test_invalid_ids(pm: PerceptualMemory, ids: Any) -> None:
    before = observe(pm)
    with pytest.raises(InvalidArgumentError):
        pm.delete(ids, user_id="u1")
    assert observe(pm) == before


def test_get_errors(pm: PerceptualMemory) -> None:
    assert pm.get(999) is None and pm.get(0) is None  # no such record, as everywhere
    with pytest.raises(InvalidArgumentError):
        pm.get("1")  # type: ignore[arg-type]
    assert pm.get(np.uint64(1)).ref == "file:///p/red.png"  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        pm.records(user_id="u1", modality="smell")


def test_errors_are_trimem_errors() -> None:
    for e in (
        DimensionError,
        DTypeError,
        InvalidVectorError,
        InvalidNameError,
        EmbedderMismatchError,
        UnknownIdError,
        StoreCorruptedError,
    ):
        assert issubclass(e, TrimemError)


# ------------------------------------------------------------------------------------ persistence


def save(pm: PerceptualMemory, path: Path) -> None:
    store = Store(path)
    try:
        store.checkpoint(pm.indexes(), pm.state())
    finally:
        store.close()


def restore(path: Path) -> tuple[bytes, dict[str, HybridIndex]]:
    store = Store(path)
    try:
        state = store.take_state()
        assert state is not None
        indexes = {}
        for name in PerceptualMemory.index_names(state):
            index = store.take_index(name)
            assert index is not None
            indexes[name] = index
        return state, indexes
    finally:
        store.close()


def test_persistence_round_trip(pm: PerceptualMemory, tmp_path: Path) -> None:
    queries: list[tuple[Any, dict[str, Any]]] = [
        ("red", dict(modality="text", user_id="u1", target="image", k=5)),
        ("red note", dict(modality="text", user_id="u1", k=10)),
        (image(("green", 14), ("black", 2)), dict(modality="image", user_id="u1", k=3)),
        (tone(6), dict(modality="audio", user_id="u1", k=5)),
        ("red", dict(modality="text", user_id="u2", k=5)),
    ]
    expected = [pm.search(q, **kw) for q, kw in queries]
    records = {u: pm.records(user_id=u) for u in ("u1", "u2")}
    stats = pm.stats()
    assert [n for n, _ in pm.indexes()] == ["percept_audio", "percept_clip"]
    save(pm, tmp_path / "store")

    state, indexes = restore(tmp_path / "store")
    assert sorted(indexes) == ["percept_audio", "percept_clip"]
    back = PerceptualMemory(state=state, indexes=indexes)
    assert back.modalities() == pm.modalities()
    assert {u: back.records(user_id=u) for u in ("u1", "u2")} == records
    # Encoders are code: until they are registered again, the restored modalities cannot encode.
    assert back.stats()["modalities"]["image"]["registered"] is False
    with pytest.raises(InvalidArgumentError, match="register it"):
        back.search("red", modality="text", user_id="u1")
    with pytest.raises(InvalidArgumentError, match="register it"):
        back.add("image", image(("red", 16)), user_id="u1")
    with pytest.raises(EmbedderMismatchError):
        back.register("image", Faulty(lambda n: np.ones((n, 8), np.float32), name="another-model"), space="clip")
    with pytest.raises(DimensionError):
        back.register("thermal", Faulty(lambda n: np.ones((n, 3), np.float32), name="thermal-3", dim=3), space="clip")
    back.register("image", ColourHistogram(), space="clip")
    back.register("text", ColourWords(), space="clip")
    back.register("audio", Bands())
    assert back.stats() == stats
    for (q, kw), want in zip(queries, expected):
        assert back.search(q, **kw) == want
    # Ids continue after the last one; deletes work on restored records.
    assert back.add("image", image(("white", 16)), user_id="u1").id == 11
    red = records["u1"][0]
    assert back.delete([red.id], user_id="u1") == 1
    # A second round trip keeps going (through load() on an instance with encoders registered).
    save(back, tmp_path / "store")
    state2, indexes2 = restore(tmp_path / "store")
    again = new_memory({"image": ColourHistogram(), "text": ColourWords(), "audio": Bands()})
    again.load(state2, indexes2)
    assert again.stats() == back.stats()
    assert again.search("white", modality="text", user_id="u1", k=1)[0].record.id == 11
    assert again.add("audio", tone(0), user_id="u3").id == 12


def test_state_is_msgpack_not_pickle(pm: PerceptualMemory) -> None:
    st = msgspec.msgpack.decode(pm.state(), type=PerceptualState)
    assert st.last_id == 10 and st.spaces == [("audio", 8), ("clip", 8)]
    assert "pickle" not in inspect.getsource(perceptual_module)


def test_load_errors_change_nothing(pm: PerceptualMemory, encoders: dict[str, Any]) -> None:
    state = pm.state()
    indexes = dict(pm.indexes())
    target = PerceptualMemory()
    target.register("image", ColourHistogram(), space="clip")
    before = observe(target)
    bad_version = msgspec.msgpack.encode(
        msgspec.structs.replace(msgspec.msgpack.decode(state, type=PerceptualState), version=99)
    )
    clash_dim = msgspec.msgpack.encode(
        msgspec.structs.replace(
            msgspec.msgpack.decode(state, type=PerceptualState), spaces=[("audio", 8), ("clip", 4)], modalities=[]
        )
    )
    cases: list[tuple[Any, Any, type[Exception]]] = [
        (b"\x00garbage", indexes, StoreCorruptedError),
        (b"", indexes, StoreCorruptedError),
        ("text", indexes, InvalidArgumentError),
        (bad_version, indexes, StoreVersionError),
        (state, {"percept_clip": indexes["percept_clip"]}, StoreError),  # audio index missing
        (state, {**indexes, "percept_audio": HybridIndex(4)}, StoreCorruptedError),  # width differs
        (state, {**indexes, "percept_audio": "index"}, InvalidArgumentError),
        (clash_dim, {"percept_audio": indexes["percept_audio"], "percept_clip": HybridIndex(4)}, DimensionError),
    ]
    for blob, idx, error in cases:
        with pytest.raises(error):
            target.load(blob, idx)
        assert observe(target) == before
    # A registered encoder that differs from the stored one.
    other = PerceptualMemory()
    other.register("image", Faulty(lambda n: np.ones((n, 8), np.float32), name="another-model"), space="clip")
    with pytest.raises(EmbedderMismatchError):
        other.load(state, indexes)
    moved = PerceptualMemory()
    moved.register("image", ColourHistogram())
    with pytest.raises(InvalidArgumentError):
        moved.load(state, indexes)
    # Only into an empty memory.
    busy = new_memory(encoders)
    busy.add("image", image(("red", 16)), user_id="u9")
    before_busy = observe(busy)
    with pytest.raises(InvalidArgumentError, match="empty"):
        busy.load(state, indexes)
    assert observe(busy) == before_busy
    with pytest.raises(InvalidArgumentError):
        PerceptualMemory(state=state)
    with pytest.raises(InvalidArgumentError):
        PerceptualMemory(indexes=indexes)
    with pytest.raises(StoreCorruptedError):
        PerceptualMemory.index_names(b"\xc1")


def test_module_doctests() -> None:
    result = doctest.testmod(perceptual_module)
    assert result.attempted > 0 and result.failed == 0
