"""A replicated store, as etcd is: a Raft cluster of `replicas` members, one of them leading.

The keys and TCPStore's semantics are the single server's (`StoreServer`): the members hold
one replicated log, so what a client sees is what one linearizable server would show. What
replication changes is timing and availability:

- every request is served by the leader and answered once a quorum has it: its reply leaves
  `commit_time` after its service (a round trip to the nearest majority and the log's fsync;
  reads too, as etcd's linearizable reads confirm leadership first). The leader pipelines, so
  its FIFO server is busy only for the service itself;
- a member goes down with its host; when the leader does (or is paused, or is cut off from a
  majority) nobody serves until the followers elect another, an election timeout later
  (randomized in [1, 2) x `election_timeout`, as Raft's is, from the seed); a cluster without a
  majority of live, connected members serves nobody until it has one again (requests hang,
  then time out: a replicated store is never lost, only unavailable);
- clients reach the store at the leader's host: a node cut off from the leader hangs, so a
  minority behind a partition cannot write.
"""
from __future__ import annotations

import networkx as nx

from .store import StoreServer
from ..events import Event


class ReplicatedStore(StoreServer):
    def __init__(self, env, net, member_hosts: list[str], service, commit_time: float,
                 election_timeout: float, rng, trace):
        super().__init__(env, member_hosts[0], service, trace)
        self.net, self.members = net, list(member_hosts)
        self.commit_time, self.election_timeout, self.rng = commit_time, election_timeout, rng
        self.up = [True] * len(member_hosts)     # by member (hosts repeat when outside the job)
        self.stopped: set[int] = set()                   # members paused (SIGSTOP)
        self.leader: int | None = 0
        self.electing = False
        self._wake = None                                # an election waiting for a change
        self._paused_member: int | None = None           # the member a store_pause stopped
        self._bases = {h: nx.single_source_dijkstra_path_length(net.graph, h, weight="latency")
                       for h in set(member_hosts)}

    # --- what the runtime sees -----------------------------------------------------------
    def admit(self, now: float, nbytes: int) -> float:
        """Served by the leader, answered once committed."""
        return super().admit(now, nbytes) + self.commit_time

    def crash(self, cause: str = "store_crash") -> None:
        """A store_crash fault: the leader's member dies (its data is on every member's disk)."""
        self.member_down(self.leader if self.leader is not None else 0, Event.FAULT_STORE_CRASH)

    def restart(self) -> None:
        """A requeued job's fresh store: every member up again, empty (an election under way
        still ends it)."""
        super().restart()
        self.up = [True] * len(self.members)
        self.stopped.clear()
        if self.leader is None:
            self.pause()
            self.reconsider()

    def sigstop(self) -> None:
        """A store_pause fault stops the leader's member."""
        self._paused_member = self.leader if self.leader is not None else 0
        self.stop_member(self._paused_member)

    def sigcont(self) -> None:
        if self._paused_member is not None:
            self.resume_member(self._paused_member)

    def links_changed(self) -> None:
        self.reconsider()

    # --- membership ----------------------------------------------------------------------
    def live(self, i: int) -> bool:
        return self.up[i] and i not in self.stopped

    def _quorum_with(self, i: int) -> bool:
        """Whether member i and the live members it can reach are a majority."""
        net = self.net
        peers = [j for j in range(len(self.members)) if self.live(j)
                 and net.reachable(self.members[i], self.members[j])]
        return self.live(i) and len(peers) > len(self.members) // 2

    def member_down(self, i: int, why: str = "store_member_crash") -> None:
        if not self.up[i]:
            return
        self.trace.record(self.env.now, "store", why, detail={"member": i, "leader": i == self.leader})
        self.up[i] = False
        self.reconsider()

    def host_down(self, host: str) -> None:
        """A node hosting a member crashed: the member with it."""
        for i, h in enumerate(self.members):
            if h == host:
                self.member_down(i, Event.STORE_MEMBER_LOST)

    def host_up(self, host: str) -> None:
        """A node hosting a member is back: the member rejoins with its log."""
        for i, h in enumerate(self.members):
            if h == host and not self.up[i]:
                self.up[i] = True
                self.trace.record(self.env.now, "store", Event.STORE_MEMBER_BACK, detail={"member": i})
                self.reconsider()

    def stop_member(self, i: int) -> None:
        self.stopped.add(i)
        self.trace.record(self.env.now, "store", Event.FAULT_STORE_MEMBER_PAUSE,
                              detail={"member": i, "leader": i == self.leader})
        self.reconsider()

    def resume_member(self, i: int) -> None:
        self.stopped.discard(i)
        self.trace.record(self.env.now, "store", Event.STORE_MEMBER_RESUMED, detail={"member": i})
        self.reconsider()

    def reconsider(self) -> None:
        """After any change of members or links: does the leader still lead a majority?"""
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()                         # a stalled election tries again
        if self.leader is not None and self._quorum_with(self.leader):
            return
        if self.leader is not None:
            self.trace.record(self.env.now, "store", Event.STORE_LEADER_LOST, detail={"member": self.leader})
            self.leader = None
            self.pause()                                 # nobody commits until a new leader
        if not self.electing:
            self.electing = True
            self.env.process(self._elect())

    def _elect(self):
        """Followers time out, one wins: an election timeout in [1, 2) x `election_timeout`.
        With no majority to be had, nothing happens until a member or a link changes (no
        retries ticking through a long outage)."""
        while True:
            yield self.env.timeout(self.election_timeout * (1.0 + float(self.rng.random())))
            ready = [i for i in range(len(self.members)) if self._quorum_with(i)]
            if ready:
                break
            self._wake = self.env.event()
            yield self._wake
        self.electing = False
        self.leader = ready[int(self.rng.integers(len(ready)))]
        host = self.members[self.leader]
        self.host = self.net.store_host = host           # clients now reach the leader there
        self.net.base = self._bases[host]
        self.trace.record(self.env.now, "store", Event.STORE_LEADER_ELECTED, detail={"member": self.leader})
        self.resume()
