"""The figures of the engine's own sections: the engine against moto's ceiling, ingest and load."""

from __future__ import annotations

from .fmt import met, mmm, num, pct, pick, verdict

RATES = (("new_connection_long_per_s", "one client, a new connection per request", "long"),
         ("new_connection_short_per_s", "one client, a new connection per request", "short"),
         ("pooled_long_per_s", "8 concurrent keep-alive clients", "long"),
         ("pooled_short_per_s", "8 concurrent keep-alive clients", "short"))
OPS = ("PutItem", "UpdateItem", "SendMessage", "ReceiveMessage (10)", "DeleteMessageBatch (10)")
FLOORS = {"new_connection": 150, "pooled": 400}  # creates a second, empty engine
FULL_RATIO = 0.8  # a full table's create rate, as a share of the empty engine's
FLAT_SHARE = 0.01  # "flat over the soak": growth over its second half under 1 % of the peak


def ceiling_calls(c: dict) -> str:
    """What moto answered, one kind of call at a time, and the timers and deliveries a second that allows."""
    return (", ".join(f"{op} {num(c['calls_per_s'].get(op))}/s" for op in OPS)
            + f"; {num(c['timers_per_s'])} timers/s, {num(c['deliveries_per_s'])} deliveries/s")


def engine(data: dict) -> dict | None:
    e = data.get("engine") or {}
    runs = e.get("runs")
    if not runs:
        return None
    out: dict = {"waiting": num(e["waiting"]), "n": e["n"], "n_pooled": 2 * e["n"], "clients": e["clients"],
                 "load_s": mmm(pick(runs, "full", "load_s"), 1), "ops": " | ".join(OPS),
                 "ceilings": [[k + 1, *(num(r["ceiling"]["calls_per_s"].get(op)) for op in OPS),
                               num(r["ceiling"]["timers_per_s"]), num(r["ceiling"]["deliveries_per_s"])]
                              for k, r in enumerate(runs)],
                 "creates": [[client, path, mmm(pick(runs, "empty", key)), mmm(pick(runs, "full", key)),
                              mmm(pick(runs, "full_over_empty", key), 2)] for key, client, path in RATES],
                 "core_shares": None, "idle": None, "soak": None}
    if all(r["empty"].get("core_share") for r in runs):
        shares = {key: pick(runs, "empty", "core_share", key.removesuffix("_per_s")) for key, _, _ in RATES}
        out["core_shares"] = {"part": "core_shares", "rows": [
            [client, path, mmm(pick(shares[key], "engine"), 2), mmm(pick(shares[key], "moto"), 2)]
            for key, client, path in RATES]}
    for kind in FLOORS:
        keys = [f"{kind}_{path}_per_s" for path in ("long", "short")]
        out[kind] = " / ".join(mmm(pick(runs, "empty", k)) for k in keys)
        out[f"{kind}_floor"] = FLOORS[kind]
        out[f"{kind}_verdict"] = verdict([all(r["empty"][k] >= FLOORS[kind] for k in keys) for r in runs])
    out["ratios"] = " / ".join(mmm(pick(runs, "full_over_empty", k), 2) for k, _, _ in RATES)
    out["ratio_verdict"] = verdict([all(v >= FULL_RATIO for v in r["full_over_empty"].values()) for r in runs])
    out["ceiling_summary"] = ", ".join(f"{op} {mmm(pick(runs, 'ceiling', 'calls_per_s', op))}" for op in OPS)
    out.update(ceiling_threads=runs[0]["ceiling"].get("threads", 8),
               timers_per_s=mmm(pick(runs, "ceiling", "timers_per_s")),
               deliveries_per_s=mmm(pick(runs, "ceiling", "deliveries_per_s")))
    i = e.get("idle")
    out["idle_summary"] = (f"{pct(i['engine_core_share'])} / {pct(i['moto_core_share'])} (over {num(i['seconds'])} s)"
                           if i else "not measured")
    if i:
        out["idle"] = {"part": "idle", "seconds": num(i["seconds"]), "engine": pct(i["engine_core_share"]),
                       "moto": pct(i["moto_core_share"])}
    s = e.get("soak")
    out["soak_summary"] = {"part": "soak_summary" if s else "no_soak"}
    if s:
        samples = s["samples"]
        step = max(1, round(len(samples) / 8))
        shown = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
        figures = {"waiting": num(s["waiting"]), "seconds": num(s["seconds"]), "samples": len(samples),
                   "first": num(s["first_mb"]), "peak": num(s["peak_mb"]), "last": num(s["last_mb"]),
                   "growth": f"{s['growth_second_half_mb']:+.1f}", "flat_share": pct(FLAT_SHARE, 0),
                   "flat": met(s["growth_second_half_mb"] <= FLAT_SHARE * s["peak_mb"]),
                   "rows": [[num(x["t_s"]), num(x["engine_mb"]), num(x["moto_mb"]), num(x["engine_mb"] + x["moto_mb"])]
                            for x in shown]}
        out["soak"] = {"part": "soak", **figures}
        out["soak_summary"].update(figures)
    return out


def ingest(data: dict) -> dict | None:
    g = data.get("ingest") or {}
    runs = g.get("runs")
    if not runs:
        return None
    c, b = g["concurrency"], g["batch"]
    rows = [["single client, creates/s", mmm(pick(runs, "single_per_s"), 1)],
            ["single client, latency p50 ms", mmm(pick(runs, "single_latency_ms", "p50"), 1)],
            [f"{c} clients, creates/s", mmm(pick(runs, "concurrent_per_s"), 1)],
            [f"{c} clients, answers 5xx", mmm(pick(runs, "concurrent_5xx"))],
            [f"batches of {b} (`POST /schedule-batches`), one client, schedules/s", mmm(pick(runs, "batch_per_s"), 1)],
            [f"batches of {b}, {c} clients, schedules/s", mmm(pick(runs, "batch_concurrent_per_s"), 1)],
            ["batch requests refused or with an item not created",
             mmm([r["batch_failed_requests"] + r["batch_concurrent_failed_requests"] for r in runs])],
            ["api handler called directly (no HTTP), create p50 ms", mmm(pick(runs, "handler_direct_create_ms", "p50"), 1)],
            ["HTTP round trip of a `GET` answered 404, p50 ms", mmm(pick(runs, "http_get_404_ms", "p50"), 1)]]
    rows += [[f"`PATCH /schedules/{{id}}` {what}, p50 / p99 ms", f"{mmm(pick(runs, 'reschedule_ms', kind, 'p50'), 1)} / "
              f"{mmm(pick(runs, 'reschedule_ms', kind, 'p99'), 1)}"]
             for kind, what in (("long_to_long", "to another day"), ("long_to_window", "into the window (10 min)"),
                                ("long_to_soon", "to 5 s out (announced)"))]
    wi = g.get("what_if_nodelay")
    if wi:
        rows += [["what-if (bench-side patch): TCP_NODELAY on the engine's HTTP servers, single client creates/s",
                  num(wi["single_per_s"], 1)],
                 ["what-if: the same, `GET` 404 round trip p50 ms", num(wi["http_get_404_ms"]["p50"], 1)]]
    return {"n": g["n"], "concurrency": c, "batch": b, "rows": rows, "single": rows[0][1], "concurrent": rows[2][1],
            "batches": f"{rows[4][1]} / {rows[5][1]}"}


MODES = (("single", "`POST /schedules`, one schedule a request"),
         ("batch", "`POST /schedule-batches`, 10 schedules a request"))


def load(data: dict) -> dict | None:
    d = data.get("load") or {}
    runs = d.get("runs")
    if not runs:
        return None
    rows, odd = [], []
    for mode, label in MODES:
        for k, run in enumerate(runs):
            x = run.get(mode)
            if not x:
                continue
            req, idle, busy = x["request_latency_ms"], x["get_idle_ms"], x["get_loaded_ms"]
            before, after = x["memory_mb"]["before_load"], x["memory_mb"]["after_load"]
            rows.append([label, k + 1, num(x["creates_per_s"]), num(x["seconds"], 1), x["failed_creates"],
                         f"{num(req.get('p50'), 1)} / {num(req.get('p99'), 1)}",
                         f"{num(idle.get('p50'), 1)} / {num(idle.get('p99'), 1)}",
                         " / ".join(num(busy.get(q), 1) for q in ("p50", "p99", "max")) + f" ({busy.get('n', 0)})",
                         f"{num(before['engine']['rss'])}, {num(after['engine']['peak'])}",
                         f"{num(before['moto']['rss'])}, {num(after['moto']['peak'])}"])
            if x["get_not_200"] or x["engine_errors_logged"]:
                odd.append(f"{mode} #{k + 1}: {x['get_not_200']} GETs not answered 200, {x['engine_errors_logged']} "
                           "errors logged by the engine")
    peaks = " / ".join(mmm([max(r[m]["memory_mb"]["after_load"][proc]["peak"] for m, _ in MODES if r.get(m)) for r in runs])
                       for proc in ("engine", "moto"))
    gets = "; ".join(" / ".join(mmm(pick(runs, mode, "get_loaded_ms", q), 1) for q in ("p50", "p99", "max"))
                     + f" ms ({label.split(',')[1].strip()})" for mode, label in MODES)
    return {"n": num(d["n"]), "clients": d["clients"], "batch": d["batch"], "due_in_h": num(d["due_in_s"] / 3600),
            "get_rate": num(d["get_rate_per_s"]), "rows": rows,
            "anomalies": {"part": "anomalies", "list": "; ".join(odd)} if odd else {"part": "no_anomaly"},
            "rates": " / ".join(mmm(pick(runs, mode, "creates_per_s")) for mode, _ in MODES), "peaks": peaks, "gets": gets}
