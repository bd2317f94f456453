"""What a protocol needs from the real side beyond the generic launcher (its kit's
`real/validate` part)."""
from __future__ import annotations

from typing import Callable

from rdzv_sim.protocols.registry import get

VALIDATOR = "real/validate"


def validator_of(protocol: str) -> Callable | None:
    """`validate(scenario, out) -> verdict dict`: `rdzv-sim validate` for `protocol`, when its
    real side is not the generic launcher (the per-step quorum's is torchft's Lighthouse)."""
    return get(protocol).part(VALIDATOR)
