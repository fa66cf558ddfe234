"""How the reports write numbers: every figure of docs/benchmarks.md goes through one of these."""

from __future__ import annotations

import statistics
from typing import Any, Iterable


def num(x: float | None, nd: int = 0) -> str:
    """``x`` with thousands separators and ``nd`` decimals; ``n/a`` for a missing figure."""
    if x is None or (isinstance(x, float) and x != x):
        return "n/a"
    return f"{x:,.{nd}f}"


def mmm(values: Iterable[float | None], nd: int = 0) -> str:
    """``median (min – max)`` of the repeats of one figure (the figure alone for one repeat)."""
    v = sorted(x for x in values if x is not None and x == x)
    if not v:
        return "n/a"
    if len(v) == 1:
        return num(v[0], nd)
    return f"{num(statistics.median(v), nd)} ({num(v[0], nd)} – {num(v[-1], nd)})"


def spread(figure: dict, nd: int) -> str:
    """``median (min – max)`` of a figure stored as ``bench.common.spread`` keeps it."""
    return f"{num(figure['median'], nd)} ({num(figure['min'], nd)} – {num(figure['max'], nd)})"


def pct(share: float | None, nd: int = 1) -> str:
    return "n/a" if share is None else f"{share * 100:.{nd}f} %"


def met(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def verdict(oks: list[bool]) -> str:
    """met when every repeat meets the target; missed when none does; otherwise how many repeats missed it."""
    if not oks:
        return "n/a"
    missed = oks.count(False)
    if not missed or missed == len(oks):
        return met(not missed)
    return f"**missed** in {missed} of {len(oks)} repeats"


def usd(x: float | None) -> str:
    """A price: cents from a dollar up, tenths of a cent below."""
    return "n/a" if x is None else f"${x:,.2f}" if x >= 0.995 or x == 0 else f"${x:.3f}"


def exact(x: float) -> str:
    """A price judged against a target: to a tenth of a cent, so that a near miss shows."""
    return f"${x:,.3f}"


def payload_label(payload: str) -> str:
    """A payload's label as the cost section names it: ``1KB-random`` -> ``1 KB random``."""
    size, _, kind = payload.partition("-")
    return (size[:-2] + " KB" if size.endswith("KB") else size[:-1] + " B") + (f" {kind}" if kind else "")


def pick(runs: list[dict], *path: str) -> list[Any]:
    """One figure from every repeat, by its keys (None where a repeat lacks it)."""
    out = []
    value: Any
    for value in runs:
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        out.append(value)
    return out
