"""torchft's Lighthouse: which replica groups form each step's quorum, and when.

`QuorumRules.decide` (`rules.py`) is the Lighthouse's rule (torchft `quorum_compute`): a
*fast* quorum whenever every member of the last quorum asks again (newcomers that asked ride
along); otherwise at least `min_replicas` participants, more than half of the replicas still
heartbeating, and either every heartbeating replica asked or `join_timeout` passed since the
first asked. A life heartbeats while it lives and for `heartbeat_timeout` after; a restarted
group is a new replica (torchft's Manager adds a fresh uuid to its id), so its old life counts
as a silent replica until its heartbeat goes stale.

`Lighthouse.replay(lives)` drives those rules over the groups' lives (when each group's
workers ran), event by event, never step by step: between two changes every step's quorum
is the same fast quorum, so only changes are computed. Members ask at step boundaries; a
member that dies fails the step in flight (its survivors learn it after the detection
delay); a group that joins heals from a live peer (state transfer) before it contributes,
and the others wait for it; a quorum that forms when no live group holds the state restarts
from the last checkpoint. Its output is the segments of the job's time (what each part of
the capacity did) and one record per quorum.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .costs import Costs
from .records import QuorumRecord, Segment, Steps
from .rules import QuorumRules

__all__ = ["Costs", "Lighthouse", "QuorumRecord", "QuorumRules", "Segment", "Steps"]

INF = float("inf")


@dataclass
class Lighthouse:
    rules: QuorumRules
    costs: Costs
    duration: float
    segments: list = field(default_factory=list)
    quorums: list = field(default_factory=list)
    seed: int = 0                   # draws which group's retry reaches a fresh Lighthouse first
    first_retry: int | None = None  # ... or that group (a real run's, for its validation)
    last_id: int | None = None      # every group's id before the Lighthouse was lost (a real run's)
    stores: dict | None = None      # quorum id -> the group whose store its process groups
                                    # were built on, before the loss (a real run's)

    def replay(self, lives, outages=()):
        """lives: (group, beat, up, down[, detection]) for every life of every group: its
        Manager heartbeats from `beat`, asks to join at `up` (its first step) and dies at
        `down` (inf: it lasted), failing the others' step `detection` seconds later
        (default: `costs.detection`). outages: (lost, back) when the Lighthouse's process was
        gone: the next quorum call fails, and the job waits for a request to reach it again
        (`Costs.lighthouse_back`); a fresh Lighthouse remembers no quorum."""
        lives = [(*x, self.costs.detection) if len(x) == 4 else tuple(x[:5]) for x in lives]
        self.segments, self.quorums = [], []
        ev = sorted([(d, 0, g) for g, b, u, d, _ in lives if d < self.duration]
                    + [(u, 2, g) for g, b, u, d, _ in lives if u < self.duration]
                    + [(b, 1, g) for g, b, u, d, _ in lives if b < min(u, self.duration)]
                    + [(a, 3, i) for i, (a, _) in enumerate(outages) if a < self.duration])
        self.outages = list(outages)
        self.pending = None                     # an outage begun, its failed call not yet made
        self.died = False                       # the outage outlasted the calls: processes died
        self.detect = {(g, d): k for g, b, u, d, k in lives}
        self.beats: dict[int, float] = {}       # group -> heartbeating, not yet asking (since)
        self.live: dict[int, float] = {}        # group -> when it came up (it asks then)
        # a dead life -> when its heartbeat goes stale: torchft's Manager gives every start a
        # new replica id, so a restarted group's old life still counts until then
        self.dead: dict[tuple, float] = {}
        self.holders: set = set()               # live groups holding the trained state
        self.members: frozenset = frozenset()
        self.prev: frozenset | None = None
        self.phase, self.since, self.resume = "idle", 0.0, 0.0
        self.origin = 0.0                       # step boundaries: origin + k * step
        self.span = -1
        self.failed_at = None                   # a member died: the time its step failed
        self.joining: frozenset = frozenset()   # members healing: they contribute once healed
        self.healed = INF                       # async: when the healing members contribute
        self.window_end = None                  # sync_every > 1: a member died in this window;
                                                # the survivors sync without it at its end
        self.broken_at = None                   # the first member's death since the last quorum
        self.trained = False                    # a training segment has been cut
        self.steps = Steps()
        self.qid = 0                            # the Lighthouse's last quorum id
        self.id_prev: frozenset | None = None   # the members its id rule compares with
        self.configured: dict = {}              # group -> (id, members) of its process group
        self.commit_failed = False              # the last quorum's step failed on a stale group
        self.stale = False                      # the quorum training now has a stale member
        self.hung: frozenset = frozenset()      # ... and members hanging on stale keys
        self.trained_in: dict = {}              # group -> the last quorum it trained in (the
                                                # groups at the latest are at torchft's max_step)
        self.keys: set = set()                  # (id, store group): a process group's keys left
                                                # under /torchft/<id>/ on that group's TCPStore
        self.draws = np.random.default_rng(np.random.SeedSequence([self.seed, 0x11647]))
        for t, kind, g in ev:
            self._until(t)
            if kind == 0:
                self._down(g, t)
            elif kind == 1:
                self.beats[g] = t
            elif kind == 2:
                self._up(g, t)
            else:
                self.pending = self.outages[g]
        self._until(self.duration)
        self._cut(self.duration)
        return self

    # --- the job's time, cut into segments ------------------------------------------
    def _cut(self, t: float) -> None:
        """Close the current phase's segment at t (a stall, training or idling)."""
        t = min(t, self.duration)
        if t > self.since:
            k = self.phase
            groups = self.members if k != "idle" else frozenset(self.live)
            healing = self.joining if k == "train" else frozenset()
            # torchft's should_commit refuses a step with fewer participants than min_replica_size
            refused = k == "train" and len(groups - healing) < self.costs.min_commit
            self.segments.append(Segment(self.since, t, k, groups, self.span, healing, refused))
            self.trained = self.trained or k == "train"
            if k == "train":                    # the steps that ended in it committed
                step = self.costs.step
                n = (math.floor((t - self.origin) / step + 1e-9)
                     - math.floor((self.since - self.origin) / step + 1e-9))
                per = self.costs.sync_every     # steps between two quorums
                if refused:
                    self.steps.failed += n * per
                else:
                    self.steps.committed += n * per
                    self.steps.group_steps += n * per * len(groups - healing)
        self.since = max(self.since, t)

    def _boundary(self, t: float) -> float:
        """The first step boundary of the training quorum at or after t."""
        step = self.costs.step
        return self.origin + math.ceil((t - self.origin) / step - 1e-9) * step

    def _until(self, t: float) -> None:
        """Everything that happens before the next group event at t."""
        while True:
            nxt = self._next(t)
            if nxt is None:
                return
            self._act(nxt)

    def _next(self, t: float):
        """The next internal change before t: (time, what) or None."""
        if self.phase in ("heal", "load", "reconf", "outage") and self.resume <= t:
            return (self.resume, "back" if self.phase == "outage" else "resume")
        if self.pending is not None and self.phase in ("idle", "failure"):
            when = max(self.pending[0], self.since)       # the waiting calls fail now
            return (when, "lost") if when <= t else None
        if self.phase == "train":
            if self.window_end is not None:     # before anything else at that boundary
                return (self.window_end, "window_end") if self.window_end <= t else None
            due = []
            if self.pending is not None:        # the next step's quorum call fails
                due.append((max(self._boundary(self.pending[0]), self.since), "lost"))
            if self.joining:                    # healing alongside (async): they contribute
                due.append((self.healed, "healed"))     # from the boundary after their heal
            if any(g not in self.members for g in self.live):
                # newcomers asked; the members ask again at their next step boundary: a fast
                # quorum (one that asked before the members' first step asks at its end)
                asked = min(u for g, u in self.live.items() if g not in self.members)
                due.append((max(self._boundary(asked), self.origin + self.costs.step, self.since), "join"))
            nxt = min(due, default=None)
            return nxt if nxt is not None and nxt[0] <= t else None
        if self.phase in ("idle", "failure"):
            when = self._formation(t)
            if when is not None:
                return (when, "form")
        return None

    def _beating(self, t: float) -> set:
        return set(self.live) | set(self.beats) | {x for x, until in self.dead.items() if until > t}

    def _asked(self, c: float) -> dict:
        """The groups asking at c and since when: a member of the last quorum asks again
        once its step failed, a newcomer since it came up (torchft's join time)."""
        since = self.failed_at if self.phase == "failure" else 0.0
        return {g: max(u, since) if g in self.members else u for g, u in self.live.items() if u <= c}

    def _formation(self, t: float):
        """When, before t, the Lighthouse forms a quorum (None: not before t). A request
        runs a tick at once (torchft), so a quorum can form the instant a group asks; a
        heartbeat going stale or a join timeout ending is seen at the next timer tick."""
        since = max(self.since, self.failed_at if self.phase == "failure" else 0.0)
        asked = self._asked(INF)
        ticks = {since, *self.dead.values(), *self.beats.values()}
        if asked:
            ticks.add(min(asked.values()) + self.rules.join_timeout)
        points = {c for c in asked.values() if c >= since}
        points |= {self.rules.on_tick(max(p, since)) for p in ticks}
        for c in sorted(points):
            if c >= t:
                return None
            if self.rules.decide(c, self._asked(c), self._beating(c), self.prev) is not None:
                return c
        return None

    # --- changes -------------------------------------------------------------------------
    def _act(self, nxt) -> None:
        when, what = nxt
        if what == "lost":
            self._lighthouse_lost(when)
            return
        if what == "back":
            self._lighthouse_back(when)
            return
        if what == "resume":
            self._cut(when)
            if self.stale:
                # a member's process group is of other members: the step's collectives wait for
                # peers that never come and fail after torchft's timeout (docs/per-step.md);
                # every member asks again, but one hanging on stale keys, which asks only once
                # Gloo gives up (`Costs.stale_connect` after its quorum call) and heals then
                self.stale = False
                self.steps.failed += self.costs.sync_every
                self.phase, self.since = "failure", when
                self.failed_at = when + self.costs.step_time + self.costs.timeout
                self.broken_at = when if self.broken_at is None else self.broken_at
                self.commit_failed = True
                for g in self.hung:
                    self.live[g] = max(self.live[g], self.quorums[-1].t + self.costs.stale_connect)
                self.members -= self.hung
                self.holders -= self.hung
                self.hung = frozenset()
                return
            self.phase, self.origin = "train", when
            for g in self.members:
                self.trained_in[g] = len(self.quorums)
            if self.joining and not self.costs.overlapped:
                self.holders |= self.joining
                self.joining = frozenset()
            # the rest of the heal overlaps the first step's compute, which it contributes nothing to
            self.healed = self._boundary(when + self.costs.heal - self.costs.heal_wait)
            return
        if what == "window_end":
            # the survivors' window commits; their quorum call at its end waits for the
            # Lighthouse to drop the dead group (its heartbeat going stale)
            self._cut(when)
            self.window_end, self.phase, self.failed_at = None, "failure", when
            return
        if what == "healed":
            self._cut(when)
            self.holders |= self.joining
            self.joining = frozenset()
            return
        if what == "join":
            self._cut(when)
            new = frozenset(g for g, u in self.live.items() if g not in self.members and u <= when)
            self._form(when, self.members | new, "join")
            return
        self._cut(when)
        groups = self.rules.decide(when, self._asked(when), self._beating(when), self.prev)
        self._form(when, groups, "failure" if self.quorums else "start")

    def _form(self, t: float, groups: frozenset, cause: str) -> None:
        restart = not (self.holders & groups)
        joined = groups - self.holders if not restart else frozenset()
        left = frozenset(x[0] if isinstance(x, tuple) else x for x in self.prev or ()) - groups
        qid, stale, store, hung = self._quorum_id(groups)
        self.quorums.append(QuorumRecord(len(self.quorums) + 1, t, groups, joined, left, restart,
                                         "restart" if restart and self.quorums and cause != "lighthouse"
                                         else cause,
                                         self.broken_at, qid, stale, store, hung))
        self.stale, self.hung = stale, hung
        self.broken_at = None
        self.prev = self.members = groups
        self.failed_at = None
        c = self.costs
        sync = c.init_sync and len(groups) > 1
        if restart:
            self.span += 1
            self.holders = set(groups)
            self.joining = frozenset()
            if self.trained:
                stall, self.phase = c.reconfigure + c.load, "load"
            elif c.overlapped:
                # the first quorum syncs every group but one from it (init_sync), alongside
                if sync:
                    self.holders = {min(groups)}
                    self.joining = frozenset(groups - self.holders)
                wait = c.heal_wait if sync else 0.0
                stall, self.phase = c.reconfigure + wait, "heal" if wait > 0 else "reconf"
            else:
                stall, self.phase = c.reconfigure + (c.heal if sync else 0.0), "heal"
        else:
            self.joining = joined
            heal = c.heal_wait if joined else 0.0
            stall = c.reconfigure + heal
            self.phase = "heal" if heal > 0 else "reconf"
        self.since, self.resume = t, t + stall
        if stall <= 0:
            self._act((t, "resume"))

    def _quorum_id(self, groups: frozenset) -> tuple[int, bool, int, frozenset]:
        """torchft's id of a quorum of `groups` (`QuorumRules.next_quorum_id`); whether a
        member keeps a process group of other members: torchft's Manager reconfigures only
        when the id differs from its last, so a member whose last id is this one, with other
        members then, keeps that group (possible only after a Lighthouse restart that numbers
        its quorums from 1 again); the group whose store the new process groups meet on; and
        the members that hang there on stale keys."""
        self.qid = QuorumRules.next_quorum_id(self.qid, groups, self.id_prev, self.commit_failed)
        self.id_prev, self.commit_failed = groups, False
        keep = {g for g in groups if self.configured.get(g, (None,))[0] == self.qid}
        # a keeper's group is of other members, or others make a new one it is not in
        stale = any(self.configured[g][1] != groups for g in keep) or bool(keep and keep != groups)
        new = groups - keep
        for g in new:
            self.configured[g] = (self.qid, groups)
        store = self.store_of(groups)
        # torchft's Manager configures under <store>/torchft/<id>/: where a process group of
        # the same id left its keys on that store, the stale quorum's new process groups read
        # the old addresses and hang in Gloo's connect (runs.md's path b); where none did,
        # their store wait times out with the others' step (path a)
        hung = frozenset(new) if stale and (self.qid, store) in self.keys else frozenset()
        if new:
            self.keys.add((self.qid, store))
        return self.qid, stale, store, hung

    def store_of(self, groups: frozenset) -> int:
        """The group whose TCPStore a quorum's process groups meet on: torchft's
        `compute_quorum_results` takes the first participant, by replica id, among those at
        the quorum's max step (here: the groups that trained in the latest quorum; replica ids
        taken in the groups' order)."""
        latest = max(self.trained_in.get(g, -1) for g in groups)
        return min(g for g in groups if self.trained_in.get(g, -1) == latest)

    def _lighthouse_lost(self, r: float) -> None:
        """A quorum call at r finds no Lighthouse: the job stalls until a call reaches it."""
        self._cut(r)
        if self.phase == "train":
            self.steps.failed += self.costs.sync_every
        self.broken_at = r if self.broken_at is None else self.broken_at
        back, died = self.costs.lighthouse_back(r, self.pending[1])
        self.pending = None
        self.died = self.died or died
        self.phase, self.since, self.resume = "outage", r, back

    def _lighthouse_back(self, t: float) -> None:
        """A call reaches the fresh Lighthouse: it knows no quorum and forms one of the groups
        asking (each asks at once), from their state, or from a checkpoint when the
        processes died with it."""
        self._cut(t)
        self.prev, self.dead = None, {}         # what the lost Lighthouse knew
        self.id_prev = None
        if self.last_id is not None:            # a real run's ids before the loss (validation)
            self.configured = {g: (self.last_id, m) for g, (_, m) in self.configured.items()}
            self.keys = {(self.last_id, s) for q, s in self.keys if q == self.qid}
            self.qid = self.last_id
        if self.stores:                         # ... and where each id's keys were left
            self.keys = {(q, g) for q, g in self.stores.items() if g in self.live}
        if self.costs.ids == "restart":         # torchft 0.2.0: a fresh Lighthouse counts from 0
            self.qid = 0
        live = sorted(self.live)
        if self.died:                           # fresh processes, heartbeating from their start
            self.holders = set()
            self.died = False
            self.configured, self.keys, self.trained_in = {}, set(), {}
            asked = {g: t for g in live}
            beating = set(self.live) | set(self.beats)
        else:
            # the Managers' heartbeats reach the fresh Lighthouse only with their retries: the
            # first retry to arrive (a race of milliseconds, drawn) finds nobody else heartbeating
            # and forms a quorum alone; the others ask at once, and join at its next boundary
            first = (self.first_retry if self.first_retry in self.live
                     else live[int(self.draws.integers(len(live)))] if live else None)
            asked = {first: t} if first is not None else {}
            beating = set(asked)
        groups = self.rules.decide(t, asked, beating, None)
        if groups is None:                      # too few: the usual wait for a quorum
            self.phase, self.failed_at = "failure", t
            return
        for g in live:                          # the others asked right behind it
            self.live[g] = max(self.live[g], t)
        self._form(t, groups, "lighthouse")

    def _down(self, g: int, t: float) -> None:
        self.live.pop(g, None)
        self.beats.pop(g, None)
        self.holders.discard(g)
        self.trained_in.pop(g, None)            # a restarted process is at step 0, its store new
        self.keys = {k for k in self.keys if k[1] != g}
        self.hung = self.hung - {g}
        self.dead = {x: until for x, until in self.dead.items() if until > t}
        self.dead[(g, t)] = t + self.rules.heartbeat_timeout
        if self.prev and g in self.prev:          # the last quorum's member is that dead life
            self.prev = (self.prev - {g}) | {(g, t)}
        if g not in self.members:
            return
        if self.phase == "outage":              # no step runs: the quorum after it has one less
            self.members = frozenset(m for m in self.members if m != g)
            self.joining = frozenset(m for m in self.joining if m != g)
            return
        noticed = t + self.detect.get((g, t), self.costs.detection)
        if self.phase == "train" and self.costs.sync_every > 1 and self.members - {g}:
            # torchft 0.2.0's LocalSGD and DiLoCo ask for the quorum at the window's end
            # (measured: reports/validation/validate-quorum-localsgd): the survivors train
            # the window out and sync without the dead group, losing none of its steps
            step = self.costs.step
            last = self.origin + math.floor((t - self.origin) / step + 1e-9) * step
            self._cut(max(self.since, last))    # the windows that ended with the dead group
            self.members = frozenset(m for m in self.members if m != g)
            self.joining = frozenset(m for m in self.joining if m != g)
            self.broken_at = t if self.broken_at is None else self.broken_at
            if self.window_end is None:
                self.window_end = last + step
            return
        self.window_end = None
        if self.phase in ("train", "heal", "reconf", "load"):
            # the step in flight (or about to start) fails; between syncs, every step since
            # the last sync does (DiLoCo restores the last synchronised parameters)
            self.steps.failed += self.costs.sync_every
        if self.phase == "train":
            # the step in flight fails: its work since the last boundary is lost, and the
            # survivors see it no sooner than at its all-reduce, the step's end
            step = self.costs.step
            last = self.origin + math.floor((t - self.origin) / step) * step
            self._cut(max(self.since, last))
            noticed = max(noticed, last + step)
        else:
            self._cut(t)
        self.phase = "failure"
        self.broken_at = t if self.broken_at is None else self.broken_at
        self.members = frozenset(m for m in self.members if m != g)
        if self.failed_at is None:
            self.failed_at = noticed
        if self.joining:
            self.joining = frozenset(m for m in self.joining if m != g)

    def _up(self, g: int, t: float) -> None:
        self.live[g] = t + self.costs.first_call
        self.beats.pop(g, None)
