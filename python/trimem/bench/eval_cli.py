"""``python -m trimem eval``: the command line of the evaluations in :mod:`trimem.bench.evaluate`
(the engine), :mod:`trimem.bench.product` (LoCoMo through ``Memory``, what an agent gets) and
:mod:`trimem.bench.profile_eval` (the phrasing suites)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trimem._usage import UsageError
from trimem.bench.beir_product import PRODUCT_ROW, evaluate_documents_product
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
    load_scifact,
)
from trimem.bench.product import evaluate_locomo_product, format_product_table, product_summary
from trimem.bench.profile_eval import (
    LANGS,
    SPLITS,
    SUITE_DIR,
    SuiteError,
    evaluate_profile,
    format_failures,
    format_profile_report,
    load_suite,
    suite_paths,
)
from trimem.bench.stores import SchemaPerMemory

EMBEDDERS = ("auto", "bilingual", "minilm", "e5", "hashing", "none")
PATHS = ("product", "engine", "both")
# The namespace attribute trimem.cli runs before a command (its _CHECK); `eval` sets its own
# check for locomo and scifact, and `eval profile` overrides it with one that knows its options.
# (The CLI imports this module, so this module cannot import the CLI.)
_CLI_CHECK = "_trimem_check"


def _data_path(text: str | None, default_name: str) -> Path:
    if text:
        return Path(text).expanduser()
    env = os.environ.get("TRIMEM_DATA", DEFAULT_DATA_DIR)
    return Path(env).expanduser() / default_name


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``eval`` (with ``locomo``, ``scifact`` and ``profile``) on the CLI's subparsers."""
    p = sub.add_parser(
        "eval",
        help="retrieval quality on LoCoMo (evidence recall@k), SciFact (nDCG@10) and the phrasing suites",
        description=(
            "Evaluate retrieval quality on public data: what an agent gets through Memory (LoCoMo's "
            "product path, the phrasing suites) and the engine alone with BM25 only, vector only and "
            "hybrid search in one run. Results go to stdout as markdown tables (fractions 0-1), progress "
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
            "Categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (the "
            "dataset's numbering). Product path (first): one Memory per conversation, each turn "
            "retained with its own retain call (speaker, text, image caption; session time; dia_id in "
            "metadata), then Memory.recall(question, k=50, now=last session + 1 day) with its defaults, "
            "beside a bm25s baseline and Memory.search over the same turns. Engine path: one index per "
            "conversation, one record per turn (session date, speaker, text, image caption) stamped "
            "with its session time; questions rewritten by RuleRewriter relative to the "
            "conversation's dates."
        ),
        epilog=(
            f"Engine defaults tuned on {' and '.join(TUNING_CONVERSATIONS)} only: {d.describe()}; the "
            "engine options below (--modes, --weights, ...) do not change the product path. "
            "Example: python -m trimem eval locomo --path product --conversations conv-26,conv-30"
        ),
    )
    lo.add_argument(
        "--path",
        dest="eval_path",
        choices=PATHS,
        default="both",
        help="what to measure: product (Memory, what an agent gets), engine (HybridIndex with tuned "
        "settings) or both (default; the product table first)",
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
    _add_documents(
        evals,
        "scifact",
        help="BEIR SciFact nDCG@10 and recall@100 (title + abstract indexed)",
        description="BEIR SciFact: 5,183 abstracts, the 300 test claims as queries.",
    )
    _add_documents(
        evals,
        "cmrc2018",
        help="CMRC 2018 (Chinese) nDCG@10 and recall@100, BEIR layout",
        description="CMRC 2018: 848 Chinese Wikipedia paragraphs, their questions as queries.",
    )
    _add_profile(evals)


def _add_documents(
    evals: argparse._SubParsersAction[argparse.ArgumentParser], name: str, *, help: str, description: str
) -> None:
    """A BEIR-layout document set: the product path (the corpus in Memory's knowledge base,
    Memory.recall per query) beside the engine modes."""
    sf = evals.add_parser(
        name,
        help=help,
        description=description
        + " Product path: every document added to Memory's knowledge base (knowledge.add_many), then "
        "Memory.recall(query, k_knowledge=100) with its defaults, row Memory.recall; engine path: one "
        "HybridIndex, modes bm25, vector, hybrid.",
        epilog=(
            f"Engine defaults fixed a priori (no tuning on these sets): {SCIFACT_DEFAULTS.describe(locomo=False)}. "
            f"Example: python -m trimem eval {name} --data ../shared/data/{name}"
        ),
    )
    sf.add_argument(
        "--path",
        dest="eval_path",
        choices=PATHS,
        default="both",
        help="product (Memory, what an agent gets), engine (HybridIndex) or both (default)",
    )
    sf.add_argument("--data", metavar="DIR", help=f"the {name} folder (default ../shared/data/{name})")
    sf.add_argument("--max-docs", type=int, metavar="N", help="index only N documents (judged ones kept)")
    sf.add_argument("--max-queries", type=int, metavar="N", help="only the first N test queries")
    _common(sf, SCIFACT_DEFAULTS)
    sf.set_defaults(func=_run_documents)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _add_profile(evals: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pr = evals.add_parser(
        "profile",
        help="phrasing suites: does recall(...).render() carry what a request needs",
        description=(
            "Per user of each suite: a fresh Memory, its memories retained in order (stamped now - "
            "days_ago), reflect, then each probe recalled at the user's now and rendered in 300 "
            "tokens. A probe passes when an expected string is in the context with no stale one "
            "before it; a never-said probe passes when the bundle shows no confident match. "
            f"Built-in suites: {SUITE_DIR}/{{dev,test}}_{{en,zh}}.json."
        ),
        epilog="Example: python -m trimem eval profile --split dev --lang en --show-failures 5",
    )
    pr.add_argument("--split", choices=(*SPLITS, "both"), default="both", help="built-in split (default both)")
    pr.add_argument("--lang", choices=(*LANGS, "both"), default="both", help="built-in language (default both)")
    pr.add_argument(
        "--suite",
        action="append",
        metavar="PATH",
        help="run this suite file instead of the built-in ones (repeatable; --split and --lang then do not apply)",
    )
    pr.add_argument(
        "--embedder", default="auto", choices=EMBEDDERS, help="Memory's embedder (default auto, as Memory's)"
    )
    pr.add_argument(
        "--show-failures",
        type=_count,
        default=0,
        metavar="N",
        help="print the first N failed probes with their context",
    )
    pr.add_argument("--json", metavar="PATH", help="also write every probe's result as JSON to PATH")
    pr.add_argument("--no-cache", action="store_true", help="do not cache embeddings on disk")
    pr.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress on stderr")
    pr.set_defaults(func=_run_profile, **{_CLI_CHECK: _check_profile})


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
        default=None,
        choices=EMBEDDERS,
        help="the embedder: of Memory on LoCoMo's product path (default auto, as Memory's), of the "
        "engine's vector leg (default minilm: offline int8 all-MiniLM-L6-v2; none is refused there)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the full results as JSON to PATH")
    p.add_argument(
        "--store",
        metavar="DSN",
        help="run the product path on PostgreSQL: each memory in a fresh schema trimem_eval_<n> of "
        "this database (postgresql://...), dropped after the run (default: in process)",
    )
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
    _write_json(report, args)
    return 0


def _engine_embedder(args: argparse.Namespace) -> str:
    if args.embedder == "none":
        raise UsageError("argument --embedder: the engine path needs an embedder (none works with --path product)")
    return str(args.embedder or "minilm")


def _product_embedder(args: argparse.Namespace) -> str | None:
    return None if args.embedder == "none" else str(args.embedder or "auto")


def _run_locomo(args: argparse.Namespace) -> int:
    path = _data_path(args.data, "locomo10.json")
    if not path.is_file():
        print(f"trimem eval: LoCoMo data not found at {path} (pass --data)", file=sys.stderr)
        return 2
    which = getattr(args, "eval_path", "engine")
    engine_embedder = _engine_embedder(args) if which != "product" else ""
    conversations = [c.strip() for c in args.conversations.split(",") if c.strip()] if args.conversations else None
    cache = None if args.no_cache else default_cache_dir()
    stream = None if args.quiet else sys.stderr
    product: dict[str, Any] | None = None
    stores = SchemaPerMemory(args.store) if args.store else None
    try:
        if which != "engine":
            product = evaluate_locomo_product(
                path, embedder=_product_embedder(args), conversations=conversations, cache_dir=cache, progress=stream,
                memory_factory=stores,
            )  # fmt: skip
            print(format_product_table(product))
            print()
            print(product_summary(product), flush=True)
            if which == "product":
                _write_json(product, args)
                return 0
            print()
        report = evaluate_locomo(
            path,
            embedder=engine_embedder,
            settings=_settings_from(args, LOCOMO_DEFAULTS),
            conversations=conversations,
            modes=_modes(args.modes),
            cache_dir=cache,
            progress=stream,
        )
    except (ValueError, ImportError) as exc:
        print(f"trimem eval: {exc}", file=sys.stderr)
        return 2
    finally:
        if stores is not None:
            stores.drop()
    # --path both: the engine report as before, with the product report under "product"
    return _finish(report if product is None else {**report, "product": product}, format_locomo_table(report), args)


def _write_json(report: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _output_problem(text: str) -> str | None:
    path = Path(text).expanduser()
    if path.is_dir():
        return f"{text!r} is a folder; give a file path"
    return None if path.parent.is_dir() else f"folder not found: {str(path.parent)!r}"


def _check_profile(args: argparse.Namespace) -> None:
    """Before anything is embedded: --json can be written and every suite file reads (the
    paths go to ``args.suite_paths``)."""
    if args.json:
        problem = _output_problem(args.json)
        if problem is not None:
            raise UsageError(f"argument --json: {problem}")
    if args.suite:
        paths = [Path(p).expanduser() for p in args.suite]
        for p in paths:
            if not p.is_file():
                raise UsageError(f"argument --suite: file not found: {str(p)!r}")
        option = "argument --suite"
    else:
        splits = SPLITS if args.split == "both" else (args.split,)
        langs = LANGS if args.lang == "both" else (args.lang,)
        paths, missing = suite_paths(splits, langs)
        if not paths:
            raise UsageError(
                f"no phrasing suite for split {args.split} and language {args.lang} in {SUITE_DIR} "
                f"(looked for {', '.join(p.name for p in missing)}); pass --suite PATH"
            )
        if missing and not args.quiet:
            print(f"trimem eval profile: skipping missing suites {', '.join(p.name for p in missing)}", file=sys.stderr)
        option = "built-in suite"
    for p in paths:
        try:
            load_suite(p)
        except SuiteError as exc:
            raise UsageError(f"{option}: {exc}") from None
    args.suite_paths = paths


def _run_profile(args: argparse.Namespace) -> int:
    if not hasattr(args, "suite_paths"):  # called without the CLI's check
        _check_profile(args)
    report = evaluate_profile(
        args.suite_paths,
        embedder=None if args.embedder == "none" else args.embedder,
        cache_dir=None if args.no_cache else default_cache_dir(),
        progress=None if args.quiet else sys.stderr,
    )
    print(format_profile_report(report))
    if args.show_failures:
        print()
        print(format_failures(report, args.show_failures))
    _write_json(report, args)
    return 0


def _run_documents(args: argparse.Namespace) -> int:
    name = args.dataset
    path = _data_path(args.data, name)
    if not (path / "corpus.jsonl").is_file():
        print(f"trimem eval: {name} data not found at {path} (pass --data)", file=sys.stderr)
        return 2
    which = args.eval_path
    cache = None if args.no_cache else default_cache_dir()
    stream = None if args.quiet else sys.stderr
    stores = SchemaPerMemory(args.store) if args.store else None
    try:
        if which == "product":
            report: dict[str, Any] = {
                "dataset": name,
                "data": str(path),
                "settings": {},
                "results": {},
                "wall_s": 0.0,
            }
        else:
            report = evaluate_scifact(
                path,
                embedder=_engine_embedder(args),
                settings=_settings_from(args, SCIFACT_DEFAULTS),
                modes=_modes(args.modes),
                max_docs=args.max_docs,
                max_queries=args.max_queries,
                cache_dir=cache,
                progress=stream,
                dataset=name,
            )
        if which != "engine":
            data = load_scifact(path, max_docs=args.max_docs, max_queries=args.max_queries)
            product = evaluate_documents_product(
                data, embedder=_product_embedder(args), cache_dir=cache, progress=stream, label=name,
                memory_factory=stores,
            )  # fmt: skip
            report["results"] = {PRODUCT_ROW: product.pop("row"), **report["results"]}
            report["product"] = product
            report.setdefault("embedder", product["embedder"])
    except (ValueError, ImportError) as exc:
        print(f"trimem eval: {exc}", file=sys.stderr)
        return 2
    finally:
        if stores is not None:
            stores.drop()
    return _finish(report, format_scifact_table(report), args)
