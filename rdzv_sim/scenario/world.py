"""One world for both runtimes: what a scenario's faults do, action by action.

A runtime's `World` maps every `Act` to the method that does it (`table`), or names it in
`cannot` with the reason. The simulator's world (`rdzv_sim/sim/world.py`) and the real
launcher's (`real_backend/world.py`) are both driven by the one timeline; a scenario that needs
an action a runtime cannot do is refused by the fault's name before anything runs (`refuse`).
"""
from __future__ import annotations

from typing import Callable, ClassVar

from ..errors import Error
from .faults import Act, Action


class ActionRefused(Error, ValueError):
    """A scenario's fault needs an action this runtime cannot do."""


class World:
    """Subclasses fill in `table` (each action this runtime does, to its method) and `cannot`
    (each other action, and why); together they cover every `Act`, checked when made."""
    runtime: ClassVar[str] = "runtime"
    cannot: ClassVar[dict[Act, str]] = {}

    def __init__(self):
        self._do = self.table()
        both, neither = set(self._do) & set(self.cannot), set(Act) - set(self._do) - set(self.cannot)
        if both or neither:
            raise TypeError(f"{type(self).__name__}: every action is done (table) or refused "
                            f"(cannot), once: both {sorted(both)}, neither {sorted(neither)}")

    def table(self) -> dict[Act, Callable[[Action, dict], None]]:
        """Each action this runtime does, to the method that does it."""
        raise NotImplementedError

    def apply(self, a: Action, state: dict) -> None:
        """Do one action; `state` is what the fault's earlier actions left for its later ones."""
        self._do[a.kind](a, state)

    @classmethod
    def refuse(cls, sc) -> None:
        """ActionRefused naming the first fault whose actions this runtime cannot do."""
        for i, f in enumerate(sc.faults):
            why = next((cls.cannot[a.kind] for a in f.actions(i) if a.kind in cls.cannot), None)
            if why is not None:
                raise ActionRefused(f"the {cls.runtime} does not do {f.kind}: {why}")
