"""``python -m trimem eval``: the command line of the evaluations in :mod:`trimem.bench.evaluate`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trimem.bench.embedding_cache import default_cache_dir
from trimem.bench.evaluate import (
    DEFAULT_DATA_DIR,
    LOCOMO_DEFAULTS,
    MODES,
    SCIFACT_DEFAULTS,
    TUNING_CONVERSATIONS,
    Settings,
    _summary,
    evaluate_locomo,
    evaluate_scifact,
    format_locomo_table,
    format_scifact_table,
)


def _data_path(text: str | None, default_name: str) -> Path:
    if text:
        return Path(text).expanduser()
    env = os.environ.get("TRIMEM_DATA", DEFAULT_DATA_DIR)
    return Path(env).expanduser() / default_name


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``eval`` (with ``locomo`` and ``scifact``) on the CLI's subparsers."""
    p = sub.add_parser(
        "eval",
        help="retrieval quality on LoCoMo (evidence recall@k) and SciFact (nDCG@10)",
        description=(
            "Evaluate retrieval quality on public data with BM25 only, vector only and hybrid "
            "search in one run. Results go to stdout as markdown tables (fractions 0-1), progress "
            "to stderr. Data are read in place (default ../shared/data, or $TRIMEM_DATA) and "
            "never copied; embeddings are cached under $TRIMEM_BENCH_CACHE or a temp folder."
        ),
    )
    evals = p.add_subparsers(dest="dataset", metavar="DATASET", title="datasets")
    evals.required = True
    d = LOCOMO_DEFAULTS
    lo = evals.add_parser(
        "locomo",
        help="LoCoMo evidence recall@1/5/10/25/50 per category",
        description=(
            "One index per conversation, one record per turn (session date, speaker, text, image "
            "caption) stamped with its session time; questions rewritten by RuleRewriter relative "
            "to the conversation's dates. Categories: 1 multi-hop, 2 temporal, 3 open-domain, "
            "4 single-hop, 5 adversarial (the dataset's numbering)."
        ),
        epilog=(
            f"Defaults tuned on {' and '.join(TUNING_CONVERSATIONS)} only: {d.describe()}. "
            "Example: python -m trimem eval locomo --data ../shared/data/locomo10.json --embedder minilm"
        ),
    )
    lo.add_argument("--data", metavar="PATH", help="locomo10.json (default ../shared/data/locomo10.json)")
    lo.add_argument("--no-time", action="store_true", help="ignore time expressions (no time-range filter)")
    lo.add_argument("--conversations", metavar="LIST", help="comma-separated sample ids (default: all ten)")
    lo.add_argument(
        "--time-slack",
        type=int,
        default=d.time_slack_days,
        metavar="DAYS",
        help=f"widen a question's time range by DAYS after its end (default {d.time_slack_days})",
    )
    lo.add_argument(
        "--context",
        type=int,
        default=d.context,
        metavar="N",
        help=f"put up to N preceding turns of the same session before each turn, in both legs "
        f"(default {d.context}: a turn on its own)",
    )
    lo.add_argument(
        "--vector-context",
        type=int,
        default=None,
        metavar="N",
        help=f"... in the vector leg only (default {d.vector_context}, or --context's N when that is "
        f"given; BM25 keeps what --context says)",
    )
    _common(lo, d)
    lo.set_defaults(func=_run_locomo)
    sf = evals.add_parser(
        "scifact",
        help="BEIR SciFact nDCG@10 and recall@100 (title + abstract indexed)",
        description="BEIR SciFact: 5,183 abstracts, the 300 test claims as queries.",
        epilog=(
            f"Defaults fixed a priori (no tuning on SciFact): {SCIFACT_DEFAULTS.describe(locomo=False)}. "
            "Example: python -m trimem eval scifact --data ../shared/data/scifact"
        ),
    )
    sf.add_argument("--data", metavar="DIR", help="the scifact folder (default ../shared/data/scifact)")
    sf.add_argument("--max-docs", type=int, metavar="N", help="index only N documents (judged ones kept)")
    sf.add_argument("--max-queries", type=int, metavar="N", help="only the first N test queries")
    _common(sf, SCIFACT_DEFAULTS)
    sf.set_defaults(func=_run_scifact)


def _weights(text: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers like 1,1.5, got {text!r}") from None
    if a < 0 or b < 0 or a + b == 0:
        raise argparse.ArgumentTypeError("weights must be non-negative and not both zero")
    return a, b


def _common(p: argparse.ArgumentParser, d: Settings) -> None:
    p.add_argument(
        "--embedder",
        default="minilm",
        choices=("minilm", "hashing"),
        help="embedder of the vector leg (default minilm: offline int8 all-MiniLM-L6-v2)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the full results as JSON to PATH")
    p.add_argument("--modes", metavar="LIST", default=",".join(MODES), help="subset of bm25,vector,hybrid")
    p.add_argument(
        "--weights",
        type=_weights,
        default=d.weights,
        metavar="WB,WV",
        help=f"RRF weights of the bm25 and vector legs (default {d.weights[0]:g},{d.weights[1]:g})",
    )
    p.add_argument("--rrf-k", type=float, default=d.rrf_k, metavar="K", help=f"RRF constant (default {d.rrf_k:g})")
    p.add_argument(
        "--window",
        type=int,
        default=d.window,
        metavar="N",
        help="fusion candidates per leg (default: the engine's max(50, 5k))",
    )
    stem = p.add_mutually_exclusive_group()
    stem.add_argument(
        "--stem",
        dest="stem",
        action="store_true",
        default=d.stem,
        help=f"Snowball stemming{' (default)' if d.stem else ''}",
    )
    stem.add_argument("--no-stem", dest="stem", action="store_false", help="no stemming")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument(
        "--stopwords",
        dest="stopwords",
        action="store_true",
        default=d.stopwords,
        help=f"drop English stop words{' (default)' if d.stopwords else ''}",
    )
    stop.add_argument("--no-stopwords", dest="stopwords", action="store_false", help="keep stop words")
    p.add_argument("--no-cache", action="store_true", help="do not cache embeddings on disk")
    p.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress on stderr")


def _settings_from(args: argparse.Namespace, base: Settings) -> Settings:
    s = replace(
        base, stem=args.stem, stopwords=args.stopwords, weights=args.weights, rrf_k=args.rrf_k, window=args.window
    )
    if hasattr(args, "no_time"):
        if args.time_slack < 0 or args.context < 0 or (args.vector_context or 0) < 0:
            raise ValueError("--time-slack, --context and --vector-context must be >= 0")
        # --context alone applies to both legs; the default vector context is for turns alone.
        vector_context = args.vector_context
        if vector_context is None:
            vector_context = base.vector_context if args.context == 0 else None
        s = replace(
            s,
            time_filter=not args.no_time,
            time_slack_days=args.time_slack,
            context=args.context,
            vector_context=vector_context,
        )
    return s


def _modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"unknown modes {bad or text!r}: use a subset of {','.join(MODES)}")
    return modes


def _finish(report: dict[str, Any], table: str, args: argparse.Namespace) -> int:
    print(table)
    print()
    print(_summary(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def _run_locomo(args: argparse.Namespace) -> int:
    path = _data_path(args.data, "locomo10.json")
    if not path.is_file():
        print(f"trimem eval: LoCoMo data not found at {path} (pass --data)", file=sys.stderr)
        return 2
    try:
        settings = _settings_from(args, LOCOMO_DEFAULTS)
        report = evaluate_locomo(
            path,
            embedder=args.embedder,
            settings=settings,
            conversations=args.conversations.split(",") if args.conversations else None,
            modes=_modes(args.modes),
            cache_dir=None if args.no_cache else default_cache_dir(),
            progress=None if args.quiet else sys.stderr,
        )
    except (ValueError, ImportError) as exc:
        print(f"trimem eval: {exc}", file=sys.stderr)
        return 2
    return _finish(report, format_locomo_table(report), args)


def _run_scifact(args: argparse.Namespace) -> int:
    path = _data_path(args.data, "scifact")
    if not (path / "corpus.jsonl").is_file():
        print(f"trimem eval: SciFact data not found at {path} (pass --data)", file=sys.stderr)
        return 2
    try:
        report = evaluate_scifact(
            path,
            embedder=args.embedder,
            settings=_settings_from(args, SCIFACT_DEFAULTS),
            modes=_modes(args.modes),
            max_docs=args.max_docs,
            max_queries=args.max_queries,
            cache_dir=None if args.no_cache else default_cache_dir(),
            progress=None if args.quiet else sys.stderr,
        )
    except (ValueError, ImportError) as exc:
        print(f"trimem eval: {exc}", file=sys.stderr)
        return 2
    return _finish(report, format_scifact_table(report), args)
