"""Prices and billing rules: the one price table, DynamoDB's size rules, and the bill per timer.

Nothing here measures anything: ``bench.meter`` measures in the engine, ``bench.cost`` runs the
scenarios, and :func:`bill` turns a measured usage per timer into dollars per million timers,
line by line (the bill of materials).
"""

from __future__ import annotations

import base64
import json
import math

# --- the one price table -------------------------------------------------------------------
# us-east-1, public list prices, as known to the author of this file; read on 2026-11-21
# from the sources below (no network access was used to re-check them on that day, so
# re-verify before quoting). Free tiers are ignored (the figures are marginal costs), except
# EventBridge Scheduler's in the monthly bill (``bench.monthly``), which is its own pricing.
PRICES = {
    "as_of": "2026-11-21 (list prices as published since the 2024-11-01 DynamoDB on-demand cut; re-verify)",
    "region": "us-east-1",
    "sources": {
        "dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/ and /provisioned/",
        "sqs": "https://aws.amazon.com/sqs/pricing/",
        "lambda": "https://aws.amazon.com/lambda/pricing/",
        "apigateway": "https://aws.amazon.com/api-gateway/pricing/",
        "cloudwatch": "https://aws.amazon.com/cloudwatch/pricing/",
        "eventbridge_scheduler": "https://aws.amazon.com/eventbridge/pricing/ (the Scheduler tab)",
        "kms": "https://aws.amazon.com/kms/pricing/",
        "stepfunctions": "https://aws.amazon.com/step-functions/pricing/",
    },
    # DynamoDB on demand (standard table class): per million request units
    "ddb_od_per_million_wru": 0.625,
    "ddb_od_per_million_rru": 0.125,
    # DynamoDB provisioned: per capacity-unit hour
    "ddb_prov_wcu_hour": 0.00065,
    "ddb_prov_rcu_hour": 0.00013,
    "ddb_prov_utilisation": 0.70,  # stated: average consumed / provisioned (auto scaling's default target is 70 %)
    "ddb_storage_gb_month": 0.25,
    "ddb_pitr_gb_month": 0.20,  # continuous backups (point-in-time recovery), per GB-month of table size
    # DynamoDB Streams read by a Lambda trigger: free
    "ddb_streams_lambda_trigger": 0.0,
    # SQS standard: per million requests; each 64 KB chunk of a request's payload is one request
    "sqs_per_million_requests": 0.40,
    "sqs_chunk_bytes": 64 * 1024,
    # Lambda, arm64 (the construct's default architecture); memory per function: the construct's defaults
    "lambda_per_million_requests": 0.20,
    "lambda_arm_per_gb_second": 0.0000133334,
    "lambda_memory_mb": {"api": 256, "sweeper": 256, "enqueuer": 128, "dispatcher": 128},
    # API Gateway: HTTP API (the construct's default; first 300 M a month), metered per 512 KB of
    # request; REST API (first 333 M a month), per request
    "apigw_http_per_million": 1.00,
    "apigw_http_meter_bytes": 512 * 1024,
    "apigw_rest_per_million": 3.50,
    # CloudWatch: Logs ingestion (standard class), each event counted with 26 bytes of overhead;
    # metrics (custom metrics and API Gateway's detailed metrics) per metric-month, first 10,000
    "cw_logs_per_gb": 0.50,
    "cw_logs_event_overhead_bytes": 26,
    "cw_metric_month": 0.30,
    "cw_alarm_month": 0.10,  # a standard-resolution alarm (one metric)
    # KMS: a customer managed key per month, and its requests (GenerateDataKey, Decrypt)
    "kms_key_month": 1.00,
    "kms_per_10k_requests": 0.03,
    "sqs_kms_data_key_reuse_s": 300,  # SQS's default KmsDataKeyReusePeriodSeconds (the construct keeps it)
    # anchors
    "eventbridge_scheduler_per_million": 1.00,
    "eventbridge_scheduler_free_per_month": 14_000_000,
    "stepfunctions_standard_per_million_transitions": 25.0,
    "stepfunctions_transitions_per_timer": 3,  # start -> Wait -> Task: about $75 per million timers
}

# Lambda's platform lines per invocation (platform.start and platform.report in its JSON log
# format, about 125 + 240 bytes, plus the per-event overhead; approximate). The construct
# suppresses them by default (JSON format, system log level WARN); priced only when asked.
LAMBDA_PLATFORM_BYTES = 420
# The fields Lambda's JSON log format wraps around each line the runtime logs (Python runtime).
LAMBDA_JSON_LINE = {"timestamp": "2026-11-21T22:19:57.123Z", "level": "WARNING", "message": "",
                    "logger": "scheduler_runtime", "requestId": "79b4f56e-95b1-4643-9700-2807f4e68189"}
SECONDS_PER_MONTH = 30 * 24 * 3600


# --- DynamoDB item sizes and capacity units ------------------------------------------------
def _raw_binary_length(value: object) -> int:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return len(base64.b64decode(str(value)))  # on the wire (and in moto's server) binary is base64


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").replace(".", "").split("e")[0].split("E")[0].strip("0") or "0"
    return (len(digits) + 1) // 2 + 1  # 1 byte per two significant digits, plus 1


def value_size(value: dict) -> int:
    """Bytes of one attribute value (without its name), by DynamoDB's published rules."""
    (kind, v), = value.items()
    if kind == "S":
        return len(str(v).encode("utf-8"))
    if kind == "N":
        return _number_size(str(v))
    if kind == "B":
        return _raw_binary_length(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(x.encode("utf-8")) for x in v)
    if kind == "NS":
        return sum(_number_size(x) for x in v)
    if kind == "BS":
        return sum(_raw_binary_length(x) for x in v)
    if kind == "L":
        return 3 + sum(1 + value_size(x) for x in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + value_size(x) for k, x in v.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict | None) -> int:
    """Bytes of an item: attribute name lengths plus value sizes. 0 for no item."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(size_bytes: int) -> int:
    """Write request units of one write billed at ``size_bytes`` (1 KB each, rounded up, at least 1)."""
    return max(1, math.ceil(size_bytes / 1024))


def read_units(size_bytes: int, consistent: bool) -> float:
    """Read request units of a read of ``size_bytes`` (4 KB each, rounded up; half if eventually consistent)."""
    units = max(1, math.ceil(size_bytes / 4096))
    return float(units) if consistent else units / 2


# --- log lines -------------------------------------------------------------------------------
def runtime_log_line_bytes(message: str, level: str) -> int:
    """Ingested bytes of one line the runtime logs, as Lambda's JSON log format writes it."""
    line = dict(LAMBDA_JSON_LINE, level=level, message=message)
    return len(json.dumps(line).encode("utf-8")) + PRICES["cw_logs_event_overhead_bytes"]


# --- the bill ------------------------------------------------------------------------------------
DOORS = {
    "http": "HTTP API",
    "rest": "REST API",
    "direct": "direct invoke",
}


def _usd_per_million(quantity_per_timer: float, unit_price: float) -> float:
    return quantity_per_timer * unit_price * 1e6


def bill(usage: dict, door: str = "http", platform_lines: bool = False) -> dict:
    """Dollars per million timers for one usage per timer, itemised, on demand and provisioned.

    ``usage`` (per timer): ``create_requests`` and ``create_request_bytes`` (mean body size of
    one create request), ``access_log_bytes`` (one line of each door's access log),
    ``lambda`` {function: {invocations, billed_ms}}, ``sqs`` {label: chunks}, ``wru`` and
    ``rru`` {label: units}, ``log_bytes`` {label: bytes}. ``door`` adds the API Gateway
    charge and access log line of that door (none for a direct invoke).
    """
    p = PRICES
    rows: list[dict] = []

    def row(group: str, item: str, quantity: float, unit: str, unit_price: float, per: float = 1.0,
            prov_unit_price: float | None = None) -> None:
        """``unit_price`` per ``per`` units; ``prov_unit_price`` (DynamoDB provisioned) per unit."""
        od = _usd_per_million(quantity, unit_price / per)
        prov = od if prov_unit_price is None else _usd_per_million(quantity, prov_unit_price)  # per unit
        rows.append({"group": group, "item": item, "quantity": quantity, "unit": unit,
                     "unit_price": unit_price, "price_per": per, "prov_unit_price": prov_unit_price,
                     "usd_od": od, "usd_prov": prov})

    requests = usage["create_requests"]
    if door == "http":
        metered = requests * math.ceil(max(1, usage["create_request_bytes"]) / p["apigw_http_meter_bytes"])
        row("API Gateway", "HTTP API requests (512 KB units)", metered, "requests", p["apigw_http_per_million"], 1e6)
    elif door == "rest":
        row("API Gateway", "REST API requests", requests, "requests", p["apigw_rest_per_million"], 1e6)
    for fn, f in sorted(usage["lambda"].items()):
        if f["invocations"]:
            row("Lambda", f"{fn} invocations", f["invocations"], "requests", p["lambda_per_million_requests"], 1e6)
    for fn, f in sorted(usage["lambda"].items()):
        gb_s = f["billed_ms"] / 1000 * p["lambda_memory_mb"][fn] / 1024
        how = (f"{f['billed_ms'] / f['invocations']:.0f} ms per invocation" if f["invocations"]
               else f"{f['billed_ms']:.0f} ms per timer, its share of the sweeps")
        row("Lambda", f"{fn} duration ({p['lambda_memory_mb'][fn]} MB, {how})", gb_s, "GB-s", p["lambda_arm_per_gb_second"])
    for label, chunks in sorted(usage["sqs"].items()):
        row("SQS", label, chunks, "requests", p["sqs_per_million_requests"], 1e6)
    u = p["ddb_prov_utilisation"]
    for label, units in sorted(usage["wru"].items()):
        row("DynamoDB", f"{label}", units, "WRU", p["ddb_od_per_million_wru"], 1e6,
            prov_unit_price=p["ddb_prov_wcu_hour"] / 3600 / u)
    for label, units in sorted(usage["rru"].items()):
        row("DynamoDB", f"{label}", units, "RRU", p["ddb_od_per_million_rru"], 1e6,
            prov_unit_price=p["ddb_prov_rcu_hour"] / 3600 / u)
    logs = dict(usage["log_bytes"])
    if door in ("http", "rest"):
        logs[f"{DOORS[door]} access log line"] = requests * usage["access_log_bytes"][door]
    if platform_lines:
        invocations = sum(f["invocations"] for f in usage["lambda"].values())
        logs["Lambda START/END/REPORT lines"] = invocations * LAMBDA_PLATFORM_BYTES
    for label, b in sorted(logs.items()):
        row("CloudWatch Logs", label, b, "bytes", p["cw_logs_per_gb"], 1e9)
    total_od = sum(r["usd_od"] for r in rows)
    total_prov = sum(r["usd_prov"] for r in rows)
    groups: dict = {}
    for r in rows:
        g = groups.setdefault(r["group"], {"usd_od": 0.0, "usd_prov": 0.0})
        g["usd_od"] += r["usd_od"]
        g["usd_prov"] += r["usd_prov"]
    return {"door": door, "rows": rows, "groups": groups, "total_on_demand": total_od, "total_provisioned": total_prov}
