"""The aggregate fidelity (`fidelity: aggregate`): rounds as numpy batches on a FIFO store model,
the job as one state machine; for long runs of thousands of nodes (see job.py)."""
