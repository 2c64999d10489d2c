"""Samples and their summary: median and p95 in milliseconds."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["Samples", "summarize", "spaced"]


@dataclass
class Samples:
    """Wall times (seconds) of one row, plus what else the row wants to report."""

    name: str
    times: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    # Requests whose outcome was not the one this row measures (e.g. a cache miss in the
    # "unchanged screen" row); they are counted, not timed.
    excluded: int = 0
    errors: list[str] = field(default_factory=list)
    # X-Request-Id of each timed request, and desktopd's own time for it (from its log).
    request_ids: list[str] = field(default_factory=list)
    server_times: list[float] = field(default_factory=list)

    def add(self, seconds: float, size: int | None = None, request_id: str | None = None) -> None:
        self.times.append(seconds)
        if size is not None:
            self.sizes.append(size)
        if request_id is not None:
            self.request_ids.append(request_id)

    def summary(self) -> dict:
        server = summarize(self.server_times)
        return summarize(self.times) | {
            "server_median_ms": server["median_ms"],
            "server_p95_ms": server["p95_ms"],
            "bytes_median": int(statistics.median(self.sizes)) if self.sizes else None,
            "excluded": self.excluded,
            "errors": self.errors[:5],
        }


def summarize(times: list[float]) -> dict:
    if not times:
        return {"n": 0, "median_ms": None, "p95_ms": None, "min_ms": None, "max_ms": None}
    ms = sorted(t * 1000 for t in times)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p95_ms": round(_percentile(ms, 95), 3),
        "min_ms": round(ms[0], 3),
        "max_ms": round(ms[-1], 3),
    }


def _percentile(sorted_ms: list[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_ms) == 1:
        return sorted_ms[0]
    pos = (len(sorted_ms) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def spaced(series: list, count: int) -> list:
    """About ``count`` items of ``series``, evenly spaced, its first and last among them."""
    if len(series) <= count:
        return list(series)
    step = (len(series) - 1) / (count - 1)
    return [series[round(i * step)] for i in range(count)]
