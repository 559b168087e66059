"""The command line tells the truth and fails politely.

Every bad argument of ``python -m trimem demo|bench|eval`` ends in an argparse-style
``usage: ... error: ...`` on stderr and exit status 2, never a traceback; an error trimem raises
while a command runs is one ``trimem: error: ...`` line. The demo keeps the embedder's model load
out of the query timings, says when an episode was recalled through a fact instead of printing
zero scores, and cuts long previews at a word with "…". A long eval shows progress on stderr.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import trimem.bench.evaluate as ev
from trimem import demo
from trimem.bench import meter
from trimem.cli import main
from trimem.errors import StoreLockedError

REPO_ROOT = Path(__file__).resolve().parents[2]

# Cases that would otherwise start real work carry small valid sizes, so a check that stops
# working fails the test quickly instead of running a full benchmark.
SMALL_BENCH = ["--n", "20", "--dim", "16", "--queries", "2", "--repeats", "1", "--systems", "trimem-vector"]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the CLI in process; assert it ends with status 2 (argparse exits, a command's own
    check returns it), a usage line and an error line."""
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


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Paths for the cases: a plain file, a folder, a path under a file, bad JSON, a LoCoMo
    file with one conversation, and a path that does not exist."""
    plain = tmp_path / "plain.txt"
    plain.write_text("not json\n", encoding="utf-8")
    folder = tmp_path / "folder"
    folder.mkdir()
    locomo = tmp_path / "locomo10.json"
    locomo.write_text(json.dumps([{"sample_id": "conv-1", "conversation": {}, "qa": []}]), encoding="utf-8")
    return {
        "file": str(plain),
        "dir": str(folder),
        "under_file": str(plain / "x.json"),
        "missing": str(tmp_path / "missing"),
        "locomo": str(locomo),
    }


# (argv with {placeholders} from `files`, text the error must contain)
CASES: list[tuple[list[str], str]] = [
    ([], "required: COMMAND"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["demo", "--bogus"], "unrecognized arguments: --bogus"),
    (["demo", "--embedder", "bogus"], "argument --embedder"),
    (["demo", "--path", "{file}"], "argument --path: "),
    (["demo", "--path", "{under_file}"], "argument --path: "),
    (["bench", "--n", "-5"], "argument --n: must be at least 1"),
    (["bench", "--n", "abc"], "argument --n: not an integer"),
    (["bench", "--n", "5", *SMALL_BENCH[2:]], "argument --n: needs at least 10"),
    (["bench", "--scale", "1,x"], "argument --scale"),
    (["bench", "--scale", "100,5", *SMALL_BENCH[2:]], "argument --scale: needs at least 10"),
    (["bench", "--queries", "x"], "argument --queries"),
    (["bench", "--repeats", "0"], "argument --repeats"),
    (["bench", "--window", "2"], "argument --window"),
    (["bench", "--seed", "-1", *SMALL_BENCH], "argument --seed: must be at least 0"),
    (["bench", "--threads", "-1", *SMALL_BENCH], "argument --threads: must be at least 0"),
    (["bench", *SMALL_BENCH[:-2], "--systems", "nope"], "argument --systems: unknown system 'nope'"),
    (["bench", *SMALL_BENCH[:-2], "--systems", ","], "argument --systems"),
    (["bench", "--vectors", "bad"], "argument --vectors"),
    (["bench", "--gate-runs", "0"], "argument --gate-runs"),
    (["bench", "--from-json", "{missing}"], "argument --from-json: file not found"),
    (["bench", "--dim", "0"], "argument --dim"),
    (["bench", "--from-json", "{dir}"], "argument --from-json: "),
    (["bench", "--from-json", "{file}"], "argument --from-json: "),
    (["bench", "--json", "{dir}", *SMALL_BENCH], "argument --json: "),
    (["bench", "--json", "{under_file}", *SMALL_BENCH], "argument --json: "),
    (["bench", "--plot", "{under_file}", *SMALL_BENCH], "argument --plot: "),
    (["bench", "--gate", "{missing}"], "argument --gate: thresholds file"),
    (["bench", "--gate", "{missing}", "--n", "50"], "cannot be combined with --gate"),
    (["bench", "--gate-calibrate", "{dir}", *SMALL_BENCH[:-2], "--gate-runs", "1"], "argument --gate-calibrate: "),
    (["eval"], "required: DATASET"),
    (["eval", "bogus"], "invalid choice: 'bogus'"),
    (["eval", "scifact", "--bogus"], "unrecognized arguments: --bogus"),
    (["eval", "scifact", "--data", "{missing}"], "argument --data: SciFact folder not found"),
    (["eval", "scifact", "--data", "{file}"], "argument --data: "),
    (["eval", "scifact", "--data", "{dir}"], "is not the SciFact folder"),
    (["eval", "scifact", "--data", "{dir}", "--max-docs", "-5"], "argument --max-docs: must be at least 1"),
    (["eval", "scifact", "--data", "{dir}", "--max-docs", "x"], "argument --max-docs"),
    (["eval", "scifact", "--data", "{dir}", "--max-queries", "0"], "argument --max-queries: must be at least 1"),
    (["eval", "scifact", "--data", "{dir}", "--window", "-3"], "argument --window: must be at least 1"),
    (["eval", "scifact", "--data", "{dir}", "--rrf-k", "-1"], "argument --rrf-k"),
    (["eval", "scifact", "--data", "{dir}", "--rrf-k", "nan"], "argument --rrf-k"),
    (["eval", "scifact", "--data", "{dir}", "--weights", "1"], "argument --weights"),
    (["eval", "scifact", "--data", "{dir}", "--weights", "nan,1"], "argument --weights"),
    (["eval", "scifact", "--data", "{dir}", "--modes", "foo"], "argument --modes"),
    (["eval", "scifact", "--data", "{dir}", "--embedder", "foo"], "argument --embedder"),
    (["eval", "scifact", "--data", "{dir}", "--json", "{dir}"], "argument --json: "),
    (["eval", "scifact", "--data", "{dir}", "--json", "{missing}/x.json"], "argument --json: folder not found"),
    (["eval", "locomo", "--data", "{missing}"], "argument --data: LoCoMo file not found"),
    (["eval", "locomo", "--data", "{dir}"], "argument --data: "),
    (["eval", "locomo", "--data", "{file}"], "is not LoCoMo's locomo10.json"),
    (["eval", "locomo", "--data", "{locomo}", "--conversations", "nope"], "argument --conversations: not in"),
    (["eval", "locomo", "--data", "{locomo}", "--conversations", ","], "argument --conversations"),
    (["eval", "locomo", "--data", "{locomo}", "--context", "-1"], "argument --context: must be at least 0"),
    (["eval", "locomo", "--data", "{locomo}", "--vector-context", "-2"], "argument --vector-context"),
    (["eval", "locomo", "--data", "{locomo}", "--time-slack", "-1"], "argument --time-slack"),
    (["eval", "locomo", "--data", "{locomo}", "--time-slack", "x"], "argument --time-slack"),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a) or "(nothing)" for a, _ in CASES])
def test_bad_argument_is_a_usage_error(
    argv: list[str], expected: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error([a.format(**files) for a in argv], capsys)
    assert expected in err


def test_usage_error_names_the_command_it_belongs_to(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["eval", "scifact", "--max-docs", "-1"], capsys)
    assert err.startswith("usage: python -m trimem eval scifact ")
    assert "python -m trimem eval scifact: error: argument --max-docs" in err


def _run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trimem", *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_real_entry_point_exits_2_without_a_traceback(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    for args in (["demo", "--path", str(plain)], ["bench", "--n", "-5"], ["eval", "scifact", "--data", str(plain)]):
        proc = _run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "usage: python -m trimem" in proc.stderr and ": error: " in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_trimem_error_while_running_is_one_line(tmp_path: Path) -> None:
    from trimem.memory import Memory

    path = tmp_path / "store"
    with Memory(str(path), embedder="hashing"):  # holds the folder's writer lock
        proc = _run_cli("demo", "--path", str(path), "--embedder", "hashing", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("trimem: error: "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_trimem_errors_raised_by_a_command_become_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def locked(path: str, embedder: str) -> int:
        raise StoreLockedError(f"{path} is in use by another process")

    monkeypatch.setattr(demo, "run", locked)
    assert main(["demo", "--path", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert err == f"trimem: error: {tmp_path / 'd'} is in use by another process\n"


# ------------------------------------------------------------------------------------ demo


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("demo") / "store"
    capture = _Capture()
    with capture:
        assert main(["demo", "--path", str(path), "--embedder", "hashing"]) == 0
    return capture.text


class _Capture:
    """stdout of a block (a module-scoped fixture cannot use capsys)."""

    def __enter__(self) -> None:
        import io

        self._saved, self._buf = sys.stdout, io.StringIO()
        sys.stdout = self._buf

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._saved
        self.text = self._buf.getvalue()


def test_demo_reports_model_load_before_any_query_timing(demo_output: str) -> None:
    lines = demo_output.splitlines()
    load = [i for i, line in enumerate(lines) if re.fullmatch(r"embedder \S+: model load \d+ ms", line)]
    timings = [i for i, line in enumerate(lines) if "timings (ms):" in line]
    assert load and timings
    assert load[0] < timings[0]


def test_demo_says_via_fact_instead_of_zero_scores(demo_output: str) -> None:
    episodes = [line for line in demo_output.splitlines() if line.startswith("  episode ")]
    via = [line for line in episodes if "via fact " in line]
    assert any(line.rstrip().endswith("via fact primary_language") for line in via), demo_output
    for line in episodes:
        assert "score=0.0000" not in line, line
        assert "bm25=0.00 " not in line and not line.rstrip().endswith("cos=0.00"), line


_PREVIEW = re.compile(r"^  (?:episode|knowledge \[[^\]]*\])\s+('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def _at_word_boundary(kept: str, original: str) -> bool:
    """`kept` (a preview without its "…") is a prefix of `original` that ends between words:
    before a space or punctuation, or next to a CJK character."""
    flat = " ".join(original.split())
    if not flat.startswith(kept) or len(kept) >= len(flat):
        return False
    before, after = kept[-1], flat[len(kept)]
    wide = any(0x2E80 <= ord(c) <= 0x9FFF or 0xFF00 <= ord(c) <= 0xFFEF for c in (before, after))
    return wide or not (before.isalnum() and after.isalnum())


def test_demo_previews_are_cut_at_a_word_with_an_ellipsis(demo_output: str) -> None:
    sources = [t for _, _, _, t, _ in demo.CONVERSATION] + [t for t, _, _ in demo.KNOWLEDGE]
    previews = [ast.literal_eval(m[1]) for line in demo_output.splitlines() if (m := _PREVIEW.match(line))]
    cut = [p for p in previews if p.endswith("…")]
    assert cut, "no preview in the demo is long enough to be cut"
    for p in cut:
        assert any(_at_word_boundary(p[:-1], s) for s in sources), p
    for p in previews:
        assert p in sources or p in cut, p  # a preview is the whole text, or cut and marked


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("Deployment guide: every service runs in Docker behind the Nginx proxy.", 60),
        ("Travel policy 2026: taxi rides in Shanghai are reimbursed up to 100 per day.", 30),
        ("差旅政策：上海市内出租车费用每天报销上限为100元。", 10),
        ("在 Docker 容器中启动 Node 服务，端口映射为 8080", 18),
        ("a" * 80, 20),
    ],
)
def test_preview_cuts_between_words_or_characters(text: str, width: int) -> None:
    p = demo.preview(text, width)
    assert len(p) <= width and p.endswith("…"), p
    kept = p[:-1]
    assert text.startswith(kept) and len(kept) >= width // 2, p
    if " " in text or any(ord(c) > 0x2E80 for c in text):
        assert _at_word_boundary(kept, text), p


def test_preview_leaves_short_text_whole() -> None:
    assert demo.preview("Took taxis in Shanghai last week.", 60) == "Took taxis in Shanghai last week."
    assert demo.preview("two\n  lines", 60) == "two lines"


# ------------------------------------------------------------------------------------ progress


def test_eval_shows_progress_on_stderr(
    scifact_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(meter, "PROGRESS_EVERY_S", 0.0)  # a line at every step of this small run
    argv = ["eval", "scifact", "--data", str(scifact_dir), "--max-docs", "300", "--max-queries", "5"]
    assert main([*argv, "--embedder", "hashing", "--no-cache", "--modes", "bm25,hybrid"]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^scifact: embedding documents with hashing-384-v1: \d+/300 texts", err, re.M), err
    assert re.search(r"^scifact hybrid: searching: 5/5 queries", err, re.M), err
    assert "\r" not in err  # not a terminal: plain lines, no redrawn bar
    assert "texts" not in out and "| hybrid | 5 |" in out


def test_eval_no_progress_is_quiet(
    scifact_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(meter, "PROGRESS_EVERY_S", 0.0)
    argv = ["eval", "scifact", "--data", str(scifact_dir), "--max-docs", "300", "--max-queries", "5"]
    assert main([*argv, "--embedder", "hashing", "--no-cache", "--modes", "bm25", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_chunked_embedding_equals_one_call() -> None:
    """The cache embeds a batch per call for progress; an embedder whose vectors depend on the
    batch (as padding makes MiniLM's do, in the last bits) must see the batches of one call."""
    seen: list[list[str]] = []

    class BatchSensitive:
        name, dim, batch_size = "batch-sensitive", 4, 8

        def __call__(self, texts: list[str]) -> np.ndarray:
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for s in range(0, len(order), self.batch_size):
                chunk = order[s : s + self.batch_size]
                seen.append([texts[i] for i in chunk])
                longest = max(len(texts[i]) for i in chunk)  # the padding every text of a batch gets
                for i in chunk:
                    out[i] = [len(texts[i]), longest, hash(texts[i]) % 97, 1.0]
            return out

    rng = np.random.default_rng(3)
    texts = ["w" * int(n) + str(i) for i, n in enumerate(rng.integers(1, 40, size=50))]
    whole = BatchSensitive()(texts)
    batches_of_one_call = sorted(map(tuple, seen))
    seen.clear()
    chunked = ev.EmbeddingCache(BatchSensitive(), None, progress=None)(texts)
    assert len(seen) > 1
    assert sorted(map(tuple, seen)) == batches_of_one_call
    assert np.array_equal(whole, chunked)


def test_every_long_command_has_a_way_to_silence_progress(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["bench", "--help"], ["eval", "scifact", "--help"], ["eval", "locomo", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "--no-progress" in capsys.readouterr().out, argv
