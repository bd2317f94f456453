"""The scenario file, as typed pydantic models that reject unknown keys."""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, NonNegativeFloat, PositiveFloat,
                      PositiveInt, Tag, create_model, model_validator)

from ..cluster.settings import Lifecycle
from ..protocols.agent import AgentSettings as Agent
from ..protocols.hrw import HrwSettings
from ..protocols.settings import ProtocolSettings
from .faults import Fault


# Bounds on what can make a run explode; the reasons are in docs/scenarios.md's preamble.
MAX_NODES = 100_000             # hosts: 10^4 simulate in minutes; 10^5 is what memory holds
MAX_PROCS = 1024                # workers per host
MAX_SHARDS = 10_000_000         # shards placed after every round (an array of this many keys)
MAX_DURATION = 3.2e8            # ten years of simulated time
MAX_FAULTS = 10_000             # scheduled faults (each one is an event or two)
MAX_EVENTS = 1_000_000          # expected random interruptions over a run
MAX_TEXT = 10_000               # characters of a name or description


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Topology(Strict):
    kind: Literal["flat", "racks"] = "flat"   # flat: one switch; racks: hosts in racks behind spines
    # racks the hosts are spread over, in order (kind: racks)
    racks: Annotated[int, Field(ge=1, le=MAX_NODES)] = 1
    spines: Annotated[int, Field(ge=1, le=1024)] = 2   # spine switches a rack's traffic crosses (kind: racks)
    link_latency: NonNegativeFloat = 25e-6      # host <-> switch, one way, seconds
    spine_latency: NonNegativeFloat = 50e-6     # rack switch <-> spine
    jitter: NonNegativeFloat = 0.2              # each message: latency * (1 + jitter * U[0,1))


class Cpu(Strict):
    """Client CPU for encoding/decoding store values (torch: pickle + base64 of the c10d blob)."""
    base: NonNegativeFloat = 5e-6               # seconds per encode/decode (docs/cpu-model.md)
    per_byte: NonNegativeFloat = 20e-9          # seconds per byte encoded/decoded
    shared_cores: PositiveInt | None = None     # every host shares these cores (one-machine runs)
    # how: "fair" time-slices them as Linux does (a process woken from I/O runs first),
    # "sharing" runs every job at once at cores/k of a core
    # how the shared cores are shared: fair queueing, or processor sharing
    scheduler: Literal["fair", "sharing"] = "fair"
    # fair (rdzv_sim/models/cpu/fair.py; defaults for Linux 6.x EEVDF, 2 CPUs, HZ=250):
    slice: NonNegativeFloat = 1.4e-3            # EEVDF's base slice: 0.7 ms x (1 + log2 CPUs)
    tick: NonNegativeFloat = 4e-3               # 1 / CONFIG_HZ: when a used-up slice is cut (0: at once)
    preempt_rate: NonNegativeFloat = 120.0      # per second past the slice: cuts by wake-ups
    wakeup_preempt: Annotated[float, Field(ge=0.0, le=1.0)] = 0.10   # wake-ups taking a core at once
    cold_start: NonNegativeFloat = 0.0          # extra CPU of an agent's first encode/decode (cold code)
    # the client's cost of starting a wait on several things (the real runtime: threads and a
    # second connection for its branches); `rdzv-sim calibrate` measures it
    first_of: NonNegativeFloat = 0.0


class Cluster(Strict):
    nodes: Annotated[int, Field(ge=1, le=MAX_NODES)]   # hosts (at most 100,000)
    # workers (GPUs) a host runs: world size = nodes x this
    nproc_per_node: Annotated[int, Field(ge=1, le=MAX_PROCS)] = 8
    # how many start at t=0 (default: all)
    start_nodes: Annotated[int, Field(ge=1, le=MAX_NODES)] | None = None
    start_spread: NonNegativeFloat = 0.5        # starts spread uniformly over this many seconds
    topology: Topology = Topology()   # racks and spines (racks and rack faults need it)
    cpu: Cpu = Cpu()      # the hosts' shared CPU, for one-machine runs (docs/cpu-model.md)


class Store(Strict):
    """The store the agents meet at: one TCPStore, or a replicated store as etcd is (docs/stores.md)."""
    # `service(nbytes)` is the one service model: every runtime, the liveness bound, the estimate
    # tcpstore: one server (torchrun's c10d store) that lives on `host`; replicated: a Raft
    # cluster as etcd is, `replicas` members on `hosts` (docs/stores.md)
    # one TCPStore on one host, or a replicated (etcd-style) store: docs/stores.md
    kind: Literal["tcpstore", "replicated"] = "tcpstore"
    host: int | None = 0                        # node index hosting the store (None: a launcher)
    service_base: NonNegativeFloat = 20e-6       # seconds per request
    service_per_byte: NonNegativeFloat = 2e-9    # seconds per payload byte
    op_timeout: PositiveFloat = 30.0   # seconds a store call waits before it times out (TCPStore's timeout)
    replicas: Annotated[int, Field(ge=1, le=9)] = 3           # replicated: members (odd, >= 3)
    hosts: list[int] | None = None              # replicated: nodes hosting members (None: outside the job)
    election_timeout: PositiveFloat = 1.0       # replicated: a leader silent this long is replaced
    heartbeat_interval: PositiveFloat = 0.1     # replicated: the leader's beat to its followers
    commit_time: NonNegativeFloat = 1e-3        # replicated: a quorum round trip and the log's fsync

    def service(self, nbytes):
        """Seconds the server spends on a request carrying `nbytes` payload bytes (or an array)."""
        return self.service_base + self.service_per_byte * nbytes


class Shards(Strict):
    # shards the placement policies assign to the members (0: no placement tables)
    count: Annotated[int, Field(ge=0, le=MAX_SHARDS)] = 1024
    # the policies compared: rendezvous hashing, modulo, a consistent-hash ring
    policies: list[Literal["hrw", "modulo", "ring"]] = ["hrw", "modulo", "ring"]
    ring_vnodes: Annotated[int, Field(ge=1, le=4096)] = 64   # virtual nodes a host has on the ring


class Training(Strict):
    """The training job, for ETTR and goodput (docs/training.md)."""
    checkpoint_interval: PositiveFloat = 1800.0   # seconds of training between checkpoints
    checkpoint_cost: NonNegativeFloat = 60.0      # seconds each checkpoint stalls training
    checkpoint: Literal["sync", "async", "in_memory"] = "sync"   # how checkpoints are taken
    persist_time: NonNegativeFloat = 0.0          # async, in_memory: seconds the background write takes
    persist_every: PositiveInt = 1                # in_memory: every k-th snapshot is also written
    load_time: NonNegativeFloat = 0.0             # seconds to load the written checkpoint on a restart
    peer_load_time: NonNegativeFloat = 0.0        # in_memory: seconds to load a peer's copy
    # relative throughput against hosts: linear, or a table {hosts: throughput}
    scaling: Literal["linear"] | dict[PositiveInt, PositiveFloat] = "linear"
    model_parallel_nodes: PositiveInt = 1         # hosts per model replica (TP x PP): sizes are multiples
    valid_sizes: list[PositiveInt] | None = None  # the only sizes the job can run at (None: any)


class Scheduler(Strict):
    """The cluster scheduler around the job (Slurm, Kubernetes): warm spares, requeueing a job
    that died, draining hosts that keep failing."""
    # extra hosts started with the job beyond max_nodes: their agents wait, warm, and a failed
    # member's place goes to one of them at the next round (torchrun's --nnodes=MIN:MAX + spares)
    hot_spares: Annotated[int, Field(ge=0, le=MAX_NODES)] = 0
    # what a spare is: a host, a whole NVLink segment (`segment` hosts), or a whole rack (a rack
    # of the job's size, added beside its racks: cluster.topology.racks counts the job's only)
    hot_spares_unit: Literal["hosts", "segments", "racks"] = "hosts"
    # when the job is dead (no agent left, or a job-level interruption that requeues), the
    # scheduler starts every host's agent again after this long; None: the job stays dead
    requeue_delay: NonNegativeFloat | None = None
    # a host that failed this many times is drained: never repaired, restarted or requeued
    exclude_after: PositiveInt | None = None
    # a host whose steps run at least this many times slower (a `straggler`) is drained once it
    # has been that slow for `drain_after` seconds (a health check cordoning it): its agent and
    # workers stop, it is never started again, the next round forms without it. None: never
    drain_slower_than: Annotated[float, Field(gt=1.0, le=1000.0)] | None = None
    drain_after: NonNegativeFloat = 60.0   # seconds a host stays that slow before it is drained
    # hosts in one NVLink domain: an in-process restart keeps the active world a multiple of it
    # (NVRx's ActiveWorldSizeDivisibleBy), and min_nodes must be one too
    segment: PositiveInt = 1


class Outputs(Strict):
    dir: str | None = None                      # default: runs/<name>
    formats: list[Literal["parquet", "csv"]] = ["parquet"]   # add csv for CSV copies (`--csv`)
    # lean: each host's rendezvous_start and confirmed (steps no table reads) are not recorded,
    # its join, rank, workers and leaving are (docs/simulating.md)
    events: Literal["all", "lean"] = "all"   # which of each host's round events the table keeps
    # rounds: what is the same for every member of a round the aggregate fidelity forms (its
    # digest, master and size) is recorded once, on its round_closed row; hosts: on each
    # member's rank_assigned row as well (docs/simulating.md)
    trace: Literal["rounds", "hosts"] = "rounds"
    # a run of 10^8 rows in a few GB; the result then holds no events table in memory, and
    # events.parquet is written from disk (docs/simulating.md)
    # the events to disk as the run goes, the tables folded from there
    stream: bool = False                  




class NodeFailures(Strict):
    """Each node fails independently; time between failures drawn from the distribution."""
    kind: Literal["node_failures"] = "node_failures"
    # how the time between one node's failures is drawn
    distribution: Literal["exponential", "weibull"] = "exponential"
    mtbf: PositiveFloat                          # mean time between failures per node, seconds
    shape: PositiveFloat = 1.0                   # Weibull shape (1.0 = exponential)
    repair: PositiveFloat | None = 600.0         # restart after this long (None: never)
    nodes: list[int] | None = None               # default: every node

    def rates(self, sc) -> tuple[float, float]:
        """Incidents a second of the run: (those the estimate counts as two rounds, a failure
        and a return; those it counts as one). Their sum is the job's failure rate."""
        return (len(self.nodes) if self.nodes is not None else sc.hosts) / self.mtbf, 0.0


class Interruptions(Strict):
    """`count` interruptions expected over the run (a Poisson process), each hitting one random
    node (a crash, repaired after `repair`), one random rack, or the whole job (every node's
    workers fail at once, as a software bug or an NCCL watchdog does)."""
    kind: Literal["interruptions"] = "interruptions"
    cause: str   # a label of the interruptions table (a published cause: gpu_hbm3, ...)
    # interruptions expected over `per` seconds (a Poisson process); or give per_gpu_day
    count: Annotated[float, Field(ge=0, le=MAX_EVENTS)] | None = None
    per: PositiveFloat | None = None             # seconds the count is for (default: the run)
    # the published form: interruptions a GPU a day (Llama 3's 419 in 54 days at 16,384 GPUs:
    # about 4.7e-4); the run's count is this x its GPUs (cluster.nodes x nproc_per_node) x days
    per_gpu_day: Annotated[float, Field(gt=0, le=1.0)] | None = None
    # what one hits: a random node, a random rack, or the whole job
    scope: Literal["node", "rack", "job"] = "node"
    repair: PositiveFloat | None = 600.0   # seconds until the node (or rack) is back (None: never)
    # job scope only: the job is killed and requeued by the scheduler (scheduler.requeue_delay)
    # instead of its workers failing in place (a planned restart, a bad software push)
    requeue: bool = False
    # node and rack scope: seconds until the peers' collectives fail (a watchdog, fast failure
    # detection); None: agent.collective_timeout, as when a host vanishes
    detection: PositiveFloat | None = None
    # node and rack scope: the hosts' devices are left unusable (a sticky CUDA error): an
    # in-process restart cannot absorb it (agent.recovery); in_job: a crash as any
    device_unusable: bool = False

    @model_validator(mode="after")
    def _one_rate(self):
        if (self.count is None) == (self.per_gpu_day is None):
            raise ValueError("give either count (over `per` seconds) or per_gpu_day, not both")
        if self.per_gpu_day is not None and self.per is not None:
            raise ValueError("per is the seconds a count is for: per_gpu_day needs none")
        return self

    def mean_gap(self, sc) -> float | None:
        """Seconds between interruptions on average (None: there are none)."""
        if self.per_gpu_day is not None:
            return 86400.0 / (self.per_gpu_day * sc.cluster.nodes * sc.cluster.nproc_per_node)
        return (self.per or sc.duration) / self.count if self.count > 0 else None

    def rate(self, sc) -> float:
        """Interruptions a second of the run."""
        if self.per_gpu_day is not None:
            return self.per_gpu_day * sc.cluster.nodes * sc.cluster.nproc_per_node / 86400.0
        return self.count / (self.per or sc.duration)

    def rates(self, sc) -> tuple[float, float]:
        """As `NodeFailures.rates`: a repaired host or rack comes back (two rounds)."""
        rate = self.rate(sc)
        return (rate, 0.0) if self.scope != "job" and self.repair is not None else (0.0, rate)


class IncidentLog(Strict):
    """A team's incident log (docs/incidents.md) replayed: each incident at its logged time
    (stretched onto the run when `stretch`), a named host always onto the same simulated host,
    an unnamed one onto a random live host; `log_hosts` scales a log taken on another number
    of hosts to `cluster.nodes`. The plan is `rdzv_sim.incidents.replay_plan`."""
    kind: Literal["incident_log"]
    log: Annotated[str, Field(min_length=1, max_length=4096)]   # CSV or Parquet, beside the scenario
    log_hosts: PositiveInt | None = None         # hosts the log was taken on (None: as many as here)
    span: PositiveFloat | None = None            # seconds the log watched (None: to its last incident)
    stretch: bool = False                        # the log's span onto the run's duration
    repair: PositiveFloat | None = 600.0         # a row without repair_s (None: never repaired)
    detection: PositiveFloat | None = None       # a row without detection_s (None: as interruptions)

    def rates(self, sc) -> tuple[float, float]:
        """As `NodeFailures.rates`: the log's host and rack incidents, its job ones."""
        from ..incidents import logged, replay_rates
        return replay_rates(logged(self.log), self, nodes=sc.cluster.nodes, duration=sc.duration)


def _random_kind(v) -> str:
    return (v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)) or "node_failures"


RandomFault = Annotated[Union[Annotated[NodeFailures, Tag("node_failures")],
                              Annotated[Interruptions, Tag("interruptions")],
                              Annotated[IncidentLog, Tag("incident_log")]],
                        Discriminator(_random_kind)]


class Scenario(Strict):
    include: list[str] = []                      # YAML files merged underneath (e.g. a calibration)
    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]  # names the outputs (runs/<name>) and the tables
    # what the scenario shows, for `rdzv-sim list`
    description: Annotated[str, Field(max_length=MAX_TEXT)] = ""
    # the --set overrides applied since it was written (its description may not say them)
    overridden: Annotated[list[Annotated[str, Field(max_length=1000)]], Field(max_length=1000)] = []
    seed: Annotated[int, Field(ge=0)] = 0        # every random draw flows from it
    duration: Annotated[float, Field(gt=0, le=MAX_DURATION)]   # simulated seconds (at most ten years)
    cluster: Cluster                             # the hosts, their GPUs, topology and CPU
    store: Store = Store()                       # the rendezvous store
    # the registered protocol's own settings model (a union over the registry: see `model()`)
    protocol: ProtocolSettings = HrwSettings()   # the protocol and its own settings
    agent: Agent = Agent()                       # the elastic agent (torchrun's)
    shards: Shards = Shards()                    # what placement policies assign to members
    training: Training | None = None             # the training job, for goodput
    scheduler: Scheduler = Scheduler()           # Slurm / Kubernetes around the job
    # the cluster around the job: repairs, bad hosts, retirement, selection, a spare pool,
    # diagnosis (docs/cluster.md); None: hosts come back from repair as the faults say
    lifecycle: Lifecycle | None = None
    # per_operation: every store request simulated (exact); aggregate: a round's requests as
    # batches on a FIFO queue, the job as one state machine (fast; its error is in
    # reports/sim_speed.md). Aggregate models hrw with crashes, restarts, worker failures.
    fidelity: Literal["per_operation", "aggregate"] = "per_operation"   # docs/fidelities.md
    faults: Annotated[list[Fault], Field(max_length=MAX_FAULTS)] = []   # scheduled faults (kinds below)
    # failure processes drawn from the seed
    random_faults: Annotated[list[RandomFault], Field(max_length=100)] = []
    outputs: Outputs = Outputs()                 # where and in which formats tables go

    def __reduce__(self):
        """Pickled as its data: the validating class is rebuilt from the registry (`model()`)."""
        return (_revalidate, (self.model_dump(mode="json"),))

    @property
    def hosts(self) -> int:
        """Hosts simulated: the job's nodes and the scheduler's hot spares, and with a
        lifecycle the rest of the working pool and the spare pool."""
        lc = self.lifecycle
        if lc is None:
            return self.started_hosts
        return max(self.started_hosts, lc.working_pool or 0) + lc.spare_pool.hosts

    @property
    def started_hosts(self) -> int:
        """Hosts whose agents start with the job: its nodes and the hot spares."""
        return self.cluster.nodes + self.spare_hosts

    @property
    def spare_hosts(self) -> int:
        """The hot spares in hosts: `hot_spares` hosts, segments or racks."""
        unit = self.scheduler.hot_spares_unit
        size = (self.scheduler.segment if unit == "segments" else
                max(1, self.cluster.nodes // self.cluster.topology.racks) if unit == "racks" else 1)
        return self.scheduler.hot_spares * size

    @property
    def racks(self) -> int:
        """Racks simulated: the job's, and whole spare racks beside them."""
        spare = self.scheduler.hot_spares if self.scheduler.hot_spares_unit == "racks" else 0
        return self.cluster.topology.racks + spare

    @property
    def min_nodes(self) -> int:
        return self.protocol.min_nodes or self.cluster.nodes

    @property
    def max_nodes(self) -> int:
        return self.protocol.max_nodes or self.cluster.nodes


def _revalidate(data: dict) -> "Scenario":
    return model().model_validate(data)


def _protocol_tag(v) -> str | None:
    if isinstance(v, dict):
        return v.get("name", "hrw")
    return getattr(v, "name", None)


_MODEL: dict = {}


def model() -> type[Scenario]:
    """`Scenario` with `protocol:` validated by the registered protocol's settings model: a
    discriminated union on `protocol.name`, rebuilt whenever a protocol is registered."""
    from ..protocols.registry import specs, version
    known = specs()
    if _MODEL.get("version") != version():
        union = Union[tuple(Annotated[s.settings, Tag(n)] for n, s in sorted(known.items()))]
        names = ", ".join(sorted(known))
        field = Annotated[union, Discriminator(
            _protocol_tag, custom_error_type="unknown_protocol",
            custom_error_message=f"unknown protocol; registered: {names}",
            custom_error_context={"registered": names})]
        _MODEL["cls"] = create_model("Scenario", __base__=Scenario, __module__=__name__,
                                     protocol=(field, HrwSettings()))
        _MODEL["version"] = version()
    return _MODEL["cls"]
