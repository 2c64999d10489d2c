"""The numbers and tables every section of docs/measurements.md writes them with."""

from __future__ import annotations

# bench/reset.py: figures within 10 % of each other are noise on these machines.
NOISE = 0.10


def _s(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def _int(v: float | int | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _mb(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f} MB"


def _load(v) -> str:
    """Load averages as the benches store them: a string, a list, or a pair of lists."""
    if v is None:
        return "not recorded"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (list, tuple)):
        return " / ".join(f"{p[0]:.2f}" for p in v)
    if isinstance(v, (list, tuple)) and v:
        return f"{v[0]:.2f}"
    return str(v)


def _table(head: list[str], align: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
            *["| " + " | ".join(r) + " |" for r in rows]]


def _x(v: float | None) -> str:
    return "-" if v is None else (f"{v:.3f}x" if v < 0.1 else f"{v:.2f}x")


def _goal(d: dict, key: str) -> float | None:
    meta = d.get("meta")
    return meta.get(key) if isinstance(meta, dict) else None
