"""The local engine: moto, the runtime's handlers in-process, pollers, and the HTTP API."""

from __future__ import annotations

import collections
import importlib
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .._runtime_asset import contract, event_filters, runtime_asset_path
from .checkpoints import CheckpointStore
from .faults import FaultInjector, parse_spec
from .moto_process import MotoProcess
from .pollers import FunctionSpec, QueuePoller, ScheduleRule, StreamPoller
from .servers import ApiServer, LambdaEndpoint
from .targets import Delivery, stdout_target

REGION = "us-east-1"
LOCAL_TARGET_FUNCTION = "local-target"
API_FUNCTION = "delayed-scheduler-api"
"""The api function's name on the engine's Lambda endpoint, for direct invokes."""
ENQUEUER_FUNCTION = "delayed-scheduler-enqueuer"
"""The enqueuer's name on the engine's Lambda endpoint: invoke it with ``{"recover": <on-failure message>}``."""
logger = logging.getLogger("cdk_delayed_scheduler.local")
_CONTRACT = contract()
DEFAULT_DELAY_WINDOW_SECONDS: int = _CONTRACT["delayWindowSeconds"]["default"]
DEFAULT_SHARD_COUNT: int = _CONTRACT["shardCount"]["default"]
DEFAULT_MAX_RECEIVE_COUNT: int = _CONTRACT["maxReceiveCount"]["default"]
DEFAULT_HISTORY_RETENTION_SECONDS: int = _CONTRACT["historyRetentionSeconds"]["default"]


@dataclass
class EngineOptions:
    """How the engine runs. Every field has a default that mirrors the deployed construct."""

    port: int = 0
    """HTTP API port on 127.0.0.1 (0 picks a free one)."""
    target: Delivery | None = None
    """Where deliveries go; default: one JSON line per delivery on stdout."""
    delay_window: int = DEFAULT_DELAY_WINDOW_SECONDS
    """Seconds: schedules due within it go straight to the delayer queue, later ones wait as
    timers for the sweeper (the construct's ``delay_window``). Shrink it to run the sweeper path in seconds."""
    sweep_interval: float = 60.0
    shard_count: int = DEFAULT_SHARD_COUNT
    endpoint_url: str | None = None
    """An already running AWS-compatible endpoint; default: start moto on 127.0.0.1."""
    state_dir: Path | None = None
    """Where stream checkpoints persist, so a restarted engine resumes; default: memory only."""
    name_prefix: str = "delayed-scheduler"
    dispatcher_workers: int = 16
    """Concurrent dispatcher invocations (the SQS mapping's concurrency). Each one holds its batch
    until the latest message in it is due (up to a second), so this caps deliveries per second;
    AWS scales the mapping far beyond it unless ``dispatcher_max_concurrency`` is set."""
    visibility_timeout: int = 30
    max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT
    history_retention: int = DEFAULT_HISTORY_RETENTION_SECONDS
    stream_max_retries: int = 3
    listing: bool = False
    """Serve ``GET /schedules`` (the construct's ``listing``): every create and status change also
    writes the listing index. Off, the route answers 404 saying how to turn it on."""
    require_signature: bool = False
    """Answer 403 to an API request without a well-formed SigV4 ``Authorization`` header, as API
    Gateway with IAM auth does (the signature itself is not checked: moto's credentials are fake)."""
    faults: str | None = None
    """Inject faults at these rates (``kind=rate,...``; see :data:`.faults.FAULT_KINDS`), in the AWS
    layer and the target, never in the runtime's code; ``engine.faults`` counts what was injected."""
    seed: int = 0
    """Seeds the fault RNG."""


@dataclass
class EngineStats:
    """What the runtime reported through its structured logs, counted per event and id."""

    events: collections.Counter = field(default_factory=collections.Counter)
    claims: collections.Counter = field(default_factory=collections.Counter)
    claims_by: collections.Counter = field(default_factory=collections.Counter)
    lateness_ms: list = field(default_factory=list)
    stream_failures: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, event: str, fields: dict) -> None:
        with self.lock:
            self.events[event] += 1
            if event == "claimed":
                self.claims[fields["id"]] += 1
                self.claims_by[fields["by"]] += 1
            elif event == "delivered":
                self.lateness_ms.append(fields["lateMs"])


class _StatsHandler(logging.Handler):
    def __init__(self, stats: EngineStats) -> None:
        super().__init__(logging.INFO)
        self._stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event:
            self._stats.record(event, getattr(record, "fields", {}))


class Engine:
    """Run the scheduler locally. Use as a context manager, or call start() and stop().

    One engine runs per process at a time: the runtime's handlers read their
    configuration from the process environment, as they do in Lambda, and an
    engine-started moto keeps its state per process.
    """

    def __init__(self, options: EngineOptions | None = None) -> None:
        self.options = options or EngineOptions()
        self.stats = EngineStats()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._moto: Any = None
        self._api: ApiServer | None = None
        self._lambda: LambdaEndpoint | None = None
        self._stats_handler = _StatsHandler(self.stats)
        self._saved_env: dict[str, str | None] = {}
        self.endpoint_url = ""
        self.table_name = f"{self.options.name_prefix}-schedules"
        self.queue_url = self.dead_letter_queue_url = self.stream_arn = ""
        self._failure_clients: tuple[Any, Any] = (None, None)
        self.faults: FaultInjector | None = None
        if self.options.faults:
            self.faults = FaultInjector(parse_spec(self.options.faults), self.options.seed,
                                        target_timeout_seconds=self._dispatcher_timeout() + 0.5)

    # --- lifecycle -----------------------------------------------------------
    def __enter__(self) -> "Engine":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        assert self._api is not None, "the engine is not started"
        return self._api.url

    @property
    def lambda_endpoint_url(self) -> str:
        """Lambda's Invoke API on 127.0.0.1: invoke ``API_FUNCTION`` here for the direct-invoke door."""
        assert self._lambda is not None, "the engine is not started"
        return self._lambda.url

    @property
    def moto_pid(self) -> int | None:
        """The process id of the moto the engine started (None with ``endpoint_url``, or before start)."""
        return self._moto.pid if self._moto is not None else None

    def start(self) -> "Engine":
        opts = self.options
        self.endpoint_url = opts.endpoint_url or self._start_moto()
        target = opts.target or stdout_target()
        functions: dict[str, Callable[[dict], Any]] = {
            LOCAL_TARGET_FUNCTION: self.faults.target(target) if self.faults else target}
        self._lambda = LambdaEndpoint(functions)
        self._lambda.start()
        self._configure_environment()
        session = self._session()
        created = self._provision(session)
        self._set_function_environment()
        handlers = self._load_handlers()
        if created:
            self._mark_shards(session)
        if self.faults:  # after set-up: the engine's own provisioning is the AWS service itself
            self.faults.install()
            direct_api = self.faults.function("api", handlers["api"], throttle=False)
            handlers = {name: self.faults.api(handler) if name == "api" else self.faults.function(name, handler)
                        for name, handler in handlers.items()}
        else:
            direct_api = handlers["api"]
        functions[API_FUNCTION] = lambda event: direct_api(event, None)  # direct invoke
        functions[ENQUEUER_FUNCTION] = lambda event: handlers["enqueuer"](event, None)  # stream recovery

        streams = session.client("dynamodbstreams")
        sqs = session.client("sqs")
        self._failure_clients = (session.client("dynamodbstreams"), session.client("sqs"))
        if opts.state_dir:
            opts.state_dir.mkdir(parents=True, exist_ok=True)
        checkpoints = CheckpointStore(opts.state_dir / "checkpoints.json" if opts.state_dir else None)
        self._threads.append(
            StreamPoller(
                FunctionSpec("enqueuer", handlers["enqueuer"], stopping=self._stop), streams, self.stream_arn,
                event_filters()["enqueuer"], checkpoints, self._stop, max_retries=opts.stream_max_retries,
                on_failure=self._on_stream_failure, region=REGION,
            )
        )
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        dispatcher = FunctionSpec("dispatcher", handlers["dispatcher"], opts.visibility_timeout / 6, self._stop)
        self._threads.append(
            QueuePoller(dispatcher, sqs, self.queue_url, queue_arn, self._stop, concurrency=opts.dispatcher_workers,
                        visibility_timeout=opts.visibility_timeout, wait_seconds=1 if self._moto else 0, region=REGION)
        )
        sweeper = FunctionSpec("sweeper", handlers["sweeper"], 60, self._stop)
        self._threads.append(ScheduleRule(sweeper, opts.sweep_interval, self._stop))

        self._api = ApiServer(handlers["api"], opts.port, require_signature=opts.require_signature)
        self._api.start()
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        for server in (self._api, self._lambda):
            if server is not None:
                server.stop()
        if self._moto is not None:
            self._moto.stop()
        if self.faults:
            self.faults.uninstall()
        logging.getLogger("scheduler_runtime").removeHandler(self._stats_handler)
        self._restore_env()

    # --- set-up --------------------------------------------------------------
    def _start_moto(self) -> str:
        """A corrected moto in a child process of its own (a fresh process: an empty account)."""
        self._moto = MotoProcess()
        return self._moto.start()

    def _configure_environment(self) -> None:
        """Point the AWS SDK at the endpoints; moto accepts any credentials."""
        assert self._lambda is not None
        self._set_env(
            AWS_ACCESS_KEY_ID=os.environ.get("AWS_ACCESS_KEY_ID", "local"),
            AWS_SECRET_ACCESS_KEY=os.environ.get("AWS_SECRET_ACCESS_KEY", "local"),
            AWS_DEFAULT_REGION=REGION,
            AWS_REGION=REGION,
            AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled",
            AWS_ENDPOINT_URL=self.endpoint_url,
            AWS_ENDPOINT_URL_LAMBDA=self._lambda.url,
        )

    def _set_env(self, **values: str) -> None:
        """Set process environment variables, remembering what to restore on stop()."""
        for name, value in values.items():
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _restore_env(self) -> None:
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env.clear()

    def _session(self) -> Any:
        import boto3

        return boto3.session.Session()

    def _mark_shards(self, session: Any) -> None:
        """A new table holds no timer of an earlier, larger shard count: say so with the sweeper's own
        shard mark, so its first sweep reads the mark instead of probing every shard up to the maximum
        (a probe meant for tables an older release wrote, which on a fresh engine only slows its start)."""
        from scheduler_runtime.aws.shards import ShardMark  # noqa: PLC0415 - importable once the handlers are

        ShardMark(session.client("dynamodb"), self.table_name).raise_to(self.options.shard_count)

    def _provision(self, session: Any) -> bool:
        """Create the table and queues, as the construct would, unless they exist; whether the table is new."""
        ddb = session.client("dynamodb")
        created = False
        try:
            table = ddb.describe_table(TableName=self.table_name)["Table"]
        except ddb.exceptions.ResourceNotFoundException:
            created = True
            table = ddb.create_table(
                TableName=self.table_name,
                **_table_definition(self.options.listing),
                BillingMode="PAY_PER_REQUEST",
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            )["TableDescription"]
        self.stream_arn = table["LatestStreamArn"]
        sqs = session.client("sqs")
        self.dead_letter_queue_url = _ensure_queue(sqs, f"{self.options.name_prefix}-dlq", {})
        dlq_arn = sqs.get_queue_attributes(QueueUrl=self.dead_letter_queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": self.options.max_receive_count})
        self.queue_url = _ensure_queue(
            sqs, f"{self.options.name_prefix}-delayer",
            {"VisibilityTimeout": str(self.options.visibility_timeout), "RedrivePolicy": redrive},
        )
        return created

    def _set_function_environment(self) -> None:
        """The variables the construct sets on every function, shared here by all of them."""
        opts = self.options
        self._set_env(
            TABLE_NAME=self.table_name,
            DELAYER_QUEUE_URL=self.queue_url,
            DEAD_LETTER_QUEUE_URL=self.dead_letter_queue_url,
            TARGETS=json.dumps({_CONTRACT["defaultTargetName"]: {"type": "lambda",
                                                                  "functionArn": _function_arn(LOCAL_TARGET_FUNCTION)}}),
            SHARD_COUNT=str(opts.shard_count),
            DELAY_WINDOW_SECONDS=str(opts.delay_window),
            HISTORY_RETENTION_SECONDS=str(opts.history_retention),
            MAX_RECEIVE_COUNT=str(opts.max_receive_count),
            DISPATCHER_TIMEOUT_SECONDS=str(self._dispatcher_timeout()),
            LISTING="true" if opts.listing else "false",
        )

    def _dispatcher_timeout(self) -> int:
        """The dispatcher's timeout, as the construct derives it from the visibility timeout."""
        return max(1, self.options.visibility_timeout // _CONTRACT["visibilityTimeoutFactor"])

    def _load_handlers(self) -> dict[str, Callable]:
        path = str(runtime_asset_path())
        if path not in sys.path:
            sys.path.insert(0, path)
        from scheduler_runtime import observability  # noqa: PLC0415 - importable only once the path is set

        observability.set_metric_sink(lambda line: logger.debug("metric %s", line))
        runtime_logger = logging.getLogger("scheduler_runtime")
        runtime_logger.addHandler(self._stats_handler)
        runtime_logger.setLevel(logging.INFO)
        return {
            name: importlib.import_module(f"scheduler_runtime.handlers.{name}").handler
            for name in ("api", "sweeper", "enqueuer", "dispatcher")
        }

    def _on_stream_failure(self, function: str, records: list) -> None:
        """Count the records, and send the dead-letter queue what the construct's mapping sends its
        on-failure destination: the batch's stream range, no record (see ``recover-stream``)."""
        with self.stats.lock:
            self.stats.stream_failures.extend((function, r["dynamodb"]["SequenceNumber"]) for r in records)
        streams, sqs = self._failure_clients
        sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
        first, last = min(sequence_numbers, key=int), max(sequence_numbers, key=int)
        shards = streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        shard = next(s["ShardId"] for s in shards if int(s["SequenceNumberRange"]["StartingSequenceNumber"]) <= int(first)
                     and int(s["SequenceNumberRange"].get("EndingSequenceNumber", last)) >= int(last))
        message = {"version": "1.0", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "requestContext": {"functionArn": _function_arn(function), "condition": "RetryAttemptsExhausted"},
                   "DDBStreamBatchInfo": {"shardId": shard, "startSequenceNumber": first, "endSequenceNumber": last,
                                          "batchSize": len(records), "streamArn": self.stream_arn}}
        sqs.send_message(QueueUrl=self.dead_letter_queue_url, MessageBody=json.dumps(message))


def _table_definition(listing: bool) -> dict:
    """Keys and attributes as the construct defines them; with ``listing``, the sparse keys-only index too."""
    keys = [("pk", "HASH"), ("sk", "RANGE")]
    index = _CONTRACT["listing"]
    attributes = [name for name, _ in keys]
    definition: dict = {"KeySchema": [{"AttributeName": n, "KeyType": k} for n, k in keys]}
    if listing:
        attributes += [index["partitionKey"], index["sortKey"]]
        definition["GlobalSecondaryIndexes"] = [{
            "IndexName": index["indexName"],
            "KeySchema": [{"AttributeName": index["partitionKey"], "KeyType": "HASH"},
                          {"AttributeName": index["sortKey"], "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }]
    definition["AttributeDefinitions"] = [{"AttributeName": n, "AttributeType": "S"} for n in attributes]
    return definition


def _ensure_queue(sqs: Any, name: str, attributes: dict) -> str:
    """The queue's URL; created with ``attributes`` if missing, else brought to them."""
    try:
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except sqs.exceptions.QueueDoesNotExist:
        return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    if attributes:
        sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    return url


def _function_arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:123456789012:function:{name}"
