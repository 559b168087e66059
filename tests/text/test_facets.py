"""Facets: the parts of a life a text is about, read from everyday words in either language."""

from __future__ import annotations

import pytest

from trimem.text.facets import FACETS, facets, owned


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("How should I get to the games expo in Seattle?", {"travel", "games"}),
        ("I can't drive, never got my licence.", {"travel", "vehicle"}),
        ("Most days I'm commuting by bike.", {"travel"}),  # an -ing ending
        ("Seasonal allergies wreck me every spring.", {"health"}),
        ("Find a physio near home.", {"health", "home"}),
        ("My daughter Holly is expecting her first baby.", {"family"}),
        ("Who should I pass the supplier's invoices to?", {"people", "money", "trade"}),
        ("火把节想回家，帮我查下车票", {"home", "travel"}),
        ("我是大理人，现在在昆明做婚纱摄影。", {"home"}),  # where one is from
        ("我对紫外线过敏，太阳晒久了胳膊上起红疹。", {"health", "outdoors"}),
        ("工作室收款都走支付宝商家码", {"money", "trade"}),
        ("帮我写一封开发信，发给新找到的进口商", {"trade"}),  # what the user does for a living
        ("I run a small bakery in Leith.", {"trade"}),
        ("我喜欢喝精酿", {"drink"}),
        ("朋友出差，让我帮她照看家里的宠物", {"home", "travel", "pets"}),
        # a diet is about food, whatever condition it comes of
        ("I'm pescatarian, have been since uni.", {"food"}),
        ("Type 2 diabetic, trying to keep my sugar down.", {"food", "health"}),
        ("我有慢性胃炎，冰的都不敢碰", {"food", "health"}),
        ("Been off cigarettes three weeks now.", {"health"}),
        ("My gf is doing her masters abroad.", {"family", "study"}),
        ("家里那只毛孩子没人管", {"home", "pets"}),
        ("We've a greyhound called Lady.", {"pets"}),
        ("I sing alto in a choir on Tuesdays.", {"arts"}),  # what one makes or plays for love
        ("晚会要出个节目，我能表演啥", {"arts"}),
        # everyday names for one's own people and pets, and what one does for a living
        ("my other half's birthday is next week", {"family"}),
        ("a photo of our furball asleep in the sun", {"pets", "outdoors"}),
        ("我家主子把花瓶推下来了", {"home", "pets"}),
        ("write me a short bio for my linkedin", {"career"}),
        ("I'm a paediatric nurse at Leeds General", {"career"}),
        ("帮我改改简历", {"career"}),
        ("My fiancée works nights as a dispatcher", {"family", "career"}),  # accents dropped
        # who looks after the pets while one is away, and the pets called by nicknames
        ("Going away for four days, what should I put in the note for the sitter?", {"pets"}),
        ("五一要出去三天，家里那个小短腿咋安排", {"home", "pets", "holiday"}),
        # whether one is free is a question of one's hours of work
        ("which nights am i actually free?", {"career"}),
        ("闺蜜约我礼拜六去长隆玩一整天，我去得了不", {"career"}),
        # what to watch out for is what one's body allows
        ("同事约我周末去游泳，有啥子要注意的？", {"sport", "health", "people"}),
        ("Camping in Arizona next month, what should I watch out for?", {"health", "outdoors"}),
        # how to get somewhere, and a fear of it
        ("whats my best way of getting there", {"travel"}),
        ("a day trip to Dingle, about 230 km each way", {"travel", "vehicle"}),
        # what bites and stings out of doors
        ("Allergic to bee stings, got stung at a school camp", {"health", "outdoors"}),
        ("我好怕虫，尤其系曱甴", {"health", "outdoors"}),
        # what one spends and saves
        ("帮我算算这个月固定开销，房租水电话费这些", {"money"}),
        ("How much should I throw at my debt each month?", {"money"}),
        ("Scared to death of flying, been on a plane once", {"health", "travel"}),
        # studies, games, holidays, devices and software, songs: what a request and a note share
        ("帮我做一个到考试前的复习计划", {"study"}),
        ("这周末有个漫展，帮我想想出啥 cos", {"games"}),
        ("寒假快到了，帮我规划一下春节前后的安排", {"holiday"}),
        ("我电脑上装的是WPS，Office那套用不惯", {"devices"}),
        ("推荐几首日语歌", {"arts", "language"}),
        # work as people say it, and home in Cantonese
        ("单位通知去体检，得跟上班错开", {"health", "career"}),
        ("Can you swap my Saturday shift?", {"career"}),
        # time off is asked of one's employer
        ("Help me ask for two weeks off in August", {"career"}),
        ("下周三要去看牙，帮我写个请假邮件", {"health", "career"}),
        ("明天得去县医院拿药 咋去方便", {"health", "travel"}),  # how to get there
        ("屋企楼下开咗间茶餐厅", {"home", "food", "drink"}),
        ("we're doing oysters and prawns on the barbie", {"food"}),  # what is eaten
    ],
)
def test_everyday_words_name_the_facets(text: str, wanted: set[str]) -> None:
    assert facets(text) == wanted


def test_a_latin_word_in_chinese_is_read_whatever_its_case() -> None:
    # Chinese writes no capitals: "LinkedIn" there is no sign of a name to skip
    assert facets("帮我写段LinkedIn个人简介") == {"career"}
    assert facets("Write my LinkedIn bio") == {"career"}  # "bio" is read; the name is not


def test_a_name_is_not_read_for_its_words() -> None:
    # "Drive" and "Park" name a street and a place here, not a way of getting around
    assert facets("I live just off Commercial Drive, near Central Park.") == {"home"}
    assert facets("Drive me home.") == {"travel", "vehicle", "home"}  # the first word of a sentence is read


def test_times_name_no_facet_and_plain_talk_names_none() -> None:
    # a day or an hour is in nearly every request and habit: it tells nothing of which fact is needed
    for text in ["Every Monday at 9am", "周三晚上七点半", "ok thanks", "", "The proxy runs on Linux"]:
        assert facets(text) == frozenset(), text


def test_every_facet_has_words_in_both_languages() -> None:
    for name, (en, zh) in FACETS.items():
        assert en.split("|") and zh.split("|"), name
        assert all(w == w.lower() and w.strip() == w for w in en.split("|")), name


def test_a_long_paste_is_read_by_its_head() -> None:
    from trimem.text.facets import MAX_FACET_CHARS

    filler = "Lorem Ipsum Dolor Sit Amet. " * (MAX_FACET_CHARS // 20)
    assert facets(filler + "I can't drive.") == frozenset()
    assert facets("I can't drive. " + filler) == {"travel", "vehicle"}


def test_a_make_is_read_though_written_as_a_name() -> None:
    # a make of car or phone is the thing itself, not a name to skip
    assert facets("Picked up a secondhand 2021 Kia Niro, fully electric.") == {"vehicle"}
    assert "devices" in facets("Still on a Huawei P30, no Google apps on it.")
    assert "vehicle" in facets("那台油车卖了，换了台埃安Y") and "vehicle" in facets("开的是辆二手朗逸")


def test_what_one_owns_one_at_a_time_is_named_by_kind_or_make_not_by_use() -> None:
    assert owned("I drive a 2017 Honda Odyssey") == {"vehicle"}
    assert owned("finally got a new phone, Samsung S24") == {"phone"}
    assert owned("手机掉水里报废了，换了华为Pura 70") == {"phone"}
    assert owned("开的是坦克300，走土路还行") == owned("越野车卖了") == {"vehicle"}
    # one's own job, told as one's own; someone else's is not
    assert owned("I'm a civil engineer, mostly stormwater") == owned("我在天河一家宠物店做美容") == {"career"}
    assert owned("Eli's mom took a job in Edmonton") == owned("我老公在海康上班") == frozenset()
    assert owned("公司把我调到质检组了，白天上班") == owned("调岗了！现在在控制中心当行调") == {"career"}
    assert owned("big news: took the site lead job") == owned("I'm a blade tech out on Horns Rev") == {"career"}
    # driving, phoning, and a word that only looks like a make name nothing owned
    assert owned("I drive up every Wednesday") == owned("Sundays I phone my sister") == frozenset()
    assert owned("嫌不吉利，早习惯了") == owned("夜里开车看灯都是发散的") == frozenset()
