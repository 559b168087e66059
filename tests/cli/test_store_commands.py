"""The everyday commands on a store: ingest (JSONL and LoCoMo-style, resumable), recall, facts,
export, import, stats and check — each checked against what the library itself holds, with
``--json`` output parsed, and bad arguments ending in a usage error (exit 2) that changes nothing."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

import trimem.cli.ingest as ingest
from trimem import Memory
from trimem.cli import main

from ..store.test_store import wal_records

EMB = ["--embedder", "hashing"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


_WORDS = [
    f"{a}{b}" for a in ("kel", "mor", "tas", "vin", "dru", "pal", "sen", "gor") for b in ("ak", "ine", "osh", "um")
]


def _messages(path: Path, n: int) -> Path:
    """`n` messages of three users, each a different mix of words (no two near-duplicates)."""
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            text = f"build server {i} " + " ".join(rng.sample(_WORDS, 8))
            line = {"text": text, "user_id": f"u{i % 3}",
                    "session_id": f"s{i // 50}", "timestamp": 1_700_000_000 + 60 * i, "role": "user"}  # fmt: skip
            fh.write(json.dumps(line) + "\n")
    return path


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A folder store holding 300 messages ingested from JSONL."""
    folder = tmp_path / "store"
    code, _, err = _run(["ingest", str(_messages(tmp_path / "m.jsonl", 300)), "--path", str(folder), *EMB,
                         "--batch", "64", "--quiet"], capsys)  # fmt: skip
    assert code == 0, err
    return folder


def test_ingest_jsonl_retains_every_message_as_retain_many_would(store: Path, tmp_path: Path) -> None:
    with Memory(str(store), embedder="hashing") as mem:
        got = {u: [(e.text, e.session_id, e.timestamp) for e in mem.episodes(user_id=u)] for u in ("u0", "u1", "u2")}
    with Memory(str(tmp_path / "direct"), embedder="hashing") as ref:
        lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
        ref.retain_many([{**x, "timestamp": x["timestamp"] * 1_000_000} for x in lines])
        want = {u: [(e.text, e.session_id, e.timestamp) for e in ref.episodes(user_id=u)] for u in ("u0", "u1", "u2")}
    assert got == want
    assert sum(len(v) for v in got.values()) == 300


def test_ingest_resumes_after_the_last_batch_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    source, folder = _messages(tmp_path / "m.jsonl", 200), tmp_path / "store"
    real = ingest._write
    calls = {"n": 0}

    def dies_on_third(*a: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a)

    monkeypatch.setattr(ingest, "_write", dies_on_third)
    code, _, err = _run(["ingest", str(source), "--path", str(folder), *EMB, "--batch", "30", "--quiet"], capsys)
    assert code == 130 and "interrupted" in err
    monkeypatch.setattr(ingest, "_write", real)
    with Memory(str(folder), embedder="hashing") as mem:
        assert mem.stats().episodic.count == 60  # two batches of 30 made it
    report = _json(["ingest", str(source), "--path", str(folder), *EMB, "--batch", "30", "--quiet"], capsys)
    assert (report["skipped"], report["written"], report["messages"]) == (60, 140, 200)
    with Memory(str(folder), embedder="hashing") as mem:
        texts = sorted(e.text for u in ("u0", "u1", "u2") for e in mem.episodes(user_id=u))
    assert texts == sorted(json.loads(x)["text"] for x in source.read_text().splitlines())  # none twice, none lost
    again = _json(["ingest", str(source), "--path", str(folder), *EMB, "--quiet"], capsys)
    assert again["written"] == 0
    restarted = _json(["ingest", str(source), "--path", str(folder), *EMB, "--quiet", "--restart"], capsys)
    assert restarted["written"] == 200 and restarted["skipped"] == 0


def test_ingest_locomo_style_conversations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conv = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pip."},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a kite"}],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Pip loves the beach."}],
        },
    }  # fmt: skip
    source = tmp_path / "conv.json"
    source.write_text(json.dumps([conv]), encoding="utf-8")
    report = _json(["ingest", str(source), "--path", str(tmp_path / "s"), *EMB, "--quiet"], capsys)
    assert report["format"] == "locomo" and report["written"] == 3
    with Memory(str(tmp_path / "s"), embedder="hashing") as mem:
        eps = mem.episodes(user_id="conv-x")
    assert [e.text for e in eps] == ["Ana: I adopted a greyhound called Pip.", "Ben: Look! [shares a photo of a kite]",
                                     "Ana: Pip loves the beach."]  # fmt: skip
    assert [e.session_id for e in eps] == ["session_1", "session_1", "session_2"]
    assert eps[0].metadata == {"dia_id": "D1:1"}
    assert eps[2].timestamp == 1_685_610_000 * 1_000_000  # 2023-06-01 09:00 UTC


def test_ingest_a_bad_line_writes_nothing_of_its_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _messages(tmp_path / "m.jsonl", 10)
    with source.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "no user here"}) + "\n")
    code, _, err = _run(["ingest", str(source), "--path", str(tmp_path / "s"), *EMB, "--batch", "4", "--quiet"], capsys)
    assert code == 1
    assert "line 11: no user_id" in err and "8 messages were written" in err
    with Memory(str(tmp_path / "s"), embedder="hashing") as mem:
        assert mem.stats().episodic.count == 8


def test_recall_prints_what_memory_renders(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(str(store), embedder="hashing") as mem:
        want = mem.recall("build server 42", user_id="u0", touch=False).render(2000)
        top3 = [
            (r.episode.id, r.scored.score)
            for r in mem.recall("build server 42", user_id="u0", k=3, touch=False).episodes
        ]
    code, out, _ = _run(["recall", "build server 42", "--path", str(store), "--user-id", "u0", *EMB], capsys)
    assert code == 0 and out.rstrip("\n") == want and out.startswith("## Recalled events") and out.count("\n> ") >= 3
    data = _json(["recall", "build server 42", "--path", str(store), "--user-id", "u0", *EMB, "-k", "3"], capsys)
    assert [(e["id"], pytest.approx(e["score"])) for e in data["episodes"]] == top3 and len(top3) == 3
    with Memory(str(store), embedder="hashing") as mem:  # a recall from the command line counts nothing as used
        assert mem.stats().episodic.accesses == 0


def test_facts_set_history_list(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--path", str(store), "--user-id", "u1", *EMB]
    assert _json(["facts", "set", "editor", "vim", *base], capsys)["op"] == "set"
    assert _json(["facts", "set", "editor", "helix", *base], capsys)["op"] == "update"
    history = _json(["facts", "history", "editor", *base], capsys)
    assert [v["value"] for v in history] == ["vim", "helix"] and "valid_to" not in history[1]
    assert _json(["facts", "list", *base], capsys) == [
        {"key": "editor", "value": "helix", "version": 2, "since": history[1]["valid_from"]}
    ]
    code, out, _ = _run(["facts", "history", "editor", *base], capsys)
    assert code == 0 and re.search(r"^set: vim \(from \d{4}-\d\d-\d\d \d\d:\d\d until", out, re.M)
    with Memory(str(store), embedder="hashing") as mem:
        fact = mem.facts.get("editor", user_id="u1")
        assert fact is not None and fact.value == "helix"
    code, _, err = _run(["facts", "history", "nothing", *base], capsys)
    assert code == 2 and "no fact 'nothing'" in err


def test_export_import_stats_round_trip(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "u2.trimem"
    exported = _json(["export", str(out), "--path", str(store), "--user-id", "u2", *EMB], capsys)
    assert exported["episodes"] == 100
    imported = _json(["import", str(out), "--path", str(tmp_path / "copy"), *EMB], capsys)
    assert imported["episodes"] == 100
    stats = _json(["stats", "--path", str(tmp_path / "copy"), *EMB], capsys)
    assert stats["episodic"]["count"] == 100 and stats["users"] == {"default/u2": 100}
    whole = _json(["stats", "--path", str(store), *EMB], capsys)
    assert whole["users"] == {"default/u0": 100, "default/u1": 100, "default/u2": 100}


def test_check_reports_recovery_and_a_torn_tail(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = _json(["check", "--path", str(store), *EMB], capsys)
    assert clean["ok"] and clean["episodes"] == clean["episodes_read_back"] == 300
    assert clean["recovery"]["torn_bytes"] == 0 and clean["recovery"]["log_records"] > 0
    log = sorted(store.glob("wal-*.log"))[-1]
    data = log.read_bytes()
    start, end = wal_records(data)[-1]  # the last record: the position the ingest wrote last
    log.write_bytes(data[: (start + end) // 2])  # a crash halfway through appending it
    torn = _json(["check", "--path", str(store), *EMB], capsys)
    assert torn["ok"] and torn["episodes"] == 300 and torn["recovery"]["torn_bytes"] > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["recall", "q", "--path", "{missing}", "--user-id", "u"], "no trimem store in"),
        (["stats", "--path", "{file}"], "is a file, not a store folder"),
        (["facts", "list", "--path", "{store}"], "the following arguments are required: --user-id"),
        (["ingest", "{missing}", "--path", "{store}"], "file not found"),
        (["ingest", "{file}", "--path", "{store}", "--batch", "0"], "--batch: must be at least 1"),
        (["import", "{missing}", "--path", "{store}"], "file not found"),
        (["export", "{folder}", "--path", "{store}"], "is a folder; give a file path"),
        (["recall", "q", "--path", "{store}", "--user-id", "u", "-k", "0"], "must be at least 1"),
        (["facts", "--path", "{store}"], "invalid choice"),
    ],
)
def test_bad_arguments_are_usage_errors_that_create_nothing(
    argv: list[str], message: str, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain.txt").write_text("x\n")
    (tmp_path / "dir").mkdir()
    places = {"missing": str(tmp_path / "nowhere"), "file": str(tmp_path / "plain.txt"), "store": str(store),
              "folder": str(tmp_path / "dir")}  # fmt: skip
    code, _, err = _run([a.format(**places) for a in argv] + EMB, capsys)
    assert code == 2, err
    assert err.startswith("usage: python -m trimem") and message in err, err
    assert not (tmp_path / "nowhere").exists()
