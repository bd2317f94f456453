"""A small SimPy world for trying protocol code: N hosts, one store, no scenario file.

    >>> from rdzv_sim.sim.sandbox import Sandbox
    >>> sb = Sandbox(nodes=3)
    >>> results = sb.run(lambda node: my_protocol_generator(node))   # doctest: +SKIP

Used by the tests of the operations' semantics, and by anyone writing a protocol.
"""
from __future__ import annotations

import numpy as np
import simpy

from ..protocols.base import NodeInfo
from ..trace import Tracer
from . import network
from .network import Network
from .node import SimNode
from ..scenario.schema import Agent, Cpu, Store
from .runtime import SimRuntime
from .store import StoreServer


class Sandbox:
    def __init__(self, nodes: int = 2, latency: float = 50e-6, jitter: float = 0.0, seed: int = 0,
                 store: Store = Store(), agent: Agent = Agent(), cpu: Cpu = Cpu()):
        self.env = simpy.Environment()
        names = [f"n{i}" for i in range(nodes)]
        graph = network.flat(names + ["store"], latency)
        self.net = Network(self.env, graph, "store", jitter, np.random.default_rng(seed))
        self.store = StoreServer(self.env, "store", store)
        self.trace = Tracer()
        self.runtime = SimRuntime(self.env, self.store, self.net, self.trace, agent, cpu)
        self.nodes = [SimNode(NodeInfo(n, n, 1, i)) for i, n in enumerate(names)]
        for n in self.nodes:
            n.alive, n.rounds = True, self.runtime.rounds
        self.runtime.nodes = {n.name: n for n in self.nodes}

    def spawn(self, node: SimNode, gen) -> simpy.Process:
        node.process = self.env.process(self.runtime.drive(node, gen, node.incarnation))
        return node.process

    def run(self, make_gen, until: float | None = None, nodes=None) -> list:
        """Run make_gen(node_info) on every node (or the given indexes); return their results."""
        chosen = [self.nodes[i] for i in (nodes if nodes is not None else range(len(self.nodes)))]
        procs = [self.spawn(n, make_gen(n.info)) for n in chosen]
        self.env.run(until=until)
        return [p.value if p.triggered and p.ok else None for p in procs]


def rendezvous_all(protocol, nodes: int, until: float = 100.0, started=None) -> tuple[list, Sandbox]:
    """Every node (or those `started`) joins one rendezvous of `protocol` in a fresh sandbox:
    each node's RoundResult, or its RendezvousTimeout with `.at`, when it timed out."""
    from ..ops import Now
    from ..protocols.base import RendezvousTimeout
    sb = Sandbox(nodes=nodes)

    def join(info):
        try:
            return (yield from protocol.rendezvous(info))
        except RendezvousTimeout as e:
            e.at = yield Now()
            return e
    return sb.run(join, until=until, nodes=started), sb
