"""Fact keys: the key-phrase table (English and Chinese synonyms of the common profile keys), how
a phrase becomes a key, which keys are refused, and where a request names keys.

One table serves every reader: reflect and the router key what a statement says with it, the
rewriter finds the keys a request touches with it (so "连接到我们定下来的数据库" touches the
English-keyed fact ``database``), and the graph names a fact's relation after the key.

>>> normalize_key("main database"), normalize_key("主力语言"), normalize_key("Favourite Color")
('database', 'primary_language', 'favourite_color')
>>> is_denied_key("user_role"), is_denied_key("系统提示"), is_denied_key("editor")
(True, True, False)
>>> match_keys("连接到我们定下来的数据库", known={"database"})
['database']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Final, Literal, NamedTuple

from trimem.text.script import HAN_CHAR, HAN_RANGE, LATIN_END, LATIN_START, has_han, prepare_text
from trimem.text.stopwords import QUERY_STOPWORDS

__all__ = [
    "DENY_WORDS",
    "KEY_PHRASES",
    "NOTE_PREFIX",
    "PROFILE_KEYS",
    "KeyHit",
    "KeyMode",
    "fact_text",
    "is_denied_key",
    "is_known_key",
    "is_note_key",
    "is_valid_key",
    "key_phrase",
    "lookup_key",
    "match_keys",
    "normalize_key",
    "note_key",
    "prepare_aliases",
    "resolve_key",
]

KEY_PHRASES: Final[Mapping[str, str]] = {
    "primary_language": "main language|primary language|main programming language|"
    "primary programming language|programming language|coding language|main coding language|"
    "language of choice|主力语言|主要语言|编程语言|主力编程语言|主要编程语言|开发语言|主语言",
    "database": "database|main database|primary database|db|main db|primary db|database engine|"
    "数据库|主数据库|主要数据库",
    "target_os": "os|operating system|system|target os|target operating system|操作系统|系统|电脑系统|开发环境|开发系统",
    "editor": "editor|ide|code editor|text editor|编辑器|代码编辑器",
    "name": "name|名字|姓名",
    "timezone": "timezone|time zone|时区",
    "city": "city|城市|所在城市",
    "email": "email|e mail|邮箱|电子邮箱|邮件地址",
    "browser": "browser|浏览器",
    "framework": "framework|框架",
    "package_manager": "package manager|包管理器",
    "shell": "shell",
    "terminal": "terminal|终端",
    "native_language": "native language|mother tongue|母语",
    "cloud_provider": "cloud provider|cloud|云服务商",
    "tech_stack": "tech stack|stack|技术栈",
    "preference": "preference|用户偏好|偏好|喜好",
    "phone": "phone|phone number|mobile|mobile number|手机|手机号|手机号码|电话|电话号码",
    "birthday": "birthday|date of birth|生日",
    "address": "address|home address|地址|住址",
    "company": "company|employer|公司|雇主",
    "hobby": "hobby|爱好",
    "password": "password|密码",
    "theme": "theme|主题",
    "job_title": "job title|position|职位",
    "api_key": "api key|api 密钥|api密钥",
}
"""Key → ``|``-separated phrases naming it, lowercase, words separated by single spaces."""

_TABLE: Final = {p: key for key, phrases in KEY_PHRASES.items() for p in phrases.split("|")}

PROFILE_KEYS: Final = frozenset(
    "name email editor city timezone primary_language database target_os browser shell terminal "
    "framework package_manager native_language cloud_provider tech_stack birthday phone address "
    "company job_title hobby preference theme password api_key pronouns nickname".split()
)
"""Keys whose values need not look like identifiers ("my name is alice", "我的爱好是游泳")."""

DENY_WORDS: Final = frozenset(
    "role roles permission permissions privilege privileges admin administrator superuser sudo "
    "system instruction instructions prompt prompts rule rules policy policies persona directive "
    "directives jailbreak".split()
)
_DENY_HAN: Final = ("权限", "角色", "指令", "系统提示", "提示词", "管理员", "规则", "身份")

_KEY: Final = re.compile(rf"[a-z][a-z0-9_]{{0,63}}|(?=.*[{HAN_RANGE}])[a-z0-9_{HAN_RANGE}]{{1,12}}")

_DETERMINERS: Final = re.compile(
    r"^(?:(?:my|our|the|a|an|your|this|user's|team's|project's|company's)\s+|这个|我们的|我的|咱们的|团队的|项目的|用户的|公司的)+"
)
_QUALIFIERS: Final = re.compile(
    r"^(?:(?:main|primary|default|preferred|favorite|favourite|usual|go to|current|new|everyday|"
    r"daily|personal)\s+)+|^(?:主要的?|主力的?|默认的?|首选的?|常用的?|惯用的?|最喜欢的|喜欢的|最爱的|新的|现在的|目前的)+"
)
_KEY_TAIL: Final = re.compile(r"(?:\s+(?:now|nowadays|these days|too|as well|again|instead|then))+$")
_EDGE: Final = " \t\"'`.,;:!?()[]{}<>。、「」《》…~"
_SPACES: Final = re.compile(r"\s+")
_NON_WORD: Final = re.compile(r"[^\w]")
_ALNUM: Final = re.compile(r"[a-z0-9]+")

# Words that name a task's artefact or a pronoun: "change my function to return a list" is a
# coding request, not a profile fact.
_ARTIFACTS: Final = frozenset(
    "code function functions method class file files script scripts test tests variable query loop "
    "answer reply response message output input mind plan task this that it these those them "
    "something everything anything one here there today".split()
)
_ARTIFACTS_HAN: Final = frozenset("代码 函数 方法 文件 脚本 变量 测试 答案 回答 任务 计划 按钮 页面 它 问题".split())
# Words that name a sentence's topic rather than a property ("the problem is ...", "Note: ...").
_TOPICS: Final = frozenset(
    "problem issue thing point question answer reason idea plan goal result fix bug error warning "
    "difference trick catch solution truth fact deal way first last next best worst same only "
    "weather note todo to_do update tip hint step steps example summary ps re subject from to cc "
    "http https q a output input code function test tests it this that one decision remember "
    "important reminder fyi btw favourite favorite fav "  # "X is my favourite": of what is not said
    "问题 原因 答案 结果 办法 区别 注意 备注 提示 例子 总结 步骤 错误 代码 决定 记住 最爱 最喜欢".split()
)
# A Chinese key naming a method or a reason makes a how-to, not a fact ("备份的方法是运行 pg_dump").
_HOW_TO_HAN: Final = re.compile(r"方法|办法|步骤|原因|问题|区别|如何|怎么|怎样|为什么")

KeyHow = Literal["alias", "table", "qualified", "plain"]
KeyMode = Literal["known", "profile", "any"]
"""Which phrases a statement shape accepts as keys: ``known`` only an alias or the table's;
``profile`` also a qualified phrase ("favourite colour"); ``any`` any short phrase that is not a
task's artefact ("code", "function") or a sentence's topic ("problem", "note")."""


class KeyHit(NamedTuple):
    """The key a phrase names, and how it was named."""

    key: str
    how: KeyHow  # "alias"/"table": named by an alias or the table; else made from the phrase

    @property
    def known(self) -> bool:
        """Named by an alias or the table, or a common profile key: a value needs no
        identifier-like look to count."""
        return self.how in ("alias", "table") or self.key in PROFILE_KEYS


NOTE_PREFIX: Final = "note_"
"""Keys of profile notes (:mod:`trimem.text.notes`) start with this; their value is the note."""


def is_note_key(key: str) -> bool:
    return key.startswith(NOTE_PREFIX)


def is_known_key(key: str) -> bool:
    """A key of the key-phrase table or a common profile key (``database``, ``name``)."""
    return key in KEY_PHRASES or key in PROFILE_KEYS


def fact_text(key: str, value: str, was: str | None = None) -> str:
    """What the fact index reads of a fact: every phrase of the key-phrase table naming its key
    (English and Chinese, so either language's request finds it), or the key's own words, then
    the value; a note is its text, then the note it replaced (`was`): a change is often told
    without its subject ("公司换系统了", "I drive in now"), which the earlier note names.

    >>> fact_text("database", "PostgreSQL").split("|")[-1], fact_text("note_bike", "I bike to work")
    (' PostgreSQL', 'I bike to work')
    >>> fact_text("note_commute", "I drive in now.", was="I take the 7:40 express bus.")
    'I drive in now. I take the 7:40 express bus.'
    """
    if is_note_key(key):
        return value if not was or was == value else f"{value} {was}"
    phrases = KEY_PHRASES.get(key)
    return f"{phrases if phrases else key.replace('_', ' ')}| {value}"


def key_phrase(phrase: str) -> str:
    """The lookup form of a key phrase: folded, lowercased, determiners and trailing adverbs off.

    >>> key_phrase("  My Main_Language now "), key_phrase("我的构建工具")
    ('main language', '构建工具')
    """
    p = prepare_text(phrase).casefold().replace("_", " ").replace("-", " ")
    p = _SPACES.sub(" ", p).strip(_EDGE)
    p = _KEY_TAIL.sub("", _DETERMINERS.sub("", p)).strip()
    return p.removesuffix("的")


def prepare_aliases(aliases: Mapping[str, str] | None) -> dict[str, str]:
    """Caller aliases (phrase → key) in lookup form."""
    return {key_phrase(k): v.strip().casefold() for k, v in (aliases or {}).items() if key_phrase(k)}


def lookup_key(phrase: str, aliases: Mapping[str, str] | None = None) -> KeyHit | None:
    """The key a phrase names and how (alias, table, qualified or plain phrase), or None when it
    cannot be a key; no deny list, no mode (see :func:`resolve_key`). ``aliases`` must be in
    lookup form (:func:`prepare_aliases`).

    >>> lookup_key("my main DB"), lookup_key("构建工具")
    (KeyHit(key='database', how='table'), KeyHit(key='构建工具', how='plain'))
    """
    aliases = aliases or {}
    p = key_phrase(phrase)
    if not p:
        return None
    for cand in (p, _QUALIFIERS.sub("", p).strip()):
        if cand in aliases:
            return KeyHit(aliases[cand], "alias")
        if cand in _TABLE:
            return KeyHit(_TABLE[cand], "table")
    how: KeyHow = "qualified" if _QUALIFIERS.match(p) else "plain"
    if has_han(p):
        key = _NON_WORD.sub("", p)  # Chinese has no word boundaries: the short phrase is the key
        return KeyHit(key, how) if 1 <= len(key) <= 8 else None
    ascii_ = unicodedata.normalize("NFKD", p).encode("ascii", "ignore").decode()
    words = _ALNUM.findall(ascii_)
    if not words or len(words) > 4 or not words[0][0].isalpha():
        return None
    return KeyHit("_".join(words)[:64], how)


def normalize_key(phrase: str, aliases: Mapping[str, str] | None = None) -> str | None:
    """Map a phrase naming a fact to its key, or ``None`` when it cannot be a key.

    ``aliases`` (phrase -> key, e.g. from ``facts.alias``) win over the built-in table
    (main language, 主力语言 -> ``primary_language``; database, DB, 主数据库 -> ``database``;
    OS, system, 操作系统 -> ``target_os``; editor, IDE, 编辑器 -> ``editor``; ...). A leading
    determiner (my, the, 我的) is dropped, and a qualifier (main, default, 默认) when the rest is
    a known key. Otherwise English becomes snake_case of at most 4 words, and a Chinese phrase of
    at most 8 characters is its own key (``"最喜欢的颜色"``): stable, and readable in the profile.
    The deny list is not applied here; see :func:`is_denied_key`.
    """
    found = lookup_key(phrase, prepare_aliases(aliases))
    return found.key if found else None


def resolve_key(phrase: str, mode: KeyMode = "any", aliases: Mapping[str, str] | None = None) -> KeyHit | None:
    """The key a statement's phrase names, under the statement shape's `mode` (:data:`KeyMode`),
    or None; refused and invalid keys are None too. ``aliases`` must be in lookup form
    (:func:`prepare_aliases`).

    >>> resolve_key("favourite editor"), resolve_key("deploy target", "known")
    (KeyHit(key='editor', how='table'), None)
    >>> resolve_key("problem"), resolve_key("备份的方法")
    (None, None)
    """
    found = lookup_key(phrase, aliases or {})
    if found is None or not is_valid_key(found.key) or is_denied_key(found.key):
        return None
    if found.how in ("alias", "table"):
        return found
    if mode == "known" or (mode == "profile" and found.how != "qualified"):
        return None
    key = found.key
    if key in _TOPICS or key in _ARTIFACTS_HAN or key.startswith(("这", "那", "该")) or _HOW_TO_HAN.search(key):
        return None
    return None if any(w in _ARTIFACTS for w in key.split("_")) else found


def is_valid_key(key: str) -> bool:
    """snake_case ASCII of at most 64 characters, or a short phrase with Chinese characters."""
    return _KEY.fullmatch(key) is not None


def is_denied_key(key: str) -> bool:
    """Keys that would let stored text act as authority are never proposed: any ``_``-separated
    word in :data:`DENY_WORDS` (``user_role``, ``system_prompt``) or a Chinese deny term."""
    k = key.casefold()
    return any(w in DENY_WORDS for w in k.split("_")) or any(t in k for t in _DENY_HAN)


# ------------------------------------------------------------------------------ keys in a request

_SEP: Final = re.compile(r"[\s_\-]+")


def _canon(phrase: str) -> str:
    """Matching form of a request's phrase: lowercased, runs of spaces, underscores and dashes as
    one space."""
    return _SEP.sub(" ", phrase.lower()).strip()


_Items = tuple[tuple[str, tuple[str, ...]], ...]


@functools.lru_cache(maxsize=32)
def _index(items: _Items) -> tuple[dict[str, list[str]], re.Pattern[str] | None]:
    """Phrase → keys (the caller's aliases, every key's own name, then the table's phrases of the
    keys the caller knows), and one alternation over the phrases, longest first: English on Latin
    word boundaries (spaces, "_" or "-" between words, optional plural), Chinese by substring."""
    table: dict[str, list[str]] = {}
    for alias, keys in items:
        table.setdefault(_canon(alias), []).extend(keys)
    known = {key for _, keys in items for key in keys}
    for key in sorted(known):
        table.setdefault(_canon(key), []).append(key)
    for phrase, key in _TABLE.items():
        if key in known:
            table.setdefault(_canon(phrase), [key])
    table.pop("", None)
    phrases = sorted(table, key=lambda p: (-len(p), p))
    words = {p: r"[\s_\-]+".join(map(re.escape, p.split(" "))) for p in phrases}
    en = [words[p] for p in phrases if not has_han(p)]
    zh = [words[p] for p in phrases if has_han(p)]
    parts = [LATIN_START + "(?P<en>" + "|".join(en) + ")(?:e?s)?" + LATIN_END] if en else []
    parts += ["(?P<zh>" + "|".join(zh) + ")"] if zh else []
    return table, re.compile("|".join(parts), re.IGNORECASE) if parts else None


def _items(aliases: Mapping[str, Sequence[str]] | None, known: Iterable[str]) -> _Items:
    items = tuple((alias, tuple(keys)) for alias, keys in (aliases or {}).items())
    return items + tuple((k, (k,)) for k in sorted(set(known)))


def match_keys(
    query: str, aliases: Mapping[str, Sequence[str]] | None = None, *, known: Iterable[str] = ()
) -> list[str]:
    """The fact keys `query` names, first-seen order: through ``aliases`` (phrase → keys), a key's
    own name ("primary language" → ``primary_language``) or a phrase of the key-phrase table, for
    the keys the caller knows — those in ``aliases``' values and in ``known``.

    >>> match_keys("switch my primary-language to Rust", {"环境": ["primary_language", "target_os"]})
    ['primary_language']
    >>> match_keys("the database", {})
    []
    """
    table, pattern = _index(_items(aliases, known))
    keys: list[str] = []
    if pattern is not None:
        for m in pattern.finditer(query):
            for key in table.get(_canon(m[m.lastgroup or 0]), ()):
                if key not in keys:
                    keys.append(key)
    return keys


def keys_for_phrase(
    phrase: str, aliases: Mapping[str, Sequence[str]] | None = None, *, known: Iterable[str] = ()
) -> list[str]:
    """The keys one phrase stands for exactly (no search inside it), by the same index as
    :func:`match_keys`: a model's answer naming "数据库" means ``database`` when it is known."""
    table, _ = _index(_items(aliases, known))
    return list(table.get(_canon(phrase), ()))


_SLUG_WORD: Final = re.compile(r"[a-z][a-z0-9]+")
_SLUG_SKIP: Final = frozenset("i im i'm my me we our us you your it its is am are the a an".split())


def note_key(text: str, taken: Container[str]) -> str:
    """A readable key for a new note, not among `taken`: ``note_`` and its first content words
    (``note_allergic_cats``), or its first Chinese characters (``note_每天坐地铁``).

    >>> note_key("I'm allergic to cats.", ()), note_key("我每天坐地铁十号线上下班", ())
    ('note_allergic_cats', 'note_每天坐地铁十')
    """
    if has_han(text):
        chars = [c for c in HAN_CHAR.findall(text) if c not in "我们的是了"]
        base = NOTE_PREFIX + "".join(chars[:6])
        limit = 12
    else:
        words = [w for w in _SLUG_WORD.findall(prepare_text(text).casefold()) if w not in _SLUG_SKIP]
        content = [w for w in words if w not in QUERY_STOPWORDS] or words
        base = NOTE_PREFIX + "_".join(w for w in content[:3] if w not in DENY_WORDS)
        limit = 64
    base = base if len(base) > len(NOTE_PREFIX) else NOTE_PREFIX + "about"
    key, n = base[:limit], 2
    while key in taken or is_denied_key(key):
        suffix = f"_{n}"
        key, n = base[: limit - len(suffix)] + suffix, n + 1
    return key
