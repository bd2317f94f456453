"""Goodput and ETTR of a run, per round and per interruption, from its trace tables.

- `ettr` (effective training time ratio): seconds of training whose work survived / wall.
- `goodput`: that work weighted by the job's throughput at the size it ran (relative to the
  full job's: `training.scaling`), over wall: 2 of 8 hosts for the whole run is about a quarter;
  a round with a straggler among its members trains at its pace (`straggle.py`).

A round trains on the largest size its parallelism allows (`model_parallel_nodes`,
`valid_sizes`); the other hosts idle, and that capacity is lost. The formulas: docs/training.md.
"""
from __future__ import annotations

import json

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..protocols.recovery import EVENT, IN_PLACE_EVENTS, KEEPS_STATE
from .spans import round_spans
from .straggle import span_rate, straggles
from .work import span_work
from ..events import Event
from ..reasons import Reason

LOST = ("startup", "detection", "rendezvous", "restart_in_place", "worker_start", "checkpoint_load",
        "checkpoint_stall", "recompute", "running_smaller", "straggling")
INTERRUPTION_COLUMNS = ["t", "round", "cause", "end", "hosts_before", "hosts_after",
                        "detection_s", "rendezvous_s", "restart_in_place_s", "worker_start_s", "checkpoint_load_s",
                        "recompute_s", "running_smaller_s", "restart_from"]


@dataclass
class TrainingResult:
    spans: pd.DataFrame                   # one row per round that trained, with its work
    interruptions: pd.DataFrame           # one row per time training stopped before the end
    summary: dict = field(default_factory=dict)
    duration: float = 1.0
    quorums: pd.DataFrame | None = None   # a per-step protocol's quorums (training/quorum.py)

    def per_round(self, rounds: pd.DataFrame) -> pd.DataFrame:
        """Columns for the rounds table: when each round trained, on how many hosts, and its
        share of the run's ETTR and goodput (rounds that never trained: zeros)."""
        by = self.spans.set_index("round")
        d = self.duration
        cols = {"train_start": by["t0"], "train_end": by["t1"], "hosts_used": by["hosts_used"],
                "train_s": by["saved_s"], "ettr": by["saved_s"] / d,
                "goodput": by["saved_s"] * by["throughput"] * by["rate"] / d}
        out = pd.DataFrame({k: rounds["round"].map(v) for k, v in cols.items()}, index=rounds.index)
        return out.fillna({"hosts_used": 0, "train_s": 0.0, "ettr": 0.0, "goodput": 0.0}).astype(
            {"hosts_used": "int64"})


def hosts_used(w: int, training) -> int:
    """The largest size <= w the job's parallelism allows (0: not even one replica)."""
    mp, valid = training.model_parallel_nodes, training.valid_sizes
    for v in range(w, 0, -1):
        if v % mp == 0 and (valid is None or v in valid):
            return v
    return 0


def throughput(v: int, full: int, training) -> float:
    """The job's throughput at v hosts, relative to the full job's."""
    if v <= 0 or full <= 0:
        return 0.0
    if training.scaling == "linear":
        return v / full
    sizes = sorted(training.scaling)
    rel = [training.scaling[s] for s in sizes]
    return float(np.interp(v, sizes, rel) / np.interp(full, sizes, rel))


def job_causes(events: pd.DataFrame):
    """A function (t0, t1, reason) -> the cause of the job-scope interruption that ended a span
    whose members left for a failure (`reason`: their own, workers_failed or peer_failed), or
    None: a job-wide fault (a software bug, a planned restart) keeps its label in the
    interruptions table, as a host's crash keeps its own."""
    ev = events[events["event"] == Event.FAULT_JOB_INTERRUPTION]
    t = ev["t"].to_numpy(dtype=float)
    causes = [json.loads(d).get("cause", "") if isinstance(d, str) and d else "" for d in ev["detail"]]

    def cause(t0: float, t1: float, reason: str) -> str | None:
        if reason not in (Reason.WORKERS_FAILED, Reason.PEER_FAILED) or not len(t):
            return None
        i = int(np.searchsorted(t, t1, side="right")) - 1     # the last one by the span's end
        if i < 0 or t[i] <= t0:
            return None
        return causes[i] or None
    return cause


def _peer_ok(members: tuple, crashed: tuple) -> bool:
    """Each host's in-memory copy lives on the next host in rank order: the copies survive
    unless a crashed host's successor crashed too."""
    if not crashed:
        return True
    n, pos = len(members), {m: i for i, m in enumerate(members)}
    lost = {pos[c] for c in crashed if c in pos}
    return n > 1 and not any((i + 1) % n in lost for i in lost)


SPAN_COLUMNS = ["round", "t0", "t1", "hosts", "hosts_used", "throughput", "rate", "end", "reason", "load_s",
                "stall_s", "progress_s", "saved_s", "lost_s", "restart_from"]


def _rounds_of(events: pd.DataFrame, kinds) -> set:
    return set(events.loc[events["event"].isin(kinds), "round"].dropna().astype(int).tolist())


def evaluate(events: pd.DataFrame, rounds: pd.DataFrame, sc, spans: pd.DataFrame | None = None) -> TrainingResult:
    """The training model over a run's tables; `spans`: its `round_spans`, if made already."""
    if spans is None:
        spans = round_spans(events, sc.duration)
    # rounds a recovery in place made whose survivors train on from memory (a shrink's): nothing
    # reloaded or lost; and every round one made: its survivors met at no store (no rendezvous)
    shrunk = _rounds_of(events, [str(EVENT[m]) for m, keeps in KEEPS_STATE.items() if keeps])
    made = _rounds_of(events, IN_PLACE_EVENTS)
    table = _span_table(events, spans, sc, shrunk)
    inter = _interruptions(events, rounds, table, sc.duration, made)
    return TrainingResult(table, inter, _summary(table, inter, sc.duration), sc.duration)


def _span_table(events: pd.DataFrame, spans: pd.DataFrame, sc, shrunk: set) -> pd.DataFrame:
    """A row per span of training: its work, what survived, at what size and pace."""
    tr, duration = sc.training, sc.duration
    full = hosts_used(sc.max_nodes, tr)
    requeues = events.loc[events["event"] == Event.JOB_REQUEUED, "t"].to_numpy()
    slow = straggles(events)
    rows, from_peer = [], False
    for i, s in enumerate(spans.itertuples(index=False)):
        final = s.end == "run_end"
        nxt_t0 = float(spans["t0"].iloc[i + 1]) if i + 1 < len(spans) else duration
        on = i + 1 < len(spans) and int(spans["round"].iloc[i + 1]) in shrunk
        requeued = bool(((requeues >= s.t1) & (requeues < nxt_t0)).any())
        peer_ok = (tr.checkpoint == "in_memory" and not requeued and _peer_ok(s.members, s.crashed))
        w = span_work(s.t1 - s.t0, tr, first=i == 0 or s.round in shrunk, final=final or on,
                      from_peer=from_peer, peer_ok=peer_ok)
        used = hosts_used(s.hosts, tr)
        rows.append({"round": s.round, "t0": s.t0, "t1": s.t1, "hosts": s.hosts, "hosts_used": used,
                     "throughput": throughput(used, full, tr),
                     "rate": span_rate(s.members, s.t0, s.t1, slow),
                     "end": s.end, "reason": s.reason, "load_s": w.load, "stall_s": w.stalls,
                     "progress_s": w.progress, "saved_s": w.saved if used else 0.0,
                     "lost_s": w.lost if used else w.progress, "restart_from":
                     "start" if i == 0 else "memory" if s.round in shrunk
                     else ("peer" if from_peer else "checkpoint")})
        from_peer = peer_ok and not final
    return pd.DataFrame(rows, columns=SPAN_COLUMNS)


def _interruptions(events: pd.DataFrame, rounds: pd.DataFrame, table: pd.DataFrame, duration: float,
                   made: set) -> pd.DataFrame:
    """A row per time training stopped before the end: where each of its seconds went."""
    done = dict(zip(rounds["round"], rounds["end"])) if len(rounds) else {}
    # a round's members leave after its training stopped (t1 is their first stop)
    first_left = events.loc[events["event"] == Event.ROUND_LEFT].groupby("round")["t"].min().to_dict()
    job_cause = job_causes(events)
    out = []
    for i, s in enumerate(table.itertuples(index=False)):
        if s.end == "run_end":
            continue
        nxt = table.iloc[i + 1] if i + 1 < len(table) else None
        resume = float(nxt["t0"]) if nxt is not None else duration
        gap = resume - s.t1
        out_at = first_left.get(s.round)
        detection = min(gap, max(0.0, out_at - s.t1)) if out_at is not None else gap
        ranked = float(done.get(int(nxt["round"]), resume)) if nxt is not None else resume
        meeting = min(gap - detection, max(0.0, ranked - s.t1 - detection))
        in_place = nxt is not None and int(nxt["round"]) in made
        out.append({
            "t": s.t1, "round": s.round, "cause": job_cause(s.t0, s.t1, s.reason) or s.reason or s.end,
            "end": s.end,
            "hosts_before": s.hosts_used, "hosts_after": int(nxt["hosts_used"]) if nxt is not None else 0,
            "detection_s": detection, "rendezvous_s": 0.0 if in_place else meeting,
            "restart_in_place_s": meeting if in_place else 0.0,
            "worker_start_s": gap - detection - meeting,
            "checkpoint_load_s": float(nxt["load_s"]) if nxt is not None else 0.0,
            "recompute_s": s.lost_s,
            "running_smaller_s": (float(nxt["saved_s"]) * (1 - float(nxt["throughput"]))
                                  if nxt is not None else 0.0),
            "restart_from": str(nxt["restart_from"]) if nxt is not None else ""})
    return pd.DataFrame(out, columns=INTERRUPTION_COLUMNS)


def _summary(table: pd.DataFrame, inter: pd.DataFrame, duration: float) -> dict:
    """ETTR, goodput, interruptions and MTTI/MTTR, and every lost second by part."""
    saved = float(table["saved_s"].sum())
    at_size = float((table["saved_s"] * table["throughput"]).sum())
    useful = float((table["saved_s"] * table["throughput"] * table["rate"]).sum())
    lost = {
        "startup": float(table["t0"].iloc[0]) if len(table) else duration,
        "detection": float(inter["detection_s"].sum()),
        "rendezvous": float(inter["rendezvous_s"].sum()),
        "restart_in_place": float(inter["restart_in_place_s"].sum()),
        "worker_start": float(inter["worker_start_s"].sum()),
        "checkpoint_load": float(table["load_s"].sum()),
        "checkpoint_stall": float(table["stall_s"].sum()),
        "recompute": float(table["lost_s"].sum()),
        "running_smaller": saved - at_size,
        "straggling": at_size - useful,
    }
    failures = inter[~inter["cause"].isin([Reason.NODES_WAITING, Reason.ROUND_ENDED])]
    summary = {"ettr": saved / duration, "goodput": useful / duration,
               "interruptions": int(len(failures)),
               "mtti_s": duration / len(failures) if len(failures) else float("nan"),
               "mttr_s": float((failures["detection_s"] + failures["rendezvous_s"] + failures["restart_in_place_s"]
                                + failures["worker_start_s"] + failures["checkpoint_load_s"]).mean())
               if len(failures) else float("nan")}
    summary.update({f"lost_{k}_s": v for k, v in lost.items()})
    return summary
