"""The events' JSON details, read back: as dicts (small tables), or chosen fields as arrays."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from .columns import codes_used, inverse
from ..events import Event


def details(df: pd.DataFrame) -> list[dict]:
    return [json.loads(d) if d else {} for d in df["detail"]]


def parse_details(column: pd.Series, mask: np.ndarray, fields: tuple[str, ...],
                  types: dict | None = None) -> dict[str, np.ndarray]:
    """`fields` of the JSON details of the rows where `mask` holds, as arrays (missing: None or
    NaN). pyarrow's reader parses them a slice at a time, fed straight from the Arrow column
    (no Python string per row): faster than json.loads, and little memory on long runs; a
    categorical's distinct texts are parsed once. `types` (field -> Arrow type) for every
    field: only those are read (a round_closed row's member list is not built)."""
    mask = np.asarray(mask, dtype=bool)
    if isinstance(column.dtype, pd.CategoricalDtype):    # each distinct detail parsed once
        used, at = codes_used(column.cat.codes.to_numpy()[mask])   # (one kind's rows' own)
        texts = _arrow(column.cat.categories.take(np.maximum(used, 0)).array)   # (those only)
        texts = _blank_where(pa.array(used < 0), texts)   # (code -1: no text)
        once = _read(texts, fields, types)
        return {f: _numbers(v)[at] for f, v in once.items()}
    return _read(_arrow(column.array).filter(pa.array(mask)), fields, types)


def _arrow(values) -> pa.Array:
    """A column's texts as one Arrow array (an object column, from CSV, is converted)."""
    try:
        texts = pa.array(values)
    except (TypeError, pa.ArrowInvalid):
        texts = pa.array(pd.Series(values).fillna("").astype(str).tolist(), pa.large_string())
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.string())              # (none at all: Arrow's null type)
    return texts


def _blank_where(empty: pa.Array, texts: pa.Array) -> pa.Array:
    import pyarrow.compute as pc
    return pc.if_else(empty, pa.scalar("", texts.type), texts)


def _read(texts: pa.Array, fields: tuple[str, ...], types: dict | None) -> dict[str, np.ndarray]:
    import io

    import pyarrow.compute as pc
    import pyarrow.json as pj
    options = (pj.ParseOptions() if types is None else pj.ParseOptions(
        explicit_schema=pa.schema([(f, types[f]) for f in fields]), unexpected_field_behavior="ignore"))
    out: dict[str, list] = {f: [] for f in fields}
    step = 1 << 17
    for i in range(0, len(texts), step):
        chunk = texts.slice(i, step)
        chunk = pc.if_else(pc.or_kleene(pc.is_null(chunk), pc.equal(chunk, "")), "{}", chunk)
        lines = pc.binary_join_element_wise(chunk, pa.scalar("", chunk.type),
                                            pa.scalar("\n", chunk.type))
        wide = pa.types.is_large_string(lines.type)
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
        offsets = offsets[lines.offset:lines.offset + len(lines) + 1]
        data = memoryview(lines.buffers()[2])[int(offsets[0]):int(offsets[-1])]
        table = pj.read_json(io.BytesIO(data), parse_options=options)
        n = table.num_rows
        for f in fields:
            col = (table.column(f).to_numpy(zero_copy_only=False) if f in table.column_names
                   else np.full(n, None, dtype=object))
            out[f].append(col)
    return {f: (np.concatenate(v) if v else np.zeros(0, dtype=object)) for f, v in out.items()}


def _numbers(v: np.ndarray) -> np.ndarray:
    """A field's values with none but numbers and None as floats (None: NaN): a field no text
    carried comes back as Nones, and spread over millions of rows, a float is 8 bytes."""
    if v.dtype == object and all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
                                 for x in v):
        return np.array([np.nan if x is None else x for x in v], dtype=np.float64)
    return v


RANK_FIELDS = ("digest", "nnodes", "latency")     # what the tables read of rank_assigned
FACTS = ("digest", "master", "nnodes")            # a round's, the same for all its members


def round_facts(events: pd.DataFrame) -> dict[int, dict]:
    """round -> its facts, where a runtime recorded them once, on the round's round_closed row
    (`outputs.trace: rounds`). Arrow reads only the facts: the rows also list the members, a
    frontier round's 10^4 names, which Python would build a string each of."""
    closed = (events["event"] == Event.ROUND_CLOSED).to_numpy()
    got = parse_details(events["detail"], closed, FACTS,
                        {"digest": pa.string(), "master": pa.string(), "nnodes": pa.int64()})
    out = {}
    for i, rnd in enumerate(events["round"].array[closed]):
        facts = {f: got[f][i] for f in FACTS if not pd.isna(got[f][i])}
        if "nnodes" in facts:
            facts["nnodes"] = int(facts["nnodes"])
        if facts and not pd.isna(rnd):
            out[int(rnd)] = facts
    return out


def latencies(events: pd.DataFrame, mask: np.ndarray) -> np.ndarray:
    """The rank rows' (`mask`) latencies: the events' latency column, or their details' field
    in a table saved before schema 2."""
    if "latency" in events.columns:
        return events["latency"].to_numpy(dtype=np.float64, na_value=np.nan)[mask]
    got = parse_details(events["detail"], mask, ("latency",))["latency"]
    return pd.to_numeric(pd.Series(got), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def rank_details(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """What the tables read of every rank_assigned row: its latency (a column; in the detail
    of a table from before schema 2) and the digest and nnodes of its detail, parsed once; a
    field a row does not carry is its round's fact (`round_facts`)."""
    mask = (events["event"] == Event.RANK_ASSIGNED).to_numpy()
    out = parse_details(events["detail"], mask, RANK_FIELDS[:2])
    out["latency"] = latencies(events, mask)
    nn = out["nnodes"]
    out["nnodes"] = (np.array(nn, dtype=np.float64) if nn.dtype.kind in "iuf" else
                     pd.to_numeric(pd.Series(nn), errors="coerce").to_numpy(np.float64, na_value=np.nan))
    missing = np.isnan(out["nnodes"])
    if missing.any():                  # one lookup a round, not a row (10^7 rows at the frontier)
        facts = round_facts(events)
        rounds = events["round"].array[mask][missing].to_numpy(dtype=np.int64, na_value=-1)
        seen, at = inverse(rounds + 1)                     # (-1: no round, no facts)
        got = [facts.get(int(r) - 1, {}) for r in seen]
        nnodes = np.array([g.get("nnodes", np.nan) for g in got], dtype=np.float64)
        out["nnodes"][missing] = nnodes[at]
        digest = out["digest"]
        digest = (digest.copy() if digest.dtype == object        # (none carried: no row a float)
                  else np.full(len(digest), None, dtype=object))
        digest[missing] = np.array([g.get("digest") for g in got] + [None], dtype=object)[:-1][at]
        out["digest"] = digest
    return out


def closed_counts(events: pd.DataFrame) -> dict[int, int]:
    """round -> the seats its closing filled (the round_closed row's count, every runtime's)."""
    closed = (events["event"] == Event.ROUND_CLOSED).to_numpy()
    got = parse_details(events["detail"], closed, ("count",), {"count": pa.int64()})["count"]
    return {int(r): int(c) for r, c in zip(events["round"].array[closed], got)
            if not pd.isna(r) and not pd.isna(c)}
