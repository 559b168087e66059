"""Writes the store the format test opens (tests/store/data/format1/). It was run once with the
trimem of commit 968239a — before the backend seam — and its output is committed, so that the
test proves a folder written by that version still opens. Run: python make_format1_store.py DIR."""

import sys
from datetime import UTC, datetime

import numpy as np

from trimem import Memory

T = datetime(2026, 10, 14, 9, 0, tzinfo=UTC)


class Colour:
    name, dim = "colour-3", 3

    def __call__(self, items: list[object]) -> np.ndarray:
        return np.array([[1.0, 0.1, 0.0] for _ in items], dtype=np.float32)


with Memory(sys.argv[1], embedder="hashing") as mem:
    first = mem.retain("Started the Node service in Docker, port 8080", user_id="u1", session_id="s1", timestamp=T)
    mem.retain("My main language is TypeScript", user_id="u1", timestamp=T)
    mem.reflect(user_id="u1")
    mem.facts.set("editor", "vim", user_id="u1", source=[first.id], at=T)
    mem.facts.alias("editor", ["编辑器"])
    mem.facts.pin("editor", user_id="u1")
    mem.knowledge.add("Travel policy: taxi in Shanghai up to 100 per day", source="policy.md", timestamp=T)
    mem.working("s1").add_turn("user", "remember the retry count", timestamp=1)
    mem.working("s1").set("retry", 2)
    mem.save_working("s1")
    mem.perceptual.register("colour", Colour())
    mem.perceptual.add("colour", [1, 2, 3], user_id="u1", caption="a red mug", timestamp=T)
    _ = mem.graph  # built, so the snapshot holds it
    mem.checkpoint()  # everything above in the snapshot; what follows in the log
    mem.retain("Switched the main language to Rust", user_id="u1", timestamp=datetime(2026, 11, 1, tzinfo=UTC))
    mem.reflect(user_id="u1")
    mem.recall("node port", user_id="u1", now=datetime(2026, 11, 20, tzinfo=UTC))
    mem.flush_touches()
    print(mem.stats()["episodes"], "episodes")
