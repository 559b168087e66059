"""The embedded backend's fact table: every (agent, user, key) with its current value, its full
version history and its pin, plus the alias table — O(1) reads from in-process maps, rebuilt
from the log and snapshots (the engine indexes do not hold facts).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from trimem._backend.ops import FactsState, OpAlias, OpFact, OpPin
from trimem.records import Fact, FactVersion

FactKey = tuple[str, str, str]  # (agent_id, user_id, key)


class FactTable:
    """Current facts, their histories, pins and aliases, changed only by applied ops."""

    def __init__(self) -> None:
        self.current: dict[FactKey, Fact] = {}
        self.history: dict[FactKey, list[FactVersion]] = {}
        self.pinned: set[FactKey] = set()
        # each user's current keys, in the order `current` holds them: a user's facts are read
        # with every recall, and scanning every user's would grow with the store
        self._keys_of: dict[tuple[str, str], dict[str, None]] = {}
        self.aliases: dict[str, list[str]] = {}
        self.key_names: set[str] = set()
        self._alias_view: dict[str, list[str]] | None = None  # rebuilt only when keys or aliases change

    # -- applied ops ------------------------------------------------------------------------------

    def apply_fact(self, op: OpFact) -> None:
        fk = (op.agent_id, op.user_id, op.key)
        if op.key not in self.key_names:
            self.key_names.add(op.key)
            self._alias_view = None
        versions = self.history.setdefault(fk, [])
        if versions and versions[-1].valid_to is None:
            last = versions[-1]
            versions[-1] = FactVersion(last.value, last.valid_from, op.at, last.source, last.op)
        old = self.current.get(fk)
        if op.value is None:
            versions.append(FactVersion(None, op.at, op.at, op.source, "delete"))
            if self.current.pop(fk, None) is not None:
                self._unlist(fk)
            return
        versions.append(FactVersion(op.value, op.at, None, op.source, "update" if old else "set"))
        # The Fact gets its own copy of the history: what a caller holds never changes later,
        # and nothing a caller does to it reaches the memory.
        self.current[fk] = Fact(
            key=op.key,
            value=op.value,
            updated_at=op.at,
            version=(old.version + 1) if old else 1,
            history=list(versions),
            source=op.source,
            pinned=fk in self.pinned,
        )
        self._keys_of.setdefault((op.agent_id, op.user_id), {})[op.key] = None

    def _unlist(self, fk: FactKey) -> None:
        keys = self._keys_of.get((fk[0], fk[1]))
        if keys is not None:
            keys.pop(fk[2], None)
            if not keys:
                del self._keys_of[(fk[0], fk[1])]

    def apply_alias(self, op: OpAlias) -> None:
        self._alias_view = None
        for w in op.words:
            keys = self.aliases.setdefault(w.lower(), [])
            keys.extend(k for k in op.keys if k not in keys)

    def apply_pin(self, op: OpPin) -> None:
        fk = (op.agent_id, op.user_id, op.key)
        (self.pinned.add if op.pinned else self.pinned.discard)(fk)
        fact = self.current.get(fk)
        if fact is not None:
            self.current[fk] = msgspec.structs.replace(fact, pinned=op.pinned)

    def forget_sources(self, episode_ids: Iterable[int]) -> None:
        """Drops forgotten episodes from every fact's provenance."""
        gone = set(episode_ids)
        if not gone:
            return
        for fk, versions in self.history.items():
            if any(gone.intersection(v.source) for v in versions):
                versions[:] = [
                    msgspec.structs.replace(v, source=[i for i in v.source if i not in gone]) for v in versions
                ]
                fact = self.current.get(fk)
                if fact is not None:
                    self.current[fk] = msgspec.structs.replace(
                        fact, history=list(versions), source=[i for i in fact.source if i not in gone]
                    )

    def remove_keys(self, keys: Iterable[FactKey]) -> None:
        """Hard-deletes facts with their history (retention ran out)."""
        for fk in keys:
            if self.current.pop(fk, None) is not None:
                self._unlist(fk)
            self.history.pop(fk, None)
            self.pinned.discard(fk)

    def remove_user(self, agent_id: str, user_id: str) -> None:
        for table in (self.current, self.history):
            for fk in [fk for fk in table if fk[0] == agent_id and fk[1] == user_id]:
                del table[fk]
        self.pinned = {fk for fk in self.pinned if not (fk[0] == agent_id and fk[1] == user_id)}
        self._keys_of.pop((agent_id, user_id), None)

    # -- reads ------------------------------------------------------------------------------------

    def of_user(self, agent_id: str, user_id: str) -> list[Fact]:
        """The user's current facts, in the order they were first set."""
        keys = self._keys_of.get((agent_id, user_id), {})
        return [self.current[(agent_id, user_id, key)] for key in keys]

    def alias_view(self) -> dict[str, list[str]]:
        """Word → keys, including each known key's own name (with spaces for underscores).
        Recall reads this on every call, so it is cached until a key or an alias is added."""
        if self._alias_view is None:
            self._alias_view = alias_view(self.key_names, self.aliases)
        return {w: list(keys) for w, keys in self._alias_view.items()}

    # -- snapshots --------------------------------------------------------------------------------

    def state(self) -> FactsState:
        return FactsState(
            history=[(a, u, k, v) for (a, u, k), v in self.history.items()],
            pinned=sorted(self.pinned),
            aliases=self.aliases,
        )

    def load(self, st: FactsState) -> None:
        """Restores facts from a snapshot: histories as saved, current values replayed from them
        exactly as `apply_fact` built them."""
        self.pinned = set(st.pinned)
        self.aliases = {w: list(keys) for w, keys in st.aliases.items()}
        self._alias_view = None
        for a, u, key, versions in st.history:
            fk = (a, u, key)
            history = list(versions)
            self.history[fk] = history
            self.key_names.add(key)
            current = current_fact(key, history, pinned=fk in self.pinned)
            if current is not None:
                self.current[fk] = current
                self._keys_of.setdefault((a, u), {})[key] = None


def alias_view(key_names: Iterable[str], aliases: dict[str, list[str]]) -> dict[str, list[str]]:
    """Word → keys: each key under its own name (also with spaces for underscores), then the
    aliases callers added (which win over a key's own name)."""
    out: dict[str, list[str]] = {}
    for key in sorted(key_names):
        for word in {key.lower(), key.replace("_", " ").lower()}:
            out.setdefault(word, [key])
    for w, keys in aliases.items():
        out[w] = list(keys)
    return out


def current_fact(key: str, history: list[FactVersion], *, pinned: bool) -> Fact | None:
    """The fact a version history leaves standing (None after a delete), numbered as
    :meth:`FactTable.apply_fact` numbers it: a value set after a delete starts again at 1."""
    current: Fact | None = None
    for v in history:
        if v.op == "delete":
            current = None
        else:
            current = Fact(
                key=key,
                value=v.value or "",
                updated_at=v.valid_from,
                version=current.version + 1 if current else 1,
                history=history,
                source=v.source,
                pinned=pinned,
            )
    return None if current is None else msgspec.structs.replace(current, history=list(history))
