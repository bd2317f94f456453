"""What a checker finds (`Violation`) and what a run's checks found (`Report`)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    invariant: str
    message: str
    round: int | None = None
    node: str | None = None
    known: str | None = None          # why it is expected, with the source it comes from

    def __str__(self) -> str:
        where = "".join([f" round {self.round}" if self.round is not None else "",
                         f" node {self.node}" if self.node else ""])
        tag = f" [known: {self.known}]" if self.known else ""
        return f"{self.invariant}{where}: {self.message}{tag}"


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)

    @property
    def unexpected(self) -> list[Violation]:
        return [v for v in self.violations if not v.known]

    def assert_ok(self, replay_hint: str = "") -> None:
        bad = self.unexpected
        if bad:
            lines = [f"{len(bad)} invariant violation(s):"] + [f"  - {v}" for v in bad[:20]]
            if replay_hint:
                lines.append(replay_hint)
            raise AssertionError("\n".join(lines))
