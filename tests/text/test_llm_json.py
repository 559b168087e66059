"""JSON out of a model's answer: prose and fences around it, the first value of the wanted
shape, an object wrapping one list, and strict decoding for callers that report errors."""

from __future__ import annotations

import json

import pytest

from trimem.text.llm_json import MAX_ANSWER_CHARS, json_array, json_object, json_value


def test_json_object() -> None:
    assert json_object('Sure! ```json\n{"a": 1}\n``` done') == {"a": 1}
    assert json_object('[1, 2] then {"b": [3]}') == {"b": [3]}  # the first *object*
    assert json_object('{broken {"c": "}"}') == {"c": "}"}  # skips what does not decode
    for bad in ["", "no json", "[1, 2]", '{"a": 1', "null"]:
        assert json_object(bad) is None, bad


def test_json_array() -> None:
    assert json_array('Here: [{"op": "set"}] (one)') == [{"op": "set"}]
    assert json_array('{"changes": [1]}') == [1]
    assert json_array('{"a": 1}') is None  # an object holding no list
    assert json_array("42") is None and json_array("no list") is None


def test_only_the_head_of_a_runaway_answer_is_searched() -> None:
    assert json_object(" " * MAX_ANSWER_CHARS + '{"late": true}') is None


def test_json_value_is_strict() -> None:
    assert json_value('```json\n{"entities": []}\n```') == {"entities": []}
    assert json_value(b"[1]") == [1]
    with pytest.raises(json.JSONDecodeError):
        json_value('Sure! {"entities": []}')
    with pytest.raises(UnicodeDecodeError):
        json_value(b"\xff")
