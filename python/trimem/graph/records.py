"""The graph's public records: an entity, a relation, a neighbourhood, and how they read as text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from trimem.timeutil import from_micros

__all__ = [
    "MAX_COOCCURRING",
    "MENTIONED_WITH",
    "SAME_EPISODE",
    "SAME_SENTENCE",
    "Entity",
    "GraphExtractor",
    "Relation",
    "Subgraph",
    "listing",
]

MENTIONED_WITH: Final = "mentioned_with"
MAX_COOCCURRING: Final = 30
"""Co-occurrence pairs come from the first 30 entities of an episode (at most 435 pairs): a long
log pasted into memory must not cost a quadratic number of edges."""
SAME_SENTENCE: Final = 1.0
SAME_EPISODE: Final = 0.5

GraphExtractor = Callable[[str], Any]
"""``callable(text) -> str | Mapping``: JSON (or a mapping) ``{"entities": [...], "relations":
[...]}``, see :func:`~trimem.graph.parse_extraction`."""


class Entity(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entity of a scope: its display name (first sighting), type and provenance.

    Types from the rules: person, place, org, tech, version, port, host, url, email, path,
    file, code, concept (a common noun), thing (an unknown name), user (the speaker), group
    (the team). A later, more specific sighting replaces concept or thing."""

    name: str
    type: str
    mentions: int  # how often its sources mention it
    sources: list[int]  # episode ids, ascending
    first_seen: int  # µs since the epoch, UTC
    last_seen: int
    scope: str = ""
    facts: list[str] = []  # keys of the facts that name it


class Relation(msgspec.Struct, frozen=True, omit_defaults=True):
    """A (subject, predicate, object) triple; ``mentioned_with`` is symmetric (subject < object)."""

    subject: str
    predicate: str
    object: str
    weight: float  # statements (1 each) or co-occurrence (1 per sentence, 0.5 per episode), summed
    sources: list[int]
    first_seen: int
    last_seen: int
    scope: str = ""
    facts: list[str] = []


class Subgraph(msgspec.Struct, frozen=True):
    """What :meth:`MemoryGraph.neighbours` returns: entities in BFS order, and every relation
    between two of them. Empty when the entity is unknown in the scope."""

    center: str
    scope: str
    depth: int
    entities: list[Entity]
    relations: list[Relation]

    def to_text(self) -> str:
        if not self.entities:
            return f"[{self.scope}] {self.center!r}: not in the graph"
        head = f"[{self.scope}] around {self.entities[0].name} (depth {self.depth})"
        return "\n".join([head, *listing(self.entities, self.relations)])


def _when(us: int) -> str:
    return from_micros(us).strftime("%Y-%m-%d %H:%M")


def _provenance(sources: list[int], facts: list[str]) -> str:
    parts = []
    if sources:
        shown = ", ".join(map(str, sources[:8])) + (", …" if len(sources) > 8 else "")
        parts.append(f"episodes {shown}")
    if facts:
        parts.append("facts " + ", ".join(facts[:8]) + (", …" if len(facts) > 8 else ""))
    return "; ".join(parts)


def listing(ents: list[Entity], rels: list[Relation]) -> list[str]:
    """Entities, then relations, one per line with provenance, for :meth:`to_text`."""
    lines = ["entities:"] if ents else []
    for e in ents:
        seen = _when(e.first_seen) if e.first_seen == e.last_seen else f"{_when(e.first_seen)} .. {_when(e.last_seen)}"
        lines.append(f"  {e.name} ({e.type}) x{e.mentions}, {_provenance(e.sources, e.facts)}, seen {seen}")
    if rels:
        lines.append("relations:")
    for r in rels:
        where = _provenance(r.sources, r.facts)
        lines.append(f"  {r.subject} -[{r.predicate}]-> {r.object} (weight {r.weight:g}; {where})")
    return lines
