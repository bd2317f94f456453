"""Invariant checkers over the trace tables: they work on simulated and real traces alike.

Each checker takes the `events` table (and what else it needs) and returns a list of
`Violation`s; `check_safety` runs them all (`liveness.py` holds the liveness checks). A
violation the protocol is known to have, because torchrun really behaves that way, is marked
known (see `known.py`) and does not fail `assert_ok`; anything else does.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..trace.details import round_facts
from .known import known_for
from .parts import invariants_of
from .recovery import RECOVERY, in_place_rounds
from .violations import Report, Violation
from ..events import Event
from ..reasons import ExitReason


def _detail(s: str) -> dict:
    return json.loads(s) if isinstance(s, str) and s else {}


def _assigned(events: pd.DataFrame) -> pd.DataFrame:
    return events[events["event"] == Event.RANK_ASSIGNED]


def _by_round(events: pd.DataFrame):
    """(round, its rank_assigned rows, their details): a field a row does not carry is its
    round's fact, recorded once on the round's round_closed row (`outputs.trace: rounds`),
    and a member's first worker rank is then its rank times the round's processes a node
    (torchrun's rule: every node runs nproc_per_node)."""
    facts = round_facts(events)
    for rnd, g in _assigned(events).groupby("round", observed=True):
        f = facts.get(int(rnd), {})
        det = []
        for d, rank, ws in zip(g["detail"], g["rank"], g["world_size"]):
            d = {**f, **_detail(d)}
            if "first_rank" not in d and d.get("nnodes") and not pd.isna(rank) and not pd.isna(ws):
                d["first_rank"] = int(rank) * (int(ws) // int(d["nnodes"]))
            det.append(d)
        yield rnd, g, det


# --- safety ----------------------------------------------------------------------------
def ranks_are_a_permutation(events: pd.DataFrame) -> list[Violation]:
    """In every completed round, node ranks are distinct in 0..N-1 and worker ranks tile 0..W-1.

    A member that crashed before it learned its rank leaves a gap (see `every_member_accounted`).
    """
    out = []
    for rnd, g, det in _by_round(events):
        if g["node"].duplicated().any():
            out.append(Violation("ranks_are_a_permutation", "a node was assigned twice", int(rnd)))
            continue
        n = max(d["nnodes"] for d in det)
        ranks = sorted(int(r) for r in g["rank"])
        if len(set(ranks)) != len(ranks) or ranks[0] < 0 or ranks[-1] >= n:
            out.append(Violation("ranks_are_a_permutation", f"node ranks {ranks} of {n}", int(rnd)))
        world = int(g["world_size"].max())
        firsts = sorted(d["first_rank"] for d in det)
        if len(set(firsts)) != len(firsts) or firsts[0] < 0 or firsts[-1] >= world:
            out.append(Violation("ranks_are_a_permutation",
                                 f"worker rank starts {firsts} in world {world}", int(rnd)))
        if len(g) == n and firsts[0] != 0:
            out.append(Violation("ranks_are_a_permutation", "no worker has global rank 0", int(rnd)))
    return out


def members_agree(events: pd.DataFrame) -> list[Violation]:
    """Every member of a round has the same membership, round and world size; one closure."""
    out = []
    for rnd, g, det in _by_round(events):
        if len({d["digest"] for d in det}) != 1:
            out.append(Violation("members_agree", "members disagree on the membership", int(rnd)))
        if g["world_size"].nunique() != 1 or len({d["nnodes"] for d in det}) != 1:
            out.append(Violation("members_agree", "members disagree on the world size", int(rnd)))
        closed = events[(events["event"] == Event.ROUND_CLOSED) & (events["round"] == rnd)]
        if len(closed) > 1:
            out.append(Violation("members_agree", f"closed {len(closed)} times", int(rnd)))
    return out


JOINED = (Event.CONFIRMED, Event.IN_PROCESS_RESTART, Event.SHRINK)    # a member's first row in its round


def every_member_accounted(events: pd.DataFrame) -> list[Violation]:
    """A member of a completed round without a rank must have crashed before it got one (after
    it confirmed, or after it began a restart in place into that round)."""
    out = []
    ev = events
    for rnd, g, det in _by_round(ev):
        n = det[0]["nnodes"]
        missing = n - g["node"].nunique()
        if missing <= 0:
            continue
        conf = ev[ev["event"].isin(JOINED) & (ev["round"] == rnd)]
        silent = set(conf["node"]) - set(g["node"])
        crashed = {m for m in silent
                   if ((ev["event"] == Event.FAULT_CRASH) & (ev["node"] == m)
                       & (ev.index > conf.index[conf["node"] == m].min())).any()}
        if len(crashed) < missing:
            out.append(Violation("every_member_accounted",
                                 f"{missing} member(s) never got a rank, {len(crashed)} of them crashed",
                                 int(rnd)))
    return out


def size_within_bounds(events: pd.DataFrame, min_nodes: int, max_nodes: int) -> list[Violation]:
    out = []
    for rnd, g, det in _by_round(events):
        n = det[0]["nnodes"]
        if not min_nodes <= n <= max_nodes:
            out.append(Violation("size_within_bounds",
                                 f"{n} members, outside [{min_nodes}, {max_nodes}]", int(rnd)))
    return out


def rounds_increase(events: pd.DataFrame) -> list[Violation]:
    """A node's rounds strictly increase (across its agent restarts too)."""
    out = []
    for node, g in _assigned(events).groupby("node"):
        r = g.sort_values("t", kind="stable")["round"].astype(int).tolist()
        bad = [(a, b) for a, b in zip(r, r[1:]) if b <= a]
        if bad:
            out.append(Violation("rounds_increase", f"rounds went {bad[0][0]} -> {bad[0][1]}", node=node))
    return out


def members_were_alive(events: pd.DataFrame) -> list[Violation]:
    """No node confirms a round while crashed: a dead incarnation's state never counts.

    (A member may still die after confirming and before the last member confirms; its peers
    then find out when their collective fails. No barrier can rule that out.)
    """
    out = []
    ev = events
    crashes = ev[ev["event"] == Event.FAULT_CRASH]
    starts = ev[ev["event"] == Event.NODE_START]
    for rnd, conf in ev[ev["event"] == Event.CONFIRMED].groupby("round"):
        for m, pos in zip(conf["node"], conf.index):     # row order is event order
            c = crashes.index[(crashes["node"] == m) & (crashes.index < pos)]
            if len(c):
                back = starts.index[(starts["node"] == m) & (starts.index > c.max())
                                    & (starts.index < pos)]
                if len(back) == 0:
                    out.append(Violation("members_were_alive", "confirmed while crashed", int(rnd), m))
    return out


def confirmed_before_ranks(events: pd.DataFrame) -> list[Violation]:
    """A barrier protocol (hrw, static): every member confirms before any member learns its
    rank, so no member starts a world whose other members might be dead. (torch's c10d has no
    such barrier: a participant returns as soon as it sees the round complete.)"""
    out = []
    conf = events[events["event"] == Event.CONFIRMED]
    for rnd, g, det in _by_round(events):
        n = det[0]["nnodes"]
        first = g.index.min()                           # row order is event order
        before = conf[(conf["round"] == rnd) & (conf.index < first)]["node"].nunique()
        if before < n:
            out.append(Violation("confirmed_before_ranks",
                                 f"a rank was given when {before} of {n} members had confirmed", int(rnd)))
    return out


def ranks_follow_hrw(events: pd.DataFrame, run_id: str) -> list[Violation]:
    """hrw protocol: ranks are the HRW order of the run id over the members, nothing else."""
    from hrw import Placement
    out = []
    for rnd, g in _assigned(events).groupby("round"):
        got = g.sort_values("rank")["node"].tolist()
        if len(set(got)) != len(got) or got != Placement(got, seed=0).rank_order(run_id):
            out.append(Violation("ranks_follow_hrw", "ranks are not the HRW order of the members", int(rnd)))
    return out


def ranks_follow_topology(events: pd.DataFrame) -> list[Violation]:
    """rank_order=topology: ranks in the natural order of the members' names (the simulator's
    topology key is the host's place in the node list, which its names follow)."""
    from ..protocols.ranking import natural
    out = []
    for rnd, g in _assigned(events).groupby("round"):
        got = g.sort_values("rank")["node"].tolist()
        if got != sorted(got, key=natural):
            out.append(Violation("ranks_follow_topology", "ranks are not the members' node-list order", int(rnd)))
    return out


def ranks_are_stable(events: pd.DataFrame) -> list[Violation]:
    """rank_order=stable: a member keeps the rank it had in the last round that published
    ranks, while that rank exists. Where that round is not known from the trace (no member
    learned its rank, a requeue, an unreadable published order) the next round is not judged."""
    out, prev = [], None
    ev = events[events["event"].isin((Event.ROUND_CLOSED, Event.JOB_REQUEUED, Event.BAD_VALUE))]
    assigned = {int(r): (g, det) for r, g, det in _by_round(events)}
    for kind, rnd, detail in zip(ev["event"], ev["round"], ev["detail"]):
        if kind != Event.ROUND_CLOSED:
            if kind == Event.JOB_REQUEUED or _detail(detail).get("key") == "order":
                prev = None
            continue
        g, det = assigned.get(int(rnd), (None, None))
        if g is None:
            prev = None
            continue
        n = det[0]["nnodes"]
        ranks = dict(zip(g["node"], g["rank"].astype(int)))
        if prev is not None:
            moved = [m for m, r in ranks.items() if m in prev and prev[m] < n and prev[m] != r]
            if moved:
                out.append(Violation("ranks_are_stable", f"{len(moved)} members changed a rank they "
                                     f"could keep (first: {moved[0]})", int(rnd)))
        prev = ranks
    return out


def ranks_follow_policy(tables: dict, scenario) -> list[Violation]:
    """The hrw protocol's ranks, as its `rank_order` setting says."""
    ev, policy = tables["events"], getattr(scenario.protocol, "rank_order", "hrw")
    if policy == "topology":
        return ranks_follow_topology(ev)
    if policy == "stable":
        return ranks_are_stable(ev)
    return ranks_follow_hrw(ev, scenario.protocol.run_id)


def hrw_moves_are_minimal(rounds: pd.DataFrame, shards: int = 512) -> list[Violation]:
    """A shard moves only when its owner departed or a newcomer outscores its owner."""
    from hrw import Placement
    out = []
    keys = np.arange(shards)
    prev = None
    for rnd, members in zip(rounds["round"], rounds["members"]):
        names = members.split(",")
        owners = Placement(names, seed=0).owners(keys)
        if prev is not None:
            before, old = prev
            moved = owners != before
            ok = np.array([(b not in names) or (a not in old) for a, b in
                           zip(owners[moved], before[moved])], dtype=bool)
            if not ok.all():
                out.append(Violation("hrw_moves_are_minimal",
                                     f"{int((~ok).sum())} shards moved between surviving nodes", int(rnd)))
        prev = (owners, set(names))
    return out


def rounds_take_time(rounds: pd.DataFrame) -> list[Violation]:
    """A round's start never follows its end: latency >= 0 in the rounds table."""
    bad = rounds[~(rounds["start"] <= rounds["end"]) | ~(rounds["latency"] >= 0)]
    return [Violation("rounds_take_time", f"start {s:.6g} after end {e:.6g} (latency {l:.6g})", int(r))
            for r, s, e, l in zip(bad["round"], bad["start"], bad["end"], bad["latency"])]


def one_store_per_epoch(events: pd.DataFrame) -> list[Violation]:
    """A store failover: every member that moves from round R's store to its k-th successor
    names the same host (no two stores are current in one epoch)."""
    ev = events[events["event"] == Event.STORE_FAILOVER]
    seen: dict[tuple, set] = {}
    for rnd, d in zip(ev["round"], ev["detail"]):
        d = _detail(d)
        seen.setdefault((int(rnd), d.get("epoch")), set()).add(d.get("store"))
    return [Violation("one_store_per_epoch", f"epoch {k} after round {r}: stores {sorted(v)}", r)
            for (r, k), v in sorted(seen.items()) if len(v) > 1]


# exits by the handler's shutdown whose store took the close (store trouble may have lost it)
CLOSING_EXITS = (ExitReason.MAX_RESTARTS, ExitReason.AGENT_FAILED, ExitReason.RENDEZVOUS_TIMEOUT, ExitReason.RENDEZVOUS_CLOSED)
# after these the store may be a fresh one, without the close
FRESH_STORE = (Event.JOB_REQUEUED, Event.FAULT_STORE_CRASH, Event.STORE_FAILOVER, Event.STORE_MEMBER_LOST)


def closed_stays_closed(tables: dict, scenario) -> list[Violation]:
    """torch's contract: once an agent's shutdown closed the rendezvous (hrw's
    close_on_shutdown), no rendezvous that begins later completes, until the job is on a fresh
    store. (A node already past its closed check may still finish the round it was in.)"""
    if not getattr(scenario.protocol, "close_on_shutdown", False):
        return []
    ev = tables["events"]
    exits = ev[ev["event"] == Event.AGENT_EXIT]
    closes = [t for t, d in zip(exits["t"], exits["detail"]) if _detail(d).get("reason") in CLOSING_EXITS]
    if not closes:
        return []
    fresh = sorted(ev[ev["event"].isin(FRESH_STORE)]["t"].tolist())
    begun = ev[ev["event"].isin((Event.RENDEZVOUS_START, Event.RANK_ASSIGNED))].sort_values("t", kind="stable")
    out, start = [], {}
    for t, node, e, rnd in zip(begun["t"], begun["node"], begun["event"], begun["round"]):
        if e == Event.RENDEZVOUS_START:
            start[node] = t
            continue
        t0 = start.get(node)
        closed = [c for c in closes if t0 is not None and c < t0]
        if closed and not any(closed[-1] <= f <= t for f in fresh):
            out.append(Violation("closed_stays_closed", f"a rendezvous begun at {t0:.3f} completed at "
                                 f"{t:.3f}, after an agent's shutdown closed it at {closed[-1]:.3f}",
                                 None if pd.isna(rnd) else int(rnd), node))
    return out


def quorum_invariants(tables: dict, scenario) -> list[Violation]:
    """quorum protocol, over the Lighthouse's replay of the run: every group in a quorum is
    alive then; a group trains only once healed (it was in the quorum that restarted the job,
    or a heal of at least heal_time followed the quorum it joined, stalled or, with the async
    quorum, alongside the others' training); a group's failure is
    absorbed by the others (their lives go on through the new quorum)."""
    from ..training.quorum import replay
    p = scenario.protocol
    lh, life = replay(tables["events"], tables["rounds"], scenario)
    out = []

    def alive(g, t):
        return any(x.group == g and x.up <= t + 1e-9 and t < x.down for x in life)
    heal = p.heal_time + lh.costs.reconfigure
    pending: dict = {}                       # group -> when it joined, not healed yet
    # in time order: a quorum at t comes before the segment that starts at t
    timeline = sorted([(q.t, 0, q) for q in lh.quorums] + [(x.t0, 1, x) for x in lh.segments],
                      key=lambda e: (e[0], e[1]))
    for _, kind, item in timeline:
        if kind == 0:
            q = item
            for g in q.groups:
                if not alive(g, q.t):
                    out.append(Violation("quorum_admits_the_living", f"quorum {q.quorum} at {q.t:.3f} "
                                         f"holds group {g}, which is not up"))
            if q.restart:
                pending.clear()
            for g in q.joined:
                pending[g] = q.t
            if q.failed_at is not None and not q.restart:
                for g in q.groups - q.joined:
                    if not any(x.group == g and x.up <= q.failed_at and x.down > q.t for x in life):
                        out.append(Violation("failure_absorbed", f"group {g} did not train on through "
                                             f"quorum {q.quorum} (a failure at {q.failed_at:.3f})"))
            if heal <= 0:
                pending.clear()                  # nothing to fetch: healed at once
            continue
        seg = item
        if seg.kind == "train":
            # it contributes (a member not healing) only once its heal and the reconfiguration
            # had their time since the quorum it joined: stalled (sync) or alongside (async)
            for g in seg.groups - seg.healing:
                t = pending.get(g)
                if t is None:
                    continue
                if seg.t0 - t >= heal - 1e-6:
                    pending.pop(g)
                else:
                    out.append(Violation("heals_before_it_counts", f"group {g} trains from {seg.t0:.3f} "
                                         "before it healed"))
    return out


def check_safety(tables: dict, scenario) -> Report:
    """All safety invariants of `scenario`'s protocol over a run's tables."""
    ev, rounds = tables["events"], tables["rounds"]
    proto = scenario.protocol
    lo, hi = proto.round_sizes(scenario)
    v = (ranks_are_a_permutation(ev) + members_agree(ev)
         + size_within_bounds(ev, lo, hi)
         + rounds_increase(ev) + members_were_alive(ev) + every_member_accounted(ev)
         + rounds_take_time(rounds))
    for check in RECOVERY:
        v += check(tables, scenario)
    # a world recovered in place is no round of the protocol's: its own promises skip it
    made = in_place_rounds(ev)
    own = {**tables, "events": ev[~ev["round"].isin(made)]} if made else tables
    for check in invariants_of(proto.name):
        v += check(own, scenario)
    return Report(known_for(proto.name, v, scenario))


def _confirmed(t, sc):
    return confirmed_before_ranks(t["events"])


# the built-in kits' `invariants` parts
HRW = (ranks_follow_policy, lambda t, sc: hrw_moves_are_minimal(t["rounds"]), _confirmed,
       lambda t, sc: one_store_per_epoch(t["events"]), closed_stays_closed)
STATIC = (_confirmed,)
QUORUM = (_confirmed, quorum_invariants)
