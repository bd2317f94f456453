"""A job-wide fault's cause labels the interruption it made (training/account.job_causes)."""
import json

import pandas as pd

from rdzv_sim.training.account import job_causes


def events(*faults):
    return pd.DataFrame({"t": [t for t, _ in faults], "node": "job", "event": "fault_job_interruption",
                         "detail": [json.dumps({"cause": c}) for _, c in faults]})


def test_the_last_job_fault_within_the_span_names_a_failures_cause():
    cause = job_causes(events((100.0, "software_bug"), (300.0, "planned")))
    assert cause(50.0, 100.0, "workers_failed") == "software_bug"      # at the span's very end
    assert cause(150.0, 300.0, "peer_failed") == "planned"
    assert cause(100.0, 200.0, "workers_failed") is None                # near miss: at its start, not in it
    assert cause(50.0, 99.9, "workers_failed") is None                  # near miss: before the fault
    assert cause(50.0, 100.0, "nodes_waiting") is None                  # not a failure: its own reason
    assert job_causes(events())(0.0, 10.0, "workers_failed") is None
