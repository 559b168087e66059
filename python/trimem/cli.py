"""Command-line interface: ``python -m trimem <command> ...``.

Each command is a subparser registered in :data:`COMMANDS` by a ``(name, add)`` pair, where
``add(subparsers)`` creates the subparser and sets ``func`` (taking the parsed namespace and
returning an exit code) as its default. Add new commands (``demo``, ``eval``, ...) there.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

__all__ = ["COMMANDS", "build_parser", "main"]


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1] (or a percentage), got {text}")
    return value


def _add_demo(sub: argparse._SubParsersAction) -> None:
    from trimem.demo import add_parser

    add_parser(sub)


# --------------------------------------------------------------------------
# bench
# --------------------------------------------------------------------------


def _add_bench(sub: argparse._SubParsersAction) -> None:
    from trimem.bench.compare import FULL, QUICK
    from trimem.bench.peers import GROUPS, SYSTEMS

    p = sub.add_parser(
        "bench",
        help="same-run speed/recall comparison of trimem with hnswlib, bm25s, tantivy, ...",
        description=(
            "Build trimem and its peers once on one seeded dataset, time single queries (one "
            "per call from Python) over interleaved rounds so machine noise hits every system "
            "alike, check recall@10 against exact numpy answers, and print a markdown table "
            "plus trimem/peer latency ratios. Peers whose package is missing are skipped. "
            "Progress goes to stderr, the tables to stdout."
        ),
        epilog=(
            f"systems: {', '.join(SYSTEMS)}; groups: {', '.join(GROUPS)}. "
            f"Defaults: n={FULL['n']}, dim={FULL['dim']}, {FULL['queries']} queries, "
            f"{FULL['repeats']} repeats. Example: python -m trimem bench --quick "
            "--systems trimem,hnswlib --json /tmp/bench.json"
        ),
    )
    p.add_argument(
        "--quick", action="store_true",
        help=(f"small preset (n={QUICK['n']}, dim={QUICK['dim']}, {QUICK['queries']} queries, "
              f"{QUICK['repeats']} repeats; about a minute); explicit options still win"),
    )
    p.add_argument("--n", type=_positive_int, metavar="N",
                   help=f"number of records (default {FULL['n']})")
    p.add_argument("--dim", type=_positive_int, metavar="D",
                   help=f"vector dimension (default {FULL['dim']})")
    p.add_argument("--queries", type=_positive_int, metavar="Q",
                   help=f"number of queries (default {FULL['queries']})")
    p.add_argument("--repeats", type=_positive_int, metavar="R",
                   help=f"interleaved timing rounds (default {FULL['repeats']})")
    p.add_argument("--systems", metavar="LIST",
                   help="comma-separated systems or groups to run (default: all)")
    p.add_argument("--window", type=_fraction, default=0.1, metavar="F",
                   help="share of records inside each query's time window, e.g. 0.1 or 10%% "
                        "(default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="dataset seed (default 0)")
    p.add_argument("--threads", type=int, default=0, metavar="T",
                   help="build threads for the indexes (default 0 = all cores)")
    p.add_argument("--json", metavar="PATH", help="also write the full report as JSON to PATH")
    p.add_argument("--allow-debug", action="store_true",
                   help="time a debug build of the engine anyway (numbers are meaningless)")
    p.add_argument("--no-progress", action="store_true", help="no progress output on stderr")
    p.set_defaults(func=_run_bench)


def _run_bench(args: argparse.Namespace) -> int:
    from trimem.bench.compare import DebugBuildError, run

    systems = args.systems.split(",") if args.systems else None
    try:
        run(
            args.n,
            args.dim,
            quick=args.quick,
            systems=systems,
            repeats=args.repeats,
            seed=args.seed,
            json_path=args.json,
            n_queries=args.queries,
            window=args.window,
            threads=args.threads,
            allow_debug=args.allow_debug,
            show_progress=not args.no_progress,
        )
    except DebugBuildError as exc:
        print(f"trimem bench: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"trimem bench: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_eval(sub: argparse._SubParsersAction) -> None:
    from trimem.bench.evaluate import add_parser

    add_parser(sub)


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

COMMANDS: list[tuple[str, Callable[[argparse._SubParsersAction], None]]] = [
    ("demo", _add_demo),
    ("bench", _add_bench),
    ("eval", _add_eval),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trimem",
        description="trimem: fast embedded three-layer memory for LLM agents.",
    )
    from trimem import __version__

    parser.add_argument("--version", action="version", version=f"trimem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True
    for _name, add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
