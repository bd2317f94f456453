"""The trace schema shared by every runtime: `events`, `rounds`, `summary` tables.

A runtime only records events; the other tables are derived here from the events (plus the
store counters the runtime kept), so simulated and real runs are summarised identically.
"""
from __future__ import annotations

from .columns import (EVENT_COLUMNS, NA, SCHEMA_VERSION, STEPS, as_objects, distinct,
                      label_codes, labels_of, nullable_int32, runs, stamp)
from .details import RANK_FIELDS, details, parse_details, rank_details
from .tables import (NAN_TRAINING, RunStats, events_table, rounds_table, running_fraction,
                     store_load_table, summary_table)
from .tracer import Tracer, render_details

__all__ = ["EVENT_COLUMNS", "NA", "NAN_TRAINING", "RANK_FIELDS", "SCHEMA_VERSION", "STEPS",
           "RunStats", "Tracer", "as_objects", "details", "distinct", "events_table", "label_codes", "labels_of",
           "nullable_int32", "parse_details", "rank_details", "render_details", "rounds_table",
           "running_fraction", "runs", "stamp", "store_load_table", "summary_table"]
