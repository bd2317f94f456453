"""`RunResult`: the three trace tables of one run, and how they are saved."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TABLES = ("events", "rounds", "summary", "store_load", "interruptions", "quorums")
OPTIONAL = ("store_load", "interruptions", "quorums")
SLICE = 1 << 22         # the events' rows the tables read at a time (what their scratch follows)


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
    from .placement import rank_changes, shard_moves
    from .trace import events_table, stamp, store_load_table, summary_table
    from .trace.memory import give_back
    from .trace.rounds import fold_rounds
    sc = scenario
    events = events_table(rows, sc.name, sc.seed)
    give_back()                                      # the trace's pages, freed block by block
    fold = fold_rounds(events, SLICE)                # once: the rounds, ranks and latencies
    rounds = fold.table(round_ops)
    ranked = fold.ranked()                           # the rank changes and placement read it
    det = {"latency": fold.latencies()}              # the summary reads it
    del fold
    give_back()
    lines = sc.protocol.round_lines(sc, rounds["round"].to_numpy())
    rounds = rounds.join(shard_moves(rounds, events, sc.shards.count, sc.shards.policies,
                                     sc.shards.ring_vnodes, ranked=ranked, lines=lines)
                         ).join(rank_changes(rounds, ranked, lines))
    from .training import evaluate, round_spans, training_model_of
    spans = round_spans(events, sc.duration, SLICE)   # once: the summary and training read it
    training = None
    # a protocol whose job trains otherwise (per-step quorum) brings its own model, and
    # reports with it even without a training section
    model = training_model_of(sc.protocol.name)
    if sc.training is not None or model is not None:
        training = (model or evaluate)(events, rounds, sc, spans)
        rounds = rounds.join(training.per_round(rounds))
    rounds = stamp(rounds, sc.name, sc.seed)
    summary = summary_table(events, rounds, stats, sc.name, sc.seed,
                            training.summary if training is not None else None, spans, det)
    store_load = None if load is None else store_load_table(load, load_bin, sc.name, sc.seed)
    interruptions = None if training is None else stamp(training.interruptions, sc.name, sc.seed)
    quorums = None if training is None or training.quorums is None else stamp(training.quorums, sc.name, sc.seed)
    return RunResult(sc, events, rounds, summary, store_load, stats.wall_s, interruptions, quorums)


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
