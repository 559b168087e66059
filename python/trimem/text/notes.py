"""Profile notes: what a user says about their own life that no fact key names — "Most days I
commute by bike", "I'm colour-blind", "周末都留给孩子" — kept whole, as the user said it.

A note is a statement of a lasting state, habit, constraint or change; not a question, a request
to the assistant, a hypothetical, a one-off event told in the past tense ("Had a great call with
the team"), something about one moment ("Sandstorm today"), or small talk with the assistant
("多谢你啊"). What a question or request tells of the user in passing is kept without the request
("what should I cook tonight, I'm vegetarian" keeps "I'm vegetarian"). A note that states a change ("I
drive in now", "现在住亦庄", "we moved to Condens") may replace an earlier note on the same subject:
:data:`trimem.text.stopwords.NOT_SUBJECT_WORDS` are words two notes are not compared on.

>>> [n.text for n in read_notes("I'm allergic to cats. My eyes swell shut within an hour.")]
["I'm allergic to cats. My eyes swell shut within an hour."]
>>> read_notes("Can you explain the difference?"), read_notes("Had a great brainstorm with the team.")
([], [])
>>> n = read_notes("They cut the route, so I drive in now.")[0]
>>> n.change, n.language
(True, 'en')
>>> read_notes("今天评审被技术怼了"), read_notes("帮我写个用户访谈提纲")
([], [])
>>> [n.text for n in read_notes("我每天坐地铁十号线上下班")]
['我每天坐地铁十号线上下班']
>>> [n.text for n in read_notes("what should I cook tonight, I'm vegetarian")]
["I'm vegetarian"]
"""

from __future__ import annotations

import functools
import re
from typing import Final

import msgspec

from trimem.text.asking import EN_FIRST_PERSON, MAX_ASK_CHARS, asks, opens_asking
from trimem.text.cues import FILLER, GREETING, han_count
from trimem.text.facets import OCCUPATIONS
from trimem.text.guard import is_injection
from trimem.text.keys import DENY_WORDS
from trimem.text.script import WORD, Language, has_han, language, prepare_text, without_spaces
from trimem.text.sentences import Sentence, is_polite, sentences
from trimem.text.stopwords import NOT_SUBJECT

__all__ = [
    "MAX_NOTE_CHARS",
    "Note",
    "carries_on",
    "change_clauses",
    "read_notes",
    "states_change",
    "tells_news",
    "what_was_said",
]

MAX_NOTE_CHARS: Final = MAX_ASK_CHARS
"""A note is a sentence or two; longer text (pasted prose, logs) is not a statement about oneself."""

_EN_WORD_LOWER: Final = re.compile(r"[a-z]+")
# What would let a note pose as authority: the keys' deny words, less those everyday speech uses
# for other things ("our HR system", "the shop's rules", "a new fatigue policy"), plus plurals.
_AUTHORITY: Final = (DENY_WORDS - {"system", "rule", "rules", "policy", "policies"}) | {"admins", "superusers"}
# How someone lastingly is, said of the user without "I" ("Allergic to penicillin", "Scared to death
# of flying") or of someone named ("Aoife's allergic to nuts").
_EN_STATE: Final = (
    r"allergic|intolerant|lactose\s+intolerant|vegetarian|vegan|pescatarian|diabetic|coeliac|celiac|pregnant|"
    r"autistic|dyslexic|deaf|colou?r-?blind|left-handed|scared|terrified|afraid|petrified|phobic|sober|teetotal|"
    r"obsessed|mad\s+about|crazy\s+about|hopeless\s+at|rubbish\s+at"
)
_EN_STATE_OPENING: Final = re.compile(rf"(?:{_EN_STATE})\b", re.I)
# A name as written: "Aoife", "DeShawn", "McKenzie".
_EN_NAME: Final = r"[A-Z][a-zà-öø-ÿ]+(?:[A-Z][a-zà-öø-ÿ]+)?"
# The user's world named without a person: "The clinical system at work is EMIS", "the repo's
# private", "the managing partner is Deborah Voss".
_EN_WORLD: Final = re.compile(
    r"\b(?:at\s+(?:work|the\s+office|home)|[Tt]he\s+(?:office|team|firm|company|shop|studio|practice|clinic|"
    r"lab|store|restaurant|repo|kids|family|landlord|boss|car|van|truck|dog|cat)\b)|^[Tt]he\s+[a-z]+(?:\s+[a-z]+)?\s+(?:is|are)\s+[A-Z]"
    # the user's people, body and things, told without "my": "Sister lives in Perth", "Kid's school is …"
    r"|(?i:^(?:(?:left|right|bad|dodgy)\s+(?:knee|hip|shoulder|ankle|wrist|elbow|foot|hand|eye|ear)|"
    r"(?:(?:wee|little|lil|big|older|younger|baby|kid)\s+)?(?:sister|brother|sis|bro)|"
    r"mum|mom|mother|dad|father|wife|husband|partner|girlfriend|boyfriend|gf|bf|hubby|fianc[eé]e?|kid|kids|son|"
    r"daughter|grandma|grandpa|boss|landlord|flatmate|roommate|bank|gym|doctor|doc|gp|physio|consultant|dentist|accountant|cat|dog|back|"
    r"knee|knees|phone|car|ute|truck|van|bike|laptop|house|flat|shop|farm|garden|job|hours|shift|shifts|rota)(?:'s)?\b)"
    # the subject chat leaves out: "Allergic to penicillin", "Can't stand cilantro", "Not a morning person"
    rf"|(?i:^(?:{_EN_STATE}|not|can't|cannot|"
    r"don't|hate|love|prefer|trying\s+to|work\s+from|live\s+in|learning|training\s+for|saving\s+for)\b)"
    # what the user still has, told without "I": "Still on a Huawei P30", "Still driving the old Civic"
    r"|(?i:^still\s+(?:on|using|running|driving|rocking)\s+(?:a|an|my|the|our)\b)"
    # what the user works as, told without "I'm a": "sous chef at a wee seafood place", "nurse on nights"
    rf"|(?i:^(?:[\w-]+\s+)?(?:{OCCUPATIONS})s?\s+(?:at|for|in|on|with)\b)"
    # who the user is, in a few words: "Vikings fan", "Night owl", "Huge coffee drinker"
    r"|(?i:^(?!(?:what|such|how|the|that|this|a|an)\b)(?:[\w'-]+\s+){0,3}"
    r"(?:fan|supporter|person|owl|drinker|eater|lover|addict|nerd|geek|introvert|extrovert|runner|cyclist|gamer|"
    r"reader|early\s+bird)$)"
)
_ZH_WORLD: Final = re.compile(
    r"公司|工作室|店里|团队|单位|家里|部门|组里|咱们|客户|同事|医生|过敏|生日是|仓库|摊位|档口"
    # the user's people, body and things without "我的", and the subject chat leaves out
    r"|^(?:孩子|儿子|女儿|闺女|老公|老婆|媳妇|爱人|先生|妈|爸|姐|哥|弟|妹|孙子|孙女|外孙|婆婆|公公|岳父|岳母|老家|"
    r"房东|老板|领导|工资|房贷|车贷|房租|房子|新家|宿舍|车子|银行卡|腰|胃|膝盖|颈椎|眼睛|皮肤|不太|不能|不吃|不喝|受不了|"
    r"左手|右手|手腕|手机|电脑|开的|开着|用的|住|租|合租|有(?![点些人没])|在(?:备考|学|准备|练|考|读|带))"
    # what the speaker likes or fears most, and keeps: "最怕夜里跑山路", "养了一只柯基"
    r"|最(?:喜欢|爱|怕|讨厌|烦)|^养了"
)
# An aside before what is told: "btw …", "remind me, …", "Remember that …" ("remind me to …"
# asks for a reminder: it is no aside).
_EN_ASIDE: Final = re.compile(
    r"^(?:btw|by\s+the\s+way|fyi|oh\s+and|just\s+so\s+you\s+know|for\s+the\s+record|"
    r"(?:please\s+)?(?:remember|note|remind\s+me)(?:\s+that\b|\s*[,:])|"
    # an interjection before the user's own statement: "Okay I caved, we bought a Vezel"
    r"(?:ok|okay|well|alright|right|so|oh)\b[\s,!.—–-]*(?=(?:i|i'm|i’m|i've|i’ve|we|we're|we’re|we've|we’ve|my|our)\b))"
    r"[\s,:]*",
    re.I,
)
# About one moment, not a lasting state.
_EN_MOMENT: Final = re.compile(
    r"\b(?:today|tonight|yesterday|this\s+(?:morning|afternoon|evening|week)|last\s+night|just\s+now|"
    r"right\s+now|earlier\s+today|so\s+far\s+today)\b",
    re.I,
)
# ("最近", lately, is a stretch of time, not a moment: "最近在学尤克里里")
_ZH_MOMENT: Final = re.compile(r"今天|昨天|前天|刚才|刚刚|今晚|今早|昨晚|这周|本周|今儿|今朝|昨日|今日|这两天|这几天")
# Habits and changes outlast the moment they are told in.
# Words that say a state holds from now on: a change, and a lasting state too.
_EN_NOW = r"now|anymore|any\s+more|no\s+longer|no\s+more|these\s+days|nowadays|from\s+now\s+on|instead|for\s+good"
_ZH_NOW = r"现在|而家|以后|今后|不再|改成|换成|改为|换到|改到|搬"
_EN_LASTING: Final = re.compile(
    r"\b(?:every|each|always|usually|normally|generally|typically|often|never|most\s+days|weekdays|mostly|mainly|"
    r"largely|rarely|seldom|sometimes|occasionally|regularly|daily|weekly|monthly|yearly|weeknights|"
    r"mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
    rf"weekends|mornings|evenings|nights|since|agreed|decided|settled|{_EN_NOW})\b"
    # a span of years held up to now ("6 years sober", "married 20 years"), not a time ago or an age
    r"|\b(?:\d+|(?:(?:twenty|thirty|forty|fifty|sixty|seventy)(?:[\s-](?:one|two|three|four|five|six|seven|eight|nine))?"
    r"|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    r"eighteen|nineteen))\s+(?:years?|yrs)\b(?!\s+(?:ago|old|back|before|later|earlier)\b)"
    # a condition that flares up comes back: "gout's flared up in the big toe again"
    r"|\b(?:flared|flaring|flares|flare)\s+up\b",
    re.I,
)
_ZH_LASTING: Final = re.compile(
    rf"最近在|周末|工作日|平日|每|天天|通常|一般|平时|平常|总是|经常|常常|老是|偶尔|主要|大多|基本上|常年|从来|从不|一直|向来|一向|已经|"
    rf"(?<![这上下本])(?:周|星期)[一二三四五六日天]|"
    rf"(?:今天|今晚|本周|这周|这个月)(?:开始|起)|{_ZH_NOW}"
)
# What the user now has, told as the moment they got it ("Picked up a used Kia last weekend",
# "we adopted a tabby", "I took a full-time role at Kōwhai Labs"): a lasting state from then on.
_EN_ACQUIRED: Final = (
    r"\b(?:(?:adopted|rescued|leased|traded\s+in|sold|ended\s+up\s+with)\s+(?:a|an|the|our|my|two|three|\d+)|installed|"
    r"(?:bought|picked\s+up)\s+(?:a|an|our|my)\s+(?:(?:new|used|second-hand|secondhand|refurbished|little|"
    r"first)\s+)?(?:[\w-]+\s+){0,3}?(?:house|home|flat|apartment|condo|cottage|bungalow|townhouse|cabin|place|"
    r"car|van|truck|bike|motorbike|"
    r"scooter|ev|boat|caravan|camper|puppy|kitten|dog|cat)\b|picked\s+up\s+(?:a|an)\s+(?:used|second-hand)|"
    r"took\s+(?:a|an|the|up\s+a)\s+(?:[\w-]+\s+){0,3}?(?:job|role|position|post|offer)|"
    # a home bought as the sale completes: "closed on a house in Webb City"
    r"closed\s+on\s+(?:a|an|the|our|my)\s+(?:[\w-]+\s+){0,2}?(?:house|home|flat|apartment|condo|place|property)|"
    r"got\s+(?:a|an|our|my)\s+(?:new|used|second-hand|secondhand|refurbished)|got\s+(?:married|engaged|divorced)|diagnosed|"
    r"had\s+(?:a\s+baby|twins|triplets|(?:a|her|his|their)\s+(?:first\s+)?(?:baby|son|daughter|boy|girl))|"
    r"(?:bought|picked\s+up|got)\s+(?:a|an|my|our)\s+(?:(?:new|used|second-hand|secondhand|refurbished)\s+)?"
    r"(?-i:[A-Z0-9])\w+|got\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}?(?:job|role|position|puppy|kitten|dog|cat)|"
    r"(?:'s|’s|\s+is|\s+has)\s+(?:finally\s+)?gone\b(?!\s+(?:up|down|on|out|over|through|well|badly|to\s+bed))|"
    r"(?:a|an|our|my)\s+(?:new|used|second-hand|secondhand|refurbished)\s+[\w-]+\s+(?:arrived|came))\b"
)
_EN_CHANGE: Final = re.compile(
    # ("a retired botany professor" says what someone is, not that anything changed)
    r"(?<!\ba\s)(?<!\ban\s)\b(?:switched|moved|changed|migrated|replaced|started|starts|starting|stopped|quit|gave\s+up|given\s+up|became|"
    r"converted|transferred|relocated|promoted|hired|resigned|retired|stepped\s+(?:down|back)|"
    r"(?:handed|put|gave)\s+(?:in\s+)?(?:my|our|his|her)\s+notice|"
    r"got\s+the\s+(?:[\w-]+\s+){0,3}?(?:job|position|role|promotion|place|post|contract)\b|"
    rf"pushed|postponed|cancelled|canceled|passed\s+away|died|(?:be|been|was|were|got)\s+put\s+(?:down|to\s+sleep)|"
    rf"{_EN_NOW})\b|{_EN_ACQUIRED}"
    # a regime someone set: "the vet put Juno on a grain-free food", "took me off statins", "made me drop caffeine"
    r"|\b(?:(?:put|moved|switched)\s+(?:me|us|him|her|them|(?-i:[A-Z][a-z]+))\s+on(?:to)?|(?:took|taken)\s+(?:me|us|him|her|them|(?-i:[A-Z][a-z]+))\s+off|made\s+(?:me|us|him|her)\s+(?:drop|cut|stop|quit|give\s+up))\b",
    re.I,
)
_ZH_CHANGE: Final = re.compile(
    rf"换了|改了|转到|调到|调去|调回|调走|新的|新来|新[招买换养租装提]|戒了|戒掉|不干了|最近开始|开始|迁到|迁往|迁去|升级到|升到|改去|改用|改从|转用|换用|"
    rf"脱单|升[^了,，。]{{0,3}}了|加装|租了|买了[个辆台套间只部]|领养了|入手了|"
    # the turns of a life: a school got into, a business let go, a job left, a wedding
    rf"考上|考进|转学|转出去|盘出去|转让了|调岗|转岗|辞职|离职|退休了|毕业了|分手|领证|离婚|转业|跳槽|去世|过世|离世|"
    # a child brought home or started at school; what is no longer done ("冰钓不整了", "不站柜台了");
    # Cantonese 咗 ("换咗部iPhone", "改咗去学泰拳")
    rf"接回|上了[^,，。]{{0,6}}(?:幼儿园|托班|小学|初中|高中|大学)|(?<![差要快])不(?!了)[\u4e00-\u9fff]{{1,3}}[了啦](?![吗吧呢])|"
    rf"[换卖转调辞改]咗|"
    rf"换[^了,，。]{{1,3}}了|{_ZH_NOW}"
)
# A present-tense state or habit ("I'm", "is", "don't", "have") against a past-tense narrative.
_EN_PRESENT: Final = re.compile(
    r"(?:'m|'re|'ve|'s|’m|’re|’ve|’s)\b|\b(?:am|is|are|do|does|don't|doesn't|have|has|can|can't|cannot|"
    r"must|need|prefer|like|love|hate|live|work|use|take|eat|drink|own|play|keep|run|go|get|belong|"
    r"belongs|mean|means|want|tend|stay|still\s+got)\b",
    re.I,
)
_PAST_VERB: Final = (
    r"(?:was|were|had|did|went|came|got|made|took|saw|met|said|told|found|left|bought|ate|caught|ran|"
    r"spent|sent|thought|felt|heard|lost|won|wrote|gave|forgot|[a-z]{2,}ed)(?!['’]t)"  # "won't" is no "won"
)
# a past-tense verb that opens the sentence or follows its subject ("Had a call", "we went")
_EN_PAST: Final = re.compile(
    rf"^(?:just\s+)?{_PAST_VERB}\b|\b(?:i|we|they|he|she|it|you)\s+(?:just\s+|finally\s+|also\s+)?{_PAST_VERB}\b|"
    r"\b(?:went|came|was|were|had)\b",
    re.I,
)
_EN_STARTED_THING: Final = re.compile(r"(?:just\s+)?(?:started|restarted)\s+(?:the|a|an|up)\b(?!\s+new\b)", re.I)
_EN_PAST_OPENING: Final = re.compile(rf"(?:just\s+)?{_PAST_VERB}\b", re.I)
# a past-tense verb anywhere (a story of the moment, in a clause or a sentence carrying a note on)
_EN_PAST_ANY: Final = re.compile(rf"\b{_PAST_VERB}\b", re.I)
_HYPOTHETICAL: Final = re.compile(
    r"\b(?:if|unless|in\s+(?-i:case)|what\s+if|suppose|(?:maybe|perhaps)(?!\s+(?:\d|like\b|about\b|a\s+|an\s+|one|two|"
    r"three|four|five|six|seven|eight|nine|ten|twenty|half))|wonder(?:ing)?|thinking\s+(?:about|of)|"
    r"considering|not\s+sure|guess|should\s+(?:i|we))\b|如果|假如|要是|(?<![一二两三四五六七八九十百千\d])万一|也许|或许|"
    r"考虑|要不要",
    re.I,
)
# A condition that qualifies what is said ("I always email if there's any option", "flares if I
# practise more than 4 hours"), not one the whole sentence hangs on ("If I move I'll need a bike").
_EN_CONDITION: Final = re.compile(r"if|unless|in\s+case", re.I)
_EN_EVEN: Final = re.compile(r"\beven\s*$", re.I)
# The mood of what would or might be: a clause in it is no statement of what is.
_EN_CONDITIONAL_MOOD: Final = re.compile(r"\b(?:would|could|might|i'd|we'd)\b|’d\b", re.I)
# The arrival of someone or something new told as news of the moment ("new roommate moved in
# this week, Jonah, he's from Halifax"): it holds from then on.
_EN_NEW: Final = re.compile(r"\b(?:new|replacement)\b", re.I)
_EN_NEW_IS: Final = re.compile(
    r"\bnew\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are)\b|\bnew\s+[\w-]+(?:'s|’s)\b|\breplacement(?:'s|’s|\s+is)\b", re.I
)
# What is said to the assistant about the chat itself, not about the user: thanks, a sign-off,
# a remark addressed to "你" ("你讲得太快了"), not following ("没看明白"), leaving ("我去煮饭了").
_ZH_SOCIAL: Final = re.compile(
    r"^(?:哎呀|哎|唉|哈+|嗯+|啊|哦+|噢|好啦|好吧|好的|好了|行吧|行)?(?:你|您)(?!们)"
    r"|^(?:谢谢|多谢|感谢|辛苦|麻烦你|谢了|谢啦|好的谢谢)|^(?:好啦|好了|好的|行吧|拜拜|晚安)$"
    r"|看明白|看懂|听懂|听明白|搞明白|没明白|没懂"
    r"|^(?:那|好)?我(?:先|要|得)?去(?!年)[\u4e00-\u9fff]{1,4}(?:了|啦|咯)$"
    # who put the question to the user, told after it ("“雄起”是啥意思，外地朋友问我"), and that the
    # user cannot explain it or keeps forgetting it: said of the question, not of the user's life
    r"|^[\u4e00-\u9fff]{1,6}(?:问|考)(?:我|俺|额|咱)(?:的|嘅|哒)?$|(?:问|考)(?:我|俺|额|咱)|帮朋友问"
    r"|(?:解释|说|讲|搞)不(?:清|明白|通)|记不住|记混|老忘|每次都忘|总是忘"
    # what the answer should be like: "给个例子", "说人话版本"
    r"|^(?:给个|举个|来个|说人话|简单点|详细点|推荐点|推介)"
)
# Someone named, and how they are: "Jess is allergic to shellfish", "Omar works nights".
_EN_NAMED: Final = re.compile(
    rf"({_EN_NAME})(?:(?:'s|’s)?\s+(?:is|has|hates|loves|likes|can't|cannot|doesn't|won't|needs|works|lives|plays|"
    r"speaks|teaches|runs|owns|drives|goes|attends|studies|takes|uses|wears|eats|sleeps|rides|swims|"
    r"prefers|wants|gets|visits|coaches|collects|turns|graduates|retires|joins|starts|finishes|moves|stays|"
    r"cooks|knits|paints|writes|reads|watches"
    # any verb of theirs ("Freja skippers the ferry"), and what is theirs ("Lola's birthday is …")
    r"|(?!(?:is|was|has|this|thus|plus|us|always|as|yes|his|hers|its|less|unless|across|perhaps)\b)[a-z]{3,}s)\b"
    r"|(?:'s|’s|\s+is)\s+\d{1,3}\b(?!\s*(?:%|am|pm|:))"  # "Eli's 16": an age
    r"|(?:'s|’s)\s+[a-z]+(?:\s+[a-z]+)?\s+(?:is|are|has|was)\b"
    # where they are or what they are now: "Dafydd's home for good", "Mia's been at Arup since May"
    r"|(?:'s|’s)\s+(?:home|back|away|pregnant|engaged|married|retired|expecting|been|finally|now|still)\b"
    rf"|(?:'s|’s|\s+is)\s+(?:(?:so|really|very|severely|badly|deathly|totally|completely)\s+)?(?:{_EN_STATE})\b)"
)
# Who someone named is, said between their name and the rest: "Osian, Non's boy, is six",
# "Otis, our bluetick coonhound, got into the coop".
_EN_APPOSITIVE: Final = re.compile(rf"^(?P<name>{_EN_NAME}),\s+(?P<who>[^,.!?]{{2,40}}),(?=\s)")
_DENY_HAN: Final = re.compile(r"权限|角色|指令|系统提示|提示词|管理员|规则|身份")


class Note(msgspec.Struct, frozen=True):
    """One note: the user's own words (normal form), whether they state a change, the language."""

    text: str
    change: bool
    language: Language


def _named(body: str) -> bool:
    """Whether `body` tells how someone named is ("Jess is allergic to shellfish", "Omar works
    nights"): in a user's message, one of the people of their life."""
    found = _EN_NAMED.match(_EN_APPOSITIVE.sub(r"\g<name>", body, count=1))
    return found is not None and found.group(1).casefold() not in NOT_SUBJECT


def _en_note(body: str) -> bool:
    if _EN_OF_THE_QUESTION.search(body):
        return False
    words = WORD.findall(body)
    # a note names what it is about: "Never again." says how often, not of what
    if len(words) < 2 or not any(w.casefold() not in NOT_SUBJECT for w in words):
        return False
    lasting = _EN_LASTING.search(body) is not None
    if _EN_MOMENT.search(body) and not lasting:
        # news of the moment that holds from then on, told with what now is, is a change
        if not (_EN_PRESENT.search(body) and (_EN_CHANGE.search(body) or _EN_NEW.search(body))):
            return False
    # about the user (or their team, home, family): said in the first person, of their world, or
    # as a habit or change
    # (what something new now is, is of the user's world too: "new hand-in date is 30 June")
    if not (
        EN_FIRST_PERSON.search(body)
        or _EN_WORLD.search(body)
        or lasting
        or _EN_CHANGE.search(body)
        or _EN_NEW_IS.search(body)
        or _named(body)
    ):
        return False
    if _EN_STATE_OPENING.match(body):
        return True  # "Scared to death of flying": a state, though its word looks like a past tense
    # a past-tense narrative ("Had a great call", "The readout went okay") is an event, unless it
    # tells of a change ("we moved our repository to Condens"); one without a subject always is
    if _EN_PAST_OPENING.match(body):
        # (a change: "Switched to oat milk"; starting a thing is an event: "Started the Node service")
        changed = _EN_CHANGE.search(body) is not None and _EN_STARTED_THING.match(body) is None
        return _EN_PRESENT.search(body) is not None or lasting or changed
    if lasting or not (_EN_PAST.search(body) and not _EN_PRESENT.search(body) and not _EN_CHANGE.search(body)):
        return True
    # a state said without a verb, then how it came about ("Allergic to penicillin, came up in a
    # rash when I was 15"): the story explains the state, which holds
    first = _EN_CLAUSE.split(body, maxsplit=1)[0]
    return (
        first != body and _EN_DETERMINER.match(first) is None and _EN_PAST_ANY.search(first) is None and _en_note(first)
    )


# Said of the question, not of the user's life: who keeps asking it, that the user does not follow.
_EN_OF_THE_QUESTION: Final = re.compile(
    r"\b(?:keeps?|kept)\s+(?:asking(?:\s+(?:me|us))?(?=\s*(?:$|[,.!?;]|and\b|but\b))|getting\s+it\s+wrong|talking\s+about\s+it)"
    r"|\bnone\s+the\s+wiser\b"
    r"|\bnot\s+following\b|\bexplain\s+it\s+like\b|\bkeep\s+hearing\s+about\b|\basking\s+for\s+a\s+friend\b",
    re.I,
)
# A clause opening with a determiner names a thing ("My cousin's wedding, drove 5 hours"), not a state.
_EN_DETERMINER: Final = re.compile(r"(?:my|our|the|a|an|this|that|his|her|their)\b", re.I)
_ZH_CLAUSE: Final = re.compile(r"[,;]")
_EN_CLAUSE: Final = re.compile(r"\s*[,;]\s*|\s+[-–—]+\s+|\s*[\U0001F300-\U0001FAFF\u2600-\u27BF]+\s*")


def _zh_note(body: str) -> bool:
    core = "".join(c for c in _ZH_CLAUSE.split(without_spaces(body)) if c and not _ZH_SOCIAL.search(c))
    if len(core) < 4:  # a question or request never gets here (read_notes skips what asks)
        return False
    # Chinese chat leaves the subject out more often than not ("驾照拿了五年，一上高速就腿软",
    # "礼拜六晚上雷打不动去听相声"): a statement that neither asks nor is small talk is the
    # user's own. "了" marks a change of state as often as a past event: only a word for the
    # moment decides, and a moment's change ("今天新娘换了五套衣服") is an event unless it holds
    # from now on.
    return not (_ZH_MOMENT.search(core) and not _ZH_LASTING.search(core))


def _hypothetical(body: str) -> bool:
    """Whether `body` says what might be rather than what is. An English condition after what is
    said only qualifies it: the sentence stands when what comes before the condition is a note."""
    found = _HYPOTHETICAL.search(body)
    if found is None:
        return False
    if has_han(body) or _EN_CONDITION.fullmatch(found.group()) is None:
        return True
    head = _EN_EVEN.sub("", body[: found.start()]).rstrip(" ,;:-–")
    return not head or _EN_CONDITIONAL_MOOD.search(head) is not None or not _en_note(head)


# Words that steer a chat rather than name what it is about ("Anyway.", "Big news."), beside
# the filler words of cues.FILLER.
_DISCOURSE: Final = frozenset(
    "anyway anyhow btw fyi also so well honestly lol haha ugh wow oh sigh sorry ps update news big good bad "
    "quick random".split()
)


def _topic(text: str) -> bool:
    """Whether `text` is a topic said on its own before what is said of it ("Snakes. Hate em.",
    "Coriander. Tastes like soap to me."): a word or two, no filler, no Chinese (whose short
    sentences say whole things)."""
    words = WORD.findall(text)
    return (
        0 < len(words) <= 2
        and not has_han(text)
        and FILLER.fullmatch(text.casefold().strip(" .!~")) is None
        and GREETING.match(text.casefold()) is None
        and not any(w in NOT_SUBJECT or w in _DISCOURSE or FILLER.fullmatch(w) for w in map(str.casefold, words))
    )


# A word that points back at what was just said: "it", "that", "they"…
_EN_BACK: Final = re.compile(r"\b(?:it|that|this|they|them|she|he|her|him)\b", re.I)


# A sentence that leaves out its subject and opens on what the speaker is doing: "Thinking
# something small in Waterton", "Hoping to be back by June" (not "Nothing new", "Morning all").
# (what the speaker is looking for or wondering about asks: "Looking for a good recipe")
_EN_DOING: Final = re.compile(
    r"^(?!(?:no|some|any|every)thing\b|morning\b|evening\b|during\b|looking\s+for\b|wondering\b)"
    r"[a-z]{3,}ing\s+\S+\s+\S",
    re.I,
)


def _carries_on(body: str) -> bool:
    """Whether English `body`, said right after a note, says more of its subject: it points back
    at it ("cold air sets it off") or goes on without a subject ("Thinking something small in
    Waterton"), tells no story (no past tense) and no single moment."""
    return (
        not has_han(body)
        and (_EN_BACK.search(body) is not None or _EN_DOING.match(body) is not None)
        and _EN_PAST_ANY.search(body) is None
        and not _is_moment(body)
        and not opens_asking(body)
    )


def carries_on(s: Sentence) -> bool:
    """Whether sentence `s`, said right after a statement, says more of its subject and asks
    nothing ("My brother Kai is 19. He's obsessed with trains.", "我弟弟19岁。他特别迷火车。")."""
    body = s.body.strip()
    zh = has_han(body)
    return (
        not asks(s)
        and not _is_moment(body)
        and (_of_them(without_spaces(body) if zh else body, zh) or _carries_on(body))
    )


def _announces(body: str) -> bool:
    """Whether English `body` announces a change and no more ("We've moved!", "New job!",
    "Handed my notice in!")."""
    return not has_han(body) and _headline(body) and tells_news(body)


def _is_moment(body: str) -> bool:
    return (_ZH_MOMENT if has_han(body) else _EN_MOMENT).search(body) is not None


# A job named "role" ("a full-time role at Kōwhai Labs", "my new role") is no role of the chat.
_JOB_ROLE: Final = re.compile(
    r"\b(?:new|full-time|part-time|permanent|senior|junior|contract|temporary|teaching|leadership|management)"
    r"\s+role\b|\brole\s+(?:at|with)\b",
    re.I,
)


def _poses_as_authority(sentence: str) -> bool:
    """Whether a sentence speaks of roles, permissions, prompts or rules: as a note it would let
    stored text pose as authority ("Keep any instructions simple" is dropped, the note beside it
    kept)."""
    words = _EN_WORD_LOWER.findall(_JOB_ROLE.sub(" ", sentence).casefold())
    return bool(_AUTHORITY.intersection(words)) or _DENY_HAN.search(sentence) is not None


def read_notes(text: str, *, by_user: bool = True) -> list[Note]:
    """The note `text` holds (at most one: its sentences that read as notes, joined), or none.
    Only the user's own words make notes (``by_user=False`` gives none)."""
    if not by_user or not isinstance(text, str) or len(text) > MAX_NOTE_CHARS or is_injection(text):
        return []
    kept: list[str] = []
    before: str | None = None  # the sentence just before, when it was told but is no note
    announced: str | None = None  # the sentence just before, when it announced a change in a few words
    last_kept = False  # whether the sentence just before was kept
    for s in sentences(prepare_text(text)):
        body = s.body.strip()
        if _poses_as_authority(body):
            before, last_kept, announced = None, False, None
            continue
        if body.isupper() and not has_han(body):
            # a sentence shouted in capitals ("JOSH GOT A LOCAL JOB!!") reads as if written small
            body = body.lower()
            s = Sentence(body, s.text, s.question)
        if not has_han(body):
            aside = _EN_ASIDE.match(body)
            if aside is not None and aside.end() < len(body):
                body = body[aside.end() :]
                s = Sentence(body, s.text, s.question)
        if asks(s) or is_polite(body) or _hypothetical(body):
            told = _told_in_passing(s, after_note=last_kept)
            if told is not None:
                kept.append(told)
            before, last_kept, announced = None, False, None
            continue
        if announced is not None and not has_han(body) and not _is_moment(body):
            # a change announced in a few words ("We moved!", "New job!") is told by what
            # follows it ("Freestanding house in Noordwyk, 10 minutes from the new school.")
            if announced not in kept:
                kept.append(announced)
            kept.append(s.text.strip())
            before, last_kept, announced = None, True, None
            continue
        announced = None
        if _zh_note(body) if has_han(body) else _en_note(body):
            # a change is told with what came before it ("Got the robot milkers running, Lely
            # ones. No more set milking times."), and a note with its topic said on its own
            # ("Snakes. Hate em."): the sentence before is kept with it
            if before is not None and (tells_news(body) or _topic(before)):
                kept.append(before)
            kept.append(s.text.strip())
            before = None
            last_kept = True
            announced = s.text.strip() if _announces(body) else None
            continue
        if last_kept and _carries_on(body):
            # what is said of the note's subject right after it ("I have asthma. cold air sets it
            # off") belongs to it
            kept.append(s.text.strip())
            continue
        who = None if has_han(body) else _EN_APPOSITIVE.match(body)
        if who is not None and who["who"].casefold().startswith(("my ", "our ")):
            # a story that says in passing who someone is to the user ("Otis, our bluetick
            # coonhound, got into the coop again") keeps who they are
            kept.append(f"{who['name']}, {who['who']}")
            before, last_kept = None, False
            continue
        last_kept = False
        before = s.text.strip() if not _is_moment(body) else None
        announced = before if before is not None and _announces(body) else None
    if not kept:
        return []
    joined = " ".join(kept) if not has_han(kept[0]) else "".join(kept)
    return [Note(joined, states_change(joined), language(joined))]


# A statement told in passing inside a request opens with its subject, the user or theirs ("I'm
# vegetarian", "my daughter just turned 4", "the car's a 2017 Octavia", "can't sleep on my right
# side"), not with what only points back at the request ("a pal of mine has it", "not flowers").
_EN_OWN_OPENING: Final = re.compile(
    r"(?:i|i'm|i’m|i've|i’ve|im|ive|my|we|we're|we’re|we've|we’ve|our|can't|can’t|cannot|don't|don’t)\b"
    r"|still\s+(?:got|have|owe|paying)\b"  # "Still got $31k of HECS": what the user has, said without "I"
    r"|the\s+(?:car|van|truck|house|flat|apartment|dog|cat|kids|office|team|firm|company|shop|practice)\b",
    re.I,
)
_ZH_OWN_PERSON: Final = re.compile(r"我|俺|咱")
_EN_ENDS_POINTING_BACK: Final = re.compile(r"\b(?:it|them|that|this|one|those|these)\W*$", re.I)
# Someone of the user's life a request names ("a party for my daughter Maisie", "给我闺女朵朵"),
# and a clause after it that says how they are ("she turns 8 and loves axolotls", "她最近迷恐龙").
_EN_KIN: Final = re.compile(
    r"\b(?:my|our)\s+(?:(?:little|older|younger|eldest|oldest|youngest|baby|big|teenage|elderly|new)\s+)?"
    r"(?:wife|husband|partner|fianc[eé]e?|girlfriend|boyfriend|son|daughter|kid|child|stepson|stepdaughter|"
    r"mum|mom|mother|dad|father|sister|brother|grandson|granddaughter|grandma|grandmother|grandpa|grandfather|"
    r"niece|nephew|cousin|aunt|uncle|mother-in-law|father-in-law|daughter-in-law|son-in-law|roommate|flatmate|"
    r"dog|cat|puppy|kitten|pup)(?![\w-])(?:\s+[A-Z][a-z]+)?"
)
_ZH_KIN: Final = re.compile(
    r"我(?:的)?(?:老婆|媳妇|老公|爱人|儿子|女儿|闺女|孩子|娃|妈|爸|老妈|老爸|妹妹|弟弟|姐姐|哥哥|奶奶|爷爷|外婆|外公|"
    r"姥姥|婆婆|公公|岳母|岳父|孙子|孙女|外孙|家狗|家猫|猫|狗)(?:[\u4e00-\u9fff]{0,2}(?=[,，]))?"
)
_EN_OF_THEM: Final = re.compile(
    r"(?:she|he|they)(?:'s|’s|'re|’re|\s+(?:is|are|has|have|loves|likes|hates|can't|won't|doesn't|don't|"
    r"(?!was\b|has\b)[a-z]{2,}s))\b",
    re.I,
)
_ZH_OF_THEM: Final = re.compile(r"^(?:她|他|它)(?!们?说)")


def _en_story(body: str) -> bool:
    """Whether English `body` tells a story of the moment: a past tense and no present one."""
    return _EN_PAST_ANY.search(body) is not None and _EN_PRESENT.search(body) is None


def _passing_note(body: str, zh: bool) -> bool:
    """Whether a clause of a sentence that asks is a statement about the user, told in passing:
    in the first person and not to the assistant ("我把分数发你"); in English, opening with its
    subject and not a story of the moment ("my grandson asked and I couldn't explain")."""
    if zh:  # (a change or the user's world needs no person: "换了个苹果15", "家里那条萨摩叫大白")
        # (a clause of the user's world alone says a lasting thing only at some length: "家里有事"
        # is a moment's excuse)
        own = _ZH_OWN_PERSON.search(body) is not None or _ZH_CHANGE.search(body) is not None
        own = own or (len(body) >= 6 and _ZH_WORLD.search(body) is not None)
        return own and "你" not in body and _zh_note(body)
    # (or a story told without its subject that says what the user now is: "Found out at the
    # dentist that I'm allergic to latex")
    opens = _EN_OWN_OPENING.match(body) is not None or (
        _EN_PAST_OPENING.match(body) is not None and EN_FIRST_PERSON.search(body) is not None
    )
    # ("my pal's trying to get me into it" ends on what the request named: alone it says nothing)
    return opens and _en_note(body) and not _en_story(body) and _EN_ENDS_POINTING_BACK.search(body) is None


def _of_them(body: str, zh: bool) -> bool:
    """Whether a clause says how someone just named is, now (not a story of the moment)."""
    if zh:  # (read as told of the one named: "她最近迷恐龙" is "我闺女最近迷恐龙")
        return _ZH_OF_THEM.match(body) is not None and "你" not in body and _zh_note("我" + body)
    return _EN_OF_THEM.match(body) is not None and not _en_story(body)


def _told_in_passing(s: Sentence, *, after_note: bool = False) -> str | None:
    """What sentence `s`, which asks, tells of the user in passing ("my daughter just turned 4 and
    she's obsessed with dinosaurs, any book recs?", "帮我推荐个晚饭吧，我吃素哈，蛋奶可以"): its
    clauses that read as notes, each with the clauses that carry on from it up to one that asks;
    None when it tells nothing. The request itself is never kept: a profile line must not read as
    an instruction. Right `after_note`, a first clause that says how "she" is carries the note on
    ("Róisín is 13. She's read all the Percy Jackson ones, what's next?")."""
    text = s.text.strip()
    zh = has_han(text)
    if not zh and GREETING.match(text.casefold()):  # "thanks, I'm off to cook": small talk
        return None
    parts = [p.strip() for p in (_ZH_CLAUSE if zh else _EN_CLAUSE).split(text)]
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return None
    kept: list[str] = []
    going = False
    kin: str | None = "" if after_note else None  # someone of the user's life the clause before named
    for i, part in enumerate(parts):
        body = part.rstrip("?!.。~ ")
        clause = Sentence(body, part, s.question and i == len(parts) - 1)
        named, kin = kin, None
        if named is not None and _of_them(body, zh) and not asks(clause) and not _hypothetical(body):
            kept += [named, body] if named else [body]
            going = True
        elif not body or asks(clause) or _hypothetical(body) or (zh and _ZH_SOCIAL.search(body)):
            going = False
            found = (_ZH_KIN if zh else _EN_KIN).search(body)
            kin = found.group() if found is not None else None
        elif _passing_note(body, zh):
            kept.append(body)
            going = True
        elif going:
            kept.append(body)
    return ("," if zh else ", ").join(kept) or None


# Who said or decided it, before what was said: "领导说了，…", "主编让我们…", "My boss says …".
_ZH_REPORTER: Final = re.compile(
    r"^[^,，。；;]{1,8}?(?:说了?|讲了?|通知|要求|规定|决定|让我们?|叫我们?|要我们?)[,，:：]?"
)
_EN_REPORTER: Final = re.compile(
    r"^(?:(?:my|our|the)\s+)?[a-z]+(?:\s+[a-z]+)?\s+(?:says|said|told\s+(?:me|us)|wants\s+(?:me|us)\s+to|"
    r"decided|announced|insists)(?:\s+that)?\b[,:]?",
    re.I,
)


def change_clauses(text: str, *, headline: bool = True) -> str:
    """The clauses of `text` that tell a change, joined ("" when none does): what a change is
    about sits beside the word that tells it ("民宿转出去了" of "民宿转出去了！太累了。…顺便卖阿金的扎染").

    >>> change_clauses("The old truck kept stalling, we bought a used Isuzu. The heater works!")
    'we bought a used Isuzu'
    """
    out: list[str] = []
    said = list(sentences(prepare_text(text)))
    for i, s in enumerate(said):
        parts = [p.strip() for p in (_ZH_CLAUSE if has_han(s.text) else _EN_CLAUSE).split(s.text) if p.strip()]
        # a headline of a change ("民宿转出去了！", "Sold the Jetta!") names what changed; what
        # the sentences after it tell is where things stand now
        alone = headline and i == 0 and len(said) > 1 and len(parts) == 1
        if alone and states_change(parts[0]) and _headline(parts[0]):
            return parts[0].rstrip("?!.。~！ ")
        out.extend(p.rstrip("?!.。~ ") for p in parts if states_change(p))
    return " ".join(out)


def _headline(clause: str) -> bool:
    """Whether `clause` is as short as a headline: four words, or eight Chinese characters."""
    return han_count(clause) <= 8 if has_han(clause) else len(WORD.findall(clause)) <= 4


def what_was_said(text: str) -> str:
    """`text` without a leading clause of who said or decided it: what a reported change is about.

    >>> what_was_said("领导说了，月报以后统一每月三号前交"), what_was_said("My boss says we use Jira now")
    ('月报以后统一每月三号前交', 'we use Jira now')
    """
    reporter = _ZH_REPORTER if has_han(text[:12]) else _EN_REPORTER
    rest = reporter.sub("", text.strip(), count=1).strip()
    return rest or text


@functools.lru_cache(maxsize=8192)  # asked of the same notes by every search of the fact index
def tells_news(text: str) -> bool:
    """Whether `text` states a change or tells of someone or something new ("got a new
    dispatcher, Tonya"): it may stand for what an older note says."""
    return states_change(text) or (not has_han(text) and _EN_NEW.search(text) is not None)


def states_change(text: str) -> bool:
    """Whether `text` says something changed ("now", "anymore", "moved", "现在", "改成")."""
    return (_ZH_CHANGE if has_han(text) else _EN_CHANGE).search(text) is not None
