"""The commands that work on one store by hand: ``recall``, ``facts``, ``export``, ``import``,
``stats`` and ``check`` (``ingest`` lives in :mod:`trimem.cli.ingest`).

Each opens the store named by ``--path`` (a folder or a ``postgresql://`` DSN) with
``--embedder`` (default ``auto``: the model the store recorded), does one thing and prints it
as text, or as JSON with ``--json`` (one document on stdout, for scripts). A folder that holds
no store is refused before anything is created, except by ``import``, which may fill a new one.

Example::

    python -m trimem recall "which port did node use?" --path ./agent_memory --user-id u1
    python -m trimem facts set city Lisbon --path ./agent_memory --user-id u1 --json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from trimem._usage import UsageError
from trimem.cli import _positive_int

if TYPE_CHECKING:
    from trimem.memory import Memory

__all__ = ["Subparsers", "add_parsers", "emit", "open_store", "store_options"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # subscriptable only when checked


def store_options(p: argparse.ArgumentParser, *, user: bool | None = True) -> None:
    """The options every store command shares (`user`: required True, optional None, absent False)."""
    p.add_argument("--path", required=True, metavar="STORE", help="a store folder or a postgresql:// DSN")
    p.add_argument("--embedder", default="auto", help="the store's embedder (default auto: the one it recorded)")
    if user is not False:
        p.add_argument("--user-id", required=bool(user), help="the user whose memory to use")
        p.add_argument("--agent-id", default="default", help="the agent (default: default)")
    p.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")


def is_store_folder(path: Path) -> bool:
    """Whether the folder holds an embedded store (its log or a snapshot)."""
    return path.is_dir() and any(f.name.startswith(("wal-", "snapshot-")) for f in path.iterdir())


def open_store(args: argparse.Namespace, *, create: bool = False) -> Memory:
    """The memory at ``--path``; a folder without a store is a usage error unless `create`."""
    from trimem._backend.postgres import is_dsn
    from trimem.memory import Memory

    where = args.path
    if not is_dsn(where):
        folder = Path(where).expanduser()
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"argument --path: {where!r} is a file, not a store folder")
        if not create and not is_store_folder(folder):
            raise UsageError(f"argument --path: no trimem store in {where!r}")
        where = str(folder)
    return Memory(where, embedder=args.embedder)


def _plain(value: Any) -> Any:
    """A record as JSON-ready builtins (msgspec Structs, dataclasses, tuples)."""
    return msgspec.to_builtins(value, builtin_types=(), str_keys=True)


def emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    print(json.dumps(_plain(data), ensure_ascii=False, indent=2) if args.json else text())


# -------------------------------------------------------------------------- recall


def _add_recall(sub: Subparsers) -> None:
    p = sub.add_parser(
        "recall",
        help="what memory hands the model for a request (the rendered context, or --json)",
        description="Runs Memory.recall(QUERY) with its defaults and prints the rendered prompt context "
        "(or, with --json, the profile, episodes and knowledge with their scores). A recall from the "
        "command line counts nothing as used (touch=False).",
    )
    p.add_argument("query", help="the request, as the agent would pass it")
    store_options(p)
    p.add_argument("-k", type=_positive_int, default=5, help="episodes (default 5)")
    p.add_argument("--max-tokens", type=_positive_int, default=2000, help="render budget (default 2000)")
    p.add_argument("--session-id", help="the session whose working memory to include")
    p.set_defaults(func=_run_recall)


def _run_recall(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        bundle = mem.recall(
            args.query, user_id=args.user_id, agent_id=args.agent_id, k=args.k, session_id=args.session_id, touch=False
        )
        context = bundle.render(args.max_tokens)
        data: dict[str, Any] = {
            "query": bundle.query,
            "profile": [{"key": f.key, "value": f.value, "since": f.updated_at} for f in bundle.profile],
            "episodes": [_episode(r) for r in bundle.episodes],
            "knowledge": [{"id": r.doc.id, "text": r.doc.text, "score": r.scored.score} for r in bundle.knowledge],
            "context": context,
            "timings_ms": bundle.timings,
        }
        emit(args, data, lambda: context or "(nothing recalled)")
    return 0


def _episode(r: Any) -> dict[str, Any]:
    e = r.episode
    return {"id": e.id, "text": e.text, "role": e.role, "session_id": e.session_id, "timestamp": e.timestamp,
            "score": r.scored.score, "weak": r.scored.weak, "via_fact": r.via_fact}  # fmt: skip


# -------------------------------------------------------------------------- facts


def _add_facts(sub: Subparsers) -> None:
    p = sub.add_parser(
        "facts",
        help="a user's facts: list them, show one's history, set one",
        description="facts list: the user's current facts; facts history KEY: every version of one; "
        "facts set KEY VALUE: a new version (the old one kept as history).",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", title="actions")
    actions.required = True
    listing = actions.add_parser("list", help="the user's current facts")
    store_options(listing)
    listing.set_defaults(func=_run_facts_list)
    history = actions.add_parser("history", help="every version of one fact, oldest first")
    history.add_argument("key")
    store_options(history)
    history.set_defaults(func=_run_facts_history)
    setting = actions.add_parser("set", help="set a fact (a new version; the old one kept as history)")
    setting.add_argument("key")
    setting.add_argument("value")
    store_options(setting)
    setting.set_defaults(func=_run_facts_set)


def _run_facts_list(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        facts = mem.facts.list(user_id=args.user_id, agent_id=args.agent_id)
        rows = [{"key": f.key, "value": f.value, "version": f.version, "since": f.updated_at} for f in facts]
        emit(args, rows, lambda: "\n".join(f"{f.key}: {f.value}" for f in facts) or "(no facts)")
    return 0


def _run_facts_history(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        versions = mem.facts.history(args.key, user_id=args.user_id, agent_id=args.agent_id)
        if not versions:
            raise UsageError(f"argument key: the user has no fact {args.key!r}")

        def text() -> str:
            lines = []
            for v in versions:
                until = "now" if v.valid_to is None else _day(v.valid_to)
                lines.append(f"{v.op}: {v.value} (from {_day(v.valid_from)} until {until})")
            return "\n".join(lines)

        emit(args, versions, text)
    return 0


def _run_facts_set(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        change = mem.facts.set(args.key, args.value, user_id=args.user_id, agent_id=args.agent_id)
        emit(args, change, lambda: f"{change.op}: {change.key} = {change.value}")
    return 0


# -------------------------------------------------------------------------- export / import


def _add_export(sub: Subparsers) -> None:
    p = sub.add_parser(
        "export",
        help="write a store (or one user's memory) to one file",
        description="Writes every layer of the store, or of one --user-id, to OUTPUT (msgspec, atomic).",
    )
    p.add_argument("output", metavar="OUTPUT", help="the file to write")
    store_options(p, user=None)
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    out = Path(args.output).expanduser()
    if out.is_dir():
        raise UsageError(f"argument OUTPUT: {args.output!r} is a folder; give a file path")
    with open_store(args) as mem:
        done = mem.export(out, user_id=args.user_id, agent_id=args.agent_id)
        emit(args, done, lambda: f"exported {_counts(done)} to {out}")
    return 0


def _add_import(sub: Subparsers) -> None:
    p = sub.add_parser(
        "import",
        help="add an export file's memories to a store (created if missing)",
        description="Adds the memories of an export file to the store at --path under new ids.",
    )
    p.add_argument("input", metavar="INPUT", help="a file written by export")
    store_options(p, user=False)
    p.set_defaults(func=_run_import)


def _run_import(args: argparse.Namespace) -> int:
    source = Path(args.input).expanduser()
    if not source.is_file():
        raise UsageError(f"argument INPUT: file not found: {args.input!r}")
    with open_store(args, create=True) as mem:
        done = mem.import_from(source)
        emit(args, done, lambda: f"imported {_counts(done)} into {args.path}")
    return 0


def _counts(exported: Any) -> str:
    parts = [f"{n} {name}" for name, n in _plain(exported).items() if isinstance(n, int) and not isinstance(n, bool)]
    return ", ".join(parts)


# -------------------------------------------------------------------------- stats / check


def _add_stats(sub: Subparsers) -> None:
    p = sub.add_parser(
        "stats",
        help="what a store (or one user's memory) holds, per layer",
        description="Counts, bytes and ages per layer, for the whole store or one --user-id.",
    )
    store_options(p, user=None)
    p.set_defaults(func=_run_stats)


def _run_stats(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        st = mem.stats(user_id=args.user_id, agent_id=args.agent_id)

        def text() -> str:
            lines = [
                f"episodes: {st.episodic.count} ({st.episodic.bytes} bytes)",
                f"facts: {st.semantic.facts} ({st.semantic.fact_versions} versions)",
                f"knowledge documents: {st.semantic.knowledge.count}",
                f"working sessions: {st.working.sessions} ({st.working.turns} turns)",
                f"embedder: {st.embedder}",
            ]
            if st.users:
                lines.append("episodes per user: " + ", ".join(f"{u} {n}" for u, n in sorted(st.users.items())))
            return "\n".join(lines)

        emit(args, st, text)
    return 0


def _add_check(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check",
        help="open a store, report its recovery and verify every record's checksum",
        description="Opens the store (replaying its log: every snapshot and log record is read and its "
        "checksum verified; a torn tail from a crash is cut), reads every episode back, and reports "
        "what recovery found. Exit 0 when the store opened and reads back whole, 1 otherwise.",
    )
    store_options(p, user=False)
    p.set_defaults(func=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        recovery = mem.recovery()
        st = mem.stats()
        # every episode read back through its user's listing: decoded whole, and where the index says
        counted = 0
        for scope in st.users or {}:
            agent_id, _, user_id = scope.partition("/")
            counted += len(mem.episodes(user_id=user_id, agent_id=agent_id))
        data = {
            "ok": counted == st.episodic.count,
            "recovery": recovery,
            "episodes": st.episodic.count,
            "episodes_read_back": counted,
            "facts": st.semantic.facts,
            "knowledge": st.semantic.knowledge.count,
        }

        def text() -> str:
            if recovery is None:
                head = "a PostgreSQL store: the server recovers it (no log of ours to replay)"
            else:
                head = (
                    f"generation {recovery.generation}, snapshot {'loaded' if recovery.snapshot else 'none'}, "
                    f"{recovery.log_records} log records replayed, {recovery.torn_bytes} torn bytes cut, "
                    f"{len(recovery.removed_files)} stale files removed, {recovery.seconds:.2f} s"
                )
            state = "ok" if data["ok"] else "MISMATCH: the episodes read back do not add up to the episode count"
            return f"{head}\n{st.episodic.count} episodes, {st.semantic.facts} facts: {state}"

        emit(args, data, text)
    return 0 if data["ok"] else 1


def _day(us: int) -> str:
    from trimem.timeutil import from_micros

    return from_micros(us).strftime("%Y-%m-%d %H:%M")


def add_parsers(sub: Subparsers) -> None:
    """Registers recall, facts, export, import, stats and check."""
    for add in (_add_recall, _add_facts, _add_export, _add_import, _add_stats, _add_check):
        add(sub)
