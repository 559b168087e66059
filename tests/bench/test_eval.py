"""`python -m trimem eval`: metrics on hand-computed toys, LoCoMo/SciFact loading and small real runs.

The data tests read ../shared/data (or $TRIMEM_DATA) in place and skip when it is absent; every
run here uses the hashing embedder and caches nothing outside pytest's tmp_path.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from trimem.bench import evaluate as ev
from trimem.embedders import HashingEmbedder

# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def locomo_path(data_dir: Path) -> Path:
    p = data_dir / "locomo10.json"
    if not p.is_file():
        pytest.skip(
            f"LoCoMo data not found ({p}); set TRIMEM_DATA to the directory holding locomo10.json "
            "(default ../shared/data relative to the repository root)"
        )
    return p


@pytest.fixture(scope="session")
def conv30_report(locomo_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One small conversation (conv-30: 369 turns, 105 questions) with the hashing embedder."""
    return ev.evaluate_locomo(
        locomo_path,
        embedder="hashing",
        conversations=["conv-30"],
        cache_dir=tmp_path_factory.mktemp("emb-cache"),
        progress=None,
    )


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(tmp_path / "cache"))


# ------------------------------------------------------------------------------ pure helpers


def test_normalise_evidence_handles_the_malformed_ids() -> None:
    assert ev.normalise_evidence(["D8:6; D9:17"]) == [(8, 6), (9, 17)]
    assert ev.normalise_evidence(["D:11:26"]) == [(11, 26)]
    assert ev.normalise_evidence(["D"]) == []
    assert ev.normalise_evidence(["D9:1 D4:4 D4:6"]) == [(9, 1), (4, 4), (4, 6)]
    assert ev.normalise_evidence(["D1:3", "D1:3", "D01:03"]) == [(1, 3)]  # distinct, numeric
    assert ev.normalise_evidence([]) == []


def test_session_time_parsing() -> None:
    assert ev.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert ev.parse_session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    with pytest.raises(ValueError):
        ev.parse_session_time("sometime in May")


def test_turn_text_has_date_speaker_and_caption() -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turn = {
        "speaker": "Caroline",
        "text": "Look at this!",
        "blip_caption": "a photo of a dog by a mural",
        "query": "not indexed",
        "img_url": ["http://x"],
    }
    assert ev.turn_text(turn, when) == "8 May 2023. Caroline: Look at this! [shares a photo of a dog by a mural]"
    assert ev.turn_text(turn, None, caption=False) == "Caroline: Look at this!"
    assert ev.turn_text({"speaker": "Mel", "text": "Hi"}, when) == "8 May 2023. Mel: Hi"


def test_recall_at_k_by_hand() -> None:
    ranked = [5, 3, 9, 1, 7]
    relevant = {3, 1, 42}  # 42 is never retrieved
    assert ev.recall_at_k(ranked, relevant, 1) == 0.0
    assert ev.recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert ev.recall_at_k(ranked, relevant, 4) == pytest.approx(2 / 3)
    assert ev.recall_at_k(ranked, relevant, 50) == pytest.approx(2 / 3)
    assert ev.recall_at_k(ranked, set(), 10) == 0.0
    assert ev.recall_at_k([], {1}, 10) == 0.0


def test_ndcg_at_10_by_hand() -> None:
    # relevant b (rank 2) and d (rank 4) of three judged documents (z is never retrieved)
    ranked = ["a", "b", "c", "d", "e"]
    gains = {"b": 1.0, "d": 1.0, "z": 1.0}
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ev.ndcg_at_k(ranked, gains, 10) == pytest.approx(dcg / idcg)
    assert ev.ndcg_at_k(ranked, gains, 10) == pytest.approx(0.4982, abs=1e-4)
    # graded gains: the ideal order puts the gain-2 document first
    assert ev.ndcg_at_k(["x", "y"], {"x": 1.0, "y": 2.0}, 10) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    assert ev.ndcg_at_k(["b", "d", "z"], gains, 10) == pytest.approx(1.0)
    assert ev.ndcg_at_k(["a", "c"], gains, 10) == 0.0
    assert ev.ndcg_at_k(["a", "b"], gains, 1) == 0.0  # cut-off respected
    assert ev.ndcg_at_k(["a"], {}, 10) == 0.0


def test_embedding_cache_round_trip(tmp_path: Path) -> None:
    calls: list[int] = []

    class Counting:
        name, dim = "counting hashing/64", 64
        inner = HashingEmbedder(dim=64)

        def __call__(self, texts: list[str]) -> np.ndarray:
            calls.append(len(texts))
            return self.inner(texts)

    first = ev.EmbeddingCache(Counting(), tmp_path)
    a = first(["alpha", "beta", "alpha"])
    assert calls == [2]  # each distinct text embedded once
    assert np.array_equal(a[0], a[2])
    assert len(list(tmp_path.iterdir())) == 2  # one .npy, one .json; nothing else written
    second = ev.EmbeddingCache(Counting(), tmp_path)
    b = second(["beta", "alpha", "gamma"])
    assert calls == [2, 1]  # only "gamma" is new
    assert np.array_equal(b[0], a[1]) and np.array_equal(b[1], a[0])
    assert np.array_equal(b[2], Counting.inner(["gamma"])[0])
    assert ev.EmbeddingCache(Counting(), None)([]).shape == (0, 64)


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(tmp_path / "c"))
    assert ev.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TRIMEM_BENCH_CACHE")
    assert "trimem-eval-cache" in str(ev.default_cache_dir())


def test_tuned_defaults_are_documented() -> None:
    assert ev.TUNING_CONVERSATIONS == ("conv-26", "conv-30")
    doc = ev.__doc__ or ""
    assert "conv-26 and conv-30" in doc and "never used to choose" in doc
    assert ev.CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


# ------------------------------------------------------------------------------ LoCoMo data


def test_locomo_loading(locomo_path: Path) -> None:
    convs = ev.load_locomo(locomo_path)
    assert [c.sample_id for c in convs][:2] == ["conv-26", "conv-30"]
    assert len(convs) == 10
    assert sum(len(c.ids) for c in convs) == 5882
    assert sum(len(c.questions) for c in convs) == 1982  # the data README's count
    assert sum(c.unresolved for c in convs) == 4
    assert sorted({q.category for c in convs for q in c.questions}) == [1, 2, 3, 4, 5]
    conv26 = convs[0]
    # "now" is the last session with turns (session 19), not the dated but empty sessions 20-35
    assert conv26.now == datetime(2023, 10, 22, 9, 55, tzinfo=UTC)
    assert conv26.texts()[0] == "8 May 2023. Caroline: Hey Mel! Good to see you! How have you been?"
    assert "[shares a photo of" in conv26.texts()[4] and "May 2023" not in conv26.texts(what="utterance")[4]
    # a malformed evidence string resolves to both of its turns
    raw = json.loads(locomo_path.read_text(encoding="utf-8"))
    sid, text = next((s["sample_id"], qa["question"]) for s in raw for qa in s["qa"] if "D8:6; D9:17" in qa["evidence"])
    conv = next(c for c in convs if c.sample_id == sid)
    q = next(q for q in conv.questions if q.question == text)
    assert {ev.turn_id(8, 6), ev.turn_id(9, 17)} <= set(q.evidence)
    assert all(len(set(q.evidence)) == len(q.evidence) for c in convs for q in c.questions)
    with pytest.raises(ValueError, match="conv-99"):
        ev.load_locomo(locomo_path, ["conv-99"])


def test_locomo_context_prepends_the_previous_turn(locomo_path: Path) -> None:
    (conv,) = ev.load_locomo(locomo_path, ["conv-30"])
    plain, ctx = conv.texts(), conv.texts(context=1)
    assert ctx[0] == plain[0]  # the first turn of a session has nothing before it
    assert ctx[1].endswith(plain[1]) and ctx[1].startswith(conv.texts(what="utterance")[0])


def test_locomo_one_conversation(conv30_report: dict) -> None:
    r = conv30_report
    assert r["conversations"] == ["conv-30"] and r["questions"] == 105
    assert r["questions_time_filtered"] > 0  # the rewriter found time expressions
    for mode in ev.MODES:
        table = r["results"][mode]
        assert sum(int(table[c]["n"]) for c in ev.CATEGORIES.values() if c in table) == 105
        for row in table.values():
            values = [row[f"recall@{k}"] for k in ev.LOCOMO_KS]
            assert all(0.0 <= v <= 1.0 for v in values)
            assert values == sorted(values), (mode, values)  # recall@k never falls as k grows
    # measured R@10 0.703 / 0.427 / 0.690 (BM25 / hashing vectors / hybrid), hybrid R@50 0.831;
    # floors with margin
    assert r["results"]["bm25"]["overall"]["recall@10"] >= 0.62
    assert r["results"]["vector"]["overall"]["recall@10"] >= 0.30
    assert r["results"]["hybrid"]["overall"]["recall@10"] >= 0.60
    assert r["results"]["hybrid"]["overall"]["recall@50"] >= 0.75


def test_locomo_without_time_filter_and_bm25_only(locomo_path: Path) -> None:
    from dataclasses import replace

    s = replace(ev.LOCOMO_DEFAULTS, time_filter=False)
    r = ev.evaluate_locomo(
        locomo_path,
        embedder="hashing",
        settings=s,
        conversations=["conv-30"],
        modes=["bm25"],
        cache_dir=None,
        progress=None,
    )
    assert list(r["results"]) == ["bm25"] and r["questions_time_filtered"] == 0
    assert r["results"]["bm25"]["overall"]["recall@10"] >= 0.6


def test_locomo_table_format(conv30_report: dict) -> None:
    table = ev.format_locomo_table(conv30_report)
    lines = table.splitlines()
    assert lines[0] == "| mode | category | questions | R@1 | R@5 | R@10 | R@25 | R@50 |"
    # conv-30 has no open-domain question: 4 categories + overall + overall (1-4), three modes
    assert "open-domain" not in table and len(lines) == 2 + 3 * 6
    assert "| hybrid | **overall** | 105 |" in table


# ------------------------------------------------------------------------------ SciFact data


def test_scifact_subset(scifact_dir: Path) -> None:
    data = ev.load_scifact(scifact_dir, max_docs=300, max_queries=40)
    assert len(data.queries) == 40 and len(data.doc_ids) == 300
    judged = {d for rel in data.qrels.values() for d in rel}
    assert judged <= set(data.doc_ids)
    r = ev.evaluate_scifact(
        scifact_dir, embedder="hashing", max_docs=300, max_queries=40, cache_dir=None, progress=None
    )
    res = r["results"]
    assert set(res) == set(ev.MODES) and r["documents"] == 300 and r["queries"] == 40
    for row in res.values():
        assert 0.0 <= row["ndcg@10"] <= 1.0 and 0.0 <= row["recall@100"] <= 1.0
    # measured on this subset: BM25 nDCG@10 0.915, recall@100 0.975 (hybrid 0.768 / 0.975 with
    # hashing vectors); floors with margin
    assert res["bm25"]["ndcg@10"] >= 0.80
    assert res["bm25"]["recall@100"] >= 0.90
    assert res["hybrid"]["recall@100"] >= 0.90
    assert "| bm25 | 40 |" in ev.format_scifact_table(r)


# ------------------------------------------------------------------------------ CLI


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    from trimem.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["eval", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "locomo" in out and "scifact" in out
    with pytest.raises(SystemExit) as exc:
        main(["eval", "locomo", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "1 multi-hop" in out and "--no-time" in out and "conv-26 and conv-30" in out


def test_cli_tiny_locomo_run(locomo_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trimem.cli import main

    out_json = tmp_path / "r.json"
    rc = main(
        [
            "eval",
            "locomo",
            "--data",
            str(locomo_path),
            "--conversations",
            "conv-30",
            "--embedder",
            "hashing",
            "--json",
            str(out_json),
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    assert "| hybrid | **overall** | 105 |" in captured.out
    assert "conv-30" in captured.err  # progress goes to stderr
    report = json.loads(out_json.read_text())
    assert report["embedder"] == "hashing-384-v1" and set(report["results"]) == set(ev.MODES)
    assert report["settings"]["weights"] == list(ev.LOCOMO_DEFAULTS.weights)
    assert (tmp_path / "cache").is_dir()  # embeddings cached under $TRIMEM_BENCH_CACHE only


def test_cli_vector_context(locomo_path: Path, tmp_path: Path) -> None:
    """The vector leg embeds a turn after the one before it by default; --context N alone
    applies to both legs; --vector-context sets the vector leg's own."""
    from trimem.cli import main

    def settings(*extra: str) -> tuple[int, int | None, float]:
        out = tmp_path / "s.json"
        assert (
            main(
                [
                    "eval",
                    "locomo",
                    "--data",
                    str(locomo_path),
                    "--conversations",
                    "conv-30",
                    "--quiet",
                    "--embedder",
                    "hashing",
                    "--modes",
                    "vector",
                    "--json",
                    str(out),
                    *extra,
                ]
            )
            == 0
        )
        r = json.loads(out.read_text())
        s = r["settings"]
        return s["context"], s["vector_context"], r["results"]["vector"]["overall"]["recall@10"]

    default, both, alone = settings(), settings("--context", "2"), settings("--vector-context", "0")
    assert default[:2] == (0, ev.LOCOMO_DEFAULTS.vector_context) == (0, 1)
    assert both[:2] == (2, None) and alone[:2] == (0, 0)
    assert len({default[2], both[2], alone[2]}) == 3, "each changes what the vector leg embeds"


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trimem.cli import main

    assert main(["eval", "locomo", "--data", str(tmp_path / "missing.json"), "--quiet"]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["eval", "scifact", "--data", str(tmp_path), "--quiet"]) == 2
    with pytest.raises(SystemExit):
        main(["eval", "locomo", "--weights", "1"])
    capsys.readouterr()
