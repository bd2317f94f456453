"""`outputs.stream`: the events go to disk as the run goes and the tables are folded from there.
A streamed run's tables, and the events.parquet it saves, are those of the same run in memory;
a row recorded behind what was written comes back in its place; the thin events keep the
first of each bulk (kind, round, detail) and every other row."""
import numpy as np
import pandas as pd
import pytest

import rdzv_sim.result as result
from rdzv_sim.api import run
from rdzv_sim.trace import Tracer
from rdzv_sim.trace.spill import Spill
from rdzv_sim.trace.thin import thin

RUNS = {"quickstart": [], "store-crash": [], "validate-quorum": [],
        "frontier-100k": ["cluster.nodes=64", "cluster.topology.racks=4", "cluster.topology.spines=2",
                          "protocol.min_nodes=60", "protocol.max_nodes=64", "scheduler.hot_spares=2",
                          "duration=86400"]}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_streamed_run_has_the_tables_of_one_in_memory(name, monkeypatch, tmp_path):
    monkeypatch.setattr(result, "SLICE", 40)                # written and read 40 rows at a time
    held = run(name, RUNS[name])
    streamed = run(name, RUNS[name] + ["outputs.stream=true"])
    assert streamed.events is None and len(streamed.spilled) == len(held.events)
    for t in ("rounds", "summary", "interruptions", "quorums"):
        a, b = getattr(held, t), getattr(streamed, t)
        assert (a is None) == (b is None)
        if a is not None:
            pd.testing.assert_frame_equal(b, a)
    held.save(tmp_path / "held")
    streamed.save(tmp_path / "streamed")
    a = pd.read_parquet(tmp_path / "held" / "events.parquet")
    b = pd.read_parquet(tmp_path / "streamed" / "events.parquet")
    for c in a.columns:                                       # (categories: those used)
        x, y = a[c], b[c]
        if isinstance(x.dtype, pd.CategoricalDtype):
            x, y = x.astype(object), y.astype(object)
        pd.testing.assert_series_equal(y, x, check_dtype=not isinstance(a[c].dtype, pd.CategoricalDtype))


def _record(tr, rows):
    for t, node, event in rows:
        tr.record(t, node, event)


def test_a_row_recorded_behind_what_was_written_comes_back_in_its_place(tmp_path):
    """Rows at 1, 2, 5 are written up to t=4; then rows at 2 (late: tied with a written one,
    recorded after it) and 6 come. Read back: the order a table built at once has. Near
    miss: without the late row, one row fewer and 2's tie gone."""
    def recordings(tr, late=True):
        _record(tr, [(1.0, "a", "node_start"), (2.0, "b", "node_start"), (5.0, "c", "node_start")])
        yield 4.0
        _record(tr, ([(2.0, "d", "node_start")] if late else []) + [(6.0, "e", "node_start")])

    def streamed(late=True):
        tr = Tracer()
        spill = Spill(tr, tmp_path, rows=1)
        for before in recordings(tr, late):
            spill.write(before)
        events = spill.close("s", 0)
        return pd.concat(list(events.slices()))[["t", "node"]].astype({"node": str}).values.tolist()

    tr = Tracer()
    for _ in recordings(tr):
        pass
    at_once = pd.DataFrame(tr.take_columns())[["t", "node"]].astype({"node": str}).values.tolist()
    assert at_once == [[1.0, "a"], [2.0, "b"], [2.0, "d"], [5.0, "c"], [6.0, "e"]]
    assert streamed() == at_once
    assert streamed(late=False) == [[1.0, "a"], [2.0, "b"], [5.0, "c"], [6.0, "e"]]


def test_thin_events_keep_each_bulk_groups_first_row_and_every_other():
    tr = Tracer()
    for t, node, event, rnd, detail in [
            (1.0, "a", "round_left", 0, {"reason": "workers_failed"}),
            (1.0, "b", "round_left", 0, {"reason": "workers_failed"}),     # same group: dropped
            (2.0, "c", "round_left", 0, {"reason": "peer_failed"}),        # another detail: kept
            (2.5, "d", "round_left", 0, {"reason": "workers_failed"}),     # again, a slice later
            (3.0, "a", "node_start", None, None), (3.0, "b", "node_start", None, None),
            (4.0, "a", "round_left", 1, {"reason": "workers_failed"}),     # another round: kept
            (5.0, "b", "round_left", 1, {"reason": "workers_failed"})]:    # (a later slice)
        tr.record(t, node, event, rnd, detail=detail)
    from rdzv_sim.trace import events_table
    ev = events_table(tr, "s", 0)
    for rows in (None, 2):
        got = thin(ev, rows)
        assert list(zip(got["t"], got["node"].astype(str))) == [(1.0, "a"), (2.0, "c"), (3.0, "a"),
                                                                 (3.0, "b"), (4.0, "a")]
    assert np.array_equal(thin(ev.iloc[:0])["t"], [])


def test_a_run_whose_events_would_not_fit_is_told_of_streaming():
    """32,768 hosts for 54 days would hold tens of GB of events; the bundled week about one
    (no hint); the same long run streamed needs none."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from frontier import sets

    from rdzv_sim.estimate import HOLD_GB, events_gb, stream_hint
    from rdzv_sim.scenario import load
    long = load("frontier-100k", sets(32768, 54))
    assert events_gb(long) > 4 * HOLD_GB and "outputs.stream=true" in stream_hint(long)
    assert events_gb(load("frontier-100k")) < HOLD_GB and stream_hint(load("frontier-100k")) is None
    assert stream_hint(load("frontier-100k", sets(32768, 54) + ["outputs.stream=true"])) is None


def test_the_spill_folder_goes_with_the_events_or_with_a_run_that_failed(tmp_path):
    import gc

    from rdzv_sim.result import spill_to
    tr = Tracer()
    failed = spill_to(tr)
    folder = failed.path.parent
    assert folder.exists()
    del failed, tr
    gc.collect()
    assert not folder.exists()                            # a run that never closed its spill
    tr = Tracer()
    tr.record(1.0, "a", "node_start")
    spill = spill_to(tr)
    events = spill.close("s", 0)
    del spill
    gc.collect()
    assert events.path.parent.exists() and len(list(events.slices())) == 1   # the events still read
    folder = events.path.parent
    del events
    gc.collect()
    assert not folder.exists()


def test_a_trace_without_rows_reads_back_as_one_empty_slice(tmp_path):
    """The folds read a table's columns even when it has no rows. Near miss: one row, one
    slice with it."""
    empty = list(Spill(Tracer(), tmp_path, rows=1).close("s", 0).slices())
    assert len(empty) == 1 and len(empty[0]) == 0 and "event" in empty[0].columns
    tr = Tracer()
    tr.record(1.0, "a", "node_start")
    (tmp_path / "one").mkdir()
    one = list(Spill(tr, tmp_path / "one", rows=1).close("s", 0).slices())
    assert [len(p) for p in one] == [1]
