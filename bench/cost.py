"""Cost per million timers: AWS requests counted per timer, multiplied by published prices.

Every botocore call in the process is counted (``common.RequestCounter``) by
caller, service and operation, in these scenarios, each in a fresh engine:

- fast track: timers created 2-3 s before they are due (inside the window);
- sweeper path: window shrunk to 5 s, sweeps every second, timers due 8-12 s out;
- both again through the batch endpoint (``POST /schedule-batches``, as many per request as it takes);
- cancel: timers due in an hour (so nothing claims them), then cancelled; only
  the cancel calls are counted.

Periodic timers are not implemented yet, so they are not priced.

Calls made by the engine's pollers stand in for AWS-managed pollers and are
priced by what AWS bills for them: the Lambda SQS event source mapping's
ReceiveMessage and DeleteMessageBatch ARE billed as SQS requests; the Lambda
DynamoDB-stream trigger's GetRecords/GetShardIterator/DescribeStream are free.
"""

from __future__ import annotations

import math
import random
import time

from .common import (
    BATCH_SIZE, ApiClient, BenchEngine, Collector, EngineOptions, HandlerTimes, LogTap, RequestCounter, distribution, log,
)

# --- the one price table -------------------------------------------------------------------
# us-east-1, public list prices, as known to the author of this file; read on 2026-11-21
# from the sources below (no network access was used to re-check them on that day, so
# re-verify before quoting). Free tiers are ignored: the figures are marginal costs.
PRICES = {
    "as_of": "2026-11-21 (list prices as published since the 2024-11-01 DynamoDB on-demand cut; re-verify)",
    "region": "us-east-1",
    "sources": {
        "dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/ and /provisioned/",
        "sqs": "https://aws.amazon.com/sqs/pricing/",
        "lambda": "https://aws.amazon.com/lambda/pricing/",
        "apigateway": "https://aws.amazon.com/api-gateway/pricing/",
        "cloudwatch": "https://aws.amazon.com/cloudwatch/pricing/",
        "eventbridge_scheduler": "https://aws.amazon.com/eventbridge/pricing/",
        "stepfunctions": "https://aws.amazon.com/step-functions/pricing/",
    },
    # DynamoDB on-demand (standard table class)
    "ddb_od_per_million_wru": 0.625,
    "ddb_od_per_million_rru": 0.125,
    # DynamoDB provisioned: per capacity-unit hour
    "ddb_prov_wcu_hour": 0.00065,
    "ddb_prov_rcu_hour": 0.00013,
    "ddb_prov_utilisation": 0.70,  # stated: average consumed / provisioned (auto scaling's default target is 70 %)
    # DynamoDB Streams read by a Lambda trigger: free
    "ddb_streams_lambda_trigger": 0.0,
    # SQS standard: per million requests, each 64 KB chunk of a request is one request
    "sqs_per_million_requests": 0.40,
    # Lambda, arm64 (the construct's default architecture), 256 MB (its default memory)
    "lambda_per_million_requests": 0.20,
    "lambda_arm_per_gb_second": 0.0000133334,
    "lambda_memory_mb": 256,
    # API Gateway REST API (the construct's API, IAM auth): first 333 M requests a month
    "apigw_rest_per_million": 3.50,
    # CloudWatch Logs ingestion (standard class)
    "cw_logs_per_gb": 0.50,
    # anchors
    "eventbridge_scheduler_per_million": 1.00,
    "stepfunctions_standard_per_million_transitions": 25.0,
    "stepfunctions_transitions_per_timer": 3,  # start -> Wait -> Task: about $75 per million timers
}

# DynamoDB capacity units per call, for the items this runtime writes (record item < 1 KB,
# i.e. payloads up to about 0.5 KB; timer items ~150 bytes). Failed conditional writes
# are charged like successful ones.
WRU = {
    "TransactWriteItems": 4,  # two puts (record + timer), transactional = 2 WRU per item
    "DeleteItem": 1,
    "UpdateItem": 1,
    "PutItem": 1,
    "BatchWriteItem": 1,
}
RRU = {
    "GetItem": 1,  # strongly consistent, < 4 KB
    "Query": 0.5,  # eventually consistent, minimum 0.5 per call, pages well under 4 KB per shard here
}
FREE_STREAM_OPS = {"GetRecords", "GetShardIterator", "DescribeStream", "ListStreams"}
LAMBDA_LOG_OVERHEAD_BYTES = 330  # START + END + REPORT lines per invocation (measured on AWS; approximate)
LOG_LINE_PREFIX_BYTES = 90  # timestamp, request id and level that Lambda adds to each log line
PROJECTED_BATCH = BATCH_SIZE  # timers per POST /schedule-batches request (the runtime's maximum)


def _scenario(name: str, n: int, counter: RequestCounter, opts: EngineOptions, body, cancel: bool = False,
              batch: int = 1) -> dict:
    collector, tap, times = Collector(), LogTap(), HandlerTimes()
    opts.target = collector
    tap.install()
    log_bytes = [0]
    import logging

    class Bytes(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "event", None):
                log_bytes[0] += len(record.getMessage()) + LOG_LINE_PREFIX_BYTES

    bytes_handler = Bytes(logging.INFO)
    logging.getLogger("scheduler_runtime").addHandler(bytes_handler)
    try:
        with BenchEngine(opts, times) as eng:
            client = ApiClient(eng.api_url)
            client.create({"delaySeconds": 0, "payload": {"warm": True}})
            collector.wait_for(1, 30)
            time.sleep(0.5)
            base = collector.count()
            times.reset()
            counter.reset()
            log_bytes[0] = 0
            counter.enabled = True
            ids = []
            pending: list = []
            for i in range(n):
                sid = f"{name}-{i}"
                if cancel:
                    counter.enabled = False
                request = {"id": sid, **body(i), "payload": {"order": i, "note": "cost bench"}}
                if batch > 1:
                    pending.append(request)
                    if len(pending) == batch or i == n - 1:
                        client.create_batch(pending)
                        pending = []
                else:
                    client.create(request)
                ids.append(sid)
            if cancel:
                time.sleep(1.0)  # let the fast track read (and decline) the INSERTs before counting
                times.reset()
                counter.reset()
                log_bytes[0] = 0
                counter.enabled = True
                for sid in ids:
                    client.request("DELETE", f"/schedules/{sid}")
                time.sleep(2.0)  # the stream's REMOVEs are read (and filtered out) by the mappings
            else:
                collector.wait_for(base + n, 90)
                time.sleep(1.0)
            counter.enabled = False
            calls = counter.snapshot()
            delivered = collector.count() - base
            result = {
                "n": n,
                "delivered": delivered,
                "calls": [
                    {"caller": c, "service": s, "operation": o, "tag": t, "count": k, "per_timer": k / n}
                    for (c, s, o, t), k in sorted(calls.items())
                ],
                "invocations_per_timer": {k: len(v) / n for k, v in times.durations.items()},
                "handler_ms": {k: distribution(v) for k, v in times.durations.items()},
                "billed_ms_per_timer": {k: sum(math.ceil(x) for x in v) / n for k, v in times.durations.items()},
                "records_per_invocation": {k: distribution(v) for k, v in times.records.items()},
                "log_bytes_per_timer": log_bytes[0] / n,
                "claimed_by": dict(eng.stats.claims_by) if hasattr(eng.stats, "claims_by") else {},
                "errors": dict(tap.errors),
            }
            return result
    finally:
        logging.getLogger("scheduler_runtime").removeHandler(bytes_handler)
        tap.uninstall()


def price(scenario: dict, fixed_sweep: bool = True, batch_create: int = 1) -> dict:
    """Dollars per million timers, itemised, on-demand and provisioned."""
    p = PRICES
    per_timer_wru = per_timer_rru = sqs_billed = 0.0
    lines_ddb: dict = {}
    excluded: dict = {}
    for c in scenario["calls"]:
        op, svc, k = c["operation"], c["service"], c["per_timer"]
        if c["caller"] == "other":
            continue
        if svc == "dynamodb":
            if op == "Query" and fixed_sweep:
                excluded[f"dynamodb {op} (sweeper, per sweep: fixed cost)"] = k
                continue
            w, r = WRU.get(op, 0) * k, RRU.get(op, 0) * k
            per_timer_wru += w
            per_timer_rru += r
            lines_ddb[f"{op} ({c['caller']})"] = {"calls": k, "wru": w, "rru": r}
        elif svc == "dynamodbstreams":
            excluded[f"streams {op} ({c['caller']}): free for Lambda triggers"] = k
        elif svc == "sqs":
            if c["caller"].startswith("esm") and op == "ReceiveMessage" and c["tag"] == "empty":
                excluded["sqs ReceiveMessage empty (mapping idle polls: fixed cost, not per timer)"] = k
                continue
            sqs_billed += k  # each small request is one 64 KB chunk
        elif svc == "lambda":
            excluded[f"lambda {op} ({c['caller']}): the user's target, not ours"] = k
    inv = dict(scenario["invocations_per_timer"])
    billed_ms = dict(scenario["billed_ms_per_timer"])
    # The sweeper runs on a clock, not per timer: its invocations are a fixed monthly cost (below).
    # Its claims (DeleteItem) stay per timer; the per-claim share of its duration is small and dropped.
    if "sweeper" in inv:
        excluded["lambda sweeper invocations (on a clock: fixed cost)"] = inv.pop("sweeper")
        billed_ms.pop("sweeper", None)
    apigw = 0.0
    if "api" in inv:
        apigw = inv["api"] / batch_create
        inv["api"] = inv["api"] / batch_create
        # a batch call does the same per-item work, plus one invocation overhead
    lambda_requests = sum(inv.values())
    gb_s = sum(billed_ms.values()) / 1000 * p["lambda_memory_mb"] / 1024
    log_gb = (scenario["log_bytes_per_timer"] + LAMBDA_LOG_OVERHEAD_BYTES * lambda_requests) / 1e9
    m = 1e6
    common = {
        "api_gateway": apigw * p["apigw_rest_per_million"],
        "lambda_requests": lambda_requests * p["lambda_per_million_requests"],
        "lambda_duration": gb_s * p["lambda_arm_per_gb_second"] * m,
        "sqs": sqs_billed * p["sqs_per_million_requests"],
        "cloudwatch_logs": log_gb * p["cw_logs_per_gb"] * m,
    }
    od = per_timer_wru * p["ddb_od_per_million_wru"] + per_timer_rru * p["ddb_od_per_million_rru"]
    u = p["ddb_prov_utilisation"]
    prov_wru = p["ddb_prov_wcu_hour"] / 3600 * m / u
    prov_rru = p["ddb_prov_rcu_hour"] / 3600 * m / u
    prov = per_timer_wru * prov_wru + per_timer_rru * prov_rru
    total_common = sum(common.values())
    return {
        "per_timer": {"wru": per_timer_wru, "rru": per_timer_rru, "sqs_requests": sqs_billed,
                      "lambda_requests": lambda_requests, "lambda_gb_s": gb_s, "apigw_requests": apigw,
                      "log_bytes": log_gb * 1e9},
        "dynamodb_calls": lines_ddb,
        "not_priced_per_timer": excluded,
        "usd_per_million": {
            **common,
            "dynamodb_on_demand": od,
            "dynamodb_provisioned": prov,
            "total_on_demand": total_common + od,
            "total_provisioned": total_common + prov,
            "total_on_demand_without_logs": total_common - common["cloudwatch_logs"] + od,
            "total_provisioned_without_logs": total_common - common["cloudwatch_logs"] + prov,
        },
    }


def sparse(scenario: dict) -> dict:
    """The same scenario at low traffic, where every batch holds one timer (the worst case for batching).

    Each stream- or queue-triggered function runs once per timer, for its median
    measured invocation duration; SQS send, receive and delete are one request each.
    """
    out = dict(scenario)
    calls = []
    for c in scenario["calls"]:
        c = dict(c)
        if c["service"] == "sqs" and c["operation"] in ("SendMessageBatch", "DeleteMessageBatch") or (
            c["operation"] == "ReceiveMessage" and c["tag"] == "non-empty"
        ):
            c["per_timer"] = 1.0
        calls.append(c)
    out["calls"] = calls
    inv, billed = {}, {}
    for name, per_timer in scenario["invocations_per_timer"].items():
        if name in ("fast_track", "enqueuer", "dispatcher"):
            inv[name] = 1.0
            billed[name] = math.ceil(scenario["handler_ms"][name]["p50"])
        else:
            inv[name] = per_timer
            billed[name] = scenario["billed_ms_per_timer"][name]
    out["invocations_per_timer"] = inv
    out["billed_ms_per_timer"] = billed
    return out


def fixed_monthly(sweep_scenario_calls: list, shards: int = 16) -> dict:
    """What runs whatever the volume: the sweeper every minute and the SQS mapping's idle polls."""
    p = PRICES
    sweeps = 60 * 24 * 30
    queries = sweeps * shards
    # Lambda's SQS mapping idles with long polls (20 s) from about 5 pollers: ~15 receives a minute.
    idle_receives = 5 * 3 * 60 * 24 * 30
    return {
        "sweeper_invocations": sweeps,
        "sweeper_queries": queries,
        "usd": {
            "sweeper_queries_on_demand": queries * RRU["Query"] * p["ddb_od_per_million_rru"] / 1e6,
            "sweeper_lambda_requests": sweeps * p["lambda_per_million_requests"] / 1e6,
            "sqs_mapping_idle_receives": idle_receives * p["sqs_per_million_requests"] / 1e6,
        },
    }


def run(n: int, sweeper_batch: bool = True) -> dict:
    counter = RequestCounter()
    counter.install()
    rng = random.Random(7)
    out: dict = {"prices": PRICES, "wru_per_call": WRU, "rru_per_call": RRU, "scenarios": {}, "batch_size": PROJECTED_BATCH}
    try:
        # Sub-second parts are random: SQS delays are whole seconds, so the dispatcher waits out the
        # fraction, and a whole-second delaySeconds would make that wait the same (long) every time.
        log(f"cost: fast track, {n} timers due 2-3 s after creation")
        out["scenarios"]["fast_track"] = _scenario(
            "ft", n, counter, EngineOptions(), lambda i: {"delaySeconds": round(2 + rng.random(), 3)})
        log(f"cost: fast track through the batch endpoint, {n} timers in batches of {PROJECTED_BATCH}")
        out["scenarios"]["fast_track_batch"] = _scenario(
            "fb", n, counter, EngineOptions(), lambda i: {"delaySeconds": round(3 + rng.random(), 3)},
            batch=PROJECTED_BATCH)
        log(f"cost: sweeper path, {n} timers due 8-12 s out with a 5 s window and 1 s sweeps")
        out["scenarios"]["sweeper"] = _scenario(
            "sw", n, counter, EngineOptions(delay_window=5, sweep_interval=1.0),
            lambda i: {"delaySeconds": 8 + rng.random() * 4})
        if sweeper_batch:
            log(f"cost: sweeper path through the batch endpoint, {n} timers in batches of {PROJECTED_BATCH}")
            out["scenarios"]["sweeper_batch"] = _scenario(
                "sb", n, counter, EngineOptions(delay_window=5, sweep_interval=1.0),
                lambda i: {"delaySeconds": round(9 + rng.random() * 4, 3)}, batch=PROJECTED_BATCH)
        log(f"cost: cancel, {n} timers due in an hour, then cancelled")
        out["scenarios"]["cancel"] = _scenario(
            "cx", n, counter, EngineOptions(), lambda i: {"delaySeconds": 3600}, cancel=True)
    finally:
        counter.uninstall()
    out["scenarios"]["periodic"] = {"not_implemented": True}
    out["priced"] = {
        "fast_track": price(out["scenarios"]["fast_track"]),
        "sweeper": price(out["scenarios"]["sweeper"]),
        "cancel": price(out["scenarios"]["cancel"]),
        "fast_track_sparse": price(sparse(out["scenarios"]["fast_track"])),
        "sweeper_sparse": price(sparse(out["scenarios"]["sweeper"])),
        "fast_track_batch": price(out["scenarios"]["fast_track_batch"]),
    }
    if "sweeper_batch" in out["scenarios"]:
        out["priced"]["sweeper_batch"] = price(out["scenarios"]["sweeper_batch"])
    out["fixed_monthly"] = fixed_monthly([])
    out["anchors"] = {
        "eventbridge_scheduler": PRICES["eventbridge_scheduler_per_million"],
        "stepfunctions_standard": PRICES["stepfunctions_standard_per_million_transitions"]
        * PRICES["stepfunctions_transitions_per_timer"],
    }
    for path in [p for p in ("fast_track", "sweeper", "fast_track_batch", "sweeper_batch") if p in out["priced"]]:
        t = out["priced"][path]["usd_per_million"]
        log(f"  {path}: ${t['total_on_demand']:.2f}/M on demand, ${t['total_provisioned']:.2f}/M provisioned")
    return out
