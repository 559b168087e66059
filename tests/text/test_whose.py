"""Whose change a message tells: the user's own, or someone else's named at its opening."""

from __future__ import annotations

import pytest

from trimem.text.whose import mentions, told_of

NOTES = ["My husband Jobin works in IT support.", "Jobin's mother stays with us in winter.", "I'm an ICU nurse."]


@pytest.mark.parametrize(
    ("change", "who"),
    [
        ("Jobin changed jobs, he is now at a software company", ("Jobin", "husband")),  # and what the user calls him
        ("my wife Marion passed away three years ago", ("wife", "Marion")),
        ("Mum's moved into a flat in York", ("Mum",)),  # a kin word is someone, however written
        ("儿子辞职回苏州了", ("儿子",)),
        ("我女儿考上研究生了", ("女儿",)),
    ],
)
def test_someone_elses_change_is_told_of_them(change: str, who: tuple[str, ...]) -> None:
    assert told_of(change, NOTES) == who


@pytest.mark.parametrize(
    "change",
    [
        "I changed jobs, I'm at Glenfield now",
        "we moved to Oadby",
        "Jobin and I moved into the new house",  # a change of the user's own too
        "Sold the boat",  # a capitalised opening word the user never writes as a name
        "Backups moved to Wasabi",  # written small elsewhere: "our backups go to B2"
        "换工作了，现在在广州",
    ],
)
def test_the_users_own_change_or_no_one_is_none(change: str) -> None:
    assert told_of(change, [*NOTES, "Our backups go to B2 every night.", "Sold my bike last year."]) is None


def test_mentions_is_by_whole_word_in_latin_and_anywhere_in_chinese() -> None:
    assert mentions("Truck's a 2014 Ram 1500", "ram")
    assert not mentions("a new program", "Ram")
    assert mentions("老伴王秀兰在小区门口开了个小卖部", "老伴")
