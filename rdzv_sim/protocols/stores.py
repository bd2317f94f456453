"""What an agent does about its store: the part the elastic agent asks, so that the agent loop
knows no protocol's store failover.

`OneStore` (every protocol's default): the store lives as long as the run; a lost store ends the
agent. A protocol that fails over (hrw's `store_failover`) gives its agents a part of its own
(`protocols/hrw/failover.py`, `AgentFailover`): it remembers the last round the agent was
assigned in and the store it was assigned on, and walks that round's successors when the store
is lost. Every method is what the agent asks at one point of its loop; `protocol.agent_stores()`
makes one for each agent process.
"""
from __future__ import annotations

from dataclasses import replace


class OneStore:
    """The run's one store: nothing to remember beyond the last round, nowhere to move to."""
    survives_store_loss = False         # a store lost under a running round ends the agent
    fence_timeout = float("inf")

    def __init__(self):
        self.last = None                # the last round this agent was assigned in (a RoundResult)

    def can_move(self, last) -> bool:
        """Whether the agent can look for its round's majority on another store."""
        return False

    def remembering(self, node, last):
        """The node's descriptor with the last round it was assigned in (a failover's fence;
        every hrw descriptor carries it)."""
        return node if last is None else replace(node, last=last.round, last_n=last.nnodes)

    def joined(self, result):
        """The agent was assigned in `result` (a generator: it may ask the store's address)."""
        self.remember(result)
        return None
        yield  # noqa: unreachable - a generator, as AgentFailover's

    def exited(self, last):
        """The rendezvous gave up, `last` the round it was assigned in meanwhile, if any."""
        self.remember(last)
        return None
        yield  # noqa: unreachable - a generator, as AgentFailover's

    def move(self, node):
        """Move to the next store (a generator): whether one answered. The run's one store: never."""
        return False
        yield  # noqa: unreachable - a generator, as AgentFailover's

    def forget(self) -> None:
        """The world went on without this agent: the round it knew is no fence."""
        self.last = None

    def remember(self, result, home=None) -> None:
        """The agent was assigned in `result` on the store at `home` ((addr, port), if known)."""
        if result is not None and result is not self.last:
            self.last = result
