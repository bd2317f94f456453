"""Why an agent leaves a running round: a local signal, or a watch its protocol set (the
`round_left` event's `reason`). Values are `str`, so the tables keep plain strings."""
from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    __str__ = str.__str__                # its value, as text (f-strings, logs)
    __format__ = str.__format__
    WORKERS_FAILED = "workers_failed"    # its own workers failed (a signal: SIGUSR1, a worker fault)
    PEER_FAILED = "peer_failed"          # a collective with a dead peer failed (a signal)
    TERMINATED = "terminated"            # SIGTERM: a preemption's notice (a signal)
    AGENT_FAILED = "agent_failed"        # the agent exits with an error (a signal)
    ROUND_ENDED = "round_ended"          # another member ended the round (a watch)
    NODES_WAITING = "nodes_waiting"      # late joiners wait for the next round (a watch)
    PROBE = "probe"                      # a waiter asks whether the members live (answered in place)


SIGNALS = (Reason.WORKERS_FAILED, Reason.PEER_FAILED, Reason.TERMINATED, Reason.AGENT_FAILED)
