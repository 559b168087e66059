"""The phrasing suites: does what ``Memory.recall(...).render()`` hands the model carry the memory a
request needs, however the request is phrased (``python -m trimem eval profile``)?

A suite (``trimem/bench/phrasing/{dev,test}_{en,zh}.json``, or any file given with ``--suite``)
holds users, each with memories told over months and probes asked at the user's "now"::

    {"suite": "trimem-phrasing", "version": 1, "split": "test", "lang": "en",
     "users": [{"user_id": "en-t01", "now": "2026-11-20T10:00:00Z",
                "memories": [{"text": "...", "days_ago": 130, "kind": "fact"},
                             {"text": "...", "days_ago": 20, "kind": "update", "updates": 0}],
                "probes": [{"id": "en-t01-01", "request": "...", "kind": "indirect",
                            "expect_any": ["..."], "stale": ["..."], "about": 0}]}]}

Per user, the product path with defaults: a fresh ``Memory(embedder=...)`` (``"auto"``); every
memory retained in order (``role="user"``, stamped ``now - days_ago`` days); ``mem.reflect``;
then per probe ``mem.recall(request, user_id=..., now=now).render(max_tokens=300)``.

Verdicts (:func:`verdict`): a probe of kind ``indirect``, ``direct`` or ``changed`` passes when
one of its ``expect_any`` strings occurs in the rendered text (case-insensitive) and none of its
``stale`` strings occurs before the first expected one (a superseded value may be shown as
history, after the current one). A ``never_said`` probe asks for something the user never told:
it passes when the bundle shows no confident match (:func:`confident`). The report gives the
pass rate of the other probes per split × language and per kind, and the share of never-said
probes with no confident match, separately: the two measure different failures (missing what was
said; presenting what was not said as known).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from trimem.bench.evaluate import _progress
from trimem.bench.meter import Meter
from trimem.bench.product import MemoryFactory, _embedder_name, _new_memory, product_embedder, weak_label

__all__ = [
    "LANGS",
    "MAX_TOKENS",
    "PROBE_KINDS",
    "SPLITS",
    "SUITE_DIR",
    "Probe",
    "Suite",
    "SuiteError",
    "SuiteMemory",
    "SuiteUser",
    "confident",
    "evaluate_profile",
    "format_failures",
    "format_profile_report",
    "load_suite",
    "suite_paths",
    "verdict",
]

SUITE_DIR = Path(__file__).with_name("phrasing")
SPLITS = ("dev", "test")
LANGS = ("en", "zh")
PROBE_KINDS = ("indirect", "direct", "changed", "never_said")
MEMORY_KINDS = ("fact", "other", "update")
MAX_TOKENS = 300  # the render budget of each probe: a small share of a prompt, as an agent would give it
NEVER_SAID = "never_said"


class SuiteError(ValueError):
    """A suite file that does not follow the schema (the message says where)."""


@dataclass(frozen=True)
class SuiteMemory:
    text: str
    days_ago: float
    kind: str = "other"
    updates: int | None = None  # the memory index an "update" supersedes


@dataclass(frozen=True)
class Probe:
    id: str
    request: str
    kind: str
    expect_any: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    about: int | None = None  # the memory index the probe is about


@dataclass(frozen=True)
class SuiteUser:
    user_id: str
    now: datetime
    memories: tuple[SuiteMemory, ...]
    probes: tuple[Probe, ...]


@dataclass(frozen=True)
class Suite:
    path: str
    split: str
    lang: str
    users: tuple[SuiteUser, ...]


# ============================================================================ loading


def _get(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = ...) -> Any:
    if key not in obj:
        if default is ...:
            raise SuiteError(f"{where}: missing {key!r}")
        return default
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SuiteError(f"{where}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _strings(obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = _get(obj, key, list, where, [])
    if not all(isinstance(v, str) and v for v in values):
        raise SuiteError(f"{where}: {key!r} must be a list of non-empty strings")
    return tuple(values)


def _user(raw: Any, where: str) -> SuiteUser:
    if not isinstance(raw, Mapping):
        raise SuiteError(f"{where}: a user is an object")
    uid = _get(raw, "user_id", str, where)
    where = f"{where} ({uid})"
    try:
        now = datetime.fromisoformat(_get(raw, "now", str, where))
    except ValueError as exc:
        raise SuiteError(f"{where}: 'now' is not an ISO date-time ({exc})") from None
    if now.tzinfo is None:
        raise SuiteError(f"{where}: 'now' needs a time zone (e.g. ...Z)")
    memories = []
    for i, m in enumerate(_get(raw, "memories", list, where)):
        at = f"{where} memory {i}"
        if not isinstance(m, Mapping):
            raise SuiteError(f"{at}: a memory is an object")
        kind = _get(m, "kind", str, at, "other")
        if kind not in MEMORY_KINDS:
            raise SuiteError(f"{at}: kind {kind!r} is not one of {', '.join(MEMORY_KINDS)}")
        days = _get(m, "days_ago", (int, float), at)
        if days < 0:
            raise SuiteError(f"{at}: days_ago must be >= 0")
        updates = _get(m, "updates", int, at, None)
        if updates is not None and not 0 <= updates < i:
            raise SuiteError(f"{at}: 'updates' must name an earlier memory")
        memories.append(SuiteMemory(_get(m, "text", str, at), float(days), kind, updates))
    probes = []
    for i, p in enumerate(_get(raw, "probes", list, where)):
        at = f"{where} probe {i}"
        if not isinstance(p, Mapping):
            raise SuiteError(f"{at}: a probe is an object")
        kind = _get(p, "kind", str, at)
        if kind not in PROBE_KINDS:
            raise SuiteError(f"{at}: kind {kind!r} is not one of {', '.join(PROBE_KINDS)}")
        expect = _strings(p, "expect_any", at)
        if kind != NEVER_SAID and not expect:
            raise SuiteError(f"{at}: a {kind} probe needs expect_any")
        about = _get(p, "about", int, at, None)
        if about is not None and not 0 <= about < len(memories):
            raise SuiteError(f"{at}: 'about' is not a memory index")
        probes.append(
            Probe(_get(p, "id", str, at), _get(p, "request", str, at), kind, expect, _strings(p, "stale", at), about)
        )
    return SuiteUser(uid, now, tuple(memories), tuple(probes))


def load_suite(path: str | Path) -> Suite:
    """Reads and checks one suite file (:class:`SuiteError` says what is wrong and where)."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{p}: not a readable JSON file ({exc})") from None
    if not isinstance(raw, Mapping) or raw.get("suite") != "trimem-phrasing":
        raise SuiteError(f'{p}: not a phrasing suite (expected "suite": "trimem-phrasing")')
    if raw.get("version") != 1:
        raise SuiteError(f"{p}: unsupported version {raw.get('version')!r} (this runner reads version 1)")
    where = str(p)
    users = tuple(_user(u, f"{where} user {i}") for i, u in enumerate(_get(raw, "users", list, where)))
    return Suite(str(p), _get(raw, "split", str, where), _get(raw, "lang", str, where), users)


def suite_paths(
    splits: Iterable[str] = SPLITS, langs: Iterable[str] = LANGS, directory: Path = SUITE_DIR
) -> tuple[list[Path], list[Path]]:
    """The built-in suite files of these splits and languages: (present, missing)."""
    wanted = [directory / f"{s}_{lang}.json" for s in splits for lang in langs]
    return [p for p in wanted if p.is_file()], [p for p in wanted if not p.is_file()]


# ============================================================================ verdicts


def verdict(text: str, probe: Probe) -> str | None:
    """Why a (not never-said) probe fails on the rendered `text`, or None when it passes: some
    expected string occurs (case-insensitive) and no stale string occurs before the first one."""
    low = text.lower()
    found = [i for i in (low.find(e.lower()) for e in probe.expect_any) if i >= 0]
    if not found:
        return "no expected string in the context"
    first = min(found)
    for s in probe.stale:
        at = low.find(s.lower())
        if 0 <= at < first:
            return f"stale {s!r} comes before the expected value"
    return None


def confident(bundle: Any) -> bool:
    """Whether a recall bundle presents something as a confident match: an episode the library
    does not label weak (while it has no such label, any episode at all), a profile fact the
    request touches (its key among the rewriter's keys), or a fact found by keywords and meaning
    that is not labelled weak."""
    if any(weak_label(r) is not True for r in bundle.episodes):
        return True
    touched = set(bundle.intent.keys)
    matches = getattr(bundle, "profile_matches", {})
    return any(
        f.key in touched or (f.key in matches and weak_label(matches[f.key]) is not True) for f in bundle.profile
    )


# ============================================================================ the run


def _error(exc: BaseException) -> str:
    return f"error: {type(exc).__name__}: {exc}"


def _run_user(user: SuiteUser, mem: Any, max_tokens: int) -> list[dict[str, Any]]:
    """One user's probes. An exception the library raises fails the probe (``why`` starts with
    "error:") instead of ending the run: a crash is a result worth reporting."""
    setup: str | None = None
    try:
        for m in user.memories:
            mem.retain(m.text, user_id=user.user_id, role="user", timestamp=user.now - timedelta(days=m.days_ago))
        mem.reflect(user_id=user.user_id)
    except Exception as exc:
        setup = _error(exc)
    out = []
    for probe in user.probes:
        why, text, episodes, facts = setup, "", 0, []
        if setup is None:
            try:
                bundle = mem.recall(probe.request, user_id=user.user_id, now=user.now)
                text = bundle.render(max_tokens=max_tokens)
                episodes, facts = len(bundle.episodes), [f"{f.key}={f.value}" for f in bundle.profile]
                if probe.kind != NEVER_SAID:
                    why = verdict(text, probe)
                elif confident(bundle):
                    why = "the bundle shows a confident match for something never said"
            except Exception as exc:
                why = _error(exc)
        out.append(
            {
                "id": probe.id,
                "user_id": user.user_id,
                "kind": probe.kind,
                "request": probe.request,
                "expect_any": list(probe.expect_any),
                "stale": list(probe.stale),
                "about": None if probe.about is None else user.memories[probe.about].text,
                "passed": why is None,
                "why": why,
                "error": why is not None and why.startswith("error:"),
                "episodes": episodes,
                "facts": facts,
                "render": text,
            }
        )
    return out


def evaluate_profile(
    paths: Sequence[str | Path],
    *,
    embedder: str | None = "auto",
    cache_dir: Path | None = None,
    progress: TextIO | None = sys.stderr,
    max_tokens: int = MAX_TOKENS,
    memory_factory: MemoryFactory | None = None,
) -> dict[str, Any]:
    """Runs every suite in `paths` (see the module docstring); the report holds each probe's
    result and the pass rates per suite and kind."""
    say = _progress(progress)
    t0 = time.perf_counter()
    suites = [load_suite(p) for p in paths]
    emb = product_embedder(embedder, cache_dir, progress)
    factory = memory_factory or _new_memory
    results: list[dict[str, Any]] = []
    for suite in suites:
        n_probes = sum(len(u.probes) for u in suite.users)
        say(f"profile {suite.split}/{suite.lang}: {len(suite.users)} users, {n_probes} probes ({suite.path})")
        with Meter(progress, f"profile {suite.split}/{suite.lang}", len(suite.users), "users") as meter:
            for user in suite.users:
                mem = factory(emb)
                try:
                    for r in _run_user(user, mem, max_tokens):
                        results.append({"split": suite.split, "lang": suite.lang, **r})
                finally:
                    close = getattr(mem, "close", None)
                    if callable(close):
                        close()
                meter.update()
    return {
        "suite": "trimem-phrasing",
        "embedder": _embedder_name(emb),
        "max_tokens": max_tokens,
        "suites": [{"path": s.path, "split": s.split, "lang": s.lang, "users": len(s.users)} for s in suites],
        "summary": _summary_rows(results),
        "probes": results,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def _rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    passed = sum(r["passed"] for r in rows)
    return {"n": n, "passed": passed, "rate": passed / n if n else None}


def _summary_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per split × language (file order) plus "all": pass rate of the probes that
    expect something, per kind, and the never-said share with no confident match."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["split"], r["lang"]), []).append(r)
    if len(groups) > 1:
        groups[("all", "all")] = results
    rows = []
    for (split, lang), rs in groups.items():
        expecting = [r for r in rs if r["kind"] != NEVER_SAID]
        rows.append(
            {
                "split": split,
                "lang": lang,
                "users": len({r["user_id"] for r in rs}),
                "expecting": _rate(expecting),
                "by_kind": {k: _rate([r for r in rs if r["kind"] == k]) for k in PROBE_KINDS},
                "never_said_no_confident": _rate([r for r in rs if r["kind"] == NEVER_SAID]),
                "errors": sum(r["error"] for r in rs),
            }
        )
    return rows


# ============================================================================ reporting


def _cell(rate: Mapping[str, Any]) -> str:
    return "–" if not rate["n"] else f"{rate['rate']:.3f} ({rate['passed']}/{rate['n']})"


def format_profile_report(report: Mapping[str, Any]) -> str:
    """Markdown: pass rate per split × language and per probe kind, never-said apart."""
    kinds = [k for k in PROBE_KINDS if k != NEVER_SAID]
    head = ["split", "lang", "users", "pass (expecting probes)", *kinds, "never said: no confident match", "errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["summary"]:
        cells = [row["split"], row["lang"], str(row["users"]), _cell(row["expecting"])]
        cells += [_cell(row["by_kind"][k]) for k in kinds]
        cells += [_cell(row["never_said_no_confident"]), str(row["errors"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"profile: embedder {report['embedder']}, render max_tokens={report['max_tokens']}, "
        f"wall {report['wall_s']:.1f}s; a never-said probe passes when the bundle shows no confident match; "
        "errors: probes the library raised on (counted as failed)"
    )
    errors = sorted({r["why"] for r in report["probes"] if r["error"]})
    lines += [f"library error: {e.removeprefix('error: ')}" for e in errors]
    return "\n".join(lines)


def format_failures(report: Mapping[str, Any], limit: int, *, chars: int = 300) -> str:
    """The first `limit` failed probes: request, what was expected, why, and the start of the
    rendered context."""
    failed = [r for r in report["probes"] if not r["passed"]]
    out = [f"{len(failed)} failed probes; the first {min(limit, len(failed))}:"]
    for r in failed[:limit]:
        out.append(f"- {r['id']} [{r['split']}/{r['lang']} {r['kind']}] {r['request']!r}")
        if r["expect_any"]:
            out.append(f"  expected any of {r['expect_any']}" + (f", not before: {r['stale']}" if r["stale"] else ""))
        if r["about"]:
            out.append(f"  about: {r['about']!r}")
        out.append(f"  why: {r['why']}")
        render = r["render"][:chars].replace("\n", "\n    ")
        out.append(f"  render ({len(r['render'])} chars): \n    {render}" if render else "  render: (empty)")
    return "\n".join(out)
