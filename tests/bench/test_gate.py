"""The CI performance gate (`python -m trimem bench --gate`): it fails when trimem is slowed
down, passes otherwise, re-measures once before failing, refuses debug builds and bad files, and
the committed thresholds file is well formed. Real measurements here use tiny sizes."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import trimem
from tests.conftest import REPO_ROOT
from trimem import cli
from trimem.bench import gate

TINY = {"n": 2000, "dim": 32, "queries": 20, "rounds": 3, "block": 5, "seed": 0, "window": 0.1, "k": 10}
VECTOR = "trimem vector / hnswlib"
HYBRID = "trimem hybrid / hnswlib vector-only"


def write_thresholds(
    path: Path,
    limits: dict[str, float],
    *,
    config: dict[str, Any] = TINY,
    pairs: dict[str, tuple[str, str]] | None = None,
) -> Path:
    pairs = pairs or {VECTOR: ("trimem-vector", "hnswlib"), HYBRID: ("trimem-hybrid", "hnswlib")}
    doc = {
        "command": "written by tests/test_gate.py",
        "config": config,
        "ratios": [
            {
                "label": label,
                "numerator": pairs[label][0],
                "denominator": pairs[label][1],
                "quiet": 1.0,
                "threshold": thr,
            }
            for label, thr in limits.items()
        ],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run gate logic as on a release build (the fake-measurement tests do not time anything)."""
    monkeypatch.setattr(trimem, "build_profile", lambda: "release")


# ------------------------------------------------------------------ real (tiny) measurements


def test_gate_fails_when_trimem_is_slowed_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("hnswlib")
    if trimem.build_profile() != "release":
        pytest.skip("the gate refuses debug builds (tested below)")
    path = write_thresholds(tmp_path / "gate.json", {VECTOR: 4.0, HYBRID: 6.0})
    monkeypatch.setenv(gate.SLOWDOWN_ENV, "30")
    rc = cli.main(["bench", "--gate", str(path), "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 1, err
    assert "slowed down x30 on purpose" in err
    assert "measuring once more before failing" in err  # the noise re-measurement happened
    m = re.search(
        r"PERF GATE FAILED: ratio 'trimem vector / hnswlib' \(trimem-vector p50 / "
        r"hnswlib p50\) = ([0-9.]+) exceeds its threshold 4\.000",
        err,
    )
    assert m is not None, err
    assert float(m.group(1)) > 4.0
    assert f"PERF GATE FAILED: ratio '{HYBRID}'" in err
    assert "perf gate: FAILED (2 of 2 ratios)" in err
    assert "re-measurement:" in out and "**over**" in out


def test_gate_passes_without_slowdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("hnswlib")
    if trimem.build_profile() != "release":
        pytest.skip("the gate refuses debug builds (tested below)")
    monkeypatch.delenv(gate.SLOWDOWN_ENV, raising=False)
    path = write_thresholds(tmp_path / "gate.json", {VECTOR: 50.0, HYBRID: 50.0})
    report = tmp_path / "measured.json"
    rc = cli.main(["bench", "--gate", str(path), "--no-progress", "--json", str(report)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "perf gate: passed: 2 ratios within their thresholds" in err
    assert f"| {VECTOR} |" in out
    doc = json.loads(report.read_text())
    assert doc["failed"] == [] and doc["slowdown"] == 1.0
    assert set(doc["measurements"][0]["ratios"]) == {VECTOR, HYBRID}
    assert len(doc["measurements"][0]["rounds"][VECTOR]) == TINY["rounds"]


def test_calibrate_writes_loadable_thresholds(tmp_path: Path) -> None:
    pytest.importorskip("hnswlib")
    if trimem.build_profile() != "release":
        pytest.skip("calibration refuses debug builds")
    spec = gate.RatioSpec(VECTOR, "trimem-vector", "hnswlib")
    doc = gate.calibrate(
        tmp_path / "t.json",
        runs=2,
        config=gate.GateConfig(**TINY),
        specs=[spec],
        show_progress=False,
        err=io.StringIO(),
    )
    th = gate.load_thresholds(tmp_path / "t.json")
    assert th.config == gate.GateConfig(**TINY) and [s.label for s in th.specs] == [VECTOR]
    entry = doc["ratios"][0]
    assert len(entry["quiet_runs"]) == 2
    assert 0 < th.limit[VECTOR] <= gate.HEADROOM * entry["quiet"]
    assert "--gate-calibrate" in doc["command"]


def test_gate_reports_a_missing_peer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if trimem.build_profile() != "release":
        pytest.skip("the gate refuses debug builds (tested below)")
    monkeypatch.setitem(sys.modules, "tantivy", None)  # import tantivy -> ImportError
    path = write_thresholds(tmp_path / "gate.json", {"bm25": 1.0}, pairs={"bm25": ("trimem-bm25", "tantivy")})
    rc = cli.main(["bench", "--gate", str(path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "not available here: tantivy (tantivy not importable" in err
    assert "trimem[bench]" in err


# ------------------------------------------------------------------ refusals


def test_gate_refuses_a_debug_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(trimem, "build_profile", lambda: "debug")
    path = write_thresholds(tmp_path / "gate.json", {VECTOR: 4.0})
    for argv in (
        ["bench", "--gate", str(path)],
        ["bench", "--gate", str(path), "--allow-debug"],
    ):  # never honoured by the gate
        rc = cli.main([*argv, "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2
        assert "perf gate: error: trimem's engine is a debug build" in err
        assert "the gate never runs on a debug build" in err
        assert "dataset" not in err  # refused before building anything
    rc = cli.main(["bench", "--gate-calibrate", str(tmp_path / "new.json"), "--no-progress"])
    assert rc == 2 and "debug build" in capsys.readouterr().err
    assert not (tmp_path / "new.json").exists()


def test_gate_refuses_bad_files_and_options(tmp_path: Path, release: None, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["bench", "--gate", str(tmp_path / "missing.json")])
    assert rc == 2 and "not found" in capsys.readouterr().err
    bad = write_thresholds(tmp_path / "bad.json", {"x": 1.0}, pairs={"x": ("trimem-vector", "faiss")})
    rc = cli.main(["bench", "--gate", str(bad)])
    assert rc == 2 and "unknown system 'faiss'" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{not json")
    rc = cli.main(["bench", "--gate", str(tmp_path / "junk.json")])
    assert rc == 2 and "cannot read thresholds file" in capsys.readouterr().err
    ok = write_thresholds(tmp_path / "ok.json", {VECTOR: 2.0})
    rc = cli.main(["bench", "--gate", str(ok), "--n", "1000"])
    assert rc == 2 and "--n cannot be combined with --gate" in capsys.readouterr().err


# ------------------------------------------------------------------ re-measurement (no timing)


class FakeBench:
    """Returns the given values of the one ratio, one per measure() call."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.calls = 0
        self.closed = False

    def build(self) -> None:
        pass

    def measure(self) -> gate.Measurement:
        v = self.values[self.calls]
        self.calls += 1
        return gate.Measurement(ratios={VECTOR: v}, rounds={VECTOR: [v, v]}, p50_ms={}, seconds=0.0)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("values", "rc", "calls"),
    [
        ([1.0], 0, 1),  # within the threshold: one measurement
        ([3.0, 1.0], 0, 2),  # noisy first measurement: the re-measurement passes
        ([3.0, 2.5], 1, 2),  # over twice: a regression
    ],
)
def test_gate_remeasures_once_before_failing(
    tmp_path: Path, release: None, values: list[float], rc: int, calls: int
) -> None:
    path = write_thresholds(tmp_path / "gate.json", {VECTOR: 2.0})
    fake = FakeBench(values)
    out, err = io.StringIO(), io.StringIO()
    got = gate.run_gate(path, make_bench=lambda c, s, f: fake, out=out, err=err, slowdown=1.0)
    assert (got, fake.calls, fake.closed) == (rc, calls, True), err.getvalue()
    if calls == 2:
        assert "measuring once more before failing" in err.getvalue()
    if rc == 1:
        assert (
            f"PERF GATE FAILED: ratio '{VECTOR}' (trimem-vector p50 / hnswlib p50) = 2.500 "
            "exceeds its threshold 2.000 (measured 3.000, then 2.500; quiet-run ratio 1.000"
        ) in err.getvalue()
    elif calls == 2:
        assert "passed after one re-measurement" in err.getvalue()


# ------------------------------------------------------------------ the committed file


def test_committed_thresholds_file() -> None:
    path = REPO_ROOT / "benches" / "perf_gate.json"
    th = gate.load_thresholds(path)
    raw = th.raw
    assert th.config == gate.GateConfig()  # `--gate` with no override measures what was calibrated
    assert [(s.label, s.numerator, s.denominator) for s in th.specs] == [
        (s.label, s.numerator, s.denominator) for s in gate.DEFAULT_RATIOS
    ]
    assert raw["command"].startswith("python -m trimem bench --gate-calibrate benches/perf_gate.json")
    assert raw["headroom"] <= 1.5
    assert raw["machine"]["build_profile"] == "release"
    for entry in raw["ratios"]:
        assert len(entry["quiet_runs"]) >= 3
        assert 0 < entry["threshold"] <= 1.5 * entry["quiet"] + 1e-9, entry
    assert "absolute" in raw["about"]
