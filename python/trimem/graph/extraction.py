"""What the graph reads from one text: the entities it mentions and the relations it states.

The rule extractor (:func:`extract`) joins two readings of the text layer: the relations its
sentences state between names (:mod:`trimem.text.relations`: "Alice uses Docker", "张三负责后端")
and what the speaker says about their own facts (:mod:`trimem.text.statements`, the reading
reflect and the router use). A fact statement becomes the relation ``(user, key, value)`` — the
same triple :meth:`~trimem.graph.MemoryGraph.add_fact` records once reflect stores the fact — in
place of the verb relation that said it ("I live in Lisbon" → ``(user, city, Lisbon)``, not
``lives_in``). :func:`parse_extraction` validates what an LLM extractor returns instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from trimem.errors import GraphExtractionError
from trimem.text.llm_json import json_value
from trimem.text.mentions import MAX_NAME_CHARS, classify, display_name, entity_key
from trimem.text.products import canonical_name
from trimem.text.relations import (
    Extraction,
    FoundEntity,
    FoundRelation,
    canonical_predicate,
    is_entity_type,
    mention_sentences,
    read_relations,
)
from trimem.text.script import prepare_text
from trimem.text.sentences import sentence_ends
from trimem.text.statements import read_statements

__all__ = ["MAX_LLM_ITEMS", "SPEAKERS", "extract", "fact_value_type", "parse_extraction"]

MAX_LLM_ITEMS: Final = 500
SPEAKERS: Final = frozenset({"user", "assistant", "team"})
"""Entity keys of the speaker and the team: they relate through statements, never by co-occurrence."""

_GENERIC: Final = frozenset({"thing", "concept"})
# What the value of a fact key is, when its name alone does not say (a city is a place).
_FACT_VALUE_TYPES: Final = {
    "name": "person",
    "city": "place",
    "country": "place",
    "location": "place",
    "hometown": "place",
    "employer": "org",
    "company": "org",
    "primary_language": "tech",
    "database": "tech",
    "editor": "tech",
    "target_os": "tech",
    "framework": "tech",
    "shell": "tech",
    "browser": "tech",
    "城市": "place",
    "公司": "org",
    "名字": "person",
}


def fact_value_type(key: str, value: str) -> str:
    """The entity type of a fact's value: what the name says (a product, a place...), else what
    the key says (``city`` → place)."""
    t = classify(value)
    return _FACT_VALUE_TYPES.get(key.casefold(), t) if t in _GENERIC else t


def extract(text: str, *, role: str = "user") -> Extraction:
    """The rule extractor: entities and stated relations of one text, English and Chinese.

    First person is the speaker (``role``: "user" or "assistant"), "we"/"我们" the ``team``;
    they appear only as the subject of a relation. A statement of the user's facts (any role's
    decision) relates ``user`` to the value under the fact's key. Co-occurrence is left to the
    graph.

    >>> x = extract("张三负责后端。Node.js v18.2.0 runs on port 8080")
    >>> [(e.name, e.type) for e in x.entities]
    [('张三', 'person'), ('后端', 'concept'), ('Node.js', 'tech'), ('v18.2.0', 'version'), ('8080', 'port')]
    >>> for r in x.relations:
    ...     print(r.subject, r.predicate, r.object)
    张三 responsible_for 后端
    Node.js has_version v18.2.0
    Node.js runs_on 8080
    >>> [(r.subject, r.predicate, r.object) for r in extract("I live in Lisbon and I use Neovim").relations]
    [('user', 'city', 'Lisbon'), ('user', 'editor', 'Neovim')]
    """
    found = read_relations(text, role=role)
    if role not in ("user", "assistant"):
        return found  # tool output and system text state no facts of the user
    facts = [(s.key, s.value) for s in read_statements(text, by_user=role == "user") if s.op == "set" and s.value]
    return _with_facts(found, facts, prepare_text(text)) if facts else found


def _with_facts(found: Extraction, facts: list[tuple[str, str]], text: str) -> Extraction:
    """`found` with each fact ``(key, value)`` as the relation ``(user, key, value)``, in place of
    the speaker's or the team's verb relations to that value (one statement, one relation)."""
    entities = list(found.entities)
    by_key = {entity_key(e.name): i for i, e in enumerate(entities)}
    relations = list(found.relations)
    folded, ends = text.casefold(), sentence_ends(text.casefold())
    for key, raw in facts:
        value = canonical_name(display_name(raw))[:MAX_NAME_CHARS]
        vk = entity_key(value)
        if not vk or vk == "user":
            continue
        if "user" not in by_key:
            by_key["user"] = len(entities)
            entities.append(FoundEntity("user", "user", 1, []))
        if vk in by_key:
            old = entities[by_key[vk]]
            value = old.name
            typed = fact_value_type(key, value)
            if old.type in _GENERIC and typed not in _GENERIC:
                entities[by_key[vk]] = FoundEntity(old.name, typed, old.mentions, old.sentences)
        else:
            count, sentences = mention_sentences(value, folded, ends)
            by_key[vk] = len(entities)
            entities.append(FoundEntity(value, fact_value_type(key, value), max(1, count), sentences))
        said = [
            i
            for i, r in enumerate(relations)
            if entity_key(r.subject) in SPEAKERS and entity_key(r.object) == vk and r.predicate != key
        ]
        fact = FoundRelation("user", key, value)
        if fact in relations:
            continue
        at = said[0] if said else len(relations)
        relations = [r for i, r in enumerate(relations) if i not in said]
        relations.insert(min(at, len(relations)), fact)
    used = {entity_key(n) for r in relations for n in (r.subject, r.object)}
    # a pronoun is an entity only as a subject: drop the speaker whose one relation became a fact
    entities = [e for e in entities if e.type not in ("user", "group") or entity_key(e.name) in used]
    return Extraction(entities, relations)


# ============================================================================ LLM output


def _llm_name(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise GraphExtractionError(f"{where}: a name must be a string, got {type(value).__name__}")
    name = display_name(value)
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise GraphExtractionError(f"{where}: invalid name {value[:40]!r} (1 to {MAX_NAME_CHARS} printable characters)")
    return name


def _llm_predicate(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise GraphExtractionError(f"{where}: predicate must be a string, got {type(value).__name__}")
    p = canonical_predicate(value)
    if p is None:
        raise GraphExtractionError(f"{where}: invalid predicate {value[:40]!r}")
    return p


def parse_extraction(reply: object, text: str) -> Extraction:
    """Validates an extractor's reply for `text` (raises :class:`GraphExtractionError`).

    ``reply`` is JSON text (a ```json fence is allowed) or a mapping: ``entities`` a list of
    names or ``{"name", "type"?}``; ``relations`` (optional) a list of ``{"subject",
    "predicate", "object"}`` or ``[s, p, o]``. Names are 1–80 printable characters, types
    ``[a-z_]`` words (default "thing"), predicates snake_case ("works for" → ``works_at``) or a
    short Chinese verb (负责 → ``responsible_for``). An endpoint not listed becomes an entity.

    >>> x = parse_extraction('{"entities": ["Alice", {"name": "Acme", "type": "org"}],'
    ...                      ' "relations": [["Alice", "works for", "Acme"]]}', "Alice works for Acme")
    >>> [(e.name, e.type, e.sentences) for e in x.entities], x.relations[0].predicate
    ([('Alice', 'thing', [0]), ('Acme', 'org', [0])], 'works_at')
    >>> parse_extraction('{"entities": [42]}', "")
    Traceback (most recent call last):
    ...
    trimem.errors.GraphExtractionError: entities[0]: a name must be a string, got int
    """
    data: object = reply
    if isinstance(reply, (str, bytes)):
        try:
            data = json_value(reply)
        except ValueError as e:
            raise GraphExtractionError(f"the extractor's reply is not JSON: {e}") from None
    if not isinstance(data, Mapping):
        raise GraphExtractionError(f"the extractor must return an object with 'entities', got {type(data).__name__}")
    raw_entities = data.get("entities")
    raw_relations = data.get("relations", [])
    if not isinstance(raw_entities, list):
        raise GraphExtractionError("'entities' must be a list")
    if not isinstance(raw_relations, list):
        raise GraphExtractionError("'relations' must be a list")
    if len(raw_entities) > MAX_LLM_ITEMS or len(raw_relations) > MAX_LLM_ITEMS:
        raise GraphExtractionError(f"at most {MAX_LLM_ITEMS} entities and {MAX_LLM_ITEMS} relations per text")
    types: dict[str, tuple[str, str]] = {}
    for i, item in enumerate(raw_entities):
        where = f"entities[{i}]"
        if isinstance(item, Mapping):
            name = _llm_name(item.get("name"), where)
            t = item.get("type", "thing")
            t = t.strip().casefold().replace(" ", "_") if isinstance(t, str) else t
            if not isinstance(t, str) or not is_entity_type(t):
                raise GraphExtractionError(f"{where}: invalid type {item.get('type')!r}")
        else:
            name, t = _llm_name(item, where), "thing"
        types.setdefault(entity_key(name), (name, t))
    triples: list[tuple[str, str, str]] = []
    for i, item in enumerate(raw_relations):
        where = f"relations[{i}]"
        if isinstance(item, Mapping):
            parts = [item.get("subject"), item.get("predicate"), item.get("object")]
        elif isinstance(item, list) and len(item) == 3:
            parts = list(item)
        else:
            raise GraphExtractionError(f"{where}: a relation is {{subject, predicate, object}} or [s, p, o]")
        s, o = _llm_name(parts[0], where), _llm_name(parts[2], where)
        p = _llm_predicate(parts[1], where)
        for n in (s, o):
            types.setdefault(entity_key(n), (n, "thing"))
        triples.append((types[entity_key(s)][0], p, types[entity_key(o)][0]))
    folded = prepare_text(text).casefold()
    ends = sentence_ends(folded)
    entities = []
    for name, t in types.values():
        count, sentences = mention_sentences(name, folded, ends)
        entities.append(FoundEntity(name, t, max(1, count), sentences))
    seen: set[tuple[str, str, str]] = set()
    relations = []
    for s, p, o in triples:
        k = (entity_key(s), p, entity_key(o))
        if k[0] != k[2] and k not in seen:
            seen.add(k)
            relations.append(FoundRelation(s, p, o))
    return Extraction(entities, relations)
