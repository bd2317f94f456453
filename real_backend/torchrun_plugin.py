"""`torchrun --rdzv-backend=rdzv-sim --rdzv-conf protocol=NAME` (or `--rdzv-backend=hrw`): any
registered protocol that can run for real, as a torchrun `RendezvousHandler`.

Registered through the `torchrun.handlers` entry points (see pyproject.toml), so an installed
project makes `torchrun --rdzv-backend=rdzv-sim --rdzv-endpoint=HOST:PORT --rdzv-id=JOB
--nnodes=MIN:MAX --rdzv-conf protocol=hrw,...` work; `hrw` is the same with hrw fixed. The handler
drives the very generators the simulator drives on the real runtime; nothing here decides
membership. `--rdzv-conf` is read by torchrun_conf.py (the protocol's own settings model).

- A node is its host (`--local-addr`, else the host name; `node_name=` overrides), so an agent
  that restarts on the same host replaces its old slot instead of counting twice; a second
  live agent on the host is `host#2` (identity.py tells the live from the dead).
- Every joiner reserves a port for its workers' store and puts it in its descriptor; the closer
  writes rank 0's address *and* port into every member's assignment, so a node that joins a
  later round as a non-zero rank has MASTER_ADDR/MASTER_PORT with its rank (torch 2.13's own
  handler can wait for a key nobody writes there).
- `num_nodes_waiting` (called every monitor interval) is 0 until a watcher thread, blocked on
  the store, sees a late joiner or the round ended by another member; from then on each call
  reads the count (one store read, as torch's c10d does on every call).
- `shutdown()` runs the protocol's shutdown (hrw, static: closes the rendezvous, as torch's
  handlers do); a second call does nothing.
- Values in the store are JSON text; nothing is unpickled.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from datetime import timedelta

import torch.distributed as dist
from torch.distributed.elastic.rendezvous.api import (RendezvousClosedError,
                                                      RendezvousConnectionError,
                                                      RendezvousHandler, RendezvousInfo,
                                                      RendezvousParameters, RendezvousStoreInfo,
                                                      RendezvousTimeoutError)

from rdzv_sim import ops as O
from rdzv_sim.events import Event
from rdzv_sim.protocols.agent import AgentSettings, Exit, rendezvous_with_retry, watch_round
from rdzv_sim.protocols.base import NodeInfo
from rdzv_sim.reasons import STORE_LOSS, ExitReason, Reason

from torch.distributed.elastic.utils.logging import get_logger

from . import identity
from .ports import free_port
from .runtime import RealRuntime
from .torchrun_conf import parse

log = get_logger(__name__)               # torch's elastic logger: torchrun's LOGLEVEL applies, as to its handler
DEFAULT_PORT = 29400
ETCD_PORT = 2379


def _endpoint(endpoint: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    host, _, port = (endpoint or "").rpartition(":")
    if not host:
        host, port = endpoint, ""
    if not host:
        raise ValueError("--rdzv-endpoint is required (HOST[:PORT])")
    try:
        return host.strip("[]"), int(port) if port else default_port
    except ValueError:
        raise ValueError(f"--rdzv-endpoint {endpoint!r}: the port is not a number") from None


def _is_local(host: str) -> bool:
    """torch c10d's rule: this machine's name or one of its addresses hosts the store."""
    if host in ("localhost", socket.gethostname(), socket.getfqdn()) or host.startswith("127."):
        return True
    try:
        return socket.gethostbyname(host) in socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        return False


def members_text(members, shown: int = 8) -> str:
    """A round's members for its log line: the first `shown`, and how many more."""
    if not members:
        return "in the log of the node that closed the round"
    more = len(members) - shown
    return ", ".join(map(str, members[:shown])) + (f" and {more:,} more" if more > 0 else "")


class ProtocolRendezvousHandler(RendezvousHandler):
    """torchrun's rendezvous contract over a registered protocol and the real runtime."""

    def __init__(self, params: RendezvousParameters, backend: str = "rdzv-sim",
                 protocol: str | None = None):
        spec, self.cfg, hs = parse(params, backend, protocol)
        self.backend, self.proto = backend, spec.name
        self.store_kind = hs.store
        if self.store_kind == "etcd":
            members = [_endpoint(e.strip(), ETCD_PORT) for e in (params.endpoint or "").split(",")]
            self.etcd = [f"{h}:{p}" for h, p in members]
            self.host, self.port = members[0]
        else:
            self.etcd = None
            self.host, self.port = _endpoint(params.endpoint)
        if self.etcd and self.cfg.fails_over:
            raise ValueError("--rdzv-conf store_failover=true is for a TCPStore: an etcd cluster "
                             "(store=etcd) fails over by itself")
        self.run_id = params.run_id
        self.read_timeout = hs.read_timeout
        self.protocol = spec.make(self.cfg)      # one agent process: one handler, its own protocol
        self.agent_cfg = AgentSettings(max_rendezvous_attempts=hs.max_attempts)
        self.addr = params.local_addr or hs.local_addr or socket.getfqdn()
        self.index = hs.rank or 0                # the node's own rank, where the protocol wants it
        explicit = hs.node_name
        self.name, self._identity = identity.claim(str(explicit or self.addr), self.run_id,
                                                   explicit=bool(explicit))
        # rank_order=topology sorts by this key: given, else Slurm's task id, else the name
        self.topo = str(hs.topology or os.environ.get("SLURM_PROCID") or "")[:256]
        self._trace = hs.trace_file or os.environ.get("RDZV_SIM_TRACE")
        self._members: dict[int, list] = {}     # round -> its members, where this node closed it
        self._trace_lock = threading.Lock()
        self._t0 = time.monotonic()
        self._server = None if self.etcd else self._host_store(hs.is_host)
        self._client = None                      # the agent's store connection (RendezvousInfo.store)
        self._last = None                        # the RoundResult of the round we are in
        self._memory = self.protocol.agent_stores()   # the last assignment, for store_failover
        self._waiting = 0
        self._watcher: tuple[threading.Thread, RealRuntime] | None = None
        self._watch_rt: RealRuntime | None = None
        self._shut = False                       # shutdown() has run (its runtimes are closed)
        self.rt = self._runtime()

    # --- plumbing ----------------------------------------------------------------------
    def _host_store(self, is_host: bool | None):
        """Host the store when told to, or (unset) when the endpoint is this machine and the
        port is free, as torch c10d does; otherwise be a client."""
        if is_host is False or (is_host is None and not _is_local(self.host)):
            return None
        try:
            server = dist.TCPStore(self.host, self.port, is_master=True, wait_for_workers=False,
                                   multi_tenant=True, timeout=timedelta(seconds=self.read_timeout),
                                   use_libuv=True)
            server.set("epoch", str(time.time()))
            return server
        except Exception as e:  # noqa: BLE001 - the port is taken: another agent hosts it
            if is_host:
                raise RendezvousConnectionError(
                    f"is_host=true but the store cannot listen on {self.host}:{self.port}: {e}") from None
            return None

    def _emit(self, t, op) -> None:
        if op.event == Event.ROUND_CLOSED and isinstance(op.detail, dict) and op.round is not None:
            self._members = {op.round: list(op.detail.get("members") or [])}    # the latest round's only
        if not self._trace:
            return
        line = json.dumps({"t": t, "wall": time.time(), "node": self.name, "event": op.event,
                           "round": op.round, "rank": op.rank, "world_size": op.world_size,
                           "detail": op.detail})
        with self._trace_lock, open(self._trace, "a") as f:
            f.write(line + "\n")

    def _runtime(self) -> RealRuntime:
        return RealRuntime(self.host, self.port, self._emit, op_timeout=self.read_timeout, t0=self._t0,
                           connect=self._etcd_store if self.etcd else None)

    def _etcd_store(self):
        from .etcd.store import EtcdStore
        return EtcdStore(self.etcd, timeout=self.read_timeout)

    def _drive(self, gen):
        """Run a protocol generator; store trouble becomes torchrun's connection error."""
        try:
            return self.rt.drive(gen)
        except O.StoreError as e:
            raise RendezvousConnectionError(f"{self.proto} rendezvous lost the store: {e}") from None
        except O.StoreTimeout as e:
            raise RendezvousConnectionError(f"{self.proto} rendezvous store timeout: {e}") from None

    # --- torchrun's interface ----------------------------------------------------------
    def get_backend(self) -> str:
        return self.backend

    @property
    def use_agent_store(self) -> bool:
        """Workers bring up their own store on rank 0's reserved port, fresh each round."""
        return False

    def _fail_over(self, node: NodeInfo, why: str) -> bool:
        """The store is lost: go to the next successor the last round elected (store_failover);
        False when there is none to go to. Every connection follows."""
        if not self.rt.drive(self._memory.move(node)):
            return False
        self._client = None
        self.host, self.port = self.rt.host, self.rt.port
        if self._watch_rt is not None:
            self._watch_rt.close()
            self._watch_rt = None
        log.warning("The node '%s' lost the %s rendezvous store (%s) and moved to %s:%d.",
                    self.name, self.proto, why, self.host, self.port)
        return True

    def _node(self) -> NodeInfo:
        return NodeInfo(self.name, self.addr, 1, self.index, pid=os.getpid(), port=free_port(self.addr),
                        topo=self.topo)

    def next_rendezvous(self) -> RendezvousInfo:
        self._stop_watch()
        node = self._node()
        if self._last is not None:          # leaving our round (restart, or nodes waiting): end it
            try:
                self._drive(self.protocol.end_round(self._last, "rejoin", node))
            except RendezvousConnectionError as e:
                if not self._fail_over(node, str(e)):
                    raise
            self._last = None
        if self.is_closed():
            raise RendezvousClosedError(f"the rendezvous {self.run_id!r} is closed")
        log.info("The node '%s' attempts to join the next round of the %s rendezvous '%s'.",
                 self.name, self.proto, self.run_id)
        while True:
            result = self._drive(rendezvous_with_retry(node, self.protocol, self.agent_cfg,
                                                       last=self._memory.last, stores=self._memory))
            if not isinstance(result, Exit):
                break
            self._memory.remember(result.last)
            if result.reason not in STORE_LOSS or not self._fail_over(node, result.why or result.reason):
                break
        if isinstance(result, Exit):
            log.warning("The node '%s' gives up the %s rendezvous '%s': %s %s", self.name,
                        self.proto, self.run_id, result.reason, result.why)
            self._emit(time.monotonic() - self._t0, O.Emit(Event.AGENT_EXIT, detail={"reason": result.reason}))
            if result.reason == ExitReason.RENDEZVOUS_CLOSED:
                raise RendezvousClosedError(result.why)
            if result.reason == ExitReason.STORE_LOST:
                raise RendezvousConnectionError(f"{self.proto} rendezvous lost the store: {result.why}")
            raise RendezvousTimeoutError(f"{self.proto} rendezvous gave up: {result.reason} {result.why}".strip())
        self._last, self._waiting = result, 0
        self._memory.remember(result, (self.rt.host, self.rt.port))
        log.info("The node '%s' has joined round %d of the %s rendezvous '%s' as rank %d in a "
                 "world of size %d (%d workers; rank 0 at %s:%d; members: %s).", self.name, result.round,
                 self.proto, self.run_id, result.rank, result.nnodes, result.world_size, result.master,
                 result.master_port, members_text(self._members.get(result.round)))
        self._start_watch(result, node)
        store = dist.PrefixStore(f"rdzv/{self.run_id}/r{result.round}/agent/", self._agent_store())
        return RendezvousInfo(store, result.rank, result.nnodes,
                              RendezvousStoreInfo(result.master, result.master_port))

    def _agent_store(self):
        if self._client is None and self.etcd:
            from .etcd.torch_store import TorchEtcdStore
            self._client = TorchEtcdStore(self._etcd_store())
        if self._client is None:
            self._client = dist.TCPStore(self.host, self.port, is_master=False, wait_for_workers=False,
                                         timeout=timedelta(seconds=self.read_timeout), use_libuv=True)
        return self._client

    def is_closed(self) -> bool:
        return bool(self._drive(self.protocol.is_closed()))

    def set_closed(self) -> None:
        self._drive(self.protocol.set_closed(self.name))

    def num_nodes_waiting(self) -> int:
        """0 until the watcher sees a reason to re-form; then the count, read on each call."""
        if self._waiting and self._last is not None:
            try:
                n = int(self._drive(self.protocol.count_waiting(self._last)))
                self._waiting = n if n > 0 else self._waiting    # 0: the round ended instead
            except RendezvousConnectionError:
                pass                            # the agent learns of a lost store on its next call
        return self._waiting

    def get_run_id(self) -> str:
        return self.run_id

    def shutdown(self) -> bool:
        """The protocol's shutdown (hrw's and static's close the rendezvous for every agent, as
        torch's own handlers do), then this handler's resources. Idempotent, as torch's own
        (`test_shutdown_can_be_called_multiple_times`): a second call does nothing."""
        if self._shut:
            return True
        self._shut = True
        self._stop_watch()
        try:
            self._drive(self.protocol.shutdown(self._node()))
        except (RendezvousConnectionError, RendezvousClosedError) as e:
            log.warning("The node '%s' could not shut the %s rendezvous '%s' down: %s", self.name,
                        self.proto, self.run_id, e)
        for rt in (self.rt, self._watch_rt):
            if rt is not None:
                rt.close()
        identity.release(self._identity)
        self._identity = None
        return True

    # --- the watcher: keeps num_nodes_waiting current, answers probes ------------------
    def _start_watch(self, result, node) -> None:
        # one watcher runtime for the handler's life: its connections are reused every round
        # (creating TCPStore clients is slow now and then; see runtime.py)
        rt = self._watch_rt = self._watch_rt or self._runtime()
        rt.signals.clear()
        thread = threading.Thread(target=self._watch, args=(rt, result, node), daemon=True,
                                  name="rdzv-watch")
        self._watcher = (thread, rt)
        thread.start()

    def _stop_watch(self) -> None:
        if self._watcher is not None:
            thread, rt = self._watcher
            rt.signals.signal("stop")
            thread.join(timeout=5.0)
            self._watcher = None

    def _watch(self, rt: RealRuntime, result, node) -> None:
        try:
            rt.drive(self._watch_gen(result, node))
        except (O.StoreError, O.StoreTimeout):
            pass                            # the agent learns of a lost store on its next call

    def _watch_gen(self, result, node):
        """The agent's watch of the running round (rdzv_sim's `watch_round`), reporting each
        reason to leave as num_nodes_waiting instead of leaving: torchrun's agent decides."""
        fired: set = set()
        try:                                # rank 0: drop the round before last's keys
            yield from self.protocol.clean_up(result)
        except (O.StoreError, O.StoreTimeout):
            pass
        while True:
            reason, value = yield from watch_round(self.protocol, result, node, local=("stop",),
                                                   fired=fired)
            if reason == "stop" or isinstance(value, BaseException):
                return
            fired.add(reason)
            if reason == Reason.NODES_WAITING:
                self._waiting = max(1, int((yield from self.protocol.count_waiting(result))))
            else:                           # the round ended (another member left it): rejoin
                self._waiting = max(1, self._waiting)
            self._emit(time.monotonic() - self._t0,
                       O.Emit(Event.REFORM_DUE, round=result.round, detail={"reason": reason, "waiting": self._waiting}))


def create_handler(params: RendezvousParameters) -> ProtocolRendezvousHandler:
    """--rdzv-backend=rdzv-sim: the protocol that --rdzv-conf protocol=NAME names (default hrw)."""
    return ProtocolRendezvousHandler(params, "rdzv-sim")


def create_hrw_handler(params: RendezvousParameters) -> ProtocolRendezvousHandler:
    """--rdzv-backend=hrw: the hrw protocol."""
    return ProtocolRendezvousHandler(params, "hrw", "hrw")


def handler_creator():
    """The `torchrun.handlers` entry point `hrw`: a zero-argument factory of the creator."""
    return create_hrw_handler


def rdzv_sim_handler_creator():
    """The `torchrun.handlers` entry point `rdzv-sim`."""
    return create_handler
