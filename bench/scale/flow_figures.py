"""A simulated flow run's figures (:mod:`bench.scale.flow`): its starts against the slots, its calls and the
messages' fates, the pace of a run stopped before its end, and, for a grouped run, each group's starts."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler_runtime.core.flow import FlowLimits

Model = Any
"""A finished run of :class:`bench.scale.flow.Model` (not imported: that module imports this one)."""

DUE0 = 10_000.0
"""The due second of every burst (simulated seconds)."""
RECENT_S = 60.0
"""A run stopped before its end is projected at the pace of its last this many seconds."""


def busiest(starts: list[float], window_s: float = 1.0) -> int:
    """The most starts in any window of ``window_s`` (sorted ``starts``)."""
    most, first = 0, 0
    for last, t in enumerate(starts):
        while t - starts[first] >= window_s:
            first += 1
        most = max(most, last - first + 1)
    return most


def starts_figures(starts: list[float], n: int, rate_interval_s: float) -> dict:
    """``starts`` of ``n`` timers whose slots are ``rate_interval_s`` apart: the first and last (after the due second),
    the busiest second, the mean a second, and how long the slots take for all."""
    starts = sorted(starts)
    late = [s - DUE0 for s in starts]
    return {"timers": n, "delivered": len(starts), "last_start_s": late[-1] if late else None,
            "first_start_s": late[0] if late else None, "allowed_slots_s": n * rate_interval_s,
            "busiest": busiest(starts), "mean_per_s": len(starts) / max(1e-9, late[-1] - late[0]) if len(late) > 1 else None}


def outcome(m: Model, limits: FlowLimits, wall_s: float) -> dict:
    """A run's figures: the target's, and its items' writes and reads; the messages' fates."""
    n = len(m.due)
    done = [s for s in m.starts if s is not None]
    out = starts_figures(done, n, m.interval)
    items = [*m.targets, *m.items]
    out.update(rate=limits.rate, interval_ms=m.interval * 1000, allowed_rate_s=n / limits.rate,
               target_items=len(m.targets),
               early=sum(1 for s, d in zip(m.starts, m.due) if s is not None and s < d),
               dead_lettered=m.c["dead_lettered"], failed=m.c["failed"],
               item_writes=sum(it.writes.granted for it in items), item_refused=sum(it.refused for it in items),
               item_throttled=sum(it.writes.throttled for it in items), target_writes=sum(it.writes.granted for it in m.targets),
               reads=m.c["reads"], record_writes=m.table.granted, record_throttled=m.table.throttled,
               crowded=m.c["crowded"], looked_again=m.c["looked_again"], sent_back=m.c["sent_back"],
               put_back_early=m.c["put_back_early"],
               slots_missed=m.c["slots_missed"], receives=m.c["receives"], invocations=m.c["invocations"],
               pollers=len(m.sandboxes), billed_s_per_delivery=m.billed_s / max(1, len(done)),
               quota_spent=sum(1 for sb in m.sandboxes if not sb.retry_left()), events=m.sim.events, seconds=wall_s,
               complete=not m.live, timeline=m.timeline, first_receives=m.first_receives,
               target_slots_together=m.c["target_slots_together"],
               target_slot_writes_together=m.c["target_slot_writes_together"],
               all_received_s=None if m.all_received_at is None else m.all_received_at - DUE0, **_pace(m.timeline, n))
    return out


def _pace(timeline: list[list[float]], n: int) -> dict:
    """A run's pace over its last :data:`RECENT_S` (starts and crowded messages a second), and where it was stopped;
    with the starts' pace, when the last of ``n`` would start."""
    if not timeline:
        return {}
    end = timeline[-1]
    back = next((row for row in reversed(timeline) if end[0] - row[0] >= RECENT_S), [0.0, 0, 0, 0])  # or the start
    span = max(1e-9, end[0] - back[0])
    starts, crowded = (end[1] - back[1]) / span, (end[2] - back[2]) / span
    projected = end[0] + (n - end[1]) / starts if starts > 0 else None
    return {"stopped_s": end[0], "recent_starts_per_s": starts, "recent_crowded_per_s": crowded,
            "projected_last_s": projected}


def group_figures(m: Model, members: list[int], small_groups: int) -> dict:
    """A grouped run's figures by group (``members``: each timer's; group 0 the big one, 1 to ``small_groups`` the
    small ones): the big group's starts, the small groups' together (the last start, the most a second of any)."""
    by_group: dict[int, list[float]] = {}
    for s, g in zip(m.starts, members):
        if s is not None:
            by_group.setdefault(g, []).append(s)
    sizes = Counter(members)
    gi = m.items[0].interval
    small = [starts_figures(by_group.get(g, []), sizes[g], gi) for g in range(1, small_groups + 1)]
    return {"group_interval_ms": gi * 1000, "groups": 1 + small_groups, "paced": m.c["paced"],
            "paced_kept": m.c["paced_kept"], "group_slots": m.c["group_slots"],
            "group_slots_together": m.c["group_slots_together"], "group_slot_writes_together": m.c["group_slot_writes"],
            "big": dict(starts_figures(by_group.get(0, []), sizes[0], gi), left=sizes[0] - len(by_group.get(0, []))),
            "small": {"groups": small_groups, "timers": sum(g["timers"] for g in small),
                      "delivered": sum(g["delivered"] for g in small),
                      "last_start_s": max((g["last_start_s"] for g in small if g["last_start_s"] is not None), default=None),
                      "allowed_slots_s": max(g["allowed_slots_s"] for g in small),
                      "busiest": max(g["busiest"] for g in small),
                      "last_first_receive_s": max((at - DUE0 for at, g in zip(m.first_received, members)
                                                   if g and at is not None), default=None)}}


def free_figures(due: list[float], starts: list[float | None]) -> dict:
    """The lateness of a target's timers without limits (their starts minus their due instants, in ms): its median,
    99th percentile and most, and how many started."""
    late = sorted((s - d) * 1000 for s, d in zip(starts, due) if s is not None)
    at = (lambda q: late[min(len(late) - 1, int(q * len(late)))]) if late else (lambda q: None)
    return {"free": len(due), "free_started": len(late), "free_p50_ms": at(0.5), "free_p99_ms": at(0.99),
            "free_max_ms": late[-1] if late else None}
