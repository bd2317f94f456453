"""The training job around the rendezvous: how much work survives, at what capacity, and
where every lost second went. Reads the trace tables only, so real traces get it too."""
from .account import TrainingResult, evaluate
from .model import register_training_model, training_model_of
from .spans import round_spans
from .work import SpanWork, span_work, young_daly
from . import quorum as _quorum  # noqa: F401 - registers the per-step quorum's model

__all__ = ["TrainingResult", "evaluate", "register_training_model", "round_spans", "training_model_of",
           "SpanWork", "span_work", "young_daly"]
