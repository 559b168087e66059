"""`python -m trimem bench`: --scale rows carry their n, --json, --plot (and its clear error
without matplotlib), --from-json, and LanceDB as a peer that is skipped cleanly when absent.
Sizes are tiny: these check the plumbing, not the speed."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import pytest

import trimem
from trimem import cli

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY = ["--dim", "32", "--queries", "8", "--repeats", "1", "--no-progress"]


@pytest.fixture(autouse=True)
def _release_only() -> None:
    if trimem.build_profile() != "release":
        pytest.skip("the bench refuses debug builds")


def test_int_list() -> None:
    assert cli._int_list("10_000, 100000") == [10_000, 100_000]
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        cli._int_list("1000,0")


@pytest.mark.slow  # ~15 s on a fresh machine (matplotlib builds its font cache)
def test_scale_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    have_mpl = True
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        have_mpl = False
    report_path, png = tmp_path / "bench.json", tmp_path / "bench.png"
    argv = [
        "bench",
        "--scale",
        "600,1200",
        "--systems",
        "trimem-vector,trimem-hybrid,hnswlib",
        "--json",
        str(report_path),
        *TINY,
    ]
    if have_mpl:
        argv += ["--plot", str(png)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "n=600, 1200" in out and "p50 @ n=1200" in out
    report = json.loads(report_path.read_text())
    assert report["config"]["scale"] == [600, 1200]
    assert {(r["key"], r["n"]) for r in report["results"]} >= {
        ("trimem-vector", 600),
        ("trimem-vector", 1200),
        ("trimem-hybrid", 600),
        ("trimem-hybrid", 1200),
    }
    assert set(report["ratios_by_n"]) == {"600", "1200"}
    assert report["ratios"] == report["ratios_by_n"]["1200"]
    for row in report["results"]:
        assert row["recall_at_10"] is not None and row["recall_at_10"] > 0.5
    # records added one at a time after timing, per built index and size
    assert {(r["index"], r["n"]) for r in report["inserts"]} == {
        ("trimem", 600),
        ("trimem", 1200),
        ("hnswlib", 600),
        ("hnswlib", 1200),
    }
    assert all(r["single_p50_ms"] > 0 and r["batch_per_s"] > 0 for r in report["inserts"])
    assert "one record at a time" in out
    if have_mpl:
        assert png.read_bytes()[:8] == PNG_MAGIC
        # and a saved report can be redrawn without measuring
        png2 = tmp_path / "again.png"
        assert cli.main(["bench", "--from-json", str(report_path), "--plot", str(png2)]) == 0
        assert png2.read_bytes()[:8] == PNG_MAGIC
        assert "| trimem | vector | 600 |" in capsys.readouterr().out


def test_plot_without_matplotlib_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    rc = cli.main(["bench", "--n", "1000", "--plot", str(tmp_path / "x.png"), *TINY])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--plot needs the 'matplotlib' package" in err
    assert "pip install matplotlib" in err
    assert "dataset:" not in err  # refused before measuring anything
    assert not (tmp_path / "x.png").exists()


def test_lancedb_is_skipped_cleanly_when_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)
    monkeypatch.setenv("LANCEDB_LOG", "error")  # restored afterwards (the peer sets a default)
    report_path = tmp_path / "r.json"
    rc = cli.main(["bench", "--n", "600", "--systems", "trimem-hybrid,lancedb", "--json", str(report_path), *TINY])
    assert rc == 0
    report = json.loads(report_path.read_text())
    assert [r["key"] for r in report["results"]] == ["trimem-hybrid"]
    skipped = {s["key"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"lancedb-vector", "lancedb-fts", "lancedb-hybrid", "lancedb-hybrid-window"}
    assert all("lancedb not importable" in r for r in skipped.values())
    assert "skipped lancedb-hybrid: lancedb not importable" in capsys.readouterr().out


@pytest.mark.slow
def test_lancedb_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lancedb")
    monkeypatch.setenv("LANCEDB_LOG", "error")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where LanceDB's folder goes
    report_path = tmp_path / "r.json"
    rc = cli.main(
        [
            "bench",
            "--n",
            "1000",
            "--systems",
            "trimem-hybrid,trimem-hybrid-window,lancedb",
            "--json",
            str(report_path),
            *TINY,
        ]
    )
    assert rc == 0
    report = json.loads(report_path.read_text())
    rows = {r["key"]: r for r in report["results"]}
    assert set(rows) >= {"lancedb-vector", "lancedb-fts", "lancedb-hybrid", "lancedb-hybrid-window"}, report["skipped"]
    assert rows["lancedb-vector"]["recall_at_10"] > 0.9
    assert rows["lancedb-hybrid"]["recall_at_10"] > 0.8  # its own tokenizer: < 1 by design
    assert rows["lancedb-hybrid-window"]["recall_at_10"] > 0.8
    assert rows["lancedb-hybrid-window"]["short_results"] == 0.0
    assert "trimem hybrid / LanceDB hybrid" in report["ratios"]
    assert list(scratch.iterdir()) == []  # the temporary LanceDB folder was removed


def test_minilm_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """--vectors minilm embeds the dataset's own texts and queries (cached on disk): the
    vectors are the model's, so a record's vector equals the model's embedding of its text."""
    from trimem.bench.datasets import make_dataset, with_model_vectors
    from trimem.embedders import MiniLMEmbedder, minilm_available

    if not minilm_available():
        pytest.skip("needs the minilm extra")
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(tmp_path / "cache"))
    ds = make_dataset(300, 128, n_queries=5)
    real = with_model_vectors(ds)
    assert real.vectors.shape == (300, 384) and real.query_vectors.shape == (5, 384)
    assert real.texts == ds.texts and (real.timestamps == ds.timestamps).all()
    np = pytest.importorskip("numpy")
    want = MiniLMEmbedder()([ds.texts[7], ds.query_texts[2]])
    assert np.allclose(real.vectors[7], want[0], atol=1e-5)
    assert np.allclose(real.query_vectors[2], want[1], atol=1e-5)
    assert list((tmp_path / "cache").iterdir()), "embeddings are cached"
    argv = [
        "bench",
        "--n",
        "300",
        "--queries",
        "5",
        "--repeats",
        "1",
        "--no-progress",
        "--vectors",
        "minilm",
        "--systems",
        "trimem-vector,hnswlib",
        "--json",
        str(tmp_path / "r.json"),
    ]
    assert cli.main(argv) == 0
    assert "MiniLM vectors of the texts" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["vectors"] == "minilm" and report["config"]["dim"] == 384
    assert cli.main([*argv[:-2], "--dim", "64"]) == 2, "MiniLM vectors are 384-d"
    assert cli.main(["bench", "--gate", "--vectors", "minilm"]) == 2, "the gate has its own data"
