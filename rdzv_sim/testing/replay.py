"""Turn a failing example into a scenario file that `rdzv-sim run` replays exactly."""
from __future__ import annotations

import hashlib
from pathlib import Path

import yaml


def to_yaml(scenario) -> str:
    """The scenario as YAML, defaults left out but the protocol's name kept (each protocol's
    settings model defaults `name` to itself, so a plain dump would drop it)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["protocol"] = {"name": scenario.protocol.name, **data.get("protocol", {})}
    return yaml.safe_dump(data, sort_keys=False)


def save_failure(scenario, folder: str | Path = ".hypothesis/rdzv-failures") -> Path:
    text = to_yaml(scenario)
    path = Path(folder) / f"{scenario.name}-{hashlib.sha1(text.encode()).hexdigest()[:10]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def replay_hint(scenario) -> str:
    path = save_failure(scenario)
    return (f"Replay: rdzv-sim run {path}\n"
            f"Keep it as a regression: copy it to tests/regressions/.\n--- {path} ---\n{to_yaml(scenario)}")
