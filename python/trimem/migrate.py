"""Moving a whole memory between stores — a folder and a PostgreSQL schema, either way:

    python -m trimem migrate --from ./agent_memory --to "postgresql://me@db/mem?schema=bot"

Every layer goes (episodes with their vectors and use counts, facts with their full history and
pins, aliases, shared and private documents) through one export file, so the destination is
built with the source's embedder and no text is embedded again. The destination must be empty
(of memories: aliases merge); ``--reset`` empties it first, which makes an interrupted migration safe to run again. Afterwards
the two are compared: counts per kind, and a sample of episodes recalled by their own text from
both, which must come back first in each.

>>> import tempfile
>>> from trimem import Memory
>>> src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
>>> with Memory(src, embedder="hashing") as m:
...     _ = m.retain("Production database is PostgreSQL 16", user_id="u1")
>>> report = migrate(src, dst)
>>> report.counts == report.source_counts, report.recalls_matched
(True, 1)
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import Any

from trimem.errors import InvalidArgumentError

__all__ = ["MigrationReport", "migrate"]


@dataclass
class MigrationReport:
    """What moved: counts on each side, and how many sampled recalls agreed."""

    source_counts: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    recalls_sampled: int = 0
    recalls_matched: int = 0

    def ok(self) -> bool:
        return self.counts == self.source_counts and self.recalls_matched == self.recalls_sampled


def _counts(mem: Any) -> dict[str, int]:
    b = mem._backend
    users = b.users()
    return {
        "users": len(users),
        "episodes": sum(len(b.episode_ids(f"{a}/{u}")) for a, u in users),
        "facts": len(b.facts()),
        "fact_versions": sum(len(h[3]) for h in b.fact_histories()),
        "documents": len(b.document_ids(None)),
        "aliases": len(b.alias_table()),
        "items": sum(1 for _ in b.items.stored()),
    }


def _reset(mem: Any) -> None:
    """Forgets everything the destination holds (every user's memories, facts and documents, and
    every item)."""
    from trimem._backend.ops import Op, OpForget, OpItemDelete

    b = mem._backend
    with b.lock:
        users = sorted({*b.users(), *((a, u) for a, u, _ in b.facts())})
        ids = [i for a, u in users for i in b.episode_ids(f"{a}/{u}")]
        ops: list[Op] = [OpForget(episode_ids=ids, knowledge_ids=b.document_ids(None), users=users)]
        keys = [(item.namespace, item.key) for item, _, _ in b.items.stored()]
        b.write([*ops, OpItemDelete(keys=keys)] if keys else ops)


def migrate(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    embedder: Any = "auto",
    reset: bool = False,
    sample: int = 20,
    seed: int = 0,
) -> MigrationReport:
    """Copies every layer of the memory at `source` into the empty one at `destination` (see
    the module docstring); returns the comparison of the two."""
    from trimem import Memory

    if os.fspath(source) == os.fspath(destination):
        raise InvalidArgumentError("source and destination are the same store")
    report = MigrationReport()
    with Memory(source, embedder=embedder) as src:
        report.source_counts = _counts(src)
        with Memory(destination, embedder=src.embedder) as dst:
            if reset:
                _reset(dst)
            held = _counts(dst)
            if any(n for kind, n in held.items() if kind != "aliases"):  # aliases merge: adding one twice adds nothing
                raise InvalidArgumentError(
                    f"the destination is not empty ({held}); pass reset=True (--reset) to empty it first"
                )
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "migration.trimem")
                src.export(path)
                dst.import_from(path)
            report.counts = _counts(dst)
            episodes = [e for a, u in src._backend.users() for e in src.episodes(user_id=u, agent_id=a)]
            for e in random.Random(seed).sample(episodes, min(sample, len(episodes))):
                report.recalls_sampled += 1
                theirs = dst.search(e.text, user_id=e.user_id, agent_id=e.agent_id, k=1)
                report.recalls_matched += bool(theirs) and theirs[0].episode.text == e.text
    return report
