"""Every parameter of the simulation in one table, each with the page it comes from.

``PARAMETERS`` is the table the report renders. :func:`aws` gives the default quotas as a
profile (``{key: value}``), optionally with some raised; :func:`engine` gives the local engine's
own limits, read from the engine's recorded burst run (moto's measured call rates, the engine's
dispatcher concurrency), for the calibration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INF = math.inf

_SQS_SCALING = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"
_PROVISIONED_BLOG = ("https://aws.amazon.com/blogs/aws/aws-lambda-enhances-sqs-processing-with-new-provisioned-mode-"
                     "3x-faster-scaling-16x-higher-capacity")
_DDB_ON_DEMAND = "https://www.repost.aws/knowledge-center/on-demand-table-throttling-dynamodb"


@dataclass(frozen=True)
class Param:
    key: str
    value: float
    unit: str
    what: str
    source: str  # a URL, or "stated" (an assumed AWS figure: a service latency, an unpublished lifetime), or "engine"


PARAMETERS: tuple[Param, ...] = (
    Param("apigw_rps", 10_000, "requests/s", "API Gateway throttle per account and Region (token bucket rate)",
          "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    Param("apigw_burst", 5_000, "requests", "API Gateway burst (the token bucket's capacity)",
          "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    Param("lambda_account_concurrency", 1_000, "executions", "Lambda concurrent executions per account and Region",
          "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"),
    Param("lambda_scale_per_10s", 1_000, "environments/10 s", "Lambda's concurrency scaling rate, per function",
          "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"),
    Param("esm_start", 5, "invocations", "SQS mapping: concurrent batches when messages appear",
          _SQS_SCALING),
    Param("esm_step_per_min", 300, "invocations/min", "SQS mapping: added concurrent invocations a minute while messages remain",
          _SQS_SCALING),
    Param("esm_max", 1_250, "invocations", "SQS mapping: most concurrent invocations (standard mode)", _SQS_SCALING),
    Param("esm_batch", 10, "messages", "SQS mapping batch size (the construct's default; up to 10,000 with a batching "
          "window, which the cost section's Levers table sets)",
          "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"),
    Param("esm_window_s", 0, "s", "SQS mapping batching window (the construct's default: none; Lambda's default 0)",
          "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"),
    Param("provisioned", 0, "0/1", "SQS mapping provisioned mode (dedicated event pollers) off by default",
          "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html"),
    Param("prov_min_pollers", 2, "pollers", "provisioned mode: minimum event pollers for SQS (default 2)",
          "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html"),
    Param("prov_max_pollers", 200, "pollers", "provisioned mode: maximum event pollers for SQS (default 200)",
          "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html"),
    Param("prov_invokes_per_poller", 10, "invocations", "provisioned mode: concurrent invocations per event poller",
          _PROVISIONED_BLOG),
    Param("prov_step_per_min", 1_000, "invocations/min", "provisioned mode: concurrency added a minute",
          _PROVISIONED_BLOG),
    Param("ddb_table_wru", 40_000, "WRU/s", "DynamoDB on-demand table throughput quota (per table, default)",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode-max-throughput.html"),
    Param("ddb_new_table_wru", 4_000, "WRU/s", "DynamoDB on-demand: what a new table serves at once (then up to 2x its previous peak)",
          _DDB_ON_DEMAND),
    Param("ddb_partition_wru", 1_000, "WRU/s", "DynamoDB: one partition's write throughput (a timer shard is one partition key)",
          _DDB_ON_DEMAND),
    Param("ddb_provisioned_wcu", 5, "WCU/s", "a provisioned table's write capacity without `provisioned_capacity` (the "
          "construct's 5 units; a write of up to 1 KB is one unit; the table's burst capacity, up to 300 s of unused "
          "units kept best effort, is not modelled)",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/provisioned-capacity-mode.html"),
    Param("ddb_autoscale_target", 0.7, "share", "`TableCapacity.autoscaled()`: the consumed share of the write capacity "
          "that target tracking holds (the construct's default 70 %)",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/AutoScaling.html"),
    Param("ddb_autoscale_minutes", 2, "minutes", "auto scaling raises the capacity after this many consecutive one-minute "
          "data points of consumed capacity above the target; modelled: at each whole minute, the capacity is set at once "
          "to the last minute's consumed units / the target (the alarm's delay and the UpdateTable's several minutes "
          "left out, so the scaling shown is faster than AWS's); consumed never exceeds the capacity, so each step is at "
          "most 1 / 0.7 of the last",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/metrics-dimensions.html"),
    Param("stream_shards_per_1000_wru", 1, "shards", "DynamoDB Streams: about one stream shard per table partition (1,000 WRU/s each)",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html"),
    Param("stream_parallelization", 1, "batches/shard", "stream mapping's parallelization factor (default 1, at most 10)",
          "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"),
    Param("sqs_rps", INF, "calls/s", "SQS standard queue: nearly unlimited calls a second per API action",
          "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"),
    Param("sqs_in_flight", 120_000, "messages", "SQS standard queue: most in-flight messages",
          "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html"),
    Param("ebs_invocations_per_s", 1_000, "invocations/s", "EventBridge Scheduler invocations throttle (default)",
          "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    Param("ebs_create_per_s", 5_000, "requests/s", "EventBridge Scheduler CreateSchedule rate (default, us-east-1)",
          "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    Param("ebs_schedules", 10_000_000, "schedules", "EventBridge Scheduler schedules per Region (default)",
          "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"),
    # AWS service latencies: stated, not documented figures (typical in-Region round trips)
    Param("lat_ddb_write_s", 0.006, "s", "DynamoDB write round trip", "stated"),
    Param("lat_sqs_s", 0.010, "s", "SQS call round trip (receive, send batch, delete batch)", "stated"),
    Param("lat_invoke_s", 0.015, "s", "Lambda invoke overhead of a warm function (mapping to function)", "stated"),
    Param("lat_target_s", 0.020, "s", "the target's synchronous invoke (the target's own work excluded)", "stated"),
    Param("lat_cold_start_s", 0.400, "s", "a new execution environment's init (Python, the runtime's imports)", "stated"),
    Param("lambda_idle_keep_s", 300, "s", "how long Lambda keeps an idle execution environment for the next invocation "
          "(\"a non-deterministic period\", the Lambda operator guide; no figure is published): a dispatcher invocation "
          "that finds none used within it starts cold; the most recently used is reused first", "stated"),
    Param("ping_ms", 2, "ms", "the dispatcher's billed time answering a ping, the invocation with no messages by which a "
          "rule keeps an execution environment warm (its SDK clients were made at its init)", "stated"),
    Param("visibility_s", 360, "s", "the delayer queue's visibility timeout: 6 x the dispatcher's 60 s timeout (the "
          "construct's defaults); a failed delivery is handed out again after it", "engine"),
    Param("sweep_interval_s", 60, "s", "the sweeper's schedule (the construct's)", "engine"),
    Param("claim_threads", 16, "threads", "the sweeper's concurrent claims (DeleteItem) per sweep", "engine"),
    Param("api_ms", 17, "ms", "the api function's billed time per single create (one timer a request: the mean of the "
          "cost section's single creates)", "engine"),
    Param("cpu_per_delivery_s", 0.003, "s", "the dispatcher's own CPU per delivery (the burst section's profile)", "engine"),
)

_BY_KEY = {p.key: p for p in PARAMETERS}


def aws(**raised: float) -> dict[str, float]:
    """The default quotas and stated latencies, with ``raised`` replacing some of them."""
    unknown = set(raised) - set(_BY_KEY)
    if unknown:
        raise KeyError(f"unknown parameters: {sorted(unknown)}")
    profile = {p.key: p.value for p in PARAMETERS}
    profile.update(raised)
    profile["moto"] = 0  # AWS answers every call in parallel, each after its latency
    return profile


def measured(data: dict) -> dict[str, float]:
    """The engine's own figures from a benchmarks.json: the api's billed ms per single create (the sustained-creates
    rows send one timer a request, so not the headline's batch of ten), the dispatcher's CPU per delivery."""
    out: dict[str, float] = {}
    cost = data.get("cost") or {}
    single = ((cost.get("scenarios") or {}).get("short/sparse/1KB") or {}).get("summary", {}).get("functions", {}).get("api")
    if single:
        out["api_ms"] = single["ms"]["mean"]
    for run in ((data.get("burst") or {}).get("by_size") or {}).get("1000", []):
        cpu = ((run.get("profile") or {}).get("cpu_s_by_role") or {})
        share = [v for k, v in cpu.items() if k.startswith("dispatcher deliveries")]
        if share and run.get("delivered"):
            out["cpu_per_delivery_s"] = share[0] / run["delivered"]
            break
    return out


def engine(burst: dict) -> dict[str, float]:
    """The local engine's limits, from its recorded burst section: one moto process answers every call
    in turn (service time = 1 / its measured rate for that call), a fixed pool of dispatcher pollers,
    no Lambda concurrency limit, no scaling ramp, no cold starts."""
    rates = burst["ceiling"]["calls_per_s"]
    workers = next(iter(burst["by_size"].values()))[0]["dispatcher_workers"]
    profile = aws()
    profile.update(
        moto=1, moto_update_s=1 / rates["UpdateItem"], moto_receive_s=1 / rates["ReceiveMessage (10)"],
        moto_delete_s=1 / rates["DeleteMessageBatch (10)"], moto_send_s=1 / rates["SendMessage"],
        esm_start=workers, esm_max=workers, esm_step_per_min=0, lambda_account_concurrency=INF,
        lambda_scale_per_10s=INF, lat_cold_start_s=0.0, lat_invoke_s=0.001, lat_target_s=0.002,
        lat_ddb_write_s=0.0, lat_sqs_s=0.0, ddb_table_wru=INF, ddb_new_table_wru=INF)
    return profile


_RETRY_BEHAVIOR = "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html"

FLOW_PARAMETERS: tuple[Param, ...] = (
    Param("ddb_partition_rru", 3_000, "RRU/s", "DynamoDB: one partition's read throughput (a limited target's item is "
          "one partition key; a consistent read of an item under 4 KB is one unit)", _DDB_ON_DEMAND),
    Param("sdk_retry_quota", 500, "tokens", "the SDK's retry quota per client (standard mode): a retry takes "
          "`sdk_retry_cost` from it, a call that succeeds at once gives 1 back, one that succeeds on a retry gives its "
          "cost back; empty, a throttled call is not retried", _RETRY_BEHAVIOR),
    Param("sdk_retry_cost", 5, "tokens", "what one retry takes from the retry quota (standard mode)", _RETRY_BEHAVIOR),
    Param("lat_wait_overshoot_s", 0.002, "s", "how long after its instant a wait in the dispatcher ends (a sleep's "
          "overshoot; uniform from 0 to this)", "stated"),
)
"""What the flow-control simulation (``bench.scale.flow``) adds to the scale profile."""


def flow(base: dict[str, float]) -> dict[str, float]:
    """``base`` (a profile of :func:`aws`) with the flow-control simulation's parameters."""
    return {**base, **{p.key: p.value for p in FLOW_PARAMETERS}}
