"""A folder written by trimem before the backend seam (tests/store/data/format1, made by
make_format1_store.py beside it) opens with today's code: snapshot and log, every layer."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from trimem import Memory

DATA = Path(__file__).with_name("data") / "format1"


class Colour:
    name, dim = "colour-3", 3

    def __call__(self, items: list[object]) -> np.ndarray:
        return np.array([[1.0, 0.1, 0.0] for _ in items], dtype=np.float32)


def test_a_store_of_the_first_format_opens_with_everything(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    shutil.copytree(DATA, folder)
    with Memory(folder, embedder="hashing") as mem:
        rec = mem.recovery()
        assert rec is not None and rec.snapshot and rec.torn_bytes == 0 and rec.log_records > 0
        assert [e.text for e in mem.episodes(user_id="u1")] == [
            "Started the Node service in Docker, port 8080",
            "My main language is TypeScript",
            "Switched the main language to Rust",
        ]
        lang = mem.facts.get("primary_language", user_id="u1")
        assert lang is not None and lang.value == "Rust"
        assert [v.value for v in mem.facts.history("primary_language", user_id="u1")] == ["TypeScript", "Rust"]
        editor = mem.facts.get("editor", user_id="u1")
        assert editor is not None and editor.pinned and mem.facts.aliases()["编辑器"] == ["editor"]
        assert [d.source for d in mem.knowledge.list()] == ["policy.md"]
        assert mem.working("s1").get("retry") == 2
        hit = mem.search("node port", user_id="u1", now=datetime(2026, 11, 21, tzinfo=UTC))[0]
        assert hit.episode.text.startswith("Started the Node service") and hit.explain["accesses"] == 1
        mem.perceptual.register("colour", Colour())
        assert [r.caption for r in mem.perceptual.records(user_id="u1")] == ["a red mug"]
        assert any(e.name.lower() == "docker" for e in mem.graph.entities(user_id="u1"))
        assert mem.pending_reflection() == []
        mem.retain("A new episode after the upgrade", user_id="u1")
        mem.checkpoint()
    with Memory(folder, embedder="hashing") as mem:
        assert len(mem.episodes(user_id="u1")) == 4
