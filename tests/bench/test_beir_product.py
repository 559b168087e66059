"""Document sets through the product path (``python -m trimem eval scifact|cmrc2018``, row
``Memory.recall``): the corpus in Memory's knowledge base, one recall per query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trimem.bench import evaluate as ev
from trimem.bench.beir_product import PRODUCT_ROW, evaluate_documents_product

DOCS = {
    "d1": ("Volcano", "Mount Etna erupted lava over the Sicilian village of Zafferana"),
    "d2": ("Tea", "Oolong tea is partly oxidised, between green and black tea"),
    "d3": ("Chess", "The Sicilian defence answers e4 with c5 in chess openings"),
    "d4": ("数据库", "我们的新系统全线采用 PostgreSQL 作为主数据库"),
    "d5": ("出差", "上海市内交通打车报销上限为每天一百元"),
}
QUERIES = {
    "q1": ("which volcano erupted lava over Zafferana", "d1"),
    "q2": ("oxidised oolong tea", "d2"),
    "q3": ("主数据库 PostgreSQL", "d4"),
    "q4": ("打车报销上限", "d5"),
}


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    """A BEIR folder in CMRC's layout (one qrels.tsv at its top)."""
    d = tmp_path / "tiny"
    d.mkdir()
    rows = [json.dumps({"_id": i, "title": t, "text": x}, ensure_ascii=False) for i, (t, x) in DOCS.items()]
    (d / "corpus.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    qs = [json.dumps({"_id": q, "text": t}, ensure_ascii=False) for q, (t, _) in QUERIES.items()]
    (d / "queries.jsonl").write_text("\n".join(qs) + "\n", encoding="utf-8")
    judged = "".join(f"{q}\t{doc}\t1\n" for q, (_, doc) in QUERIES.items())
    (d / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged, encoding="utf-8")
    return d


def test_a_one_split_folder_loads_its_top_level_qrels(tiny_beir: Path) -> None:
    data = ev.load_scifact(tiny_beir)
    assert data.doc_ids == tuple(DOCS) and list(data.queries) == list(QUERIES)
    assert data.qrels == {q: {doc: 1.0} for q, (_, doc) in QUERIES.items()}
    assert data.texts[3] == "数据库 我们的新系统全线采用 PostgreSQL 作为主数据库"


def test_product_path_ranks_each_judged_document_first(tiny_beir: Path) -> None:
    data = ev.load_scifact(tiny_beir)
    out = evaluate_documents_product(data, embedder="hashing", cache_dir=None, progress=None)
    row = out["row"]
    # every query names its document's rare words: each is found first (nDCG@10 = 1)
    assert row["n"] == 4.0 and row["ndcg@10"] == pytest.approx(1.0) and row["recall@100"] == pytest.approx(1.0)
    assert 1 <= row["returned_mean"] <= len(DOCS)
    assert out["embedder"] == "hashing-384-v1"


def test_cli_puts_the_product_row_first_beside_the_engine_modes(
    tiny_beir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trimem.cli import main

    out_json = tmp_path / "r.json"
    argv = ["eval", "cmrc2018", "--data", str(tiny_beir), "--embedder", "hashing", "--no-cache", "--quiet"]
    assert main([*argv, "--json", str(out_json)]) == 0
    table = capsys.readouterr().out
    lines = [ln for ln in table.splitlines() if ln.startswith("| ")]
    assert lines[1].startswith(f"| {PRODUCT_ROW} | 4 | 1.000 |")
    assert [ln.split(" | ")[0][2:] for ln in lines[1:]] == [PRODUCT_ROW, "bm25", "vector", "hybrid"]
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["dataset"] == "cmrc2018" and next(iter(report["results"])) == PRODUCT_ROW
    assert report["product"]["preload_s"] >= 0
    assert main([*argv, "--path", "product"]) == 0
    only = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    assert len(only) == 2 and only[1].startswith(f"| {PRODUCT_ROW} |")


def test_cli_refuses_a_folder_without_judgements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trimem.cli import main

    (tmp_path / "corpus.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text("", encoding="utf-8")
    assert main(["eval", "cmrc2018", "--data", str(tmp_path)]) == 2
    assert "is not the CMRC 2018 folder: no qrels/test.tsv or qrels.tsv" in capsys.readouterr().err


def test_cmrc_subset_product_path_is_not_below_bm25(cmrc_dir: Path) -> None:
    """Chinese through Memory: a request in Chinese is never worse than keywords alone."""
    data = ev.load_scifact(cmrc_dir, max_docs=120, max_queries=150)
    product = evaluate_documents_product(data, embedder="hashing", cache_dir=None, progress=None)["row"]
    engine = ev.evaluate_scifact(
        cmrc_dir, embedder="hashing", modes=["bm25"], max_docs=120, max_queries=150, cache_dir=None, progress=None
    )["results"]["bm25"]
    assert product["ndcg@10"] >= engine["ndcg@10"] - 0.01, (product, engine)


def test_the_product_path_on_postgresql_ranks_as_in_process(tiny_beir: Path, pg_dsn: str) -> None:
    from trimem.bench.stores import SchemaPerMemory

    data = ev.load_scifact(tiny_beir)
    here = evaluate_documents_product(data, embedder="hashing", cache_dir=None, progress=None)
    stores = SchemaPerMemory(pg_dsn)
    try:
        there = evaluate_documents_product(
            data, embedder="hashing", cache_dir=None, progress=None, memory_factory=stores
        )
    finally:
        stores.drop()
    assert stores.schemas == ["trimem_eval_1"]
    assert there["row"] == here["row"]
    import psycopg

    with psycopg.connect(pg_dsn) as conn:  # nothing left behind
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'trimem_eval_1'").fetchone() is None
