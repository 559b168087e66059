"""The memory graph: entities and the relations between them, read from episodes and facts.

Every episode adds what it mentions — people, places, organisations, products and tech (Docker,
PostgreSQL, Node.js), versions (v18.2.0), ports (8080), hosts, files, code identifiers, quoted
names, Chinese names of things (张三, 后端) — and the relations its sentences state: "X uses Y",
"X depends on Y", "X works at Y", "X 负责 Y", "我们用 X 做 Y"… plus ``mentioned_with`` between
everything one episode mentions (weight 1 in one sentence, 0.5 in one episode). A fact
``key → value`` becomes ``(user, key, value)``. Each entity and relation keeps its provenance
(episode ids, fact keys), first and last sighting (µs) and a mention count or weight, so
forgetting an episode removes exactly what only that episode supported.

Extraction is rule-based by default (English and Chinese, local, deterministic; see
:func:`extract`), through the text layer: the relations sentences state, and the facts the
speaker states about themself read exactly as reflect reads them — "I live in Lisbon" relates
``user`` to Lisbon as ``city``, the triple the fact ``city → Lisbon`` makes; ``MemoryGraph(extractor=llm)`` takes any ``callable(text) -> JSON or mapping``
of ``{"entities": [...], "relations": [...]}`` instead, validated item by item. Scopes (a string
such as ``"agent/user"``) never mix: every entity and relation belongs to exactly one.

>>> g = MemoryGraph()
>>> ents, rels = g.add_episode(1, "Alice uses Docker and PostgreSQL.", 0, user_id="u1")
>>> [(e.name, e.type) for e in ents]
[('Alice', 'person'), ('Docker', 'tech'), ('PostgreSQL', 'tech')]
>>> [(r.subject, r.predicate, r.object) for r in rels if r.predicate != "mentioned_with"]
[('Alice', 'uses', 'Docker'), ('Alice', 'uses', 'PostgreSQL')]
>>> _ = g.add_episode(2, "我们用 Redis 做缓存，张三负责后端。", 1, user_id="u1")
>>> g.add_fact("database", "postgres", user_id="u1", timestamp=2)
>>> [(r.subject, r.predicate, r.object) for r in g.relations(user_id="u1", entity="PostgreSQL")
...  if r.predicate != "mentioned_with"]
[('Alice', 'uses', 'PostgreSQL'), ('user', 'database', 'PostgreSQL')]
>>> [e.name for e in g.neighbours("redis", user_id="u1").entities]
['Redis', '缓存', 'team', '后端', '张三']
>>> g.remove_sources([2])
>>> g.entities(user_id="u1", type="person")[0].name
'Alice'
>>> MemoryGraph.decode(g.encode()) == g
True
"""

from trimem.errors import GraphExtractionError
from trimem.graph.extraction import MAX_LLM_ITEMS, extract, parse_extraction
from trimem.graph.memory_graph import MemoryGraph
from trimem.graph.records import (
    MAX_COOCCURRING,
    MENTIONED_WITH,
    SAME_EPISODE,
    SAME_SENTENCE,
    Entity,
    GraphExtractor,
    Relation,
    Subgraph,
)
from trimem.graph.state import FORMAT_VERSION
from trimem.text.mentions import MAX_NAME_CHARS
from trimem.text.relations import Extraction, FoundEntity, FoundRelation

__all__ = [
    "FORMAT_VERSION",
    "MAX_COOCCURRING",
    "MAX_LLM_ITEMS",
    "MAX_NAME_CHARS",
    "MENTIONED_WITH",
    "SAME_EPISODE",
    "SAME_SENTENCE",
    "Entity",
    "Extraction",
    "FoundEntity",
    "FoundRelation",
    "GraphExtractionError",
    "GraphExtractor",
    "MemoryGraph",
    "Relation",
    "Subgraph",
    "extract",
    "parse_extraction",
]
