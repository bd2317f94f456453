"""Why an agent leaves a running round: a local signal, or a watch its protocol set (the
`round_left` event's `reason`); and why it exits (`agent_exit`'s). Values are `str`, so the
tables keep plain strings."""
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
    POLL = "poll"                        # the rendezvous state changed: ask the protocol (c10d's)
    IN_PLACE = "in_place"                # the world recovered in place: train on in it (a signal)
    LEFT_OUT = "left_out"                # the world recovered in place without this member (a signal)


SIGNALS = (Reason.WORKERS_FAILED, Reason.PEER_FAILED, Reason.TERMINATED, Reason.AGENT_FAILED)


class ExitReason(str, Enum):
    """Why an agent gives up (the `agent_exit` event's `reason`)."""
    __str__ = str.__str__
    __format__ = str.__format__
    MAX_RESTARTS = "max_restarts"                    # a failure past its max_restarts
    RENDEZVOUS_TIMEOUT = "rendezvous_timeout"        # no round before the join timeout
    RENDEZVOUS_CLOSED = "rendezvous_closed"          # another agent closed the rendezvous
    STORE_LOST = "store_lost"                        # its store is gone (and no failover found one)
    STORE_TIMEOUT = "store_timeout"                  # store calls timed out, attempts used up
    NO_QUORUM = "no_quorum"                          # fenced: the majority meets elsewhere
    TOO_MANY_FAILED_ROUNDS = "too_many_failed_rounds"   # max_rendezvous_attempts rounds failed
    AGENT_FAILED = "agent_failed"                    # the agent itself failed (a fault)


# what makes a member of a failing-over protocol look for the next store
STORE_LOSS = (ExitReason.STORE_LOST, ExitReason.STORE_TIMEOUT, ExitReason.NO_QUORUM)
