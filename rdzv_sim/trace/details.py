"""The events' JSON details, read back: as dicts (small tables), or chosen fields as arrays."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa


def details(df: pd.DataFrame) -> list[dict]:
    return [json.loads(d) if d else {} for d in df["detail"]]


def parse_details(column: pd.Series, mask: np.ndarray, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    """`fields` of the JSON details of the rows where `mask` holds, as arrays (missing: None or
    NaN). pyarrow's reader parses them a slice at a time, fed straight from the Arrow column
    (no Python string per row): faster than json.loads, and little memory on long runs."""
    import io

    import pyarrow.compute as pc
    import pyarrow.json as pj
    if isinstance(column.dtype, pd.CategoricalDtype):    # each distinct detail parsed once
        codes = column.cat.codes.to_numpy()[np.asarray(mask, dtype=bool)]
        used, at = np.unique(codes, return_inverse=True)   # (the masked rows' own: one kind's)
        texts = np.asarray(column.cat.categories, dtype=object)[np.maximum(used, 0)]
        texts[used < 0] = ""
        once = parse_details(pd.Series(texts, dtype=object), np.ones(len(texts), bool), fields)
        return {f: v[at] for f, v in once.items()}
    try:
        texts = pa.array(column.array)
    except (TypeError, pa.ArrowInvalid):              # an object column (a table read from CSV)
        texts = pa.array(column.fillna("").astype(str).tolist(), pa.large_string())
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = texts.filter(pa.array(np.asarray(mask, dtype=bool)))
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
        table = pj.read_json(io.BytesIO(data))
        n = table.num_rows
        for f in fields:
            col = (table.column(f).to_numpy(zero_copy_only=False) if f in table.column_names
                   else np.full(n, None, dtype=object))
            out[f].append(col)
    return {f: (np.concatenate(v) if v else np.zeros(0, dtype=object)) for f, v in out.items()}


RANK_FIELDS = ("digest", "nnodes", "latency")     # what the tables read of rank_assigned
FACTS = ("digest", "master", "nnodes")            # a round's, the same for all its members


def round_facts(events: pd.DataFrame) -> dict[int, dict]:
    """round -> its facts, where a runtime recorded them once, on the round's round_closed row
    (`outputs.trace: rounds`)."""
    closed = events[events["event"] == "round_closed"]
    out = {}
    for rnd, d in zip(closed["round"], closed["detail"]):
        facts = {k: v for k, v in (json.loads(d) if isinstance(d, str) and d else {}).items()
                 if k in FACTS}
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
    mask = (events["event"] == "rank_assigned").to_numpy()
    out = parse_details(events["detail"], mask, RANK_FIELDS[:2])
    out["latency"] = latencies(events, mask)
    out["nnodes"] = np.array(pd.to_numeric(pd.Series(out["nnodes"]), errors="coerce"),
                             dtype=np.float64)
    missing = np.isnan(out["nnodes"])
    if missing.any():                  # one lookup a round, not a row (10^7 rows at the frontier)
        facts = round_facts(events)
        rounds = events["round"].to_numpy(dtype=np.int64, na_value=-1)[mask][missing]
        seen, at = np.unique(rounds, return_inverse=True)
        got = [facts.get(int(r), {}) for r in seen]
        nnodes = np.array([g.get("nnodes", np.nan) for g in got], dtype=np.float64)
        out["nnodes"][missing] = nnodes[at]
        digest = np.asarray(out["digest"], dtype=object)
        digest[missing] = np.array([g.get("digest") for g in got] + [None], dtype=object)[:-1][at]
        out["digest"] = digest
    return out
