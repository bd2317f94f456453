"""A sample incident log, synthetic and marked so: the Llama 3 paper's interruptions by cause
and count over 54 days on 2,048 hosts (arXiv 2407.21783, section 3.3.4, as the bundled
llama3-54d states them), at uniformly random times (a Poisson process given its count). The
times and hosts are drawn, the repair and detection times the bundled scenario's assumptions,
none of them the paper's."""
from __future__ import annotations

import numpy as np
import pandas as pd

SOURCE = "synthetic: Llama 3 causes and counts (arXiv 2407.21783), random times"


def sample_log(sc, seed: int = 0) -> pd.DataFrame:
    """The synthetic log of loaded scenario `sc` (the bundled llama3-54d: `rdzv-sim incidents
    sample`): time (s), scope, cause, host, repair_s, detection_s, source. The scenario is
    the caller's to load: the incidents are read by the scenario layer, never the reverse."""
    rng = np.random.default_rng(seed)
    nodes, racks = sc.cluster.nodes, sc.cluster.topology.racks
    rows = []
    for rf in sc.random_faults:
        n = int(round(rf.rate(sc) * sc.duration))
        for t in np.sort(rng.uniform(0, sc.duration, n)):
            host = (f"node{int(rng.integers(nodes)):04d}" if rf.scope == "node" else
                    f"rack{int(rng.integers(racks)):02d}" if rf.scope == "rack" else "")
            rows.append({"time": round(float(t), 1), "scope": "host" if rf.scope == "node" else rf.scope,
                         "cause": rf.cause, "host": host,
                         "repair_s": rf.repair if rf.scope != "job" and rf.repair else None,
                         "detection_s": rf.detection,
                         "source": SOURCE})
    return pd.DataFrame(rows).sort_values("time", kind="stable").reset_index(drop=True)
