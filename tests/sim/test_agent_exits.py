"""How an agent leaves decides whether the job goes on: torch's launcher calls the rendezvous
handler's shutdown() on every exit but a signal's, and c10d's shutdown closes the run for
everyone. The bundled `sigterm-one-agent` scenario, both ways, with known times; the real
side is benchmarks/sigterm.py (reports/sigterm.md)."""
import pytest

import rdzv_sim
from rdzv_sim.events import register_event
from rdzv_sim.ops import Emit
from rdzv_sim.protocols.agent import AgentSettings, elastic_agent
from rdzv_sim.protocols.base import Protocol, RendezvousTimeout
from rdzv_sim.protocols.settings import ProtocolSettings
from rdzv_sim.sim.sandbox import Sandbox

AGENT_FAILURE = "faults=[{kind: agent_failure, node: 2, at: 30}]"


def run(protocol, *sets):
    return rdzv_sim.run(rdzv_sim.load_scenario("sigterm-one-agent", [f"protocol.name={protocol}", *sets]))


def back_at_two(r):
    ev = r.events
    return ev[(ev.event == "workers_started") & (ev.t > 30) & (ev.world_size == 2)].t.min() - 30


def exits(r):
    ev = r.events[r.events.event == "agent_exit"]
    return {n: d.split('"')[3] for n, d in zip(ev.node, ev.detail)}


def test_sigterm_hrw_ends_its_round_on_the_notice():
    r = run("hrw")
    assert exits(r) == {"node2": "terminated"}
    assert back_at_two(r) == pytest.approx(2 + 3, abs=0.01)         # last call + worker start


def test_sigterm_c10d_reforms_once_the_keep_alives_lapse():
    """torch 2.13 skips shutdown on a signal; the round re-forms when node2's participant is
    dead (3 missed 5 s keep-alives after its agent exited: its beats stop with it)."""
    r = run("c10d")
    assert exits(r) == {"node2": "terminated"}
    assert 15 < back_at_two(r) < 15 + 0.5 + 3 + 0.1


def test_agent_failure_closes_c10d_for_everyone():
    r = run("c10d", AGENT_FAILURE)
    assert exits(r) == {"node2": "agent_failed", "node0": "rendezvous_closed", "node1": "rendezvous_closed"}
    assert len(r.rounds) == 1                                          # no round after it
    assert r.events[r.events.event == "agent_exit"].t.max() < 30 + 1  # their collectives fail at once


def test_agent_failure_closes_hrw_for_everyone_too():
    """torch's contract: shutdown() closes the rendezvous (hrw's close_on_shutdown, the default)."""
    r = run("hrw", AGENT_FAILURE)
    assert exits(r) == {"node2": "agent_failed", "node0": "rendezvous_closed", "node1": "rendezvous_closed"}
    assert len(r.rounds) == 1


def test_agent_failure_leaves_hrw_to_reform_without_close_on_shutdown():
    r = run("hrw", AGENT_FAILURE, "protocol.close_on_shutdown=false")
    assert exits(r) == {"node2": "agent_failed"}
    assert r.rounds.members.tolist() == ["node0,node1,node2", "node0,node1"]
    assert back_at_two(r) == pytest.approx(0.3 + 2 + 3, abs=0.01)     # detection + last call + start


class Recorder(Protocol):
    """Times out at once; says when it is shut down."""
    name = "recorder"

    def rendezvous(self, node):
        raise RendezvousTimeout("never")
        yield

    def shutdown(self, node):
        yield Emit("shut_down")


register_event("shut_down")              # a protocol's own event

def test_every_exit_but_a_signal_shuts_the_protocol_down():
    sb = Sandbox(nodes=1)
    proto = Recorder(ProtocolSettings(name="recorder", min_nodes=1, max_nodes=1))
    assert sb.run(lambda info: elastic_agent(info, proto, AgentSettings()), until=5) == ["rendezvous_timeout"]
    assert [row[2] for row in sb.trace.rows][-3:] == ["rendezvous_timeout", "shut_down", "agent_exit"]
