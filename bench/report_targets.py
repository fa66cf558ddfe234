"""The targets section of docs/benchmarks.md and its row of the summary, from ``bench.targets``' JSON."""

from __future__ import annotations

from .report_engine import fmt, target
from .target_costs import CALL_MS, HTTPS_HEADER_BYTES, TARGET_PRICES, per_kind

_WHERE = {
    "lambda": "the local function called through the runtime's Lambda target",
    "sqs": "`SentTimestamp` in the target queue",
    "sns": "`SentTimestamp` in a queue subscribed to the topic (raw delivery)",
    "eventbridge": "`SentTimestamp` in the queue a rule on the bus sends to",
    "stepfunctions": "`startDate` of the execution the delivery started",
    "https": "arrival at a receiver on 127.0.0.1 that checks the signature (plain HTTP to loopback)",
}


def summary_rows(t: dict | None) -> list[str]:
    if not t or not t.get("kinds"):
        return ["| lateness per kind of target on the engine | not measured | p99 ≤ 100 ms, 0 early | |"]
    cells = ", ".join(f"{kind} {fmt(k.get('p99'), 0)} ms / {k['early']}" for kind, k in t["kinds"].items())
    met = all(k["met"] for k in t["kinds"].values())
    return [f"| lateness per kind of target on the engine, p99 / early ({t['n']} timers each) | {cells} | "
            f"p99 ≤ {fmt(t['p99_target_ms'], 0)} ms, 0 early, none lost: {target(met)} | |"]


def section(t: dict | None) -> list[str]:
    if not t or not t.get("kinds"):
        return cost_section()
    rows = [f"| {kind} | {_WHERE[kind]} | {k['n'] if 'p50' in k else 0} / {t['n']} | {fmt(k.get('p50'), 0)} | "
            f"{fmt(k.get('p99'), 0)} | {fmt(k.get('max'), 0)} | {k['early']} | {target(k['met'])} |"
            for kind, k in t["kinds"].items()]
    return ["## Targets", "",
            f"`./dev bench --only targets` (bench/targets.py): for each kind, a fresh engine (default options) with one "
            "named target of that kind, one delivery to it first (as in the precision section: an engine's first "
            "delivery to a kind creates that service's client, a cold start), then "
            f"{t['n']} timers created through the HTTP API ahead of time, due over "
            f"{fmt(t['span_s'], 0)} s (the short path). Lateness in ms, where a consumer gets the delivery, minus "
            "`dueAt`; the topic and the bus are moto's, as the engine creates them.", "",
            "| kind | measured at | delivered | p50 | p99 | max | early | p99 ≤ 100 ms, 0 early |",
            "|---|---|---|---|---|---|---|---|", *rows, "", *_misses(t), *cost_section()]


def cost_section() -> list[str]:
    """What each kind of target adds per million deliveries (bench/target_costs.py: list prices and stated
    call times; nothing measured)."""
    c = per_kind()
    rows = [f"| {kind} | {fmt(k['service'], 3)} | {fmt(k['call_ms'], 0)} | {fmt(k['dispatcher'], 3)} | "
            f"{fmt(k['total'], 3)} |" for kind, k in c["kinds"].items()]
    return ["### What each kind of target adds, per million deliveries", "",
            "bench/target_costs.py, rendered with the report (no run needed): the target service's own charge "
            "at list prices (us-east-1; sources in `TARGET_PRICES`) and the dispatcher's billed time in the call, "
            f"${fmt(c['dispatcher_per_ms'], 4)} per million per ms at its default 128 MB (arm64). These come on top "
            "of the pipeline's cost per timer in the Cost section, which leaves every target out. "
            f"The envelope is the runtime's own around a {c['payload_bytes']}-byte payload: {c['envelope_bytes']} "
            "bytes, one 64 KB chunk for every kind that bills per chunk. **The call times are stated, not "
            "measured** (typical in-region figures; moto's local calls say nothing about AWS's); the dispatcher's "
            "share is small beside the service's for every kind but Lambda and HTTPS.", "",
            "| kind | target service, $ | call, ms (stated) | dispatcher in the call, $ | total, $ |",
            "|---|---|---|---|---|", *rows, "",
            f"- **lambda (RequestResponse)**: the dispatcher waits for the function's whole run, here "
            f"{fmt(c['function_ms'], 0)} ms. The target service's column is the function's request charge; its "
            "run is billed to it as for any caller and left out. With `invocation_type=EVENT` the dispatcher waits "
            "only for Lambda's 202.",
            f"- **stepfunctions (STANDARD)**: ${fmt(TARGET_PRICES['stepfunctions_standard_per_million_transitions'], 0)} "
            f"per million state transitions, here {c['standard_transitions']} per execution (a one-state "
            "workflow's; a longer workflow takes more). **EXPRESS**: $1.00 per million starts plus "
            f"duration at 64 MB, here {fmt(c['express_ms'], 0)} ms (the 100 ms minimum). An EXPRESS workflow has "
            "no execution-name check, so a retried delivery whose first start went through starts a second "
            "execution under the same `dedupeKey`.",
            "- **sns**, **eventbridge**: the publish or the custom event; SNS's delivery to SQS and Lambda "
            "subscriptions and a rule's delivery to AWS targets are free; other subscriptions and API "
            "destinations are billed by SNS and EventBridge as usual.",
            f"- **https**: data transfer out to the internet, ${fmt(TARGET_PRICES['egress_per_gb'], 2)} per GB "
            f"(after the account's first 100 GB a month), on the envelope plus about {HTTPS_HEADER_BYTES} bytes "
            f"of request line, headers and TLS records; the {fmt(CALL_MS['https'], 0)} ms call is the receiver's "
            "answer on a kept-alive connection. The signing secret's reads (one `GetSecretValue` per sandbox "
            "per 300 s, $0.05 per 10,000) are a few cents a month per warm sandbox.", ""]


def _misses(t: dict) -> list[str]:
    """What a miss says, from the figures: a Lambda kind that misses too points at the workload, not the kind."""
    lam = t["kinds"].get("lambda", {})
    if lam.get("met", True):
        return []
    return ["The Lambda kind, the engine's default and the one the precision section measures, misses the p99 "
            "target here too, while the precision section's workload (creates spread over the run, each 2-22 s "
            "before its due time) meets it: the excess comes with this workload (every create made before the first "
            "timer is due), for every kind alike; where in the pipeline it arises was not measured. EventBridge's "
            "p99 stands above the others': the time from the dispatcher's PutEvents to the rule's queue, inside moto, "
            "is part of what is measured for it.", ""]
