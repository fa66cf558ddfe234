"""The figures of the scale section: the simulation of the deployed pipeline on AWS (``bench.scale``)."""

from __future__ import annotations

from .fmt import met, num
from .pricing import PRICES


def _usd(x: float | None) -> str:
    return "n/a" if x is None else (f"${x:,.2f}" if x >= 0.01 else f"${x:,.4f}")


def _throttles(row: dict) -> dict:
    shown = ", ".join(f"{k} {v:,}" for k, v in row["throttles"].items() if v)
    failed = row.get("failed_deliveries", 0)
    return {"part": "throttles" if shown or failed else "none", "shown": shown,
            "failed": {"part": "failed", "n": f"{failed:,}", "comma": ", " if shown else ""} if failed else None}


def _late(row: dict) -> str:
    late = row.get("lateness_ms")
    return " / ".join(num(late[q]) for q in ("p50", "p99", "max")) if late else "n/a"


def _ebs(row: dict) -> dict:
    e = row["ebs"]
    if "last_delivery_s" in e:
        return {"part": "ebs_burst", "last": num(e["last_delivery_s"]), "p50": num(e["p50_ms"] / 1000), "usd": _usd(e["usd"])}
    return {"part": "ebs_keeps_up" if e["keeps_up"] else "ebs_behind", "usd": _usd(e["usd"]),
            "growth": num(e.get("backlog_growth_per_s"))}


def _limit(row: dict) -> dict:
    """What held a burst back, read from its throttles and its peak concurrency."""
    t = row["throttles"]
    if t.get("dynamodb"):
        wru = row.get("table_wru")
        quota = wru is not None and wru >= row.get("table_quota_wru", wru)
        return {"part": "limit_table", "wru": num(wru), "why": {"part": "table_quota" if quota else "table_ramp"}}
    return {"part": "limit_lambda" if t.get("lambda") else "limit_ramp"}


def _with(row: dict) -> str:
    return row["scenario"].split(": ", 1)[-1]


def _verdict(big: dict, d: dict) -> dict:
    ok = big["last_delivery_s"] <= d["target_s"] and big["early"] == 0
    out = {"part": "verdict_met" if ok else "verdict_missed", "timers": f"{big['timers']:,}", "met": met(ok),
           "last": num(big["last_delivery_s"], 1), "early": big["early"], "limit": _limit(big)}
    raised = d.get("raised", [])
    good = [r for r in raised if r["last_delivery_s"] <= d["target_s"] and r["early"] == 0]
    out["tail"] = ({"part": "met_with", "with": _with(good[0]), "last": num(good[0]["last_delivery_s"], 1)} if good
                   else {"part": "none_met"})
    missed = [{"part": "missed_one", "with": _with(r), "last": num(r["last_delivery_s"]), "limit": _limit(r)}
              for r in raised if r not in good]
    out["missed"] = {"part": "missed", "list": missed} if missed else None
    return out


def _sparse(d: dict) -> dict:
    """Sparse traffic's cold starts: each row without and with a lead of one cold start, the verdict, and what the
    lead costs in billed wait, per timer and per million invocations of a warm dispatcher (the lead waited out)."""
    rows, target = d["sparse"], d.get("sparse_target_ms", 100.0)
    sparse, sparse_lead, dense, dense_lead = rows
    lead = sparse_lead["lead_s"]
    usd_per_s = PRICES["lambda_memory_mb"]["dispatcher"] / 1024 * PRICES["lambda_arm_per_gb_second"]  # a billed second
    table = [[r["scenario"], f"{r['timers']:,}", f"{num(r['cold_starts'])} of {num(r['invocations'])} "
              f"({num(100 * r['cold_starts'] / r['invocations'])} %)", _late(r), r["early"],
              num(r["cost"]["billed_ms_per_timer"]), _usd(r["cost"]["dispatcher_per_million"])] for r in rows]
    ok = sparse["lateness_ms"]["p99"] <= target
    ok_lead = sparse_lead["lateness_ms"]["p99"] <= target
    extra = {key: r2["cost"]["billed_ms_per_timer"] - r1["cost"]["billed_ms_per_timer"]
             for key, r1, r2 in (("sparse", sparse, sparse_lead), ("dense", dense, dense_lead))}
    return {"part": "sparse", "rows": table, "target": num(target), "p99": num(sparse["lateness_ms"]["p99"]),
            "met": met(ok), "cold": num(100 * sparse["cold_starts"] / sparse["invocations"]), "lead": num(lead, 1),
            "p99_lead": num(sparse_lead["lateness_ms"]["p99"]), "met_lead": met(ok_lead),
            "keep": num(d["profile"]["lambda_idle_keep_s"]), "init": num(1000 * d["profile"]["lat_cold_start_s"]),
            "extra_sparse": num(extra["sparse"]), "extra_dense": num(extra["dense"]),
            "usd_sparse": _usd(extra["sparse"] / 1000 * usd_per_s * 1e6),
            "usd_dense": _usd(extra["dense"] / 1000 * usd_per_s * 1e6),
            "usd_invocation": _usd(lead * usd_per_s * 1e6), "usd_batch": _usd(lead * usd_per_s * 1e6 / 10),
            "dense_rate": num(dense["rate"]), "dense_p99": num(dense["lateness_ms"]["p99"]),
            "dense_p99_lead": num(dense_lead["lateness_ms"]["p99"])}


def _sparse_summary(d: dict) -> dict | None:
    if not d.get("sparse"):
        return None
    sparse, sparse_lead = d["sparse"][:2]
    target = d.get("sparse_target_ms", 100.0)
    return {"part": "sparse_summary", "p99": num(sparse["lateness_ms"]["p99"]), "target": num(target),
            "met": met(sparse["lateness_ms"]["p99"] <= target), "lead": num(sparse_lead["lead_s"], 1),
            "p99_lead": num(sparse_lead["lateness_ms"]["p99"]),
            "extra": num(sparse_lead["cost"]["billed_ms_per_timer"] - sparse["cost"]["billed_ms_per_timer"])}


def scale(data: dict) -> dict | None:
    d = data.get("scale") or {}
    rows = d.get("rows")
    if not rows:
        return None
    bursts = [r for r in rows if r["scenario"].startswith("burst")]
    big = max(bursts, key=lambda r: r["timers"])
    c = d.get("calibration") or {}
    out: dict = {
        "table_wru": num(d["burst_table_wru"]), "target_s": num(d["target_s"]), "big_timers": f"{big['timers']:,}",
        "feed": {"part": "feed", "claims": num(big["feed"]["claims_per_s"]), "sends": num(big["feed"]["enqueues_per_s"]),
                 "shards": big["feed"]["stream_shards"], "late": f"{big['fed_after_due_minus_1s']:,}"}
        if big.get("feed") else None,
        "rows": [[r["scenario"], f"{r['timers']:,}", f"{num(r['last_delivery_s'], 1)} s", _late(r), r["early"], _throttles(r),
                  f"{num(r['mean_batch'], 2)} ({num(100 * r['batch_share'].get('1', 0))} % alone)",
                  num((r.get("cost") or {}).get("billed_ms_per_timer")),
                  f"{_usd((r.get('cost') or {}).get('usd'))} ({_usd((r.get('cost') or {}).get('per_million'))}/M)", _ebs(r)]
                 for r in rows],
        "raised": [[label, f"{num(r['last_delivery_s'], 1)} s", _late(r), r["early"], _throttles(r), num(r["peak_concurrency"])]
                   for label, r in [("default quotas", big), *((_with(r), r) for r in d.get("raised", []))]],
        "verdict": _verdict(big, d), "creates_s": num(d["creates"][0]["seconds"]),
        "creates": [[num(x["rate"]), num(x["accepted_per_s"]), _throttles(x), num(x["api_peak_concurrency"]),
                     num(x["ebs_accepted_per_s"])] for x in d["creates"]],
        "provisioned": [[r["scenario"].split(" s, ", 1)[-1], f"{r['timers']:,} / {r['refused_creates']:,} / {r['delivered']:,}",
                         f"{num(r['last_delivery_s'], 1)} s", _late(r), r["early"], _throttles(r),
                         ", ".join(f"{num(s['t_s'] / 60)}: {num(s['wcu'], 1)}" for s in r["capacity_steps"])
                         or {"part": "fixed"}] for r in d["provisioned"]],
        "batches": [[r["scenario"], *(num(100 * r["batch_share"].get(str(k), 0)) + " %" for k in range(1, 11)),
                     num((r.get("cost") or {}).get("invocations_per_timer"), 2)]
                    for r in rows if not r["scenario"].startswith("burst") and r.get("batch_share")],
        "calibration": {"part": "calibration", "calls": ", ".join(f"{k} {num(v)}/s" for k, v in c["ceiling_calls_per_s"].items()),
                        "pollers": c["dispatcher_pollers"], "rows": [
            [f"{int(size):,}", ", ".join(num(x, 1) for x in s["engine_s"])
             + ("" if s["engine_complete"] else " (incomplete within the 60 s cap: projected, n / delivered rate)"),
             num(s["simulated_s"], 1), num(s["ratio"], 2), "yes" if abs(s["ratio"] - 1) <= 0.2 else "**no**"]
            for size, s in c["sizes"].items()]} if c.get("sizes") else {"part": "no_calibration"},
        "ratios": {"part": "ratios", "ratios": ", ".join(f"{int(k):,}: {num(v['ratio'], 2)}" for k, v in c["sizes"].items()),
                   "met": met(all(abs(v["ratio"] - 1) <= 0.2 for v in c["sizes"].values()))} if c.get("sizes") else None,
        "big_last": num(big["last_delivery_s"], 1), "big_early": big["early"],
        "big_met": met(big["last_delivery_s"] <= d["target_s"] and big["early"] == 0),
        "big_ebs": num(big["ebs"]["last_delivery_s"]), "parameters": [],
        "sparse": _sparse(d) if d.get("sparse") else None, "sparse_summary": _sparse_summary(d)}
    out["summary_rows"] = [row for row in (out["sparse_summary"], out["ratios"]) if row]  # one a line, none blank
    w = d["waiting"]
    out["waiting"] = {"part": "waiting", "scenario": w["scenario"], "gb": num(w["storage_gb"], 1),
                      "usd": _usd(w["usd_per_month"]), "quota": f"{w['ebs']['quota']:,}",
                      "fits": {"part": "within" if w["ebs"]["fits_quota"] else "beyond"}}
    for p in d["parameters"]:
        src = p["source"]
        src = f"[{src.split('/')[2]} … {src.rstrip('/').split('/')[-1][:60]}]({src})" if src.startswith("http") else src
        value = "unlimited" if p["value"] == float("inf") else num(p["value"], 3 if 0 < p["value"] < 1 else 0)
        out["parameters"].append([f"`{p['key']}`", f"{value} {p['unit']}", p["what"], src])
    return out
