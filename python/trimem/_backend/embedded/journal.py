"""The embedded backend's journal: its folder store (write-ahead log and snapshots, in the
engine) seen as ops. Writes append encoded ops, deferred writes hand the fsync to the store's
thread, and pending use counts ride along with the next write so counting costs no fsync.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from trimem._backend.ops import MemoryState, Op, OpTouch, decode_op, decode_state, encode_op, encode_state
from trimem._core import HybridIndex, Store
from trimem.records import Durability


class Journal:
    """One open folder store. Not thread-safe: the backend's lock serialises calls."""

    def __init__(self, path: str, durability: Durability) -> None:
        self.store = Store(path, durability=durability)
        # Uses counted in the engine at once and logged with the next write: episodes,
        # knowledge documents, episode mentions, and the latest time among them.
        self._episodes: list[int] = []
        self._knowledge: list[int] = []
        self._mentions: list[int] = []
        self._at = 0

    # -- opening ----------------------------------------------------------------------------------

    def snapshot_state(self) -> MemoryState | None:
        blob = self.store.take_state()
        return None if blob is None else decode_state(blob)

    def snapshot_index(self, name: str) -> HybridIndex | None:
        return self.store.take_index(name)

    def replay(self) -> Iterator[Op]:
        """The ops written after the snapshot, oldest first."""
        for payload in self.store.take_log():
            yield decode_op(payload)

    # -- writes -----------------------------------------------------------------------------------

    def append(self, ops: Sequence[Op]) -> None:
        """Writes the pending use counts and ``ops`` in one log write. If it fails, the counts
        stay pending for the next one."""
        touch = self._take_touches()
        payloads = ([] if touch is None else [encode_op(touch)]) + [encode_op(op) for op in ops]
        try:
            if payloads:
                self.store.append_many(payloads)
        except BaseException:
            self._restore(touch)
            raise

    def append_deferred(self, ops: Sequence[Op]) -> tuple[int, OpTouch | None]:
        """Like :meth:`append`, with the fsync handed to the store's thread: returns its ticket
        (for :meth:`settle`) and the counts it took (for :meth:`restore` if the fsync fails)."""
        touch = self._take_touches()
        payloads = ([] if touch is None else [encode_op(touch)]) + [encode_op(op) for op in ops]
        try:
            return self.store.append_deferred(payloads), touch
        except BaseException:
            self._restore(touch)
            raise

    def settle(self, ticket: int) -> None:
        """Waits until a deferred write is durable (raises if its fsync failed)."""
        self.store.settle_deferred(ticket)

    def restore(self, touch: OpTouch | None) -> None:
        self._restore(touch)

    @property
    def pending_uses(self) -> int:
        """Use counts not yet in the log."""
        return len(self._episodes) + len(self._knowledge) + len(self._mentions)

    @property
    def log_bytes(self) -> int:
        return self.store.log_bytes

    # -- use counts -------------------------------------------------------------------------------

    def count_uses(self, episodes: Sequence[int], knowledge: Sequence[int], mentions: Sequence[int], at: int) -> int:
        """Adds uses to the pending counts; returns how many are pending."""
        self._episodes.extend(episodes)
        self._knowledge.extend(knowledge)
        self._mentions.extend(mentions)
        self._at = max(self._at, at)
        return len(self._episodes) + len(self._knowledge) + len(self._mentions)

    def _take_touches(self) -> OpTouch | None:
        if not self._episodes and not self._knowledge and not self._mentions:
            return None
        op = OpTouch(
            episode_ids=self._episodes, knowledge_ids=self._knowledge, at=self._at, episode_mentions=self._mentions
        )
        self._episodes, self._knowledge, self._mentions = [], [], []
        return op

    def _restore(self, touch: OpTouch | None) -> None:
        if touch is not None:
            self._episodes.extend(touch.episode_ids)
            self._knowledge.extend(touch.knowledge_ids)
            self._mentions.extend(touch.episode_mentions)

    # -- snapshots --------------------------------------------------------------------------------

    def checkpoint(self, indexes: Sequence[tuple[str, HybridIndex]], state: MemoryState) -> None:
        """Writes a snapshot of ``indexes`` and ``state`` and starts an empty log; the pending
        counts are in the indexes, so the snapshot holds them."""
        self.store.checkpoint(list(indexes), encode_state(state))
        self._episodes, self._knowledge, self._mentions = [], [], []

    def close(self) -> None:
        self.store.close()
