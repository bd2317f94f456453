"""A scenario's protocol and agent settings as the sans-IO objects every runtime drives."""
from __future__ import annotations

from .agent import AgentConfig
from .registry import get


def protocol_for(sc):
    """The scenario's protocol object (the simulated and the real runtime share it)."""
    return get(sc.protocol.name).make(sc.protocol.resolved(sc.cluster.nodes))


def agent_config_for(sc) -> AgentConfig:
    a = sc.agent
    return AgentConfig(max_restarts=a.max_restarts, monitor_interval=a.monitor_interval,
                       retry_backoff=a.retry_backoff, max_rendezvous_attempts=a.max_rendezvous_attempts)
