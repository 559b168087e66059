"""``python -m trimem ingest``: load a history into a store, in batches, resumably.

Two inputs are read:

* **JSONL**, one message per line: ``{"text": ..., "user_id": ..., "role": ..., "session_id": ...,
  "timestamp": ..., "metadata": {...}, "importance": ..., "agent_id": ...}``; ``content`` may stand for
  ``text`` (chat-message style); ``timestamp`` is ISO 8601 or seconds since the epoch; ``user_id``
  may come from ``--user-id`` instead.
* **LoCoMo-style conversations** (one JSON file: a list of samples, or one, each with a
  ``conversation`` of ``session_<n>`` turn lists and ``session_<n>_date_time``): every turn becomes
  ``"<speaker>: <text>"`` (plus the photo it shares) of user ``sample_id`` (or ``--user-id``), in
  session ``session_<n>`` at the session's time, its ``dia_id`` in the metadata.

Messages go in with ``Memory.retain_many``, ``--batch`` at a time (one log write each). After each
batch the position (messages done, and a digest of the input's first bytes) is written to the
store itself, as an item under ``("trimem", "ingest")``: running the same command again after an
interruption continues after the last batch that was written (``--restart`` starts over). A batch
holding a bad message writes nothing; the error names its line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from trimem._usage import UsageError
from trimem.cli.store import Subparsers, emit, open_store, store_options

__all__ = ["Message", "add_parser", "read_jsonl", "read_locomo"]

POSITION_NAMESPACE = ("trimem", "ingest")
_HEAD_BYTES = 1 << 16  # the part of the input whose digest says "the same file" on a resume
_MESSAGE_FIELDS = ("text", "content", "user_id", "agent_id", "role", "session_id", "timestamp", "metadata",
                   "importance")  # fmt: skip


@dataclass(frozen=True)
class Message:
    line: int  # where it was read (1-based line, or turn number in a conversation file)
    fields: dict[str, Any]  # retain_many's item


class InputError(ValueError):
    """A message the input cannot give (the message says where)."""


def _timestamp(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{where}: timestamp must be ISO 8601 text or seconds since the epoch, got {value!r}")
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"{where}: timestamp {value!r} is not ISO 8601") from None
        return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
    raise InputError(f"{where}: timestamp must be ISO 8601 text or seconds since the epoch, got {value!r}")


def _message(raw: Any, line: int, user_id: str | None, agent_id: str) -> Message:
    where = f"line {line}"
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_MESSAGE_FIELDS))
    if unknown:
        raise InputError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(_MESSAGE_FIELDS)})")
    text = raw.get("text", raw.get("content"))
    if not isinstance(text, str):
        raise InputError(f"{where}: needs a text (or content) string")
    user = raw.get("user_id", user_id)
    if user is None:
        raise InputError(f"{where}: no user_id (give one per line, or --user-id)")
    fields: dict[str, Any] = {"text": text, "user_id": user, "agent_id": raw.get("agent_id", agent_id)}
    for name in ("role", "session_id", "metadata", "importance"):
        if raw.get(name) is not None:
            fields[name] = raw[name]
    stamp = _timestamp(raw.get("timestamp"), where)
    if stamp is not None:
        fields["timestamp"] = stamp
    return Message(line, fields)


def read_jsonl(stream: TextIO, *, user_id: str | None, agent_id: str) -> Iterator[Message]:
    """The messages of a JSONL stream (blank lines skipped), in order."""
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise InputError(f"line {n}: not JSON ({exc})") from None
        yield _message(raw, n, user_id, agent_id)


def read_locomo(data: Any, *, user_id: str | None, agent_id: str) -> Iterator[Message]:
    """The turns of LoCoMo-style conversations, session by session, as messages."""
    from trimem.bench.evaluate import parse_session_time, turn_text

    samples = data if isinstance(data, list) else [data]
    n = 0
    for sample in samples:
        conv = sample.get("conversation") if isinstance(sample, Mapping) else None
        if not isinstance(conv, Mapping):
            raise InputError("not a LoCoMo-style file: every sample needs a 'conversation' object")
        user = user_id or str(sample.get("sample_id", "conversation"))
        sessions = sorted((k for k in conv if k.startswith("session_") and k[8:].isdigit()), key=lambda k: int(k[8:]))
        for key in sessions:
            try:
                when = parse_session_time(str(conv.get(f"{key}_date_time", "")))
            except ValueError:
                raise InputError(f"{user} {key}: no readable {key}_date_time") from None
            for turn in conv[key] or []:
                n += 1
                if not isinstance(turn, Mapping) or not isinstance(turn.get("text"), str):
                    raise InputError(f"{user} {key}: turn {n} has no text")
                fields: dict[str, Any] = {
                    "text": turn_text(turn, None), "user_id": user, "agent_id": agent_id, "session_id": key,
                    "timestamp": when, "metadata": {"dia_id": turn["dia_id"]} if "dia_id" in turn else {},
                }  # fmt: skip
                yield Message(n, fields)


def _input_format(path: Path, asked: str) -> str:
    if asked != "auto":
        return asked
    with path.open("rb") as fh:
        head = fh.read(_HEAD_BYTES).lstrip()
    return (
        "locomo" if head.startswith(b"[") or (head.startswith(b"{") and b'"conversation"' in head[:4096]) else "jsonl"
    )


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.sha256(fh.read(_HEAD_BYTES)).hexdigest()


class _Progress:
    """A tqdm bar on a terminal (when tqdm is installed), else a line every tenth of the way."""

    def __init__(self, total: int | None, *, enabled: bool, done: int) -> None:
        self.total, self.done, self.enabled = total, done, enabled
        self._bar: Any = None
        self._next = 0.0
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, initial=done, unit="msg", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.enabled and self.total:
            share = self.done / self.total
            if share >= self._next:
                print(f"ingest: {self.done}/{self.total} messages ({share:.0%})", file=sys.stderr, flush=True)
                self._next = share + 0.1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "ingest",
        help="load a history (JSONL messages or LoCoMo-style conversations) into a store, resumably",
        description="Retains every message of INPUT in batches (Memory.retain_many) and records the position "
        "in the store after each batch, so that running the same command again after an interruption "
        "continues where it stopped. The store is created if missing.",
        epilog="Example: python -m trimem ingest chats.jsonl --path ./agent_memory --user-id u1",
    )
    p.add_argument("input", metavar="INPUT", help="a JSONL file of messages, or a LoCoMo-style JSON file")
    store_options(p, user=None)
    p.add_argument("--format", choices=("auto", "jsonl", "locomo"), default="auto", help="INPUT's kind (default auto)")
    p.add_argument("--batch", type=int, default=512, help="messages per write (default 512)")
    p.add_argument("--restart", action="store_true", help="ignore a saved position and start from the beginning")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run_ingest)


def run_ingest(args: argparse.Namespace) -> int:
    source = Path(args.input).expanduser()
    if not source.is_file():
        raise UsageError(f"argument INPUT: file not found: {args.input!r}")
    if args.batch < 1:
        raise UsageError(f"argument --batch: must be at least 1, got {args.batch}")
    kind = _input_format(source, args.format)
    key = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:32]
    digest = _digest(source)
    t0 = time.perf_counter()
    with open_store(args, create=True) as mem:
        saved = mem.items.get(POSITION_NAMESPACE, key)
        start = 0
        if saved is not None and not args.restart and saved.value.get("digest") == digest:
            start = int(saved.value.get("done", 0))
        with source.open(encoding="utf-8") as fh:
            if kind == "locomo":
                try:
                    data = json.load(fh)
                except ValueError as exc:
                    raise UsageError(f"argument INPUT: not JSON ({exc})") from None
                try:
                    turns = list(read_locomo(data, user_id=args.user_id, agent_id=args.agent_id))
                except InputError as exc:
                    raise UsageError(f"argument INPUT: {exc}") from None
                messages: Iterator[Message] = iter(turns)
                total: int | None = len(turns)
            else:
                messages = read_jsonl(fh, user_id=args.user_id, agent_id=args.agent_id)
                total = _count_lines(source)
            written, done = 0, 0
            bar = _Progress(total, enabled=not args.quiet, done=0)
            batch: list[Message] = []
            try:
                for message in messages:
                    done += 1
                    if done <= start:
                        continue
                    if done == start + 1 and start:
                        bar.advance(start)  # what an earlier run wrote
                    batch.append(message)
                    if len(batch) == args.batch:
                        written += _write(mem, batch, key, digest, done, source)
                        bar.advance(len(batch))
                        batch = []
                if batch:
                    written += _write(mem, batch, key, digest, done, source)
                    bar.advance(len(batch))
            except InputError as exc:
                print(f"trimem ingest: error: {exc}; {written} messages were written before it "
                      f"(run again to continue after them)", file=sys.stderr)  # fmt: skip
                return 1
            finally:
                bar.close()
    seconds = time.perf_counter() - t0
    report = {"input": str(source), "format": kind, "messages": done, "skipped": min(start, done),
              "written": written, "seconds": round(seconds, 3)}  # fmt: skip
    emit(args, report, lambda: f"ingested {written} messages ({min(start, done)} done before) "
                                f"from {source} in {seconds:.1f} s")  # fmt: skip
    return 0


def _write(mem: Any, batch: list[Message], key: str, digest: str, done: int, source: Path) -> int:
    """One batch retained, then the position after it; a bad message names its line."""
    from trimem.errors import TrimemError

    try:
        mem.retain_many([m.fields for m in batch])
    except TrimemError as exc:
        where = f"line {batch[0].line}" if len(batch) == 1 else f"the batch of lines {batch[0].line}-{batch[-1].line}"
        raise InputError(f"{where}: {exc}") from None
    mem.items.put(POSITION_NAMESPACE, key, {"path": str(source), "digest": digest, "done": done}, index=False)
    return len(batch)
