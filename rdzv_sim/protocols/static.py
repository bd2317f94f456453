"""torchrun's `static` rendezvous / init_process_group(init_method="env://").

A fixed world: node i is group rank i; every node sets its key, counts itself in, and waits
until all n have: O(1) store work each (rank 0 alone reads the n keys, for the trace). A rank
that never comes makes everyone time out at the join deadline. The attempt number
lives in the store so that a restart (all nodes re-entering) uses fresh keys.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..events import Event
from ..ops import Add, Check, CompareSet, Emit, FirstOf, MultiGet, Now, Set, Sleep
from ..reasons import Reason
from .base import (BadValue, NodeInfo, Protocol, RendezvousClosed, RendezvousFailed,
                   RendezvousTimeout, RoundResult, Watch, digest, watch_key)
from .kit import Capabilities, Kit
from .registry import register_kit
from .settings import ProtocolSettings


class StaticSettings(ProtocolSettings):
    """Settings of the `static` protocol: a fixed world (min_nodes == max_nodes == the nodes)."""
    name: Literal["static"] = "static"
    # torch's StaticTCPRendezvous closes nothing on shutdown; under torchrun the project's
    # handler turns this on (torchrun_conf.TORCHRUN_DEFAULTS): the handler contract's row
    close_on_shutdown: bool = Field(False, description="an agent that exits (out of restarts, timed out, done) "
                                    "closes the rendezvous for every agent (torchrun's plugin: on)")

    def problems(self, sc) -> list[tuple[tuple, str]]:
        out = []
        if not (sc.min_nodes == sc.max_nodes == sc.cluster.nodes):
            out.append((("protocol", "name"), "static rendezvous needs min_nodes == max_nodes == cluster.nodes"))
        if sc.scheduler.hot_spares:
            out.append((("scheduler", "hot_spares"), "a static world cannot take a spare in a failed rank's place"))
        return out

    def close_due(self, joins: list[float]) -> float | None:
        """The world is complete when its last rank has joined."""
        return joins[-1] if len(joins) == self.max_nodes else None


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
        yield Emit(Event.JOIN, round=rnd, detail={"slot": node.index + 1})
        yield Set(self._k(rnd, f"rank{node.index}"), node.encode())
        yield Emit(Event.CONFIRMED, round=rnd, rank=node.index)
        # the barrier is a counter (TCPStore's wait_for_workers counts its clients): the n-th
        # arrival opens it; each node does O(1) store work, rank 0 alone reads all n keys
        if (yield Add(self._k(rnd, "count"), 1)) == n:
            yield Set(self._k(rnd, "all"), "1")
        value = yield from self._await(rnd, "all", deadline, node)
        if value is None:
            return (yield from self.rendezvous(node, deadline))
        world, first = n * node.nproc, node.index * node.nproc      # torchrun static: same nproc
        dg = digest([f"static:{self.cfg.run_id}:{rnd}:{n}"])        # the members are ranks 0..n-1
        if node.index == 0:
            keys = tuple(self._k(rnd, f"rank{i}") for i in range(n))
            infos = []
            for i, t in enumerate((yield MultiGet(keys))):
                try:
                    infos.append(NodeInfo.decode(t))
                except BadValue as e:                   # the trace only: ranks are indexes
                    yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": f"rank{i}", "reason": str(e)})
            yield Emit(Event.ROUND_CLOSED, round=rnd, world_size=world,
                       detail={"members": sorted(i.name for i in infos), "count": n, "holes": 0})
            return RoundResult(rnd, 0, n, world, 0, node.addr, dg)
        # rank 0's key is there (it set it before counting itself in, on one connection), even
        # if rank 0 has died since: as with env://, the survivors learn that in init
        try:
            master = NodeInfo.decode((yield MultiGet((self._k(rnd, "rank0"),)))[0]).addr
        except BadValue as e:
            yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": "rank0", "reason": str(e)})
            raise RendezvousFailed(f"static round {rnd}: rank 0's descriptor is unreadable") from None
        return RoundResult(rnd, node.index, n, world, first, master, dg)

    def _await(self, rnd: int, name: str, deadline: float, node: NodeInfo):
        """The value of key `name` of round `rnd`; None if a restarted rank ended the round
        first (start anew); RendezvousClosed once the rendezvous is closed; RendezvousTimeout at
        the join deadline."""
        now = yield Now()
        which, value = yield FirstOf(value=watch_key(self._k(rnd, name)), ended=watch_key(self._k(rnd, "end")),
                                     timer=Sleep(max(0.0, deadline - now)),
                                     closed=watch_key(self.prefix + "closed"))
        if isinstance(value, BaseException):
            raise value
        if which == "closed":
            raise RendezvousClosed(f"the rendezvous {self.cfg.run_id!r} was closed while {node.name} waited")
        if which == "timer":
            raise RendezvousTimeout(f"static rendezvous: not all {self.cfg.max_nodes} ranks arrived "
                                    f"in {self.cfg.join_timeout:g} s")
        return value if which == "value" else None

    def watch(self, result: RoundResult, state=None, node=None):
        return [Watch(watch_key(self._k(result.round, "end")), Reason.ROUND_ENDED)]

    def shutdown(self, node: NodeInfo):
        """torch's handler.shutdown(): close the rendezvous for every agent (close_on_shutdown)."""
        if self.cfg.close_on_shutdown:
            yield from self.set_closed(node.name)

    def end_round(self, result: RoundResult, reason: str, node=None):
        yield CompareSet(self.prefix + "round", str(result.round), str(result.round + 1))
        yield Set(self._k(result.round, "end"), reason)


# torch's StaticTCPRendezvous is its baseline, for `validate --torch-static`
register_kit(Kit("static", StaticProtocol, StaticSettings,
                 Capabilities(deterministic=True, fixed_world=True, ranks_given=True, torch_baseline="static"),
                 parts={
    "invariants": "rdzv_sim.testing.invariants:STATIC", "known": "rdzv_sim.testing.known:STATIC",
    "cost/per_operation": "rdzv_sim.estimate:STATIC_PER_OPERATION"}))
