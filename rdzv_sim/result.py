"""`RunResult`: the three trace tables of one run, and how they are saved."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TABLES = ("events", "rounds", "summary", "store_load", "interruptions", "quorums")
OPTIONAL = ("store_load", "interruptions", "quorums")
SLICE = 1 << 20         # the events' rows the tables read at a time (what their scratch follows)


@dataclass
class RunResult:
    scenario: object            # the validated Scenario
    events: pd.DataFrame
    rounds: pd.DataFrame
    summary: pd.DataFrame
    store_load: pd.DataFrame | None = None      # store ops/bytes per time bin
    wall_s: float = 0.0
    interruptions: pd.DataFrame | None = None   # with a training model: where the time went
    quorums: pd.DataFrame | None = None         # per-step protocols: one row per quorum
    # outputs.stream: the events on disk (`events` is None), read a slice at a time
    spilled: object = None

    def tables(self) -> dict[str, pd.DataFrame | None]:
        """Every table by name (what reports, comparisons and checkers read)."""
        return {name: getattr(self, name) for name in TABLES}

    def save(self, out: str | Path, formats=("parquet",)) -> list[Path]:
        """Write every table (Parquet, CSV) plus the scenario; files appear only when complete."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name in TABLES:
            df = getattr(self, name)
            if df is None and name == "events" and self.spilled is not None:
                written += _write_slices(self.spilled, out, formats)
                continue
            if df is None:
                continue
            for fmt in formats:
                path = out / f"{name}.{fmt}"
                tmp = path.with_suffix(path.suffix + ".tmp")
                if fmt == "parquet":
                    df.to_parquet(tmp, index=False)
                else:
                    df.to_csv(tmp, index=False)
                tmp.replace(path)
                written.append(path)
        import yaml
        (out / "scenario.yaml").write_text(
            yaml.safe_dump(self.scenario.model_dump(mode="json"), sort_keys=False))
        written.append(out / "scenario.yaml")
        return written


def build(scenario, rows, stats, round_ops=None, load=None, load_bin: float = 1.0) -> RunResult:
    """The tables of a run from its event rows: what every runtime returns."""
    from .trace import events_table
    from .trace.chunks import chunks
    from .trace.memory import give_back
    events = events_table(rows, scenario.name, scenario.seed)
    give_back()                                      # the trace's pages, freed block by block
    slices = lambda: (part for _, part in chunks(events, SLICE))    # noqa: E731
    return fold_tables(scenario, events, slices, stats, round_ops, load, load_bin)


def fold_tables(scenario, events, slices, stats, round_ops=None, load=None, load_bin: float = 1.0) -> RunResult:
    """The tables of a run from its events, read as folds over `slices()` (the events in time
    order, a slice at a time; twice): `events` is what the result holds (None: on disk)."""
    from .placement import rank_changes, shard_moves
    from .trace import stamp, store_load_table, summary_table
    from .trace.memory import give_back
    from .trace.rounds import RoundsFold
    from .trace.thin import ThinFold
    from .training import evaluate, training_model_of
    from .training.spans import SpansFold
    sc = scenario
    fold, spans_fold, thin_fold = RoundsFold(), SpansFold(sc.duration), ThinFold()
    for part in slices():
        fold.feed(part)
        spans_fold.starts(part)
        thin_fold.feed(part)
    for part in slices():
        spans_fold.stops(part)
    give_back()
    rounds = fold.table(round_ops)
    ranked = fold.ranked()                           # the rank changes and placement read it
    det = {"latency": fold.latencies()}              # the summary reads it
    spans = spans_fold.table()                       # the summary and training read it
    thin = thin_fold.table()                         # and these
    del fold, spans_fold, thin_fold
    give_back()
    lines = sc.protocol.round_lines(sc, rounds["round"].to_numpy())
    rounds = rounds.join(shard_moves(rounds, None, sc.shards.count, sc.shards.policies,
                                     sc.shards.ring_vnodes, ranked=ranked, lines=lines)
                         ).join(rank_changes(rounds, ranked, lines))
    training = None
    # a protocol whose job trains otherwise (per-step quorum) brings its own model, and
    # reports with it even without a training section
    model = training_model_of(sc.protocol.name)
    if sc.training is not None or model is not None:
        training = (model or evaluate)(thin, rounds, sc, spans)
        rounds = rounds.join(training.per_round(rounds))
    rounds = stamp(rounds, sc.name, sc.seed)
    summary = summary_table(thin, rounds, stats, sc.name, sc.seed,
                            training.summary if training is not None else None, spans, det,
                            recovery=sc.agent.recovery, lifecycle=sc.lifecycle is not None)
    store_load = None if load is None else store_load_table(load, load_bin, sc.name, sc.seed)
    interruptions = None if training is None else stamp(training.interruptions, sc.name, sc.seed)
    quorums = None if training is None or training.quorums is None else stamp(training.quorums, sc.name, sc.seed)
    return RunResult(sc, events, rounds, summary, store_load, stats.wall_s, interruptions, quorums)


def spill_to(tracer, rows: int | None = None):
    """A `Spill` of `tracer` into a folder of its own under TMPDIR (removed with the events
    read from it), every `rows` rows (None: `SLICE`)."""
    import tempfile
    from .trace.spill import Spill
    return Spill(tracer, tempfile.mkdtemp(prefix="rdzv-sim-events-"), rows or SLICE, owned=True)


def build_spilled(scenario, tracer, stats, round_ops=None, load=None, load_bin: float = 1.0) -> RunResult:
    """`build`, for a run whose events went to disk (`outputs.stream`): the tables are folded
    from there, and the result holds the events on disk, not in memory."""
    sink, tracer.sink = tracer.sink, None
    events = sink.close(scenario.name, scenario.seed)      # (its folder goes with it)
    result = fold_tables(scenario, None, lambda: events.slices(SLICE), stats, round_ops, load, load_bin)
    result.spilled = events
    return result


def _write_slices(events, out: Path, formats) -> list[Path]:
    """The events table from disk, a slice at a time, as `save` writes one from memory (each
    slice's labels those it uses: the run's details include every round's member list)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    written = []
    for fmt in formats:
        path = out / f"events.{fmt}"
        tmp = path.with_suffix(path.suffix + ".tmp")
        writer = None
        try:
            for i, part in enumerate(events.slices(SLICE)):
                part = part.copy()
                for c in ("node", "event", "detail"):
                    part[c] = part[c].cat.remove_unused_categories()
                if fmt == "csv":
                    part.to_csv(tmp, index=False, mode="w" if i == 0 else "a", header=i == 0)
                    continue
                table = pa.Table.from_pandas(part, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table.cast(writer.schema) if table.schema != writer.schema else table)
        finally:
            if writer is not None:
                writer.close()
        tmp.replace(path)
        written.append(path)
    return written


def load_tables(directory: str | Path) -> dict[str, pd.DataFrame]:
    """Read the tables a run saved (Parquet preferred)."""
    d = Path(directory)
    out = {}
    for name in TABLES:
        pq, csv = d / f"{name}.parquet", d / f"{name}.csv"
        if pq.exists():
            out[name] = pd.read_parquet(pq)
        elif csv.exists():
            out[name] = pd.read_csv(csv)
        elif name in OPTIONAL:
            out[name] = None
        else:
            raise FileNotFoundError(f"{d}: no {name}.parquet or {name}.csv")
    return out
