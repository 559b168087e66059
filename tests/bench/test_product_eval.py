"""The product-path evaluations: LoCoMo through ``Memory`` (``eval locomo --path product``) and
the phrasing-suite runner (``eval profile``).

Everything runs on small synthetic files written to tmp_path, with the hashing embedder, so the
answers are obvious and the expected recall values are computed by hand below. Embeddings are
cached only under tmp_path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from trimem import Memory
from trimem.bench import product as pe
from trimem.bench import profile_eval as pf
from trimem.cli import main

# ------------------------------------------------------------------------------ fixtures

DATES = ["1:00 pm on 8 May, 2023", "2:30 pm on 20 May, 2023", "9:15 am on 3 June, 2023"]


def _conversation(sample_id: str, speakers: tuple[str, str], sessions: list[list[str]], qa: list[Any]) -> Any:
    conv: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    for s, texts in enumerate(sessions, 1):
        conv[f"session_{s}_date_time"] = DATES[s - 1]
        conv[f"session_{s}"] = [
            {"speaker": speakers[t % 2], "dia_id": f"D{s}:{t + 1}", "text": text} for t, text in enumerate(texts)
        ]
    return {"sample_id": sample_id, "conversation": conv, "qa": qa}


def _qa(question: str, evidence: list[str], category: int) -> dict[str, Any]:
    return {"question": question, "answer": "x", "evidence": evidence, "category": category}


@pytest.fixture
def locomo(tmp_path: Path) -> Path:
    """Two conversations of three sessions; each question's evidence shares rare words with it."""
    a = _conversation(
        "conv-a",
        ("Alice", "Bob"),
        [
            ["I adopted a golden retriever called Biscuit.", "Congratulations, what a lovely dog!"],
            ["My sister moved to Lisbon and works as a pharmacist.", "I started cello lessons."],
            ["We are painting the kitchen walls yellow.", "Sounds bright and cheerful."],
        ],
        [
            _qa("What is the golden retriever called?", ["D1:1"], 4),
            _qa("Which city did the sister move to?", ["D2:1"], 1),
            _qa("What colour are the kitchen walls?", ["D3:1", "D9:9"], 2),  # D9:9 does not exist
            _qa("A question about nothing?", ["D7:7"], 4),  # no evidence turn exists: left out
        ],
    )
    a["conversation"]["session_2"][1]["blip_caption"] = "a photo of a cello by a window"
    b = _conversation(
        "conv-b",
        ("Carol", "Dan"),
        [
            ["I baked sourdough bread on Sunday.", "Nice, my garden tomatoes are ripe."],
            ["The marathon training is going well.", "My sourdough starter died."],
            ["I booked flights to Kyoto for April.", "Have a great trip!"],
        ],
        [
            _qa("Who mentioned sourdough?", ["D1:1", "D2:2"], 4),
            _qa("What is Zorblax's favourite quasar?", ["D3:1"], 5),  # no word in common with any turn
        ],
    )
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([a, b]), encoding="utf-8")
    return path


class CountingMemory(Memory):
    """A Memory that records how it is fed."""

    def __init__(self, embedder: Any) -> None:
        super().__init__(embedder=embedder)
        self.retains: list[tuple[str, dict[str, Any]]] = []
        self.batches = 0

    def retain(self, text: str, *, user_id: str, **fields: Any) -> Any:
        self.retains.append((text, {"user_id": user_id, **fields}))
        return super().retain(text, user_id=user_id, **fields)

    def retain_many(self, items: Any, *, vectors: Any = None) -> Any:
        self.batches += 1
        return super().retain_many(items, vectors=vectors)


def _run(locomo: Path, **kwargs: Any) -> dict[str, Any]:
    return pe.evaluate_locomo_product(locomo, embedder="hashing", progress=None, **kwargs)


# ------------------------------------------------------------------------------ LoCoMo, product path


def test_bm25s_recall_is_the_hand_computed_one(locomo: Path) -> None:
    """bm25s ranks each evidence turn first where it alone shares the question's rare words; the
    sourdough question has two evidence turns (ranks 1 and 2: R@1 = 1/2), the Zorblax one none."""
    report = _run(locomo)
    assert report["questions"] == 5 and report["questions_unresolved"] == 1
    bm = report["results"]["bm25s"]
    assert bm["overall"]["recall@1"] == pytest.approx((1 + 1 + 1 + 0.5 + 0) / 5)
    for k in (5, 10, 25, 50):
        assert bm["overall"][f"recall@{k}"] == pytest.approx(4 / 5)
    assert bm["single-hop"]["n"] == 2 and bm["single-hop"]["recall@1"] == pytest.approx(0.75)
    assert bm["single-hop"]["recall@5"] == 1.0
    assert bm["adversarial"]["recall@50"] == 0.0
    assert bm["overall (1-4)"]["recall@5"] == 1.0


def test_memory_rows_find_the_obvious_evidence(locomo: Path) -> None:
    """Memory.recall and Memory.search put the one turn that shares the question's words first
    (found through the dia_id that comes back in each episode's metadata)."""
    report = _run(locomo)
    ranks = {q["question"]: q["ranks"] for q in report["per_question"]}
    for question in (
        "What is the golden retriever called?",
        "Which city did the sister move to?",
        "What colour are the kitchen walls?",
    ):
        assert ranks[question]["recall"] == [0], question
        assert ranks[question]["search"] == [0], question
    assert ranks["Who mentioned sourdough?"]["recall"] == [0, 1]
    assert report["results"]["recall"]["multi-hop"]["recall@1"] == 1.0
    assert report["metadata_lost"] == 0 and report["turns"] == 12
    assert report["weak_share_top10"] is None or 0 <= report["weak_share_top10"] <= 1
    for row in ("recall", "search"):
        got = report["returned"][row]
        assert 0 < got["mean"] <= 6 and got["short_share"] == 1.0  # six turns per conversation < k


def test_turns_are_retained_one_call_each_in_order(locomo: Path) -> None:
    made: list[CountingMemory] = []

    def factory(embedder: Any) -> CountingMemory:
        made.append(CountingMemory(embedder))
        return made[-1]

    _run(locomo, memory_factory=factory)
    assert len(made) == 2  # a fresh memory per conversation
    first = made[0]
    assert first.batches == 0 and len(first.retains) == 6
    assert [f["metadata"]["dia_id"] for _, f in first.retains] == ["D1:1", "D1:2", "D2:1", "D2:2", "D3:1", "D3:2"]
    text, fields = first.retains[3]
    assert text == "Bob: I started cello lessons. [shares a photo of a cello by a window]"
    assert fields["user_id"] == "conv-a" and fields["session_id"] == "session_2"
    assert fields["timestamp"] == pe.load_locomo(locomo)[0].turns[3][0]
    assert first.retains[0][0] == "Alice: I adopted a golden retriever called Biscuit."


def test_a_library_error_scores_zero_and_is_reported(locomo: Path) -> None:
    """A recall that raises costs that question its recall row (the others and the run go on)."""

    class Failing(Memory):
        def recall(self, query: str, **options: Any) -> Any:
            if "sourdough" in query:
                raise IndexError("no such group")
            return super().recall(query, **options)

    report = _run(locomo, memory_factory=lambda emb: Failing(embedder=emb))
    assert report["errors"] == {"recall": 1, "search": 0}
    assert report["error_messages"] == ["Memory.recall: IndexError: no such group"]
    failed = next(q for q in report["per_question"] if q["error"])
    assert failed["question"] == "Who mentioned sourdough?" and failed["ranks"]["recall"] == []
    assert failed["ranks"]["bm25s"] == [0, 1]
    assert report["results"]["bm25s"]["overall"]["recall@1"] == pytest.approx(0.7)


def test_conversations_filter(locomo: Path) -> None:
    report = _run(locomo, conversations=["conv-b"])
    assert report["conversations"] == ["conv-b"] and report["questions"] == 2


def test_cached_embedder_replays_the_same_bytes(locomo: Path, tmp_path: Path) -> None:
    """The cache serves single-text calls only, with the bytes the real embedder returned, and a
    rerun embeds nothing new and reports the same figures."""
    seen: list[Any] = []

    def factory(embedder: Any) -> Memory:
        seen.append(embedder)
        return Memory(embedder=embedder)

    cache = tmp_path / "cache"
    first = _run(locomo, cache_dir=cache, memory_factory=factory)
    second = _run(locomo, cache_dir=cache, memory_factory=factory)
    emb_first, emb_second = seen[0], seen[-1]
    assert isinstance(emb_second, pe.CachedEmbedder) and emb_second is not emb_first
    assert emb_first.embedded > 0 and emb_second.embedded == 0 and emb_second.calls > 0
    assert first["results"] == second["results"] and first["embedder"] == second["embedder"] == "hashing-384-v1"
    texts = ["Alice: hello there", "a question?"]
    raw = emb_second.inner(texts[:1])
    assert np.array_equal(emb_second(texts[:1]), raw)
    assert np.array_equal(emb_second(texts), emb_second.inner(texts))  # several texts: passed through


def test_weak_label_reads_what_the_library_offers() -> None:
    assert pe.weak_label(SimpleNamespace(weak=True)) is True
    assert pe.weak_label(SimpleNamespace(scored=SimpleNamespace(match="weak"))) is True
    assert pe.weak_label(SimpleNamespace(scored=SimpleNamespace(match="strong"))) is False
    assert pe.weak_label(SimpleNamespace(scored=SimpleNamespace(explain={}), explain={"weak": False})) is False
    assert pe.weak_label(SimpleNamespace(scored=SimpleNamespace(score=1.0), explain={})) is None


# ------------------------------------------------------------------------------ phrasing suites

SUITE: dict[str, Any] = {
    "suite": "trimem-phrasing",
    "version": 1,
    "split": "dev",
    "lang": "en",
    "users": [
        {
            "user_id": "en-d01",
            "now": "2026-11-20T10:00:00Z",
            "memories": [
                {"text": "My favourite editor is Vim", "days_ago": 130, "kind": "fact"},
                {"text": "We adopted a cat called Miso last spring", "days_ago": 40, "kind": "other"},
            ],
            "probes": [
                {
                    "id": "en-d01-01",
                    "request": "What is the cat called?",
                    "kind": "direct",
                    "expect_any": ["Miso"],
                    "about": 1,
                },
                {
                    "id": "en-d01-02",
                    "request": "Which orchestra do I play in?",
                    "kind": "indirect",
                    "expect_any": ["Philharmonic"],
                },
            ],
        }
    ],
}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "dev_en.json"
    path.write_text(json.dumps(SUITE), encoding="utf-8")
    return path


def test_profile_runner_passes_what_is_there_and_fails_what_is_not(suite: Path) -> None:
    report = pf.evaluate_profile([suite], embedder="hashing", progress=None)
    by_id = {r["id"]: r for r in report["probes"]}
    assert by_id["en-d01-01"]["passed"] and "Miso" in by_id["en-d01-01"]["render"]
    assert not by_id["en-d01-02"]["passed"]
    assert by_id["en-d01-02"]["why"] == "no expected string in the context"
    (row,) = report["summary"]
    assert (row["split"], row["lang"], row["users"]) == ("dev", "en", 1)
    assert row["expecting"] == {"n": 2, "passed": 1, "rate": 0.5}
    assert row["by_kind"]["direct"]["rate"] == 1.0 and row["by_kind"]["indirect"]["rate"] == 0.0
    assert row["never_said_no_confident"]["n"] == 0


def test_profile_runner_retains_in_order_with_its_times_then_reflects(suite: Path) -> None:
    made: list[Any] = []

    class Spy(CountingMemory):
        reflected = 0

        def reflect(self, **kwargs: Any) -> Any:
            assert len(self.retains) == 2  # everything retained before reflect
            self.reflected += 1
            return super().reflect(**kwargs)

    def factory(embedder: Any) -> Spy:
        made.append(Spy(embedder))
        return made[-1]

    pf.evaluate_profile([suite], embedder="hashing", progress=None, memory_factory=factory)
    (mem,) = made
    assert mem.reflected == 1 and mem.batches == 0
    (t0, f0), (t1, f1) = mem.retains
    assert (t0, t1) == ("My favourite editor is Vim", "We adopted a cat called Miso last spring")
    assert (f1["timestamp"] - f0["timestamp"]).days == 90 and f0["role"] == "user"


def test_profile_runner_reports_a_library_error_as_a_failed_probe(suite: Path) -> None:
    class Failing(Memory):
        def recall(self, query: str, **options: Any) -> Any:
            if "cat" in query:
                raise IndexError("no such group")
            return super().recall(query, **options)

    report = pf.evaluate_profile(
        [suite], embedder="hashing", progress=None, memory_factory=lambda emb: Failing(embedder=emb)
    )
    by_id = {r["id"]: r for r in report["probes"]}
    assert by_id["en-d01-01"]["error"] and by_id["en-d01-01"]["why"] == "error: IndexError: no such group"
    assert not by_id["en-d01-02"]["error"]
    assert report["summary"][0]["errors"] == 1
    assert "library error: IndexError: no such group" in pf.format_profile_report(report)


def test_verdict_wants_an_expected_string_before_any_stale_one() -> None:
    probe = pf.Probe("p", "which db?", "changed", expect_any=("PostgreSQL", "postgres"), stale=("MySQL",))
    assert pf.verdict("- database: postgresql (since 2026)\n> we used MySQL before", probe) is None
    assert pf.verdict("> we used MySQL\n> moved to Postgres", probe) == "stale 'MySQL' comes before the expected value"
    assert pf.verdict("nothing here", probe) == "no expected string in the context"


def test_confident_counts_unlabelled_episodes_and_touched_facts() -> None:
    fact = SimpleNamespace(key="editor")
    intent = SimpleNamespace(keys=["editor"])
    assert not pf.confident(SimpleNamespace(episodes=[], profile=[], intent=intent))
    assert pf.confident(SimpleNamespace(episodes=[SimpleNamespace()], profile=[], intent=intent))
    assert not pf.confident(SimpleNamespace(episodes=[SimpleNamespace(weak=True)], profile=[], intent=intent))
    assert pf.confident(SimpleNamespace(episodes=[], profile=[fact], intent=intent))
    assert not pf.confident(SimpleNamespace(episodes=[], profile=[fact], intent=SimpleNamespace(keys=[])))


def test_a_bad_suite_says_where(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(SUITE))
    bad["users"][0]["probes"][1]["kind"] = "sideways"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(pf.SuiteError, match=r"user 0 \(en-d01\) probe 1: kind 'sideways'"):
        pf.load_suite(path)


_SUITES = sorted(
    [*pf.SUITE_DIR.glob("*.json"), *(Path(__file__).resolve().parents[2] / "benches").glob("phrasing_*.json")]
)


@pytest.mark.parametrize("path", _SUITES, ids=lambda p: p.name)
def test_every_committed_suite_loads_and_its_probes_point_at_what_holds_the_answer(path: Path) -> None:
    """A probe's expected strings are in the memory it is about; a changed probe's stale strings
    are not in the update it is about; an update replaces an earlier memory."""
    suite = pf.load_suite(path)
    assert suite.users and all(u.probes for u in suite.users)
    for user in suite.users:
        for probe in user.probes:
            if probe.kind == pf.NEVER_SAID or probe.about is None:
                continue
            said = user.memories[probe.about].text.casefold()
            assert any(e.casefold() in said for e in probe.expect_any), probe.id
            assert not any(s.casefold() in said for s in probe.stale), probe.id
        for i, memory in enumerate(user.memories):
            if memory.updates is not None:
                assert 0 <= memory.updates < i, (user.user_id, i)


# ------------------------------------------------------------------------------ command line


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        status: int | str | None = main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("usage: python -m trimem"), err
    assert re.search(r"^python -m trimem[\w ]*: error: ", err, re.M), err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["eval", "profile", "--suite", "{missing}"], "argument --suite: file not found"),
        (["eval", "profile", "--suite", "{locomo}"], "argument --suite: "),
        (["eval", "profile", "--suite", "{suite}", "--show-failures", "-1"], "argument --show-failures: must be at"),
        (["eval", "profile", "--suite", "{suite}", "--show-failures", "x"], "argument --show-failures: not an"),
        (["eval", "profile", "--split", "train"], "argument --split: invalid choice: 'train'"),
        (["eval", "profile", "--lang", "fr"], "argument --lang: invalid choice: 'fr'"),
        (["eval", "profile", "--suite", "{suite}", "--embedder", "x"], "argument --embedder: invalid choice"),
        (["eval", "profile", "--suite", "{suite}", "--json", "{tmp}"], "argument --json: "),
        (["eval", "locomo", "--data", "{locomo}", "--path", "sideways"], "argument --path: invalid choice"),
        (["eval", "locomo", "--data", "{locomo}", "--path", "engine", "--embedder", "none"], "argument --embedder: "),
        (["eval", "locomo", "--data", "{locomo}", "--conversations", "conv-z"], "argument --conversations: not in"),
    ],
)
def test_bad_arguments_are_usage_errors(
    argv: list[str], expected: str, locomo: Path, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = {"missing": str(tmp_path / "nope.json"), "locomo": str(locomo), "suite": str(suite), "tmp": str(tmp_path)}
    err = _usage_error([a.format(**paths) for a in argv], capsys)
    assert expected in err


def test_profile_cli_prints_rates_and_failures(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "profile.json"
    argv = ["eval", "profile", "--suite", str(suite), "--embedder", "hashing", "--no-cache", "--show-failures", "3"]
    assert main([*argv, "--json", str(out_json)]) == 0
    captured = capsys.readouterr()
    assert "| dev | en | 1 | 0.500 (1/2) |" in captured.out
    assert "1 failed probes" in captured.out and "en-d01-02" in captured.out and "en-d01-01" not in captured.out
    assert "profile dev/en" in captured.err  # progress on stderr
    assert json.loads(out_json.read_text(encoding="utf-8"))["summary"][0]["expecting"]["passed"] == 1


def test_locomo_cli_product_path(locomo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "p.json"
    argv = ["eval", "locomo", "--data", str(locomo), "--path", "product", "--embedder", "hashing"]
    assert main([*argv, "--no-cache", "--json", str(out_json)]) == 0
    captured = capsys.readouterr()
    assert "| bm25s | **overall** | 5 | 0.700 | 0.800 |" in captured.out
    assert "| Memory.recall | **overall** | 5 |" in captured.out and "| Memory.search |" in captured.out
    assert "| hybrid |" not in captured.out  # no engine table
    assert "6 turns retained" in captured.err and "3 questions answered" in captured.err
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["path"] == "product" and set(report["results"]) == {"recall", "bm25s", "search"}


def test_locomo_cli_both_paths(locomo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default prints the product table first, then the engine's; the JSON is the engine
    report as before, with the product report under "product"."""
    out_json = tmp_path / "both.json"
    argv = ["eval", "locomo", "--data", str(locomo), "--conversations", "conv-a", "--embedder", "hashing"]
    assert main([*argv, "--quiet", "--no-cache", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert out.index("| Memory.recall |") < out.index("| hybrid |")
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert set(report["results"]) == {"bm25", "vector", "hybrid"}
    assert report["product"]["conversations"] == ["conv-a"] and report["product"]["questions"] == 3
