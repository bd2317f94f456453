"""Scenarios: the YAML schema, loading with clear errors, and the bundled examples."""
from .load import ScenarioError, bundled, load
from .schema import Scenario

__all__ = ["Scenario", "ScenarioError", "bundled", "load"]
