"""`python -m trimem ingest` against `Memory.retain_many` on the same turns, same run:

    python benches/ingest_rate.py [--rounds 3] [--embedder auto] [--conversations 10]
                                  [--data ../shared/data/locomo10.json]

Each round, in alternating order: the CLI's ingest (called in process through
``trimem.cli.main``, parsing the LoCoMo file, batching, writing its position after each batch)
into a fresh folder, and one ``retain_many`` of the very turns it reads into another fresh folder
(the file parsed beforehand, outside the timing). The figure is the median over rounds of
retain_many's time / ingest's time (the rate ratio: ≥ 0.9 is the target). The embedder's vectors
are the same work in both, so the ratio is also given with the hashing embedder, where the
CLI's own costs weigh most.
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from trimem import Memory
from trimem.cli import main
from trimem.cli.ingest import read_locomo

warnings.simplefilter("ignore")
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--embedder", default="auto")
ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"))
ap.add_argument("--conversations", type=int, default=10, help="the first N conversations only")
args = ap.parse_args()

samples = json.loads(Path(args.data).read_text())[: args.conversations]
subset = Path(tempfile.mkdtemp(prefix="trimem-ingest-data-")) / "conversations.json"
subset.write_text(json.dumps(samples))  # a temporary copy of the first N, read by both sides
args.data = str(subset)
turns = [m.fields for m in read_locomo(samples, user_id=None, agent_id="default")]


def timed_ingest(folder: Path, embedder: str) -> float:
    t0 = time.perf_counter()
    code = main(["ingest", args.data, "--path", str(folder), "--embedder", embedder, "--quiet"])
    assert code == 0
    return time.perf_counter() - t0


def timed_retain_many(folder: Path, embedder: str) -> float:
    t0 = time.perf_counter()
    with Memory(str(folder), embedder=embedder) as mem:
        mem.retain_many(turns)
    return time.perf_counter() - t0


for embedder in dict.fromkeys([args.embedder, "hashing"]):
    ratios, ingest_s, many_s = [], [], []
    for r in range(args.rounds):
        root = Path(tempfile.mkdtemp(prefix="trimem-ingest-"))
        try:
            if r % 2 == 0:
                a, b = timed_ingest(root / "ingest", embedder), timed_retain_many(root / "many", embedder)
            else:
                b, a = timed_retain_many(root / "many", embedder), timed_ingest(root / "ingest", embedder)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        ingest_s.append(a)
        many_s.append(b)
        ratios.append(b / a)
    print(
        f"embedder {embedder}: {len(turns)} turns; ingest median {statistics.median(ingest_s):.2f} s "
        f"({len(turns) / statistics.median(ingest_s):.0f}/s), retain_many {statistics.median(many_s):.2f} s "
        f"({len(turns) / statistics.median(many_s):.0f}/s); ingest rate / retain_many rate = "
        f"{statistics.median(ratios):.3f} (rounds: {', '.join(f'{x:.3f}' for x in ratios)})"
    )
