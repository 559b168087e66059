"""Sentences and clauses: where they split (and where a dot does not), questions, polite
requests, hypotheticals, negations and decisions."""

from __future__ import annotations

from trimem.text.sentences import (
    clauses,
    has_decision,
    is_hypothetical,
    is_polite,
    negated_before,
    sentence_ends,
    sentences,
)


def test_sentences_split_at_ends_not_inside_names_or_numbers() -> None:
    got = list(sentences("I use node.js 3.12. Is it fast? 我用Rust。好吗\nok"))
    assert [s.body for s in got] == ["I use node.js 3.12", "Is it fast", "我用Rust", "好吗", "ok"]
    assert [s.question for s in got] == [False, True, False, True, False]
    assert got[0].text == "I use node.js 3.12."
    assert sentence_ends("a. b! 好。") == [2, 5, 8]


def test_clauses_keep_a_lead_in_with_what_follows() -> None:
    assert clauses("My main language is TypeScript, on macOS") == ["My main language is TypeScript", "on macOS"]
    assert clauses("set my editor to Vim and change my database to MySQL") == [
        "set my editor to Vim",
        "change my database to MySQL",
    ]
    assert clauses("I use Vim and Emacs") == ["I use Vim and Emacs"]  # "and" before a name joins
    assert clauses("以后,我们都用Go") == ["以后, 我们都用Go"]
    assert clauses("我用Rust,因为它快") == ["我用Rust", "它快"]
    # a comma inside a number ends no clause; one between numbers does
    assert clauses("My rent is $1,850 a month, bills included") == ["My rent is $1,850 a month", "bills included"]
    assert clauses("I have 2 cats,3 dogs") == ["I have 2 cats", "3 dogs"]


def test_what_changes_what_a_clause_asserts() -> None:
    assert is_polite("Could you set my editor to Vim") and is_polite("帮我把编辑器改成Vim")
    assert not is_polite("What is my editor")
    assert is_hypothetical("if we switch to MySQL") and is_hypothetical("要不要把数据库换成MySQL")
    assert not is_hypothetical("we switched to MySQL")
    clause = "I don't want to switch my editor to Vim"
    assert negated_before(clause, clause.index("switch")) and not negated_before(clause, 1)
    assert negated_before("我们决定不用MongoDB", 6) and not negated_before("不错，就用它", 3)
    assert has_decision("the team picked Vite") and has_decision("我们决定采用X") and not has_decision("I use X")
