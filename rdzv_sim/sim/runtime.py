"""The SimPy runtime: interprets protocol operations for each simulated node.

Each node's agent is a SimPy process that drives the protocol generator: it sends in the
result of each operation, or throws in the store error a real client would raise. Store
calls pay network latency both ways plus queueing and service at the store; a paused store
or a cut link makes the call hang until the client's own deadline. Nothing here polls: a
waiting node costs no events until what it waits for happens.
"""
from __future__ import annotations

import math

import numpy as np
import simpy

from .. import ops as O
from ..protocols.recovery import Fault
from ..reasons import Reason
from .network import Network
from .node import SimNode
from ..models.cpu import shared_cores
from .first_of import FirstOfMixin
from .pg_init import InitBarriers
from .store import StoreServer, payload
from ..events import Event


_STORE_OPS = frozenset(O.STORE_OPS)


WALL_EPOCH = 1.7e9                 # the wall clock at t = 0 (torch's c10d deadlines read it)


class SimRuntime(FirstOfMixin):
    def __init__(self, env: simpy.Environment, store: StoreServer, net: Network, trace,
                 agent, cpu_cfg, rng=None, cpu=None):
        """`agent`, `cpu_cfg`: the scenario's agent and cluster.cpu sections; the store
        server's `service` is its store section (op_timeout)."""
        self.env, self.store, self.net, self.trace = env, store, net, trace
        self.agent, self.cpu_cfg = agent, cpu_cfg
        self.op_timeout = store.service.op_timeout
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.heartbeats: dict[str, list] = {}    # descriptor -> [node, start, period, stop]
        self.stopped_beats: dict[str, float] = {}   # descriptor -> wall time of its last beat
        self.longest_period = 0.0                # of every heartbeat started (for the floor)
        self.least_skew = 0.0                    # the most negative clock skew ever set
        self.cpu = None                          # the shared cores, made on first use
        self.cpu_factory = cpu or shared_cores   # (env, cfg, rng) -> cores (rdzv_sim/models/cpu)
        self.nodes: dict[str, SimNode] = {}
        self.rounds: dict[int, set] = {}         # round -> names of the nodes whose workers run it
        self.notices: dict[int, list] = {}       # round -> [(due, culprits)] of collective failures
        self.round_ops: dict[int, list] = {}     # round -> [ops, bytes]
        self.pg_init = InitBarriers(env, agent.collective_timeout)   # round -> its init barrier
        self.in_place = None              # the job's in-place recoveries (sim/in_place.py), if its mode has them
        self.total_ops = 0
        self.total_bytes = 0
        self.load_bin = 1.0                      # seconds per bin of the store_load table
        self.load: dict[int, list] = {}          # bin -> [ops, bytes]
        self.stores: dict[str, StoreServer] = {}  # host -> the store a failover started there
        self.store_started: dict[str, simpy.Event] = {}   # host -> fires when one starts there

    # --- driving a protocol generator ------------------------------------------------
    def drive(self, node: SimNode, gen, incarnation: int | None = None):
        """SimPy process body: run `gen` for `node` until it returns or the node dies.

        `incarnation` is bound when the process is created: a process whose host crashed (or
        restarted) before it first ran must not act for the new incarnation.
        """
        value, exc = None, None
        incarnation = node.incarnation if incarnation is None else incarnation
        try:
            while True:
                if node.paused:
                    yield node.resumed
                if not node.alive or node.incarnation != incarnation:
                    gen.close()                 # crashed before this process got to run
                    return "killed"
                try:
                    op = gen.throw(exc) if exc is not None else gen.send(value)
                except StopIteration as stop:
                    return stop.value
                value, exc = None, None
                t = type(op)
                try:                            # the common operations first, no dispatch
                    if t in _STORE_OPS:
                        value = yield from self.store_call(node, op)
                    elif t is O.FirstOf:
                        value = op.result(*(yield from self.first_of(node, op)))
                    elif t is O.Now:
                        value = self.env.now
                    elif t is O.Emit:
                        self._emit(node, op)
                    else:
                        value = yield from self.execute(node, op)
                except (O.StoreTimeout, O.StoreError) as e:
                    exc = e
        except simpy.Interrupt:
            gen.close()
            self._cancel_branches(node)
            return "killed"

    def execute(self, node: SimNode, op):
        """The less common operations (drive runs store calls, FirstOf, Now and Emit itself)."""
        env = self.env
        t = type(op)
        if t is O.WallClock:
            return WALL_EPOCH + env.now + node.clock_skew
        if t is O.Sleep:
            if op.seconds > 0:
                yield env.timeout(op.seconds)
            return None
        if t is O.StartWorkers:
            # a member from now on: a peer that dies while we start fails our collectives too
            node.running_round = op.round
            node.pending.clear()
            if self.in_place is not None:
                self.in_place.started(node, op.round, op.rank, op.members)
            yield env.timeout(self.agent.worker_start + self.agent.worker_start_per_node * op.members)
            yield from self._process_group_init(node, op)
            if self.in_place is not None and node.running_round == op.round:
                self.in_place.trains(node, op.round)
            return None
        if t is O.StopWorkers:
            # our workers are stopped (killed): their connections reset, so the collectives of
            # those still in the round fail as fast as after a killed process
            rnd = node.running_round
            if rnd is not None:
                # an agent that exits (a signal, an error) leaves a world that recovers in place
                # as a lost host does: the mode's coordinator decides (sim/in_place.py)
                exits = op.reason in (Reason.TERMINATED, Reason.AGENT_FAILED)
                if not (exits and self.in_place is not None
                        and self.in_place.fault(rnd, Fault.HOST_LOST, node.name,
                                                self._delay(self.agent.peer_crash_detection))):
                    self.peers_notice(rnd, {node.name}, self.agent.peer_crash_detection)
            node.running_round = None
            return None
        if t is O.InPlace:
            return (yield from self.in_place.world(node))
        if t is O.Work:
            cost = self.cpu_cfg.base + self.cpu_cfg.per_byte * op.nbytes
            if node.warm != node.incarnation:            # first work of this agent process
                node.warm = node.incarnation
                cost += self.cpu_cfg.cold_start
            if self.cpu_cfg.shared_cores:
                # the hosts' processes share these cores (rdzv_sim/models/cpu)
                if self.cpu is None:
                    self.cpu = self.cpu_factory(self.env, self.cpu_cfg, self.rng)
                job = self.cpu.run(cost, node.name)
                try:
                    yield job
                finally:
                    self.cpu.cancel(job)
            else:
                yield env.timeout(cost)
            return None
        if t is O.Random:
            return float(self.rng.random())
        if t is O.HeartbeatTimes:
            return {n: self._last_beat(n) for n in op.names}
        if t is O.StoppedHeartbeats:
            floor = WALL_EPOCH + env.now - self.longest_period + min(self.least_skew, 0.0)
            return self.stopped_beats, floor
        if t is O.StartHeartbeat:
            period = op.period + 2 * self.net.base[node.name] + self.store.service.service_base
            self.heartbeats[op.desc] = [node, env.now, period, None]
            self.stopped_beats.pop(op.desc, None)
            self.longest_period = max(self.longest_period, period)
            self.store.set_background(f"hb:{op.desc}", 1.0 / period, op.nbytes)
            return None
        if t is O.BackgroundLoad:
            self.store.set_background(f"poll:{node.name}", op.rate, op.nbytes)
            return None
        if t is O.Changed:
            return (yield from self._changed(node, op))
        if t is O.StoreAddress:
            return (self.store_of(node).host, 0)
        if t is O.UseStore:
            return (yield from self._use_store(node, op))
        raise TypeError(f"{node.name}: the protocol yielded {op!r}, which is not an operation")

    def _delay(self, delay: float | None) -> float:
        """How long a round's collectives take to fail: `delay`, or the collective timeout."""
        return self.agent.collective_timeout if delay is None else delay

    def _emit(self, node: SimNode, op: O.Emit) -> None:
        if op.round is not None:
            node.ctx_round = op.round + self.trace.round_offset
        self.trace.record(self.env.now, node.name, op.event, op.round, op.rank, op.world_size,
                          op.detail)

    def peers_notice(self, rnd, culprits: set, delay: float | None = None) -> None:
        """The collectives of round `rnd` fail for everyone but `culprits` after `delay`
        (default: the collective timeout, a hung NCCL/gloo call), unless they left by then.

        A round whose members leave one by one would schedule N notices of N targets each:
        a notice already due no later, whose culprits still in the round are among ours,
        covers this one, so each round costs O(N) however its members leave."""
        if rnd is None or not self.rounds.get(rnd):
            return
        when = self.env.now + self._delay(delay)
        members = self.rounds[rnd]
        due = self.notices.setdefault(rnd, [])
        for w, c in due:
            if w <= when and all(x in culprits for x in c if x in members):
                return
        due.append((when, frozenset(culprits)))
        self.env.timeout(when - self.env.now).callbacks.append(
            lambda _e: self._notify(rnd, (when, frozenset(culprits))))

    def _notify(self, rnd, notice) -> None:
        due = self.notices.get(rnd)
        if due is None or notice not in due:
            return                              # void: the world recovered in place since
        due.remove(notice)
        if not due:
            del self.notices[rnd]
        culprits = notice[1]
        for name in sorted(self.rounds.get(rnd, ())):
            n = self.nodes[name]
            if n.alive and name not in culprits:
                n.signal(Reason.PEER_FAILED)

    def _process_group_init(self, node: SimNode, op: O.StartWorkers):
        """init_process_group is a barrier of the round's members (sim/pg_init.py): a member
        that never comes (it died after the rendezvous) fails everyone's init after the
        collective timeout, and they leave the round as a failed peer would make them."""
        key = op.round + self.trace.round_offset      # a requeued job numbers rounds from 0 again
        if not (yield from self.pg_init.join(key, node.name, op.members)):
            if node.running_round == op.round:
                node.signal(Reason.PEER_FAILED)

    # --- background heartbeats and polling (not ticked) ---------------------------------
    def _last_beat(self, desc: str):
        rec = self.heartbeats.get(desc)
        if rec is None:
            return None
        node, start, period, stop = rec
        end = self.env.now if stop is None else stop
        last = start + math.floor((end - start) / period) * period
        return WALL_EPOCH + last + node.clock_skew

    def _stop_heartbeats(self, node: SimNode) -> None:
        for d, rec in self.heartbeats.items():
            if rec[0] is node and rec[3] is None:
                rec[3] = self.env.now
                self.stopped_beats[d] = self._last_beat(d)
                self.store.set_background(f"hb:{d}", 0.0)

    def node_died(self, node: SimNode) -> None:
        """A crashed host (or an agent that exited) stops beating and polling, and never
        completes a process-group init."""
        self._stop_heartbeats(node)
        self.store.set_background(f"poll:{node.name}", 0.0)
        self.pg_init.member_died(node.name)

    def _changed(self, node: SimNode, op: O.Changed):
        store, env = self.store_of(node), self.env
        if not store.alive:
            raise O.StoreError(f"{node.name}: connection refused: the store is down")
        cur = store.data.get(op.key)
        if cur is not op.since and cur != op.since:
            return cur
        ev = env.event()
        entry = (ev, op.since)
        store.change_waiters.setdefault(op.key, []).append(entry)
        try:
            if op.timeout is not None and math.isfinite(op.timeout):
                got = yield env.any_of([ev, env.timeout(op.timeout)])
                if ev not in got:
                    raise O.StoreTimeout(f"{node.name}: {op.key!r} did not change in {op.timeout:g} s")
                return got[ev]
            return (yield ev)
        finally:
            lst = store.change_waiters.get(op.key)
            if lst and entry in lst:
                lst.remove(entry)

    # --- the store -------------------------------------------------------------------
    def _use_store(self, node: SimNode, op: O.UseStore):
        """A failover: start a store on this host (`serve`), or connect to the one at `op.addr`
        once it runs there (waiting up to `op.timeout`, as a client retries a refused connect);
        StoreError if none ever answers, StoreTimeout if one runs but cannot be reached."""
        env = self.env
        if op.serve:
            st = self.stores.get(node.name)
            if st is None or not st.alive:
                st = self.stores[node.name] = StoreServer(env, node.name, self.store.service, self.trace)
                self.trace.record(env.now, node.name, Event.STORE_STARTED)
                ev = self.store_started.pop(node.name, None)
                if ev is not None:
                    ev.succeed()
        deadline = env.now + op.timeout
        while True:
            st = self.stores.get(op.addr)
            if (st is None or not st.alive) and op.addr == self.store.host:
                st = self.store                             # back to the job's own store
            if st is not None and st.alive and self.net.reachable(node.name, st.host):
                break
            if env.now >= deadline:
                if st is not None and st.alive:
                    raise O.StoreTimeout(f"{node.name}: the store at {op.addr} cannot be reached")
                raise O.StoreError(f"{node.name}: no store at {op.addr} within {op.timeout:g} s")
            ev = self.store_started.get(op.addr)
            if ev is None:
                ev = self.store_started[op.addr] = env.event()
            yield env.any_of([ev, env.timeout(deadline - env.now)])
        node.store, node.conn_last = (None if st is self.store else st), 0.0
        yield env.timeout(2 * self.latency(node))           # the connection's handshake
        return None

    def host_down(self, host: str) -> None:
        """A host crashed: a failover store it served dies with it."""
        st = self.stores.get(host)
        if st is not None:
            st.host_down(host)

    def _account(self, node: SimNode, nbytes: int) -> None:
        self.total_ops += 1
        self.total_bytes += nbytes
        b = int(self.env.now // self.load_bin)
        ops_bytes = self.load.get(b)
        if ops_bytes is None:
            self.load[b] = [1, nbytes]
        else:
            ops_bytes[0] += 1
            ops_bytes[1] += nbytes
        acc = self.round_ops.get(node.ctx_round)
        if acc is None:
            acc = self.round_ops[node.ctx_round] = [0, 0]
        acc[0] += 1
        acc[1] += nbytes

    def store_of(self, node: SimNode) -> StoreServer:
        """The store this node uses: the job's, or the one a failover moved it to."""
        return self.store if node.store is None else node.store

    def blocked(self, node: SimNode) -> bool:
        """The store cannot answer this node now: paused, or cut off from it."""
        store = self.store if node.store is None else node.store
        return store.paused or not self.net.reachable(node.name, store.host)

    def _until_clear(self, node: SimNode, deadline: float):
        """Hang while the store is paused or cut off from `node`; StoreTimeout at the deadline."""
        env, store, net = self.env, self.store_of(node), self.net
        while self.blocked(node):
            remaining = deadline - env.now
            if remaining <= 0:
                raise O.StoreTimeout(f"{node.name}: store call hung past its {self.op_timeout:g} s deadline")
            waits = [env.timeout(remaining)] if math.isfinite(remaining) else []
            waits.append(store.unpaused if store.paused else
                         net.healed_event(node.name, None if node.store is None else store.host))
            yield env.any_of(waits)
            if env.now >= deadline:
                raise O.StoreTimeout(f"{node.name}: store call hung past its {self.op_timeout:g} s deadline")

    def arrival(self, node: SimNode) -> float:
        """When a request sent now reaches the store: one TCP connection keeps order."""
        at = self.env.now + self.latency(node)
        if at < node.conn_last:
            at = node.conn_last
        node.conn_last = at
        return at

    def latency(self, node: SimNode) -> float:
        """One way between the node and its store."""
        return self.net.latency(node.name, None if node.store is None else node.store.host)

    def store_call(self, node: SimNode, op):
        """One request/reply on the node's connection: latency there, the store's FIFO queue
        and service, latency back. Two SimPy events for a plain call (arrival, reply)."""
        env, store, net = self.env, self.store_of(node), self.net
        deadline = env.now + self.op_timeout
        nbytes = payload(op)
        self._account(node, nbytes)
        if self.blocked(node):
            yield from self._until_clear(node, deadline)
        arrival = self.arrival(node)
        if type(op) is O.Set:                        # fire and forget: the client moves on
            ev = env.timeout(arrival - env.now)
            ev.callbacks.append(lambda _ev: self._deliver_set(node, op, nbytes, store))
            return None
        yield env.timeout(arrival - env.now)
        result, leaves = yield from self._serve(node, op, nbytes, deadline)
        # service and the way back in one timeout; what happened meanwhile is checked after
        yield env.timeout(leaves - env.now + self.latency(node))
        if store.died_at <= leaves:
            raise O.StoreError(f"{node.name}: connection reset: the store went down")
        # the reply is lost while the client is cut off: it hangs until its deadline
        if not net.reachable(node.name, store.host):
            yield from self._until_clear(node, max(deadline, env.now + self.op_timeout))
            yield env.timeout(self.latency(node))
        return result

    def _deliver_set(self, node: SimNode, op, nbytes: int, store) -> None:
        """A fire-and-forget set reaches the store it was sent to: applied now, or (paused,
        cut off) when the way clears, as TCP would deliver it; a dead store drops it, and so
        does one the node has left meanwhile (a failover) that cannot take it now."""
        if not store.alive:
            return
        if store is not self.store_of(node):
            if not store.paused and self.net.reachable(node.name, store.host):
                store.admit(self.env.now, nbytes)
                store.apply(op)
            return
        if self.blocked(node):
            self.env.process(self._serve(node, op, nbytes))
            return
        store.admit(self.env.now, nbytes)
        store.apply(op)

    def _serve(self, node: SimNode, op, nbytes: int, deadline=math.inf):
        """At the store, on arrival: (result, when the reply leaves). One FIFO server, computed
        rather than queued (start = max(arrival, server free)); effects apply in arrival order,
        which is the service order, so every client sees what a FIFO store would show it."""
        env, store = self.env, self.store_of(node)
        if not store.alive:
            raise O.StoreError(f"{node.name}: connection refused: the store is down")
        if self.blocked(node):
            yield from self._until_clear(node, deadline)
        leaves = store.admit(env.now, nbytes)
        needed = store.keys_needed(op)
        if needed and store.missing(needed):
            timeout = op.timeout if op.timeout is not None else self.op_timeout
            ev = store.park(needed)
            try:
                if math.isfinite(timeout):
                    got = yield env.any_of([ev, env.timeout(timeout)])
                    if ev not in got:
                        store.unpark(ev, needed)
                        raise O.StoreTimeout(f"{node.name}: wait for {needed[0]!r} timed out "
                                             f"after {timeout:g} s")
                else:
                    yield ev
            except simpy.Interrupt:
                store.unpark(ev, needed)
                raise
            if not store.alive:
                raise O.StoreError(f"{node.name}: connection reset: the store went down")
            leaves = env.now
        return store.apply(op), leaves
