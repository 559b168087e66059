"""Command-line interface: ``python -m trimem <command> ...``.

Each command is a subparser registered in :data:`COMMANDS` by a ``(name, add)`` pair, where
``add(subparsers)`` creates the subparser and sets ``func`` (taking the parsed namespace and
returning an exit code) as its default. Add new commands (``demo``, ``eval``, ...) there.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

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


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.demo import add_parser

    add_parser(sub)


# --------------------------------------------------------------------------
# bench
# --------------------------------------------------------------------------


def _int_list(text: str) -> list[int]:
    try:
        values = [_positive_int(t.strip()) for t in text.split(",") if t.strip()]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} in {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected comma-separated sizes, e.g. 10000,100000")
    return values


def _add_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.bench.compare import FULL, QUICK
    from trimem.bench.gate import DEFAULT_THRESHOLDS, SLOWDOWN_ENV
    from trimem.bench.peers import GROUPS, SYSTEMS

    p = sub.add_parser(
        "bench",
        help="same-run speed/recall comparison of trimem with hnswlib, bm25s, tantivy, ...; CI performance gate",
        description=(
            "Build trimem and its peers once on one seeded dataset, time single queries (one "
            "per call from Python) over interleaved rounds so machine noise hits every system "
            "alike, check recall@10 against exact numpy answers, and print a markdown table "
            "plus trimem/peer latency ratios. Peers whose package is missing are skipped. "
            "Progress goes to stderr, the tables to stdout. With --gate: check trimem/peer "
            "latency ratios against committed thresholds instead (exit 1 on a regression)."
        ),
        epilog=(
            f"systems: {', '.join(SYSTEMS)}; groups: {', '.join(GROUPS)}. "
            f"Defaults: n={FULL['n']}, dim={FULL['dim']}, {FULL['queries']} queries, "
            f"{FULL['repeats']} repeats. Examples: python -m trimem bench --quick "
            "--systems trimem,hnswlib --json /tmp/bench.json --plot /tmp/bench.png; "
            "python -m trimem bench --quick --scale 10000,100000 --plot /tmp/scaling.png; "
            f"python -m trimem bench --gate {DEFAULT_THRESHOLDS}"
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"small preset (n={QUICK['n']}, dim={QUICK['dim']}, {QUICK['queries']} queries, "
            f"{QUICK['repeats']} repeats; about a minute); explicit options still win"
        ),
    )
    p.add_argument("--n", type=_positive_int, metavar="N", help=f"number of records (default {FULL['n']})")
    p.add_argument(
        "--scale",
        type=_int_list,
        metavar="N1,N2,...",
        help="run the whole comparison at each of these record counts (e.g. "
        "10000,100000,1000000); every row of the JSON report carries its n",
    )
    p.add_argument("--dim", type=_positive_int, metavar="D", help=f"vector dimension (default {FULL['dim']})")
    p.add_argument("--queries", type=_positive_int, metavar="Q", help=f"number of queries (default {FULL['queries']})")
    p.add_argument(
        "--repeats",
        type=_positive_int,
        metavar="R",
        help=f"interleaved timing rounds (default {FULL['repeats']}; with "
        "--gate-calibrate: rounds per gate measurement)",
    )
    p.add_argument("--systems", metavar="LIST", help="comma-separated systems or groups to run (default: all)")
    p.add_argument(
        "--window",
        type=_fraction,
        default=None,
        metavar="F",
        help="share of records inside each query's time window, e.g. 0.1 or 10%% (default 0.1)",
    )
    p.add_argument("--seed", type=int, default=None, help="dataset seed (default 0)")
    p.add_argument(
        "--vectors",
        choices=("clustered", "minilm"),
        default="clustered",
        help="record and query vectors: seeded clustered ones (default), or MiniLM "
        "embeddings of the texts and queries (384-d, needs the minilm extra; "
        "cached on disk, the first 100k take ~10 min)",
    )
    p.add_argument(
        "--threads", type=int, default=0, metavar="T", help="build threads for the indexes (default 0 = all cores)"
    )
    p.add_argument("--json", metavar="PATH", help="also write the full report as JSON to PATH")
    p.add_argument(
        "--plot", metavar="PATH", help="also draw latency vs N and recall vs latency as a PNG (needs matplotlib)"
    )
    p.add_argument(
        "--from-json", metavar="PATH", help="do not measure: print (and with --plot, draw) a saved --json report"
    )
    p.add_argument(
        "--allow-debug",
        action="store_true",
        help="time a debug build of the engine anyway (numbers are meaningless; never honoured by --gate)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress output on stderr")
    g = p.add_argument_group(
        "CI performance gate",
        "trimem/peer p50 latency ratios (never absolute times) measured in this one process "
        "over interleaved rounds, each the median of per-round ratios, checked against the "
        "thresholds in a committed JSON file; one re-measurement before failing. Exit codes: "
        "0 pass, 1 a ratio over its threshold, 2 cannot run (debug build, missing peer, bad "
        f"file). ${SLOWDOWN_ENV}=X slows every trimem query X times (to see the gate fail).",
    )
    g.add_argument(
        "--gate",
        nargs="?",
        const=DEFAULT_THRESHOLDS,
        metavar="THRESHOLDS.json",
        help=f"run the gate against THRESHOLDS.json (default {DEFAULT_THRESHOLDS}); --json PATH saves the measurements",
    )
    g.add_argument(
        "--gate-calibrate",
        metavar="THRESHOLDS.json",
        help="measure the gate's ratios on this (quiet) machine and write "
        "thresholds = 1.5 x the median quiet ratio to THRESHOLDS.json; "
        "--n/--dim/--queries/--repeats/--seed/--window override its defaults",
    )
    g.add_argument(
        "--gate-runs",
        type=_positive_int,
        default=3,
        metavar="R",
        help="calibration runs, each with a fresh build (default 3)",
    )
    p.set_defaults(func=_run_bench)


def _run_gate_cli(args: argparse.Namespace) -> int:
    import shlex

    from trimem.bench import gate

    if args.gate is not None:
        extra = (
            [
                f"--{o.replace('_', '-')}"
                for o in (
                    "n",
                    "scale",
                    "dim",
                    "queries",
                    "repeats",
                    "systems",
                    "window",
                    "seed",
                    "plot",
                    "from_json",
                    "gate_calibrate",
                )
                if getattr(args, o) is not None
            ]
            + (["--quick"] if args.quick else [])
            + (["--vectors"] if args.vectors != "clustered" else [])
        )
        if extra:
            print(
                f"trimem bench --gate: {', '.join(extra)} cannot be combined with --gate "
                "(sizes and ratios come from the thresholds file)",
                file=sys.stderr,
            )
            return 2
        return gate.run_gate(args.gate, show_progress=not args.no_progress, json_path=args.json)
    cfg = gate.GateConfig()
    overrides = {
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "rounds": args.repeats,
        "seed": args.seed,
        "window": args.window,
    }
    cfg = gate.GateConfig(**{**cfg.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    command = [
        "python",
        "-m",
        "trimem",
        "bench",
        "--gate-calibrate",
        args.gate_calibrate,
        "--gate-runs",
        str(args.gate_runs),
    ]
    for opt, value in (
        ("--n", args.n),
        ("--dim", args.dim),
        ("--queries", args.queries),
        ("--repeats", args.repeats),
        ("--seed", args.seed),
        ("--window", args.window),
    ):
        if value is not None:
            command += [opt, str(value)]
    try:
        gate.calibrate(
            args.gate_calibrate,
            runs=args.gate_runs,
            config=cfg,
            command=shlex.join(command),
            show_progress=not args.no_progress,
        )
    except (gate.GateError, ValueError, RuntimeError) as exc:
        print(f"trimem bench --gate-calibrate: {exc}", file=sys.stderr)
        return 2
    return 0


def _run_bench(args: argparse.Namespace) -> int:
    from trimem.bench.compare import DebugBuildError, markdown, run

    if args.gate is not None or args.gate_calibrate is not None:
        return _run_gate_cli(args)
    if args.from_json is not None:
        import json
        from pathlib import Path

        try:
            report = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
            print(markdown(report))
            if args.plot:
                from trimem.bench.plot import plot

                print(f"wrote {plot(report, args.plot)}", file=sys.stderr)
        except ImportError as exc:
            print(f"trimem bench: {exc}", file=sys.stderr)
            return 2
        except (OSError, ValueError, KeyError) as exc:
            print(f"trimem bench: cannot use {args.from_json}: {exc}", file=sys.stderr)
            return 2
        return 0
    systems = args.systems.split(",") if args.systems else None
    try:
        run(
            args.n,
            args.dim,
            quick=args.quick,
            systems=systems,
            repeats=args.repeats,
            seed=0 if args.seed is None else args.seed,
            json_path=args.json,
            n_queries=args.queries,
            window=0.1 if args.window is None else args.window,
            threads=args.threads,
            allow_debug=args.allow_debug,
            show_progress=not args.no_progress,
            scale=args.scale,
            plot_path=args.plot,
            vectors=args.vectors,
        )
    except DebugBuildError as exc:
        print(f"trimem bench: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # --plot without matplotlib (checked before measuring)
        print(f"trimem bench: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"trimem bench: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_eval(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.bench.evaluate import add_parser

    add_parser(sub)


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

COMMANDS: list[tuple[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]] = [
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
