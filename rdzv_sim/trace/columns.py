"""The events table's columns: their types, and the numpy helpers every table reads them with."""
from __future__ import annotations

import numpy as np
import pandas as pd
from ..events import Event

SCHEMA_VERSION = 2                  # 2: rank_assigned's latency a column; details categorical
EVENT_COLUMNS = ["t", "node", "event", "round", "rank", "world_size", "latency", "detail"]
# a host's steps in a rendezvous that no table reads: what `outputs.events: lean` leaves out
# (its join, which starts a round in the rounds table, its rank, workers and leaving stay)
STEPS = frozenset({Event.RENDEZVOUS_START, Event.CONFIRMED})


NA = -(2 ** 63)                     # "no value" in the integer columns of the tracer


def nullable_int32(values: np.ndarray, missing: np.ndarray) -> pd.arrays.IntegerArray:
    """Round, rank and world size as pandas' nullable Int32 (5 bytes a row, not 9: rounds and
    ranks stay far below 2**31 even for a 100,000-GPU job)."""
    v = values.astype(np.int32)
    v[missing] = 0
    return pd.arrays.IntegerArray(v, missing)


def labels_of(codes: np.ndarray, values: list[str]) -> pd.Categorical:
    """A node or event column as a categorical: one small code a row instead of a string (a
    frontier run has 10^7 rows and a few thousand names); compares and groups like strings."""
    return Labels(values)(codes)


class Labels:
    """`labels_of` for many columns of codes into the same `values`: the sorted categories
    (sorting by node or event sorts by name) are built once."""

    def __init__(self, values: list[str], copy: bool = True):
        order = np.argsort(np.array(values, dtype=object), kind="stable")
        small = np.int8 if len(values) < 128 else np.int16 if len(values) < 2 ** 15 else np.int32
        self.remap = np.empty(len(values), dtype=small)
        self.remap[order] = np.arange(len(values), dtype=small)
        # copy=False: the categories are `values`' own strings, not a copy in Arrow (a long
        # run's details hold every round's member list)
        self.dtype = pd.CategoricalDtype(pd.Index([values[i] for i in order], dtype="str" if copy else object))

    def __call__(self, codes: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(self.remap[codes], dtype=self.dtype)


def label_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A node or event column's codes and labels (object): a categorical's own (a run's
    tables), else factorized in sorted order (a table read from CSV)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), np.asarray(col.cat.categories, dtype=object)
    codes, labels = pd.factorize(col.astype(str), sort=True)
    return codes, np.asarray(labels, dtype=object)


def as_objects(col: pd.Series) -> np.ndarray:
    """A column as Python objects (missing: None); a categorical's through the labels its rows
    use (a categorical's own to_numpy or iteration builds every label: the details' include a
    frontier round's member lists)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        used, at = codes_used(col.cat.codes.to_numpy())
        labels = np.full(len(used), None, dtype=object)
        labels[used >= 0] = np.asarray(col.cat.categories.take(used[used >= 0]), dtype=object)
        return labels[at]
    return col.to_numpy(dtype=object, na_value=None)


def codes_used(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A categorical's codes that its rows use (-1: missing) and each row's place among them:
    what a reader takes of its labels, not every label."""
    used, at = inverse(codes.astype(np.int64) + 1)
    return used - 1, at


def inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` for non-negative ints: a mark a value and a
    running count where their range is small beside their number (codes, rounds), no sort."""
    if not len(values):
        return values[:0], np.zeros(0, np.int64)
    hi = int(values.max())
    if hi > 4 * len(values) + 1024 or int(values.min()) < 0:
        return np.unique(values, return_inverse=True)
    mark = np.zeros(hi + 1, bool)
    mark[values] = True
    seen = np.flatnonzero(mark)
    at = np.cumsum(mark) - 1
    return seen, at[values]


def distinct(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct values of `codes` (ints in [0, size)), sorted: a mark a value, no sort,
    for a frontier round's 10^4 members out of as many names."""
    if len(codes) * 8 < size:
        return np.unique(codes)
    mark = np.zeros(size, dtype=bool)
    mark[codes] = True
    return np.flatnonzero(mark)


def asof_by(node: np.ndarray, t: np.ndarray, key_node: np.ndarray, key_t: np.ndarray,
            forward: bool) -> np.ndarray:
    """For each (node, t): the index into the keys of its node's first key at or after t
    (`forward`) or its last at or before t, -1 if none: pandas' merge_asof by node with exact
    matches (keys tied in time: the first forward, the last backward, in key order), in numpy
    for millions of rows: the keys as one integer (node, time), one binary search of the
    queries in sorted order (fast where what it looks for is sorted)."""
    out = np.full(len(node), -1, np.int64)
    if not len(key_t) or not len(node):
        return out
    ordered = len(key_t) < 2 or bool((key_t[1:] >= key_t[:-1]).all())     # a table's time order
    times = key_t[np.r_[True, key_t[1:] != key_t[:-1]]] if ordered else np.unique(key_t)
    width = len(times) + 1
    if ordered:
        by = np.argsort(key_node, kind="stable")                    # in time order within a node
        tix = np.searchsorted(times, key_t)[by]
    else:
        by = np.lexsort((key_t, key_node))
        tix = np.searchsorted(times, key_t[by])
    keys = key_node[by].astype(np.int64)
    keys *= width
    keys += tix
    del tix
    first = np.argsort(t, kind="stable")
    side = "left" if forward else "right"
    want = np.searchsorted(times, t[first], side=side).astype(np.int64) - (0 if forward else 1)
    want += node[first].astype(np.int64) * width           # its first time >= t, or last <= t
    order = np.argsort(want, kind="stable")
    at = np.empty(len(want), np.int64)
    at[order] = np.searchsorted(keys, want[order], side=side) - (0 if forward else 1)
    del order, want, keys
    ok = (at >= 0) & (at < len(by))
    ok[ok] = key_node[by[at[ok]]] == node[first[ok]]
    out[first[ok]] = by[at[ok]]
    return out


def runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of equal values in sorted `keys`: a numpy slice a group, where a
    pandas groupby builds a frame each (a frontier round has 10^4 members)."""
    cuts = (np.flatnonzero(np.diff(keys)) + 1).tolist()
    return list(zip([0, *cuts], [*cuts, len(keys)])) if len(keys) else []


def stamp(df: pd.DataFrame, scenario: str, seed: int) -> pd.DataFrame:
    """`df` with the schema version, scenario and seed as its first columns."""
    # one value on every row: a long table (~10^7 rows) holds it once, as a categorical
    def same(value):
        if len(df) <= 1000:
            return value
        return pd.Categorical.from_codes(np.zeros(len(df), np.int8), [value])
    df.insert(0, "schema_version", same(SCHEMA_VERSION))
    df.insert(1, "scenario", same(scenario))
    df.insert(2, "seed", same(seed))
    return df
