"""A request's keywords: stopwords and filler out, identifiers whole, instructions masked."""

from __future__ import annotations

from trimem.text.words import instruction_spans, keywords, kin_words, mask, name_words, trim_punctuation


def test_keywords() -> None:
    assert keywords("Which port did ERR_CONNECTION_REFUSED hit on node.js:8080?", lowercase=True) == [
        "port",
        "err_connection_refused",
        "hit",
        "node.js:8080",
    ]
    assert keywords("请帮我看一下Docker的端口", lowercase=False) == ["Docker", "端口"]
    assert keywords("我正在使用的服务", lowercase=False) == ["正在使用", "服务"]  # kept words stay whole
    assert keywords("the the THE", lowercase=True) == []


def test_dialect_pronouns_and_question_words_are_filler() -> None:
    # 俺/额 are 我, 咋 is 怎么, 啥子/么子/咩 are 什么: a request in dialect keeps only what it is about
    assert keywords("闺女过生日要去吃麻辣火锅，俺自个儿能点点啥", lowercase=True) == [
        "闺女过生日要去吃麻辣火锅",
        "点点",
    ]
    assert keywords("额咋去医院", lowercase=True) == ["去医院"]
    assert keywords("男朋友生日送咩好", lowercase=True) == ["男朋友生日送", "好"]
    # a word that holds such a character stays whole
    assert keywords("查一下账户余额和额度", lowercase=True) == ["账户余额", "额度"]


def test_kin_words_name_people_by_kinship_only() -> None:
    assert kin_words("My son Tom and his wife live in Leeds; my mother-in-law visits.") == [
        "son",
        "wife",
        "mother-in-law",
    ]
    assert kin_words("俺闺女给老伴买了个手机") == ["闺女", "老伴"]
    # a word that holds a kin word is not one ("Johnson", "parenthood"), nor is a name
    assert kin_words("Johnson's parenthood podcast with Isla") == []


def test_instructions_are_masked() -> None:
    text = "write me a quick script that reads the Nginx log"
    spans = instruction_spans(text)
    assert [text[a:b] for a, b in spans] == ["write me a quick script"]
    assert keywords(mask(text, spans), lowercase=True) == ["reads", "nginx", "log"]
    zh = "帮我写一个脚本读取日志"
    assert keywords(mask(zh, instruction_spans(zh)), lowercase=False) == ["读取日志"]
    assert len(mask(text, spans)) == len(text)


def test_trim_punctuation() -> None:
    assert trim_punctuation("？？ what  now ！") == "what now"


def test_names_and_small_words_are_told_apart_only_where_case_tells() -> None:
    from trimem.text.words import name_words, small_words

    assert name_words("we go through Barton Springs Mill now, says Jo") == ["Barton", "Springs", "Mill", "Jo"]
    assert name_words("Lukas is my partner.") == []  # a sentence's first word may be any word
    assert small_words("my partner Lukas is German") == ["my", "partner", "is"]
    assert small_words("I teach chem") == ["teach", "chem"]
    assert small_words("im off to barton springs") is None


def test_a_word_of_a_name_may_have_letters_beyond_ascii() -> None:
    assert name_words("What's the name of Théo's teacher? Zoë knows.") == ["Théo"]
