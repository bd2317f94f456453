"""Goodput of a per-step (torchft-style) job: the Lighthouse replayed over its groups' lives.

A group *lives* while its round trains (`round_spans`: from its last host's workers starting
to its first host stopping). `Lighthouse.replay` cuts the job's time into segments (training,
a failed step and the wait for the next quorum, a heal, a checkpoint load, idling), and each
segment's capacity is split among the terms of docs/training.md:

- training: the member groups' throughput (`training.scaling`) times step / (step + quorum
  cost); the quorum call's share is `lost_quorum_s`; the groups outside are `running_smaller`;
- a failure: the survivors' lost step and their wait for the Lighthouse (`detection`);
- the Lighthouse's process gone (a `lighthouse_crash` fault): the members' wait in their
  failing quorum calls is `lost_quorum_s`, as the calls' own cost is, and so are steps that
  a quorum smaller than `min_replica_size` runs and cannot commit;
- a heal: a recovered group fetching its state, the others waiting for it (`heal`), and the
  collectives' reconfiguration at every change (`reconfigure`);
- a job with no live group holding the state restarts from its last checkpoint: the time
  with no group up is `rendezvous`, the load `checkpoint_load`, and the work since the last
  written checkpoint `recompute` (checkpoint kinds as in `work.py`, over the training time
  between two such restarts).

The identity `duration = goodput x duration + sum(lost_*)` holds as for the other protocols.
"""
from __future__ import annotations

import bisect
from typing import NamedTuple

import pandas as pd

from .account import INTERRUPTION_COLUMNS, LOST, TrainingResult, throughput
from .work import span_work
from ..events import Event
from ..reasons import Reason

QUORUM_LOST = LOST + ("heal", "reconfigure", "quorum")
QUORUM_COLUMNS = ["quorum", "t", "groups", "hosts", "members", "joined", "left", "restart", "cause",
                  "failed_at", "quorum_id", "stale", "store", "hung"]


def lighthouse_for(sc):
    """The scenario's Lighthouse (its rules and costs), ready to replay."""
    from ..protocols.quorum.lighthouse import Costs, Lighthouse, QuorumRules
    p, a, tr = sc.protocol, sc.agent, sc.training
    detection = min(a.peer_crash_detection or p.timeout, p.timeout)
    rules = QuorumRules(min_replicas=p.min_replicas, join_timeout=p.quorum_join_timeout,
                        heartbeat_timeout=p.heartbeat_timeout, tick=p.quorum_tick)
    costs = Costs(step_time=p.step_time, quorum_cost=p.quorum_cost, reconfigure=p.reconfigure_time,
                  heal=p.heal_time, detection=detection, load=tr.load_time if tr is not None else 0.0,
                  overlap=p.async_quorum, init_sync=p.init_sync, sync_every=p.sync_every,
                  quorum_retries=p.quorum_retries, quorum_timeout=p.quorum_timeout,
                  restart=a.worker_start + a.worker_start_per_node * p.group_size,
                  min_commit=p.min_replica_size or p.min_replicas, timeout=p.timeout, ids=p.lighthouse_ids,
                  stale_connect=p.stale_connect_timeout)
    return Lighthouse(rules, costs, sc.duration, seed=sc.seed)


def outages(events: pd.DataFrame) -> list[tuple[float, float]]:
    """When the Lighthouse's process was gone: (lost, back) from the run's events."""
    ev = events[events["event"].isin([Event.FAULT_LIGHTHOUSE_CRASH, Event.LIGHTHOUSE_RESTARTED])]
    out, lost = [], None
    for t, e in zip(ev["t"].to_numpy(float), ev["event"].astype(str)):
        if e == Event.FAULT_LIGHTHOUSE_CRASH and lost is None:
            lost = t
        elif e == Event.LIGHTHOUSE_RESTARTED and lost is not None:
            out.append((lost, t))
            lost = None
    if lost is not None:
        out.append((lost, float("inf")))
    return out


class Life(NamedTuple):
    """One group round that trained: its Manager heartbeats from `beat` (the round's ranks),
    asks at `up` (its first step), dies at `down` (inf: it lasted), failing the others' step
    `detection` seconds later. Its first five fields are what `Lighthouse.replay` reads."""
    group: int
    beat: float
    up: float
    down: float
    detection: float
    round: int
    reason: str


def lives(spans: pd.DataFrame, rounds: pd.DataFrame, group_of_round, events: pd.DataFrame | None = None,
          timeout: float = float("inf"), detection: float = 0.0) -> list[Life]:
    """Every group round that trained, as a `Life`. Its detection is as long as its own
    surviving hosts took to notice its death (a crashed process: fast; a vanished host: their
    collectives' timeout), at most torchft's `timeout`; `detection` when it has no survivors
    to tell."""
    ranked = dict(zip(rounds["round"], rounds["end"])) if len(rounds) else {}
    noticed = {}
    if events is not None and len(events):
        left = events[(events["event"] == Event.ROUND_LEFT) & events["detail"].str.contains(Reason.PEER_FAILED, na=False)]
        noticed = left.groupby("round")["t"].min().to_dict()
    out = []
    for s in spans.itertuples(index=False):
        down = float("inf") if s.end == "run_end" else float(s.t1)
        beat = min(float(ranked.get(s.round, s.t0)), float(s.t0))
        seen = noticed.get(s.round)
        k = min(timeout, seen - down) if seen is not None and seen >= down else detection
        out.append(Life(group_of_round(int(s.round)), beat, float(s.t0), down, k, int(s.round),
                        s.reason or s.end))
    return out


def replay(events, rounds, sc, spans=None, **given):
    """The scenario's Lighthouse replayed over a run's group lives: (lighthouse, lives).
    `given`: what a real run decided that the model draws (`Lighthouse.first_retry`,
    `last_id`, `stores`), for a validation against it."""
    from .spans import round_spans
    if spans is None:
        spans = round_spans(events, sc.duration)
    lh = lighthouse_for(sc)
    for k, v in given.items():
        setattr(lh, k, v)
    groups = sc.protocol.groups(sc.max_nodes)
    life = lives(spans, rounds, lambda rnd: rnd % groups, events, sc.protocol.timeout,
                 lh.costs.detection)
    return lh.replay(life, outages(events)), life


def quorums_table(lh, group_size: int) -> pd.DataFrame:
    def names(gs):
        return ",".join(str(g) for g in sorted(gs))
    rows = [{"quorum": q.quorum, "t": q.t, "groups": len(q.groups), "hosts": len(q.groups) * group_size,
             "members": names(q.groups), "joined": names(q.joined), "left": names(q.left),
             "restart": q.restart, "cause": q.cause,
             "failed_at": float("nan") if q.failed_at is None else q.failed_at,
             "quorum_id": q.quorum_id, "stale": q.stale, "store": q.store, "hung": names(q.hung)}
            for q in lh.quorums]
    return pd.DataFrame(rows, columns=QUORUM_COLUMNS)


def evaluate_quorum(events, rounds, sc, spans) -> TrainingResult:
    """The training model of a `quorum` run (module doc); `result.quorums` is its quorum table."""
    from ..scenario.schema import Training
    p, d = sc.protocol, sc.duration
    tr = sc.training or Training(checkpoint_cost=0.0)     # no training section: no checkpoints
    size, full = p.group_size, sc.cluster.nodes
    lh, life = replay(events, rounds, sc, spans)
    lost = dict.fromkeys(QUORUM_LOST, 0.0)
    by_span = _between_training(lh, size, full, lost)
    good, saved_total, share_t, share_g = _training(lh, life, by_span, tr, size, full,
                                                    p.sync_every * p.step_time / lh.costs.step, lost)
    quorums = quorums_table(lh, size)
    failures = _interruptions(lh, life, size)
    summary = {"ettr": saved_total / d, "goodput": good / d, "interruptions": int(len(failures)),
               "absorbed": int(failures["absorbed"].sum()) if len(failures) else 0,
               "full_restarts": int((~failures["absorbed"]).sum()) if len(failures) else 0,
               "quorums": int(len(quorums)),
               "mtti_s": d / len(failures) if len(failures) else float("nan"),
               "mttr_s": float((failures["detection_s"] + failures["rendezvous_s"]
                                + failures["checkpoint_load_s"]).mean()) if len(failures) else float("nan")}
    summary.update({f"lost_{k}_s": v for k, v in lost.items()})
    summary.update(_steps(lh, d))
    table = pd.DataFrame([{"round": rnd, "t0": u, "t1": min(dn, d), "hosts": size, "hosts_used": size,
                           "throughput": share_g[rnd] / share_t[rnd] if share_t.get(rnd) else 0.0,
                           "rate": 1.0, "saved_s": share_t.get(rnd, 0.0)}
                          for _, _, u, dn, _, rnd, _ in life],
                         columns=["round", "t0", "t1", "hosts", "hosts_used", "throughput", "rate", "saved_s"])
    return TrainingResult(table, failures, summary, d, quorums)


def _between_training(lh, size: int, full: int, lost: dict) -> dict[int, list]:
    """Adds to `lost` every second of the segments that do not train (before the first, refused
    steps, failures, heals, reconfigures, loads, outages); returns the training segments by span."""
    started = False
    by_span: dict[int, list] = {}
    for s in lh.segments:
        dt = s.t1 - s.t0
        if s.refused:                           # every step refused: time lost to the quorum
            if not started:
                lost["startup"] += dt
            else:
                e = len(s.groups) * size / full
                lost["quorum"] += e * dt
                lost["running_smaller"] += (1 - e) * dt
            continue
        if s.kind == "train":
            started = True
            by_span.setdefault(s.span, []).append(s)
            continue
        if not started:
            lost["startup"] += dt
            continue
        if not s.groups:                      # no group holds the state: the job restarts
            lost["rendezvous"] += dt
            continue
        e = len(s.groups) * size / full
        term = {"failure": "detection", "heal": "heal", "reconf": "reconfigure",
                "load": "checkpoint_load", "idle": "detection", "outage": "quorum"}[s.kind]
        lost[term] += e * dt
        lost["running_smaller"] += (1 - e) * dt
    return by_span


def _training(lh, life, by_span: dict, tr, size: int, full: int, qf: float, lost: dict):
    """The training segments: the useful work kept (goodput's numerator), the time saved (ETTR's),
    and each group round's share of both (the groups of a segment split it); adds the rest to
    `lost`. `qf`: the window's share of a quorum's cycle."""
    good = saved_total = 0.0
    share_t: dict[int, float] = {}
    share_g: dict[int, float] = {}
    by_group: dict[int, list] = {}              # group -> its lives (up, down, round), in order
    for x in sorted(life, key=lambda x: x.up):
        by_group.setdefault(x.group, []).append((x.up, x.down, x.round))
    last_span = max(by_span, default=-1)
    for k, segs in sorted(by_span.items()):
        train_s = sum(s.t1 - s.t0 for s in segs)
        w = span_work(train_s, tr, first=True, final=(k == last_span and not _ends_in_restart(lh, segs)))
        keep, stall, redo = (w.saved / train_s, w.stalls / train_s, w.lost / train_s) if train_s else (0, 0, 0)
        saved_total += w.saved
        for s in segs:
            dt = s.t1 - s.t0
            working = s.groups - s.healing
            split = training_split(len(working), len(s.healing), size, full, tr, qf)
            useful = split.useful * dt
            good += keep * useful
            lost["checkpoint_stall"] += stall * useful
            lost["recompute"] += redo * useful
            lost["quorum"] += split.quorum * dt
            lost["heal"] += split.heal * dt
            lost["running_smaller"] += split.smaller * dt
            for g in working:
                rnd = _round_at(by_group.get(g, ()), s.t0)
                if rnd is not None:
                    share_t[rnd] = share_t.get(rnd, 0.0) + keep * dt / len(working)
                    share_g[rnd] = share_g.get(rnd, 0.0) + keep * useful / len(working)
    return good, saved_total, share_t, share_g


def _steps(lh, d: float) -> dict:
    """The steps attempted, committed and failed, and the wall each cost."""
    st = lh.steps
    first = lh.quorums[0].t if lh.quorums else d
    return {"steps_attempted": st.attempted, "steps_committed": st.committed,
            "steps_failed": st.failed,
            "step_efficiency": st.committed / st.attempted if st.attempted else float("nan"),
            "groups_per_step": st.group_steps / st.committed if st.committed else float("nan"),
            # torchft's average step time is per attempted step (a failed one took its time
            # too); the wall a committed step cost is the other figure
            "wall_per_attempted_step_s": (d - first) / st.attempted if st.attempted else float("nan"),
            "wall_per_committed_step_s": (d - first) / st.committed if st.committed else float("nan")}


class Split(NamedTuple):
    """Shares of the job's capacity in one second of a training segment (they sum to 1)."""
    useful: float          # the working groups' steps (before checkpoint stalls and recompute)
    quorum: float          # the working groups' quorum calls
    heal: float            # groups still healing (the async quorum): in the collectives, no work
    smaller: float         # the rest: groups outside the quorum, and what scaling loses


def training_split(working: int, healing: int, size: int, full: int, tr, qf: float) -> Split:
    """One second of training with `working` groups contributing and `healing` groups still
    fetching their state (torchft's async quorum: they join the collectives and contribute
    nothing), groups of `size` hosts in a job of `full`; `qf` is the steps' share of a
    quorum's cycle."""
    f = throughput(working * size, full, tr)
    e_heal = healing * size / full
    return Split(f * qf, f * (1 - qf), e_heal, 1 - f - e_heal)


def _ends_in_restart(lh, segs) -> bool:
    """Whether the span of these training segments ended by the job losing its state."""
    end = segs[-1].t1
    return any(q.restart and q.t >= end for q in lh.quorums)


def _round_at(lives, t: float):
    """The round of the group's life that holds t (its lives in order, as (up, down, round))."""
    i = bisect.bisect_right(lives, (t, float("inf"), float("inf"))) - 1
    if i >= 0 and lives[i][0] <= t < lives[i][1]:
        return lives[i][2]
    return None


def _interruptions(lh, life, size: int) -> pd.DataFrame:
    """One row per time a member died: absorbed (the survivors went on from live state) or a
    restart from the last checkpoint."""
    died = {}
    for x in life:
        died.setdefault(x.down, x)
    rows = []
    prev = None
    for q in lh.quorums:
        if q.failed_at is not None and prev is not None:
            first = died.get(q.failed_at)
            stall = q.t - q.failed_at
            rows.append({"t": q.failed_at, "round": first.round if first else -1,
                         "cause": first.reason if first else q.cause,
                         "end": "restart" if q.restart else "absorbed",
                         "hosts_before": len(prev.groups) * size, "hosts_after": len(q.groups) * size,
                         "detection_s": 0.0 if q.restart else stall,
                         "rendezvous_s": stall if q.restart else 0.0, "restart_in_place_s": 0.0,
                         "worker_start_s": 0.0,
                         "checkpoint_load_s": lh.costs.load if q.restart else 0.0,
                         "recompute_s": 0.0, "running_smaller_s": 0.0,
                         "restart_from": "checkpoint" if q.restart else "peer",
                         "absorbed": not q.restart})
        prev = q
    return pd.DataFrame(rows, columns=INTERRUPTION_COLUMNS + ["absorbed"]).astype({"absorbed": bool})
