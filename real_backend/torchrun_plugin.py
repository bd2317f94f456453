"""`torchrun --rdzv-backend=hrw`: the project's protocol as a torchrun `RendezvousHandler`.

Registered through the `torchrun.handlers` entry point (see pyproject.toml), so an installed
project makes `torchrun --rdzv-backend=hrw --rdzv-endpoint=HOST:PORT --rdzv-id=JOB
--nnodes=MIN:MAX ...` work. The handler drives the very generators the simulator drives
(`rdzv_sim.protocols.hrw`) on the real runtime; nothing here decides membership.

- A node is its host (`--local-addr`, else the host name; `node_name=` overrides), so an agent
  that restarts on the same host replaces its old slot instead of counting twice; a second
  live agent on the host is `host#2` (identity.py tells the live from the dead).
- Every joiner reserves a port for its workers' store and puts it in its descriptor; the closer
  writes rank 0's address *and* port into every member's assignment, so a node that joins a
  later round as a non-zero rank has MASTER_ADDR/MASTER_PORT with its rank (torch 2.13's own
  handler can wait for a key nobody writes there).
- `num_nodes_waiting` (called every monitor interval) reads a number a watcher thread keeps
  current from blocking waits on the store: a late joiner, or the round ended by another member.
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

from pydantic import ValidationError

from rdzv_sim import ops as O
from rdzv_sim.protocols.agent import (STORE_LOSS, AgentSettings, Exit, Memory, rendezvous_with_retry,
                                      watch_round)
from rdzv_sim.protocols.base import NodeInfo
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings

from . import identity
from .launcher import free_port
from .runtime import RealRuntime

log = logging.getLogger(__name__)        # torchrun's LOGLEVEL applies, as to torch's own handler
DEFAULT_PORT = 29400
# --rdzv-conf keys besides the protocol's settings (HrwSettings: join_timeout, last_call_timeout,
# confirm_timeout, ...); torch c10d's own are accepted and ignored, so one --rdzv-conf serves both
C10D_ONLY = {"keep_alive_interval", "keep_alive_max_attempt", "heartbeat", "use_libuv", "timeout"}
HANDLER_KEYS = {"close_timeout", "read_timeout", "is_host", "node_name", "trace_file",
                "max_attempts", "local_addr", "topology", "store"}
ETCD_PORT = 2379
PROTOCOL_KEYS = set(HrwSettings.model_fields) - {"name", "run_id", "min_nodes", "max_nodes"}
# torchrun's own default for its own key (torch's RendezvousTimeout: last call 30 s), where the
# simulator's scenarios default to 1 s
TORCHRUN_DEFAULTS = {"last_call_timeout": 30.0}


def settings_from(params: RendezvousParameters) -> HrwSettings:
    """--rdzv-conf, --rdzv-id and --nnodes as the hrw protocol's settings model (its bounds, its
    defaults but torchrun's last call); torchrun's `close_timeout` stands for `confirm_timeout`
    when that is not given."""
    conf = params.config
    if "rank" in conf:
        raise ValueError("--rdzv-conf rank=...: the hrw backend gives ranks by the rendezvous (HRW "
                         "order); a fixed rank is the static backend's (--rdzv-backend=static)")
    unknown = set(conf) - PROTOCOL_KEYS - C10D_ONLY - HANDLER_KEYS
    if unknown:
        raise ValueError(f"--rdzv-conf: unknown key(s) {sorted(unknown)} for the hrw backend; "
                         f"known: {sorted(PROTOCOL_KEYS | HANDLER_KEYS | C10D_ONLY)}")
    given = {**TORCHRUN_DEFAULTS, **{k: conf[k] for k in PROTOCOL_KEYS if conf.get(k) is not None}}
    if "confirm_timeout" not in given and conf.get("close_timeout") is not None:
        given["confirm_timeout"] = conf["close_timeout"]
    try:
        return HrwSettings(run_id=params.run_id, min_nodes=params.min_nodes,
                           max_nodes=params.max_nodes, **given)
    except ValidationError as e:
        err = e.errors()[0]
        key = err["loc"][0] if err["loc"] else "?"
        raise ValueError(f"--rdzv-conf {key}={conf.get(key, conf.get('close_timeout'))!r}: "
                         f"{err['msg']}") from None


def _seconds(params: RendezvousParameters, key: str, default: float) -> float:
    v = params.config.get(key)
    try:
        return default if v is None else float(v)
    except ValueError:
        raise ValueError(f"--rdzv-conf {key}={v!r}: expected a number of seconds") from None


def _endpoint(endpoint: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    host, _, port = (endpoint or "").rpartition(":")
    if not host:
        host, port = endpoint, ""
    if not host:
        raise ValueError("--rdzv-endpoint is required for the hrw backend (HOST[:PORT])")
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


class HrwRendezvousHandler(RendezvousHandler):
    """torchrun's rendezvous contract over the `hrw` protocol and the real runtime."""

    def __init__(self, params: RendezvousParameters):
        self.cfg = settings_from(params)
        self.store_kind = str(params.config.get("store") or "tcpstore")
        if self.store_kind not in ("tcpstore", "etcd"):
            raise ValueError(f"--rdzv-conf store={self.store_kind!r}: expected tcpstore (the default: "
                             "a TCPStore at --rdzv-endpoint) or etcd (--rdzv-endpoint lists the "
                             "cluster's members, HOST:PORT,HOST:PORT,...)")
        if self.store_kind == "etcd":
            members = [_endpoint(e.strip(), ETCD_PORT) for e in (params.endpoint or "").split(",")]
            self.etcd = [f"{h}:{p}" for h, p in members]
            self.host, self.port = members[0]
        else:
            self.etcd = None
            self.host, self.port = _endpoint(params.endpoint)
        if self.etcd and self.cfg.store_failover:
            raise ValueError("--rdzv-conf store_failover=true is for a TCPStore: an etcd cluster "
                             "(store=etcd) fails over by itself")
        self.run_id = params.run_id
        self.read_timeout = _seconds(params, "read_timeout", 60.0)
        self.protocol = HrwProtocol(self.cfg)
        self.agent_cfg = AgentSettings(max_rendezvous_attempts=int(params.config.get("max_attempts", 20)))
        self.addr = params.local_addr or socket.getfqdn()
        explicit = params.config.get("node_name")
        self.name, self._identity = identity.claim(str(explicit or self.addr), self.run_id,
                                                   explicit=bool(explicit))
        # rank_order=topology sorts by this key: given, else Slurm's task id, else the name
        self.topo = str(params.config.get("topology") or os.environ.get("SLURM_PROCID") or "")
        if len(self.topo) > 256:
            raise ValueError("--rdzv-conf topology=...: at most 256 characters")
        self._trace = params.config.get("trace_file") or os.environ.get("RDZV_SIM_TRACE")
        self._trace_lock = threading.Lock()
        self._t0 = time.monotonic()
        self._server = None if self.etcd else self._host_store(params.get_as_bool("is_host"))
        self._client = None                      # the agent's store connection (RendezvousInfo.store)
        self._last = None                        # the RoundResult of the round we are in
        self._memory = Memory()                  # the last assignment, for store_failover
        self._waiting = 0
        self._watcher: tuple[threading.Thread, RealRuntime] | None = None
        self._watch_rt: RealRuntime | None = None
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
            raise RendezvousConnectionError(f"hrw rendezvous lost the store: {e}") from None
        except O.StoreTimeout as e:
            raise RendezvousConnectionError(f"hrw rendezvous store timeout: {e}") from None

    # --- torchrun's interface ----------------------------------------------------------
    def get_backend(self) -> str:
        return "hrw"

    @property
    def use_agent_store(self) -> bool:
        """Workers bring up their own store on rank 0's reserved port, fresh each round."""
        return False

    def _fail_over(self, node: NodeInfo, why: str) -> bool:
        """The store is lost: go to the next successor the last round elected (store_failover);
        False when there is none to go to. Every connection follows."""
        if not self.rt.drive(self._memory.move(self.protocol, node)):
            return False
        self._client = None
        self.host, self.port = self.rt.host, self.rt.port
        if self._watch_rt is not None:
            self._watch_rt.close()
            self._watch_rt = None
        log.warning("The node '%s' lost the hrw rendezvous store (%s) and moved to %s:%d.",
                    self.name, why, self.host, self.port)
        return True

    def next_rendezvous(self) -> RendezvousInfo:
        self._stop_watch()
        node = NodeInfo(self.name, self.addr, 1, pid=os.getpid(), port=free_port(self.addr),
                        topo=self.topo)
        if self._last is not None:          # leaving our round (restart, or nodes waiting): end it
            try:
                self._drive(self.protocol.end_round_at(self._last.round, "rejoin"))
            except RendezvousConnectionError as e:
                if not self._fail_over(node, str(e)):
                    raise
            self._last = None
        if self.is_closed():
            raise RendezvousClosedError(f"the rendezvous {self.run_id!r} is closed")
        log.info("The node '%s' attempts to join the next round of the hrw rendezvous '%s'.",
                 self.name, self.run_id)
        while True:
            result = self._drive(rendezvous_with_retry(node, self.protocol, self.agent_cfg,
                                                       last=self._memory.last))
            if not isinstance(result, Exit):
                break
            self._memory.assigned(result.last)
            if result.reason not in STORE_LOSS or not self._fail_over(node, result.why or result.reason):
                break
        if isinstance(result, Exit):
            log.warning("The node '%s' gives up the hrw rendezvous '%s': %s %s", self.name,
                        self.run_id, result.reason, result.why)
            self._emit(time.monotonic() - self._t0, O.Emit("agent_exit", detail={"reason": result.reason}))
            if result.reason == "rendezvous_closed":
                raise RendezvousClosedError(result.why)
            if result.reason == "store_lost":
                raise RendezvousConnectionError(f"hrw rendezvous lost the store: {result.why}")
            raise RendezvousTimeoutError(f"hrw rendezvous gave up: {result.reason} {result.why}".strip())
        self._last, self._waiting = result, 0
        self._memory.assigned(result, (self.rt.host, self.rt.port))
        log.info("The node '%s' has joined round %d of the hrw rendezvous '%s' as rank %d in a "
                 "world of size %d (%d workers; rank 0 at %s:%d).", self.name, result.round,
                 self.run_id, result.rank, result.nnodes, result.world_size, result.master,
                 result.master_port)
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
        return self._waiting

    def get_run_id(self) -> str:
        return self.run_id

    def shutdown(self) -> bool:
        self._stop_watch()
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
                                  name="hrw-watch")
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
            if reason == "nodes_waiting":
                self._waiting = max(1, int((yield from self.protocol.count_waiting(result))))
            else:                           # the round ended (another member left it): rejoin
                self._waiting = max(1, self._waiting)
            self._emit(time.monotonic() - self._t0,
                       O.Emit(reason, round=result.round, detail={"waiting": self._waiting}))


def create_handler(params: RendezvousParameters) -> HrwRendezvousHandler:
    return HrwRendezvousHandler(params)


def handler_creator():
    """The `torchrun.handlers` entry point: a zero-argument factory of the handler creator."""
    return create_handler
