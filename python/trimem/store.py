"""The folder store: an append-only, checksummed operation log that `Memory` replays on open.

Each record is `length (u32 LE) | crc32 (u32 LE) | msgpack payload`, after a header that carries
the format version. A torn tail (a crash mid-append) is cut off on open; a bad record followed
by good data is corruption and raises :class:`StoreCorruptedError` — never skipped silently.
With ``durability="fsync"`` an append returns only after its bytes reached the disk.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> log = OpLog(os.path.join(d, "ops.log"), durability="fsync")
>>> log.append(b"hello"); log.append(b"world")
>>> log.close()
>>> list(OpLog(os.path.join(d, "ops.log")).replay())
[b'hello', b'world']
"""

from __future__ import annotations

import fcntl
import os
import struct
import zlib
from collections.abc import Iterator

from trimem.errors import TrimemError

MAGIC = b"TRIMEMLOG"
FORMAT_VERSION = 1
_HEADER = MAGIC + struct.pack("<I", FORMAT_VERSION)
_REC = struct.Struct("<II")
MAX_RECORD = 1 << 30


class StoreError(TrimemError):
    """A problem with the folder store (locked, unreadable, newer format)."""


class StoreCorruptedError(StoreError):
    """Committed data failed its checksum: the store is damaged, not merely cut short."""


class StoreLockedError(StoreError):
    """Another process has the store open for writing."""


DURABILITY = ("fsync", "buffered")


class OpLog:
    def __init__(self, path: str, *, durability: str = "fsync") -> None:
        if durability not in DURABILITY:
            raise StoreError(f"durability must be one of {DURABILITY}, got {durability!r}")
        self.path = path
        self.durability = durability
        self._lock = open(path + ".lock", "a+b")  # noqa: SIM115 - held for the log's lifetime
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise StoreLockedError(
                f"{path} is open for writing by another process; one writer at a time"
            ) from None
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self._f = open(path, "a+b")  # noqa: SIM115
        try:
            if new:
                self._f.write(_HEADER)
                self._sync()
                self._fsync_dir()
            self._valid_end = self._check_header_and_scan()
        except BaseException:
            self._release()
            raise

    def _check_header_and_scan(self) -> int:
        self._f.seek(0)
        head = self._f.read(len(_HEADER))
        if head[: len(MAGIC)] != MAGIC or len(head) < len(_HEADER):
            raise StoreCorruptedError(f"{self.path} is not a trimem log (bad header)")
        (version,) = struct.unpack("<I", head[len(MAGIC):])
        if version > FORMAT_VERSION:
            raise StoreError(
                f"{self.path} has format version {version}; this trimem reads up to "
                f"{FORMAT_VERSION}: upgrade trimem"
            )
        end = len(_HEADER)
        for _payload, end in self._records():
            pass
        size = os.path.getsize(self.path)
        if end < size:
            # A torn tail: the last append did not complete. Cut it so appends start clean.
            self._f.truncate(end)
            self._sync()
        return end

    def _records(self) -> Iterator[tuple[bytes, int]]:
        size = os.path.getsize(self.path)
        pos = len(_HEADER)
        self._f.seek(pos)
        while pos + _REC.size <= size:
            length, crc = _REC.unpack(self._f.read(_REC.size))
            end = pos + _REC.size + length
            if length > MAX_RECORD or end > size:
                return  # torn tail: the record runs past the end of the file
            payload = self._f.read(length)
            if zlib.crc32(payload) != crc:
                if end == size:
                    return  # the last record was cut mid-write
                raise StoreCorruptedError(
                    f"{self.path}: record at byte {pos} fails its checksum and is followed by "
                    "more data; the store is damaged (restore it from a backup)"
                )
            yield payload, end
            pos = end

    def replay(self) -> Iterator[bytes]:
        for payload, _ in self._records():
            yield payload

    def append(self, payload: bytes) -> None:
        self.append_many([payload])

    def append_many(self, payloads: list[bytes]) -> None:
        """Appends records; with fsync durability, one fsync covers the batch (group commit)."""
        self._f.seek(0, os.SEEK_END)
        buf = b"".join(_REC.pack(len(p), zlib.crc32(p)) + p for p in payloads)
        self._f.write(buf)
        if self.durability == "fsync":
            self._sync()
        self._valid_end += len(buf)

    def flush(self) -> None:
        self._sync()

    def _sync(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def _fsync_dir(self) -> None:
        fd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._f.closed:
            return
        self._sync()
        self._release()

    def _release(self) -> None:
        self._f.close()
        fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
        self._lock.close()
