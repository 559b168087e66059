"""PNG charts of a ``python -m trimem bench`` report: latency vs N and recall vs latency.

``python -m trimem bench ... --plot bench.png`` draws the run it just made;
``python -m trimem bench --from-json bench.json --plot bench.png`` redraws a saved report.
Runs with ``--scale 10000,100000,1000000`` give one point per size, hence curves.

matplotlib is optional: :func:`require_matplotlib` raises :class:`MissingPlotDependency` (an
``ImportError`` naming the package and how to install it) when it is absent, and the bench
command calls it before measuring anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["MissingPlotDependency", "plot", "require_matplotlib"]

_MARKERS = "osD^v<>ph*"


class MissingPlotDependency(ImportError):
    """``--plot`` needs matplotlib, which is not installed."""


def require_matplotlib() -> Any:
    """Import matplotlib (headless) or raise :class:`MissingPlotDependency`."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401  (fails on a broken install)
    except ImportError as exc:
        raise MissingPlotDependency(
            f"--plot needs the 'matplotlib' package, which is not importable ({exc}); install it "
            "with `python -m pip install matplotlib`, or drop --plot (the --json report holds the "
            "same numbers)"
        ) from None
    return matplotlib


def _series(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by system key (one row per size), sorted by n."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in report["results"]:
        out.setdefault(row["key"], []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: r["n"])
    return out


def plot(report: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a two-panel PNG for ``report`` (the dict :func:`trimem.bench.compare.run` returns
    or its ``--json`` file) to ``path``; returns the path."""
    require_matplotlib()
    from matplotlib.figure import Figure

    series = _series(report)
    if not series:
        raise ValueError("the report has no results to plot")
    sizes = sorted({r["n"] for rows in series.values() for r in rows})
    marker_of = {n: _MARKERS[i % len(_MARKERS)] for i, n in enumerate(sizes)}
    cfg, mach = report["config"], report["machine"]

    legend_rows = -(-len(series) // 2)
    fig = Figure(figsize=(13, 5.0 + 0.2 * legend_rows), layout="constrained")
    ax_lat, ax_rec = fig.subplots(1, 2)
    palette: list[Any] = [f"C{i}" for i in range(10)]
    if len(series) > 10:  # 20 distinguishable colours before any repeats
        import matplotlib

        cmap = matplotlib.colormaps["tab20"]
        palette = [cmap(i) for i in range(20)]
    for i, (key, rows) in enumerate(series.items()):
        colour = palette[i % len(palette)]
        r0 = rows[0]
        label = f"{r0['system']} — {r0['case']}"
        xs = [r["n"] for r in rows]
        ax_lat.plot(
            xs,
            [r["p50_ms"] for r in rows],
            marker="o",
            color=colour,
            label=label,
            linestyle="-" if key.startswith("trimem") else "--",
        )
        recalls = [(r["p50_ms"], r["recall_at_10"], r["n"]) for r in rows if r["recall_at_10"] is not None]
        if len(recalls) > 1:
            ax_rec.plot([x for x, _, _ in recalls], [y for _, y, _ in recalls], color=colour, linewidth=0.8, alpha=0.5)
        for x, y, n in recalls:
            ax_rec.scatter([x], [y], color=colour, marker=marker_of[n], s=40)

    ax_lat.set_xscale("log")
    ax_lat.set_yscale("log")
    ax_lat.set_xlabel("records (N)")
    ax_lat.set_ylabel("p50 latency per query (ms, log)")
    one = " (one size: run with --scale for curves)" if len(sizes) == 1 else ""
    ax_lat.set_title(f"latency vs N{one}", fontsize=10)
    ax_lat.grid(True, which="both", alpha=0.3)
    ax_lat.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax_lat.set_xticks([], minor=True)

    ax_rec.set_xscale("log")
    ax_rec.set_xlabel("p50 latency per query (ms, log)")
    ax_rec.set_ylabel("recall@10 vs exact answers")
    ax_rec.set_title(
        "recall vs latency (marker = N: " + ", ".join(f"{marker_of[n]} {n}" for n in sizes) + ")", fontsize=10
    )
    ax_rec.grid(True, which="both", alpha=0.3)

    handles, labels = ax_lat.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(
        f"trimem {report['versions']['trimem']} bench: dim={cfg['dim']}, {cfg['queries']} "
        f"queries, k={cfg['k']}, {cfg['repeats']} rounds — {mach['cpu']}, {mach['cores']} "
        f"cores, {mach['build_profile']}",
        fontsize=10,
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=110)
    return out
