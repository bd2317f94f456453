"""torchrun's `static` rendezvous / init_process_group(init_method="env://").

A fixed world: node i is group rank i; every node sets its key and waits for all of them.
A rank that never comes makes everyone time out at the join deadline. The attempt number
lives in the store so that a restart (all nodes re-entering) uses fresh keys.
"""
from __future__ import annotations

from ..ops import Check, CompareSet, Emit, FirstOf, MultiGet, Now, Set, Sleep, Wait
from .base import INF, NodeInfo, Protocol, RendezvousTimeout, RoundResult, digest, watch_key


class StaticProtocol(Protocol):
    name = "static"

    def _k(self, rnd: int, name: str) -> str:
        return f"{self.prefix}r{rnd}/{name}"

    def rendezvous(self, node: NodeInfo, deadline: float | None = None):
        n = self.cfg.max_nodes
        if deadline is None:
            deadline = (yield Now()) + self.cfg.join_timeout
        if not 0 <= node.index < n:
            raise ValueError(f"static rendezvous: node index {node.index} outside world of {n}")
        while True:
            rnd = int((yield CompareSet(self.prefix + "round", "", "0")))
            if not (yield Check((self._k(rnd, f"rank{node.index}"),))):
                break
            # this host was in round `rnd` before it restarted: that world is gone, start anew
            yield from self.end_round(RoundResult(rnd, node.index, n, 0, 0, "", ""), "member_restarted")
        yield Emit("join", round=rnd, detail={"slot": node.index + 1})
        yield Set(self._k(rnd, f"rank{node.index}"), node.encode())
        yield Emit("confirmed", round=rnd, rank=node.index)
        keys = tuple(self._k(rnd, f"rank{i}") for i in range(n))
        # wait for every rank, unless a restarted rank ends this world first (then start anew)
        now = yield Now()
        idx, value = yield FirstOf(Wait(keys, timeout=INF), watch_key(self._k(rnd, "end")),
                                   Sleep(max(0.0, deadline - now)))
        if isinstance(value, BaseException):
            raise value
        if idx == 1:
            return (yield from self.rendezvous(node, deadline))
        if idx == 2:
            raise RendezvousTimeout(f"static rendezvous: not all {n} ranks arrived in "
                                    f"{self.cfg.join_timeout:g} s")
        infos = [NodeInfo.decode(t) for t in (yield MultiGet(keys))]
        world = sum(i.nproc for i in infos)
        first = sum(i.nproc for i in infos[: node.index])
        if node.index == 0:
            yield Emit("round_closed", round=rnd, world_size=world,
                       detail={"members": sorted(i.name for i in infos), "count": n, "holes": 0})
        return RoundResult(rnd, node.index, n, world, first, infos[0].addr,
                           digest(i.name for i in infos))

    def watch(self, result: RoundResult, state=None, node=None):
        return [(watch_key(self._k(result.round, "end")), "round_ended")]

    def end_round(self, result: RoundResult, reason: str, node=None):
        yield CompareSet(self.prefix + "round", str(result.round), str(result.round + 1))
        yield Set(self._k(result.round, "end"), reason)
