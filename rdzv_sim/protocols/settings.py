"""What every protocol's settings model starts from (each protocol adds only what it uses)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt


class ProtocolSettings(BaseModel):
    """The `protocol:` section of a scenario. Subclass it with the fields your protocol reads;
    `name` is set to the registered name (a `Literal`) by `register_kit`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str
    run_id: str = Field("job", description="the job's id: every key lives under it")
    min_nodes: PositiveInt | None = Field(None, description="fewest hosts in a round (default: every node)")
    max_nodes: PositiveInt | None = Field(None, description="most hosts in a round (default: every node)")
    join_timeout: PositiveFloat = Field(600.0, description="seconds until a node gives up joining")

    def resolved(self, nodes: int) -> "ProtocolSettings":
        """These settings with min_nodes/max_nodes filled in for a cluster of `nodes` hosts."""
        return self.model_copy(update={"min_nodes": self.min_nodes or nodes,
                                       "max_nodes": self.max_nodes or nodes})

    def problems(self, scenario) -> list[tuple[tuple, str]]:
        """(YAML path, message) for what these settings cannot run in `scenario` (override it)."""
        return []

    def round_lines(self, scenario, rounds):
        """Which line of rounds each of `rounds` (round numbers) is in, or None: one line. A
        round's members are compared with the round before it in its line (shards and ranks
        moved); a per-step job's replica groups are lines of their own."""
        return None

    def round_sizes(self, scenario) -> tuple[int, int]:
        """Fewest and most hosts one round of `scenario` may hold (the safety checks' bounds)."""
        return (scenario.min_nodes, scenario.max_nodes)

    @property
    def fails_over(self) -> bool:
        """Whether its agents elect a successor store when theirs is lost (hrw's
        store_failover, which `failover_timeout` then times); the successors come with every
        RoundResult."""
        return False

    def round_time(self) -> float:
        """Seconds the protocol's own timers can add to one round after the faults stop (the
        liveness bound of `rdzv_sim.testing` adds the agent's and the store's)."""
        return 0.0

    def close_due(self, joins: list[float]) -> float | None:
        """When a round with no faults closes, from its members' join times (ascending, settings
        resolved); the prompt-round check of `rdzv_sim.testing` adds round trips. None: no promise."""
        return None
