"""A run's events written to disk as the run goes (`outputs.stream`), and read back a slice at
a time: a run of 10^8 rows holds its tables' folds, never its rows.

Every so often the rows before the clock are written, in time order, as one window of time.
The aggregate fidelity records some rows behind its clock (a round's joins, once it forms;
a waiting spare's, once it is taken): those that fall in a window already written go to a
second file of late rows, merged back into their windows as they are read (a late row was
recorded after every row of its window, so it comes after those tied with it in time, as in
a table built at once). The files are Arrow's (lz4), the rows as the tracer's codes; the
labels stay in the tracer and make each slice's categoricals, so every slice shares one set
of categories (what the folds key on)."""
from __future__ import annotations

import math
import shutil
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .chunks import chunks
from .columns import SCHEMA_VERSION, Labels, nullable_int32, stamp

SCHEMA = pa.schema([("t", pa.float64()), ("node", pa.int32()), ("event", pa.int32()),
                    ("round", pa.int32()), ("rank", pa.int32()), ("world_size", pa.int32()),
                    ("latency", pa.float64()), ("detail", pa.int32())])
INTS = ("round", "rank", "world_size")


class Spill:
    """The tracer's rows before the clock, written in time order once it holds `rows` of them
    (`Tracer.finished`); `close` writes the rest and gives the events back to read."""

    def __init__(self, tracer, directory: str | Path, rows: int, owned: bool = False):
        self.tracer, self.rows = tracer, rows
        self.path = Path(directory) / "events.arrow"
        self.late_path = Path(directory) / "late.arrow"
        self._main = _Writer(self.path)
        self._late: _Writer | None = None
        self.until = -math.inf                      # every window before it is written
        self.windows: list[tuple[float, float]] = []
        self.written = 0
        # a folder of its own (`owned`) goes with whoever holds the rows: this spill, then the
        # events read from it
        self._remove = weakref.finalize(self, shutil.rmtree, str(directory), True) if owned else None

    def write(self, before: float) -> None:
        before = max(before, self.until)
        cols = self.tracer.take_before(before)
        late = cols["t"] < self.until               # recorded after their window was written
        if late.any():
            if self._late is None:
                self._late = _Writer(self.late_path)
            self._late.write({c: _pick(v, late) for c, v in cols.items()})
            cols = {c: _pick(v, ~late) for c, v in cols.items()}
        self._main.write(cols)                       # (empty too: its window may get late rows)
        self.windows.append((self.until, before))
        self.until = before
        self.written += len(late)                   # every row taken, late or not

    def close(self, scenario: str, seed: int) -> SpilledEvents:
        self.write(math.inf)
        self._main.close()
        if self._late is not None:
            self._late.close()
        tr = self.tracer
        events = SpilledEvents(self.path, self.late_path if self._late is not None else None,
                               self.windows, tr.names, tr.kinds, tr.details, scenario, seed, self.written)
        if self._remove is not None and self._remove.detach():
            weakref.finalize(events, shutil.rmtree, str(self.path.parent), True)
        return events


class _Writer:
    """Raw columns (`Tracer.take_before`) as record batches of one Arrow file."""

    def __init__(self, path: Path):
        self._sink = pa.OSFile(str(path), "wb")
        self._writer = pa.ipc.new_file(self._sink, SCHEMA, options=pa.ipc.IpcWriteOptions(compression="lz4"))

    def write(self, cols: dict) -> None:
        arrays = [pa.array(cols["t"]), pa.array(cols["node"]), pa.array(cols["event"])]
        arrays += [pa.array(cols[c][0], mask=cols[c][1]) for c in INTS]
        arrays += [pa.array(cols["latency"]), pa.array(cols["detail"])]
        self._writer.write_batch(pa.record_batch(arrays, schema=SCHEMA))

    def close(self) -> None:
        self._writer.close()
        self._sink.close()


def _pick(v, m):
    return (v[0][m], v[1][m]) if isinstance(v, tuple) else v[m]


class SpilledEvents:
    """A run's events on disk: `slices()` reads them back in time order, a slice at a time, as
    the events table's own columns (categoricals over the run's labels)."""

    def __init__(self, path: Path, late: Path | None, windows, names, kinds, details,
                 scenario: str, seed: int, rows: int):
        self.path, self.late, self.windows = Path(path), late, list(windows)
        self.scenario, self.seed, self.rows = scenario, seed, rows
        self.labels = {"node": Labels(names), "event": Labels(kinds), "detail": Labels(details, copy=False)}

    def __len__(self) -> int:
        return self.rows

    def slices(self, rows: int | None = None):
        """The events in time order, about `rows` rows a slice (None: a window a slice); a
        run without events gives one empty slice (its columns)."""
        late = _read_all(self.late) if self.late is not None else None
        empty = True
        with pa.OSFile(str(self.path)) as source:       # (read, not mapped: a mapped file's
            reader = pa.ipc.open_file(source)           # pages stay in the process's RSS)
            for i, (lo, hi) in enumerate(self.windows):
                batch = reader.get_batch(i)
                if late is not None:                  # this window's late rows, after its own
                    a, b = np.searchsorted(late.column("t").to_numpy(), [lo, hi], side="left")
                    if b > a:
                        both = pa.concat_tables([pa.Table.from_batches([batch]), late.slice(a, b - a)])
                        order = np.argsort(both.column("t").to_numpy(), kind="stable")
                        batch = both.take(pa.array(order)).combine_chunks().to_batches()[0]
                if not batch.num_rows:
                    continue
                frame = self._frame(batch)
                for _, part in chunks(frame, rows):
                    empty = False
                    yield part
                del frame
        if empty:
            yield self._frame(SCHEMA.empty_table())

    def _frame(self, batch) -> pd.DataFrame:
        col = batch.column
        cols = {"t": col("t").to_numpy()}
        for c in ("node", "event"):
            cols[c] = self.labels[c](col(c).to_numpy())
        for c in INTS:
            a = col(c)
            cols[c] = nullable_int32(pc.fill_null(a, 0).to_numpy(), a.is_null().to_numpy(zero_copy_only=False))
        cols["latency"] = col("latency").to_numpy()
        cols["detail"] = self.labels["detail"](col("detail").to_numpy())
        frame = pd.DataFrame(cols, copy=False)
        if self.rows <= 1000:                     # as `stamp` writes the whole table's
            return stamp(frame, self.scenario, self.seed)
        n = len(frame)
        frame.insert(0, "schema_version", _same(SCHEMA_VERSION, n))
        frame.insert(1, "scenario", _same(self.scenario, n))
        frame.insert(2, "seed", _same(self.seed, n))
        return frame


def _read_all(path: Path) -> pa.Table:
    """The late rows, in time order (stable: as recorded)."""
    with pa.OSFile(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    order = np.argsort(table.column("t").to_numpy(), kind="stable")
    return table.take(pa.array(order)).combine_chunks()


def _same(value, n: int) -> pd.Categorical:
    """One value on every row, held once (what `stamp` writes on a long table)."""
    return pd.Categorical.from_codes(np.zeros(n, np.int8), [value])


__all__ = ["Spill", "SpilledEvents"]
