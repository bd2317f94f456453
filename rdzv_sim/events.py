"""Every event a trace can hold, one place: its name, its detail fields, what it means.

Both fidelities and the real runtime write events through the trace (`rdzv_sim.trace`), which
refuses a name that is not here: a new event is a line in this table. Values are `str`, so the
tables keep plain strings and `Event.JOIN == "join"`.
"""
from __future__ import annotations

from enum import Enum


class Event(str, Enum):
    __str__ = str.__str__                # its value, as text (f-strings, logs)
    __format__ = str.__format__
    # the agent and its rendezvous
    NODE_START = "node_start"
    RENDEZVOUS_START = "rendezvous_start"
    JOIN = "join"
    WAITING = "waiting"
    ROUND_CLOSED = "round_closed"
    CONFIRMED = "confirmed"
    RANK_ASSIGNED = "rank_assigned"
    WORKERS_STARTED = "workers_started"
    ROUND_LEFT = "round_left"
    IN_PROCESS_RESTART = "in_process_restart"   # a world restarts in place (NVRx), no store round
    SHRINK = "shrink"                           # a world shrinks its communicator, no store round
    RECOVERY_FALLBACK = "recovery_fallback"     # a failure the mode does not absorb: restart in job
    REFORM_DUE = "reform_due"          # torchrun's handler: a reason to re-form (its agent decides)
    ROUND_STALE = "round_stale"
    STAND_IN_CLOSE = "stand_in_close"
    MEMBERS_LOST = "members_lost"
    NO_QUORUM = "no_quorum"
    C10D_DEAD_NODES = "c10d_dead_nodes"
    BAD_VALUE = "bad_value"
    RENDEZVOUS_FAILED = "rendezvous_failed"
    RENDEZVOUS_TIMEOUT = "rendezvous_timeout"
    RENDEZVOUS_CLOSED = "rendezvous_closed"
    STORE_TIMEOUT = "store_timeout"
    STORE_LOST = "store_lost"
    STORE_FAILOVER = "store_failover"
    STORE_FAILOVER_FAILED = "store_failover_failed"
    AGENT_EXIT = "agent_exit"
    AGENT_STOPPED = "agent_stopped"
    PG_READY = "pg_ready"
    PG_FAILED = "pg_failed"
    # faults and their ends
    FAULT_CRASH = "fault_crash"
    FAULT_PAUSE = "fault_pause"
    NODE_RESUMED = "node_resumed"
    FAULT_PARTITION = "fault_partition"
    PARTITION_HEALED = "partition_healed"
    FAULT_PARTITION_NODE = "fault_partition_node"      # real runs: one node's side of a cut
    PARTITION_NODE_HEALED = "partition_node_healed"
    FAULT_LATENCY = "fault_latency"
    LATENCY_HEALED = "latency_healed"
    FAULT_LOSS = "fault_loss"
    LOSS_HEALED = "loss_healed"
    FAULT_RACK_FAILURE = "fault_rack_failure"
    FAULT_CLOCK_SKEW = "fault_clock_skew"
    FAULT_WORKER_FAILURE = "fault_worker_failure"
    FAULT_AGENT_FAILURE = "fault_agent_failure"
    FAULT_PREEMPTION = "fault_preemption"
    FAULT_STRAGGLER = "fault_straggler"
    STRAGGLER_HEALED = "straggler_healed"
    FAULT_JOB_INTERRUPTION = "fault_job_interruption"
    FAULT_LIGHTHOUSE_CRASH = "fault_lighthouse_crash"   # torchft's Lighthouse process gone
    LIGHTHOUSE_RESTARTED = "lighthouse_restarted"
    # the store
    STORE_STARTED = "store_started"
    FAULT_STORE_CRASH = "fault_store_crash"
    FAULT_STORE_PAUSE = "fault_store_pause"
    STORE_RESUMED = "store_resumed"
    FAULT_STORE_MEMBER_PAUSE = "fault_store_member_pause"
    STORE_MEMBER_LOST = "store_member_lost"
    STORE_MEMBER_BACK = "store_member_back"
    STORE_MEMBER_RESUMED = "store_member_resumed"
    STORE_LEADER_ELECTED = "store_leader_elected"
    STORE_LEADER_LOST = "store_leader_lost"
    # the scheduler
    NODE_EXCLUDED = "node_excluded"
    JOB_FAILED = "job_failed"
    JOB_REQUEUED = "job_requeued"
    # the cluster around the job (rdzv_sim/cluster)
    HOST_REPAIRED = "host_repaired"            # out of the repair pipeline (fixed or not)
    HOST_RETIRED = "host_retired"              # never chosen again
    HOSTS_SELECTED = "hosts_selected"          # the scheduler chose hosts for the job
    HOST_PREEMPTED = "host_preempted"          # a spare pool's host taken from its other work
    HOST_UNDIAGNOSED = "host_undiagnosed"      # a failure pinned on nobody: its host goes back as it is
    HOST_MISDIAGNOSED = "host_misdiagnosed"    # a healthy host blamed for another's failure


E = Event
# the fields an event's `detail` may carry (none listed: it carries none)
DETAIL: dict[Event, tuple[str, ...]] = {
    E.NODE_START: ("why",), E.RENDEZVOUS_START: ("restarts",), E.JOIN: ("slot",),
    E.WAITING: ("slot", "waiting"),
    # a round's facts (digest, master, nnodes), where a runtime records them once a round
    E.ROUND_CLOSED: ("count", "digest", "holes", "master", "members", "nnodes"),
    E.CONFIRMED: ("cas_attempts",),
    E.RANK_ASSIGNED: ("digest", "first_rank", "latency", "master", "nnodes"),
    E.ROUND_LEFT: ("reason",), E.IN_PROCESS_RESTART: ("fault",), E.SHRINK: ("fault",),
    E.RECOVERY_FALLBACK: ("fault", "why"), E.REFORM_DUE: ("reason", "waiting"), E.STAND_IN_CLOSE: ("slot",), E.MEMBERS_LOST: ("probe",),
    E.NO_QUORUM: ("members",), E.C10D_DEAD_NODES: ("removed",), E.BAD_VALUE: ("key", "reason"),
    E.RENDEZVOUS_FAILED: ("reason",), E.RENDEZVOUS_TIMEOUT: ("reason",), E.RENDEZVOUS_CLOSED: ("reason",),
    E.STORE_TIMEOUT: ("reason",), E.STORE_LOST: ("reason",),
    E.STORE_FAILOVER: ("epoch", "serve", "store"), E.STORE_FAILOVER_FAILED: ("epoch", "reason"),
    E.AGENT_EXIT: ("reason",), E.PG_READY: ("allreduce_ok", "allreduce_s", "backend", "init_s"),
    E.PG_FAILED: ("error",),
    E.FAULT_CRASH: ("cause", "unusable"), E.FAULT_PAUSE: ("duration",), E.FAULT_PARTITION: ("duration", "hosts"),
    E.PARTITION_HEALED: ("hosts",), E.FAULT_LATENCY: ("delay", "duration", "hosts"),
    E.LATENCY_HEALED: ("hosts",), E.FAULT_LOSS: ("duration", "hosts", "rate", "rto"),
    E.LOSS_HEALED: ("held", "hosts"), E.FAULT_RACK_FAILURE: ("hosts",), E.FAULT_CLOCK_SKEW: ("offset",),
    E.FAULT_PREEMPTION: ("notice",), E.FAULT_STRAGGLER: ("duration", "slowdown"),
    E.FAULT_JOB_INTERRUPTION: ("cause",), E.FAULT_LIGHTHOUSE_CRASH: ("duration",),
    E.FAULT_STORE_CRASH: ("cause", "leader", "member"), E.FAULT_STORE_PAUSE: ("duration",),
    E.FAULT_STORE_MEMBER_PAUSE: ("leader", "member"), E.STORE_MEMBER_LOST: ("leader", "member"),
    E.STORE_MEMBER_BACK: ("member",), E.STORE_MEMBER_RESUMED: ("member",),
    E.STORE_LEADER_ELECTED: ("member",), E.STORE_LEADER_LOST: ("member",),
    E.NODE_EXCLUDED: ("failures", "slowdown", "why"), E.JOB_FAILED: ("why",),
    E.HOST_REPAIRED: ("fixed", "stages", "took"), E.HOST_RETIRED: ("failures",),
    E.HOSTS_SELECTED: ("count", "preempted"), E.HOST_MISDIAGNOSED: ("failed",),
}
# events whose `latency` field is kept as the events table's `latency` number column, not in
# their JSON detail: a value each row has its own of, which as text would make every row's
# detail distinct (details are held once each) and be parsed back by every reader
LATENCY: frozenset[str] = frozenset({E.RANK_ASSIGNED.value})
NAMES = {e.value for e in Event}
OWN: dict[str, tuple[str, ...]] = {}      # events a protocol of its own registered: name -> fields


class UnknownEvent(ValueError):
    """An event name that `rdzv_sim.events.Event` does not list and no protocol registered, or
    a detail field its line in `DETAIL` does not name."""


_FIELDS = {e.value: frozenset(f) for e, f in DETAIL.items()}
_NONE: frozenset = frozenset()


def fields(name: str) -> frozenset:
    """The detail fields event `name` may carry."""
    return _FIELDS.get(name) or (frozenset(OWN[name]) if name in OWN else _NONE)


def check_detail(name: str, detail: dict) -> None:
    """Refuse a detail field that event `name` does not carry (a misspelt one would become a
    column nobody reads)."""
    allowed = fields(name)
    if not detail.keys() <= allowed:
        extra = sorted(set(detail) - allowed)
        raise UnknownEvent(f"event {name!r} carries no detail {', '.join(map(repr, extra))}: its fields are "
                           f"{sorted(allowed) or 'none'} (rdzv_sim/events.py, DETAIL; or "
                           "register_event for a protocol's own)")


def register_event(name: str, fields: tuple[str, ...] = ()) -> None:
    """Let a protocol of your own emit event `name` (with these detail fields)."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name.islower():
        raise ValueError(f"register_event({name!r}): an event name is lower_case_with_underscores")
    OWN[name] = tuple(fields)
    NAMES.add(name)


def check(name) -> str:
    """The event's name (an `Event` or its string); UnknownEvent when it is not an event."""
    name = name.value if isinstance(name, Event) else name
    if name not in NAMES:
        raise UnknownEvent(f"event {name!r} is not one of rdzv_sim.events.Event: add it there "
                           "(with its detail fields), or register your protocol's own with "
                           "rdzv_sim.events.register_event, before a runtime records it")
    return name
