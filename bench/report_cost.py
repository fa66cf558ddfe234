"""The cost section of docs/benchmarks.md (section 4), from the JSON ``bench.cost`` writes."""

from __future__ import annotations

import math
import statistics

from . import costmodel
from .pricing import PRICES

_LEVEL_TEXT = {"sparse": "sparse", "moderate": "moderate", "heavy": "heavy"}
_DOOR_TEXT = {"http": "HTTP API", "rest": "REST API", "direct": "direct invoke"}


def _usd(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.2f}" if x >= 0.995 or x == 0 else f"${x:.3f}"


def _exact(x: float) -> str:
    """A figure judged against a target: to a tenth of a cent, so a near miss shows."""
    return f"${x:,.3f}"


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _q(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _label(payload: str) -> str:
    """``1KB-random`` -> ``1 KB random``."""
    size, _, kind = payload.partition("-")
    return (size[:-2] + " KB" if size.endswith("KB") else size[:-1] + " B") + (f" {kind}" if kind else "")


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


def target_rows(c: dict) -> list[str]:
    """Rows of the summary table: writes per timer and the headline cost, against their targets."""
    rows = []
    for t in c.get("targets", []):
        rows.append(f"| DynamoDB writes per {t['path']} timer | {t['writes']:.2f} | {t['writes_target']}: "
                    f"{_met(t['writes'] <= t['writes_target'] + 1e-9)} | |")
    for t in c.get("targets", []):
        rows.append(
            f"| cost per million, {t['path']} timers, heavy traffic, batch create, HTTP API, 1 KB: provisioned "
            f"(70 %: `TableCapacity.autoscaled`) / on demand | "
            f"{_exact(t['provisioned'])} / {_exact(t['on_demand'])} | ≤ {_usd(t['provisioned_max'])}: "
            f"{_met(t['provisioned'] <= t['provisioned_max'])}; ≤ {_usd(t['on_demand_max'])}: "
            f"{_met(t['on_demand'] <= t['on_demand_max'])} | EventBridge Scheduler $1.00 (first 14 M a month free); "
            "Step Functions ~$75 |")
    from .report_cost_spread import target_rows as spread_rows  # it renders with this module's helpers

    return rows + spread_rows(c)


def section(c: dict | None) -> list[str]:
    if not c or not c.get("grid"):
        return []
    from . import report_cost_spread as spread  # it renders with this module's helpers
    p, levels = c["prices"], c["levels"]
    scen = c["scenarios"]
    ns = sorted({s["n"] for s in scen.values()})
    out = ["## 4. Cost per million timers", "",
           "Each scenario runs in a fresh engine and counts every AWS call the runtime makes, by caller, service and "
           "operation (a hook on botocore). DynamoDB units are computed from the actual items by DynamoDB's size "
           "rules: the item each write sends and the item it replaces or deletes, read back from moto just before the "
           "write (UpdateItem and PutItem billed by the larger of old and new, a failed conditional write by the "
           "existing item; reads in 4 KB units, halved when eventually consistent). SQS requests count in 64 KB "
           "chunks. Every Lambda invocation's duration and batch size is measured, and the runtime's log lines at "
           f"the default level (WARNING), the dispatcher's EMF line and the access log line are counted in bytes. "
           f"Scenarios of {', '.join(str(n) for n in ns)} timers; prices from `PRICES` in `bench/pricing.py` "
           f"({p['as_of']}). Free tiers are ignored: these are marginal costs.", "",
           f"**Scenarios** are timers per batch at every batched step (create request, enqueuer invocation, SQS "
           f"send, receive and delete, dispatcher invocation): **sparse** {levels['sparse']} (single creates), "
           f"**moderate** {levels['moderate']}, **heavy** {levels['heavy']} (full batches). The counts per timer are "
           "measured per the unit they scale with (per timer, per create request, per enqueuer or dispatcher "
           "invocation). The heavy case is priced at full batches, with durations the mean of the measured "
           "invocations that carried that many messages, from all scenarios (widened to ±1, then ±2 messages when "
           "fewer than five did; failing that, a least-squares line through all of them). Traffic spread out is "
           "priced with the dispatcher's batches as the deployed pipeline forms them, simulated (below), not "
           "assumed. The engine's "
           "durations include moto's latency, slower than DynamoDB's; the dispatcher's are dominated by waiting out "
           "the sub-second remainder of each due time (SQS delays are whole seconds).", "",
           "**Targets are excluded everywhere**: the dispatcher's Lambda Invoke of, or SQS send to, the target is "
           "billed as the target's own request (its invocation, its queue). Including it would add "
           f"${p['lambda_per_million_requests']:.2f} per million for a Lambda target and "
           f"${p['sqs_per_million_requests']:.2f} per million per 64 KB of envelope for an SQS target. Periodic timers "
           "are priced per occurrence below, from their own scenario.", ""]
    out += _headline(c)
    out += _listing(c)
    out += _periodic(c)
    out += _bom(c)
    out += spread.per_million(c)
    out += _payloads(c)
    out += _doors(c)
    out += _fixed(c)
    out += spread.monthly(c)
    out += _measured(c)
    a = c["anchors"]
    out += [f"Anchors: EventBridge Scheduler ${a['eventbridge_scheduler']:.2f} per million invocations, the first "
            f"{a['eventbridge_scheduler_free_per_month'] / 1e6:.0f} million each month free; Step Functions standard "
            f"about ${a['stepfunctions_standard']:.0f} per million ({p['stepfunctions_transitions_per_timer']} transitions "
            f"at ${p['stepfunctions_standard_per_million_transitions']:.0f} per million).", "",
            f"Prices ({p['as_of']}, {p['region']}): DynamoDB on demand ${p['ddb_od_per_million_wru']}/M write and "
            f"${p['ddb_od_per_million_rru']}/M read request units; provisioned ${p['ddb_prov_wcu_hour']}/WCU-h and "
            f"${p['ddb_prov_rcu_hour']}/RCU-h, at {p['ddb_prov_utilisation'] * 100:.0f} % utilisation; SQS "
            f"${p['sqs_per_million_requests']}/M requests (64 KB chunks); Lambda arm64 ${p['lambda_per_million_requests']}/M "
            f"requests and ${p['lambda_arm_per_gb_second']}/GB-s, memory {', '.join(f'{k} {v} MB' for k, v in p['lambda_memory_mb'].items())}; "
            f"API Gateway HTTP API ${p['apigw_http_per_million']:.2f}/M (512 KB units), REST API "
            f"${p['apigw_rest_per_million']:.2f}/M; CloudWatch Logs ${p['cw_logs_per_gb']}/GB ingested (26 bytes per "
            f"event added), metrics ${p['cw_metric_month']}/metric-month. Sources are listed in `PRICES`.", ""]
    return out


def _headline(c: dict) -> list[str]:
    out = [f"### Headline: heavy traffic, batch create of {c['levels']['heavy']}, HTTP API, "
           f"{_label(c['headline_payload'])} JSON payload", "",
           "| path | DynamoDB writes per timer | write units per timer | provisioned (70 %) per million | on demand per million |",
           "|---|---|---|---|---|"]
    for t in c["targets"]:
        w = c["writes_per_timer"][t["path"]]
        out.append(f"| {t['path']} | {t['writes']:.2f} ({', '.join(f'{k} {v:.2f}' for k, v in w['by_op'].items())}); "
                   f"target {t['writes_target']}: {_met(t['writes'] <= t['writes_target'] + 1e-9)} | {w['wru']:.2f} | "
                   f"**{_exact(t['provisioned'])}**; target ≤ {_usd(t['provisioned_max'])}: "
                   f"{_met(t['provisioned'] <= t['provisioned_max'])} | **{_exact(t['on_demand'])}**; target ≤ "
                   f"{_usd(t['on_demand_max'])}: {_met(t['on_demand'] <= t['on_demand_max'])} |")
    out.append("")
    return out


def _listing(c: dict) -> list[str]:
    """The same headline with the listing index on (``listing=True``), from the measured record writes."""
    rows = costmodel.listing_addon(c)
    if not rows:
        return []
    out = ["With `listing=True` (off by default), each record write also writes the keys-only listing index, one "
           "write unit an entry: the create adds the entry and the delivery start removes it "
           "(`bench/costmodel.py: listing_addon`, from the record writes measured above).", "",
           "| path | index writes per timer | listing adds, provisioned (70 %) / on demand | total with listing, "
           "provisioned / on demand |", "|---|---|---|---|"]
    for path, r in rows.items():
        out.append(f"| {path} | {r['index_writes']:.2f} | {_usd(r['provisioned'])} / {_usd(r['on_demand'])} | "
                   f"{_usd(r['total_provisioned'])} / {_usd(r['total_on_demand'])} |")
    out.append("")
    return out


def _periodic(c: dict) -> list[str]:
    """Occurrences of periodic timers, per million, from their own scenarios (within and beyond the window)."""
    r = c.get("periodic")
    if not r:
        return []
    m = c.get("method", {})
    out = [f"**Periodic timers**: occurrences of ten definitions due together, priced per million occurrences with no "
           "create and no API request (a definition is PUT once), at the batch size each scenario's dispatcher "
           "measured (occurrences armed at different moments reach it one or two at a time, even when due "
           "together). **Within the window**: every second, each occurrence's next one sent to the delayer queue "
           "0.25 s before it is due. **Beyond the window**: every "
           f"{m.get('periodic_long_every_s', 8)} s with the window shrunk to {m.get('long_window_s', 5)} s and a sweep "
           "a second, so each next occurrence waits as a timer item, is claimed by the sweeper and sent by the "
           "enqueuer, the calls an hourly or daily cron makes under the default window. Ten due in the same "
           "millisecond also meet moto's serialized writes, which shows in their lateness.", "",
           "| occurrences | DynamoDB calls per occurrence | write units | read units | provisioned (70 %) / on demand "
           "per million, at the measured batch | lateness p50 / p99 / max, early |", "|---|---|---|---|---|---|"]
    for key, what in (("periodic", "within the window"), ("periodic_long", "beyond the window")):
        r = c.get(key)
        if not r:
            continue
        late = r.get("lateness_ms") or {}
        ops = ", ".join(f"{k} {v:.2f}" for k, v in {**r["writes"], **r["reads"]}.items())
        ms, how = r["durations"]["dispatcher"]
        out.append(f"| {what}: {r['occurrences']}, {r['batch']:.2f} a batch (dispatcher {ms:.0f} ms: {how}) | {ops} | "
                   f"{r['wru']:.2f} | {r['rru']:.2f} | **{_usd(r['total_provisioned'])}** / "
                   f"**{_usd(r['total_on_demand'])}** | {late.get('p50', 0):.0f} / {late.get('p99', 0):.0f} / "
                   f"{late.get('max', 0):.0f} ms, {late.get('early', 0)} |")
    return out + [""]


def _bom(c: dict) -> list[str]:
    out = ["### Bill of materials per timer (the headline case)", ""]
    for path, h in c["headline"].items():
        out += [f"**{path.capitalize()} timers:**", "",
                "| service | item | quantity per timer | unit price | per million, on demand | per million, provisioned |",
                "|---|---|---|---|---|---|"]
        for r in sorted(h["rows"], key=lambda r: -r["usd_od"]):
            out.append(f"| {r['group']} | {r['item']} | {_q(r['quantity'])} {r['unit']} | {_price(r)} | "
                       f"{_usd(r['usd_od'])} | {_usd(r['usd_prov'])} |")
        out.append(f"| **total** | | | | **{_usd(h['total_on_demand'])}** | **{_usd(h['total_provisioned'])}** |")
        out.append("")
        d = h.get("durations", {})
        out.append("Durations priced: " + "; ".join(f"{k} {v[0]:.0f} ms ({v[1]})" for k, v in d.items()) + ".")
        x = c["headline_extras"][path]
        out.append(f"Not in the total: Lambda's platform lines, if not suppressed (the construct suppresses them), "
                   f"would add {_usd(x['lambda_platform_lines'])}; `LOG_LEVEL=INFO` (the created/enqueued/delivered "
                   f"events) would add {_usd(x['log_level_info'])}; the target's own request "
                   f"{_usd(x['target_lambda_invoke'])} (Lambda) or {_usd(x['target_sqs_send'])} per 64 KB (SQS).")
        out.append("")
    return out


def _payloads(c: dict) -> list[str]:
    pl = c["payloads"]
    out = [f"### By payload (heavy traffic, batch create of {c['levels']['heavy']}, HTTP API)", "",
           "Payload content (`bench/payloads.py`): **JSON** is an order-reminder document (customer, address, order "
           "lines with SKU, name, quantity, price), with as many lines as the size takes; **random** is "
           "`{\"blob\": \"<base64 of random bytes>\"}`, like an encrypted token, which zlib can shrink only by undoing "
           "base64's expansion. The runtime stores a payload zlib-compressed when that is smaller (from 200 bytes).", "",
           "| payload | JSON bytes | stored bytes (as) | short: write units | short: provisioned / on demand | "
           "long: write units | long: provisioned / on demand |", "|---|---|---|---|---|---|---|"]
    for label, d in pl.items():
        cells = []
        for path in ("short", "long"):
            g = c["grid"].get(f"{path}/heavy/{label}")
            cells += ([f"{g['wru']:.2f}", f"{_usd(g['total_provisioned'])} / {_usd(g['total_on_demand'])}"] if g
                      else ["not run", ""])
        if all(x in ("not run", "") for x in cells):
            continue
        out.append(f"| {_label(label)} ({d['kind']}) | {d['json_bytes']:,} | {d['stored_bytes']:,} ({d['stored_as']}, "
                   f"{d['stored_ratio'] * 100:.0f} %) | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _doors(c: dict) -> list[str]:
    out = [f"### By front door and create call (heavy traffic after the create, {_label(c['headline_payload'])} JSON)", "",
           "Single creates are one request per timer; the rest of the pipeline is at heavy traffic either way (the "
           "create call does not change what happens after it). The runtime's work per create is the same through "
           "each door; the doors differ in the API Gateway charge and the access log line (none for a direct invoke).", "",
           "| door | create | short: provisioned / on demand | long: provisioned / on demand | fixed per month (on demand) |",
           "|---|---|---|---|---|"]
    for door in ("http", "rest", "direct"):
        for create in ("single", "batch"):
            cells = []
            for path in ("short", "long"):
                d = c["doors"].get(path, {}).get(f"{door}/{create}")
                cells.append(f"{_usd(d['total_provisioned'])} / {_usd(d['total_on_demand'])}" if d else "n/a")
            out.append(f"| {_DOOR_TEXT[door]} | {create if create == 'single' else 'batch of ' + str(c['levels']['heavy'])} | "
                       + " | ".join(cells) + f" | {_usd(c['fixed_monthly'][door]['total_on_demand'])} |")
    out.append("")
    return out


def _fixed(c: dict) -> list[str]:
    fm = c["fixed_monthly"]
    out = ["### Fixed monthly costs, whatever the volume", "",
           "Separate from the marginal cost per million: these are paid each month (30 days) by an idle scheduler. "
           "CloudWatch metrics bill per metric-month: the dispatcher's EMF metric is one custom metric; the REST API's "
           "detailed metrics (the construct turns them on) are five per method, one method per route of the runtime's "
           "contract; the HTTP API's detailed metrics are off. Alarms and the dashboard are opt-in "
           f"(`add_alarms`, `add_dashboard`) and not counted: ${PRICES['cw_alarm_month']:.2f} a standard alarm a month.", "",
           "| item | assumption | per month |", "|---|---|---|"]
    seen = set()
    for door in ("http", "rest", "direct"):
        for item in fm[door]["items"]:
            if item["item"] in seen:
                continue
            seen.add(item["item"])
            out.append(f"| {item['item']} | {item['assumption']} | {_usd(item['usd'])} |")
    out.append("| **total, HTTP API / REST API / direct invoke, on demand** | | " + " / ".join(
        _usd(fm[d]["total_on_demand"]) for d in ("http", "rest", "direct")) + " |")
    out.append("")
    if c.get("cancel"):
        k = c["cancel"]
        out.append(f"A cancel of a long timer (through the HTTP API) costs {_usd(k['total_on_demand'])} per million on "
                   f"demand, {_usd(k['total_provisioned'])} provisioned: {k['wru']:.1f} write units ("
                   + ", ".join(f"{op} {v:.2f}" for op, v in k["writes"].items()) + ").")
        out.append("")
    return out


def _measured(c: dict) -> list[str]:
    scen = {k: s for k, s in c["scenarios"].items() if k.endswith("/" + c["headline_payload"]) or k == "cancel"}
    names = list(scen)
    out = ["### Measured per scenario", "",
           f"Calls per timer as the engine made them ({_label(c['headline_payload'])} payload; per cancel for `cancel`), "
           "at the batch sizes the engine produced. "
           "`esm:*` are the engine's pollers, standing in for Lambda's event source mappings: AWS bills the SQS "
           "mapping's receives and deletes as SQS requests (its empty polls are a fixed cost), and not the stream "
           "trigger's reads. The dispatcher's Lambda Invoke is the target.", "",
           "| caller | service | operation | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    rows: dict = {}
    for name, s in scen.items():
        for r in s["summary"]["calls_per_timer"]:
            key = (r["caller"], r["service"], r["operation"] + (f" ({r['tag']})" if r["tag"] else ""))
            rows.setdefault(key, {})[name] = r["per_timer"]
    for key in sorted(rows):
        out.append("| " + " | ".join(key) + " | " + " | ".join(
            f"{rows[key][n]:.2f}" if n in rows[key] else "" for n in names) + " |")
    out.append("")
    out += ["| scenario | function: invocations, messages per invocation (api: timers per request), ms per "
            "invocation (p50 / mean) |", "|---|---|"]
    for name, s in scen.items():
        fns = s["summary"]["functions"]
        out.append(f"| {name} | " + "; ".join(
            f"{fn} {f['invocations']}, {s['per_request'] if fn == 'api' else round(f['records_mean'], 1)}, "
            f"{f['ms'].get('p50', 0):.0f} / {f['ms'].get('mean', 0):.0f}" for fn, f in sorted(fns.items())) + " |")
    out.append("")
    pool: dict = {}
    for s in c["scenarios"].values():
        f = s["functions"].get("dispatcher")
        if f:
            for records, ms in zip(f["records"], f["ms"]):
                pool.setdefault(records, []).append(math.ceil(ms))
    if pool:
        out += ["Dispatcher invocations by batch size, all scenarios (its duration is mostly the wait for the latest "
                "due time in the batch):", "", "| messages | invocations | billed ms, mean | p50 | max |",
                "|---|---|---|---|---|"]
        for records, v in sorted(pool.items()):
            out.append(f"| {records} | {len(v)} | {statistics.fmean(v):.0f} | {statistics.median(v):.0f} | {max(v)} |")
        out.append("")
    return out
