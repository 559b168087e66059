"""Known products: canonical spelling, the kind a value names, versions, and tech names in text."""

from __future__ import annotations

from trimem.text.products import (
    ALL_CATEGORIES,
    CATEGORY_KEY,
    canonical_name,
    canonical_value,
    known_prefix,
    same_value,
    tech_name,
)


def test_canonical_spelling() -> None:
    assert [canonical_value(v) for v in ["typescript", "postgres", "vscode", "MACOS"]] == [
        "TypeScript",
        "PostgreSQL",
        "VS Code",
        "macOS",
    ]
    assert canonical_value("Lisbon") == "Lisbon"
    assert canonical_name("golang") == "Go" and canonical_name("k8s") == "Kubernetes"  # both tables


def test_known_prefix_reads_kind_and_version() -> None:
    assert known_prefix("Ubuntu 22.04 on my laptop", ALL_CATEGORIES) == ("os", "Ubuntu 22.04", 12)
    assert known_prefix("going home", ALL_CATEGORIES) is None  # "Go" is not in "going"
    assert known_prefix("c is a letter", ALL_CATEGORIES) is None  # a one-letter language needs its case
    assert known_prefix("Redis", frozenset({"database"})) is None
    assert CATEGORY_KEY == {
        "language": "primary_language",
        "os": "target_os",
        "database": "database",
        "editor": "editor",
    }


def test_same_value() -> None:
    assert same_value("vscode", "VS Code") and same_value("PostgreSQL 16", "postgres")
    assert not same_value("C++", "C") and not same_value("MySQL", "PostgreSQL")


def test_tech_names_in_running_text() -> None:
    assert tech_name("postgres") == "PostgreSQL" and tech_name("Rust") == "Rust"
    assert tech_name("rust") is None and tech_name("go") is None  # ordinary words in lower case
