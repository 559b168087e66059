"""What asks: a question or a request to the assistant, told from a statement; a question for a
piece of the asker's own life, told from a task or advice."""

from __future__ import annotations

import pytest

from trimem.text.asking import asks_for_fact, is_request


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Can you suggest names for a cursed sword?", True),
        ("Please book a table for four.", True),
        ("Write a haiku about rain", True),
        ("帮我写个给老同学的生日祝福", True),
        ("我的无人机是什么型号？", True),
        ("I'm allergic to cats. Can you check the menu?", False),  # it also tells something
        ("Our dog's name is Biscuit.", False),
        ("我每天坐地铁十号线上下班", False),
        ("上个月 Docker 里跑 Node 脚本的端口号是多少", True),  # no question mark: still a question
        ("你们几点开门", True),
        ("我什么都吃，不挑。", False),
        # questions in dialect and as A-not-A: "么子" (Hunan), "咩" and "去唔去" (Cantonese)
        ("跟病人家属沟通有么子好的话术", True),
        ("我妹学的么子专业，你记得啵", True),
        ("明天去唔去饮茶", True),
        ("呢个系咩嚟㗎", True),
        ("这家店好不好吃", True),
        ("我么子都恰，不挑", False),
        ("老人冬天脚冷得不得了", False),  # "不得了": very, no question
        # how long and how old, asked without a mark; "几年前" and "做了几年" tell
        ("电瓶车电瓶一般几年换", True),
        ("小孩子多大可以开始学游泳", True),
        ("我做了几年会计，现在转行了", False),
        ("我几年前在深圳待过", False),
        # someone else helped, or the user treats someone: no request ("请客户吃饭" is no "please")
        ("儿子帮我们在园区买了套电梯房，十二楼", False),
        ("请客户吃饭我一般都带去那家清真馆子", False),
        ("请推荐个吃饭的地方", True),
        ("帮我们订一间会议室", True),
        ("帮我把这个改了", True),
        ("", False),
    ],
)
def test_a_request_to_the_assistant_is_told_from_a_statement(text: str, asks: bool) -> None:
    assert is_request(text) is asks


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("when's my sister's wedding again?", True),
        ("how many acres did I tell you we farm", True),  # no question mark
        ("Which gym am I a member of?", True),
        ("What grade is my student Emma working towards?", True),
        ("When did Melanie paint a sunrise?", False),  # of someone else's life
        ("What grade is Emma working towards?", False),
        ("ok. and who is my chief pilot?", True),  # any sentence
        ("我驾驶证啥时候到期来着？", True),
        ("我男朋友是做什么工作的？", True),
        ("店里那台冷柜是哪年买的来着", True),
        ("卡罗琳什么时候去的支持小组？", False),
        ("我儿子今年几岁来着", True),
        ("What should I cook for the two of us tonight?", False),  # advice
        ("How do I get to the Trafford Centre?", False),
        ("Draft a message to the landlord about the heater.", False),  # a task
        ("Can you set the kickoff meeting for 8:30?", False),
        ("帮我查一下我上次报税交了多少", False),  # a task, though it names an amount
        ("开车犯困，有啥提神的法子", False),
        ("我什么时候去健身比较顺路？", False),  # advice, though it asks "when"
        ("When's a good time for me to call my artist?", False),
        ("我什么都吃，不挑。", False),  # "什么…都": anything, not a question
        ("I'm pescatarian, have been since uni.", False),
        ("", False),
    ],
)
def test_a_question_for_a_fact_is_told_from_a_task_or_advice(text: str, asks: bool) -> None:
    assert asks_for_fact(text) is asks
