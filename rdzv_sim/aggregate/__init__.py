"""The aggregate fidelity (`fidelity: aggregate`): one job at round granularity (job.py), each
protocol's rendezvous a `RoundModel` (its store requests as numpy batches), for long runs of
thousands of nodes."""
from .job import AggregateJob
from .round_model import Formed, RoundModel, round_model_of

__all__ = ["AggregateJob", "Formed", "RoundModel", "round_model_of"]
