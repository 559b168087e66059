"""Mentions: the names a text mentions — people, places, organisations, products and tech
(Docker, PostgreSQL, Node.js), versions (v18.2.0), ports (8080), hosts, URLs, e-mails, files,
paths, code identifiers, quoted names, Chinese names of things (张三, 后端) — and the pronouns that
name the speaker ("I", "我") or the team ("we", "我们"). Several patterns may claim one span (a
known product is also a capitalised word): the graph's rule extractor
(:mod:`trimem.text.relations`) lets the higher priority claim it in a :class:`Doc`.

>>> sorted((m.start, m.name, m.type) for _, m in candidates("Alice runs Redis on port 6379", set(), False))
[(0, 'Alice', 'person'), (11, 'Redis', 'tech'), (11, 'Redis', 'thing'), (25, '6379', 'port')]
>>> classify("北京"), classify("postgres"), classify("v2.1.0"), entity_key("v18.2"), display_name(" a  b ")
('place', 'tech', 'version', '18.2', 'a b')
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from trimem.text.products import ASCII_LOWER, TECH_EXACT, TECH_LOOSE, TECH_RE, alternation, canonical_name
from trimem.text.script import HAN_CHAR, HAN_RANGE, LATIN_END, LATIN_START, prepare_text
from trimem.text.stopwords import CAPITALISED_STOPWORDS

__all__ = [
    "DETERMINER",
    "GAP",
    "GENERIC_TYPES",
    "MAX_NAME_CHARS",
    "ZH_LEAD",
    "ZH_OBJ_LEAD",
    "ZH_SUBJECT_STOP",
    "ZH_TRAIL",
    "Doc",
    "Mention",
    "candidates",
    "classify",
    "display_name",
    "entity_key",
    "tech_versions",
    "zh_type",
]

MAX_NAME_CHARS: Final = 80
GENERIC_TYPES: Final = frozenset({"thing", "concept"})
"""Types that say only "a name" or "a common noun": a later, more specific sighting replaces them."""

_SPACES: Final = re.compile(r"\s+")
_VERSION_KEY: Final = re.compile(r"v(?=\d+(?:\.\d+)*(?:[-+][0-9a-z.]+)?$)")


def display_name(name: str) -> str:
    """A name as shown: normal form, spaces folded."""
    return _SPACES.sub(" ", prepare_text(name)).strip()


def entity_key(name: str) -> str:
    """Entities are keyed case-insensitively: "docker" and "Docker" are one; "v18.2.0" is "18.2.0"."""
    k = display_name(name).casefold()
    return _VERSION_KEY.sub("", k, count=1)


# ============================================================================ word lists

_FIRST_NAMES: Final = frozenset(
    "Alice Bob Carol Charlie Dave David Eve Frank Grace Heidi Ivan Judy Mallory Oscar Peggy Trent "
    "Victor Walter Anna Emma Olivia Liam Noah James John Mary Michael Sarah Tom Jerry Peter Paul "
    "Mark Lisa Linda Kate Mike Sam Alex Chris Dan Ben Max Leo Mia Sophia Lucas Ethan Jack Harry "
    "George Emily Chloe Zoe Lily Jane Tim Anne Nina Omar Priya Raj Wei Yuki Hans Maria Ana Luis".split()
)
_PLACES: Final = frozenset(
    p.casefold()
    for p in "Berlin|London|Paris|Tokyo|New York|San Francisco|Seattle|Beijing|Shanghai|Shenzhen|"
    "Hangzhou|Singapore|Sydney|Toronto|Amsterdam|Munich|Dublin|Boston|Austin|Chicago|Los Angeles|"
    "Madrid|Rome|Vienna|Zurich|Stockholm|Oslo|Helsinki|Copenhagen|Lisbon|Prague|Warsaw|Seoul|"
    "Bangalore|Mumbai|Delhi|Hong Kong|Taipei|Vancouver|Montreal|China|Japan|Germany|France|USA|"
    "UK|Canada|India|Australia|Brazil|Spain|Italy|Netherlands|Sweden|Korea|Europe|Asia".split("|")
)
_ORGS: Final = frozenset(
    o.casefold()
    for o in "Google Microsoft Amazon Apple Meta OpenAI Anthropic Netflix IBM Intel Nvidia Tesla "
    "Alibaba Tencent ByteDance Baidu Huawei Xiaomi Samsung Uber Airbnb Spotify Shopify Stripe".split()
)
_ORG_SUFFIX: Final = frozenset("inc corp corporation ltd llc gmbh labs group university foundation company co".split())
# Capitalised words that start sentences or are function words: never an entity on their own.
# Chinese: no capitals, so word lists carry names; no spaces, so predicates delimit subjects.
_ZH_PLACES: Final = frozenset(
    "北京 上海 广州 深圳 杭州 成都 南京 武汉 西安 重庆 天津 苏州 厦门 长沙 青岛 香港 台北 澳门 "
    "东京 纽约 伦敦 巴黎 柏林 新加坡 硅谷 中国 美国 日本 德国 英国 法国 韩国".split()
)
_ZH_ORGS: Final = frozenset(
    "腾讯 阿里巴巴 阿里 阿里云 百度 字节跳动 字节 华为 美团 京东 小米 网易 拼多多 蚂蚁集团".split()
)
# Nouns of software work: in Chinese the word itself is the cue that a thing is being named.
_ZH_CONCEPTS: Final = frozenset(
    "后端 前端 数据库 缓存 服务器 消息队列 微服务 网关 容器 集群 日志 监控 运维 算法 接口 文档 "
    "支付 订单 架构 中间件 搜索引擎 客户端 服务端 移动端".split()
)
_ZH_LEXICON_RE: Final = re.compile(alternation([*_ZH_PLACES, *_ZH_ORGS, *_ZH_CONCEPTS]))
_ZH_SURNAMES: Final = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林高罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏"
    "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵"
    "万钱严覃武戴莫孔向汤"
)
_ZH_NAME_RE: Final = re.compile(f"(?:[小老][{_ZH_SURNAMES}]|[{_ZH_SURNAMES}][{HAN_RANGE}]{{1,2}})")
# Words that look like surname + given name but are ordinary words.
_ZH_NOT_NAMES: Final = frozenset(
    "周末 马上 高兴 方便 方法 方案 方面 方向 王国 金额 黄色 白天 白色 江湖 向上 万一 石头 程序 "
    "任务 任何 许多 许可 文档 龙头 史上 高级 高效 高手 高端 田地 陆续 段落 雷达 孔子 邵阳 毛病 "
    "余额 杜绝 叶子 苏醒 汤面 韩国 戴上 莫非 孙子 曾经 常用 朱红 蔡伦 沈阳 钱包 付款 付费 贾宝玉".split()
)
_ZH_TITLED_RE: Final = re.compile(f"[{_ZH_SURNAMES}](?:经理|老师|总监|总|工|博士|教授|先生|女士|医生|老板)")

ZH_LEAD: Final = re.compile(
    "^(?:昨天|今天|明天|现在|目前|最近|以后|之后|后来|之前|以前|然后|所以|但是|不过|而且|另外|其实|"
    "因为|如果|当时|那时|平时|听说|据说|好像|已经|一直|于是|而|但|又)+"
)
ZH_TRAIL: Final = re.compile(
    "(?:也|都|还|主要|一直|现在|目前|平时|经常|通常|正在|在|只|一般|平常|最|更|决定|打算|准备)+$"
)
ZH_SUBJECT_STOP: Final = frozenset(
    "这 那 它 他 她 他们 她们 它们 你 你们 大家 有人 谁 这个 那个 这里 那里 什么 哪个".split()
)
ZH_OBJ_LEAD: Final = re.compile("喝|吃|看|听|玩|去")  # "喜欢喝咖啡": the thing is 咖啡

DETERMINER: Final = re.compile(
    r"(?:(?:the|a|an|our|my|their|his|her|your|its|this|these|those|some)\s+)+|这个|那个|一个|我们的|我的"
)

# ============================================================================ mention patterns

_URL_RE: Final = re.compile(r"https?://[^\s<>\"'`，。、）)\]]+")
_EMAIL_RE: Final = re.compile(
    rf"{LATIN_START}[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{{2,}}{LATIN_END}"
)
_BACKTICK_RE: Final = re.compile(r"`([^`\n]{1,60})`")
# Quoted names: "Phoenix", 'main-db', 「凤凰」, 《三体》 — a name, not a quoted sentence (see candidates)
_QUOTED_RE: Final = re.compile(
    r"\"([^\"\n]{1,40})\"|(?<![A-Za-z0-9])'([^'\n]{1,40})'(?![A-Za-z0-9])|「([^」\n]{1,40})」|"
    r"『([^』\n]{1,40})』|《([^》\n]{1,40})》"
)
_EXT: Final = (
    "py|pyi|rs|js|mjs|ts|tsx|jsx|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|json|yaml|yml|toml|ini|"
    "cfg|conf|md|rst|txt|csv|tsv|sql|sh|env|lock|html|css|scss|xml|proto|ipynb|log|parquet|tf"
)
_FILE_RE: Final = re.compile(
    rf"(?<![A-Za-z0-9_./-])(?:~|\.{{1,2}})?/[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?"  # absolute path
    rf"|{LATIN_START}[A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*[A-Za-z0-9_]\.(?:{_EXT})(?![A-Za-z0-9_])"  # file.ext
)
_IP_RE: Final = re.compile(r"(?<![A-Za-z0-9_.])\d{1,3}(?:\.\d{1,3}){3}(?![A-Za-z0-9_]|\.\d)")
_HOST_RE: Final = re.compile(
    rf"{LATIN_START}(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|ai|app|cloud|cn|co|local|internal|lan|svc)(?![A-Za-z0-9_-])"
)
# Ports only where the text says so: "port 8080", "localhost:8080", "端口 8080", "8080 端口".
_PORT_RE: Final = re.compile(
    rf"{LATIN_START}[Pp]orts?\s*(?:[:=#]|is|number)?\s*(?P<a>\d{{2,5}}){LATIN_END}"
    rf"|(?:{LATIN_START}localhost|{LATIN_START}[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*|\d{{1,3}}(?:\.\d{{1,3}}){{3}}):(?P<b>\d{{2,5}})(?!\d)"
    r"|端口(?:号)?\s*(?:是|为|:|=)?\s*(?P<c>\d{2,5})(?!\d)"
    r"|(?<![\d.])(?P<d>\d{2,5})\s*端口"
)
# Cheap tests that skip a pattern which cannot match: most texts have no port, path or code.
_PORT_HINT: Final = re.compile(r"[Pp]ort|:\d|端口")
_DOTTED_HINT: Final = re.compile(r"[A-Za-z0-9]\.[A-Za-z0-9]")
_CODE_HINT: Final = re.compile(r"[A-Za-z0-9]_|\(\)|[a-z][A-Z]")
_QUOTE_HINT: Final = re.compile("[\"'「『《]")
# v18.2.0, v2, 1.4.3-rc1; a bare "3.12" only right after a product name (see tech_versions)
_VERSION_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_.])(?:v\d+(?:\.\d+)*|\d+\.\d+\.\d+)(?:[-+][0-9A-Za-z.]*[0-9A-Za-z])?(?![A-Za-z0-9_]|\.\d)"
)
_TECH_VERSION_RE: Final = re.compile(r"\s*(v?\d+(?:\.\d+)+|v\d+)(?![A-Za-z0-9_]|\.\d)")
_CODE_RE: Final = re.compile(
    rf"{LATIN_START}[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\(\))?(?![A-Za-z0-9_(])"  # snake_case, SCREAMING_CASE
    rf"|{LATIN_START}[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+(?:\(\))?(?![A-Za-z0-9_(])"  # camelCase
    rf"|{LATIN_START}[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\(\)"  # call()
)
_CAP_TOKEN: Final = r"[A-Z][A-Za-z0-9]*(?:[.&-][A-Za-z0-9]+)*"
_CAPS_RE: Final = re.compile(rf"{LATIN_START}{_CAP_TOKEN}(?: {_CAP_TOKEN})*{LATIN_END}")
# First person is the speaker ("user" or "assistant"), first person plural the team; an
# assistant's notes name the person it serves "the user".
_PRONOUN_RE: Final = re.compile(
    r"(?<![A-Za-z'])(?:(?P<team>(?:[Mm]y|[Oo]ur|[Tt]he) team|[Ww]e)|(?P<self>I)|(?P<user>[Tt]he user))(?![A-Za-z])"
)
_ZH_PRONOUN_RE: Final = re.compile("(?P<team>我们团队|我们组|我们|咱们)|(?P<self>我)(?!们)")

# ============================================================================ mention patterns


# Between a subject and its predicate: adverbs, auxiliaries and a decision only ("Alice also uses",
# "I have used", "张三主要负责", "我们决定采用"); not "is" ("Bob is like Alice" compares; "is using"
# is a predicate).
GAP: Final = re.compile(
    r"(?:'(?:m|re|ve|s|d))?"
    r"(?:\s+(?:also|now|still|mainly|mostly|usually|really|currently|primarily|always|just|only|"
    r"actually|all|both|typically|generally|often|have|has|had|do|does|did)(?![A-Za-z])"
    r"|\s*(?:也|都|还|主要|一直|现在|目前|平时|经常|通常|正在|只|一般|平常|最|决定|打算|准备|一致同意))*\s*"
)


@dataclass(slots=True, eq=False)
class Mention:
    """One name found in a text, by character span."""

    start: int
    end: int
    name: str
    type: str
    pronoun: bool = False
    lexicon_zh: bool = False  # a Chinese word-list hit, which a longer compound may absorb


@dataclass(slots=True)
class Doc:
    """A text being read: its mentions, indexed by start and end, and which characters they own."""

    text: str
    owner: list[Mention | None] = field(default_factory=list)
    in_predicate: bytearray = field(default_factory=bytearray)
    by_start: dict[int, Mention] = field(default_factory=dict)
    by_end: dict[int, list[Mention]] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # sentence end offsets

    def free(self, start: int, end: int) -> bool:
        return all(o is None for o in self.owner[start:end])

    def take(self, m: Mention) -> Mention:
        self.owner[m.start : m.end] = [m] * (m.end - m.start)
        if not m.pronoun or m.start not in self.by_start:
            self.by_start[m.start] = m
        self.by_end.setdefault(m.end, []).append(m)
        return m

    def remove(self, m: Mention) -> None:
        self.owner[m.start : m.end] = [None] * (m.end - m.start)
        if self.by_start.get(m.start) is m:
            del self.by_start[m.start]
        self.by_end[m.end].remove(m)

    def mentions(self) -> list[Mention]:
        return sorted({id(m): m for ms in self.by_end.values() for m in ms}.values(), key=lambda m: m.start)

    def at(self, pos: int) -> Mention | None:
        m = self.by_start.get(pos)
        return m if m is not None and not m.pronoun else None

    def ending_at(self, end: int) -> list[Mention]:
        return self.by_end.get(end, [])

    def sentence(self, pos: int) -> int:
        return bisect.bisect_right(self.ends, pos)


def _sentence_start(text: str, pos: int) -> bool:
    i = pos - 1
    while i >= 0 and text[i] in " \t\"'([*-•–—":
        i -= 1
    return i < 0 or text[i] in ".!?。:;\n"


def _cap_type(name: str) -> str:
    folded = name.casefold()
    words = folded.split()
    if folded in _PLACES:
        return "place"
    if folded in _ORGS or (len(words) > 1 and words[-1].rstrip(".") in _ORG_SUFFIX):
        return "org"
    if name.split()[0] in _FIRST_NAMES:
        return "person"
    return "thing"


def zh_type(name: str) -> str:
    """The type of a Chinese name: a place, organisation or concept of the word lists, a person's
    name (surname + given name, or a title), else a concept."""
    if name in _ZH_PLACES:
        return "place"
    if name in _ZH_ORGS:
        return "org"
    if name in _ZH_CONCEPTS:
        return "concept"
    if (_ZH_NAME_RE.fullmatch(name) and name not in _ZH_NOT_NAMES) or _ZH_TITLED_RE.fullmatch(name):
        return "person"
    return "concept"


def classify(name: str) -> str:
    """The type of a bare name (a fact value, say): a known product, place, organisation…"""
    if name.casefold() in TECH_LOOSE or name in TECH_EXACT:
        return "tech"
    if HAN_CHAR.search(name):
        return zh_type(name)
    if _VERSION_RE.fullmatch(name):
        return "version"
    t = _cap_type(name) if name[:1].isupper() else "thing"
    return t


def candidates(text: str, predicate_starts: set[int], cjk: bool) -> Iterator[tuple[int, Mention]]:
    """(priority, mention) for every pattern hit; lower priorities claim their span first.
    Patterns that cannot match (no backtick, no CJK character…) are not run at all."""
    for m in _BACKTICK_RE.finditer(text) if "`" in text else ():
        inner = m.group(1).strip()
        if inner and len(inner.split()) <= 4:
            name = inner.removesuffix("()") or inner
            kind = "tech" if inner.casefold() in TECH_LOOSE else "code"
            yield 0, Mention(m.start(), m.end(), canonical_name(name) if kind == "tech" else name, kind)
    for m in _QUOTED_RE.finditer(text) if _QUOTE_HINT.search(text) else ():
        inner = next(g for g in m.groups() if g is not None).strip()
        words = inner.split()
        # a name: one word, or capitalised, or Chinese; not a quoted lower-case sentence
        if inner and len(words) <= 4 and (len(words) == 1 or inner[0].isupper() or HAN_CHAR.match(inner)):
            t = classify(inner)
            yield 1, Mention(m.start(), m.end(), canonical_name(inner), "thing" if t in GENERIC_TYPES else t)
    for m in _URL_RE.finditer(text) if "://" in text else ():
        url = m.group().rstrip(".,;:!?")
        yield 2, Mention(m.start(), m.start() + len(url), url, "url")
    for m in _EMAIL_RE.finditer(text) if "@" in text else ():
        yield 2, Mention(m.start(), m.end(), m.group(), "email")
    for m in TECH_RE.finditer(text.translate(ASCII_LOWER)):
        said = _SPACES.sub(" ", text[m.start() : m.end()])
        canon = TECH_EXACT.get(said) or TECH_LOOSE.get(said.casefold())
        if canon is not None:  # "go", "rust" in lower case are words, not languages
            yield 3, Mention(m.start(), m.end(), canon, "tech")
    for m in _FILE_RE.finditer(text) if "/" in text or "." in text else ():
        yield 4, Mention(m.start(), m.end(), m.group(), "path" if m.group()[:1] in "/~." else "file")
    dotted = _DOTTED_HINT.search(text) is not None
    for m in _IP_RE.finditer(text) if dotted else ():
        yield 5, Mention(m.start(), m.end(), m.group(), "host")
    for m in _HOST_RE.finditer(text) if dotted else ():
        yield 5, Mention(m.start(), m.end(), m.group(), "host")
    for m in _PORT_RE.finditer(text) if _PORT_HINT.search(text) else ():
        g = next(n for n in "abcd" if m.group(n) is not None)
        if 1 <= int(m.group(g)) <= 65535:
            yield 6, Mention(m.start(g), m.end(g), str(int(m.group(g))), "port")
    for m in _VERSION_RE.finditer(text) if dotted or "v" in text else ():
        yield 6, Mention(m.start(), m.end(), m.group(), "version")
    for m in _ZH_TITLED_RE.finditer(text) if cjk else ():
        yield 7, Mention(m.start(), m.end(), m.group(), "person")
    for m in _ZH_LEXICON_RE.finditer(text) if cjk else ():
        yield 7, Mention(m.start(), m.end(), m.group(), zh_type(m.group()), lexicon_zh=True)
    for m in _CODE_RE.finditer(text) if _CODE_HINT.search(text) else ():
        yield 8, Mention(m.start(), m.end(), m.group().removesuffix("()"), "code")
    yield from ((9, c) for c in _capitalised(text, predicate_starts))
    for pronouns in (_PRONOUN_RE, _ZH_PRONOUN_RE) if cjk else (_PRONOUN_RE,):
        for m in pronouns.finditer(text):
            key = m.lastgroup if m.lastgroup in ("team", "user") else "self"
            yield 10, Mention(m.start(), m.end(), key, "group" if key == "team" else "user", pronoun=True)


def _capitalised(text: str, predicate_starts: set[int]) -> Iterator[Mention]:
    """Capitalised names ("Alice", "Acme Corp", "New York"). A capitalised word that only starts
    a sentence ("Started the service") is a name only when known (a first name, a place), written
    capitalised elsewhere in the text, or the subject of a predicate ("Zoe works at…")."""
    groups: list[tuple[int, list[tuple[int, str]]]] = []
    inner: set[str] = set()
    for m in _CAPS_RE.finditer(text):
        pos, group = m.start(), list[tuple[int, str]]()
        for tok in m.group().split(" "):
            if tok.casefold() in CAPITALISED_STOPWORDS or len(tok) > MAX_NAME_CHARS:
                if group:
                    groups.append((group[0][0], group))
                group = []
            else:
                group.append((pos, tok))
            pos += len(tok) + 1
        if group:
            groups.append((group[0][0], group))
    initial = {start for start, _ in groups if _sentence_start(text, start)}
    for start, group in groups:
        if start not in initial:
            inner.add(" ".join(t for _, t in group).casefold())
            inner.update(t.casefold() for _, t in group)
    for start, group in groups:
        if start in initial:
            name = " ".join(t for _, t in group)
            end = start + len(name)
            gap = GAP.match(text, end)
            known = (
                _cap_type(name) != "thing"
                or name.casefold() in inner
                or (gap is not None and gap.end() in predicate_starts)
            )
            if not known:
                group = group[1:]
                if not group:
                    continue
        start = group[0][0]
        name = " ".join(t for _, t in group)
        yield Mention(start, start + len(name), name, _cap_type(name))


def tech_versions(doc: Doc) -> list[tuple[Mention, Mention]]:
    """ "Python 3.12", "Node.js v18.2.0": a version right after a product is that product's."""
    pairs = []
    for m in doc.mentions():
        if m.type != "tech":
            continue
        v = _TECH_VERSION_RE.match(doc.text, m.end)
        if v is None:
            continue
        existing = doc.at(v.start(1))
        if existing is not None and existing.type == "version":
            pairs.append((m, existing))
        elif existing is None and doc.free(v.start(1), v.end(1)):
            pairs.append((m, doc.take(Mention(v.start(1), v.end(1), v.group(1), "version"))))
    return pairs
