"""The job's TCPStore dies with the host it runs on, at the aggregate fidelity as per operation:
every agent exits store_lost at once, and one that starts later exits at once too (found while
checking #66's cause labels: the aggregate job trained on without its store)."""
import pytest

import rdzv_sim

SC = {"name": "store-host", "seed": 3, "duration": 20000,
      "cluster": {"nodes": 4, "nproc_per_node": 8},
      "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": 4},
      "training": {"checkpoint_interval": 600, "checkpoint_cost": 10},
      "faults": [{"kind": "crash", "node": 0, "at": 2000}, {"kind": "restart", "node": 0, "at": 2600}]}


def outcome(sc, fidelity, *overrides):
    r = rdzv_sim.run(sc, [f"fidelity={fidelity}", *overrides])
    ev = r.events
    counts = ev["event"].value_counts()
    return (bool(r.summary["store_lost"].iloc[0]), int(counts.get("store_lost", 0)),
            int(counts.get("agent_exit", 0)), float(r.summary["goodput"].iloc[0]))


def test_the_store_dies_with_its_host_at_both_fidelities():
    po, ag = outcome(SC, "per_operation"), outcome(SC, "aggregate")
    assert po[0] and ag[0]
    assert ag[1:3] == po[1:3] == (4, 4)           # three members at once, the host back later
    assert ag[3] == pytest.approx(po[3], abs=1e-6)


def test_a_store_outside_the_job_outlives_the_crash_at_both_fidelities():
    """The near miss: the launcher's store (store.host: null) survives, the job re-forms."""
    for f in ("per_operation", "aggregate"):
        lost, n_lost, exits, goodput = outcome(SC, f, "store.host=null")
        assert not lost and n_lost == 0 and exits == 0 and goodput > 0.5


def test_a_job_wide_fault_keeps_its_cause_in_the_interruptions_table():
    """A job-scope interruption (a software bug) is labelled so, not as the members' reason
    (workers_failed), at both fidelities; a host's crash keeps its own."""
    sc = {**SC, "store": {"host": None}, "faults": [{"kind": "crash", "node": 1, "at": 2000}],
          "random_faults": [{"kind": "interruptions", "cause": "software_bug", "count": 3, "scope": "job"}]}
    for f in ("per_operation", "aggregate"):
        causes = rdzv_sim.run(sc, [f"fidelity={f}"]).interruptions["cause"].tolist()
        assert causes.count("software_bug") >= 1 and "workers_failed" not in causes, causes
        assert causes[0] == "crash"
