"""Facets: the parts of a life a text is about — food, travel, health, family, money… — in
English and Chinese, so that a request meets the profile notes it bears on when they share no
word: "How should I get to the expo in Seattle?" and "I can't drive, never got my licence" are
both about getting around; "周五晚上想找个地方喝一杯" and "我喜欢喝精酿" both about drinks.

An embedder of sentence meaning rarely knows this (a request names a fact by what it needs, not by
what it says); a small table of everyday words per facet does, in both languages. There is no
facet of time: nearly every request and every habit names a day or an hour, so it tells nothing
of which fact a request needs (measured: a time facet lowered the rank of the facts asked for). The fact
index's search adds a leg that ranks the user's facts by the facets they share with a request
(:meth:`trimem.layers.semantic.Facts.search`): it reorders, it never makes a match confident.

>>> sorted(facets("How should I get to the games expo in Seattle?"))
['games', 'travel']
>>> sorted(facets("I can't drive, never got my licence.")), sorted(facets("我喜欢喝精酿，IPA 是我的最爱。"))
(['travel', 'vehicle'], ['drink'])
>>> sorted(facets("晚上想点个火锅外卖")), facets("ok thanks"), sorted(facets("I live just off Commercial Drive"))
(['food'], frozenset(), ['home'])
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Final

from trimem.text.script import has_han, prepare_text

__all__ = ["FACETS", "MAKES", "MAX_FACET_CHARS", "OCCUPATIONS", "ONE_AT_A_TIME", "OWNED_KINDS", "facets", "owned"]

OCCUPATIONS: Final = (
    "nurse|engineer|designer|developer|programmer|teacher|lecturer|professor|accountant|lawyer|solicitor|"
    "surgeon|pharmacist|paramedic|architect|analyst|consultant|chef|pilot|electrician|plumber|carpenter|"
    "mechanic|trucker|farmer|scientist|researcher|journalist|librarian|therapist|dentist|intern|sysadmin|"
    "receptionist|cashier|barista|dispatcher|firefighter|technician|welder|carer|caregiver|midwife|"
    "paralegal|bookkeeper|hairdresser|butcher|baker|courier|machinist|stenographer|captioner|instructor|"
    "coordinator|supervisor|foreman"
)
"""Everyday words for what someone works as, "|"-separated: the career facet's, and the reading of
a job told without "I'm a" ("sous chef at a seafood place")."""

MAKES: Final = (
    "toyota|honda|ford|kia|hyundai|skoda|volkswagen|vw|tesla|nissan|mazda|subaru|bmw|audi|mercedes|volvo|"
    "chevy|chevrolet|jeep|dodge|lexus|peugeot|renault|fiat|citroen|vauxhall|opel|mitsubishi|suzuki|maruti|"
    "mahindra|byd|polestar|rivian|gmc|buick|cadillac|dacia|isuzu|porsche"
)
"""Makes of car, "|"-separated: the vehicle facet's words, read though written with a capital."""
_PHONE_MAKES: Final = "iphone|samsung|pixel|huawei|xiaomi|oneplus|motorola"
# (Chinese makes: words that only look like makes are left out, 吉利 "lucky", 大众 "the public")
_ZH_CAR_MAKES: Final = (
    "比亚迪|丰田|本田|特斯拉|蔚来|小鹏|零跑|埃安|哈弗|五菱|奇瑞|宝马|奥迪|别克|雪佛兰|起亚|马自达|斯柯达|问界|极氪"
    "|捷达|奔驰|日产|福特|领克|岚图|坦克"
)
_ZH_PHONE_MAKES: Final = "华为|荣耀|三星|一加|iphone|oppo|vivo"
# A make is read though written with a capital, as names are.
_MAKE_WORDS: Final = frozenset(f"{MAKES}|{_PHONE_MAKES}".split("|"))

# facet → (English words and phrases, Chinese words), "|"-separated. English words match whole
# (and with a plural, -ing or -ed ending); Chinese words match anywhere.
FACETS: Final[Mapping[str, tuple[str, str]]] = {
    "food": (
        "eat|eating|ate|food|meal|dinner|lunch|breakfast|brunch|supper|restaurant|cafe|cook|cooking|recipe|menu|"
        "snack|dish|cuisine|diet|vegetarian|vegan|halal|kosher|gluten|dairy|lactose|pork|beef|chicken|meat|"
        "seafood|fish|shellfish|nut|nuts|peanut|spicy|takeaway|takeout|delivery|catering|grocery|groceries|"
        "bbq|barbecue|picnic|potluck|sugar|sweets|dessert|cake|bake|baking|bread|fasting|calories|pescatarian|coeliac|celiac|intolerant|intolerance|diabetic|diabetes|cholesterol|salt|keto|carbs|hungry|cilantro|coriander|onion|onions|garlic|mushroom|egg|eggs|milk|cheese|curry|soup|pizza|burger|sandwich|salad|pasta|rice|noodles|taste|tastes|flavour|flavor|grab a bite|"
        "oyster|oysters|prawn|prawns|shrimp|crab|crabs|lobster|mussels|clams|scallops|sushi|steak|bacon|sausage|buffet|feast|gout",
        "吃|饭|菜|餐|外卖|火锅|烧烤|聚餐|饭店|餐厅|馆子|食|忌口|素|猪肉|牛肉|羊肉|海鲜|辣|甜|糖|内脏|早点|夜宵|"
        "点单|菜谱|下厨|做饭|口味|零食|蛋糕|面包|清真|控糖|减肥|饮食|胃|胃炎|主食|葱|香菜|蒜|馋|饿|吃饭|尿酸|痛风",
    ),
    "drink": (
        "drink|drinks|drinking|beer|beers|wine|bar|pub|brewery|cocktail|cocktails|coffee|espresso|latte|tea|"
        "alcohol|sober|whisky|whiskey|booze|ipa|stout|lager|happy hour|a pint",
        "喝|酒|啤酒|精酿|咖啡|茶|奶茶|酒吧|小酌|一杯|白酒|红酒|饮料|戒酒",
    ),
    "travel": (
        "drive|driving|drove|driver|car|cars|licence|license|commute|commuting|bus|train|subway|metro|tube|"
        "bike|cycle|cycling|flight|flights|fly|flying|airport|airline|trip|travel|travelling|traveling|ticket|"
        "tickets|taxi|uber|lyft|parking|route|directions|get to|getting to|ride|rides|ferry|visa|passport|"
        "hotel|airbnb|road trip|carpool|scooter|walk to|plane|get there|getting there|get down to|get up to|"
        "get over to|get in to|get into town|way of getting|way to get",
        "开车|驾照|车|地铁|公交|高铁|火车|动车|飞机|机票|车票|出差|通勤|打车|骑车|自行车|电动车|路线|回家|旅行|"
        "旅游|出行|行程|航班|签证|护照|酒店|民宿|自驾|坐车|晕车|过去|去一趟|坐飞机|飞去|飞到|出发|转机|落机|搭车|"
        # how to get somewhere ("咋去方便", "点样去")
        "怎么去|咋去|怎么走|咋走|点样去|点去|哪能去",
    ),
    "home": (
        "home|house|flat|apartment|neighbourhood|neighborhood|nearby|near|local|locally|live|living|lives|"
        "moved|move|address|rent|landlord|hometown|grew up|born|from|stairs|staircase|elevator|bungalow|ground floor",
        "住|我家|家里|在家|回家|离家|到家|从家|家门口|附近|小区|房子|租|搬|城市|地址|本地|老家|家乡|周边|楼梯|电梯|几楼|楼层|"
        "屋企|屋头|住处",
    ),
    "health": (
        "health|healthy|doctor|gp|allergy|allergic|allergies|pain|back|knee|knees|wrist|wrists|injury|injured|"
        "condition|asthma|diabetes|diabetic|pregnant|pregnancy|blind|deaf|medication|meds|pill|pills|surgery|"
        "sleep|insomnia|afraid|fear|heights|phobia|anxiety|migraine|therapy|hospital|sick|physio|disability|smoke|smoking|cigarette|cigarettes|vape|vaping|nicotine|tobacco|glasses|eyesight|hearing|arthritis|blood pressure|heart|apnea|cataract|tendinitis|rsi|carpal tunnel|inhaler|hay fever|period|chronic|"
        # (what to watch out for is what one's body allows)
        "watch out|careful|should i flag|should i worry|should i think about|should i know|should i mention|"
        "scared|terrified|nervous|panic",
        "过敏|病|医生|医院|疼|痛|腰|膝盖|手腕|颈椎|恐高|怕|身体|血糖|血压|胰岛素|药|睡眠|失眠|怀孕|体检|"
        "晕|手术|紫外线|晒|哮喘|近视|体力|烟|戒烟|抽烟|眼镜|听力|心脏|关节|胃病|鼻炎|结节|偏头痛|慢性|大夫|看病|吃药|"
        "耳朵|眼睛|牙|溃疡|椎间盘|腰椎|高反|血脂|尿酸|痛风|感冒|发烧|嗓子|"
        # what to watch out for is what one's body allows
        "注意啥|注意什么|要注意|得注意|注意点啥|注意的|顶唔顶得顺",
    ),
    "family": (
        "wife|husband|partner|spouse|kid|kids|child|children|son|sons|daughter|daughters|mum|mom|mother|dad|"
        "father|parents|baby|family|nephew|niece|sister|brother|sibling|grandma|grandmother|grandpa|"
        "grandfather|girlfriend|boyfriend|fiance|fiancee|in-laws|cousin|aunt|uncle|anniversary|valentine|date night|gf|bf|hubby|missus|twins|grandkids|grandson|granddaughter|grandchildren|grandkid|stepson|stepdaughter|mother-in-law|father-in-law|wedding|"
        "other half|better half|seeing someone|dating|little one|little ones|kiddo|kiddos|toddler|nursery|daycare|preschool|kindergarten|"
        "school run|nanny|childminder|babysitter",
        "老婆|媳妇|老公|爱人|孩子|儿子|女儿|爸|妈|父母|家人|宝宝|女朋友|男朋友|对象|哥|姐|弟|妹|爷爷|奶奶|"
        "外婆|姥姥|外公|侄|岳|公婆|亲戚|先生|约会|七夕|情人节|纪念日|孙子|孙女|外孙|老伴|闺女|小囡|娃|婚礼|"
        "幼儿园|托班|保姆|阿姨带|接送|家长会|小家伙|崽",
    ),
    "pets": (
        "pet|pets|dog|dogs|puppy|cat|cats|kitten|vet|fur|walkies|dog walker|pet sitter|greyhound|terrier|retriever|labrador|collie|spaniel|chihuahua|chihuahuas|boxer|corgi|poodle|kitty|dog sitter|kennel|"
        "furball|fur baby|furbaby|pup|pupper|doggo|moggy|tabby|tomcat|rescue dog|rescue cat|litter|leash|lead|"
        # (who looks after them while one is away: "a note for the sitter", "popping in to feed")
        "sitter|house sitter|popping in|pop in|ferret|rabbit|hamster|guinea pig|budgie|parrot|tortoise|goldfish|rat|"
        "gerbil|gecko",
        "宠物|狗|猫|遛狗|铲屎|兽医|猫毛|狗毛|毛孩子|柯基|布偶|泰迪|金毛|哈士奇|柴犬|英短|橘猫|寄养|主子|喵|汪|猫砂|狗粮|猫粮|"
        "小家伙|小短腿|喂食|仓鼠|兔子|乌龟|金鱼|鱼缸|鹦鹉|鸭子",
    ),
    "people": (
        "boss|manager|colleague|colleagues|coworker|coworkers|team|client|clients|customer|customers|supplier|"
        "suppliers|vendor|vendors|partner|partners|assistant|ea|director|ceo|founder|editor|recruiter|"
        "landlord|accountant|lawyer|mentor|collaborator|artist|contact",
        "老板|领导|同事|客户|供应商|合伙人|主编|上司|经理|总监|助理|搭档|师傅|会计|律师|对接人|甲方|厂家|房东",
    ),
    "trade": (
        "business|shop|store|bakery|restaurant|cafe|clinic|practice|studio|firm|agency|startup|brand|customers|"
        "clients|sell|selling|sells|trade|import|importer|export|exporter|wholesale|retail|supplier|suppliers|"
        "career|profession|job|occupation|self-employed|freelance|freelancer",
        "生意|店|店铺|开了家|卖|外贸|进口|出口|批发|零售|职业|行业|本行|自己干|个体|工作室|品牌|开发信",
    ),
    "career": (
        "career|profession|job|jobs|role|position|occupation|promotion|promoted|employer|hired|full-time|"
        "part-time|freelance|freelancer|self-employed|retired|retirement|linkedin|resume|cv|bio|headline|employed|"
        "works at|works in|works for|works as|working at|working as|"
        f"cover letter|portfolio|interview|internship|shift|shifts|rota|overtime|workplace|on call|{OCCUPATIONS}|"
        # (whether one is free for something is a question of one's hours of work)
        "am i free|actually free|be free|say yes|commit to|can i make it|work schedule|my schedule|"
        # (time off is asked of one's employer)
        "day off|days off|week off|weeks off|time off|annual leave|sick day|call in sick",
        "职业|岗位|职位|入职|跳槽|升职|简历|简介|自我介绍|面试|履历|退休|实习|兼职|全职|自由职业|护士|工程师|设计师|程序员|"
        "老师|教师|会计|律师|建筑师|产品经理|公务员|厨师|摄影师|研究员|医生|司机|上班|下班|单位|加班|值班|倒班|三班|夜班|白班|"
        "返工|开工|工作|调到|调去|调岗|转岗|辞职|辞咗|请假|"
        # whether one is free for something is a question of one's hours of work
        "能去不|能去吗|去得了|去得不|得闲|有空吗|走得开|抽出空|抽得出空|搞得赢|来得及|赶得上",
    ),
    "money": (
        "pay|paid|paying|payment|payments|invoice|invoices|invoicing|bill|bills|billing|budget|price|prices|"
        "cost|costs|money|salary|expense|expenses|reimburse|reimbursement|bank|card|paypal|savings|afford|"
        "cheap|expensive|tax|taxes|refund|quote|fee|fees|accounting|bookkeeping|payroll|cash|rent|mortgage|debt|loan|"
        "spending|income|pension|emi|emis|bonus|save|saving",
        "钱|付款|收款|付|账|发票|报销|预算|价格|工资|货款|结算|月结|支付宝|微信支付|转账|省钱|贵|便宜|费|税|"
        "退款|报价|收费|现金|存款|花销|开销|开支|房租|房贷|月供|水电|存钱|攒钱|攒|生活费|年终奖|收银|对账|流水",
    ),
    "outdoors": (
        "outdoor|outdoors|outside|sun|sunny|rain|raining|weather|hike|hiking|beach|mountain|mountains|snow|"
        "heat|cold|camping|garden|park|trail|camp|farm|bee|wasp|sting|insect|bug|snake|spider|tick|mosquito",
        "户外|外景|太阳|雨|天气|山|海边|爬山|徒步|露营|雪|高温|冷|公园|登山|行山|海拔|高原|热|晒|虫|蚊|蜜蜂|马蜂|蛇|"
        "蜘蛛|蟑螂|曱甴|野外|农家乐",
    ),
    "sport": (
        "gym|running|marathon|race|training|train for|yoga|swim|swimming|football|soccer|basketball|"
        "tennis|golf|climbing|fan|fans|match|season|workout|fitness|pilates|crossfit",
        "健身|跑步|马拉松|游泳|球|瑜伽|比赛|锻炼|运动|球迷|赛季",
    ),
    "arts": (
        "music|musician|instrument|band|choir|sing|singing|singer|guitar|piano|cello|violin|drums|ukulele|"
        "dance|dancing|salsa|paint|painting|drawing|perform|performance|talent show|open mic|concert|gig|"
        "knit|knitting|crochet|pottery|hobby|hobbies|song|songs|album|playlist|tabla|sitar|flute|saxophone|"
        "trumpet|harp|harmonica|accordion|clarinet|banjo|mandolin|bass guitar|recital",
        "乐器|唱歌|合唱|吉他|钢琴|尤克里里|跳舞|舞蹈|画画|演出|表演|节目|才艺|晚会|书法|相声|评书|爱好|歌|歌手|演唱会|"
        "音乐|专辑|乐队|二胡|古筝|琵琶|笛子|萨克斯|小提琴",
    ),
    "study": (
        "exam|exams|test|revision|revise|study|studying|studies|course|courses|module|modules|degree|masters|"
        "phd|university|college|lecture|lectures|tutor|homework|assignment|assignments|essay|essays|"
        "thesis|dissertation|semester|grades|certification|certificate|qualification|cpa|cfa|acca|gmat|gre|"
        "ielts|toefl|bar exam|open university|night school|coursework",
        "考试|备考|复习|考研|考证|证书|课程|学分|论文|毕业|学位|读研|读博|大学|专业|作业|科目|报名|注会|一建|二建|一注|"
        "雅思|托福|四级|六级|教资|刷题|真题|网课|导师|组会",
    ),
    "games": (
        "game|games|gaming|gamer|console|playstation|xbox|nintendo|steam|anime|manga|cosplay|comic con|"
        "esports|boardgame|boardgames|board game|board games|d&d|dungeons",
        "游戏|手游|端游|主机|动漫|二次元|漫展|cos|番剧|抽卡|原神|王者荣耀|和平精英|英雄联盟|桌游|剧本杀|黑神话",
    ),
    "holiday": (
        "holiday|holidays|vacation|christmas|xmas|thanksgiving|easter|new year|half term|spring break|"
        "annual leave|time off|long weekend|bank holiday|diwali|eid|hanukkah|ramadan|lunar new year",
        "假期|放假|寒假|暑假|春节|过年|年夜饭|除夕|国庆|五一|中秋|端午|清明|元旦|年假|休假|调休|小长假",
    ),
    "devices": (
        "computer|laptop|pc|mac|macbook|windows|software|app|apps|excel|powerpoint|slides|deck|"
        f"spreadsheet|spreadsheets|template|templates|printer|phone|android|tablet|ipad|keyboard|monitor|{_PHONE_MAKES}",
        f"电脑|笔记本|软件|文档|表格|课件|ppt|excel|wps|office|幻灯片|模板|打印机|手机|平板|键盘|显示器|安卓|苹果手机|{_ZH_PHONE_MAKES}",
    ),
    # the user's own vehicle, by its kind or its make: "Picked up a secondhand Kia Niro", "换了台埃安Y"
    "vehicle": (
        "car|cars|van|truck|suv|pickup|minivan|hatchback|sedan|motorbike|motorcycle|drive|driving|drove|"
        f"licence|license|parking|mileage|petrol|diesel|fuel|tyres|tires|brakes|dealer|dealership|{MAKES}|"
        # (how far a trip is each way, and filling up or charging on the road, ask of the car)
        "estate|wagon|ev|hybrid|charging|charger|mpg|gas|fill up|each way|transmission|gearbox|clutch|engine|mechanic|"
        "odometer|radiator|timing belt",
        f"开车|车子|车位|停车|加油|充电桩|油车|电车|新车|旧车|老车|二手车|自驾|驾照|代步|辆|续航|油耗|充电|加油站|"
        f"{_ZH_CAR_MAKES}",
    ),
    "language": (
        "language|languages|english|spanish|french|german|chinese|mandarin|cantonese|japanese|korean|"
        "portuguese|italian|arabic|hindi|translate|translation|speak|speaks|accent|plain english|jargon",
        "语言|英文|英语|中文|普通话|粤语|日语|韩语|法语|德语|西班牙语|翻译|方言|口语",
    ),
}

_EN_WORD: Final = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")
# A capitalised word inside a sentence is a name ("Commercial Drive", "Git LFS").
_SENTENCE_ENDS: Final = ".!?:;\n-–"
MAX_FACET_CHARS: Final = 2000
"""A text is read for facets up to this many characters: a long paste is known by its head."""
# Where one is from: "我是大理人", "他是东北人".
_ZH_ORIGIN: Final = re.compile(r"是[\u4e00-\u9fff]{2,3}人(?![员士物力手])")
_ENDINGS: Final = (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"))


_Table = dict[str, frozenset[str]]


@functools.cache  # compiled on first use, not at import: most processes never read a facet
def _tables() -> tuple[_Table, _Table, re.Pattern[str], _Table, re.Pattern[str]]:
    words: dict[str, set[str]] = {}
    phrases: dict[str, set[str]] = {}
    han: dict[str, set[str]] = {}
    for name, (en, zh) in FACETS.items():
        for w in en.split("|"):
            (phrases if " " in w else words).setdefault(w, set()).add(name)
        for w in zh.split("|"):
            han.setdefault(w, set()).add(name)

    def alternation(table: Mapping[str, set[str]]) -> str:
        return "|".join(re.escape(w) for w in sorted(table, key=len, reverse=True))

    def frozen(table: Mapping[str, set[str]]) -> _Table:
        return {w: frozenset(v) for w, v in table.items()}

    return (
        frozen(words),
        frozen(phrases),
        re.compile(rf"\b(?:{alternation(phrases)})\b"),
        frozen(han),
        re.compile(alternation(han)),
    )


def _word_facets(words: _Table, word: str) -> frozenset[str] | None:
    hit = words.get(word)
    if hit is not None:
        return hit
    for ending, base in _ENDINGS:
        if len(word) > len(ending) + 2 and word.endswith(ending):
            hit = words.get(word[: -len(ending)] + base)
            if hit is not None:
                return hit
    return None


# What one has one of at a time, named by its kind or its make (not by driving or calling), and
# one's own job: a change that names one replaces the note that names the one before.
_OWNED: Final = {
    "vehicle": (
        rf"\b(?:car|van|truck|suv|pickup|minivan|hatchback|sedan|estate|motorbike|motorcycle|{MAKES})\b",
        # ("辆" counts vehicles only: "开的是辆二手朗逸")
        # ("开的是" is what one drives: "开的是坦克300")
        f"辆|车子|油车|电车|新车|旧车|老车|二手车|代步车|那台车|越野车|轿车|皮卡|开的是|{_ZH_CAR_MAKES}",
    ),
    "phone": (
        # ("phone" alone is as often the verb: "I phone my sister")
        rf"\b(?:(?:my|our|new|old|the|a)\s+phone|{_PHONE_MAKES})\b",
        f"手机|{_ZH_PHONE_MAKES}",
    ),
    # the user's own job, told as theirs ("I'm a civil engineer", "I work as…", "我在…上班")
    "career": (
        rf"\bI(?:'m|’m|\s+am)\s+(?:a|an)\s+(?:[\w-]+\s+){{0,2}}(?:{OCCUPATIONS}|tech)\b|\bI\s+work\s+(?:as|at|for)\b"
        r"|\bmy\s+(?:new\s+)?job\b|(?:\bI(?:'ve|’ve|\s+have)?\s+|^|[:!.—–-]\s*)(?:took|taken|got|started|accepted|landed)\s+"
        r"(?:a|an|the)\s+"
        r"(?:[\w-]+\s+){0,3}?(?:job|position|post)\b",
        r"我(?:是|在)[^,，。;；]{0,14}(?:上班|工作|当|做)|我是(?:做|干)[^,，。;；]{1,8}的|我的工作|把我调|我被调|调我去"
        r"|^(?:我)?(?:调岗|转岗|跳槽|辞职)",
    ),
}
ONE_AT_A_TIME: Final = frozenset(FACETS) - {"health"}
"""The facets of life where what holds now is one thing (a job, a home, a sport, a school) that a
change replaces; conditions of health add up rather than replace one another."""
OWNED_KINDS: Final = frozenset(_OWNED)
"""The kinds :func:`owned` names; a fact keyed by one ("phone") is that thing."""
_OWNED_RE: Final = {kind: (re.compile(en, re.I), re.compile(zh, re.I)) for kind, (en, zh) in _OWNED.items()}


@functools.lru_cache(maxsize=8192)  # asked of the same notes by every search of the fact index
def owned(text: str) -> frozenset[str]:
    """The kinds of thing one has one of at a time (``vehicle``, ``phone``, one's own job:
    ``career``) `text` names.

    >>> sorted(owned("Picked up a secondhand Kia Niro")), sorted(owned("电车换掉了，现在开理想L6"))
    (['vehicle'], ['vehicle'])
    >>> owned("I drive up to Mam's every Wednesday"), owned("夜里开车看灯都是发散的")
    (frozenset(), frozenset())
    """
    text = text[:MAX_FACET_CHARS]
    return frozenset(kind for kind, (en, zh) in _OWNED_RE.items() if en.search(text) or zh.search(text))


def _opens_sentence(text: str, at: int) -> bool:
    """Whether the word at `at` opens a sentence (nothing but spaces after a sentence's end, or
    the text's start, before it); a few characters back are enough to tell."""
    window = text[max(0, at - 8) : at]
    before = window.rstrip()
    if not before:
        return at == len(window)  # only spaces back to the start of the text
    return before[-1] in _SENTENCE_ENDS


def _without_accents(text: str) -> str:
    """`text` with the accents of Latin letters dropped: "fiancée" and "café" are words of the
    table."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=8192)
def facets(text: str) -> frozenset[str]:
    """The facets `text` touches (see :data:`FACETS`); empty when it names none."""
    words, phrases, phrase_pattern, han, han_pattern = _tables()
    text = _without_accents(prepare_text(text[:MAX_FACET_CHARS]))
    low = text.casefold()
    found: set[str] = set()
    chinese = has_han(low)
    for m in _EN_WORD.finditer(text):
        word = m.group().casefold()
        # (Chinese writes no capitals: a Latin word in it is read, "帮我写段LinkedIn简介")
        if not chinese and m.group()[0].isupper() and not _opens_sentence(text, m.start()) and word not in _MAKE_WORDS:
            continue
        hit = _word_facets(words, word)
        if hit is not None:
            found |= hit
    if " " in low:
        for m in phrase_pattern.finditer(low):
            found |= phrases[m.group()]
    if chinese:
        for m in han_pattern.finditer(low):
            found |= han[m.group()]
        if _ZH_ORIGIN.search(low):
            found.add("home")
    return frozenset(found)
