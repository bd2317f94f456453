"""The report's opening speaks of what ran: the recovery mode, a shrink as a shrink, an
in-process restart as one, a per-step job as training on through its failures."""
import rdzv_sim
from rdzv_sim.report.answer import opening

SPARE = {"name": "spare", "seed": 1, "duration": 2000, "cluster": {"nodes": 16, "nproc_per_node": 8},
         "protocol": {"name": "hrw", "min_nodes": 8, "max_nodes": 16, "probe_interval": 86400},
         "scheduler": {"hot_spares": 2}, "training": {"checkpoint_interval": 600, "checkpoint_cost": 10},
         "faults": [{"kind": "crash", "at": 500, "node": 3}]}


def text(sc, *overrides):
    r = rdzv_sim.run(sc, list(overrides))
    return " ".join(opening(r.tables(), r.scenario.model_dump(mode="json")))


def test_an_in_job_run_speaks_of_rounds_and_rendezvous():
    t = text(SPARE)
    assert "in-job restarts" in t and "A round formed again" in t and "in place" not in t


def test_an_in_process_restart_is_one_not_a_rendezvous():
    t = text(SPARE, "agent.recovery=in_process")
    assert "in-process restarts" in t and "1 recovery in place" in t and "1 store round" in t
    assert "restarted in place (in-process, no rendezvous)" in t and "A round formed again" not in t
    assert "restart in place" in t                   # where the time went, apart from rendezvous


def test_a_shrink_is_a_shrink():
    t = text(SPARE, "agent.recovery=shrink")
    assert "communicator shrink" in t and "The world shrank to 15 hosts" in t and "training on from memory" in t


def test_a_per_step_run_says_how_much_of_the_job_trained_on():
    t = text("validate-quorum")
    assert "per-step fault tolerance" in t and "The job trained on through its failures" in t
    assert "replica groups a step on average" in t
