"""The hosts of a replica group meet by `hrw`, one run per group; the groups meet every step.

torchft's shape: every replica group (a data-parallel replica: the hosts of one HSDP shard
group) is a small job of its own, with its own rendezvous, that fails and restarts as one;
across groups, a Lighthouse forms a quorum of the live groups at every step, so a group that
dies drops out at the next step boundary and the others train on without a restart.

Here group g is the hosts with cluster index in [g * group_size, (g + 1) * group_size); a hot
spare belongs to one group, round-robin. Group g runs `hrw` under `<run_id>/g<g>` with
min = max = group_size, its rounds numbered g, g + G, g + 2G, ... (G groups), so a round
number names its group (`group_of_round`) and every round of the job has its own. The
quorum itself is not store traffic: torchft's Lighthouse is a service of its own, and its
per-step RPC is a per-step cost (`quorum_cost`); its decisions are `lighthouse.py`, replayed
over the groups' lives (`rdzv_sim/training/quorum.py`).
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from ..base import NodeInfo, Protocol, RoundResult, Watch
from ..hrw import HrwProtocol, HrwSettings
from ..kit import Capabilities, Kit
from ..registry import register_kit


class QuorumSettings(HrwSettings):
    """Settings of the `quorum` protocol (torchft's Lighthouse and Manager; seconds, bytes).
    The hrw settings apply inside each replica group."""
    name: Literal["quorum"] = "quorum"
    group_size: PositiveInt = Field(1, description="hosts per replica group: they fail and restart together")
    min_replicas: PositiveInt = Field(1, description="fewest groups the Lighthouse forms a quorum of (torchft's "
                                      "min_replicas)")
    min_replica_size: PositiveInt | None = Field(None, description="torchft Manager's min_replica_size: a step "
                                                 "commits only with this many participating groups (a healing "
                                                 "group does not participate); None: min_replicas")
    quorum_join_timeout: NonNegativeFloat = Field(60.0, description="the Lighthouse waits this long for heartbeating "
                                                  "groups that have not asked to join (torchft's join_timeout_ms)")
    heartbeat_timeout: PositiveFloat = Field(5.0, description="a group whose heartbeat is this old is dead to the Lighthouse")
    quorum_tick: PositiveFloat = Field(0.1, description="how often the Lighthouse looks again while it waits")
    step_time: PositiveFloat = Field(5.0, description="seconds of one training step")
    quorum_cost: NonNegativeFloat = Field(0.01, description="seconds every step spends on its quorum call")
    reconfigure_time: NonNegativeFloat = Field(1.0, description="seconds to configure the collectives of a new quorum")
    state_bytes: NonNegativeFloat = Field(0.0, description="one replica's training state, which a recovering group "
                                          "fetches from a live peer, spread evenly over its hosts")
    heal_bandwidth: PositiveFloat = Field(25e9, description="bytes/s each host of a healing group fetches at")
    async_quorum: bool = Field(True, description="torchft Manager's use_async_quorum: the quorum call and a "
                               "recovering group's heal overlap the step's compute; the healthy groups wait "
                               "only for what the heal takes beyond it (the healing group trains along, "
                               "contributing nothing, until healed); with sync_every > 1 nothing overlaps: "
                               "LocalSGD and DiLoCo all-reduce right after their quorum")
    sync_every: PositiveInt = Field(1, description="steps between synchronisations (torchft's LocalSGD / DiLoCo "
                                    "sync_every; 1: every step, as DDP / HSDP): the quorum and the all-reduce come "
                                    "at each window's end, as torchft 0.2.0 asks them; the survivors of a death "
                                    "mid-window commit the window without the dead group")
    init_sync: bool = Field(True, description="torchft Manager's init_sync: the job's first quorum syncs every "
                            "group but one from it")
    quorum_timeout: PositiveFloat = Field(60.0, description="torchft Manager's quorum_timeout: a quorum call that "
                                          "gets no answer raises after it (the training process dies)")
    quorum_retries: Annotated[int, Field(ge=0, le=1000)] = Field(0, description="torchft Manager's quorum_retries: "
                                                              "a failed Lighthouse call is retried this many times, "
                                                              "spread over quorum_timeout, before the call fails")
    lighthouse_ids: Literal["restart", "unique"] = Field(
        "restart", description="a restarted Lighthouse's quorum ids: 'restart' numbers them from 1 "
        "again (torchft 0.2.0, and its main branch as of 2026-04): a group whose last id comes "
        "again keeps its process group, and that quorum's first step fails; 'unique' never gives "
        "an id twice (a fix torchft does not ship)")
    stale_connect_timeout: PositiveFloat = Field(
        25.0, description="seconds a group making a new process group under a reused quorum id waits when "
        "the store it is told to use still holds that id's keys, naming the old process group's addresses: "
        "Gloo's connect to them gives up after this (measured with torchft 0.2.0 and timeout 5 s: "
        "reports/validation/validate-quorum-lighthouse/runs.md); meanwhile the others form a quorum without it")
    timeout: PositiveFloat = Field(60.0, description="torchft Manager's timeout: a step whose collective hangs "
                                   "on a group that vanished fails after it (a killed process's fails as "
                                   "fast as the group's own peers notice it)")

    def groups(self, hosts: int) -> int:
        """How many replica groups a job of `hosts` hosts has; round r is group r % groups."""
        return max(1, hosts // self.group_size)

    def round_lines(self, scenario, rounds):
        """A round follows its group's round before it, not the job's."""
        return rounds % self.groups(scenario.max_nodes)

    def round_sizes(self, scenario) -> tuple[int, int]:
        """Every round is one replica group's."""
        return (self.group_size, self.group_size)

    @property
    def heal_time(self) -> float:
        """Seconds a recovering group spends fetching its state from a live peer."""
        return self.state_bytes / self.group_size / self.heal_bandwidth

    def problems(self, sc) -> list[tuple[tuple, str]]:
        out = []
        n, g = sc.cluster.nodes, self.group_size
        if n % g:
            out.append((("protocol", "group_size"), f"{g} does not divide cluster.nodes ({n}): every host "
                        "belongs to one replica group"))
        elif self.min_replicas > n // g:
            out.append((("protocol", "min_replicas"), f"{self.min_replicas} is more than the {n // g} replica groups"))
        elif (self.min_replica_size or 0) > n // g:
            out.append((("protocol", "min_replica_size"),
                        f"{self.min_replica_size} is more than the {n // g} replica groups: no step would commit"))
        if self.max_nodes not in (None, n):
            out.append((("protocol", "max_nodes"), "the quorum protocol's job is every host: leave max_nodes out"))
        if self.min_nodes not in (None, n):
            out.append((("protocol", "min_nodes"), "the quorum protocol's floor is min_replicas: leave min_nodes out"))
        if self.store_failover:
            out.append((("protocol", "store_failover"), "the quorum protocol's groups do not fail over"))
        for i, f in enumerate(sc.faults):
            if f.kind == "straggler":
                out.append((("faults", i, "kind"), "the quorum protocol's training model does not charge "
                            "stragglers yet"))
        tr = sc.training
        if tr is not None and g % tr.model_parallel_nodes:
            out.append((("protocol", "group_size"), f"a replica group of {g} hosts cannot hold a model replica "
                        f"of training.model_parallel_nodes = {tr.model_parallel_nodes}"))
        if tr is not None and (tr.valid_sizes is not None or tr.checkpoint == "in_memory"):
            out.append((("training", "valid_sizes" if tr.valid_sizes is not None else "checkpoint"),
                        "the quorum protocol's training model takes any number of groups and restarts "
                        "from a written checkpoint (sync or async)"))
        return out


class QuorumProtocol(Protocol):
    """Per-step quorum over replica groups; each group's hosts meet by hrw (see the module)."""
    name = "quorum"

    def __init__(self, cfg: QuorumSettings):
        super().__init__(cfg)
        self.groups = cfg.groups(cfg.max_nodes)
        self._inner: dict[int, HrwProtocol] = {}

    # --- which group -------------------------------------------------------------------
    def group_of(self, node: NodeInfo) -> int:
        """A job host's group by its cluster index; a spare's round-robin."""
        size, hosts = self.cfg.group_size, self.cfg.max_nodes
        return node.index // size if node.index < hosts else (node.index - hosts) % self.groups

    def group_of_round(self, rnd: int) -> int:
        return rnd % self.groups

    def group(self, g: int) -> HrwProtocol:
        """Group g's own hrw: its keys under <run_id>/g<g>, its rounds g, g + G, ..."""
        p = self._inner.get(g)
        if p is None:
            size = self.cfg.group_size
            shared = {k: v for k, v in self.cfg.model_dump().items()
                      if k in HrwSettings.model_fields and k != "name"}
            hrw = HrwSettings(**{**shared, "run_id": f"{self.cfg.run_id}/g{g}",
                                 "min_nodes": size, "max_nodes": size})
            p = self._inner[g] = HrwProtocol(hrw)
            p.first_round, p.round_step = g, self.groups
        return p

    def _of(self, result: RoundResult) -> HrwProtocol:
        return self.group(self.group_of_round(result.round))

    # --- the Protocol interface, group by group ----------------------------------------
    def rendezvous(self, node: NodeInfo):
        return (yield from self.group(self.group_of(node)).rendezvous(node))

    def watch(self, result: RoundResult, state=None, node: NodeInfo | None = None) -> list[Watch]:
        return self._of(result).watch(result, state, node)

    def answer(self, result: RoundResult, watch: Watch, node: NodeInfo):
        return (yield from self._of(result).answer(result, watch, node))

    def end_round(self, result: RoundResult, reason: str, node: NodeInfo | None = None):
        yield from self._of(result).end_round(result, reason, node)

    def count_waiting(self, result: RoundResult):
        return (yield from self._of(result).count_waiting(result))

    def leave(self, result: RoundResult, node: NodeInfo):
        yield from self._of(result).leave(result, node)

    def clean_up(self, result: RoundResult):
        yield from self._of(result).clean_up(result)


register_kit(Kit("quorum", QuorumProtocol, QuorumSettings, Capabilities(
    fidelities=("per_operation", "aggregate"), deterministic=True, lighthouse=True,
    torchrun="its replica groups train under torchft's Manager (real_backend.torchft_run)"), parts={
    "round_model": "rdzv_sim.aggregate.quorum_rounds:QuorumRounds",
    "training": "rdzv_sim.training.quorum:evaluate_quorum",
    "settings_strategy": "rdzv_sim.testing.strategies:quorum_settings",
    "invariants": "rdzv_sim.testing.invariants:QUORUM",
    "cost/aggregate": "rdzv_sim.estimate:QUORUM_AGGREGATE",
    "real/validate": "real_backend.quorum_validate:validate_quorum"}))
