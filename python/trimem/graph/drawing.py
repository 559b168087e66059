"""Drawing the memory graph to PNG or SVG (networkx and matplotlib, the ``graph`` extra)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Final

from trimem.graph.records import MENTIONED_WITH, Entity, Relation
from trimem.text.mentions import entity_key

__all__ = ["render"]


def render(target: Path, fmt: str, ents: list[Entity], rels: list[Relation]) -> None:
    """Draws `ents` and the relations between them to `target` as ``fmt`` ("png" or "svg"):
    one edge per pair (weights add up, stated predicates label it, co-occurrence dashed)."""
    try:
        import networkx as nx
        from matplotlib import font_manager, rc_context
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError(
            f"MemoryGraph.draw needs networkx and matplotlib ({err.name} is missing): pip install 'trimem[graph]'"
        ) from None
    several = len({e.scope for e in ents}) > 1
    graph = nx.Graph()
    for e in ents:
        label = f"{e.scope}: {e.name}" if several else e.name
        graph.add_node((e.scope, entity_key(e.name)), label=label, type=e.type, mentions=e.mentions)
    labels: dict[tuple[Any, Any], list[str]] = {}
    for r in rels:  # one edge per pair: weights add up, stated predicates label it
        a, b = (r.scope, entity_key(r.subject)), (r.scope, entity_key(r.object))
        if a in graph and b in graph:
            old = graph.get_edge_data(a, b, {"weight": 0.0, "stated": False})
            stated = old["stated"] or r.predicate != MENTIONED_WITH
            graph.add_edge(a, b, weight=old["weight"] + r.weight, stated=stated)
            if r.predicate != MENTIONED_WITH:
                labels.setdefault((a, b) if (b, a) not in labels else (b, a), []).append(r.predicate)
    fonts = {f.name for f in font_manager.fontManager.ttflist}
    cjk = [f for f in _CJK_FONTS if f in fonts]
    with rc_context({"font.family": ["DejaVu Sans", *cjk], "svg.fonttype": "path"}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph.*missing.*")
        warnings.filterwarnings("ignore", message=r".*findfont.*")
        fig = Figure(figsize=(max(6.0, min(24.0, 1.2 * len(graph) ** 0.5 * 3)),) * 2, dpi=100)
        ax = fig.add_subplot()
        ax.set_axis_off()
        if len(graph) == 0:
            ax.text(0.5, 0.5, "(empty graph)", ha="center", va="center")
        else:
            pos = _layout(nx, graph)
            nodes = list(graph.nodes)
            nx.draw_networkx_nodes(
                graph,
                pos,
                ax=ax,
                nodelist=nodes,
                node_color=[_TYPE_COLOURS.get(graph.nodes[n]["type"], "#bbbbbb") for n in nodes],
                node_size=[300 + 120 * min(graph.nodes[n]["mentions"], 20) for n in nodes],
            )
            for stated in (False, True):
                edges = [(a, b) for a, b, d in graph.edges(data=True) if d["stated"] is stated]
                nx.draw_networkx_edges(
                    graph,
                    pos,
                    ax=ax,
                    edgelist=edges,
                    width=[min(1.0 + graph.edges[e]["weight"], 6.0) for e in edges],
                    style="solid" if stated else "dashed",
                    alpha=0.8 if stated else 0.35,
                    edge_color="#333333" if stated else "#999999",
                )
            names = {n: graph.nodes[n]["label"] for n in nodes}
            nx.draw_networkx_labels(graph, pos, ax=ax, labels=names, font_size=9)
            edge_labels = {pair: ", ".join(preds) for pair, preds in labels.items()}
            nx.draw_networkx_edge_labels(graph, pos, ax=ax, edge_labels=edge_labels, font_size=7)
        fig.savefig(target, format=fmt, bbox_inches="tight")


def _layout(nx: Any, graph: Any) -> dict[Any, Any]:
    """Spring layout per connected component (seeded: the same graph draws the same), the
    components in a grid, largest first: one layout of the whole would fling them apart."""
    parts = sorted(nx.connected_components(graph), key=lambda c: (-len(c), min(c)))
    cols = math.ceil(math.sqrt(len(parts)))
    pos: dict[Any, Any] = {}
    for i, nodes in enumerate(parts):
        sub = graph.subgraph(nodes)
        local = nx.spring_layout(sub, seed=7, weight="weight") if len(nodes) > 1 else {next(iter(nodes)): (0.0, 0.0)}
        row, col = divmod(i, cols)
        for n, (x, y) in local.items():
            pos[n] = (col * 2.6 + float(x), -row * 2.6 + float(y))
    return pos


# Chinese names need a CJK font; the first of these that matplotlib knows is used (else boxes).
_CJK_FONTS: Final = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Noto Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Source Han Sans SC",
    "SimHei",
    "Microsoft YaHei",
    "PingFang SC",
    "Heiti SC",
    "AR PL UMing CN",
    "Droid Sans Fallback",
)
_TYPE_COLOURS: Final = {
    "person": "#f4a261",
    "user": "#e76f51",
    "group": "#e76f51",
    "place": "#2a9d8f",
    "org": "#8ab17d",
    "tech": "#4e79a7",
    "version": "#a0cbe8",
    "port": "#a0cbe8",
    "host": "#a0cbe8",
    "url": "#a0cbe8",
    "code": "#b07aa1",
    "file": "#b07aa1",
    "path": "#b07aa1",
    "concept": "#e9c46a",
    "thing": "#cccccc",
}
