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
        facts = {k: v for k, v in (json.loads(d) if d else {}).items() if k in FACTS}
        if facts and not pd.isna(rnd):
            out[int(rnd)] = facts
    return out


def rank_details(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """The fields of every rank_assigned event's detail the tables read, parsed once; a field
    a row does not carry is its round's fact (`round_facts`)."""
    mask = (events["event"] == "rank_assigned").to_numpy()
    out = parse_details(events["detail"], mask, RANK_FIELDS)
    missing = np.asarray(pd.isna(out["nnodes"]), bool)
    if missing.any():
        facts = pd.DataFrame.from_dict(round_facts(events), orient="index")
        rounds = pd.Series(events.loc[mask, "round"].to_numpy()[missing])
        for f in ("digest", "nnodes"):
            col = out[f].astype(object)
            col[missing] = rounds.map(facts[f]).to_numpy(dtype=object) if f in facts else None
            out[f] = col
    return out

