"""The network: a networkx graph of hosts, racks and spines; latency and partitions.

Latency from a host to the store's host is the sum of edge latencies along the shortest path,
computed once; each message adds seeded jitter, and a `latency` fault adds its delay for a
while. A partition isolates a group of hosts for a while: messages across the cut are lost (the
sender hangs until its own deadline).
"""
from __future__ import annotations

import networkx as nx
import numpy as np


def flat(hosts: list[str], link_latency: float) -> nx.Graph:
    """Every host on one switch."""
    g = nx.Graph()
    g.add_node("switch", level="switch")
    for h in hosts:
        g.add_node(h, level="host")
        g.add_edge("switch", h, latency=link_latency)
    return g


def racks(hosts: list[str], n_racks: int, link_latency: float, spine_latency: float,
          n_spines: int = 2) -> nx.Graph:
    """Hosts under top-of-rack switches, racks under spines (a two-level Clos)."""
    g = nx.Graph()
    spines = [f"spine{s}" for s in range(n_spines)]
    for s in spines:
        g.add_node(s, level="spine")
    for r in range(n_racks):
        tor = f"rack{r}"
        g.add_node(tor, level="rack")
        for s in spines:
            g.add_edge(tor, s, latency=spine_latency)
    for i, h in enumerate(hosts):
        g.add_node(h, level="host", rack=f"rack{i * n_racks // len(hosts)}")
        g.add_edge(h, g.nodes[h]["rack"], latency=link_latency)
    return g


MAX_RESENDS = 6          # losses in a row one message sits out (then TCP would give up)


def resend_delay(rate: float, rto: float, random) -> float:
    """What TCP's retransmissions add to one message on a link that loses `rate` of them: the
    RTO, doubling with each loss in a row; `random()` draws in [0, 1). The simulator's loss
    fault and the real fault proxy both wait this."""
    k = 0
    while k < MAX_RESENDS and random() < rate:
        k += 1
    return rto * ((1 << k) - 1)


class Network:
    def __init__(self, env, graph: nx.Graph, store_host: str, jitter: float,
                 rng: np.random.Generator):
        self.env = env
        self.graph = graph
        self.store_host = store_host
        self.jitter = jitter
        self.rng = rng
        self._u: list[float] = []               # jitter draws, taken from rng in blocks
        self._u_next = 0
        self.base = nx.single_source_dijkstra_path_length(graph, store_host, weight="latency")
        self.extra: dict[str, float] = {}      # host -> added one-way delay (latency faults)
        self.loss: dict[str, tuple[float, float]] = {}   # host -> (loss rate, RTO) (loss faults)
        self.loss_rng = rng.spawn(1)[0]        # its own stream: jitter draws stay as they were
        self.held: dict[str, int] = {}         # host -> messages a loss held for a resend
        self.isolated: dict[str, int] = {}     # host -> id of the partition group it is in
        self.heal_events: dict = {}            # group -> event that fires when it heals
        self._next_group = 1
        self._bases: dict[str, dict] = {}      # host -> path latencies to it (failover stores)

    def rack_of(self, host: str) -> str | None:
        return self.graph.nodes[host].get("rack")

    def hosts_in_rack(self, rack: str) -> list[str]:
        return [h for h, d in self.graph.nodes(data=True) if d.get("rack") == rack]

    def latency(self, host: str, to: str | None = None) -> float:
        """One-way latency host -> store host (or host `to`), with jitter (always >= the path's sum)."""
        base = self.base[host] if to is None else self.base_from(to)[host]
        if self.jitter > 0:
            # drawn 4,096 at a time: the same stream as one draw per message, a tenth the cost
            i = self._u_next
            if i == len(self._u):
                self._u, i = self.rng.random(4096).tolist(), 0
            self._u_next = i + 1
            base *= 1.0 + self.jitter * self._u[i]
        if self.loss and host in self.loss:
            resent = resend_delay(*self.loss[host], self.loss_rng.random)
            if resent:
                self.held[host] = self.held.get(host, 0) + 1
                base += resent
        return base + self.extra[host] if self.extra and host in self.extra else base

    def base_from(self, to: str) -> dict:
        """Path latencies from every host to host `to` (a failover store's), made once."""
        if to == self.store_host:
            return self.base
        d = self._bases.get(to)
        if d is None:
            d = self._bases[to] = nx.single_source_dijkstra_path_length(self.graph, to, weight="latency")
        return d

    def set_loss(self, host: str, rate: float, rto: float = 0.2) -> None:
        """`host`'s link loses `rate` of its messages from now on (0: none)."""
        if rate > 0:
            self.loss[host] = (rate, rto)
        else:
            self.loss.pop(host, None)

    def slow(self, host: str, delay: float) -> None:
        """Add `delay` (negative: take it back) to `host`'s one-way latency to the store."""
        v = self.extra.get(host, 0.0) + delay
        if v > 1e-12:
            self.extra[host] = v
        else:
            self.extra.pop(host, None)

    def side(self, host: str) -> int:
        return self.isolated.get(host, 0)

    def reachable(self, a: str, b: str) -> bool:
        if not self.isolated:                      # no partition in force: the common case
            return True
        return self.side(a) == self.side(b)

    def cut(self, hosts: list[str]) -> int:
        group = self._next_group
        self._next_group += 1
        for h in hosts:
            self.isolated[h] = group
        self.heal_events[group] = self.env.event()
        return group

    def heal(self, group: int) -> None:
        for h in [h for h, g in self.isolated.items() if g == group]:
            del self.isolated[h]
        self.heal_events.pop(group).succeed()

    def healed_event(self, host: str, to: str | None = None):
        """The event that fires when the cut between `host` and the store host (or `to`) heals."""
        group = self.side(host) or self.side(self.store_host if to is None else to)
        return self.heal_events[group]
