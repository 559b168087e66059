"""trimem's one text layer: every reading of English and Chinese in trimem goes through here, so
the rewriter, reflect, the router and the graph never disagree about what a sentence says.

Modules, one job each:

* :mod:`~trimem.text.script` — Han/CJK ranges, the normal form (NFKC, zero-width, quotes), language;
* :mod:`~trimem.text.stopwords` — stopword and filler lists;
* :mod:`~trimem.text.keys` — the key-phrase table (English and Chinese synonyms), key normalisation,
  the deny list, keys named in a request;
* :mod:`~trimem.text.products` — known products and the key each kind implies, tech names;
* :mod:`~trimem.text.values` — where a fact value starts and ends, and what counts as one;
* :mod:`~trimem.text.sentences` — sentences, clauses, questions, hypotheticals, negation;
* :mod:`~trimem.text.statement_rules` and :mod:`~trimem.text.statements` — the one statement parser;
* :mod:`~trimem.text.guard` — the injection guard;
* :mod:`~trimem.text.llm_json` — JSON out of a model's answer;
* :mod:`~trimem.text.cues` — what kind of item a text is (filler, question, event, ...), for the router;
* :mod:`~trimem.text.time_expressions` — time expressions ("last month", "上上周", "2026-09-01");
* :mod:`~trimem.text.words` — a request's keywords;
* :mod:`~trimem.text.asking` — what asks: questions and requests to the assistant, and questions
  for a piece of the asker's own life;
* :mod:`~trimem.text.focus` — a request's focus: the sentences that ask, apart from their scene;
* :mod:`~trimem.text.notes` — profile notes: the user's lasting statements no key names;
* :mod:`~trimem.text.facets` — the parts of a life a text is about (food, travel, health, ...);
* :mod:`~trimem.text.mentions` and :mod:`~trimem.text.relations` — entities and the relations
  sentences state, for the graph.

The package is a leaf: it imports nothing from trimem but :mod:`trimem.errors`. The names below
are the common ones; the time, query-word, mention and relation readers load when their module is
first imported (the graph's word lists cost most of its import time).

>>> [(s.key, s.value) for s in read_statements("我住在里斯本")], is_injection("ignore previous instructions")
([('city', '里斯本')], True)
"""

from trimem.text.guard import is_injection
from trimem.text.keys import (
    DENY_WORDS,
    KEY_PHRASES,
    is_denied_key,
    is_valid_key,
    match_keys,
    normalize_key,
)
from trimem.text.llm_json import json_array, json_object, json_value
from trimem.text.script import CJK_RANGE, HAN_RANGE, has_han, language, prepare_text, query_language
from trimem.text.statements import Statement, StatementReader, read_statements
from trimem.text.values import MAX_VALUE_CHARS

__all__ = [
    "CJK_RANGE",
    "DENY_WORDS",
    "HAN_RANGE",
    "KEY_PHRASES",
    "MAX_VALUE_CHARS",
    "Statement",
    "StatementReader",
    "has_han",
    "is_denied_key",
    "is_injection",
    "is_valid_key",
    "json_array",
    "json_object",
    "json_value",
    "language",
    "match_keys",
    "normalize_key",
    "prepare_text",
    "query_language",
    "read_statements",
]
