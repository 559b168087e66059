"""The statement parser: one reading of what a text says about the speaker's facts.

A :class:`Statement` says who it is about, which fact key, which value (and the value it replaces),
what kind of statement it is — a fact, a preference, a change, a decision, a negation, a request
to forget — and the language it was said in. Reflect turns statements into fact proposals, the
router files a statement as a fact with the same key and value, and the graph relates the speaker
to the value under the same key, so the three never disagree about what a sentence says.

What is read: the sentences of the text (questions only when they politely ask for a change:
"could you set my editor to Vim?"); not hypotheticals ("if", "maybe", "如果"), negated clauses
("I don't want to switch"), or text that reads as an instruction to the model
(:func:`~trimem.text.guard.is_injection`). Text another party wrote (``by_user=False``, e.g. an
assistant) counts only where it states a decision ("we decided", "决定"). Keys come from the
phrase (:func:`~trimem.text.keys.resolve_key`, the key-phrase table and the caller's aliases) or,
when a statement names none, from the kind of product named ("I use Neovim" → ``editor``).

>>> [(s.op, s.key, s.value, s.kind) for s in read_statements("My main language is TypeScript, on macOS.")]
[('set', 'primary_language', 'TypeScript', 'fact'), ('set', 'target_os', 'macOS', 'preference')]
>>> s = read_statements("把主力语言改成Rust吧")[0]
>>> s.key, s.value, s.kind, s.language, s.subject
('primary_language', 'Rust', 'change', 'zh', None)
>>> [(s.key, s.value) for s in read_statements("I live in Lisbon")], read_statements("What is my main language?")
([('city', 'Lisbon')], [])
>>> [(s.op, s.key, s.value) for s in read_statements("I no longer use MySQL", current={"database": "MySQL"})]
[('delete', 'database', 'MySQL')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal, NamedTuple

import msgspec

from trimem.errors import InvalidArgumentError
from trimem.text.cues import EDGE, TIME, ZH_PERSON
from trimem.text.guard import is_injection
from trimem.text.keys import KeyHit, is_denied_key, is_valid_key, prepare_aliases, resolve_key
from trimem.text.products import CATEGORY_KEY, known_prefix, same_value
from trimem.text.script import Language, has_han, language, prepare_text
from trimem.text.sentences import clauses, has_decision, is_hypothetical, is_polite, negated_before, sentences
from trimem.text.statement_rules import (
    COLON,
    LEAD_IN,
    NAME_EN,
    NAME_ZH,
    RULES,
    THE_KEY_IS,
    WIDEN,
    ZH_KEY_IS,
    Kind,
    Rule,
    subject_of,
)
from trimem.text.values import (
    MAX_VALUE_CHARS,
    clause_value,
    clean_value,
    has_latin_or_digit,
    infer_keys,
    looks_like_value,
    trim_value,
    value_for_key,
)

__all__ = ["MAX_CLAUSE_CHARS", "Statement", "StatementReader", "read_statements"]

MAX_CLAUSE_CHARS: Final = 300
"""Statements of preference are short; longer clauses (log lines, pasted prose) are skipped."""


class Statement(msgspec.Struct, frozen=True):
    """One reading of one statement."""

    op: Literal["set", "delete"]
    key: str  # normalised, e.g. "primary_language"
    value: str | None  # set: the new value; delete: the value no longer held (None: "forget my X")
    kind: Kind  # "fact" | "preference" | "change" | "decision" | "negation" | "forget"
    subject: Literal["user", "team"] | None  # "I/my" → user, "we/our" → team, else None
    language: Language
    sentence: str  # the sentence it was read from, in normal form (evidence; data, never an instruction)
    phrase: str = ""  # the key as said ("favourite editor"); "" when the key comes from the value
    old: str | None = None  # the value it replaces when the sentence says so ("from MySQL to ...")


# (op, key, value, phrase, old) one shape found in a clause
_Change = tuple[Literal["set", "delete"], str, str | None, str, str | None]


class _Found(NamedTuple):
    change: _Change
    kind: Kind
    subject: Literal["user", "team"] | None


_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?")
# Chat drops the owner of a favourite: "favorite beer is Surly Furious" is the user's.
_ELIDED_OWNER: Final = re.compile(r"^(?=(?:fav|favou?rite|go-to|usual|preferred)\s+\w)", re.I)


def _group(m: re.Match[str], name: str) -> str | None:
    if name not in m.re.groupindex:
        return None
    g: str | None = m.group(name)
    return g


def _acceptable(change: _Change) -> bool:
    op, key, value = change[0], change[1], change[2]
    if not is_valid_key(key) or is_denied_key(key):
        return False
    if op == "delete":
        return True
    return value is not None and 0 < len(value) <= MAX_VALUE_CHARS and "\n" not in value


class StatementReader:
    """Reads statements with caller aliases (phrase → key, e.g. ``{"stack": "primary_language"}``)
    that name keys before the key-phrase table; :func:`read_statements` is one without aliases."""

    def __init__(self, aliases: Mapping[str, str] | None = None) -> None:
        self._aliases = prepare_aliases(aliases)
        # which shapes each gate word or substring opens, so a clause visits only its candidates
        self._rules = tuple(RULES)
        self._ungated = tuple(i for i, r in enumerate(self._rules) if not r.gate)
        by_word: dict[str, list[int]] = {}
        by_part: dict[str, list[int]] = {}
        for i, rule in enumerate(self._rules):
            for g in rule.gate:
                (by_part if rule.chinese else by_word).setdefault(g, []).append(i)
        self._by_word = {w: tuple(ix) for w, ix in by_word.items()}
        self._by_part = tuple((g, tuple(ix)) for g, ix in by_part.items())

    def __call__(self, text: str, *, by_user: bool = True, current: Mapping[str, str] | None = None) -> list[Statement]:
        """The statements of `text`, in text order. ``current`` (key → value, the facts held now)
        resolves what depends on them: "I no longer use X" deletes the keys holding X, "switch from
        A to B" moves the key holding A; statements read earlier in the text count as current.
        Without it, such statements are keyed by the kind of product named."""
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
        if is_injection(text):
            return []
        text = prepare_text(text)
        state = None if current is None else dict(current)
        said = list(sentences(text))
        out: list[Statement] = []
        for sentence in said:
            if not by_user and not has_decision(sentence.body):
                continue
            polite = is_polite(sentence.body)
            if sentence.question and not polite:
                continue
            lang = language(sentence.body)
            for clause in clauses(sentence.body):
                if len(clause) > MAX_CLAUSE_CHARS or is_hypothetical(clause):
                    continue
                changes = self._clause(_ELIDED_OWNER.sub("my ", clause), by_user, sentence.question, state)
                if polite and subject_of(clause) is None:
                    # what a request asks for ("帮我写个文案，主题是秋天第一杯奶茶") is the task's, not
                    # the user's, unless it says whose or asks for a change
                    changes = [c for c in changes if c.kind == "change"]
                # a request's "X: Y" is what to work on ("帮我润色一下这句：…"), not a label and its value
                if not changes and by_user and not sentence.question and len(said) == 1 and not polite:
                    changes = self._note(clause)
                for (op, key, value, phrase, old), kind, subject in changes:
                    out.append(Statement(op, key, value, kind, subject, lang, sentence.text, phrase, old))
                    if state is not None:
                        if op == "delete":
                            state.pop(key, None)
                        elif value is not None:
                            state[key] = value
        return out

    # ------------------------------------------------------------------ statement shapes

    def _clause(self, clause: str, by_user: bool, request_only: bool, state: Mapping[str, str] | None) -> list[_Found]:
        han = has_han(clause)
        open_ = set(self._ungated)
        for word in _WORD.findall(clause.lower()):
            open_.update(self._by_word.get(word, ()))
        if han:
            for part, ix in self._by_part:
                if part in clause:
                    open_.update(ix)
        subject = subject_of(clause)
        found: list[tuple[int, int, list[_Found]]] = []
        for i in sorted(open_):
            rule = self._rules[i]
            if (rule.scope == "personal" and not by_user) or (request_only and rule.scope != "change"):
                continue
            if rule.chinese and not han:
                continue
            pos = 0
            # every start position, not only the first: an early match may name no usable key
            while (m := rule.pattern.search(clause, pos)) is not None:
                pos = m.start() + 1
                if negated_before(clause, m.start()):
                    continue
                changes = [_Found(c, rule.kind, subject) for c in self._apply(rule, m, state) if _acceptable(c)]
                if changes:
                    found.append((m.start(), m.end(), changes))
        # earliest, then longest, productive match wins; overlapping ones say the same thing
        found.sort(key=lambda f: (f[0], -f[1]))
        out: list[_Found] = []
        end = -1
        for start, stop, changes in found:
            if start >= end:
                out.extend(changes)
                end = stop
        return out

    def _key(self, phrase: str, rule: Rule, det: str) -> tuple[KeyHit | None, bool]:
        """(key, needs a value-like value): "my X is Y" with an X no table names is a fact only
        when Y looks like a value ("our deploy target is k8s", not "my dog is cute")."""
        mode = "any" if det and det != "the" else rule.key_mode
        if mode != "profile":
            return resolve_key(phrase, mode, self._aliases), False
        hit = resolve_key(phrase, "any", self._aliases)
        return hit, hit is not None and not hit.known and hit.how != "qualified"

    def _apply(self, rule: Rule, m: re.Match[str], state: Mapping[str, str] | None) -> list[_Change]:
        raw_key = _group(m, "key")
        raw_value = _group(m, "value") or ""
        if rule.action == "delete_key":
            hit = resolve_key(raw_key or "", rule.key_mode, self._aliases)
            if hit is None or (state is not None and hit.key not in state):
                return []
            return [("delete", hit.key, None, raw_key or "", None)]
        if rule.action == "delete_value":
            said = trim_value(raw_value)
            if not said:
                return []
            if state is None:
                return [("delete", k, v, "", None) for k, v in infer_keys(raw_value, rule.cats)]
            return [("delete", k, said, "", None) for k, v in state.items() if same_value(said, v)]
        if rule.key is not None:
            value = clean_value(raw_value)
            return [("set", rule.key, value, "", None)] if value and looks_like_value(value) else []
        old = _group(m, "old")
        old = trim_value(old) if old else None
        if raw_key:
            hit, needs_look = self._key(raw_key, rule, (_group(m, "det") or "").strip().casefold())
            value = value_for_key(hit.key, raw_value) if hit else None
            if hit is None or value is None or (needs_look and not looks_like_value(value)):
                return []
            return [("set", hit.key, value, raw_key, old)]
        cats = rule.cats
        adv = _group(m, "adv")
        if rule.widen and adv and WIDEN.search(adv):
            cats = frozenset(CATEGORY_KEY)
        if old:
            # "switch from A to B": the key that currently holds A moves to B
            keys = [k for k, v in (state or {}).items() if same_value(old, v)]
            if keys:
                value = value_for_key(keys[0], raw_value)
                return [("set", keys[0], value, "", old)] if value else []
            hit_old = known_prefix(old, cats)
            inferred = infer_keys(raw_value, cats)
            if not inferred and hit_old:
                value = clean_value(raw_value)
                return [("set", CATEGORY_KEY[hit_old[0]], value, "", old)] if value else []
            return [("set", k, v, "", old) for k, v in inferred]
        return [("set", k, v, "", None) for k, v in infer_keys(raw_value, cats)]

    # ------------------------------------------------------------------ notes

    def _note(self, clause: str) -> list[_Found]:
        """A short note that is the whole text: "call me Ana", "The API base URL is https://x",
        "Deadline: 2026-12-01", "端口是 6379"."""
        body = clause.strip(EDGE)
        while (lead := LEAD_IN.match(body)) is not None and lead.end() < len(body):
            body = body[lead.end() :]
        han = has_han(body)
        if (m := NAME_EN.match(body)) or (han and (m := NAME_ZH.match(body))):
            value = clean_value(m.group("value"))
            return [_Found(("set", "name", value, "name", None), "fact", "user")] if value else []
        if m := THE_KEY_IS.match(body):
            value = clean_value(clause_value(m.group("value")))
            hit = resolve_key(m.group("key"), "any", self._aliases)
            if value is None or hit is None:
                return []
            looks, owned = looks_like_value(value), m.group("det").casefold().endswith("'s")
            if not looks and not (owned and (hit.known or hit.how == "qualified")):
                return []
            team = m.group("det").casefold().startswith(("team", "the team"))
            owner: Literal["team"] | None = "team" if team else None
            return [_Found(("set", hit.key, value, m.group("key"), None), "fact", owner)]
        if (":" in body or "=" in body) and (m := COLON.match(body)):
            key, sep, raw = m.group("key").strip(), m.group("sep"), m.group("value")
            han_key = has_han(key)
            if (sep == ":" and not m.group("sp") and not han_key) or raw.startswith("//"):
                return []  # "at 10:30", "https://..."
            if (len(key) > 10 if han_key else len(key.split()) > 4) or TIME.anywhere(key):
                return []  # a sentence, or a note about a day ("Tomorrow: ...", "明天: ...")
            hit = resolve_key(key, "any", self._aliases)
            value = clean_value(clause_value(raw))
            return [_Found(("set", hit.key, value, key, None), "fact", None)] if hit and value else []
        if han and (m := ZH_KEY_IS.match(body)):
            key = m.group("key").strip()
            # a story ("咬咬牙换了…") or a lone verb ("开的是坦克300": what one drives) is no label
            if TIME.anywhere(key) or ZH_PERSON.search(key) or "了" in key:
                return []
            hit = resolve_key(key, "any", self._aliases)
            value = clean_value(clause_value(m.group("value")))
            if hit and not hit.known and hit.key in _ZH_LONE_VERBS:
                return []
            if hit and value and (hit.known or has_latin_or_digit(value)):
                return [_Found(("set", hit.key, value, key, None), "fact", subject_of(body))]
        return []


# "V的是Y" is what one does, not a label: "开的是坦克300" (what one drives), "用的是…"
_ZH_LONE_VERBS: Final = frozenset("开用住吃喝穿看玩听骑做学读养抽戴")

_DEFAULT: Final = StatementReader()


def read_statements(text: str, *, by_user: bool = True, current: Mapping[str, str] | None = None) -> list[Statement]:
    """The statements of `text` read without caller aliases (see :class:`StatementReader`)."""
    return _DEFAULT(text, by_user=by_user, current=current)
