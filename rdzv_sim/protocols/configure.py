"""A scenario's protocol and agent settings as the sans-IO objects every runtime drives."""
from __future__ import annotations

from . import get
from .agent import AgentConfig
from .base import ProtocolConfig


def protocol_for(sc):
    """The scenario's protocol object (the simulated and the real runtime share it)."""
    p = sc.protocol
    return get(p.name)(ProtocolConfig(
        run_id=p.run_id, min_nodes=sc.min_nodes, max_nodes=sc.max_nodes,
        last_call_timeout=p.last_call_timeout, join_timeout=p.join_timeout,
        confirm_timeout=p.confirm_timeout, close_grace=p.close_grace, hole_grace=p.hole_grace,
        probe_interval=p.probe_interval, probe_timeout=p.probe_timeout,
        keep_alive_interval=p.keep_alive_interval, keep_alive_max_attempt=p.keep_alive_max_attempt))


def agent_config_for(sc) -> AgentConfig:
    a = sc.agent
    return AgentConfig(max_restarts=a.max_restarts, monitor_interval=a.monitor_interval,
                       retry_backoff=a.retry_backoff, max_rendezvous_attempts=a.max_rendezvous_attempts)
