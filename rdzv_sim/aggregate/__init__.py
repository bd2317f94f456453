"""The aggregate fidelity (`fidelity: aggregate`): rounds as numpy batches on a FIFO store model,
the job as one state machine; for long runs of thousands of nodes (see job.py)."""
from .jobs import aggregate_job_of, register_aggregate_job
from . import c10d_job as _c10d, job as _hrw  # noqa: F401 - register the built-in protocols' jobs

__all__ = ["aggregate_job_of", "register_aggregate_job"]
