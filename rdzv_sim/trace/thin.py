"""The events a run's summary and training models read, without a row per host per round: every
event of a kind not in `BULK`, and of those, the first of each kind and round (of round_left,
of each reason too: its detail). What the models ask of the bulk (when a round's first member
left, and why) is the same of both."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .chunks import chunks
from .columns import label_codes
from ..events import Event

# each host's own steps of each round: 10^8 rows on a frontier run of weeks; the tables fold them
BULK = frozenset({Event.RENDEZVOUS_START, Event.JOIN, Event.CONFIRMED, Event.RANK_ASSIGNED, Event.WORKERS_STARTED,
                  Event.ROUND_LEFT})
BY_DETAIL = frozenset({Event.ROUND_LEFT})        # the first of each of its details (a join's is its slot)


class ThinFold:
    """Feed it the events' slices in order; `table()` is the thin events, in event order."""

    def __init__(self):
        self.parts: list[pd.DataFrame] = []
        self.seen: set = set()

    def feed(self, events: pd.DataFrame) -> None:
        kind, kinds = label_codes(events["event"])
        keep = ~np.isin(kind, [i for i, k in enumerate(kinds) if k in BULK])
        at = np.flatnonzero(~keep)
        if len(at):
            for i, key in zip(*_firsts(events, at, kind, kinds)):
                if key not in self.seen:
                    self.seen.add(key)
                    keep[i] = True
        self.parts.append(events[keep])

    def table(self) -> pd.DataFrame:
        parts = self.parts or [pd.DataFrame()]
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)


def _firsts(events: pd.DataFrame, at: np.ndarray, kind: np.ndarray, kinds) -> tuple[list, list]:
    """The rows among `at` first of their (kind, round, detail of `BY_DETAIL`) here, and their
    keys: one integer a row from a categorical's codes (the same across slices), else texts."""
    rnd = events["round"].iloc[at].to_numpy(dtype=np.int64, na_value=-1) + 1
    col = events["detail"]
    by_detail = np.isin(kind[at], [i for i, k in enumerate(kinds) if k in BY_DETAIL])
    if isinstance(col.dtype, pd.CategoricalDtype) and isinstance(events["event"].dtype, pd.CategoricalDtype):
        detail = np.where(by_detail, col.cat.codes.to_numpy()[at].astype(np.int64) + 1, 0)
        key = (rnd * len(kinds) + kind[at]) * (len(col.cat.categories) + 1) + detail
        _, first = np.unique(key, return_index=True)
        return at[first].tolist(), key[first].tolist()
    texts = np.where(by_detail, col.iloc[at].fillna("").astype(str).to_numpy(), "")
    groups = pd.DataFrame({"kind": kinds[kind[at]], "detail": texts, "round": rnd})
    first = groups.drop_duplicates()
    return at[first.index.to_numpy()].tolist(), list(first.itertuples(index=False, name=None))


def thin(events: pd.DataFrame, rows: int | None = None) -> pd.DataFrame:
    """`ThinFold` fed `events` about `rows` rows at a time (None: at once)."""
    fold = ThinFold()
    for _, part in chunks(events, rows):
        fold.feed(part)
    return fold.table()
