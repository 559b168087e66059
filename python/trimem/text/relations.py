"""Relations: what the sentences of a text state between the names they mention — "X uses Y",
"X depends on Y", "X works at Y", "X lives in Y", "X 负责 Y", "我们用 X 做 Y"… — read by rules,
English and Chinese, for the memory graph. A negated statement states nothing ("doesn't use",
"不用"). What a statement says about the speaker's own facts is the statement parser's
(:mod:`trimem.text.statements`); the graph joins both readings.

>>> x = read_relations("Alice uses Docker and PostgreSQL.")
>>> [(r.subject, r.predicate, r.object) for r in x.relations]
[('Alice', 'uses', 'Docker'), ('Alice', 'uses', 'PostgreSQL')]
>>> canonical_predicate("works for"), canonical_predicate("负责"), canonical_predicate("a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3 4 5")
('works_at', 'responsible_for', None)
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Final

import msgspec

from trimem.errors import InvalidArgumentError
from trimem.text.mentions import (
    DETERMINER,
    GAP,
    GENERIC_TYPES,
    MAX_NAME_CHARS,
    ZH_LEAD,
    ZH_OBJ_LEAD,
    ZH_SUBJECT_STOP,
    ZH_TRAIL,
    Doc,
    Mention,
    candidates,
    display_name,
    entity_key,
    tech_versions,
    zh_type,
)
from trimem.text.script import HAN_CHAR, HAN_RANGE, prepare_text
from trimem.text.sentences import sentence_ends
from trimem.text.stopwords import PHRASE_STOPWORDS, ZH_PHRASE_BREAKS

__all__ = [
    "NAMED_RELATIONS",
    "Extraction",
    "FoundEntity",
    "FoundRelation",
    "canonical_predicate",
    "is_entity_type",
    "mention_sentences",
    "read_relations",
]


class FoundEntity(msgspec.Struct, frozen=True, omit_defaults=True):
    """An entity one text mentions: ``sentences`` are the indices of the sentences naming it
    (empty for a pronoun subject such as "I" → ``user``, which never counts as co-occurring)."""

    name: str
    type: str = "thing"
    mentions: int = 1
    sentences: list[int] = []


class FoundRelation(msgspec.Struct, frozen=True):
    """A (subject, predicate, object) one text states."""

    subject: str
    predicate: str
    object: str


class Extraction(msgspec.Struct, frozen=True):
    """What an extractor read from one text (entities in order of first mention)."""

    entities: list[FoundEntity]
    relations: list[FoundRelation]


# ============================================================================ predicates

_EN_PREDICATES: Final = [
    ("used_for", r"(?:is|are|was|were)\s+used\s+(?:for|as)"),
    (
        "responsible_for",
        r"(?:is|are|was|were)\s+responsible\s+for|(?:is|are)\s+in\s+charge\s+of|owns|maintains|maintain|leads|handles",
    ),
    ("written_in", r"(?:is|are|was|were)\s+(?:written|implemented|built)\s+(?:in|with)"),
    (
        "runs_on",
        r"(?:is|are)\s+(?:running|deployed|hosted)\s+on|runs\s+on|run\s+on|running\s+on|deployed\s+on|hosted\s+on",
    ),
    ("depends_on", r"depends\s+on|depend\s+on|relies\s+on|rely\s+on|requires|require"),
    ("works_at", r"works\s+(?:at|for)|work\s+(?:at|for)|worked\s+(?:at|for)|(?:is|was)\s+employed\s+(?:at|by)|joined"),
    ("lives_in", r"lives\s+in|live\s+in|lived\s+in|(?:is|are|am)\s+based\s+in"),
    ("prefers", r"prefers|prefer|preferred"),
    ("likes", r"likes|like|loves|love|enjoys|enjoy"),
    (
        "uses",
        r"(?:is|are|am|was|were)(?:\s+(?:also|now|still|currently|mainly))?\s+using|uses|use|used|using|switched\s+to",
    ),
    ("is", r"is"),
]
_ZH_PREDICATES: Final = [
    ("works_at", f"在(?P<zwork>[{HAN_RANGE}A-Za-z0-9]{{2,12}}?)(?:工作|上班|实习)|就职于|任职于|供职于"),
    ("lives_in", "住在|居住在|生活在|定居在"),
    ("runs_on", "运行在|运行于|跑在|部署在|部署于"),
    ("used_for", "用于|用来做|用作"),
    ("depends_on", "依赖于|依赖|依靠"),
    ("responsible_for", "负责"),
    ("prefers", "更喜欢|更爱用|偏好|偏爱|倾向于"),
    ("likes", "喜欢|喜爱|热爱"),
    # bare 用 is "use" except inside words: 应用, 费用, 常用, 用户, 用途…
    (
        "uses",
        "使用|采用|选用|利用|在用"
        "|(?<![使采应费作信通运常享专适试调引占起禁实备租借有没选启])用(?![户途处法量品力场心意])",
    ),
    ("is", "(?<![但可于要不总像算只凡还就])是"),
]


# One regex per language, each alternative a named group; longer phrases come first within a
# language ("is responsible for" before "is"). The Chinese one runs only on text with CJK.
_PRED_NAMES: Final = {
    **{f"e{i}": pred for i, (pred, _) in enumerate(_EN_PREDICATES)},
    **{f"z{i}": pred for i, (pred, _) in enumerate(_ZH_PREDICATES)},
}
_EN_PRED_RE: Final = re.compile(
    "(?<![A-Za-z'])(?:" + "|".join(f"(?P<e{i}>{p})" for i, (_, p) in enumerate(_EN_PREDICATES)) + ")(?![A-Za-z])"
)
_ZH_PRED_RE: Final = re.compile("|".join(f"(?P<z{i}>{p})" for i, (_, p) in enumerate(_ZH_PREDICATES)))
# Chinese predicates an LLM may return, mapped to the canonical ones ("负责" → responsible_for)
_ZH_PRED_WORDS: Final = {
    **{
        alt: pred
        for pred, pattern in _ZH_PREDICATES
        for alt in pattern.split("|")
        if re.fullmatch(f"[{HAN_RANGE}]+", alt)
    },
    "用": "uses",
    "是": "is",
    "在工作": "works_at",
}
_SUBJECT_TYPES: Final = {"likes", "prefers", "works_at", "lives_in", "responsible_for"}  # a person does these
_OBJECT_TYPES: Final = {"works_at": "org", "lives_in": "place"}
_NAMED_OBJECT: Final = {"works_at", "lives_in"}  # English objects must be names, not "home"

# A negation right before the predicate cancels it: "doesn't use", "不用", "没有使用".
_NEGATED_RE: Final = re.compile(
    r"(?:(?<![A-Za-z])(?:not|never|no\s+longer|don't|doesn't|didn't|won't|can't|cannot|dont|doesnt|"
    r"isn't|aren't|wasn't|weren't|haven't|hasn't)\s+(?:[a-z]+\s+)?"
    r"|不再|不|没有|没|别|未|从不|从没|无需|并不|并没有)\s*(?:也|都|还|再|太|怎么)?\s*$"
)
_SUBJECT_COORD_RE: Final = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s(?:and|&)\s|和|与|跟|、)\s*")
_VERB_COORD_RE: Final = re.compile(r"\s*(?:,\s*)?(?:and|but\s+also|also|并且|而且|并|也|还)?\s*")
_OBJ_COORD_RE: Final = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+|、|和|与|及|以及|或)\s*")
_USED_FOR_RE: Final = re.compile(r"\s+(?:for|as)\s+|\s*(?:来做|来当|当作|作为|用于|做|当|来)\s*")
_EN_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+#-]*")

# ============================================================================ reading


def _zh_span(doc: Doc, i: int) -> Mention | None:
    """The Chinese word-list hit owning character `i`, when a compound may absorb it."""
    m = doc.owner[i]
    return m if m is not None and m.lexicon_zh else None


def _zh_run_back(doc: Doc, end: int) -> tuple[int, int] | None:
    """The Chinese phrase ending at `end` (a subject with no other delimiter): back over CJK
    characters and Chinese word-list hits; any other mention, a predicate, 的 or a non-CJK
    character ends it ("我们的服务依赖…" → 服务)."""
    text, i = doc.text, end
    while i > 0 and HAN_CHAR.match(text[i - 1]) and text[i - 1] != "的" and not doc.in_predicate[i - 1]:
        if doc.owner[i - 1] is not None and _zh_span(doc, i - 1) is None:
            break
        i -= 1
    return (i, end) if i < end else None


def _zh_run_forward(doc: Doc, start: int) -> tuple[int, int] | None:
    """The Chinese phrase starting at `start` (an object): up to a function word (的, 和, 做…),
    a predicate, a non-CJK character or a mention other than a word-list hit."""
    text, i = doc.text, start
    while i < len(text) and HAN_CHAR.match(text[i]) and not doc.in_predicate[i]:
        if doc.owner[i] is not None:
            m = _zh_span(doc, i)
            if m is None:
                break
            i = m.end
            continue
        if i > start and text[i] in ZH_PHRASE_BREAKS:
            break
        i += 1
    return (start, i) if i > start else None


def _absorb(doc: Doc, start: int, end: int, type_: str) -> Mention:
    """A Chinese compound (订单服务, 后端工程师) replaces the word-list hits inside it."""
    same = doc.by_start.get(start)
    if same is not None and same.end == end:
        return same
    for i in range(start, end):
        m = doc.owner[i]
        if m is not None and m.lexicon_zh:
            doc.remove(m)
    return doc.take(Mention(start, end, doc.text[start:end], type_))


def _zh_subject(doc: Doc, end: int, pred: str) -> list[Mention]:
    """Subjects from the Chinese phrase before a predicate: "张三负责" → 张三, "小王和老李负责" →
    小王, 老李; leading time words and conjunctions ("昨天", "所以") and adverbs are dropped."""
    span = _zh_run_back(doc, end)
    if span is None:
        return []
    s, e = span
    run = doc.text[s:e]
    lead = ZH_LEAD.match(run)
    trail = ZH_TRAIL.search(run)
    s += lead.end() if lead else 0
    e -= len(trail.group()) if trail else 0
    parts: list[tuple[int, int, str]] = []
    pos = s
    for part in re.split("([和与跟、])", doc.text[s:e]) if s < e else []:
        if part and part not in "和与跟、":
            if not 2 <= len(part) <= 8 or part in ZH_SUBJECT_STOP:
                return []
            t = zh_type(part)
            if pred == "is" and t in GENERIC_TYPES:
                return []  # "是" needs a named subject: "张三是…", not "这是…"
            parts.append((pos, pos + len(part), t))
        pos += len(part)
    return [_absorb(doc, a, b, t) for a, b, t in parts]


_PORT_WORD_RE: Final = re.compile(r"(?:[Pp]orts?|端口号?)\s*(?:[:=#]\s*)?")
# After "likes"/"prefers" a verb of use is skipped: "I like using Vim", "我喜欢用 Vim" → likes Vim
_LIKE_LEAD_RE: Final = re.compile(r"\s*(?:(?:to\s+use|using|to\s+work\s+with)\s+|(?:使用|在用|用)\s*)?")


class _Objects:
    """Parses the objects after a predicate: names, or short phrases, joined by and / 和 / 、.
    A phrase ("main database", "coffee") is returned fresh: the caller takes it if it keeps it."""

    def __init__(self, doc: Doc, clause_starts: set[int]) -> None:
        self.doc = doc
        self.clause_starts = clause_starts
        self.taken: set[int] = set()  # ids of the mentions already an object

    def starts_clause(self, end: int) -> bool:
        g = GAP.match(self.doc.text, end)
        return g is not None and g.end() in self.clause_starts

    def one(self, pos: int, pred: str, *, first: bool, after_comma: bool = False) -> tuple[Mention, int, bool] | None:
        """(object, end, had_determiner) at `pos`, or None. After a comma only a name or an
        English phrase continues the list: a Chinese "，" mostly starts a new clause."""
        doc, text = self.doc, self.doc.text
        if pred in ("likes", "prefers"):
            lead = _LIKE_LEAD_RE.match(text, pos)
            pos = lead.end() if lead else pos
        while pos < len(text) and text[pos] == " ":
            pos += 1
        det = DETERMINER.match(text, pos)
        had_det = det is not None and det.end() > pos
        if det is not None:
            pos = det.end()
        m = doc.at(pos)
        if m is None and first:  # "runs on port 8080", "监听端口 8080": the port itself is the object
            word = _PORT_WORD_RE.match(text, pos)
            port = doc.at(word.end()) if word else None
            m = port if port is not None and port.type == "port" else None
        if m is not None and m.lexicon_zh:
            run = _zh_run_forward(doc, pos)
            if run is not None and run[1] > m.end and run[1] - run[0] <= 8:
                m = _absorb(doc, run[0], run[1], zh_type(text[run[0] : run[1]]))
        if m is not None:
            if not first and self.starts_clause(m.end):
                return None  # "I use Vim and Bob prefers Emacs": Bob starts a new clause
            return m, m.end, had_det
        if pos < len(text) and HAN_CHAR.match(text[pos]):
            return None if after_comma else self._zh(pos, pred, had_det)
        if pred in _NAMED_OBJECT:
            return None
        words: list[str] = []
        end = pos
        for w in _EN_WORD_RE.finditer(text, pos):
            if w.start() != (end + 1 if words else pos) or (words and text[end] != " "):
                break
            if (
                w.group().casefold() in PHRASE_STOPWORDS
                or w.start() in self.clause_starts
                or not doc.free(w.start(), w.end())
            ):
                break
            words.append(w.group())
            end = w.end()
            if len(words) == 3:
                break
        if not words or (not first and self.starts_clause(end)):
            return None
        return Mention(pos, end, " ".join(words), "concept"), end, had_det

    def _zh(self, pos: int, pred: str, had_det: bool) -> tuple[Mention, int, bool] | None:
        run = _zh_run_forward(self.doc, pos)
        if run is None:
            return None
        s, e = run
        lead = ZH_OBJ_LEAD.match(self.doc.text, s, e)
        if lead and e > lead.end():
            s = lead.end()
        name = self.doc.text[s:e]
        if not 1 <= len(name) <= 8 or name in ZH_SUBJECT_STOP or self.starts_clause(e):
            return None
        t = zh_type(name)
        if t in GENERIC_TYPES:
            t = _OBJECT_TYPES.get(pred, t)
        return _absorb(self.doc, s, e, t), e, had_det

    def all(self, pos: int, pred: str) -> Iterator[tuple[Mention, bool, Mention | None]]:
        """(object, had_determiner, purpose) for each coordinated object; the purpose is what a
        used object is for ("use Redis for caching", "用 Redis 做缓存")."""
        first, comma = True, False
        while True:
            found = self.one(pos, pred, first=first, after_comma=comma)
            if found is None:
                return
            obj, pos, had_det = found
            purpose = None
            if pred == "uses":
                u = _USED_FOR_RE.match(self.doc.text, pos)
                got = self.one(u.end(), "used_for", first=True) if u is not None else None
                if got is not None:
                    purpose, pos = got[0], got[1]
            yield obj, had_det, purpose
            first = False
            c = _OBJ_COORD_RE.match(self.doc.text, pos)
            if c is None or c.end() == pos:
                return
            pos, comma = c.end(), "," in c.group()


_Pred = tuple[int, int, str, tuple[int, int] | None]  # start, end, predicate, inline object span


def _relations(doc: Doc, preds: list[_Pred]) -> list[tuple[Mention, str, Mention]]:
    text = doc.text
    objects = _Objects(doc, {p[0] for p in preds})
    out: list[tuple[Mention, str, Mention]] = []
    previous: tuple[int, list[Mention]] | None = None  # (end, subjects) of the last statement
    for ps, pe, pred, inline in preds:
        outside = [(ps, pe)] if inline is None else [(ps, inline[0]), (inline[1], pe)]
        if not all(doc.free(a, b) for a, b in outside) or _NEGATED_RE.search(text, max(0, ps - 24), ps):
            continue
        subjects = _subjects(doc, ps, pred, objects.taken)
        if not subjects and previous is not None and previous[0] <= ps:
            if _VERB_COORD_RE.fullmatch(text, previous[0], ps):
                subjects = previous[1]  # "Carol lives in Paris and works for Initech"
        if not subjects:
            continue
        objs: list[tuple[Mention, bool, Mention | None]]
        if inline is not None:  # "在阿里巴巴工作": the object sits inside the predicate
            found = objects.one(inline[0], pred, first=True)
            objs = [(found[0], False, None)] if found is not None and found[1] == inline[1] else []
            end = pe
        else:
            objs = list(objects.all(pe, pred))
            end = max((max(o.end, p.end if p else 0) for o, _, p in objs), default=pe)
        if pred == "is":  # "Alice is a designer", "Redis is our cache"; not "Redis is fast"
            objs = [o for o in objs if o[1] or doc.owner[o[0].start] is o[0]]
        for o, _, purpose in objs:  # fresh phrases ("main database") become mentions now
            for m in (o, purpose) if purpose is not None else (o,):
                if doc.owner[m.start] is not m and doc.free(m.start, m.end):
                    doc.take(m)
                objects.taken.add(id(m))
        for s in subjects:
            if pred in _SUBJECT_TYPES and s.type == "thing":
                s.type = "person"  # a capitalised name that works at, lives in, likes… is someone
            for o, _, purpose in objs:
                if o is s or o.pronoun or doc.owner[o.start] is not o:
                    continue
                if pred in _OBJECT_TYPES and o.type in GENERIC_TYPES:
                    o.type = _OBJECT_TYPES[pred]
                out.append((s, pred, o))
                if purpose is not None and doc.owner[purpose.start] is purpose:
                    out.append((o, "used_for", purpose))
        if objs:
            previous = (end, subjects)
    return out


def _subjects(doc: Doc, ps: int, pred: str, objects: set[int]) -> list[Mention]:
    """The subject(s) right before a predicate: a mention followed only by adverbs, then the
    mentions coordinated with it ("Alice and Bob use…", but not the object of an earlier
    statement: "I use Vim and Bob prefers…"); in Chinese, else the phrase before."""
    text = doc.text
    subject = None
    for end in range(ps, max(-1, ps - 40), -1):
        for m in doc.ending_at(end):
            if GAP.fullmatch(text, end, ps):
                subject = m
                break
        if subject is not None:
            break
    if subject is None:
        e = ps
        while e > 0 and text[e - 1] == " ":
            e -= 1
        return _zh_subject(doc, e, pred) if e > 0 and HAN_CHAR.match(text[e - 1]) else []
    if subject.type == "version":  # "Node.js v18.2.0 runs on…": the product runs, not its version
        product = next((m for m in doc.ending_at(subject.start) if m.type == "tech"), None)
        if product is None and subject.start > 0 and doc.text[subject.start - 1] == " ":
            product = next((m for m in doc.ending_at(subject.start - 1) if m.type == "tech"), None)
        subject = product or subject
    if pred == "is" and (subject.pronoun or subject.type == "concept"):
        return []
    found = [subject]
    while True:
        start, prev = found[-1].start, None
        for end in range(start, max(-1, start - 8), -1):
            prev = next((m for m in doc.ending_at(end) if not m.pronoun), None)
            if prev is not None:
                break
        if prev is None or prev in found or id(prev) in objects:
            break
        if not _SUBJECT_COORD_RE.fullmatch(text, prev.end, start):
            break
        found.append(prev)
    return found[::-1]


def read_relations(text: str, *, role: str = "user") -> Extraction:
    """The rule extractor: entities and stated relations of one text, English and Chinese.

    First person is the speaker (``role``: "user" or "assistant"), "we"/"我们" the ``team``;
    they appear only as the subject of a relation. Co-occurrence is left to the graph.

    >>> x = read_relations("张三负责后端。Node.js v18.2.0 runs on port 8080")
    >>> [(e.name, e.type) for e in x.entities]
    [('张三', 'person'), ('后端', 'concept'), ('Node.js', 'tech'), ('v18.2.0', 'version'), ('8080', 'port')]
    >>> for r in x.relations:
    ...     print(r.subject, r.predicate, r.object)
    张三 responsible_for 后端
    Node.js has_version v18.2.0
    Node.js runs_on 8080
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
    text = prepare_text(text)
    speaker = role if role in ("user", "assistant") else None
    doc = Doc(text, [None] * len(text), bytearray(len(text)))
    doc.ends = sentence_ends(text)
    cjk = HAN_CHAR.search(text) is not None
    preds: list[_Pred] = []
    matches = [*_EN_PRED_RE.finditer(text), *(_ZH_PRED_RE.finditer(text) if cjk else ())]
    for m in sorted(matches, key=lambda m: m.start()):
        inline = m.span("zwork") if m.re is _ZH_PRED_RE and m.group("zwork") else None
        preds.append((m.start(), m.end(), _PRED_NAMES[m.lastgroup or ""], inline))
        doc.in_predicate[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
        if inline is not None:
            doc.in_predicate[inline[0] : inline[1]] = bytes(inline[1] - inline[0])
    # a higher priority first, then the longer, then the earlier mention claims its characters
    found = candidates(text, {p[0] for p in preds}, cjk)
    ranked = sorted(found, key=lambda c: (c[0], c[1].start - c[1].end, c[1].start))
    for _, cand in ranked:
        if doc.free(cand.start, cand.end):
            if cand.pronoun and cand.name == "self":
                if speaker is None:
                    continue
                cand.name = speaker
            doc.take(cand)
    versions = tech_versions(doc)
    triples = _relations(doc, preds)
    triples += [(t, "has_version", v) for t, v in versions]
    return _assemble(doc, triples)


def _assemble(doc: Doc, triples: list[tuple[Mention, str, Mention]]) -> Extraction:
    used = {id(m) for t in triples for m in (t[0], t[2])}
    order: dict[str, tuple[int, str, str, int, set[int]]] = {}
    for m in doc.mentions():
        if m.pronoun and id(m) not in used:
            continue
        name = m.name.strip()[:MAX_NAME_CHARS]
        k = entity_key(name)
        if not k:
            continue
        first, disp, typ, count, sentences = order.get(k, (m.start, name, m.type, 0, set()))
        if typ in GENERIC_TYPES and m.type not in GENERIC_TYPES:
            typ = m.type
        if not m.pronoun:
            sentences.add(doc.sentence(m.start))
        order[k] = (first, disp, typ, count + 1, sentences)
    entities = [
        FoundEntity(disp, typ, count, sorted(sentences))
        for _, disp, typ, count, sentences in sorted(order.values(), key=lambda v: v[0])
    ]
    display = {k: v[1] for k, v in order.items()}
    seen: set[tuple[str, str, str]] = set()
    relations = []
    for s, pred, o in sorted(triples, key=lambda t: (min(t[0].start, t[2].start), t[2].start)):
        ks, ko = entity_key(s.name), entity_key(o.name)
        if ks == ko or ks not in display or ko not in display or (ks, pred, ko) in seen:
            continue
        seen.add((ks, pred, ko))
        relations.append(FoundRelation(display[ks], pred, display[ko]))
    return Extraction(entities, relations)


# ============================================================================ predicates a model names

_PRED_SYNONYMS: Final = {
    "use": "uses",
    "using": "uses",
    "used": "uses",
    "depend_on": "depends_on",
    "run_on": "runs_on",
    "work_at": "works_at",
    "works_for": "works_at",
    "work_for": "works_at",
    "like": "likes",
    "prefer": "prefers",
    "live_in": "lives_in",
    "is_a": "is",
    "is_an": "is",
    "co_occurs_with": "mentioned_with",
}

_PRED_OK: Final = re.compile(rf"[a-z][a-z0-9_]{{0,39}}|[{HAN_RANGE}]{{1,8}}")
_PRED_SEP: Final = re.compile(r"[\s\-]+")
_TYPE: Final = re.compile(r"[a-z][a-z_]{0,23}")

NAMED_RELATIONS: Final = frozenset(p for p, _ in _EN_PREDICATES)
"""The relations the rules state between names (``uses``, ``lives_in``, ``works_at`` ...)."""


def canonical_predicate(value: str) -> str | None:
    """A predicate a model named, as the rules name it ("works for" → ``works_at``, 负责 →
    ``responsible_for``), or snake_case / a short Chinese verb; None when it is neither."""
    p = display_name(value)
    if p in _ZH_PRED_WORDS:
        return _ZH_PRED_WORDS[p]
    p = _PRED_SEP.sub("_", p.casefold())
    p = _PRED_SYNONYMS.get(p, p)
    return p if _PRED_OK.fullmatch(p) else None


def is_entity_type(value: str) -> bool:
    """An entity type is a lowercase ``[a-z_]`` word of at most 24 characters ("person", "tech")."""
    return _TYPE.fullmatch(value) is not None


def mention_sentences(name: str, folded: str, ends: list[int]) -> tuple[int, list[int]]:
    """How often `name` occurs in `folded` (a casefolded text in normal form) and in which of its
    sentences (`ends` from :func:`~trimem.text.sentences.sentence_ends`). Latin names count as
    whole words ("Go" is not in "Google"); Chinese has no word edges."""
    needle = re.escape(name.casefold())
    hits = [m.start() for m in re.finditer(rf"(?<![a-z0-9_]){needle}(?![a-z0-9_])", folded)]
    return len(hits), sorted({bisect.bisect_right(ends, h) for h in hits})
