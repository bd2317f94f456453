"""Hypothesis profiles, and the seed the property tests explore from.

`ci` (the default) draws a different, reproducible set of examples for every change of the code
under test: its seed is derived from the git trees of hrw/, rdzv_sim/ and real_backend/ (printed
in the header), so CI keeps exploring while any run of one checkout replays exactly. A failure
prints the command that replays it. `--hypothesis-seed=N` or RDZV_TEST_SEED=N picks a seed;
`dev` is the fast inner loop's profile, `thorough` the long one's.
"""
import os
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile("ci", max_examples=200, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def code_seed() -> int:
    """A seed from the code under test: its git trees (0 outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD:hrw", "HEAD:rdzv_sim", "HEAD:real_backend"],
                             cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    return zlib.crc32(out.stdout.encode()) if out.returncode == 0 else 0


def pytest_configure(config):
    import hypothesis.core
    given = config.getoption("hypothesis_seed", None)
    seed = int(given) if given is not None else int(os.environ.get("RDZV_TEST_SEED", code_seed()))
    hypothesis.core.global_force_seed = seed
    config._rdzv_seed = seed


def pytest_report_header(config):
    return f"hypothesis seed: {config._rdzv_seed} (replay with --hypothesis-seed={config._rdzv_seed})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    report = out.get_result()
    if report.failed and call.when == "call" and hasattr(item.obj, "hypothesis"):
        report.sections.append(("replay", f"pytest '{item.nodeid}' --hypothesis-seed="
                                          f"{item.config._rdzv_seed}"))


REAL = ("real", "torchrun")          # folders whose tests run real processes


def pytest_collection_modifyitems(config, items):
    """Every test under tests/real and tests/torchrun is `real` (it starts processes)."""
    for item in items:
        path = Path(str(item.fspath))
        if path.is_relative_to(ROOT / "tests") and path.relative_to(ROOT / "tests").parts[0] in REAL:
            item.add_marker(pytest.mark.real)
