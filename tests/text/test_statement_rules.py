"""The statement shapes: every rule names its kind and who may say it, Chinese shapes are marked,
and the shapes of a note read what they should."""

from __future__ import annotations

from trimem.text.statement_rules import COLON, LEAD_IN, NAME_EN, NAME_ZH, RULES, THE_KEY_IS, ZH_KEY_IS, subject_of


def test_rules_are_well_formed() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for r in RULES:
        assert r.chinese == r.name.startswith("zh_")
        groups = set(r.pattern.groupindex)
        assert "value" in groups or r.action == "delete_key", r.name
        assert r.kind in ("negation", "forget") or r.action == "set", r.name
        if r.scope != "personal":
            assert r.kind in ("change", "decision"), r.name
    assert {r.kind for r in RULES} == {"fact", "preference", "change", "decision", "negation", "forget"}


def test_note_shapes() -> None:
    assert NAME_EN.match("call me Ana") and not NAME_EN.match("call me later")
    assert NAME_ZH.match("我叫李雷")
    m = THE_KEY_IS.match("the team's deploy target is k8s")
    assert m and (m["det"], m["key"], m["value"]) == ("the team's", "deploy target", "k8s")
    c = COLON.match("Deadline: 2026-12-01")
    assert c and (c["key"], c["value"]) == ("Deadline", "2026-12-01")
    z = ZH_KEY_IS.match("端口是 6379")
    assert z and z["key"] == "端口" and not ZH_KEY_IS.match("Rust 成为了主力语言")
    lead = LEAD_IN.match("Remember: my key is X")
    assert lead and lead.group().strip() == "Remember:"


def test_subject_of() -> None:
    assert [subject_of(t) for t in ["our db is X", "I use X", "我们用X", "the port is 8080"]] == [
        "team",
        "user",
        "team",
        None,
    ]
