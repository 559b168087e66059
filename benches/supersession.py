"""Does reflect link a change to the fact or note it replaces? Counted on the phrasing suites.

    python benches/supersession.py SUITE.json [SUITE.json ...]
    python benches/supersession.py --all          # every phrasing suite in the repository

A suite's ``update`` memories name the memory they supersede (``"updates": i``). Per user the
memories are retained as the profile eval retains them (``role="user"``, stamped ``now -
days_ago``), then ``reflect`` runs once. For each update, the facts holding its episode among
their sources are:

* **right** when one of them has the superseded memory's episode in its history;
* **wrong** when none does but one of them replaced some other value (the change closed a fact
  or note it is not about: what that one said now shows only as history);
* **not linked** otherwise (the change stands as a fact or note of its own, or made none).

A wrong link costs more than none: the value it closed drops out of the profile, while an
unlinked change is still ranked above the older note by the fact index (``_newer_first``).

The script reads only public names, so it runs against any version of trimem (``PYTHONPATH``).
"""

from __future__ import annotations

import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from trimem import Memory
from trimem.bench.profile_eval import load_suite

ROOT = Path(__file__).resolve().parent.parent


def count(path: Path) -> tuple[int, int, int]:
    """(right, wrong, not linked) over the updates of one suite."""
    right = wrong = unlinked = 0
    for user in load_suite(path).users:
        with tempfile.TemporaryDirectory() as folder:
            mem = Memory(folder)
            ids = [
                mem.retain(
                    m.text, user_id=user.user_id, role="user", timestamp=user.now - timedelta(days=m.days_ago)
                ).id
                for m in user.memories
            ]
            mem.reflect(user_id=user.user_id)
            facts = mem.facts.list(user_id=user.user_id)
            mem.close()
        for i, m in enumerate(user.memories):
            if m.kind != "update" or m.updates is None:
                continue
            holders = [f for f in facts if ids[i] in f.source]
            if any(ids[m.updates] in v.source for f in holders for v in f.history):
                right += 1
            elif any(sum(v.value is not None for v in f.history) > 1 for f in holders):
                wrong += 1
            else:
                unlinked += 1
    return right, wrong, unlinked


def main(argv: list[str]) -> int:
    if argv == ["--all"]:
        paths = sorted((ROOT / "python/trimem/bench/phrasing").glob("dev_*.json"))
        paths += sorted((ROOT / "benches").glob("phrasing_*.json"))
    elif argv and not any(a.startswith("-") for a in argv):
        paths = [Path(a) for a in argv]
    else:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    total: dict[str, list[int]] = {}
    print("| suite | right | wrong | not linked |\n|---|---:|---:|---:|")
    for path in paths:
        right, wrong, unlinked = count(path)
        lang = "zh" if "_zh" in path.name else "en"
        t = total.setdefault(lang, [0, 0, 0])
        t[0], t[1], t[2] = t[0] + right, t[1] + wrong, t[2] + unlinked
        print(f"| {path.name} | {right} | {wrong} | {unlinked} |")
    for lang, (right, wrong, unlinked) in sorted(total.items()):
        print(f"| all {lang} | {right} | {wrong} | {unlinked} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
