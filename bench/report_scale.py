"""The scale section of docs/benchmarks.md: the simulation of the deployed pipeline (``bench.scale``)."""

from __future__ import annotations

from .report_engine import fmt, target


def _usd(x) -> str:
    return "n/a" if x is None else (f"${x:,.2f}" if x >= 0.01 else f"${x:,.4f}")


def _throttles(t: dict, failed: int = 0) -> str:
    shown = [f"{k} {v:,}" for k, v in t.items() if v]
    if failed:
        shown.append(f"{failed:,} deliveries failed (write throttled 3 times), handed out again after the visibility timeout")
    return ", ".join(shown) or "none"


def _late(row: dict) -> str:
    late = row.get("lateness_ms")
    return " / ".join(fmt(late[q]) for q in ("p50", "p99", "max")) if late else "n/a"


def _ebs(row: dict) -> str:
    e = row["ebs"]
    if "last_delivery_s" in e:
        return f"last after {fmt(e['last_delivery_s'])} s (p50 {fmt(e['p50_ms'] / 1000)} s); {_usd(e['usd'])}"
    keeps = "keeps up" if e["keeps_up"] else f"falls behind by {fmt(e['backlog_growth_per_s'])} a second"
    return f"{keeps}; {_usd(e['usd'])}"


def _row(row: dict) -> str:
    c = row.get("cost") or {}
    return (f"| {row['scenario']} | {row['timers']:,} | {fmt(row['last_delivery_s'], 1)} s | {_late(row)} | {row['early']} | "
            f"{_throttles(row['throttles'], row.get('failed_deliveries', 0))} | {fmt(row['mean_batch'], 2)} ({fmt(100 * row['batch_share'].get('1', 0))} % alone) | "
            f"{fmt(c.get('billed_ms_per_timer'))} | {_usd(c.get('usd'))} ({_usd(c.get('per_million'))}/M) | {_ebs(row)} |")


def _parameters(d: dict) -> list[str]:
    out = ["| parameter | value | what | source |", "|---|---|---|---|"]
    for p in d["parameters"]:
        src = p["source"]
        src = f"[{src.split('/')[2]} … {src.rstrip('/').split('/')[-1][:60]}]({src})" if src.startswith("http") else src
        value = "unlimited" if p["value"] == float("inf") else fmt(p["value"], 3 if 0 < p["value"] < 1 else 0)
        out.append(f"| `{p['key']}` | {value} {p['unit']} | {p['what']} | {src} |")
    return out


def _calibration(c: dict) -> list[str]:
    if c.get("missing"):
        return [f"Calibration: {c['missing']}.", ""]
    out = ["**Calibration.** The same model with the local engine's own limits: one moto process answering every call "
           "in turn at its measured rates (" + ", ".join(f"{k} {fmt(v)}/s" for k, v in c["ceiling_calls_per_s"].items())
           + f"), {c['dispatcher_pollers']} dispatcher pollers, no Lambda limits. Engine figures: {c['source']} "
           "(the recorded figures, not re-run by this section).", "",
           "| burst | engine: time to the last delivery, s (runs) | simulated, s | simulated / engine median | within ±20 % |",
           "|---|---|---|---|---|"]
    for size, s in c["sizes"].items():
        runs = ", ".join(fmt(x, 1) for x in s["engine_s"])
        note = "" if s["engine_complete"] else " (incomplete within the 60 s cap: projected, n / delivered rate)"
        ok = "yes" if abs(s["ratio"] - 1) <= 0.2 else "**no**"
        out.append(f"| {int(size):,} | {runs}{note} | {fmt(s['simulated_s'], 1)} | {fmt(s['ratio'], 2)} | {ok} |")
    return out + [""]


def _batches(rows: list[dict]) -> list[str]:
    """The batch formation behind the cost: share of dispatcher invocations by messages carried."""
    steady = [r for r in rows if not r["scenario"].startswith("burst") and r.get("batch_share")]
    if not steady:
        return []
    out = ["Dispatcher batch formation (share of invocations carrying k messages; the cost section's heavy case is 10, "
           "and it prices spread-out traffic with this formation, `scenarios.batch_formation`):", "",
           "| scenario | " + " | ".join(str(k) for k in range(1, 11)) + " | invocations per timer |", "|---" * 12 + "|"]
    for r in steady:
        shares = " | ".join(fmt(100 * r["batch_share"].get(str(k), 0)) + " %" for k in range(1, 11))
        out.append(f"| {r['scenario']} | {shares} | {fmt((r.get('cost') or {}).get('invocations_per_timer'), 2)} |")
    return out + [""]


def _limit(row: dict) -> str:
    """What held a burst back, read from its throttles and its peak concurrency."""
    t = row["throttles"]
    if t.get("dynamodb"):
        wru = row.get("table_wru")
        why = ("the on-demand table quota" if wru is not None and wru >= row.get("table_quota_wru", wru) else
               "what an on-demand table serves at once: a new table's 4,000 WRU/s, or twice its previous peak")
        return f"the table's {fmt(wru)} WRU/s ({why}), which throttled the FIRED writes"
    if t.get("lambda"):
        return "Lambda concurrency (the account's 1,000 or the scaling rate), which throttled dispatcher invocations"
    return "the SQS mapping's scaling ramp (5 concurrent invocations, then 300 more a minute)"


def _verdict(big: dict, d: dict) -> str:
    target = d["target_s"]
    ok = big["last_delivery_s"] <= target and big["early"] == 0
    head = (f"Default quotas, {big['timers']:,} timers: last delivery after {fmt(big['last_delivery_s'], 1)} s, "
            f"{big['early']} early: the target is **{'met' if ok else 'missed'}**")
    if ok:
        return head + "."
    met = [r for r in d.get("raised", []) if r["last_delivery_s"] <= target and r["early"] == 0]
    tail = (f"; with {met[0]['scenario'].split(': ', 1)[-1]} it is met in {fmt(met[0]['last_delivery_s'], 1)} s"
            if met else "; none of the raised settings above meets it")
    missed = [f"with {r['scenario'].split(': ', 1)[-1]}, {fmt(r['last_delivery_s'])} s: {_limit(r)}"
              for r in d.get("raised", []) if r not in met]
    return head + f". The limit: {_limit(big)}{tail}." + (
        " Missed still " + "; ".join(missed) + ": faster polling offers the table more writes a second than it serves, "
        "and each write throttled three times fails its delivery until the visibility timeout." if missed else "")


def summary_rows(d: dict | None) -> list[str]:
    rows = (d or {}).get("rows") or []
    bursts = [r for r in rows if r["scenario"].startswith("burst")]
    if not bursts:
        return ["| scale (simulated on AWS): 1,000,000 timers due in one second | not simulated | ≤ 60 s, 0 early | |"]
    big = max(bursts, key=lambda r: r["timers"])
    ok = big["last_delivery_s"] <= d["target_s"] and big["early"] == 0
    out = [f"| scale (simulated on AWS, default quotas): {big['timers']:,} timers due in one second, last delivery / "
           f"early | {fmt(big['last_delivery_s'], 1)} s / {big['early']} | ≤ {fmt(d['target_s'])} s, 0 early: {target(ok)} "
           f"| EventBridge Scheduler at its 1,000/s quota: {fmt(big['ebs']['last_delivery_s'])} s |"]
    sizes = ((d.get("calibration") or {}).get("sizes")) or {}
    if sizes:
        ratios = ", ".join(f"{int(k):,}: {fmt(v['ratio'], 2)}" for k, v in sizes.items())
        out.append(f"| scale: simulated / engine time to the last delivery, bursts | {ratios} | within ±20 %: "
                   f"{target(all(abs(v['ratio'] - 1) <= 0.2 for v in sizes.values()))} | |")
    return out


def section(d: dict | None) -> list[str]:
    if not d or not d.get("rows"):
        return []
    rows = d["rows"]
    bursts = [r for r in rows if r["scenario"].startswith("burst")]
    big = max(bursts, key=lambda r: r["timers"]) if bursts else None
    out = ["## Scale: a simulation of the deployed pipeline on AWS", "",
           "A discrete-event simulation (`bench/scale/`, stdlib `heapq`) of the pipeline as deployed: the delayer queue, "
           "the SQS event source mapping's pollers (start, scaling step, maximum; or provisioned pollers), Lambda "
           "concurrency and its scaling rate (cold starts included), each dispatcher invocation waiting out its "
           "messages' sub-second remainders in parallel, the FIRED write against the table's throughput, the target's "
           "call; for long timers, the sweeper's claims and the enqueuer's sends before it (a fluid model). Every "
           "parameter is below with its source; latencies of AWS calls are stated, not documented. The handlers' own "
           "work comes from the engine's measurements (the cost section's api time, the burst profile's CPU per "
           "delivery). Simulated, not measured on AWS.", "",
           "Steady loads (Poisson due times, periodic, sustained creates) leave out a warm-up (60 s, or 5 s where the "
           "pollers start at the maximum) in which the mapping scales; their throttles count the whole run. The "
           "mapping's scaling rule is not documented closely enough to pick one reading, so the Poisson levels run "
           "with two that bound it: pollers scaled to the load (start at 5, +5 a second while messages remain "
           "visible, -5 a second while receives come back empty) and pollers held at the maximum (1,250: every "
           "message finds an idle poller).", "",
           "Outputs: **last** is the time of the last delivery after the due second (bursts) or after the last due time "
           "(steady loads); lateness is delivery minus due time; **early** counts deliveries before their due time; "
           "**batch** is the mean messages per dispatcher invocation and the share of invocations carrying one; "
           "**billed ms/timer** the dispatcher's billed duration per timer; **cost** the scenario's timers, priced as the "
           "cost section does (its per-timer bill, with the dispatcher's invocations, duration, receives and deletes "
           "from the simulated batches; fixed monthly costs excluded; creates ten a request, except the sustained-creates "
           "rows, one a request). The every-minute periodic row's occurrences become visible 0.25 s before they are "
           "due (each is armed that long ahead); the others' a random fraction of a second before. EventBridge "
           "Scheduler: at its default "
           "invocations quota, $1.00 per million invocations.", "",
           f"Burst tables: the on-demand table serves at once what a new table does or twice its previous peak, "
           f"here the sweeper's claims of the same timers minutes before: {fmt(d['burst_table_wru'])} WRU/s."
           + (f" The long path feeds the queue in time: claims at {fmt(big['feed']['claims_per_s'])}/s (16 claim threads, "
              f"a timer shard a partition), sends at {fmt(big['feed']['enqueues_per_s'])}/s "
              f"({big['feed']['stream_shards']} stream shards); {big['fed_after_due_minus_1s']:,} messages reached the "
              "queue later than a second before their due time." if big and big.get("feed") else ""), "",
           "| scenario | timers | last | lateness p50 / p99 / max, ms | early | throttles | batch | billed ms/timer | "
           "cost | EventBridge Scheduler |", "|---" * 10 + "|"]
    out += [_row(r) for r in rows]
    out += ["", f"**Target: 1,000,000 timers due in one second, last delivery within {fmt(d['target_s'])} s, none early.**", "",
            "| the same burst with | last | lateness p50 / p99 / max, ms | early | throttles | peak concurrency |",
            "|---|---|---|---|---|---|"]
    if big:
        out.append(f"| default quotas | {fmt(big['last_delivery_s'], 1)} s | {_late(big)} | {big['early']} | "
                   f"{_throttles(big['throttles'], big.get('failed_deliveries', 0))} | {fmt(big['peak_concurrency'])} |")
    for r in d.get("raised", []):
        label = r["scenario"].split(": ", 1)[-1]
        out.append(f"| {label} | {fmt(r['last_delivery_s'], 1)} s | {_late(r)} | {r['early']} | "
                   f"{_throttles(r['throttles'], r.get('failed_deliveries', 0))} | {fmt(r['peak_concurrency'])} |")
    if big:
        out += ["", _verdict(big, d)]
    out += ["", "The SQS in-flight quota (120,000) is never near: in flight are at most 10 messages per running "
            "invocation. SQS standard queues have no call-rate quota, so SQS throttles nothing.", "",
            "Sustained single creates (one timer a request) for "
            f"{fmt(d['creates'][0]['seconds'])} s, refused requests not retried:" if d.get("creates") else "", "",
            "| offered creates/s | accepted/s | throttles | api peak concurrency | EventBridge Scheduler CreateSchedule accepted/s |",
            "|---|---|---|---|---|"]
    for c in d.get("creates", []):
        out.append(f"| {fmt(c['rate'])} | {fmt(c['accepted_per_s'])} | {_throttles(c['throttles'])} | "
                   f"{fmt(c['api_peak_concurrency'])} | {fmt(c['ebs_accepted_per_s'])} |")
    if d.get("provisioned"):
        out += ["", "Provisioned tables: the create's record (one write unit, after the send) and the dispatcher's "
                "FIRED write (one) share the table's write capacity, each tried as the runtime's SDK does (3 attempts); "
                "a create refused after that answers 5xx and leaves its message a stray, whose conditional FIRED write "
                "still costs a unit and delivers nothing; a FIRED write refused fails its delivery until the visibility "
                "timeout. Every timer counts (no warm-up left out); lateness is over the timers delivered; no cost "
                "(on-demand prices do not apply).", "",
                "| table | timers created / refused (5xx) / delivered | last | lateness p50 / p99 / max, ms | early | "
                "write throttles | capacity steps (minute: WCU) |", "|---|---|---|---|---|---|---|"]
        for r in d["provisioned"]:
            steps = ", ".join(f"{fmt(s['t_s'] / 60)}: {fmt(s['wcu'], 1)}" for s in r["capacity_steps"]) or "none (fixed)"
            label = r["scenario"].split(" s, ", 1)[-1]
            out.append(f"| {label} | {r['timers']:,} / {r['refused_creates']:,} / {r['delivered']:,} | "
                       f"{fmt(r['last_delivery_s'], 1)} s | {_late(r)} | {r['early']} | "
                       f"{_throttles(r['throttles'], r.get('failed_deliveries', 0))} | {steps} |")
    w = d.get("waiting")
    if w:
        out += ["", f"{w['scenario']}: nothing moves until the window reaches them (the sweeper queries only the window); "
                f"{fmt(w['storage_gb'], 1)} GB stored, {_usd(w['usd_per_month'])} a month. EventBridge Scheduler's "
                f"default quota is {w['ebs']['quota']:,} schedules per Region ("
                + ("within it" if w["ebs"]["fits_quota"] else "beyond it") + ")."]
    out += ["", *_batches(rows), *_calibration(d.get("calibration") or {}), "Parameters:", "", *_parameters(d), ""]
    return out
