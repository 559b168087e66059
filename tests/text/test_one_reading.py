"""One sentence, one reading: the router, reflect and the graph make the same facts of the 30
English and Chinese sentences of benches/one_reading.py (and its markdown table says so)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("one_reading", REPO_ROOT / "benches" / "one_reading.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("one_reading", module)
    spec.loader.exec_module(module)
    return module


ONE_READING = bench()


def test_the_sentences_are_a_varied_half_english_half_chinese_set() -> None:
    sentences = ONE_READING.SENTENCES
    assert len(sentences) == 30
    chinese = [t for t, _ in sentences if any("\u4e00" <= c <= "\u9fff" for c in t)]
    assert len(chinese) == 15
    kinds = {k for _, k in sentences}
    assert {"fact", "preference", "decision", "change", "negation", "event", "question", "injection"} <= kinds


@pytest.mark.parametrize(("text", "kind"), ONE_READING.SENTENCES)
def test_router_reflect_and_graph_agree(text: str, kind: str) -> None:
    _, router = ONE_READING.router_reading(text)
    _, reflect = ONE_READING.reflect_reading(text)
    _, graph = ONE_READING.graph_reading(text)
    assert router == reflect == graph, (router, reflect, graph)
    if kind in ("fact", "preference", "decision", "change"):
        assert router, f"{text!r} is a {kind}: it states a fact"
    else:
        assert not router, f"{text!r} is a {kind}: it states no fact"


def test_the_table_says_every_row_agrees() -> None:
    lines, rows, agreed = ONE_READING.table()
    assert (rows, agreed) == (30, 30)
    assert len(lines) == 32 and all(line.endswith("| yes |") for line in lines[2:])
