"""What asks: a question or a request to the assistant, told from a statement, in English and
Chinese — and which questions ask for a piece of the asker's own life ("when's Linda's birthday
again?") rather than for a task or advice. Notes (:mod:`trimem.text.notes`) keep only what does
not ask; recall reads a request's kind here.

>>> is_request("What's a good name for a bun?"), is_request("I'm allergic to cats. Can you check the menu?")
(True, False)
>>> asks_for_fact("我驾驶证啥时候到期来着？"), asks_for_fact("帮我查查怎么报销")
(True, False)
"""

from __future__ import annotations

import functools
import re
from typing import Final

from trimem.text.script import WORD, has_han, prepare_text, without_spaces
from trimem.text.sentences import Sentence, is_polite, sentences

__all__ = ["EN_FIRST_PERSON", "MAX_ASK_CHARS", "asks", "asks_for_fact", "is_request", "opens_asking"]

MAX_ASK_CHARS: Final = 400
"""Longest text read for what it asks: a longer one (pasted prose, logs) is no request to read."""
EN_FIRST_PERSON: Final = re.compile(
    r"\b(?:i|i'm|i've|i'd|im|me|my|mine|myself|we|we're|we've|our|ours|us)\b|\bi’", re.I
)
"""The speaker of English text naming themselves or theirs."""

# A request or instruction to the assistant, by its first word.
_REQUEST_START: Final = frozenset(
    "can could would will please help tell show give write make pick find book plan schedule remind "
    "draft create suggest recommend summarize summarise explain translate check list let's lets send "
    "set add draw compare analyze analyse rephrase convert generate build fix review calculate "
    "estimate order look search describe outline prepare edit proofread rewrite reply answer "
    "update change switch use forget remove delete rename move run install try hey hi hello thanks "
    "thank ok okay".split()
)
# A question chat leaves the question mark off: "how much does a skid steer cost these days".
_EN_ASKING: Final = re.compile(
    r"(?:how|what|when|where|which|who|why)(?:'s|’s|\s+(?:is|are|was|were|do|does|did|can|could|should|would|will|"
    r"much|many|long|often|far|about))\b"
    # and one that opens on what it asks for: "any good courses i could show them", "is there a way to …"
    r"|any\s+(?:good|decent|cheap|tips|ideas?|recs?|recommendations?|suggestions?|advice)\b|anyone\s+know\b"
    r"|(?:is|are)\s+there\s+(?:a|an|any)\b"
    # typed without the apostrophe ("whats the difference"), whether something is so ("is it bad
    # to…"), and one thing against another ("who vs whom")
    r"|(?:whats|hows|wheres|whos)\b|is\s+it\s+(?:bad|ok|okay|safe|worth|normal|true|possible|better|fine|wise)\b"
    r"|\w+\s+(?:vs\.?|versus)\s+\w+",
    re.I,
)

# ("咋", colloquial "how", asks; "不咋样" is "not much good")
_ZH_QUESTION: Final = re.compile(
    r"怎么|如何|为什么|是不是|能不能|可不可以|(?<![不得])咋|吗$|呢$|多久|多远|多长时间|好久$|好久(?=是|能|才|可以)"
    # a question chat writes without its mark: "还能吃不", "可以用伐", "先炒青椒还是先炒肉"
    r"|(?<=[\u4e00-\u9fff])[不伐么啵](?:$|(?=[,，]))|(?:先|是)[^,，。]{0,8}还是"
    # the same asked as A-not-A, in Mandarin and Cantonese: "好不好", "去唔去", "系唔系"
    r"|([\u4e00-\u9fff])[不唔]\1(?!了)|系咪|有冇|点样|点解|真的假的|是真的吗|靠谱吗|对不对$"  # ("冷得不得了": very)
)
# Question words that a statement uses too ("什么都吃", "跟几个供应商说好了"): they ask only in a
# sentence not closed by a full stop, and not in their indefinite uses.
_ZH_QUESTION_WORD: Final = re.compile(
    r"什么|啥|哪|谁|几(?:次|遍|分钟|小时|桶|斤|岁|号|点|个|天|本|部|首|种)|多少|有没有|(?:干|念|吃|做|买|带|说|弄|整)嘛"
    # how long and how old: "电瓶一般几年换", "多大可以学游泳" (not "几年前", "多大的事")
    r"|(?<![了过好十])几(?:年|个月|周|星期)(?![前后来了])|多大(?![的点事])"
    # in dialect: "么子" (Hunan), "咩"/"乜"/"边度"/"边个"/"几时"/"几多"/"几耐" (Cantonese), "么样" (Wuhan)
    r"|么子|咩|乜|边度|边个|几时|几多|几耐|么样"
)
_ZH_NOT_ASKING: Final = re.compile(
    r"(?:什么|啥|谁|么子)[^,，。;；]{0,8}?(?:都|也|统统|全)|(?<=[跟和与给有了那这的])几[个位家]|(?<=[好十])几|几(?=[十百千万])"
    r"|(?<=[做干搞])啥[^,，。;；]{1,4}的"  # "做啥芯片的": some kind of chip work
)
_STATEMENT_END: Final = ("。", ".", "！", "!")
# ("她帮忙带孩子" tells who helps: "帮忙" asks only when the assistant is the one asked)
_ZH_REQUEST: Final = re.compile(
    # ("请客户吃饭我一般…" treats someone to a meal)
    r"^(?:请(?![^,，。]{1,8}?(?:吃饭|吃个饭|吃顿|喝酒|喝茶))|麻烦|帮|给我|你能|你可以|想让你|能否|把(?![^,，。]*了)|将|忘|删|"
    r"改(?!了)|换(?!了)|记住|记得)"
    # ("人回义乌帮我管仓库", "儿子帮我们买了套房": someone else helps; "把胆囊切了" tells what was done)
    r"|(?<![他她人妈爸公婆哥姐弟妹们子友事居乌])(?:帮我|帮俺|帮咱)(?![^,，。]*?了[一两几套个台件辆只条间])"
    r"|(?:请|你|您|能|可以)帮忙"
    # an errand opened by its verb ("讲个故事给我听听", "推荐几首歌") or told to be done for the asker
    r"|^(?:讲|说|写|推荐|介绍|解释|翻译|列|查|算|整理|总结|分析|教)(?:个|几|一下|一个|一份|一篇|下|讲|说|查|算|写|我(?!们)|"
    r"一?[首段封句部本])|求推荐|推荐(?:一下|几|个|一[个部本首款些]|部|本|首|款|些|点)"
    r"|给我(?:讲|说|听|看|写|发|推荐|列|找|整|来|介绍|解释|翻译|算|查)"
)

# A question for a piece of information ("when's Linda's birthday?", "what grade is Emma in?",
# "how many acres do we farm?"), not for advice ("what should I cook?", "how do I get there?").
_EN_FACT_QUESTION: Final = re.compile(
    r"(?:(?:and|so|also|but|oh|btw|ok|okay|hey|um|uh)\b[,\s]*)*"
    r"(?:(?:what|which|who|whose|where|when)(?:'s|’s|(?:\s+[a-z]+)?\s+(?:is|are|am|was|were|do|does|did)\b)"
    r"|how\s+(?:much|many|long|old)\b)",
    re.I,
)

# Advice asked, not a fact: "when's a good time to call?", "几点出门比较稳？"
_EN_ADVICE: Final = re.compile(r"\b(?:should|best|good\s+time|a\s+good|ideal|recommend|suggest)\b", re.I)
_ZH_ADVICE: Final = re.compile(r"比较|最好|合适|好呢|怎么|如何|应该|该|推荐|建议|划算")
# Recalling what was told: "again", "来着" (the asker's own life is EN_FIRST_PERSON's, or 我/俺/咱).
_EN_AGAIN: Final = re.compile(r"\bagain\b", re.I)
_ZH_OWN: Final = re.compile(r"我|俺|咱|来着")
_ZH_FACT_QUESTION: Final = re.compile(
    r"来着|什么|(?:是|叫|在|用)(?:啥|谁)|啥时候|哪[天年家个里儿位所款]|几[号点岁级年]|多少"
)

# What follows a request's first word when it is a noun heading news: "Change of plans:",
# "Update on the house —", "Quick update:".
_EN_HEADLINE: Final = re.compile(r"\s*(?:[:—–!]|-\s|of\s|on\s+(?:the|my|our)\b[^,.:]*[:—–])")


def asks(s: Sentence) -> bool:
    """Whether sentence `s` asks something of the assistant: a question or a request."""
    body = s.body.strip()
    if s.question:
        return True
    if has_han(body):  # "请" is as often "treat" as "please": the shapes of a request decide
        core = without_spaces(body)
        if _ZH_REQUEST.search(core) is not None:
            return True
        if _ZH_QUESTION.search(core) is not None:
            return True
        return (
            not s.text.endswith(_STATEMENT_END) and _ZH_QUESTION_WORD.search(_ZH_NOT_ASKING.sub("", core)) is not None
        )
    return is_polite(body) or opens_asking(body)


def opens_asking(text: str) -> bool:
    """Whether English `text` asks by its opening: a request's first word or a question's."""
    first = WORD.search(text)
    if first is not None and _EN_HEADLINE.match(text, first.end()) is not None:
        return False  # "Change of plans: …", "Update — …" head news; no verb asks
    return (first is not None and first.group().casefold() in _REQUEST_START) or _EN_ASKING.match(text) is not None


def is_request(text: str) -> bool:
    """Whether every sentence of `text` asks something of the assistant — a question or a request
    ("Can you suggest names for a sword?", "帮我写个生日祝福") — so that it tells what the user
    asked, not what holds of them.

    >>> is_request("What's a good name for a bun?"), is_request("帮我查查无人机要不要报备")
    (True, True)
    >>> is_request("I'm allergic to cats. Can you check the menu?"), is_request("我每天坐地铁")
    (False, False)
    """
    if not isinstance(text, str) or len(text) > MAX_ASK_CHARS:
        return False
    text = prepare_text(text)
    if not has_han(text) and "?" not in text and not is_polite(text):
        # recall asks this of every hit: English that could ask only by its first word is read
        # without splitting it into sentences
        if not opens_asking(text):
            return False
    said = list(sentences(text))
    return bool(said) and all(asks(s) for s in said)


@functools.lru_cache(maxsize=1024)  # asked by each search of one recall of the same request
def asks_for_fact(text: str, *, own_life: bool = True) -> bool:
    """Whether `text` asks for a piece of information of the asker's own life — a date, a name, a
    number, which one — as a question recalling what they told does ("when's Linda's birthday
    again?", "我驾驶证啥时候到期来着？"), not for a task or advice ("what should I cook tonight?",
    "帮我查查怎么报销"), nor about others' lives ("When did Melanie paint a sunrise?"). A memory
    that shares only the subject of such a question does not answer it. With ``own_life=False``
    any question for a piece of information counts ("How old is Gareth?").

    >>> asks_for_fact("when's Linda's birthday again?"), asks_for_fact("我四级考了多少分来着？")
    (True, True)
    >>> asks_for_fact("What should I cook for the two of us?"), asks_for_fact("帮我写个复习计划")
    (False, False)
    >>> asks_for_fact("How old is Gareth?"), asks_for_fact("How old is Gareth?", own_life=False)
    (False, True)
    """
    if not isinstance(text, str) or len(text) > MAX_ASK_CHARS:
        return False
    text = prepare_text(text)
    for s in sentences(text):
        body = s.body.strip()
        if has_han(body):
            core = without_spaces(body)
            asks = _ZH_REQUEST.search(core) is None and _ZH_FACT_QUESTION.search(_ZH_NOT_ASKING.sub("", core))
            if asks and (not own_life or _ZH_OWN.search(core)) and not _ZH_ADVICE.search(core):
                return True
        elif (
            _EN_FACT_QUESTION.match(body)
            and (not own_life or EN_FIRST_PERSON.search(body) or _EN_AGAIN.search(body))
            and not _EN_ADVICE.search(body)
        ):
            return True
    return False
