"""Cues: the words and shapes that say what kind of item a text is — filler, a greeting, a
question, a request, something going on right now, a time, a past event, tool output, a decision,
a preference, a marker of importance, an incident. The router reads items through them.

Each :class:`Cue` carries cheap gates (cue words, a digit, Chinese text) so that most cues cost one
set lookup: Python's regex engine tries a long alternation at every position of a text.

>>> x = read_item("昨天我把服务部署到了生产环境")
>>> PAST.search(x).group("verb"), TIME.search(x).group()
('了', '昨天')
>>> is_question(read_item("Is my editor Vim?")), FILLER.fullmatch("ok thanks") is not None
(True, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from trimem.text.script import HAN_CHAR, Language, has_han, prepare_text

__all__ = [
    "CREDENTIAL",
    "DECISION",
    "EDGE",
    "FILLER",
    "GREETING",
    "INCIDENT",
    "MARKERS",
    "MAX_SCAN_CHARS",
    "PAST",
    "PERSON_WORDS",
    "PREFERENCE",
    "PURPOSE_WORDS",
    "QUESTION_START",
    "REQUEST",
    "TIME",
    "TOOL_OUTPUT",
    "WORKING",
    "WORKING_START",
    "ZH_PERSON",
    "Cue",
    "Item",
    "cue_words",
    "han_count",
    "is_question",
    "read_item",
    "working",
]

MAX_SCAN_CHARS: Final = 2000
"""Cues read at most this many characters: a long paste is classified by its head."""
EDGE: Final = " \t\"'`.,;:!?~…。、()[]{}<>「」《》"
"""Characters trimmed from the edges of an item or a phrase."""

_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?")
_DIGIT: Final = re.compile(r"\d")


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs more than the rules it feeds
class Item:
    """One item, prepared once for all the cues (:func:`read_item`)."""

    t: str  # NFKC, spaces collapsed, original case (values are taken from here)
    low: str  # lowercase: every classification pattern is written lowercase (re.I is slow)
    zh: bool  # has Han characters: the Chinese patterns apply
    words: frozenset[str]  # English words, for the cue gates of :class:`Cue`
    digits: bool
    injection: bool | None = None  # the injection guard's answer, asked at most once per item

    @property
    def language(self) -> Language:
        """``"zh"`` when the item holds Han characters, else ``"en"``."""
        return "zh" if self.zh else "en"


def read_item(raw: str, limit: int = MAX_SCAN_CHARS) -> Item:
    """`raw` prepared for the cues: its first `limit` characters in normal form
    (:func:`~trimem.text.script.prepare_text`), spaces folded."""
    t = " ".join(prepare_text(raw[:limit]).split())
    low = t.lower()
    return Item(t, low, has_han(t), frozenset(_WORD.findall(low)), _DIGIT.search(t) is not None)


@dataclass(frozen=True, slots=True)
class Cue:
    """One rule's patterns with cheap gates: the English pattern runs only when the text holds one
    of its cue words, ``num`` only when it has a digit, the Chinese ones only on Chinese text.
    Why: Python's regex engine tries a long alternation at every position of the text, while a
    set lookup over the words skips the rules that cannot match, so most rules cost one lookup."""

    en: re.Pattern[str] | None
    cues: frozenset[str] = frozenset()  # empty: always try ``en``
    zh: re.Pattern[str] | None = None
    num: re.Pattern[str] | None = None  # tried only when the text has a digit
    zh_if: tuple[str, re.Pattern[str]] | None = None  # (a character it needs, a Chinese pattern)

    def search(self, x: Item) -> re.Match[str] | None:
        m = None
        if self.en is not None and (not self.cues or not self.cues.isdisjoint(x.words)):
            m = self.en.search(x.low)
        if m is None and self.num is not None and x.digits:
            m = self.num.search(x.low)
        if m is None and self.zh is not None and x.zh:
            m = self.zh.search(x.low)
        if m is None and self.zh_if is not None and x.zh and self.zh_if[0] in x.low:
            m = self.zh_if[1].search(x.low)
        return m

    def anywhere(self, phrase: str) -> bool:
        """Every pattern, no gates: for a short phrase such as a key."""
        low = phrase.lower()
        pats = (self.en, self.num, self.zh, self.zh_if[1] if self.zh_if else None)
        return any(p is not None and p.search(low) is not None for p in pats)


def cue_words(words: str) -> frozenset[str]:
    """A cue's gate words, space-separated."""
    return frozenset(words.split())


def _alternatives(*alts: str) -> str:
    return "|".join(alts)


# ============================================================================ rules: working

# Whole-message acknowledgements, greetings and filler: nothing to keep beyond this turn.
_FILLER_WORDS: Final = _alternatives(
    r"ok(?:ay)?",
    "k+",
    "sure",
    "yes",
    "yeah",
    "yep",
    "yup",
    "no",
    "nope",
    "nah",
    "thanks",
    "thank you(?: so much| very much)?",
    "thx",
    "ty",
    "got it",
    "gotcha",
    "cool",
    "great",
    "nice",
    "awesome",
    "perfect",
    "alright",
    "all right",
    "right",
    "fine",
    "h+m+",
    "u+h+",
    "u+m+",
    "a+h+",
    "o+h+",
    "lol",
    "(?:ha)+h?",
    "hi",
    "hello",
    "hey",
    "hi there",
    "hello there",
    "hey there",
    "bye",
    "goodbye",
    "see you",
    "good (?:morning|afternoon|evening|night)",
    "sounds good",
    "makes sense",
    "i see",
    "understood",
    "noted",
    "will do",
    "no problem",
    "np",
    "you're welcome",
    "wow",
    "oops",
    "sorry",
    "please",
    "go ahead",
    "go on",
    "continue",
    # Chinese
    "好",
    "好的",
    "好吧",
    "好滴",
    "行",
    "行吧",
    "可以",
    "嗯+",
    "哦+",
    "噢",
    "喔",
    "啊",
    "哈+",
    "呵呵",
    "收到",
    "明白了?",
    "知道了",
    "懂了",
    "了解",
    "谢谢你?",
    "多谢",
    "谢啦",
    "感谢",
    "你好",
    "您好",
    "嗨",
    "哈喽",
    "早",
    "早上好",
    "晚安",
    "再见",
    "拜拜",
    "没问题",
    "对的?",
    "是的?",
    "没事",
    "不客气",
    "继续",
)
FILLER: Final = re.compile(rf"(?:{_FILLER_WORDS})(?:[\s,.!~]*(?:{_FILLER_WORDS}))*")

# A greeting or thanks opening a short message is small talk even with a word or two more.
GREETING: Final = re.compile(
    r"(?:hi|hello|hey|thanks|thank you|good (?:morning|afternoon|evening|night))\b|你好|您好|谢谢|早上好|晚安"
)

# A question asks rather than states: a "?" (？ after NFKC) or a Chinese particle at the end is
# checked directly; this pattern reads the start (a wh-word, "can you", "is the ...").
QUESTION_START: Final = re.compile(
    r"(?:what|which|who|whom|whose|where|why)\b|how\b(?!\s+to\b)|(?:can|could|would|will)\s+you\b"
    r"|(?:do|does|did|is|are)\s+(?:you|i|we|it|this|that|there|the|my|our)\b|为什么|为啥"
)

# Said at the start, these put the message in the moment ("wait", "let me check").
WORKING_START: Final = re.compile(
    r"(?:wait|hold\s+on|hang\s+on|one\s+(?:sec|second|moment|minute)|just\s+a\s+(?:sec|second|moment|minute)"
    r"|give\s+me\s+a\s+(?:sec|second|moment|minute)|brb|let\s+me|lemme|let's\s+see|thinking|todo|to\s+do)\b"
)
# Something going on right now, anywhere in the message.
WORKING: Final = (
    # progressive first person; not "going to" (a plan, dated → episodic) nor "going with" (a decision)
    Cue(
        re.compile(
            r"\b(?:i'm|i\s+am|we're|we\s+are)\s+(?:(?:currently|now|still|just|actually|already)\s+)*"
            r"(?!going\s+(?:to|with)\b)[a-z]{2,}ing\b"
        ),
        cue_words("i'm am we're are"),
        # Chinese: in progress, "wait a moment", "let me think", "have a look", "right away"
        re.compile(
            r"正在|稍等|稍后|等一下|等一等|等等|等会|让我(?:想|看|查|试)|我(?:想想|看看|查查|试试)"
            r"|(?:看|查|试|想|找|等|重启|跑)一下|马上|一会儿|目前在|现在在|先这样|待办"
            r"|在(?:看|查|调试|跑|写|改|想|弄|处理|测试|排查|部署|运行|等)"
        ),
    ),
    Cue(
        re.compile(
            r"\b(?:currently|right\s+now|at\s+the\s+moment|for\s+the\s+moment|atm|in\s+a\s+(?:sec|second|minute|moment))\b"
        ),
        cue_words("currently now moment atm sec second minute"),
    ),
    # a status that will change: "the server is down", "CI is red again", "页面卡住了"
    Cue(
        re.compile(
            r"\b(?:is|are|'s|'re)\s+(?:(?:still|now|currently|again|kind\s+of)\s+)?(?:down|broken|failing|"
            r"slow|stuck|offline|hanging|unreachable|flaky|red|loading|building)\b"
        ),
        cue_words("down broken failing slow stuck offline hanging unreachable flaky red loading building"),
        re.compile(r"挂了|卡住|卡了|很慢|不通"),
    ),
)

# A short request to the agent ("Restart the server", "请帮我看看"); a longer imperative with a
# purpose ("Run make clean to reset the cache") is a how-to and stays knowledge.
REQUEST: Final = re.compile(
    r"(?:please|pls|kindly|run|restart|check|show|open|close|fix|try|stop|start|give|tell|explain|write|"
    r"make|help|look|find|search|list|print|send|create|add|remove|delete|summari[sz]e)\b|请|帮我|麻烦|给我|帮忙"
)
PURPOSE_WORDS: Final = cue_words("to so before after when if whenever unless")

# ============================================================================ rules: episodic

_WEEKDAYS: Final = "monday tuesday wednesday thursday friday saturday sunday"
# Relative time and dates (a bare year is not: "Python was first released in 1991" is knowledge).
TIME: Final = Cue(
    re.compile(
        r"\b(?:yesterday|today|tonight|tomorrow|last\s+night|just\s+now"
        r"|this\s+(?:morning|afternoon|evening|week|month|year)"
        rf"|(?:last|next)\s+(?:week|month|year|time|weekend|{_WEEKDAYS.replace(' ', '|')})"
        r"|earlier\s+(?:today|this\s+week)"
        r"|(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|few|several)\s+"
        r"(?:minutes?|hours?|days?|weeks?|months?|years?)\s+ago"
        rf"|(?:on|this)\s+(?:{_WEEKDAYS.replace(' ', '|')}))\b"
    ),
    cue_words(
        f"yesterday today tonight tomorrow night now morning afternoon evening week weekend month year time ago "
        f"{_WEEKDAYS}"
    ),
    re.compile(
        r"昨天|前天|今天|今早|今晚|昨晚|明天|后天|刚才|刚刚|早上|上午|中午|下午|晚上|上周|上星期|上个?月"
        r"|本周|这周|下周|去年|前几天|最近|周[一二三四五六日天]|星期[一二三四五六日天]"
    ),
    # "三天前", "两个月以前": a numeral run is tried at every position, so only when 前 occurs
    # (the look-behind starts a numeral run only once, so a long run is not rescanned from each digit)
    zh_if=(
        "前",
        re.compile(
            r"(?<![一二两三四五六七八九十几])[一二两三四五六七八九十几]+\s*(?:分钟|小时|天|周|个?星期|个?月|年)(?:前|以前|之前)"
        ),
    ),
    # "3 days ago", "at 10:30", "10am", "2026-10-01", "3天前", "12月1日"
    num=re.compile(
        r"\b(?:\d+\s+(?:minutes?|hours?|days?|weeks?|months?|years?)\s+ago"
        r"|(?:at\s+)?\d{1,2}(?::\d{2})?\s*(?:am|pm)|at\s+\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2})\b"
        r"|(?<!\d)\d+\s*(?:分钟|小时|天|周|个?星期|个?月|年)(?:前|以前|之前)|(?<!\d)\d{1,2}月\d{1,2}[日号]"
    ),
)

# Irregular past forms that cannot be read as present ("read", "put", "set" can, so they are out).
_IRREGULAR_PAST: Final = _alternatives(
    "went",
    "ran",
    "made",
    "wrote",
    "built",
    "rebuilt",
    "rewrote",
    "found",
    "got",
    "saw",
    "met",
    "took",
    "gave",
    "sent",
    "did",
    "had",
    "broke",
    "began",
    "bought",
    "brought",
    "caught",
    "chose",
    "came",
    "drove",
    "ate",
    "fell",
    "felt",
    "forgot",
    "left",
    "lost",
    "paid",
    "said",
    "sold",
    "spent",
    "spoke",
    "told",
    "thought",
    "threw",
    "won",
    "was",
    "were",
    "kept",
    "knew",
    "led",
    "heard",
    "held",
    "spun",
    "flew",
    "froze",
    "grew",
    "hid",
    "meant",
    "rode",
    "sat",
    "shot",
    "slept",
    "stood",
    "stole",
    "taught",
    "tore",
    "understood",
    "woke",
    "wore",
    "undid",
    "overrode",
    "withdrew",
    "dug",
)
PAST: Final = Cue(
    # "I/we" (or "I've", "we had") then adverbs then a past form; a regular one ends in "-ed" but
    # not "-eed" ("need", "feed" are present tense)
    re.compile(
        r"\b(?:i|we)(?:'ve|'d|\s+have|\s+had)?\s+"
        r"(?:(?:just|finally|already|then|also|accidentally|successfully|quickly|recently|actually|all|"
        r"both|first|eventually|manually|never)\s+)*"
        rf"(?P<verb>[a-z]{{2,}}(?<!e)ed|{_IRREGULAR_PAST})\b"
    ),
    cue_words("i we i've we've i'd we'd"),
    # first person (or 把, "took X and ...") with a completed-action particle; 了解 is "understand"
    re.compile(r"(?:我们|咱们|我|把)[^,;。!?]{0,24}?(?P<verb>了(?!解)|过(?![来去]))"),
)

# ============================================================================ rules: tool output

TOOL_OUTPUT: Final = re.compile(
    r"(?:traceback\s+\(most\s+recent\s+call\s+last\)|[a-z]*(?:error|exception)\b\s*:|warning\s*:|"
    r"exit\s+(?:code|status)\b|tool\s+(?:result|output)\b|stdout\s*:|stderr\s*:|\$\s|>>>\s|http/\d|"
    r"[{\[]\s*\"|(?:passed|failed|ok)\s*[:\[(])"
)

# Credential-like or contact facts: costly to lose, so kept high.
CREDENTIAL: Final = re.compile(
    r"password|passwd|passphrase|api[_ ]?key|token|secret|private[_ ]?key|ssh|credential|e-?mail|"
    r"phone|address|account|密码|密钥|口令|令牌|邮箱|手机|电话|地址|账号|帐号"
)

# Decisions: lasting, and worth keeping whatever their tense.
DECISION: Final = Cue(
    re.compile(
        r"\b(?:decided|decision|agreed|settled\s+on|opted\s+(?:for|to)|standardi[sz]ed\s+on"
        r"|(?:we|i)(?:'re|\s+are|'m|\s+am)\s+going\s+with|let(?:'s|\s+us)\s+(?:go|stick)\s+with"
        r"|(?:the\s+team|we)\s+(?:chose|picked|selected))\b"
    ),
    cue_words("decided decision agreed settled opted standardised standardized going let's let chose picked selected"),
    re.compile(r"决定|敲定|定下来|一致同意|达成一致|拍板"),
)


# Lasting preferences, habits and traits of the speaker ("I prefer", "I'm on macOS", "我习惯").
PREFERENCE: Final = Cue(
    re.compile(
        r"\bi\s+(?:(?:really|much|generally|usually|always|mostly|mainly|never|still|also|often|normally|"
        r"typically|only)\s+)*(?:prefer|like|love|hate|dislike|enjoy|favou?r|use|run|avoid|code\s+in|"
        r"program\s+in|write|live\s+in|work\s+(?:at|for|with|in|on))\b"
        r"|\bi(?:'m|\s+am)\s+(?:(?:mostly|mainly|usually|always|generally)\s+)?(?:on\s+(?!it\b)|based\s+in|from\s)"
        r"|\bi(?:'m|\s+am)\s+(?:mostly|mainly|usually|always|generally)\s+using\b"
        r"|\bmy\s+favou?rite\b|\bwe\s+(?:always|usually|never|only)\s+\w+"
        r"|\bi(?:'m|\s+am)\s+an?\s+(?:[\w-]+\s+){0,2}(?:engineer|developer|programmer|student|designer|"
        r"manager|teacher|doctor|researcher|scientist|architect|founder|analyst)\b"
    ),
    cue_words("i i'm my we am"),
    re.compile(
        r"(?:我们|我)是\S{0,10}(?:工程师|开发者?|程序员|学生|设计师|经理|老师|医生|研究员|架构师|产品)"
        r"|(?:我们|我)(?:一般|通常|总是|平时|一直|更|比较|最|也|都|主要|经常|只)*"
        r"(?:喜欢|偏好|习惯|爱|讨厌|倾向于|常用|用|使用|住在|在\S{1,8}工作)"
    ),
)

# Speaker or listener named: without them (and without time) a statement is general knowledge.
PERSON_WORDS: Final = cue_words(
    "i i'm i've i'd i'll me my mine we we're we've we'll we'd us our you you're your yours let's"
)
ZH_PERSON: Final = re.compile(r"[我你您咱]")

# ============================================================================ rules: importance

MARKERS: Final = Cue(
    re.compile(
        r"\b(?:important|importantly|remember|don't\s+forget|do\s+not\s+forget|always|never|must|"
        r"critical|crucial|essential|make\s+sure|be\s+sure|keep\s+in\s+mind)\b"
    ),
    cue_words("important importantly remember forget always never must critical crucial essential sure mind"),
    re.compile(r"记住|记得|重要|一定|务必|千万|别忘|不要忘|永远|总是|必须|关键|切记"),
)
INCIDENT: Final = Cue(
    re.compile(
        r"\b(?:error|errors|failed|failure|fails|outage|incident|bug|crash(?:ed)?|broke|broken|rollback|"
        r"rolled\s+back|data\s+loss|leak(?:ed)?)\b"
    ),
    cue_words(
        "error errors failed failure fails outage incident bug crash crashed broke broken rollback rolled loss leak leaked"
    ),
    re.compile(r"报错|失败|故障|宕机|崩溃|回滚|事故|泄露"),
)
# Only text with one of these words can read as an instruction to the model; the rest skips


def working(x: Item) -> re.Match[str] | None:
    """The first sign that something is going on right now ("I'm currently ...", "正在", "卡住")."""
    for cue in WORKING:
        if (m := cue.search(x)) is not None:
            return m
    return None


def is_question(x: Item) -> bool:
    """The item asks rather than states: a "?" or a Chinese question particle at the end, or a
    question word at the start."""
    end = x.low.rstrip(" .!~。")
    return end.endswith("?") or (x.zh and end.endswith(("吗", "呢", "么"))) or bool(QUESTION_START.match(end))


def han_count(text: str) -> int:
    """How many Han characters `text` holds."""
    return len(HAN_CHAR.findall(text))
