"""Reflect: distil durable facts from a user's new episodes into versioned fact updates, with
provenance; by hand or in a background thread.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("My main language is TypeScript", user_id="u1")
>>> [(c.op, c.key, c.value) for c in mem.reflect(user_id="u1")]
[('set', 'primary_language', 'TypeScript')]
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from trimem._backend.ops import OpCursor
from trimem._checks import check_callable, shown
from trimem._core import tokenize
from trimem.config import SUBJECT_FACET_WEIGHT
from trimem.errors import InvalidArgumentError
from trimem.records import FactChange
from trimem.reflect import NOTE, Extractor, RuleExtractor
from trimem.scope import check_id, episode_namespace
from trimem.text.facets import ONE_AT_A_TIME, OWNED_KINDS, facets, owned
from trimem.text.keys import NOTE_PREFIX, fact_text, is_known_key, is_note_key, note_key
from trimem.text.notes import change_clauses, states_change, what_was_said
from trimem.text.stopwords import NOT_SUBJECT_HAN, NOT_SUBJECT_WORDS, QUERY_STOPWORDS
from trimem.text.whose import mentions, told_of
from trimem.text.words import kin_words, name_words, small_words

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.layers.semantic import Facts


__all__ = ["Reflection", "Reflector", "phrase_aliases", "subject_words"]
log = logging.getLogger("trimem")


class Reflection:
    """Reflect over one memory's backend and facts."""

    def __init__(self, backend: Backend, facts: Facts, extractor: Extractor | None) -> None:
        self._backend = backend
        self._facts = facts
        self.extractor = extractor

    def __call__(
        self, *, user_id: str, agent_id: str = "default", extractor: Extractor | None = None
    ) -> list[FactChange]:
        """Extracts durable facts from the user's episodes not reflected on yet and applies them
        as versioned updates. Running it again without new episodes changes nothing."""
        check_id("agent_id", agent_id)
        check_id("user_id", user_id)
        if extractor is not None:
            check_callable("extractor", extractor)
        backend = self._backend
        with backend.scope_lock([episode_namespace(agent_id, user_id)]):
            cursor = backend.cursor(agent_id, user_id)
            if backend.newest_episode(agent_id, user_id) <= cursor:
                return []
            new_ids = [i for i in backend.episode_ids(episode_namespace(agent_id, user_id)) if i > cursor]
            if not new_ids:
                return []
            eps = [e for e in backend.episodes(new_ids) if e is not None]
            eps.sort(key=lambda e: (e.timestamp, e.id))
            current = {f.key: f.value for f in self._facts.list(user_id=user_id, agent_id=agent_id)}
            ex = extractor or self.extractor or RuleExtractor(aliases=phrase_aliases(self._facts.aliases()))
            when = {e.id: e.timestamp for e in eps}
            said = {e.id: e.text for e in eps}
            changes: list[FactChange] = []
            for p in ex(eps, current):
                at = max((when[s] for s in p.source if s in when), default=None)
                if p.key == NOTE and p.value is not None:
                    told = " ".join(said[s] for s in p.source if s in said) or p.value
                    key = self._note_key(p.value, told, user_id=user_id, agent_id=agent_id)
                    p = msgspec.structs.replace(p, key=key)
                if p.op == "delete":
                    ch = self._facts.delete(p.key, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                else:
                    assert p.value is not None
                    ch = self._facts.set(p.key, p.value, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                done = [ch]
                if ch.op == "set" and not is_note_key(p.key) and p.source:
                    # a change told as a keyed fact ("my dev streams are on Sundays now") closes
                    # the note it replaces ("Every Friday I stream dev"): it is no longer current
                    told = " ".join(said[s] for s in p.source if s in said)
                    stale = self._replaced_note(told, user_id=user_id, agent_id=agent_id)
                    if stale is not None:
                        done.append(self._facts.delete(stale, user_id=user_id, agent_id=agent_id,
                                                       source=p.source, at=at))  # fmt: skip
                changes.extend(
                    FactChange(op=c.op, key=c.key, value=c.value, old_value=c.old_value, source=c.source,
                               evidence=p.evidence)
                    for c in done
                )  # fmt: skip
            backend.write([OpCursor(agent_id, user_id, max(new_ids))])
            return changes

    def _note_key(self, text: str, told: str, *, user_id: str, agent_id: str) -> str:
        """Where a new note goes: the key of the note it restates or, when it states a change
        ("I drive in now"), of the earlier note on the same subject (:meth:`_same_subject`),
        else a key of its own."""
        facts = self._facts.list(user_id=user_id, agent_id=agent_id)
        for f in facts:
            if is_note_key(f.key) and f.value == text:
                return f.key
        # a change may supersede a note or a fact keyed by the user's own phrase ("desk at the
        # office"); a key of the key-phrase table is the statement reader's to change
        # (a fact keyed by the user's phrase is about that phrase too: "lead baker" of "Rogelio")
        # (and a key named for a thing owned one at a time: "phone")
        notes = {
            f.key: fact_text(f.key, f.value)
            for f in facts
            if is_note_key(f.key) or not is_known_key(f.key) or f.key in OWNED_KINDS
        }
        if states_change(text):
            same = self._same_subject(text, told, notes, user_id=user_id, agent_id=agent_id)
            if same is not None:
                return same
        return note_key(text, {f.key for f in facts})

    def _replaced_note(self, told: str, *, user_id: str, agent_id: str) -> str | None:
        """The note a change `told` as a keyed fact replaces, if it states a change at all. The
        note is closed rather than continued, so the bar is higher than a note's: two shared
        subject words, or closeness in meaning."""
        if not told or not states_change(told):
            return None
        notes = {f.key: f.value for f in self._facts.list(user_id=user_id, agent_id=agent_id) if is_note_key(f.key)}
        return self._same_subject(told, told, notes, user_id=user_id, agent_id=agent_id, words_needed=2)

    def _same_subject(
        self, text: str, told: str, held: Mapping[str, str], *, user_id: str, agent_id: str, words_needed: int = 1
    ) -> str | None:
        """The key among `held` (key → value) a change told in `text` is about: the one sharing
        the most subject words with what was `told` (the whole message: "I left the steakhouse.
        I'm at Bacanora now."), with closeness in meaning breaking ties, or, in a language the
        embedder reads, close enough in meaning alone; None when none is, or two are equally.
        A match by words needs `words_needed` of them and, in a language the embedder reads, a
        note that is the nearest in meaning or that meaning does not call unrelated: an everyday
        word shared ("run", "back", "难受") is no subject ("no running for 3 months, my knee"
        does not replace "mum does the school run"). A change of what one owns one at a time (a
        car, a phone: :func:`trimem.text.facets.owned`) is about the one note naming such a thing."""
        if not held:
            return None
        said = what_was_said(told)
        changed = change_clauses(said)
        # a change of what one owns one at a time ("电车换掉了，现在开理想L6", "got a Kia Niro")
        # replaces the one note that names the one before, whatever words they share
        kinds = owned(changed)
        # (a fact keyed by the kind, "phone", is the thing itself)
        of_kind = [key for key, value in held.items() if key in kinds or owned(value) & kinds] if kinds else []
        named = sorted(kinds.intersection(of_kind))
        if named or len(of_kind) == 1:
            return named[0] if named else of_kind[0]
        # someone else's change ("Jobin changed jobs", "儿子辞职了") replaces only what was said of them
        # (the others are still read for how common a word is and how near in meaning)
        whose = told_of(changed or said, held.values())
        mine = [key for key, value in held.items() if whose is None or any(mentions(value, w) for w in whose)]
        if not mine:
            return None
        # the part of life both are about (home, work, getting around) breaks a tie of words:
        # "Moved out of the Obs house!" is about "I live in a house share", not "a gig in Obs"
        told_facets = facets(said)
        held_facets = {key: facets(value) & told_facets for key, value in held.items()}
        # someone else's change about a part of their situation (home, work, car) that one note
        # of theirs is about, too, is about that one: "Mum's moved to York" and "mum lives in Leeds"
        theirs = [key for key in mine if held_facets[key] & _SITUATION] if whose else []
        if len(theirs) == 1:
            return theirs[0]
        held_words = {key: subject_words(value) for key, value in held.items()}
        # a word many of the user's notes share ("公司", "work") names no one subject
        counts = Counter(w for ws in held_words.values() for w in {_base(t) for t in ws})
        common = {w for w, n in counts.items() if n > max(2, len(held) // 4)}
        words = frozenset(t for t in subject_words(said) if _base(t) not in common)
        # a kin both name is a subject of theirs only with a part of their life both are about:
        # "儿子给买了个华为手机" is not about "儿子在青岛开出租", nor "my daughter starts school"
        # about "my daughter is mad about dinosaurs"; "mum's moved to York" is about "mum lives in Leeds"
        kin = _bases_of(kin_words(said))
        # and once whose change it is is known, their name tells none of their notes from another
        who = _bases_of(whose or ())
        bases = {
            key: {_base(t) for t in words & ws}
            - who
            - (set() if held_facets[key] - _KIN_FACETS else kin & _bases_of(kin_words(held[key])))
            for key, ws in held_words.items()
        }
        # what changed is named beside the word that tells the change: a word said elsewhere in
        # the message counts half ("民宿转出去了…顺便卖阿金的扎染" is about the 民宿, not 阿金)
        # (a headline naming nothing, "搬家啦！", leaves it to every clause that tells the change)
        focus = {_base(t) for t in subject_words(changed)} or {
            _base(t) for t in subject_words(change_clauses(said, headline=False))
        }
        shared = {key: len(b) for key, b in bases.items()}
        cosine: dict[str, float] = {}
        vector = self._facts.embed_fact(NOTE_PREFIX, text)
        if vector is not None:
            vectors = self._facts.vectors(list(held), user_id=user_id, agent_id=agent_id)
            cosine = {key: float(v @ vector) for key, v in vectors.items()}
        # a word fewer notes share names the subject more surely: "Punggol" (one note) over
        # "Charmaine" (three)
        weight = {w: (1.0 if w in focus or not focus else 0.5) / counts[w] for b in bases.values() for w in b}
        f_counts = Counter(f for fs in held_facets.values() for f in fs)
        score = {
            key: sum(weight[w] for w in bases[key])
            + SUBJECT_FACET_WEIGHT * sum(1 / f_counts[f] for f in held_facets[key])
            + cosine.get(key, 0.0)
            for key in held
        }
        best = max(mine, key=lambda key: (score[key], key))
        reads = bool(cosine) and self._facts.reads(text)
        near = cosine.get(best, 0.0)
        by_meaning = reads and near >= self._facts.same_subject_cosine
        # words shared with a note that meaning calls unrelated, and that is not the nearest
        # note in meaning either, are everyday words, not the subject
        unrelated = reads and near < self._facts.unrelated_cosine and near < max(cosine.values())
        # (a word shared only outside the clauses that tell the change is not what changed, unless
        # both are about one part of one's situation: "开始跑步了，目标是在合肥跑个半马" is not about
        # "补贴一个月四千二，在合肥还算够花"; "搬家了，现在住亦庄，离公司近了" is about "我住回龙观，到公司…")
        in_focus = bool(bases[best] & focus) or not focus or bool(held_facets[best] & _SITUATION)
        by_words = shared[best] >= words_needed and in_focus and not unrelated
        # the one note on the part of life the change is about (one where a change replaces what
        # held: not health), and the nearest in meaning: "调岗了！现在…常白班" is about "我在重庆
        # 开轻轨，倒班", though no word is shared
        by_part = (
            reads
            and words_needed == 1
            and near >= self._facts.unrelated_cosine
            and near == max(cosine.values())
            and any(f_counts[f] == 1 for f in held_facets[best] & ONE_AT_A_TIME)
        )
        tied = sum(1 for key in mine if score[key] == score[best]) > 1  # ambiguous: replace nothing
        return best if (by_words or by_meaning or by_part) and not tied else None

    def pending(self) -> list[tuple[str, str]]:
        """(agent_id, user_id) pairs with episodes reflect has not read yet."""
        b = self._backend
        return [(a, u) for a, u in b.users() if b.newest_episode(a, u) > b.cursor(a, u)]


_NOT_SUBJECT = frozenset(tokenize(f"{NOT_SUBJECT_WORDS} {' '.join(QUERY_STOPWORDS)}", stem=True))


_KIN_FACETS: Final = frozenset({"family", "people"})  # the parts of life that are who, not what
# the parts of one's situation a change replaces: where one lives, works, studies, what one drives
_SITUATION: Final = frozenset({"home", "career", "trade", "study", "vehicle"})

_NAME: Final = "\x01"  # marks the term of a word of a name


def _stems(words: list[str]) -> set[str]:
    return set(tokenize(" ".join(words), stem=True, stopwords=True)) if words else set()


def _base(term: str) -> str:
    return term.lstrip(_NAME)


def _bases_of(words: Sequence[str]) -> set[str]:
    """The subject terms of `words` (as :func:`_base` reads them): of the kin or the person a
    text names, to be left out of what two notes share."""
    return {_base(t) for t in subject_words(" ".join(words))} if words else set()


def subject_words(text: str) -> frozenset[str]:
    """What a note is about, as index terms (stemmed English words, Chinese character pairs;
    stopwords, words of time and change and pairs with a character of grammar out). In a text
    that writes names with capitals, a word of a name and the same word written small are two
    terms ("Barton Springs Mill" is not "this spring"); where case tells nothing, a word is both
    (count shared subjects by :func:`_base`)."""
    words = tokenize(text, stem=True, stopwords=True)
    names = _stems(name_words(text))
    small = _stems(small_words(text) or [])
    out: set[str] = set()
    for w in words:
        if len(w) <= 1 or w in _NOT_SUBJECT or states_change(w) or not NOT_SUBJECT_HAN.isdisjoint(w):
            continue
        if w not in small:
            out.add(_NAME + w)  # may be a name
        if w not in names or w in small:
            out.add(w)  # may be a common word
    return frozenset(out)


def phrase_aliases(aliases: Mapping[str, list[str]]) -> dict[str, str]:
    """Phrase → key for the extractor: aliases that name exactly one key."""
    return {w: keys[0] for w, keys in aliases.items() if len(keys) == 1}


class Reflector:
    """A background thread that reflects for every user with new episodes, every `interval` s."""

    def __init__(self, reflection: Reflection, *, interval: float, extractor: Extractor | None) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not 0 < interval < 1e9:
            raise InvalidArgumentError(f"interval must be positive seconds, got {shown(interval)}")
        if extractor is not None:
            check_callable("extractor", extractor)
        self._reflect, self._interval, self._extractor = reflection, float(interval), extractor
        self._stop = threading.Event()
        self.runs = 0
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._loop, name="trimem-reflector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self._interval)

    def run_once(self) -> int:
        changed = 0
        for agent_id, user_id in self._reflect.pending():
            try:
                changed += len(self._reflect(user_id=user_id, agent_id=agent_id, extractor=self._extractor))
            except Exception as e:  # keep reflecting for other users; the error is kept
                log.exception("reflect failed for %s/%s", agent_id, user_id)
                self.errors.append(e)
        self.runs += 1
        return changed

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
