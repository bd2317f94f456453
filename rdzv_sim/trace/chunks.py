"""The events table a slice at a time, in time order: what the tables fold over, so that what
they hold follows rounds and hosts, not rows (a 32,768-host run of 54 days has 10^8 rows)."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd


def chunks(events: pd.DataFrame, rows: int | None = None) -> Iterator[tuple[int, pd.DataFrame]]:
    """(offset, slice) of `events` about `rows` rows at a time (None: one slice), each cut where
    the time changes: rows tied in time stay together, so a lookup "at or before t" never
    needs the next slice. A table whose node column is not categorical (read from CSV) is one
    slice: its codes are only the same across slices when they come from one category list."""
    n = len(events)
    if rows is None or n <= rows or not isinstance(events["node"].dtype, pd.CategoricalDtype):
        yield 0, events
        return
    t = events["t"].to_numpy(dtype=float)
    start = 0
    while start < n:
        end = min(start + rows, n)
        if end < n:                        # forward to the next change of time
            end = start + rows + int(np.searchsorted(t[end:], t[end - 1], side="right"))
        yield start, events.iloc[start:end]
        start = end
