"""Relations the rules read between names, and the predicates a model names (the graph's own
tests cover the extraction at length in tests/layers/test_graph.py)."""

from __future__ import annotations

import pytest

from trimem.errors import InvalidArgumentError
from trimem.text.relations import (
    NAMED_RELATIONS,
    canonical_predicate,
    is_entity_type,
    mention_sentences,
    read_relations,
)
from trimem.text.sentences import sentence_ends


def triples(text: str, role: str = "user") -> list[tuple[str, str, str]]:
    return [(r.subject, r.predicate, r.object) for r in read_relations(text, role=role).relations]


def test_relations_between_names() -> None:
    assert triples("Carol lives in Paris and works for Initech.") == [
        ("Carol", "lives_in", "Paris"),
        ("Carol", "works_at", "Initech"),
    ]
    assert triples("张三负责后端") == [("张三", "responsible_for", "后端")]
    assert triples("Bob doesn't use Vim") == []  # negated
    assert triples("I use Vim", role="tool") == []  # no speaker to attribute it to
    assert triples("我们决定用 Redis 做缓存") == [("team", "uses", "Redis"), ("Redis", "used_for", "缓存")]
    assert {"uses", "lives_in", "works_at", "likes", "prefers"} <= NAMED_RELATIONS


@pytest.mark.parametrize(
    ("said", "predicate"),
    [
        ("works for", "works_at"),
        ("Depend-On", "depends_on"),
        ("负责", "responsible_for"),
        ("用", "uses"),
        ("管理", "管理"),
    ],
)
def test_canonical_predicate(said: str, predicate: str) -> None:
    assert canonical_predicate(said) == predicate


def test_invalid_predicates_and_types() -> None:
    assert canonical_predicate("1st place") is None and canonical_predicate("x" * 41) is None
    assert is_entity_type("person") and not is_entity_type("Person") and not is_entity_type("x" * 25)


def test_mention_sentences_counts_whole_words() -> None:
    text = "go to google. we use go. 用go"
    assert mention_sentences("Go", text, sentence_ends(text)) == (3, [0, 1, 2])
    assert mention_sentences("Rust", text, sentence_ends(text)) == (0, [])


def test_bad_input() -> None:
    with pytest.raises(InvalidArgumentError):
        read_relations(42)  # type: ignore[arg-type]
