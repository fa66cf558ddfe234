"""The figures of the cost section (``bench.cost``): the measured bill per timer, by traffic, payload and door,
the fixed monthly costs, the monthly bill beside EventBridge Scheduler's, and the scenarios as measured."""

from __future__ import annotations

from . import costmodel, report_outcomes
from .fmt import exact, met, num, payload_label, usd
from .pricing import PRICES

DOORS = {"http": "HTTP API", "rest": "REST API", "direct": "direct invoke"}


def _quantity(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _price(r: dict) -> str:
    unit = {"requests": "request", "bytes": "GB"}.get(r["unit"], r["unit"])
    if r["price_per"] == 1e6:
        text = f"${r['unit_price']:g} per million"
    elif r["price_per"] == 1e9:
        text = f"${r['unit_price']:g} per GB"
    else:
        text = f"${r['unit_price']:.10f}".rstrip("0") + f" per {unit}"
    if r.get("prov_unit_price"):
        text += f" (provisioned ${r['prov_unit_price'] * 1e6:.3f} per million)"
    return text


def _column(col: str) -> str:
    return "full batches (heavy)" if col == "heavy" else f"{int(col):,}/s spread"


def _rate(r: float) -> str:
    return f"{r:,.0f}" if r >= 10 else f"{r:.2g}"


def _cause(t: dict) -> dict:
    """The bill's groups, largest first; for a missed target, by how much, and those that alone reach the limit."""
    shown = ", ".join(f"{g} {usd(v)}" for g, v in t["groups"] if v)
    margin = t["limit"] - t["values"][t["worst"]]
    if t["met"]:
        return {"part": "within", "margin": exact(margin), "shown": shown}
    out = {"over": exact(-margin), "column": _column(t["worst"]), "shown": shown, "limit": usd(t["limit"])}
    if not t["alone"] or t["alone"] == len([v for _, v in t["groups"] if v]):
        return {"part": "over_every", **out}
    head = t["groups"][:t["alone"]]
    return {"part": "over_one" if len(head) == 1 else "over_many", **out,
            "terms": " + ".join(f"{g} {usd(v)}" for g, v in head), "total": usd(sum(v for _, v in head))}


def _target(c: dict, t: dict, part: str) -> dict:
    """A path's headline figures against its targets: writes per timer, provisioned and on demand per million."""
    w = c["writes_per_timer"][t["path"]]
    return {"part": part, "path": t["path"], "writes": f"{t['writes']:.2f}", "target": t["writes_target"],
            "writes_met": met(t["writes"] <= t["writes_target"] + 1e-9), "wru": f"{w['wru']:.2f}",
            "by_op": ", ".join(f"{k} {v:.2f}" for k, v in w["by_op"].items()),
            **{f"{key}{suffix}": value for key in ("provisioned", "on_demand") for suffix, value in (
                ("", exact(t[key])), ("_max", usd(t[f"{key}_max"])), ("_met", met(t[key] <= t[f"{key}_max"])))}}


def _summary(c: dict) -> list[dict]:
    rows = [_target(c, t, "writes_row") for t in c["targets"]] + [_target(c, t, "headline_row") for t in c["targets"]]
    for t in c["spread"]["targets"]:
        if list(t["values"]) == ["heavy"] and t["kind"] == f"short, batch creates of {c['levels']['heavy']}":
            continue  # the headline's own row
        rows.append({"part": "spread_row", "what": t["what"], "limit": usd(t["limit"]), "met": met(t["met"]),
                     "values": " / ".join(exact(v) for v in t["values"].values()),
                     "columns": f" ({' / '.join(_column(col) for col in t['values'])})" if len(t["values"]) > 1 else "",
                     "note": {"part": "autoscaled"} if t["mode"] == "provisioned" else None})
    return rows


def cost(data: dict) -> dict | None:
    c = data.get("cost") or {}
    if not c.get("grid"):
        return None
    p, levels, sp, fm = c["prices"], c["levels"], c["spread"], c["fixed_monthly"]
    heavy = levels["heavy"]
    out: dict = {
        "scenario_sizes": ", ".join(str(n) for n in sorted({s["n"] for s in c["scenarios"].values()})),
        "as_of": p["as_of"], "region": p["region"], "sparse": levels["sparse"], "moderate": levels["moderate"],
        "heavy": heavy, "payload": payload_label(c["headline_payload"]), "lambda_request": f"{p['lambda_per_million_requests']:.2f}",
        "sqs_request": f"{p['sqs_per_million_requests']:.2f}", "summary": _summary(c), "alarm": f"{PRICES['cw_alarm_month']:.2f}",
        "headline": [_target(c, t, "headline") for t in c["targets"]],
        "listing": [[path, f"{r['index_writes']:.2f}", f"{usd(r['provisioned'])} / {usd(r['on_demand'])}",
                     f"{usd(r['total_provisioned'])} / {usd(r['total_on_demand'])}"]
                    for path, r in costmodel.listing_addon(c).items()],
        "periodic_long_every_s": c["method"]["periodic_long_every_s"], "long_window_s": c["method"]["long_window_s"],
        "periodic": [], "bom": [], "payloads": [], "doors": [], "fixed": [], "cancel": None,
        "spread_columns": " | ".join(_column(col) for col in ["heavy", *(str(r) for r in sp["rates"])]),
        "spread_rule": "|---" * (1 + len(sp["rates"])), "spread_rows": [], "provisioned": {"part": "provisioned"},
        "formations": [[_rate(f["rate"]), {"part": "scaled" if f["pollers"] == "scaled" else "max"},
                        "random fraction" if f["early_s"] is None else f"{f['early_s'] * 1000:.0f} ms",
                        f"{f['mean_batch']:.2f}", f"{f['invocations_per_timer']:.2f}", f"{f['billed_ms_per_invocation']:.0f}",
                        f"{f['billed_ms_per_timer']:.0f}"] for f in sp["formations"] if f["rate"] in sp["rates"]],
        "targets": [{"part": "target", "what": t["what"], "limit": usd(t["limit"]), "met": met(t["met"]), "cause": _cause(t),
                     "values": ", ".join(f"{_column(col)} {exact(v)}" for col, v in t["values"].items()),
                     "note": {"part": "provisioned_note", "provisioned": {"part": "provisioned"}}
                     if t["mode"] == "provisioned" else None} for t in sp["targets"]]}
    for key, where in (("periodic", "within the window"), ("periodic_long", "beyond the window")):
        r = c.get(key)
        if r:
            late, (ms, how) = r["lateness_ms"], r["durations"]["dispatcher"]
            out["periodic"].append([f"{where}: {r['occurrences']}, {r['batch']:.2f} a batch (dispatcher {ms:.0f} ms: {how})",
                                    ", ".join(f"{k} {v:.2f}" for k, v in {**r["writes"], **r["reads"]}.items()),
                                    f"{r['wru']:.2f}", f"{r['rru']:.2f}",
                                    f"**{usd(r['total_provisioned'])}** / **{usd(r['total_on_demand'])}**",
                                    f"{late['p50']:.0f} / {late['p99']:.0f} / {late['max']:.0f} ms, {late['early']}"])
    for path, h in c["headline"].items():
        x = c["headline_extras"][path]
        out["bom"].append({
            "part": "bom", "path": path.capitalize(), "total_on_demand": usd(h["total_on_demand"]),
            "total_provisioned": usd(h["total_provisioned"]),
            "rows": [[r["group"], r["item"], f"{_quantity(r['quantity'])} {r['unit']}", _price(r), usd(r["usd_od"]),
                      usd(r["usd_prov"])] for r in sorted(h["rows"], key=lambda r: -r["usd_od"])],
            "durations": "; ".join(f"{k} {v[0]:.0f} ms ({v[1]})" for k, v in h["durations"].items()),
            "platform": usd(x["lambda_platform_lines"]), "info": usd(x["log_level_info"]),
            "target_lambda": usd(x["target_lambda_invoke"]), "target_sqs": usd(x["target_sqs_send"])})
    for kind, cells in sp["per_million"].items():
        out["spread_rows"].append([kind, *(f"{usd(cells[col]['total_provisioned'])} / {usd(cells[col]['total_on_demand'])}"
                                           for col in ["heavy", *(str(r) for r in sp["rates"])])])
    for name, d in c["payloads"].items():
        grids = [c["grid"].get(f"{path}/heavy/{name}") for path in ("short", "long")]
        if any(grids):
            out["payloads"].append([f"{payload_label(name)} ({d['kind']})", num(d["json_bytes"]),
                                    f"{num(d['stored_bytes'])} ({d['stored_as']}, {d['stored_ratio'] * 100:.0f} %)",
                                    *(x for g in grids for x in ((f"{g['wru']:.2f}", f"{usd(g['total_provisioned'])} / "
                                                                  f"{usd(g['total_on_demand'])}") if g else ("not run", "")))])
    for door in DOORS:
        for create in ("single", "batch"):
            cells = [c["doors"].get(path, {}).get(f"{door}/{create}") for path in ("short", "long")]
            out["doors"].append([DOORS[door], create if create == "single" else f"batch of {heavy}",
                                 *(f"{usd(d['total_provisioned'])} / {usd(d['total_on_demand'])}" if d else "n/a" for d in cells),
                                 usd(fm[door]["total_on_demand"])])
    seen: set = set()
    for door in DOORS:
        for item in fm[door]["items"]:
            if item["item"] not in seen:
                seen.add(item["item"])
                out["fixed"].append([item["item"], item["assumption"], usd(item["usd"])])
    out["fixed_totals"] = " / ".join(usd(fm[d]["total_on_demand"]) for d in DOORS)
    k = c.get("cancel")
    if k:
        out["cancel"] = {"part": "cancel", "on_demand": usd(k["total_on_demand"]), "provisioned": usd(k["total_provisioned"]),
                         "wru": f"{k['wru']:.1f}", "writes": ", ".join(f"{op} {v:.2f}" for op, v in k["writes"].items())}
    out["outcomes"] = report_outcomes.cost(c)
    if out["outcomes"]:
        out["summary"].append(out["outcomes"].pop("summary_row"))
    out.update(_monthly(c), **_measured(c), **_prices(c))
    return out


def _monthly(c: dict) -> dict:
    sp = c["spread"]
    lead, kms = sp["lead_month"], sp["kms"]
    volume = lambda n: f"{n / 1e9:,.0f} B" if n >= 1e9 else f"{n / 1e6:,.0f} M"  # noqa: E731
    return {"floor": usd(c["fixed_monthly"]["http"]["total_on_demand"]), "retention_h": f"{sp['retention_s'] / 3600:.0f}",
            "lead_days": f"{sp['long_lead_days']:.0f}",
            "monthly": [[volume(m["timers"]), m["kind"], _rate(m["formation"]["rate"]),
                         f"{m['formation']['invocations_per_timer']:.2f}", usd(m["storage"]), f"**{usd(m['on_demand'])}**",
                         usd(m["provisioned"]), usd(m["eventbridge_scheduler"])] for m in sp["monthly"].values()],
            "record_bytes": f"{sp['stored_bytes']['record']:.0f}", "timer_bytes": f"{sp['stored_bytes']['timer']:.0f}",
            "gb_per_million": f"{lead['gb_per_million']:.2f}", "lead_usd": usd(lead["usd_per_million"]),
            "lead_usd_without_pitr": usd(lead["usd_per_million_without_pitr"]), "kms_key": usd(kms["key"]),
            "kms_requests": f"{kms['requests']:,.0f}", "kms_usd": usd(kms["requests_usd"])}


def _measured(c: dict) -> dict:
    scen = {k: s for k, s in c["scenarios"].items() if k.endswith("/" + c["headline_payload"]) or k == "cancel"}
    rows: dict = {}
    for name, s in scen.items():
        for r in s["summary"]["calls_per_timer"]:
            key = (r["caller"], r["service"], r["operation"] + (f" ({r['tag']})" if r["tag"] else ""))
            rows.setdefault(key, {})[name] = r["per_timer"]
    return {"scenario_names": " | ".join(scen), "scenario_rule": "|---" * (3 + len(scen)),
            "calls": [[*key, *(f"{rows[key][n]:.2f}" if n in rows[key] else "" for n in scen)] for key in sorted(rows)],
            "functions": [[name, "; ".join(
                f"{fn} {f['invocations']}, {s['per_request'] if fn == 'api' else round(f['records_mean'], 1)}, "
                f"{f['ms'].get('p50', 0):.0f} / {f['ms'].get('mean', 0):.0f}"
                for fn, f in sorted(s["summary"]["functions"].items()))]
                for name, s in scen.items()],
            "batches": [[b["messages"], b["invocations"], f"{b['mean_ms']:.0f}", f"{b['p50_ms']:.0f}", b["max_ms"]]
                        for b in c["dispatcher_batches"]]}


def _prices(c: dict) -> dict:
    p, a = c["prices"], c["anchors"]
    return {"ebs": f"{a['eventbridge_scheduler']:.2f}", "ebs_free": f"{a['eventbridge_scheduler_free_per_month'] / 1e6:.0f}",
            "sfn": f"{a['stepfunctions_standard']:.0f}", "sfn_transitions": p["stepfunctions_transitions_per_timer"],
            "sfn_transition": f"{p['stepfunctions_standard_per_million_transitions']:.0f}",
            "ddb_wru": p["ddb_od_per_million_wru"], "ddb_rru": p["ddb_od_per_million_rru"], "wcu_h": p["ddb_prov_wcu_hour"],
            "rcu_h": p["ddb_prov_rcu_hour"], "utilisation": f"{p['ddb_prov_utilisation'] * 100:.0f}",
            "sqs": p["sqs_per_million_requests"], "lambda_requests": p["lambda_per_million_requests"],
            "lambda_gb_s": p["lambda_arm_per_gb_second"],
            "memory": ", ".join(f"{k} {v} MB" for k, v in p["lambda_memory_mb"].items()),
            "http": f"{p['apigw_http_per_million']:.2f}", "rest": f"{p['apigw_rest_per_million']:.2f}",
            "logs": p["cw_logs_per_gb"], "metric": p["cw_metric_month"]}
