"""The figures of outcome events: what they add per million events (the cost section, ``bench.cost_outcomes``) and
the lateness of the same workload with and without them (the precision section's outcome pairs)."""

from __future__ import annotations

import statistics

from .fmt import exact, met, mmm, num, payload_label, pick, usd

LATENESS_RATIO = 1.25
"""Lateness with outcomes "unchanged": the median over the pairs of each pair's p50 and p99 ratio (on ÷ off) at most
this, and none early. Set before the first paired run, from the default window's repeats of the run before it, which
with nothing changed spread their p99 by about ±20 % (36 – 53 ms)."""
QUANTILES = ("p50", "p99", "max")


def _ratios(pair: dict) -> dict[str, float | None]:
    off, on = pair["off"]["all"], pair["on"]["all"]
    return {q: on[q] / off[q] if off.get(q) else None for q in QUANTILES}


def lateness_judged(pairs: list[dict]) -> dict:
    """The median ratio per quantile over the pairs, and whether lateness is unchanged by :data:`LATENESS_RATIO`."""
    ratios = [_ratios(p) for p in pairs]
    median = {q: statistics.median([x for r in ratios if (x := r[q]) is not None]) for q in QUANTILES}
    early = sum(p["on"]["all"]["early"] for p in pairs)
    ok = median["p50"] <= LATENESS_RATIO and median["p99"] <= LATENESS_RATIO and early == 0
    return {"median": median, "early": early, "met": ok}


def precision(p: dict) -> dict | None:
    """The outcome pairs' table, medians, verdict and summary row; None when not run."""
    pairs = p.get("outcome_pairs") or []
    if not pairs:
        return None
    judged = lateness_judged(pairs)
    rows = []
    for i, pair in enumerate(pairs):
        off, on, ratio, got = pair["off"]["all"], pair["on"]["all"], _ratios(pair), pair["on"]["outcomes"]
        after = got["after_delivery_ms"]
        rows.append([i + 1, "off, on" if i % 2 == 0 else "on, off",
                     *(" / ".join(num(d[q]) for q in QUANTILES) for d in (off, on)),
                     " / ".join(f"{ratio[q]:.2f}" if ratio[q] is not None else "n/a" for q in QUANTILES),
                     f"{off['early']} / {on['early']}", f"{pair['off']['delivered']} / {pair['on']['delivered']}",
                     f"{got['events']} ({', '.join(f'{k} {v}' for k, v in got['kinds'].items())})",
                     f"{num(after.get('p50'))} / {num(after.get('p99'))}"])
    sides = {side: [pair[side]["all"] for pair in pairs] for side in ("off", "on")}
    values = "; ".join(f"{q} {mmm(pick(sides['off'], q))} → {mmm(pick(sides['on'], q))} ms (×{judged['median'][q]:.2f})"
                       for q in QUANTILES)
    verdict = {"ratio": f"{LATENESS_RATIO:.2f}", "met": met(judged["met"])}
    alone = sorted(pick([r["all"] for r in p.get("runs") or []], "p99"))
    return {"part": "outcomes", "pairs": len(pairs), "n": num(p["n"]), "kinds": ", ".join(p["outcome_kinds"]),
            "alone": f"{num(alone[0])} – {num(alone[-1])} ms" if alone else "n/a",
            "rows": rows, "values": values, "early": judged["early"], **verdict,
            "summary_row": {"part": "outcomes_row", "pairs": len(pairs), "values": values, **verdict}}


def _level_rows(level: str, o: dict) -> list[list]:
    return [[level, r["group"], r["item"], f"{r['quantity']:.3g} {r['unit']}", usd(r["usd_od"])]
            for r in sorted(o["rows"], key=lambda r: -r["usd_od"]) if r["usd_od"]]


def cost(c: dict) -> dict | None:
    """The outcomes subsection of the cost section and its summary row; None when not measured."""
    o = c.get("outcomes")
    if not o:
        return None
    levels, kinds = o["levels"], o["kinds"]
    names = list(levels)
    calls: dict = {}
    for level, pair in levels.items():
        for r in pair["calls"]:
            calls.setdefault((r["caller"], r["service"], r["operation"]), {})[level] = r
    lean = o["lean"]
    lean_text = "; ".join(f"{r['what']} {r['writes']:.2f} (bar {r['target']})" for r in lean["rows"])
    totals = " / ".join(exact(levels[level]["total_on_demand"]) for level in names)
    return {
        "part": "outcomes", "n": o["n"], "payload": payload_label(o["payload"]), "levels": " and ".join(names),
        "level_columns": " | ".join(f"{level}: {side}" for level in names for side in ("off", "on", "added per event")),
        "level_rule": "|---" * (3 * len(names)), "cost_columns": " | ".join(names), "cost_rule": "|---" * len(names),
        "events": "; ".join(f"{level}: {p['events']} events for {p['timers']} timers ({p['distinct']} distinct, "
                            f"{', '.join(f'{k} {v}' for k, v in p['kinds'].items())})" for level, p in levels.items()),
        "event_bytes": num(kinds["event_bytes"]), "lean": met(lean["met"]), "lean_rows": lean_text,
        "calls": [[*key, *(x for level in names for x in (
            (f"{by[level]['off']:.2f}", f"{by[level]['on']:.2f}", f"{by[level]['added']:+.2f}") if level in by
            else ("", "", "")))] for key, by in sorted(calls.items())],
        "dispatcher": [[level, f"{(d := p['dispatcher'])['on']['outcome_only']} / {d['on']['invocations']} "
                        f"({d['off']['invocations']})",
                        f"{d['on']['outcome_only_messages'] / max(1, d['on']['outcome_only']):.1f}",
                        f"{d['invocations_per_event']:.3f}",
                        f"{d['on']['outcome_only_billed_ms'] / max(1, p['events']):.1f}", f"{d['flush_ms_per_event']:.1f}",
                        d["on"]["mixed"], f"{p['metric_lines']['off']} / {p['metric_lines']['on']}",
                        f"**{exact(p['total_on_demand'])}**"] for level, p in levels.items()],
        "rows": [row for level, p in levels.items() for row in _level_rows(level, p)],
        "kinds": [[kind, usd(k["service"]), f"{num(k['call_ms'])} ms: {usd(k['dispatcher'])}",
                   *(f"**{usd(k[level])}**" for level in names)] for kind, k in kinds["rows"].items()],
        "function_ms": num(kinds["function_ms"]), "transitions": kinds["standard_transitions"],
        "express_ms": num(kinds["express_ms"]),
        "overlap": " / ".join(f"{level} {usd(kinds['overlap'][level])}" for level in names),
        "summary_row": {"part": "outcomes_row", "levels": " / ".join(names), "totals": totals,
                        "sqs": " / ".join(exact(kinds["rows"]["sqs"][level]) for level in names),
                        "lean": met(lean["met"])}}
