"""Failure domains: which rack (zone, ...) each host sits in, read from a topology tree."""
from __future__ import annotations

from collections.abc import Mapping


def failure_domains(tree, level: str = "rack") -> dict:
    """Map each leaf (host) of `tree` to its ancestor at `level`.

    `tree` is a networkx DiGraph with edges parent -> child (zone -> rack -> host) whose nodes
    carry a ``level`` attribute, or already a mapping host -> domain (returned as a dict).
    """
    if isinstance(tree, Mapping):
        return dict(tree)
    if not hasattr(tree, "predecessors"):
        raise TypeError("tree must be a networkx DiGraph (parent -> child) or a mapping")
    levels = {n: d.get("level") for n, d in tree.nodes(data=True)}
    if level not in levels.values():
        raise ValueError(f"no node of the tree has level={level!r}")
    out = {}
    for node in tree.nodes:
        if tree.out_degree(node) != 0:
            continue
        cur, seen = node, set()
        while levels.get(cur) != level:
            preds = list(tree.predecessors(cur))
            if len(preds) != 1 or cur in seen:
                raise ValueError(f"host {node!r} has no single path up to a {level!r}")
            seen.add(cur)
            cur = preds[0]
        out[node] = cur
    return out
