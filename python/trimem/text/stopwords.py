"""Stopword lists, each for one job: the words a query search drops, the Chinese filler cut out
of a query's character runs (and the words that merely contain a filler character), the words that
end a short noun phrase, the capitalised words that are no names, the Chinese function
characters that end a phrase; the words and characters that name no subject of a note.

>>> "the" in QUERY_STOPWORDS, "docker" in QUERY_STOPWORDS, "帮我" in ZH_QUERY_FILLER, "使用" in ZH_QUERY_KEEP
(True, False, True, True)
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CAPITALISED_STOPWORDS",
    "NOT_SUBJECT",
    "NOT_SUBJECT_HAN",
    "NOT_SUBJECT_WORDS",
    "PHRASE_STOPWORDS",
    "QUERY_STOPWORDS",
    "ZH_PHRASE_BREAKS",
    "ZH_QUERY_FILLER",
    "ZH_QUERY_KEEP",
]

# Function words, instruction verbs and vague nouns: what a keyword query of a request leaves out
# (not "till": a shop's till is a thing people talk about).
QUERY_STOPWORDS: Final = frozenset(
    """
    a an the this that these those some any each every all both either neither no none one ones
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his she
    her hers it its itself they them their theirs themselves
    am is are was were be been being do does did doing done have has had having will would shall
    should can could may might must ought s t d ll m re ve don doesn didn isn aren wasn weren hasn
    haven hadn won wouldn shouldn couldn mustn needn
    what which who whom whose when where why how whether
    about above across after against along among around as at before behind below beneath beside
    between beyond by during for from in inside into near of off on onto out over since through to
    toward towards under until up upon via with within without
    and or but nor so yet if then than because while though although also just only too very
    really actually again ever still even much more most other such same own there here now
    please pls plz kindly thanks thank hi hello hey ok okay
    help tell show give write make create generate produce draft let know remind recall remember
    find look search get need want like say said mention mentioned talk talked discuss discussed
    ask asked use used using
    ago recently lately earlier previously
    something anything thing things stuff usual usually normal normally typical typically regular
    """.split()
)
# Chinese filler, cut out of a query's CJK runs by forward maximum matching.
ZH_QUERY_FILLER: Final = frozenset(
    """
    帮我们写 帮我写 给我写 替我写 请写 写一个 写个 写一段 写一份 请帮我 帮我们 帮我 帮忙 麻烦你 麻烦
    请问 请 劳驾 你好 谢谢 一下 给我 告诉我 我想知道 想知道 我想 我要 查 查查 看看 看一下 记得 还记得
    记不记得 提到 提到过 提过 说过 聊过 用过
    我们的 我的 你的 我们 你们 我 你 能不能 可不可以 可以 能否 能 是不是 是否 有没有
    吗 呢 吧 啊 呀 哦 嘛 什么 啥 哪个 哪些 哪一个 哪里 哪儿 哪 怎么样 怎么 怎样 如何 为什么 为何 多少
    用的是 用的 的是 就是 还是 但是 可是 是 的 了 和 与 及 或 或者 以及 把 被 在 里 里面 按 按照
    一个 一份 一段 这个 那个 这些 那些 平常 平时 通常 一般
    现在 之前 以前 当时 那时 时候 上次 那次 这次
    俺们 俺 咱们 咱 额 自个儿 自个 咋个 咋办 咋弄 咋搞 咋整 咋 么子 啥子 咩 乜 嘅 咗 喺 啲 来着 咯 嘞
    """.split()
)
# Common words that contain a filler character (正在, 请求, 了解 …): kept whole.
ZH_QUERY_KEEP: Final = frozenset(
    """
    正在 存在 在线 所在 实在 在于 请求 申请 邀请 了解 除了 目的 的确 总是 只是 于是 凡是 自我
    公里 里程 按钮 按键 和平 总和 参与 涉及 普及 及时 把握 使用 调用 采用 应用 费用 常用 作用 引用
    通用 可用 有用 实用 专用 信用 性能 功能 能力 可能 智能 能源 技能 检查 查询 调查 审查 排查
    金额 余额 额度 名额 额外 超额 限额 定额 份额 额头
    """.split()
)

# Words that end (or cannot start) a short English noun-phrase object ("uses Redis for caching").
PHRASE_STOPWORDS: Final = frozenset(
    "for as in on at with to from by of over than and or but nor so because since when while if then "
    "now too also very really just it its them this that these those which who whom what there here "
    "me you him her us they we i he she not no more most much many some any every each all both "
    "either neither one ones thing things stuff way lot lots bit today tomorrow yesterday always "
    "never often daily instead anymore again well better best is are was were be been being have "
    "has had do does did will would can could should may might must get got make made into onto "
    "about after before during until via per port ports years months weeks days hours minutes".split()
)
# Capitalised words that start sentences or are function words: never a name on their own.
CAPITALISED_STOPWORDS: Final = frozenset(
    w.casefold()
    for w in "I A An The This That These Those It Its We Our Ours You Your He She They Their His Her "
    "My Me Us Them Let Lets Please Thanks Thank Hi Hello Hey Dear Yes No Not OK Okay So But And Or "
    "Nor If When While Then Also Just Now Today Yesterday Tomorrow Tonight Here There What Why How "
    "Where Who Which Whose Can Could Would Should Will Shall May Might Must Do Does Did Is Are Was "
    "Were Be Been Has Have Had After Before Since Because Maybe Sure Great Good Nice Note Update "
    "FYI BTW TODO FIXME NB PS Re Monday Tuesday Wednesday Thursday Friday Saturday Sunday January "
    "February March April June July August September October November December Mr Mrs Ms Dr".split()
)

# Chinese runs (a subject or object with no delimiter) end at these function characters.
ZH_PHRASE_BREAKS: Final = frozenset("的了和与跟及或、来做当吧呢啊吗也都还就很上里中时这那但而并等在把被给对向从为")


NOT_SUBJECT_WORDS: Final = (
    "now anymore longer these days nowadays instead since new moved changed switched started stopped "
    "quit resigned retired handed notice "
    "every each always usually never most weekdays weekends mornings evenings nights today week month "
    "year time day days work "
    "monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays saturday saturdays "
    "sunday sundays "
    # (Chinese: the days, seasons and times of day, as the character pairs the index reads them in)
    "礼拜天 礼拜一 礼拜二 礼拜三 礼拜四 礼拜五 礼拜六 礼拜日 星期天 星期一 星期二 星期三 星期四 星期五 星期六 星期日 "
    "周一 周二 周三 周四 周五 周六 周日 周末 早上 早晨 上午 中午 下午 晚上 傍晚 半夜 夜里 每天 天天 每周 每月 每年 "
    "今年 去年 明年 平时 冬天 夏天 春天 秋天 时间 时候 以前 以后 之前 之后 "
    # (and the everyday words every chat is made of: "时间自己排" is not about "宵夜时间能见面")
    "自己 起来 东西 事情 感觉 觉得 知道 可以 需要 因为 所以 但是 已经 一直 一起 终于 一下 一点 "
    # everyday verbs and adverbs: "has got worse" is not about "I've got Meniere's"
    "get gets got getting gotten gone went going finally actually really still "
    # units and everyday adjectives: "25 km a week" is not about "260,000 km on the car", nor a
    # "little cottage" about "Little Tern Coffee"
    "km kms mile miles kg kgs lb lbs hour hours hr hrs minute minutes min mins percent "
    "little big small old good great nice bad lot lots bit far "
    # everyday people and ways: "off a guy in Taber" is not about "I'm an Oilers guy"
    "guy guys bloke folks people someone anyone everyone way ways kind sort"
)
"""Words of time and change, units and everyday adjectives: they say when, how much or what
like, not what, so two notes sharing only these are not about one subject."""


NOT_SUBJECT_HAN: Final = frozenset(
    "我你您他她它们咱俺的地得了着过是在有和与及就都也还很太又把被让给从到向对不没别那这哪个些每吗呢吧啊呀哦嘛啦咯呗喽哟"
)
"""Chinese characters of grammar (pronouns, particles, negation, measure): a character pair with
one of them ("我每", "不去", "那个") names no subject."""

NOT_SUBJECT: Final = QUERY_STOPWORDS | frozenset(NOT_SUBJECT_WORDS.split())
"""English words that name no subject: stopwords and the words of time and change."""
