"""The figures of the timing sections: precision, burst and the kinds of target."""

from __future__ import annotations

from . import report_outcomes
from .fmt import met, mmm, num, pick, verdict
from .report_engine import ceiling_calls
from .target_costs import CALL_MS, HTTPS_HEADER_BYTES, TARGET_PRICES, per_kind

BURST_TARGET_S = {1000: 5, 10_000: 30}  # seconds after the due second
P99_MS, MAX_MS = 100, 1000  # precision: p99 and max lateness, and never early


def precision_sets(p: dict) -> list[tuple[str, list[dict]]]:
    """The precision section's run sets: the default window's and the small window's."""
    return [("default window", p.get("runs") or []), (f"{p['mixed_window_s']} s window", p.get("mixed_runs") or [])]


def _path(r: dict, path: str | None) -> dict:
    """One repeat's distribution for a path (None: all timers), with the undelivered ones."""
    return {**(r["all"] if path is None else r["by_path"].get(path, {"n": 0, "early": 0})),
            "undelivered": r.get("undelivered", 0)}


def _judged(runs: list[dict], path: str | None) -> dict:
    if not runs:
        return {"value": "not measured", "verdict": "n/a"}
    ds = [_path(r, path) for r in runs]
    lost = sum(d["undelivered"] for d in ds)
    return {"value": f"{mmm(pick(ds, 'p99'))} ms / {mmm(pick(ds, 'max'))} ms / {sum(d['early'] for d in ds)} "
                     f"({mmm(pick(ds, 'n'))} timers" + (f"; {lost} undelivered" if lost else "") + ")",
            "verdict": verdict([d.get("n", 0) > 0 and d["p99"] <= P99_MS and d["max"] <= MAX_MS and d["early"] == 0
                                and not d["undelivered"] for d in ds])}


def _by_path(r: dict) -> list[tuple[str, dict]]:
    return sorted(r["by_path"].items(), key=lambda kv: kv[0] != "short")


def precision(data: dict) -> dict | None:
    p = data.get("precision") or {}
    if not p.get("runs"):
        return None
    from cdk_delayed_scheduler.local import EngineOptions

    sets = precision_sets(p)
    out: dict = {"n": num(p["n"]), "span_s": num(p["span_s"]), "lead": "-".join(f"{x:.0f}" for x in p["lead_s"]),
                 "sweep_s": num(p["sweep_interval_s"]), "window_s": EngineOptions().delay_window,
                 "mixed_window": p["mixed_window_s"], "anchor": {"part": "anchor"}, "stages": None, "profile": None,
                 "runs": [[label, path, i + 1, d["n"], *(num(d[q]) for q in ("p50", "p90", "p99", "max")), d["early"]]
                          for label, runs in sets for i, r in enumerate(runs) for path, d in _by_path(r)],
                 "across": [], "observations": []}
    for label, runs in sets:
        for path in sorted({k for r in runs for k in r["by_path"]}, key=lambda k: k != "short"):
            ds = [r["by_path"].get(path, {}) for r in runs]
            out["across"].append([label, path, *(mmm(pick(ds, q)) for q in ("p50", "p90", "p99", "max")),
                                  sum(d.get("early", 0) for d in ds)])
        out["observations"] += [{"part": "observation", "set": label, "repeat": i + 1, "undelivered": r["undelivered"],
                                 "other_path": r["path_differs_from_plan"], "retries": r["create_retries_5xx"],
                                 "moto_errors": r["moto_errors"], "put_back": r["put_back"], "duplicates": r["duplicates"],
                                 "create_lag": num(r["create_lag_s"].get("p99"), 2)} for i, r in enumerate(runs)]
    out.update({f"{key}_{f}": v for key, runs, path in (("default", sets[0][1], None), ("short", sets[1][1], "short"),
                                                         ("long", sets[1][1], "long"))
                for f, v in _judged(runs, path).items()})
    stages = [[window, i + 1, label, num(row["late_ms"]), num(row["created"], 2), num(row["claimed"], 2),
               num(row["enqueued"], 2), num(row["fired_late_ms"]),
               *((st["late_over_100ms"], st["late_over_100ms_enqueued_after_due_minus_1s"],
                  st["late_over_100ms_fired_late_over_100ms"]) if label == "all" else ("", "", ""))]
              for window, runs in sets for i, r in enumerate(runs) if (st := r.get("stages"))
              for label, row in (("all", st["all"]), ("slowest 1 %", st["slowest_1pct"]))]
    if stages:
        out["stages"] = {"part": "stages", "rows": stages}
    prof = p["runs"][0].get("profile")
    if prof:
        out["profile"] = {"part": "profile", "cpu_per_wall": num(prof["cpu_per_wall"], 2), "roles": ", ".join(
            f"{k} {v:.1f}" for k, v in prof["cpu_s_by_role"].items() if v >= 0.5)}
    out["outcomes"] = report_outcomes.precision(p)
    out["outcomes_row"] = out["outcomes"].pop("summary_row") if out["outcomes"] else None
    return out


def _burst_row(size: int, runs: list[dict]) -> dict:
    cap = BURST_TARGET_S.get(size)
    done = [r.get("time_to_last_s") for r in runs]
    row = {"part": "summary_row", "size": num(size), "goal": {"part": "goal" if cap else "no_goal", "cap": cap},
           "rate": mmm(pick(runs, "delivered_rate_per_s")),
           "share": mmm([100 * r["rate_over_ceiling"] for r in runs if "rate_over_ceiling" in r]),
           "verdict": verdict([d is not None and d <= cap for d in done]) if cap else "n/a"}
    if all(d is not None for d in done):
        row["value"] = {"part": "done", "last": mmm(done, 1)}
    else:
        row["value"] = {"part": "cut", "delivered": mmm(pick(runs, "delivered")), "size": num(size),
                        "cap": mmm(pick(runs, "cap_s")), "projected": mmm(pick(runs, "projected_time_to_last_s"))}
    return row


def profile(prof: dict, title: str) -> dict:
    total = sum(prof["cpu_s_by_role"].values()) or 1
    return {"part": "profile", "title": title, "cpu_per_wall": num(prof["cpu_per_wall"], 2),
            "roles": [[role, f"{s:.1f} ({s / total * 100:.0f} %)"] for role, s in prof["cpu_s_by_role"].items()],
            "packages": [[pkg, f"{share * 100:.0f} %"] for pkg, share in prof["busy_sample_share_by_package"].items()],
            "frames": ", ".join(f"`{k}` {v * 100:.0f} %" for k, v in prof["hot_frames"][:8]),
            "locks": {"part": "locks", "samples": ", ".join(f"`{k}` {v}" for k, v in prof["lock_wait_samples"].items())}
            if prof.get("lock_wait_samples") else None}


def burst(data: dict) -> dict | None:
    b = data.get("burst") or {}
    if not b.get("by_size"):
        return None
    r0 = next(rs[0] for rs in b["by_size"].values() if rs)
    sizes = []
    for size, runs in b["by_size"].items():
        cap = BURST_TARGET_S.get(int(size))
        late = [i + 1 for i, r in enumerate(runs) if not r.get("loaded_before_due", True)]
        prof = next((r.get("profile") for r in runs if r.get("profile")), None)
        sizes.append({"part": "size", "size": num(int(size)), "target": {"part": "target", "cap": cap} if cap else None,
                      "late": {"part": "late", "repeats": ", ".join(map(str, late))} if late else None,
                      "profile": profile(prof, f"Profile of repeat 1 of {int(size):,}") if prof else None,
                      "rows": [[i + 1, num(r.get("load_s"), 1), num(r["delivered"]), num(r.get("time_to_last_s"), 1),
                                num(r.get("delivered_rate_per_s"), 1),
                                f"{num(100 * r['rate_over_ceiling'] if 'rate_over_ceiling' in r else None)} %",
                                num(r.get("projected_time_to_last_s"), 1), num(r["aws_requests"].get("moto_requests_per_s")),
                                num(r["aws_requests"]["to_moto"] / r["delivered"] if r["delivered"] else None, 1),
                                " / ".join(num(r["lateness_ms"].get(q)) for q in ("p50", "p99", "max")), r["early"],
                                r["duplicates"]] for i, r in enumerate(runs)]})
    return {"sizes_list": ", ".join(num(n) for n in b["sizes"]), "lead_s": num(b["lead_s"]),
            "window_s": r0.get("delay_window_s"), "workers": r0.get("dispatcher_workers"),
            "caps": ", ".join(f"{float(c):.0f} s for {int(n):,}" for n, c in b["cap_s"].items()),
            "ceiling": {"part": "ceiling", "calls": ceiling_calls(b["ceiling"]), "threads": b["ceiling"].get("threads", 8)}
            if b.get("ceiling") else None, "by_size": sizes,
            "rows": [_burst_row(size, (b.get("by_size") or {}).get(str(size)) or [])
                     for size in sorted({*BURST_TARGET_S, *b["sizes"]})]}


WHERE = {
    "lambda": "the local function called through the runtime's Lambda target",
    "sqs": "`SentTimestamp` in the target queue",
    "sns": "`SentTimestamp` in a queue subscribed to the topic (raw delivery)",
    "eventbridge": "`SentTimestamp` in the queue a rule on the bus sends to",
    "stepfunctions": "`startDate` of the execution the delivery started",
    "https": "arrival at a receiver on 127.0.0.1 that checks the signature (plain HTTP to loopback)",
}


def targets(data: dict) -> dict:
    """The lateness per kind of target (when measured) and what each kind adds per million (always: no run needed)."""
    t = data.get("targets") or {}
    c: dict = per_kind()
    out: dict = {"costs": [[kind, num(k["service"], 3), num(k["call_ms"]), num(k["dispatcher"], 3), num(k["total"], 3)]
                           for kind, k in c["kinds"].items()],
                 "dispatcher_per_ms": num(c["dispatcher_per_ms"], 4), "payload_bytes": c["payload_bytes"],
                 "envelope_bytes": c["envelope_bytes"], "function_ms": num(c["function_ms"]),
                 "standard_price": num(TARGET_PRICES["stepfunctions_standard_per_million_transitions"]),
                 "transitions": c["standard_transitions"], "express_ms": num(c["express_ms"]),
                 "egress": num(TARGET_PRICES["egress_per_gb"], 2), "header_bytes": HTTPS_HEADER_BYTES,
                 "https_ms": num(CALL_MS["https"]), "lateness": None, "summary_row": None}
    kinds = t.get("kinds")
    if kinds:
        lateness = {"part": "lateness", "n": t["n"], "span_s": num(t["span_s"]),
                    "rows": [[kind, WHERE[kind], f"{k['n'] if 'p50' in k else 0} / {t['n']}", num(k.get("p50")),
                              num(k.get("p99")), num(k.get("max")), k["early"], met(k["met"])] for kind, k in kinds.items()],
                    "misses": None if kinds.get("lambda", {}).get("met", True) else {"part": "misses"}}
        out["lateness"] = lateness
        out["summary_row"] = {"part": "summary_row", "n": t["n"], "p99_target": num(t["p99_target_ms"]),
                              "verdict": met(all(k["met"] for k in kinds.values())),
                              "cells": ", ".join(f"{kind} {num(k.get('p99'))} ms / {k['early']}" for kind, k in kinds.items())}
    return out
