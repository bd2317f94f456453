"""The aggregate fidelity (`fidelity: aggregate`): one job at round granularity (job.py), each
protocol's rendezvous a `RoundModel` (its store requests as numpy batches), for long runs of
thousands of nodes."""
from .job import AggregateJob
from .round_model import Formed, RoundModel, register_round_model, round_model_of
from . import c10d_rounds as _c10d, hrw_round as _hrw, quorum_rounds as _quorum  # noqa: F401 - the built-in round models

__all__ = ["AggregateJob", "Formed", "RoundModel", "register_round_model", "round_model_of"]
