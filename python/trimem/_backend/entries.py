"""What every backend indexes the same way: the fact index's entry ids and a document's text."""

from __future__ import annotations

import hashlib

from trimem.records import KnowledgeDoc

__all__ = ["document_text", "fact_entry"]


def fact_entry(fk: tuple[str, str, str]) -> int:
    """The fact index id of one (agent, user, key): a stable 63-bit hash (ids are per index)."""
    digest = hashlib.blake2b("\x1f".join(fk).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def document_text(d: KnowledgeDoc) -> str:
    """What the knowledge index sees of a document: its title, then its text."""
    return d.text if not d.title else f"{d.title}\n{d.text}"
