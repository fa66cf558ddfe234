"""The figures of the scale section: the simulation of the deployed pipeline on AWS (``bench.scale``)."""

from __future__ import annotations

from .fmt import met, num
from .pricing import PRICES, SECONDS_PER_MONTH


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


def _variants(rows: list[dict]) -> tuple[dict, dict]:
    """The sparse and the dense rows, each by variant: ``none`` (as sent), ``lead`` (sent to surface a cold start
    earlier) and ``warm`` (pinged every ``warm_every_s``; absent from runs recorded before pings were simulated)."""
    by_rate: dict[float, dict] = {}
    for r in rows:
        kind = "warm" if r.get("warm_every_s") else "lead" if r["lead_s"] else "none"
        by_rate.setdefault(r["rate"], {})[kind] = r
    sparse, dense = (by_rate[rate] for rate in sorted(by_rate))
    return sparse, dense


def _extra_ms(base: dict, other: dict) -> float:
    """Billed milliseconds a timer of ``other`` more than of ``base``."""
    return other["cost"]["billed_ms_per_timer"] - base["cost"]["billed_ms_per_timer"]


def _cold_pct(r: dict, nd: int = 0) -> str:
    return num(100 * r["cold_starts"] / r["invocations"], nd)


def _sparse_lead(sparse: dict, dense: dict, target: float, usd_per_s: float) -> dict:
    """The lead as an alternative: its p99 at sparse traffic, and what every timer pays for it in billed wait, per
    timer and per million invocations of a warm dispatcher (the lead waited out)."""
    lead = sparse["lead"]["lead_s"]
    extra = {"sparse": _extra_ms(sparse["none"], sparse["lead"]), "dense": _extra_ms(dense["none"], dense["lead"])}
    return {"part": "sparse_lead", "lead": num(lead, 1), "p99_lead": num(sparse["lead"]["lateness_ms"]["p99"]),
            "met_lead": met(sparse["lead"]["lateness_ms"]["p99"] <= target),
            "extra_sparse": num(extra["sparse"]), "extra_dense": num(extra["dense"]),
            "usd_sparse": _usd(extra["sparse"] / 1000 * usd_per_s * 1e6),
            "usd_dense": _usd(extra["dense"] / 1000 * usd_per_s * 1e6),
            "usd_invocation": _usd(lead * usd_per_s * 1e6), "usd_batch": _usd(lead * usd_per_s * 1e6 / 10),
            "dense_rate": num(dense["none"]["rate"]), "dense_p99": num(dense["none"]["lateness_ms"]["p99"]),
            "dense_p99_lead": num(dense["lead"]["lateness_ms"]["p99"])}


def _sparse_warm(d: dict, sparse: dict, target: float, usd_per_s: float) -> dict:
    """The design's verdict: the sparse traffic kept warm by pings, its cold starts, and what the pings cost a month
    (each one invocation and ``ping_ms`` billed) and per million timers at that traffic."""
    warm = sparse["warm"]
    every = warm["warm_every_s"]
    pings_month = SECONDS_PER_MONTH / every
    ping_ms = d["profile"]["ping_ms"]
    usd_month = pings_month * (PRICES["lambda_per_million_requests"] / 1e6 + ping_ms / 1000 * usd_per_s)
    timers_month = SECONDS_PER_MONTH * warm["rate"]
    extra = _extra_ms(sparse["none"], warm)
    return {"part": "sparse_verdict_warm", "every": num(every / 60), "p99_warm": num(warm["lateness_ms"]["p99"]),
            "met_warm": met(warm["lateness_ms"]["p99"] <= target),
            "cold_warm": num(warm["cold_starts"]), "invocations_warm": num(warm["invocations"]),
            "cold_pct_warm": _cold_pct(warm, 1), "pings_month": num(pings_month), "ping_ms": num(ping_ms),
            "usd_pings_month": _usd(usd_month), "timers_month": num(timers_month),
            "usd_pings_million": _usd(usd_month / timers_month * 1e6),
            "extra_warm": num(extra), "usd_extra_warm": _usd(extra / 1000 * usd_per_s * 1e6)}


def _pings(r: dict) -> str:
    return f"{num(r['pings'])} ({num(r['ping_cold_starts'])})" if r.get("warm_every_s") else "none"


def _sparse(d: dict) -> dict:
    """Sparse traffic's cold starts: each row as sent, with a lead of one cold start and kept warm by pings; the
    verdict on the pinged sparse traffic, with the lead as the alternative and its price (a run recorded before pings
    were simulated: the verdict on the traffic as sent, and the lead)."""
    rows, target = d["sparse"], d.get("sparse_target_ms", 100.0)
    sparse, dense = _variants(rows)
    usd_per_s = PRICES["lambda_memory_mb"]["dispatcher"] / 1024 * PRICES["lambda_arm_per_gb_second"]  # a billed second
    table = [[r["scenario"], f"{r['timers']:,}", f"{num(r['cold_starts'])} of {num(r['invocations'])} ({_cold_pct(r)} %)",
              _pings(r), _late(r), r["early"], num(r["cost"]["billed_ms_per_timer"]),
              _usd(r["cost"]["dispatcher_per_million"])] for r in rows]
    none, warm = sparse["none"], sparse.get("warm")
    verdict = _sparse_warm(d, sparse, target, usd_per_s) if warm else {"part": "sparse_verdict_lead"}
    verdict.update(target=num(target), p99=num(none["lateness_ms"]["p99"]), met=met(none["lateness_ms"]["p99"] <= target),
                   cold=_cold_pct(none), alternative=_sparse_lead(sparse, dense, target, usd_per_s))
    every = warm["warm_every_s"] if warm else None
    return {"part": "sparse", "rows": table, "verdict": verdict, "keep": num(d["profile"]["lambda_idle_keep_s"]),
            "init": num(1000 * d["profile"]["lat_cold_start_s"]), "dense_rate": num(dense["none"]["rate"]),
            "lead": num(sparse["lead"]["lead_s"], 1),
            "design": {"part": "sparse_design", "every": num(every / 60)} if every else None,
            "warm_variant": {"part": "sparse_warm_variant", "every_s": num(every)} if every else None}


def _sparse_summary(d: dict) -> dict | None:
    """The summary's row: the pinged sparse traffic's p99 and verdict, beside it as sent and with a lead instead
    (a run recorded before pings were simulated: as sent, beside the lead)."""
    if not d.get("sparse"):
        return None
    sparse, _ = _variants(d["sparse"])
    none, lead = sparse["none"], sparse["lead"]
    target = d.get("sparse_target_ms", 100.0)
    out = {"part": "sparse_summary_lead", "p99": num(none["lateness_ms"]["p99"]), "target": num(target),
           "met": met(none["lateness_ms"]["p99"] <= target), "lead": num(lead["lead_s"], 1),
           "p99_lead": num(lead["lateness_ms"]["p99"]), "extra": num(_extra_ms(none, lead))}
    warm = sparse.get("warm")
    if warm:
        out.update(part="sparse_summary", every=num(warm["warm_every_s"] / 60), p99_warm=num(warm["lateness_ms"]["p99"]),
                   met_warm=met(warm["lateness_ms"]["p99"] <= target))
    return out


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
