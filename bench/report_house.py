"""The figures of the house's own sections: cold start, synth, the test suite, the testing kit, the HTTPS target,
redrive and groups."""

from __future__ import annotations

from .common import LOOP_REFERENCE_S
from .fmt import met, mmm, num, spread, verdict
from .suite import TIERS


def coldstart(data: dict) -> dict | None:
    c = data.get("coldstart") or {}
    if not c.get("handlers"):
        return None
    hs = c["handlers"]
    return {"repeats": c["repeats"], "worst": f"{max(h['median'] for h in hs.values()):.0f}",
            "met": met(all(h["median"] <= 150 for h in hs.values())),
            "rows": [[name, f"{h['median']:.0f}", f"{h['min']:.0f}", f"{h['max']:.0f}", met(h["median"] <= 150),
                      ", ".join(f"{n} {ms:.0f}" for n, ms in h["heaviest_top_level_imports_ms"][:4])]
                     for name, h in hs.items()]}


def synth(data: dict) -> dict | None:
    s = data.get("synth") or {}
    if not s.get("measured"):
        return None
    return {"example": mmm(s["example_s"]["runs"], 2), "baseline": mmm(s["baseline_s"]["runs"], 2),
            "ratio": mmm(s["ratio"]["runs"], 2)}


def _on_reference(seconds: float | None, scale: float) -> float | None:
    """A time measured here, read against the reference machine (``scale``: its loop time over this machine's)."""
    return None if seconds is None else seconds * scale


def _tier(name: str, runs: list[dict], target_s: float, scale: float = 1.0) -> dict:
    """A tier's summary row and its part of the section; ``scale`` reads its times against the reference machine."""
    if not runs:
        return {"part": "tier_unmeasured", "tier": name, "target": num(target_s)}
    timed = [r for r in runs if r["pytest_seconds"] is not None]
    last = runs[-1]
    cpu, cores = last["cpu_seconds"], last["cores"]
    early = sorted(last.get("early_runs") or [], key=lambda e: -e["cpu_seconds"])
    return {"part": "tier", "tier": name, "command": " ".join(TIERS[name]), "target": num(target_s),
            "pytest": mmm([r["pytest_seconds"] for r in timed]), "wall": mmm([r["seconds"] for r in runs]),
            "cpu": mmm([r["cpu_seconds"] for r in runs]), "passed": sum(r["passed"] for r in runs), "repeats": len(runs),
            "verdict": verdict([r["pytest_seconds"] is not None and r["pytest_seconds"] * scale <= target_s
                                and r["passed"] for r in runs]),
            "reference": mmm([_on_reference(r["pytest_seconds"], scale) for r in timed]),
            "rows": [[i + 1, num(r["seconds"]), num(r["pytest_seconds"]), num(r["cpu_seconds"]),
                      "yes" if r["passed"] else "**no**", r["summary"].replace("|", "/")] for i, r in enumerate(runs)],
            "failures": {"part": "failures", "list": [f"- repeat {i + 1}: `{f}`" for i, r in enumerate(runs)
                                                      for f in r["failures"]]} if any(r["failures"] for r in runs) else None,
            "slowest": {"part": "slowest", "rows": [[f"`{module}`", num(seconds)] for module, seconds in last["slowest_modules"]]}
            if last["slowest_modules"] else None,
            "last_pytest": num(last["pytest_seconds"]), "cpu_last": num(cpu), "cores": cores, "floor": num(cpu / cores),
            "cpu_target": num(target_s * cores), "busy": f"{cpu / cores / last['seconds']:.0%}",
            "early": {"part": "early", "total": num(sum(e["cpu_seconds"] for e in early)),
                      "rows": [[e["name"], num(e["cpu_seconds"]), e["exit"]] for e in early]} if early else None}


def _loaded(loaded: dict | None, target_s: float, scale: float = 1.0) -> dict:
    """The full tier's runs in a row beside the CPU burner: its part of the section (``scale`` as :func:`_tier`)."""
    if not loaded or not loaded.get("runs"):
        return {"part": "loaded_unmeasured", "command": " ".join(TIERS["full"]), "target": num(target_s)}
    runs = loaded["runs"]
    return {"part": "loaded", "command": " ".join(TIERS["full"]), "target": num(target_s), "runs": len(runs),
            "times": "once" if len(runs) == 1 else f"{len(runs)} times in a row", "cores": loaded["cores"],
            "passed": sum(r["passed"] for r in runs), "pytest": mmm([r["pytest_seconds"] for r in runs]),
            "load": mmm([r["load_after"] for r in runs], 1), "burner": num(loaded["burner_cpu_seconds"]),
            "verdict": verdict([r["passed"] and r["pytest_seconds"] is not None
                                and r["pytest_seconds"] * scale <= target_s for r in runs]),
            "reference": mmm([_on_reference(r["pytest_seconds"], scale) for r in runs]),
            "rows": [[i + 1, num(r["seconds"]), num(r["pytest_seconds"]), num(r["cpu_seconds"]),
                      num(r["burner_cpu_seconds"]), f"{r['load_before']:.1f} / {r['load_after']:.1f}",
                      "yes" if r["passed"] else "**no**", _failed(r)] for i, r in enumerate(runs)]}


def _failed(run: dict) -> str:
    """What a run's row names as failed: its failed tests, or pytest's last line when it names none."""
    if run["passed"]:
        return ""
    return ", ".join(f"`{name}`" for name in run["failures"]).replace("|", "/") or run["summary"].replace("|", "/")


def suite(data: dict) -> dict | None:
    s = data.get("suite") or {}
    if not s.get("runs"):
        return None
    loop_s = (data.get("section_loop_s") or {}).get("suite")
    scale = LOOP_REFERENCE_S / loop_s if loop_s else 1.0  # the targets hold on a machine whose loop takes the reference
    tiers = [_tier(tier, [r[tier] for r in s["runs"] if r.get(tier)], s["targets_s"][tier], scale)
             for tier in ("quick", "full")]
    loaded = _loaded(s.get("loaded"), s["targets_s"]["full"], scale)
    return {"tiers": tiers, "loaded": loaded,
            "rows": [*({**t, "part": "row" if t["part"] == "tier" else "row_unmeasured"} for t in tiers),
                     {**loaded, "part": "row_" + loaded["part"]}]}


def _workload(w: dict | None, what: str, expected: str) -> dict:
    if not w:
        return {"part": "workload_unmeasured", "what": what}
    return {"part": "workload", "what": what, "expected": expected, "advance": spread(w["advance_s"], 2),
            "target": num(w["target_s"]), "met": met(w["met"]), "delivered": ", ".join(map(str, w["delivered"]))}


def kit(data: dict) -> dict | None:
    k = data.get("kit") or {}
    if not k.get("start_s"):
        return None
    group = k.get("cancelled_group")
    hour = _workload(k.get("spread_hour"), "100 timers due at random seconds over an hour, then `advance(hours=1)`", "100")
    cancel = _workload(group, "1,000 timers of one group due in 5 minutes, cancelled with `cancel_group`, then "
                              "`advance(minutes=10)`", "0")
    return {"repeats": k["repeats"], "start": spread(k["start_s"], 3), "stop": spread(k["stop_s"], 3),
            "start_short": spread(k["start_s"], 2), "stop_short": spread(k["stop_s"], 2),
            "start_target": num(k["start_target_s"]), "stop_target": num(k["stop_target_s"], 1),
            "start_met": met(k["start_met"]), "stop_met": met(k["stop_met"]),
            "advance": spread(k["advance_one_minute_s"], 3), "first_start": num(k["first_start_s"], 2),
            "plugin": spread(k["plugin_import_ms"], 1), "hour": hour, "group": cancel,
            "hour_row": {**hour, "part": hour["part"] + "_row"}, "group_row": {**cancel, "part": cancel["part"] + "_row"},
            "group_detail": {"part": "group_detail", "create": spread(group["create_s"], 2),
                             "cancel": spread(group["cancel_s"], 2)} if group else None}


def https(data: dict) -> dict | None:
    h = data.get("https") or {}
    if "handshakes" not in h:
        return None
    return {**{key: h[key] for key in ("n", "threads", "handshakes", "connections", "repeats")},
            "met": met(h["handshakes"] <= h["threads"]), "warm": num(h["warm_ms"]["p50"], 2), "cold": num(h["cold_ms"]["p50"], 2),
            "rows": [[label, *(num(h[key][q], 2) for q in ("p50", "p90", "max"))]
                     for label, key in (("warm (a kept connection)", "warm_ms"),
                                        ("cold (TCP connect + TLS handshake)", "cold_ms"))]}


def redrive(data: dict) -> dict | None:
    r = data.get("redrive") or {}
    if not r.get("per_second"):
        return None
    return {"messages": r["messages"], "repeats": r["repeats"], "rate": spread(r["per_second"], 1)}


def _sweep(r: dict) -> list[str]:
    if r.get("seeded"):
        return ["not waited for", ""]
    if r.get("sweep_s") is None:
        return [f"watched {num(r['watched_s'])} s, not done", num(r["swept_per_second"], 1)]
    return [num(r["sweep_s"], 1), num(r["swept_per_second"], 1)]


def groups(data: dict) -> dict | None:
    g = data.get("groups") or {}
    runs = g.get("runs")
    if not runs:
        return None
    largest = max(runs, key=lambda r: r["members"])
    swept = max((r for r in runs if r.get("sweep_s") is not None), key=lambda r: r["members"])
    cost = g["grouped_cost"]
    return {"rows": [[num(r["members"]), f"{'seeded' if r.get('seeded') else 'API'} {num(r['create_s'], 1)}",
                      num(r["answer_ms"]), "yes" if r["count_complete"] else f"no, {num(r['counted'])} counted",
                      num(r["sample_read_cancelled_s"], 1), *_sweep(r)] for r in runs],
            "largest": num(largest["members"]), "answer_ms": num(largest["answer_ms"]), "swept": num(swept["members"]),
            "sweep_s": num(swept["sweep_s"], 1), "index_writes": f"{cost['index_writes']:.3f}",
            "cancel_read": f"{cost['cancel_read']:.3f}", "total": f"{cost['total']:.3f}"}
