"""Command-line interface: ``python -m trimem <command> ...``.

Each command is a subparser registered in :data:`COMMANDS` by a ``(name, add)`` pair, where
``add(subparsers)`` creates the subparser and sets ``func`` (taking the parsed namespace and
returning an exit code) as its default. Add new commands (``demo``, ``eval``, ...) there.

Errors never end in a traceback. A bad argument, whether argparse finds it or the command does
(raising :class:`UsageError`), prints the command's usage line and ``error: ...`` and exits 2.
An error trimem raises while a command runs (:class:`~trimem.errors.TrimemError`, or an
``OSError``) prints ``trimem: error: ...`` and exits 1; Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trimem._usage import UsageError
from trimem.errors import TrimemError

__all__ = ["COMMANDS", "UsageError", "build_parser", "main"]

# Namespace attributes the parsers set as defaults (never options of their own).
_PARSER = "_trimem_parser"
_CHECK = "_trimem_check"


class _Parser(argparse.ArgumentParser):
    """Every parser of the CLI: subparsers are made with the class of their parent. Each one
    stores itself as a default; a subparser's defaults override its parent's, so after parsing
    the namespace holds the innermost command's parser, whose usage line a :class:`UsageError`
    is reported with."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_defaults(**{_PARSER: self})


def _int(text: str, minimum: int) -> int:
    try:
        value = int(text.replace("_", ""))  # 1_000_000 reads like the docs write it
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _int(text, 1)


def _count(text: str) -> int:
    return _int(text, 0)


def _existing_file(text: str) -> str:
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"file not found: {text!r}")
    return text


def _output_problem(text: str, *, make_parents: bool) -> str | None:
    """Why ``text`` cannot become an output file, or None. Checked before a long run, which
    would otherwise fail only when it writes its result."""
    path = Path(text).expanduser()
    if path.is_dir():
        return f"{text!r} is a folder; give a file path"
    parent = path.parent
    if not make_parents:
        return None if parent.is_dir() else f"folder not found: {str(parent)!r}"
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return None if parent.is_dir() else f"cannot create a folder under {str(parent)!r}: it is not a folder"


def _output_file(text: str) -> str:
    """An output path whose missing folders the writer creates."""
    problem = _output_problem(text, make_parents=True)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


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


def _systems(text: str) -> list[str]:
    from trimem.bench.peers import GROUPS, SYSTEMS

    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated systems or groups, e.g. trimem,hnswlib")
    unknown = [n for n in names if n not in SYSTEMS and n not in GROUPS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown system {unknown[0]!r}; choose from: {', '.join([*SYSTEMS, *GROUPS])}"
        )
    return names


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
    p.add_argument(
        "--systems", type=_systems, metavar="LIST", help="comma-separated systems or groups to run (default: all)"
    )
    p.add_argument(
        "--window",
        type=_fraction,
        default=None,
        metavar="F",
        help="share of records inside each query's time window, e.g. 0.1 or 10%% (default 0.1)",
    )
    p.add_argument("--seed", type=_count, default=None, help="dataset seed (default 0)")
    p.add_argument(
        "--vectors",
        choices=("clustered", "minilm"),
        default="clustered",
        help="record and query vectors: seeded clustered ones (default), or MiniLM "
        "embeddings of the texts and queries (384-d, needs the minilm extra; "
        "cached on disk, the first 100k take ~10 min)",
    )
    p.add_argument(
        "--threads", type=_count, default=0, metavar="T", help="build threads for the indexes (default 0 = all cores)"
    )
    p.add_argument("--json", type=_output_file, metavar="PATH", help="also write the full report as JSON to PATH")
    p.add_argument(
        "--plot",
        type=_output_file,
        metavar="PATH",
        help="also draw latency vs N and recall vs latency as a PNG (needs matplotlib)",
    )
    p.add_argument(
        "--from-json",
        type=_existing_file,
        metavar="PATH",
        help="do not measure: print (and with --plot, draw) a saved --json report",
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
        type=_output_file,
        metavar="THRESHOLDS.json",
        help="measure the gate's ratios on this (quiet) machine and write "
        "thresholds = 1.3 x the median quiet ratio to THRESHOLDS.json; "
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
            raise UsageError(
                f"argument --gate: {', '.join(extra)} cannot be combined with --gate "
                "(sizes and ratios come from the thresholds file)"
            )
        # The default file is relative to the repository root: outside it, say how to make one.
        if not Path(args.gate).expanduser().is_file():
            raise UsageError(
                f"argument --gate: thresholds file {args.gate!r} not found; create it on a quiet machine "
                f"with `python -m trimem bench --gate-calibrate {args.gate}`"
            )
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
    from trimem.bench.compare import DebugBuildError, K, markdown, run

    if args.gate is not None or args.gate_calibrate is not None:
        return _run_gate_cli(args)
    if args.from_json is not None:
        try:
            report = json.loads(Path(args.from_json).expanduser().read_text(encoding="utf-8"))
            table = markdown(report)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"argument --from-json: {args.from_json!r} is not a saved --json report ({exc})") from None
        print(table)
        if args.plot:
            try:
                from trimem.bench.plot import plot

                print(f"wrote {plot(report, args.plot)}", file=sys.stderr)
            except ImportError as exc:
                raise UsageError(str(exc)) from None
        return 0
    for size in args.scale or ([] if args.n is None else [args.n]):
        if size < K:
            option = "--scale" if args.scale else "--n"
            raise UsageError(f"argument {option}: needs at least {K} records (recall@{K} is measured), got {size}")
    try:
        run(
            args.n,
            args.dim,
            quick=args.quick,
            systems=args.systems,
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
        print(f"trimem bench: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # --plot without matplotlib (checked before measuring)
        raise UsageError(str(exc)) from None  # it names --plot and the package
    except ValueError as exc:  # values run() refuses, e.g. a --dim too small for the dataset's clusters
        raise UsageError(str(exc)) from None
    except RuntimeError as exc:  # no selected system could be built here
        print(f"trimem bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _add_eval(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.bench.eval_cli import add_parser

    add_parser(sub)
    sub.choices["eval"].set_defaults(**{_CHECK: _check_eval})


def _check_eval(args: argparse.Namespace) -> None:
    """What ``eval``'s options cannot check alone, before anything is loaded or embedded:
    numbers are in range, --json can be written (the run writes it last), the data are there."""
    from trimem.bench.eval_cli import _data_path, _modes

    locomo = args.dataset == "locomo"
    if locomo:
        at_least = {"--time-slack": (args.time_slack, 0), "--context": (args.context, 0)}
        at_least["--vector-context"] = (args.vector_context, 0)
    else:
        at_least = {"--max-docs": (args.max_docs, 1), "--max-queries": (args.max_queries, 1)}
    at_least["--window"] = (args.window, 1)
    for option, (value, minimum) in at_least.items():
        if value is not None and value < minimum:
            raise UsageError(f"argument {option}: must be at least {minimum}, got {value}")
    if not (math.isfinite(args.rrf_k) and args.rrf_k >= 0):
        raise UsageError(f"argument --rrf-k: must be a finite number >= 0, got {args.rrf_k}")
    if not all(math.isfinite(w) for w in args.weights):
        raise UsageError(f"argument --weights: must be finite numbers, got {args.weights}")
    try:
        _modes(args.modes)
    except ValueError as exc:
        raise UsageError(f"argument --modes: {exc}") from None
    if args.json:
        problem = _output_problem(args.json, make_parents=False)
        if problem is not None:
            raise UsageError(f"argument --json: {problem}")

    path = _data_path(args.data, "locomo10.json" if locomo else args.dataset)
    where = "" if args.data else " (the default; pass --data or set $TRIMEM_DATA)"
    if locomo:
        if path.is_dir():
            raise UsageError(f"argument --data: {str(path)!r} is a folder; LoCoMo is one file, locomo10.json")
        if not path.is_file():
            raise UsageError(f"argument --data: LoCoMo file not found: {str(path)!r}{where}")
        _check_locomo(path, args.conversations)
    else:
        label = {"scifact": "SciFact", "cmrc2018": "CMRC 2018"}.get(args.dataset, args.dataset)
        if path.exists() and not path.is_dir():
            raise UsageError(f"argument --data: {str(path)!r} is not a folder; {label} is the {args.dataset} folder")
        if not path.is_dir():
            raise UsageError(f"argument --data: {label} folder not found: {str(path)!r}{where}")
        missing = [n for n in ("corpus.jsonl", "queries.jsonl") if not (path / n).is_file()]
        if not (path / "qrels" / "test.tsv").is_file() and not (path / "qrels.tsv").is_file():
            missing.append("qrels/test.tsv or qrels.tsv")
        if missing:
            raise UsageError(f"argument --data: {str(path)!r} is not the {label} folder: no {', '.join(missing)}")


def _check_locomo(path: Path, conversations: str | None) -> None:
    """The file is LoCoMo's (a list of samples with ids), and holds the --conversations asked."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        ids = [str(sample["sample_id"]) for sample in raw]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"argument --data: {str(path)!r} is not LoCoMo's locomo10.json ({exc})") from None
    if conversations is not None:
        wanted = [c.strip() for c in conversations.split(",") if c.strip()]
        if not wanted:
            raise UsageError("argument --conversations: expected comma-separated sample ids, e.g. conv-26,conv-30")
        unknown = [c for c in wanted if c not in ids]
        if unknown:
            raise UsageError(
                f"argument --conversations: not in {path.name}: {', '.join(unknown)} (it has {', '.join(ids)})"
            )


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# migrate
# --------------------------------------------------------------------------


def _add_migrate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "migrate",
        help="copy a whole memory between a folder and PostgreSQL (either way)",
        description="Copies every layer of the memory at --from into the empty one at --to (a folder or a "
        "postgresql:// DSN with ?schema=...), with the source's embedder and vectors, then compares counts "
        "and a sample of recalls. Example: python -m trimem migrate --from ./agent_memory --to "
        "'postgresql://me@db/mem?schema=bot'",
    )
    p.add_argument("--from", dest="source", required=True, metavar="STORE", help="the memory to copy")
    p.add_argument("--to", dest="destination", required=True, metavar="STORE", help="an empty memory to fill")
    p.add_argument("--embedder", default="auto", help="the source's embedder (default auto: the one it recorded)")
    p.add_argument("--reset", action="store_true", help="empty the destination first (re-running a migration)")
    p.add_argument("--sample", type=_positive_int, default=20, help="episodes recalled on both sides (default 20)")
    p.set_defaults(func=_run_migrate)


def _run_migrate(args: argparse.Namespace) -> int:
    from trimem.migrate import migrate

    report = migrate(args.source, args.destination, embedder=args.embedder, reset=args.reset, sample=args.sample)
    print("| kind | source | destination |\n|---|---:|---:|")
    for kind, n in report.source_counts.items():
        print(f"| {kind} | {n} | {report.counts.get(kind, 0)} |")
    print(f"recalls of sampled episodes by their own text, first on both sides: "
          f"{report.recalls_matched}/{report.recalls_sampled}")  # fmt: skip
    print("migrate: ok" if report.ok() else "migrate: MISMATCH (see the table)")
    return 0 if report.ok() else 1


# --------------------------------------------------------------------------
# mcp
# --------------------------------------------------------------------------


def _add_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve a memory to MCP clients (desktop and IDE assistants) over stdio",
        description="Runs an MCP server on stdin/stdout over the memory at --path (a folder or a postgresql:// "
        "DSN): tools retain, recall, reflect, get_fact, set_fact, forget, memory_stats and those of the "
        "reference knowledge-graph memory server. Needs the mcp extra. Example client entry: "
        '{"command": "python", "args": ["-m", "trimem", "mcp", "--path", "/home/me/memory", "--user-id", "me"]}',
    )
    p.add_argument("--path", required=True, metavar="STORE", help="a folder or a postgresql:// DSN")
    p.add_argument("--user-id", help="pin every tool to this user (else each tool call names its user)")
    p.add_argument("--embedder", default="auto", help="the memory's embedder (default auto)")
    p.set_defaults(func=_run_mcp)


def _run_mcp(args: argparse.Namespace) -> int:
    from trimem.integrations.mcp import serve_stdio

    serve_stdio(args.path, args.user_id, embedder=args.embedder)
    return 0


def _add_ingest(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.cli.ingest import add_parser

    add_parser(sub)


def _add_store_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from trimem.cli.store import add_parsers

    add_parsers(sub)


COMMANDS: list[tuple[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]] = [
    ("demo", _add_demo),
    ("ingest", _add_ingest),
    ("recall, facts, export, import, stats, check", _add_store_commands),
    ("bench", _add_bench),
    ("eval", _add_eval),
    ("migrate", _add_migrate),
    ("mcp", _add_mcp),
]


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
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
    # parse_known_args, so that a stray option is reported with its own command's usage line
    args, extra = parser.parse_known_args(argv)
    command: argparse.ArgumentParser = getattr(args, _PARSER, parser)
    if extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        check: Callable[[argparse.Namespace], None] | None = getattr(args, _CHECK, None)
        if check is not None:
            check(args)
        return int(args.func(args) or 0)
    except UsageError as exc:
        # argparse's error() without its sys.exit: main() returns the status, as for any failure
        command.print_usage(sys.stderr)
        print(f"{command.prog}: error: {exc}", file=sys.stderr)
        return 2
    except TrimemError as exc:
        print(f"trimem: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (`... | head`): point stdout at /dev/null so the flush at exit
        # does not fail again, and stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"trimem: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("trimem: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
