"""The statement shapes the statement parser reads (:mod:`trimem.text.statements`), English and
Chinese: facts about the speaker ("my main language is X", "我的邮箱是X", "I live in X"),
preferences ("I use X", "我主要用X"), changes ("switch X to Y", "把X改成Y"), decisions ("we decided
to use X as Y", "决定采用X作为Y"), negations ("I no longer use X", "不再使用X") and forgetting
("forget my X"); and the shapes of a short note ("Deadline: 2026-12-01", "The API base URL is
https://x", "call me Ana", "端口是 6379") that apply when no statement shape does.

>>> [r.name for r in RULES if r.pattern.search("switch my main language to Rust")]
['switch_key_to']
>>> subject_of("we decided to use X"), subject_of("我的邮箱是 a@b.com"), subject_of("Deadline: Friday")
('team', 'user', None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from trimem.text.keys import KeyMode
from trimem.text.products import ALL_CATEGORIES, OS_EDITOR

__all__ = [
    "COLON",
    "LEAD_IN",
    "NAME_EN",
    "NAME_ZH",
    "RULES",
    "THE_KEY_IS",
    "WIDEN",
    "ZH_KEY_IS",
    "Action",
    "Kind",
    "Rule",
    "Scope",
    "subject_of",
]

Scope = Literal["personal", "change", "decision"]
Action = Literal["set", "delete_value", "delete_key"]
Kind = Literal["fact", "preference", "change", "decision", "negation", "forget"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One statement shape. ``scope`` says who may say it: "personal" only the user; "change" and
    "decision" also another party when the sentence carries a decision marker ("we decided").
    ``kind`` is what the reading says it is (see :class:`~trimem.text.statements.Statement`)."""

    name: str
    pattern: re.Pattern[str]
    scope: Scope
    kind: Kind
    action: Action = "set"
    key_mode: KeyMode = "known"  # which key phrases count, see trimem.text.keys.resolve_key
    cats: frozenset[str] = ALL_CATEGORIES  # product kinds a key may be inferred from
    widen: bool = False  # an adverb like "mainly"/"主要" in group adv widens cats to all
    key: str | None = None  # a fixed key: the shape names what it is about ("I live in" -> city)
    chinese: bool = False  # the shape reads Chinese: tried only on text with Han characters
    gate: frozenset[str] = frozenset()  # one must occur (an English word, a Chinese substring); empty: none needed


_DET = r"(?P<det>my|our|the)\s+"
_EN_ADV = r"(?P<adv>(?:(?:now|mainly|mostly|primarily|usually|generally|typically|normally|predominantly|largely|also|still|currently|personally|just)\s+)*)"
_ZH_ADV = r"(?P<adv>(?:现在|目前|平时|一般|主要|通常|日常|基本上?|经常|常|一直|主力|也|还|都)*)"
_ZH_ME = r"(?<![帮给让替为叫请])我们?"
_ZH_CHANGE = (
    r"(?:改成|改为|换成|换为|换到|切换成|切换为|切换到|切到|设为|设置为|设置成|设成|定为|调成|调为|更换为|替换成|替换为|变成"
    r"|迁移到|迁到|升级到|升级为)了?"
)
_ZH_AS = r"(?:作为|当作|当成|做为|来做|做|当)"
# 是 as a copula, not inside a word that only contains it: 总是/老是 (always), 可是/但是 (but),
# 要是/若是 (if), 于是 (so), 凡是, 或是 (or), 像是/似是 (seems), 硬是 ("还是 Vim" is still a value)
_ZH_IS = r"(?<![总老可但要若于凡或像似硬])是"
WIDEN: Final = re.compile(
    r"now|main|most|primar|usual|general|typical|normal|predominant|larg|现在|目前|平时|一般|主要|通常|日常|基本|常|一直|主力"
)


def _r(name: str, pattern: str, scope: Scope, kind: Kind, **kw: Any) -> Rule:
    return Rule(name, re.compile(pattern, re.I), scope, kind, **kw, chinese=name.startswith("zh_"))


_SHAPES: Final = [
    # --- English: statements about the user
    _r(
        "my_key_is",
        r"\b(?:my|our)\s+(?P<key>[a-z][\w\s'-]{0,40}?)\s+(?:is|are|=|will\s+be|has\s+become|became|has\s+changed\s+to|changed\s+to)\s+(?P<value>.+)$",
        "personal",
        "fact",
        key_mode="profile",
    ),
    _r(
        "value_is_my_key",
        r"^(?P<value>[^\s].{0,60}?)\s+is\s+(?:now\s+)?(?:my|our)\s+(?P<key>.+)$",
        "personal",
        "fact",
        key_mode="profile",
    ),
    _r(
        "im_on",
        r"\b(?:i'm|im|i\s+am)\s+"
        + _EN_ADV
        + r"(?:on|running|working\s+on|developing\s+on|coding\s+on)\s+(?P<value>.+)$",
        "personal",
        "preference",
        cats=frozenset({"os"}),
    ),
    _r(
        "im_using",
        r"\b(?:i'm|im|i\s+am)\s+" + _EN_ADV + r"using\s+(?P<value>.+)$",
        "personal",
        "preference",
        cats=OS_EDITOR,
        widen=True,
    ),
    _r(
        "bare_on",
        r"^(?:[\w\s]{0,24},\s*)?(?:(?:and|also|now|currently|mostly|mainly|usually|all)\s+)*on\s+(?P<value>.+)$",
        "personal",
        "preference",
        cats=frozenset({"os"}),
    ),
    _r(
        "i_use",
        r"\bi\s+" + _EN_ADV + r"(?:use|run|work\s+with|work\s+on|develop\s+on|code\s+on)\s+(?P<value>.+)$",
        "personal",
        "preference",
        cats=OS_EDITOR,
        widen=True,
    ),
    _r(
        "i_code_in",
        r"\bi\s+"
        + _EN_ADV
        + r"(?:code|program|develop|write\s+code|write\s+software|work|write)\s+in\s+(?P<value>.+)$",
        "personal",
        "preference",
        cats=frozenset({"language"}),
    ),
    _r(
        "i_prefer_for",
        r"\bi(?:'d)?\s+(?:(?:now|really|much|definitely)\s+)*(?:prefer|favou?r)\s+(?:using\s+|to\s+use\s+)?(?P<value>.+?)\s+(?:for|as)\s+(?P<det>my|our|the)?\s*(?P<key>.+)$",
        "personal",
        "preference",
        key_mode="any",
    ),
    _r(
        "i_prefer",
        r"\b(?:i(?:'d)?\s+(?:(?:now|really|much|definitely)\s+)*(?:prefer|favou?r)"
        r"|i\s+(?:(?:really|also|just|do)\s+)*(?:like|love|enjoy))\s+(?:using\s+|to\s+use\s+)?(?P<value>.+)$",
        "personal",
        "preference",
    ),
    _r(
        "i_live_in",
        r"\bi(?:'m|\s+am)?\s+(?:(?:now|currently|still|also)\s+)*(?:live|living|based)\s+in\s+(?P<value>[^,;]+?)"
        r"(?:\s+(?:with|since|for|and|but|now|these\s+days|at\s+the\s+moment)\b.*)?$",
        "personal",
        "fact",
        key="city",
    ),
    _r(
        "i_work_at",
        r"\bi(?:'m|\s+am)?\s+(?:(?:now|currently|still|also)\s+)*(?:work|working|employed)\s+(?:at|for|by)\s+(?P<value>[^,;]+?)"
        r"(?:\s+(?:as|since|for|and|but|now|these\s+days)\b.*)?$",
        "personal",
        "fact",
        key="company",
    ),
    _r(
        "no_longer",
        r"\b(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+no\s+longer\s+(?:use|using|on|run|running|work\s+with|working\s+with|code\s+in|coding\s+in|write|writing)\s+(?P<value>.+)$",
        "personal",
        "negation",
        action="delete_value",
    ),
    _r(
        "dont_use_anymore",
        r"\b(?:i|we)\s+(?:don't|do\s+not|dont)\s+(?:use|run|code\s+in|write)\s+(?P<value>.+?)\s+(?:any\s*more|any\s+longer)$",
        "personal",
        "negation",
        action="delete_value",
    ),
    _r(
        "stopped_using",
        r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:stopped|quit|given\s+up|gave\s+up|dropped|ditched|abandoned)\s+(?:using\s+|on\s+)?(?P<value>.+)$",
        "personal",
        "negation",
        action="delete_value",
    ),
    _r(
        "forget_my",
        r"\b(?:forget|remove|delete|clear|drop|erase|unset)\s+(?:about\s+)?(?:my|our)\s+(?P<key>.+)$",
        "personal",
        "forget",
        action="delete_key",
        key_mode="any",
    ),
    # --- English: changes
    _r(
        "switch_key_to",
        r"\b(?:switch|switched|switching|change|changed|changing|set|update|updated|updating|move|moved|migrate|migrated)\s+(?:"
        + _DET
        + r")?(?!from\b|to\b|over\b)(?P<key>[a-z][\w\s'-]{0,40}?)\s+(?:from\s+(?P<old>.+?)\s+)?(?:to|into)\s+(?P<value>.+)$",
        "change",
        "change",
        key_mode="known",
    ),
    _r(
        "switch_to",
        r"\b(?:i|we)(?:'ve|\s+have|\s+had|'re|\s+are|\s+am|'m)?\s+(?:(?:now|just|finally|fully|already)\s+)*(?:switch|switched|switching|move|moved|moving|migrate|migrated|migrating|change|changed)\s+(?:over\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<value>.+)$",
        "change",
        "change",
    ),
    _r(
        "use_as_my",
        # "use Redis for caching and PostgreSQL as the main database": the last item is the value
        r"\b(?:i(?:'ll|\s+will)\s+|we(?:'ll|\s+will)\s+)?(?:use|using)\s+(?:.*?\s+and\s+)?(?P<value>.+?)\s+as\s+"
        + _DET
        + r"(?P<key>.+)$",
        "change",
        "change",
        key_mode="known",
    ),
    _r(
        "make_value_my", r"\bmake\s+(?P<value>.+?)\s+(?P<det>my|our)\s+(?P<key>.+)$", "change", "change", key_mode="any"
    ),
    _r(
        "from_now_on",
        r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on),?\s+(?:i(?:'ll|\s+will)\s+|we(?:'ll|\s+will)\s+|please\s+)?(?:use|go\s+with|write|code\s+in|work\s+in|stick\s+with|switch\s+to)\s+(?P<value>(?:(?!\s+as\s).)+)$",
        "change",
        "change",
    ),
    # --- English: decisions
    _r(
        "decided",
        r"\b(?:(?:decided|agreed|opted|committed)\s+(?:to\s+(?:use|adopt|go\s+with|switch\s+to|move\s+to|migrate\s+to|stick\s+with|standardi[sz]e\s+on)|on|upon|for)|settled\s+on|standardi[sz]ed\s+on|(?:chose|picked(?!\s+up\b)|selected)(?:\s+to\s+use)?|decision\s*(?:is\s+to\s+use|:(?:\s*use)?))\s+(?P<value>.+?)(?:\s+(?:as|for)\s+(?!now\b|good\b|the\s+time\s+being\b|a\s+while\b)(?P<key>.+))?$",
        "decision",
        "decision",
        key_mode="any",
    ),
    _r(
        "lets_go_with",
        r"\b(?:let(?:'s|s|\s+us)|we(?:'re|\s+are)(?:\s+going)?(?:\s+to)?|we(?:'ll|\s+will))\s+(?:go\s+with|going\s+with|adopt|switch\s+to|move\s+to|migrate\s+to|stick\s+with|standardi[sz]e\s+on|settle\s+on)\s+(?P<value>.+?)(?:\s+(?:as|for)\s+(?!now\b|good\b|the\s+time\s+being\b|a\s+while\b)(?P<key>.+))?$",
        "decision",
        "decision",
        key_mode="any",
    ),
    _r(
        "lets_use_as",
        r"\blet(?:'s|s|\s+us)\s+use\s+(?P<value>.+?)\s+(?:as|for)\s+(?!now\b|good\b)(?P<key>.+)$",
        "decision",
        "decision",
        key_mode="any",
    ),
    # --- Chinese: statements about the user
    _r(
        "zh_my_key_is",
        r"(?:我们|咱们|我|用户|团队|项目|公司)的(?P<key>[^,;的是为叫]{1,12}?)(?:现在|目前|还|一直|已经)?"
        r"(?:" + _ZH_IS + r"|为|叫做?|用的是|改成了|换成了|变成了|改为)(?P<value>.+)$",
        "personal",
        "fact",
        key_mode="profile",
    ),
    _r(
        # "我本地主力语言是 X", "我平时的编辑器是 X": a place or habit word between me and a known key
        "zh_me_key_is",
        r"(?:我们|咱们|我)(?:本地|平时|平常|现在|目前|日常|一般|主要|工作中|公司里|在公司|在家)的?"
        r"(?P<key>[^,;的是为]{1,8}?)(?:" + _ZH_IS + r"|为|用的是)(?P<value>.+)$",
        "personal",
        "fact",
        key_mode="known",
    ),
    _r(
        "zh_my_fav_is",
        r"我(?P<key>最?(?:喜欢|常用|惯用|首选)的[^,;]{1,8}?)(?:" + _ZH_IS + r"|为)(?P<value>.+)$",
        "personal",
        "fact",
        key_mode="profile",
    ),
    _r(
        "zh_key_is",
        r"^(?:还有|而且|并且)?(?P<key>[^,;\s]{1,8}?)(?:" + _ZH_IS + r"|为|用的是)(?P<value>.+)$",
        "personal",
        "fact",
        key_mode="known",
    ),
    _r(
        "zh_value_is_my_key",
        r"^(?P<value>[^,;]{1,40}?)是我们?的(?P<key>[^,;]+)$",
        "personal",
        "fact",
        key_mode="profile",
    ),
    _r(
        "zh_i_use",
        _ZH_ME + _ZH_ADV + r"在?(?:使用的是|用的是|使用|用)(?:的是|着)?(?P<value>.+)$",
        "personal",
        "preference",
        cats=OS_EDITOR,
        widen=True,
    ),
    _r(
        "zh_i_am_on",
        _ZH_ME + r"(?:现在|目前|平时|一般|主要|通常|都)*在(?P<value>[^,;上]+)上",
        "personal",
        "preference",
        cats=frozenset({"os"}),
    ),
    _r(
        "zh_live_in",
        _ZH_ME + _ZH_ADV + r"(?:住在|居住在|生活在|定居在|常住)(?P<value>[^,;]{1,12}?)(?:了|呢|啦)?$",
        "personal",
        "fact",
        key="city",
    ),
    _r(
        "zh_work_at",
        _ZH_ME + _ZH_ADV + r"在(?P<value>[^,;在]{2,12}?)(?:工作|上班)(?:了|呢|啦)?$",
        "personal",
        "fact",
        key="company",
    ),
    _r(
        "zh_employed_at",
        _ZH_ME + _ZH_ADV + r"(?:就职于|任职于|供职于)(?P<value>[^,;]{2,12}?)(?:了|呢|啦)?$",
        "personal",
        "fact",
        key="company",
    ),
    _r(
        "zh_bare_use",
        r"^(?:现在|目前)?(?:用的是|在用|使用的是)(?P<value>.+)$",
        "personal",
        "preference",
        cats=OS_EDITOR,
    ),
    _r(
        "zh_prefer",
        _ZH_ME + r"(?:更|比较|最)?(?:喜欢|偏好|习惯|倾向于)(?:用|使用)?(?P<value>.+)$",
        "personal",
        "preference",
    ),
    _r(
        "zh_no_longer",
        r"(?:我们?)?(?:已经|现在)?(?:不再|再也不)(?:使用|用)(?P<value>.+?)了?$",
        "personal",
        "negation",
        action="delete_value",
    ),
    _r(
        "zh_dont_use_le",
        _ZH_ME + r"(?:已经|现在)?不(?:用|使用)(?P<value>.+?)了$",
        "personal",
        "negation",
        action="delete_value",
    ),
    _r("zh_abandon", r"(?:弃用|停用|放弃使用|放弃)(?P<value>.+?)了?$", "personal", "negation", action="delete_value"),
    _r(
        "zh_forget_my",
        r"(?:忘掉|忘记|忘了|删除|删掉|清除|去掉|移除)(?:我们?的)(?P<key>[^,;]+)$",
        "personal",
        "forget",
        action="delete_key",
        key_mode="any",
    ),
    # --- Chinese: changes
    _r(
        "zh_ba_change",
        r"把(?P<det>我们?的|我们)?(?P<key>[^,;]{1,12}?)都?(?:从(?P<old>[^,;]+?))?" + _ZH_CHANGE + r"(?P<value>.+)$",
        "change",
        "change",
        key_mode="known",
    ),
    _r(
        "zh_key_change",
        r"^(?:以后|今后|现在)?(?P<det>我们?的)?(?P<key>[^,;]{1,8}?)" + _ZH_CHANGE + r"(?P<value>.+)$",
        "change",
        "change",
        key_mode="known",
    ),
    _r(
        "zh_use_as",
        r"(?:用|使用|采用|改用)(?P<value>[^,;]+?)" + _ZH_AS + r"(?P<det>我们?的|团队的)?(?P<key>[^,;]+)$",
        "change",
        "change",
        key_mode="known",
    ),
    _r(
        "zh_from_now_on",
        r"(?:以后|今后|从现在开始|从现在起|从今天起)[,\s]*我?们?(?:都|就)?(?:用|使用|改用|换用)(?P<value>[^,;]+)$",
        "change",
        "change",
    ),
    _r(
        "zh_switch_to",
        _ZH_ME
        + r"(?:已经|现在)?(?:从(?P<old>[^,;]+?))?(?:改用|换用|切换到|迁移到|转到|换成了|改成了|换到|迁移|切换|换|转|改)(?:到|成|为)?(?P<value>.+)$",
        "change",
        "change",
    ),
    # --- Chinese: decisions
    _r(
        "zh_decided",
        r"(?:决定|敲定|定下来|一致同意)了?(?:采用|使用|用|选用|选择|改用|换用|上)(?P<value>[^,;]+?)(?:"
        + _ZH_AS
        + r"(?:我们的|团队的|项目的|我的)?(?P<key>[^,;]+))?$",
        "decision",
        "decision",
        key_mode="any",
    ),
]


# What each shape needs to match at all: an English word (of the lowercased clause) or a Chinese
# substring. A clause without it skips the shape, so that most shapes cost a set lookup instead of
# a regex search (tests/text/test_statements.py checks that the gates change no reading).
_GATES: Final = {
    "my_key_is": "my our",
    "value_is_my_key": "my our",
    "im_on": "i'm im am",
    "im_using": "i'm im am",
    "bare_on": "on",
    "i_use": "i",
    "i_code_in": "i",
    "i_prefer_for": "i i'd",
    "i_prefer": "i i'd",
    "i_live_in": "i i'm",
    "i_work_at": "i i'm",
    "no_longer": "longer",
    "dont_use_anymore": "anymore any",
    "stopped_using": "stopped quit given gave dropped ditched abandoned",
    "forget_my": "my our",
    "switch_key_to": "switch switched switching change changed changing set update updated updating move moved "
    "migrate migrated",
    "switch_to": "switch switched switching move moved moving migrate migrated migrating change changed",
    "use_as_my": "use using",
    "make_value_my": "make",
    "from_now_on": "now forward here",
    "decided": "decided agreed opted committed settled standardised standardized chose picked selected decision",
    "lets_go_with": "let's lets let we're we we'll",
    "lets_use_as": "let's lets let",
    "zh_my_key_is": "的",
    "zh_me_key_is": "我 咱",
    "zh_my_fav_is": "我",
    "zh_key_is": "是 为",
    "zh_value_is_my_key": "是我",
    "zh_i_use": "用",
    "zh_i_am_on": "在",
    "zh_live_in": "住 生活在 定居在",
    "zh_work_at": "工作 上班",
    "zh_employed_at": "职于",
    "zh_bare_use": "用",
    "zh_prefer": "喜欢 偏好 习惯 倾向",
    "zh_no_longer": "不再 再也不",
    "zh_dont_use_le": "不",
    "zh_abandon": "弃用 停用 放弃",
    "zh_forget_my": "忘 删 清除 去掉 移除",
    "zh_ba_change": "把",
    "zh_key_change": "改 换 切 设 定为 调 变成 迁 升级",
    "zh_use_as": "做 当 作为",
    "zh_from_now_on": "以后 今后 从现在 从今天",
    "zh_switch_to": "改 换 切换 迁移 转",
    "zh_decided": "决定 敲定 定下来 一致同意",
}
RULES: Final = [replace(rule, gate=frozenset(_GATES[rule.name].split())) for rule in _SHAPES]


# ------------------------------------------------------------------------------ notes

# Openers that carry no content for a note ("Remember: my key is X", "嗯，我的..."). The marker
# words among them still count for the router's importance (read from the whole text).
LEAD_IN: Final = re.compile(
    r"^(?:(?:please\s+)?(?:remember|note|important|importantly|fyi|btw|by\s+the\s+way|tip|update|"
    r"heads\s+up|reminder|p\.?s\.?|don't\s+forget|do\s+not\s+forget|never\s+forget|keep\s+in\s+mind|"
    r"for\s+the\s+record|hi|hello|hey|ok(?:ay)?|so|well|also|actually|anyway|oh)"
    r"(?:\s+that)?(?:\s*[:,!.-]\s*|\s+)"
    r"|(?:请)?(?:记住|记得|注意|重要|提醒|备注|顺便说一下|顺便|另外|对了|好的|嗯|哦)\s*[:,!]?\s*)",
    re.I,
)
# A name: "call me Ana", "I'm called Ana" (capitalised, so "call me later" is no name).
NAME_EN: Final = re.compile(
    r"^(?i:call\s+me|i'm\s+called|i\s+am\s+called|my\s+name's)\s+(?P<value>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)$"
)
NAME_ZH: Final = re.compile(r"^(?:我叫|叫我|我的名字叫)(?P<value>[^,;。\s]{1,20})$")
# "the X is Y", "this X is Y", "the team's X is Y": a fact when Y looks like a value (a URL, a
# name, a number) or the owner is named; "the build is green" describes.
THE_KEY_IS: Final = re.compile(
    r"^(?P<det>(?:the\s+)?(?:user|team|project|company)'s|the|this)\s+"
    r"(?P<key>[a-z][\w '&./-]{0,40}?)\s+"
    r"(?:is|are|=|is\s+now|will\s+be|has\s+(?:been\s+)?changed\s+to|(?:was\s+)?changed\s+to)\s+"
    r"(?P<value>.+)$",
    re.I,
)
# "key: value" / "key = value". A colon needs a space after it in English ("at 10:30" and URLs
# are no facts); a Chinese key may be glued ("用户偏好：深色模式").
COLON: Final = re.compile(r"^(?P<key>[^\s:=][^:=]{0,40}?)\s*(?P<sep>:|=)(?P<sp>\s*)(?P<value>\S.*)$")
# "X是Y" without an owner: a fact when Y looks like a value ("端口是 6379"), so that a definition
# ("PostgreSQL 是一个关系型数据库") is not one. 为 inside 作为/成为/认为/因为/华为/行为... is no
# copula; an adverb before 是 is no part of the key ("手机还是 iPhone 12": still).
ZH_KEY_IS: Final = re.compile(
    r"^(?P<key>[^,;:。是为\s][^,;:。是为]{0,11}?)\s*(?:还|也|都|一直|仍然|依然|依旧|现在|目前|已经)?(?:"
    + _ZH_IS
    + r"|(?<![作成认因称以视改更换设华行])为)\s*(?P<value>.+)$"
)

_TEAM: Final = re.compile(r"\b(?:we|we're|we've|we'll|our|us|let's|let\s+us|the\s+team)\b|我们|咱们|团队", re.I)
_SELF: Final = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|my|me|mine)\b|我", re.I)


def subject_of(clause: str) -> Literal["user", "team"] | None:
    """Whom a clause is about: the team when it says "we"/"our"/"我们", the speaker when it says
    "I"/"my"/"我", else nobody in particular ("The API base URL is ...")."""
    if _TEAM.search(clause):
        return "team"
    return "user" if _SELF.search(clause) else None
