"""The training job around the rendezvous: how much work survives, at what capacity, and
where every lost second went. Reads the trace tables only, so real traces get it too."""
from .account import TrainingResult, evaluate
from .model import training_model_of
from .spans import round_spans
from .work import SpanWork, span_work, young_daly

__all__ = ["TrainingResult", "evaluate", "round_spans", "training_model_of",
           "SpanWork", "span_work", "young_daly"]
