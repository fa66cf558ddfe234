"""The figures of the cost section's levers: the dispatcher's batching window and the precision choice (``bench.cost_levers``
and the precision section's lever runs), what a reschedule and a redrive cost (``bench.operation_costs``) and cron
occurrences without a timer item (``bench.cron_lever``); the last two need no run."""

from __future__ import annotations

import statistics

from .cron_lever import REPEATS, SWEEP_INTERVAL_S, break_even_period_s, priced
from .fmt import exact, met, mmm, pick, usd
from .operation_costs import per_million
from .pricing import PRICES

from scheduler_runtime.core.contract import DEFAULT_DELAY_WINDOW_SECONDS  # noqa: E402

SUB_SECOND_TARGET = {"p99": 100.0, "max": 1000.0}  # ms; and never early
DEFAULTS = "none (the defaults)"


def _dispatcher(r: dict) -> tuple[float, float, float]:
    """(invocations per delivered timer, mean batch, wall ms per delivered timer) of the dispatcher in a run."""
    records, ms = r["handler_records"].get("dispatcher") or {}, r["handler_ms"].get("dispatcher") or {}
    n, delivered = records.get("n", 0), max(1, r["delivered"])
    return n / delivered, records.get("mean", 0.0), ms.get("n", 0) * ms.get("mean", 0.0) / delivered


def _in_target(x: dict) -> bool:
    return x["p99"] <= SUB_SECOND_TARGET["p99"] and x["max"] <= SUB_SECOND_TARGET["max"]


def _judge(runs: list[dict], options: dict) -> dict:
    """SUB_SECOND: p99 ≤ 100 ms, max ≤ 1 s, none early. SECOND: none early; its lateness is its rounding (up to a
    second, plus the window) and the pipeline's own latency, shown, not judged."""
    a = [r["all"] for r in runs]
    early = sum(x["early"] for x in a)
    if options.get("precision") == "SECOND":
        return {"part": "second", "met": met(early == 0), "max_s": f"{max(x['max'] for x in a) / 1000:.2f}",
                "rounding": f"{1 + options.get('dispatcher_max_batching_window', 0):g}"}
    out: dict = {"part": "sub_second", "met": met(early == 0 and all(_in_target(x) for x in a)), "cause": None}
    tails = [r["stages"]["slowest_1pct"] for r in runs if (r.get("stages") or {}).get("slowest_1pct")]
    if tails and not all(_in_target(x) for x in a):
        out["cause"] = {"part": "tail", "fired": mmm([t.get("fired_late_ms") or 0 for t in tails]),
                        "late": mmm(pick(tails, "late_ms"))}
    return out


def _cost(lev: dict) -> dict:
    rows = [[row["lever"], f"{row['rate']:,.0f}", f"{reading}" + (" (costlier)" if reading == row["costlier"] else ""),
             f"{(f := cell['formation'])['invocations_per_timer']:.3f}", f"{f['mean_batch']:.1f}",
             f"{f['billed_ms_per_timer']:.0f}", usd(cell["dispatcher_usd"]), exact(cell["total_on_demand"]),
             " / ".join(f"{f['lateness_ms'][q]:.0f}" for q in ("p50", "p99", "max")), f.get("early", 0)]
            for row in lev["rows"] for reading, cell in row["readings"].items()]
    target = lev["target"]
    at = [r for r in lev["rows"] if r["rate"] == target["rate"]]
    best = min(at, key=lambda r: r["readings"][r["costlier"]]["total_on_demand"])
    cell = best["readings"][best["costlier"]]
    return {"part": "cost", "kind": lev["kind"], "payload": lev["payload"], "rows": rows, "rate": target["rate"],
            "limit": usd(target["usd"]), "met": met(cell["total_on_demand"] <= target["usd"]),
            "rest": exact(cell["total_on_demand"] - cell["dispatcher_usd"]),
            "values": "; ".join(f"{r['lever']}: {exact(r['readings'][r['costlier']]['total_on_demand'])} "
                                f"({exact(min(c['total_on_demand'] for c in r['readings'].values()))} with pollers "
                                f"{min(r['readings'], key=lambda k: r['readings'][k]['total_on_demand'])})" for r in at),
            "groups": ", ".join(f"{g} {usd(v['usd_od'])}"
                                for g, v in sorted(cell["groups"].items(), key=lambda gv: -gv[1]["usd_od"]))}


def levers(data: dict) -> dict | None:
    lev, p = (data.get("cost") or {}).get("levers"), data.get("precision") or {}
    sets = [(DEFAULTS, {}, p.get("runs") or [])] + [(x["lever"], x["options"], x["runs"])
                                                    for x in p.get("lever_runs") or [] if x["runs"]]
    if not lev and len(sets) == 1:
        return None
    out: dict = {"cost": _cost(lev) if lev else None, "engine": None}
    if len(sets) > 1:
        rows = []
        for name, options, runs in sets:
            a, inv = [r["all"] for r in runs], [_dispatcher(r) for r in runs]
            rows.append([name, len(runs), mmm(pick(runs, "delivered")), *(mmm(pick(a, q)) for q in ("p50", "p99", "max")),
                         sum(x["early"] for x in a), mmm(pick(runs, "put_back")), mmm([i[0] for i in inv], 3),
                         mmm([i[1] for i in inv], 1), mmm([i[2] for i in inv]), _judge(runs, options)])
        by = {name: runs for name, _, runs in sets}
        window = next((r for k, r in by.items() if k.startswith("batching")), None)
        per_timer = lambda runs: f"{statistics.median(_dispatcher(r)[0] for r in runs):.3f}"  # noqa: E731
        out["engine"] = {"part": "engine", "n": f"{p['n']:,}", "span_s": f"{p['span_s']:.0f}", "rows": rows,
                         "choice": {"part": "choice", "base": per_timer(by[DEFAULTS]), "window": per_timer(window)}
                         if window else None}
    return out


def _calls(calls: dict) -> str:
    return ", ".join(f"{call.split('.', 1)[1]}{'' if count == 1 else f' {count:g}'}" for call, count in calls.items())


def operation_costs(data: dict) -> dict:
    c: dict = per_million()
    cases = [(f"reschedule {case}", f) for case, f in c["reschedules"].items()]
    cases += [(f"adds: {case}", f) for case, f in c["extras"].items()]
    cases.append(("redrive, per parked delivery (batches of ten)", c["redrive"]))
    return {"rows": [[name, _calls(f["calls"]), f"${f['calls_on_demand']:.3f}", f"**${f['on_demand']:.2f}**",
                      f"${f['provisioned']:.2f}"] for name, f in cases],
            "http": f"{PRICES['apigw_http_per_million']:.2f}", "api_mb": PRICES["lambda_memory_mb"]["api"],
            "call_ms": f"{c['aws_call_ms']:.0f}", "announced_s": c["announced_within_s"],
            "stray": f"{c['stray_drop']['on_demand']:.3f}"}


def cron_lever(data: dict) -> dict:
    rows, even = priced(), break_even_period_s()
    cheaper = [r["design"] for r in rows[1:] if r["on_demand"] < rows[0]["on_demand"]]
    measured = (data.get("cost") or {}).get("periodic_long")
    return {"sweep_s": SWEEP_INTERVAL_S, "repeats": REPEATS, "window_s": DEFAULT_DELAY_WINDOW_SECONDS,
            "window_min": DEFAULT_DELAY_WINDOW_SECONDS // 60, "even_min": f"{even / 60:.0f}",
            "rows": [[r["design"], r["why"], f"{r['wru']:g}", f"{r['rru']:,.3g}", f"${r['on_demand']:.3f}",
                      f"${r['provisioned']:.3f}"] for r in rows],
            "today": {"part": "today", "wru": f"{measured['wru']:.2f}", "rru": f"{measured['rru']:.2f}"}
            if measured else {"part": "today_unmeasured"},
            "cheaper": {"part": "cheaper", "designs": ", ".join(cheaper)} if cheaper else {"part": "none_cheaper"}}
