"""Mentions: names of things and their types, entity keys and display names."""

from __future__ import annotations

import pytest

from trimem.text.mentions import GENERIC_TYPES, classify, display_name, entity_key, zh_type


@pytest.mark.parametrize(
    ("name", "type_"),
    [
        ("PostgreSQL", "tech"),
        ("postgres", "tech"),
        ("Lisbon", "place"),
        ("Google", "org"),
        ("Acme Corp", "org"),
        ("Alice", "person"),
        ("v18.2.0", "version"),
        ("Zorblax", "thing"),
        ("tabs", "thing"),
        ("北京", "place"),
        ("腾讯", "org"),
        ("张三", "person"),
        ("王经理", "person"),
        ("后端", "concept"),
        ("周末", "concept"),  # looks like surname + name, is a word
    ],
)
def test_classify(name: str, type_: str) -> None:
    assert classify(name) == type_


def test_keys_and_display() -> None:
    assert entity_key("Docker") == entity_key("docker") == "docker"
    assert entity_key("v18.2.0") == entity_key("18.2.0")
    assert display_name("  Ｄｏｃｋｅｒ   Compose ") == "Docker Compose"
    assert zh_type("消息队列") == "concept" and GENERIC_TYPES == {"thing", "concept"}
