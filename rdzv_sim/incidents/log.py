"""Reading an incident log: a CSV or Parquet file with one row per incident. Columns:

- `time`: seconds from the log's start, or a date-time (ISO 8601); sorted or not;
- `scope`: `host` (or `node`), `rack` or `job`: what the incident took down;
- `cause`: a free-form label (`gpu_hbm3`, `nic`, `software_bug`);
- `repair_s` (optional): seconds until the host or rack was back; empty when unknown;
- `detection_s` (optional): seconds until the job's other hosts noticed (a watchdog, a
  heartbeat); empty when unknown;
- `host` (optional): the host's name (a rack's, for rack scope), so that a replay puts a host's
  repeated incidents on one simulated host.

Other columns are kept and ignored. Anything else is refused before a run starts, with the
file, the line and the column named."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import Error

REQUIRED = ("time", "scope", "cause")
OPTIONAL_SECONDS = ("repair_s", "detection_s")
SCOPES = {"host": "node", "node": "node", "rack": "rack", "job": "job"}
MAX_BYTES = 256 * 2 ** 20          # a log this large is not an incident log: refused unread
MAX_ROWS = 1_000_000


class LogError(Error):
    """An incident log that cannot be used, and where."""


def _where(path: Path, i: int, column: str, csv: bool) -> str:
    row = f"line {i + 2}" if csv else f"row {i + 1}"      # a CSV's line 1 is its header
    return f"{path}: {row}, column '{column}'"


def read_log(path: str | Path) -> pd.DataFrame:
    """The log as a table sorted by time: `time` (float seconds from the log's start; date-times
    count from the first incident), `scope` (node, rack, job), `cause`, `repair_s` and
    `detection_s` (float, NaN when unknown), `host` ("" when not named)."""
    path = Path(path)
    if not path.is_file():
        raise LogError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise LogError(f"{path}: {size / 2 ** 20:,.0f} MiB; an incident log has at most "
                       f"{MAX_ROWS:,} rows ({MAX_BYTES // 2 ** 20} MiB): split it or aggregate it")
    csv = path.suffix.lower() != ".parquet"
    try:
        df = (pd.read_csv(path, dtype=str, keep_default_na=False, nrows=MAX_ROWS + 1) if csv
              else pd.read_parquet(path).astype(str))
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise LogError(f"{path}: not a readable {'CSV' if csv else 'Parquet'} file "
                       f"({' '.join(str(e).split())[:200]})") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise LogError(f"{path}: no column {', '.join(repr(c) for c in missing)} (an incident "
                       f"log has columns {', '.join(REQUIRED)} and optionally repair_s, detection_s, host; "
                       f"it has {', '.join(map(repr, df.columns)) or 'none'})")
    if len(df) > MAX_ROWS:
        raise LogError(f"{path}: more than {MAX_ROWS:,} incidents; aggregate or split the log")
    if df.empty:
        raise LogError(f"{path}: no incidents (the file has a header and no rows)")
    out = pd.DataFrame({"time": _times(df["time"], path, csv)})
    scope = df["scope"].str.strip().str.lower()
    bad = ~scope.isin(list(SCOPES))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogError(f"{_where(path, i, 'scope', csv)}: {df['scope'].iloc[i]!r} is not a scope "
                       f"(one of host, node, rack, job)")
    out["scope"] = scope.map(SCOPES)
    cause = df["cause"].str.strip()
    if (cause == "").any():
        i = int(np.flatnonzero((cause == "").to_numpy())[0])
        raise LogError(f"{_where(path, i, 'cause', csv)}: empty (name the cause, or 'unknown')")
    out["cause"] = cause
    for name in OPTIONAL_SECONDS:
        out[name] = (_seconds(df[name], path, csv, name, empty_ok=True)
                     if name in df.columns else np.nan)
    if "host" in df.columns:
        host = df["host"].str.strip()
        out["host"] = host.where(~host.isin(["nan", "None"]), "")   # Parquet's nulls, as text
    else:
        out["host"] = ""
    return out.sort_values("time", kind="stable").reset_index(drop=True)


def _seconds(col: pd.Series, path: Path, csv: bool, name: str, empty_ok: bool = False) -> np.ndarray:
    text = col.str.strip()
    empty = (text == "") | (text.str.lower().isin(["nan", "none"]))
    v = pd.to_numeric(text.where(~empty), errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(v) & ~empty.to_numpy() if empty_ok else np.isnan(v)
    bad |= ~np.isnan(v) & ~np.isfinite(v)
    bad |= v < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogError(f"{_where(path, i, name, csv)}: {col.iloc[i]!r} is not a number of seconds "
                       f">= 0{' (or empty)' if empty_ok else ''}")
    return v


def _times(col: pd.Series, path: Path, csv: bool) -> np.ndarray:
    """Seconds from the first incident: numbers as they are, or date-times (all one or the other)."""
    text = col.str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    if numeric.notna().all():
        return _seconds(col, path, csv, "time")
    if numeric.notna().any():
        i = int(np.flatnonzero(numeric.isna().to_numpy())[0])
        raise LogError(f"{_where(path, i, 'time', csv)}: {col.iloc[i]!r} is not a number of "
                       "seconds like the rows before it")
    stamps = pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601")
    if stamps.isna().any():
        i = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise LogError(f"{_where(path, i, 'time', csv)}: {col.iloc[i]!r} is neither seconds "
                       "nor an ISO 8601 date-time")
    secs = (stamps - stamps.min()).dt.total_seconds().to_numpy(dtype=float)
    return secs
