"""How a round's closer turns its members into ranks: three policies, chosen by `rank_order`.

- `hrw`: HRW scores for the run id (the protocol's `rank_order` hook): the same members give
  the same ranks whatever the timing, but a member's rank can change when another joins.
- `topology`: by the topology key each node brings (the scheduler's node-list position, a
  rack label), else by name; naturally sorted ("node-9" before "node-10"), so neighbours in
  the key stay neighbours in the ranks.
- `stable`: a member keeps the rank it had in the last round that published ranks, when that
  rank still exists; the ranks left over go to the others in HRW order. Rank 0, and so the
  master and its logs, stay put while rank 0's host lives (dlrover#450).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from operator import attrgetter
from typing import Literal

from .base import BadValue, NodeInfo

RankOrder = Literal["hrw", "topology", "stable"]
_DIGITS = re.compile(r"(\d+)")


def natural(key: str) -> tuple:
    """A sort key that orders the digit runs of `key` as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(key) if p)


def order(policy: str, infos: list[NodeInfo], by_hrw: Callable[[list[str]], list[str]],
          previous: list[str] | None = None) -> list[str]:
    """The members' names in rank order under `policy`; `previous` is the last published order."""
    names = list(map(attrgetter("name"), infos))
    if policy == "topology":
        return [i.name for i in sorted(infos, key=lambda i: (natural(i.topo or i.name), i.name))]
    hashed = by_hrw(names)
    if policy == "hrw" or not previous:
        return hashed
    members = set(names)
    kept: list[str | None] = [name if name in members else None for name in previous[:len(names)]]
    kept += [None] * (len(names) - len(kept))
    stay = set(filter(None, kept))
    rest = iter([n for n in hashed if n not in stay])
    return [name or next(rest) for name in kept]


def encode_order(names: list[str]) -> str:
    return json.dumps(names, separators=(",", ":"))


def decode_order(text, most: int) -> list[str]:
    """A published order another node wrote: a JSON list of at most `most` distinct short
    names; BadValue otherwise."""
    if not isinstance(text, str) or len(text) > 300 * most + 2:
        raise BadValue("the published rank order is not a short text value")
    try:
        names = json.loads(text)
    except ValueError:
        raise BadValue("the published rank order is not JSON") from None
    if (not isinstance(names, list) or len(names) > most or len(set(map(str, names))) != len(names)
            or not all(isinstance(n, str) and 0 < len(n) <= 256 for n in names)):
        raise BadValue("the published rank order is not a list of distinct host names")
    return names
