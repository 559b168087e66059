"""Engine primitives of the memory lifecycle: use counts (touch), effective importance and
decay from last use in the search call, near-duplicate detection at add, bulk columns."""

from __future__ import annotations

import numpy as np
import pytest

from trimem import HybridIndex, InvalidArgumentError, Store

DAY = 86_400_000_000
T0 = 1_790_000_000_000_000


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def keyword_index() -> HybridIndex:
    idx = HybridIndex(0)
    idx.add(
        ids=[1, 2],
        texts=["deploy the billing service", "deploy the billing service today"],
        timestamps=[T0, T0],
        namespaces=["u", "u"],
        importance=[0.2, 0.2],
    )
    return idx


def test_touch_counts_and_effective_importance_by_hand() -> None:
    idx = keyword_index()
    assert idx.touch([1, 1, 1, 99], T0 + DAY) == 3  # unknown ids are skipped
    rec = idx.get(1)
    assert rec is not None and (rec.accesses, rec.mentions, rec.last_access) == (3, 0, T0 + DAY)
    hits = idx.search("billing", k=2, mode="bm25", importance_weight=0.01)
    by_id = dict(zip(hits.ids.tolist(), hits.importance.tolist()))
    assert by_id[1] == pytest.approx(0.2 + 0.3)  # base + 0.1 per use
    assert by_id[2] == pytest.approx(0.2)
    assert hits.accesses.tolist()[hits.ids.tolist().index(1)] == 3
    assert hits.base_importance.tolist() == pytest.approx([0.2, 0.2])
    # The reinforcement is capped (0.5 by default) and the total at 1.
    idx.touch([1] * 10, T0 + DAY)
    hits = idx.search("billing", k=2, mode="bm25", importance_weight=0.01)
    assert dict(zip(hits.ids.tolist(), hits.importance.tolist()))[1] == pytest.approx(0.7)
    hits = idx.search("billing", k=2, mode="bm25", importance_weight=0.01, reinforce_step=0.5, reinforce_cap=2.0)
    assert dict(zip(hits.ids.tolist(), hits.importance.tolist()))[1] == pytest.approx(1.0)


def test_mention_counts_like_a_duplicate() -> None:
    idx = keyword_index()
    assert idx.mention([1, 1, 99], T0 + 2 * DAY) == 2  # unknown ids are skipped
    rec = idx.get(1)
    assert rec is not None and (rec.accesses, rec.mentions, rec.last_access) == (0, 2, T0 + 2 * DAY)
    hits = idx.search("billing", k=2, mode="bm25", importance_weight=0.01)
    assert dict(zip(hits.ids.tolist(), hits.importance.tolist()))[1] == pytest.approx(0.2 + 0.2)  # 0.1 per mention
    idx.mention([1], T0)  # an older use never moves the last use back
    assert idx.get(1).last_access == T0 + 2 * DAY


def test_reinforced_record_overtakes_an_equally_relevant_unused_one() -> None:
    idx = HybridIndex(0)
    idx.add(
        ids=[1, 2],
        texts=["postgres connection pool size", "postgres connection pool size"],
        timestamps=[T0, T0],
        namespaces=["u", "u"],
        importance=[0.5, 0.5],
    )
    plain = idx.search("postgres pool", k=2, mode="bm25", importance_weight=0.01)
    assert plain.ids.tolist() == [1, 2]  # a tie goes to the smaller id
    idx.touch([2, 2], T0)
    hits = idx.search("postgres pool", k=2, mode="bm25", importance_weight=0.01)
    assert hits.ids.tolist() == [2, 1]
    # By hand: equal BM25 scores share rank 1, so id 2 wins by the importance gap alone.
    assert hits.bm25_ranks.tolist() == [1, 1]
    assert hits.scores[0] - hits.scores[1] == pytest.approx(0.01 * (0.7 - 0.5), rel=1e-3)
    # Without the importance term, ranking is plain relevance.
    assert idx.search("postgres pool", k=2, mode="bm25").ids.tolist() == [1, 2]


def test_decay_runs_from_last_use_unless_told_otherwise() -> None:
    idx = keyword_index()
    now = T0 + 30 * DAY
    hits = idx.search("billing", k=2, mode="bm25", half_life=30 * DAY, now=now)
    assert hits.decay.tolist() == pytest.approx([0.5, 0.5])
    idx.touch([2], now)
    # A weight large enough to outweigh the two records' small difference in BM25 (length).
    hits = idx.search("billing", k=2, mode="bm25", half_life=30 * DAY, now=now, decay_weight=0.005)
    assert dict(zip(hits.ids.tolist(), hits.decay.tolist())) == pytest.approx({1: 0.5, 2: 1.0})
    assert hits.ids.tolist()[0] == 2  # the fresh one wins
    hits = idx.search("billing", k=2, mode="bm25", half_life=30 * DAY, now=now, decay_from_use=False)
    assert hits.decay.tolist() == pytest.approx([0.5, 0.5])


def test_bad_reinforcement_parameters_are_refused() -> None:
    idx = keyword_index()
    with pytest.raises(InvalidArgumentError):
        idx.search("billing", reinforce_step=-0.1)
    with pytest.raises(InvalidArgumentError):
        idx.search("billing", reinforce_cap=float("nan"))


def test_dedup_exact_near_and_distinct() -> None:
    idx = HybridIndex(0)
    base = "We moved the billing service from Heroku to Fly.io last Tuesday after the outage"
    idx.add(ids=[1], texts=[base], timestamps=[T0], namespaces=["u"])
    out = idx.add(
        ids=[2, 3, 4, 5],
        texts=[
            "we moved the billing service from heroku to fly.io last tuesday, after the outage!",  # normalised equal
            "We moved the billing service from Heroku to Fly.io on Tuesday after the outage",  # near
            "My favourite editor is Vim with a dark theme",  # different
            "My favourite editor is Vim with a dark theme",  # duplicates the row before it
        ],
        timestamps=[T0 + 1, T0 + 2, T0 + 3, T0 + 4],
        namespaces=["u"] * 4,
        dedup=(0.8, 0.9),
    )
    assert out == [1, 1, None, 4]
    assert sorted(idx.ids().tolist()) == [1, 4]
    rec = idx.get(1)
    assert rec is not None and rec.mentions == 2 and rec.last_access == T0 + 2
    # Another namespace never deduplicates against this one.
    assert idx.add(ids=[6], texts=[base], timestamps=[T0], namespaces=["v"], dedup=(0.8, 0.9)) == [None]
    # Without dedup the call returns None and inserts.
    assert idx.add(ids=[7], texts=[base], timestamps=[T0], namespaces=["u"]) is None
    assert 7 in idx


def test_dedup_without_reinforce_reports_and_counts_nothing() -> None:
    """`reinforce=False` finds the same duplicates but leaves their use counts to the caller."""
    idx = HybridIndex(0)
    base = "We moved the billing service from Heroku to Fly.io last Tuesday after the outage"
    idx.add(ids=[1], texts=[base], timestamps=[T0], namespaces=["u"])
    out = idx.add(
        ids=[2, 3],
        texts=[base.lower(), "an unrelated note about lunch"],
        timestamps=[T0 + 5, T0 + 6],
        namespaces=["u", "u"],
        dedup=(0.8, 0.9),
        reinforce=False,
    )
    assert out == [1, None]
    rec = idx.get(1)
    assert rec is not None and (rec.mentions, rec.last_access) == (0, 0)
    assert idx.mention([1], T0 + 5) == 1
    rec = idx.get(1)
    assert rec is not None and (rec.mentions, rec.last_access) == (1, T0 + 5)


def test_dedup_cosine_vetoes_a_textual_match() -> None:
    idx = HybridIndex(3)
    text = "restart the api gateway on node three"
    idx.add(ids=[1], texts=[text], timestamps=[T0], namespaces=["u"], vectors=unit([1, 0, 0])[None, :])
    far = unit([0, 1, 0])[None, :]
    assert idx.add(ids=[2], texts=[text], timestamps=[T0], namespaces=["u"], vectors=far, dedup=(0.8, 0.9)) == [None]
    near = unit([1, 0.05, 0])[None, :]
    assert idx.add(ids=[3], texts=[text], timestamps=[T0], namespaces=["u"], vectors=near, dedup=(0.8, 0.9)) in (
        [1],
        [2],
    )


def test_dedup_forgets_deleted_records_and_bad_params_change_nothing() -> None:
    idx = HybridIndex(0)
    idx.add(ids=[1], texts=["alpha beta gamma delta"], timestamps=[T0], namespaces=["u"])
    idx.delete([1])
    assert idx.add(ids=[2], texts=["alpha beta gamma delta"], timestamps=[T0], namespaces=["u"], dedup=(0.8, 0.9)) == [
        None
    ]
    with pytest.raises(InvalidArgumentError):
        idx.add(ids=[3], texts=["x"], timestamps=[T0], namespaces=["u"], dedup=(1.5, 0.9))
    assert 3 not in idx


def test_usage_and_fingerprints_survive_a_snapshot(tmp_path) -> None:
    idx = keyword_index()
    idx.touch([1], T0 + 5)
    with Store(tmp_path / "s") as st:
        st.checkpoint([("i", idx)], b"")
    with Store(tmp_path / "s") as st:
        back = st.take_index("i")
    assert back is not None
    rec = back.get(1)
    assert rec is not None and (rec.accesses, rec.last_access) == (1, T0 + 5)
    assert back.add(
        ids=[9], texts=["Deploy the billing service"], timestamps=[T0], namespaces=["u"], dedup=(0.8, 0.9)
    ) == [1]


def test_columns_match_the_records() -> None:
    idx = keyword_index()
    idx.add(ids=[3], texts=["other"], timestamps=[T0 + DAY], namespaces=["w"], importance=[0.9])
    idx.touch([2], T0 + 7)
    cols = idx.columns(namespace="u")
    assert sorted(cols["ids"].tolist()) == [1, 2]
    order = np.argsort(cols["ids"])
    assert cols["accesses"][order].tolist() == [0, 1]
    assert cols["last_access"][order].tolist() == [0, T0 + 7]
    assert cols["importance"][order].tolist() == pytest.approx([0.2, 0.2])
    assert cols["bytes"][order].tolist() == [len("deploy the billing service"), len("deploy the billing service today")]
    assert idx.columns(time_range=(T0 + DAY, T0 + 2 * DAY))["ids"].tolist() == [3]
    assert idx.columns(namespace="nobody")["ids"].tolist() == []
