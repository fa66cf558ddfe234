"""The local engine: moto, the runtime's handlers in-process, pollers, and the HTTP API."""

from __future__ import annotations

import collections
import importlib
import json
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from botocore.config import Config as BotoConfig

from .._contract import contract
from .._local_required import ENGINE, require_local
from .._runtime_asset import event_filters, runtime_asset_path
from ..operator import RedriveReport, redrive
from .checkpoints import CheckpointStore
from .deadlines import DeadlineLayer, within_timeout
from .deliveries import LocalTarget, stdout_target
from .engine_options import EngineOptions
from .faults import FaultInjector, parse_spec
from .moto_process import MotoProcess
from .named_targets import LOCAL_TARGET_FUNCTION, MadeTarget, default_target_description, make_named_targets
from .outcome_target import make_outcome_target, outcomes_setting
from .pollers import FunctionSpec, Handler, QueuePoller, ScheduleRule, StreamPoller, PollerThread
from .quiet import Mappings, QuietCheck, under_way
from .resources import REGION, provision, provision_flow_queue, stream_failure_message
from .servers import ApiServer, LambdaEndpoint

API_FUNCTION = "delayed-scheduler-api"
"""The api function's name on the engine's Lambda endpoint, for direct invokes."""
ENQUEUER_FUNCTION = "delayed-scheduler-enqueuer"
"""The enqueuer's name on the engine's Lambda endpoint: invoke it with ``{"recover": <on-failure message>}``."""
logger = logging.getLogger("cdk_delayed_scheduler.local")
STOPPED_EARLY = "sweep_stopped_early"
"""The runtime's event for a sweep that ran out of time (the next sweep resumes where it stopped)."""
_SESSIONS: dict[tuple[str | None, str | None], Any] = {}
_SESSIONS_LOCK = threading.Lock()
__all__ = ["API_FUNCTION", "ENQUEUER_FUNCTION", "REGION", "Engine", "EngineOptions", "EngineStats"]


@dataclass
class EngineStats:
    """What the runtime reported through its structured logs, counted per event and id."""

    events: collections.Counter[str] = field(default_factory=collections.Counter)
    claims: collections.Counter[str] = field(default_factory=collections.Counter)
    claims_by: collections.Counter[str] = field(default_factory=collections.Counter)
    lateness_ms: list[int] = field(default_factory=list)
    stream_failures: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, event: str, fields: dict[str, Any]) -> None:
        with self.lock:
            self.events[event] += 1
            if event == "claimed":
                self.claims[fields["id"]] += 1
                self.claims_by[fields["by"]] += 1
            elif event == "delivered":
                self.lateness_ms.append(fields["lateMs"])

    def claims_settled(self) -> bool:
        """Whether every claim counted so far was enqueued or written back (none is between its stream
        record and the delayer queue)."""
        with self.lock:
            return self.events["enqueued"] + self.events["written_back"] >= self.events["claimed"]


class _StatsHandler(logging.Handler):
    def __init__(self, stats: EngineStats) -> None:
        super().__init__(logging.INFO)
        self._stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event:
            self._stats.record(event, getattr(record, "fields", {}))


class _Forward(logging.Handler):
    """Hands the runtime's records at ``level`` and above to the handlers above its logger.

    A sweep the engine's stop cut short (once ``stopping`` is set, the functions' contexts have no time
    left) is no warning: its ``sweep_stopped_early`` goes on at INFO, where ``level`` lets INFO through."""

    def __init__(self, level: int, stopping: threading.Event) -> None:
        super().__init__(level)
        self._stopping = stopping

    def emit(self, record: logging.LogRecord) -> None:
        cut_by_the_stop = getattr(record, "event", None) == STOPPED_EARLY and self._stopping.is_set()
        if cut_by_the_stop and record.levelno > logging.INFO:
            if self.level > logging.INFO:
                return
            record = logging.makeLogRecord({**record.__dict__, "levelno": logging.INFO, "levelname": "INFO"})
        logging.getLogger().handle(record)


class Engine:
    """Run the scheduler locally. Use as a context manager, or call start() and stop().

    One engine runs per process at a time: the runtime's handlers read their
    configuration from the process environment, as they do in Lambda, and an
    engine-started moto keeps its state per process.
    """

    def __init__(self, options: EngineOptions | None = None, *, corrected_endpoint: bool = False,
                 before_api_call: Callable[[], None] | None = None, on_stop: Callable[[], None] | None = None) -> None:
        """``corrected_endpoint``: ``options.endpoint_url`` is a moto with this package's corrections
        (``local.moto_patches``), whose long polls answer as soon as a message is receivable: the dispatcher's
        mapping then long-polls it, as it does the moto the engine starts. Default: a plain endpoint, polled.
        ``before_api_call`` runs before each invocation of the api function, HTTP or direct (the testing kit
        moves its clock there); ``on_stop``, once the engine stops taking work, before it waits for its pollers
        (the kit ends its moto's long polls there). Default: nothing."""
        self.options = options or EngineOptions()
        self._long_polls = corrected_endpoint
        self._before_api_call = before_api_call
        self._on_stop = on_stop
        self.stats = EngineStats()
        self._stop = threading.Event()
        self._threads: list[PollerThread] = []
        self._moto: MotoProcess | None = None
        self._api: ApiServer | None = None
        self._lambda: LambdaEndpoint | None = None
        self._stream: StreamPoller | None = None
        self._deadlines = DeadlineLayer()
        self._stats_handler = _StatsHandler(self.stats)
        self._forward = _Forward(getattr(logging, self.options.log_level.upper()), self._stop)
        self._saved_logger: tuple[int, bool] | None = None
        self._saved_env: dict[str, str | None] = {}
        self.endpoint_url = ""
        self.table_name = f"{self.options.name_prefix}-schedules"
        self.queue_url = self.dead_letter_queue_url = self.stream_arn = ""
        self.flow_queue_url: str | None = None
        """The flow queue, where the deliveries to limited targets wait: made once a target has limits, as the
        construct makes it; None without."""
        self.target_queue_urls: dict[str, str] = {}
        """Where each named target the engine created delivers, by target name: a :class:`QueueTarget`'s own
        queue, the queue subscribed to a :class:`TopicTarget`'s topic, the queue of a :class:`BusTarget`'s rule."""
        self.target_state_machine_arns: dict[str, str] = {}
        """Each :class:`StateMachineTarget`'s state machine, by target name (its executions are its deliveries)."""
        self.outcomes_queue_url: str | None = None
        """Where the outcome events arrive when ``outcomes`` is a :class:`QueueTarget`, a :class:`TopicTarget` or a
        :class:`BusTarget` (as ``target_queue_urls``)."""
        self.outcomes_state_machine_arn: str | None = None
        """The state machine of an ``outcomes`` :class:`StateMachineTarget` (each outcome event starts an execution)."""
        self._sweeper: FunctionSpec | None = None
        self._dispatcher_pollers: list[QueuePoller] = []
        self._failure_clients: tuple[Any, Any] = (None, None)
        self._quiet: QuietCheck | None = None
        self.faults: FaultInjector | None = None
        if self.options.faults:
            self.faults = FaultInjector(parse_spec(self.options.faults), self.options.seed,
                                        target_timeout_seconds=self.options.dispatcher_timeout_seconds + 0.5)

    # --- lifecycle -----------------------------------------------------------
    def __enter__(self) -> Engine:
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
        """Lambda's Invoke API on 127.0.0.1: invoke ``API_FUNCTION`` here for the direct-invoke door
        (``AWS_ENDPOINT_URL_LAMBDA`` for boto3 and ``SchedulerClient.for_function``)."""
        assert self._lambda is not None, "the engine is not started"
        return self._lambda.url

    @property
    def moto_pid(self) -> int | None:
        """The process id of the moto the engine started (None with ``endpoint_url``, or before start)."""
        return self._moto.pid if self._moto is not None else None

    def start(self) -> Engine:
        opts = self.options
        require_local("the local engine", ENGINE if not opts.endpoint_url else ("boto3",))
        self.endpoint_url = opts.endpoint_url or self._start_moto()
        target = opts.target or stdout_target()
        functions: dict[str, Callable[[Any], Any]] = {LOCAL_TARGET_FUNCTION: self._local_target(target)}
        self._lambda = LambdaEndpoint(functions)
        self._lambda.start()
        self._configure_environment()
        session = self._session()
        resources = provision(session, opts.name_prefix, listing=opts.listing,
                              visibility_timeout=opts.visibility_timeout, max_receive_count=opts.max_receive_count)
        self.table_name, self.stream_arn = resources.table_name, resources.stream_arn
        self.queue_url, self.dead_letter_queue_url = resources.queue_url, resources.dead_letter_queue_url
        named = make_named_targets(session, opts.name_prefix, opts.targets, functions, self._local_target)
        self.target_queue_urls, self.target_state_machine_arns = named.queue_urls, named.state_machine_arns
        outcomes = make_outcome_target(session, opts, functions, self._local_target)
        if outcomes is not None:
            self.outcomes_queue_url, self.outcomes_state_machine_arn = outcomes.queue_url, outcomes.state_machine_arn
        every_target = self._every_target(named.descriptions)
        flow_queue_arn = None
        if any("flowControl" in description for description in every_target.values()):
            self.flow_queue_url, flow_queue_arn = provision_flow_queue(
                session, opts.name_prefix, resources, visibility_timeout=opts.visibility_timeout,
                max_receive_count=opts.max_receive_count)
        self._set_function_environment(every_target, outcomes)
        handlers = self._load_handlers()
        handlers["api"] = within_timeout(handlers["api"], contract.API_FUNCTION_TIMEOUT_SECONDS)
        if self._before_api_call is not None:
            handlers["api"] = _preceded(self._before_api_call, handlers["api"])
        if resources.table_created:
            self._mark_shards(session)
        self._deadlines.install()  # after set-up, as the faults: the engine's own requests have no deadline
        if self.faults:  # after set-up: the engine's own provisioning is the AWS service itself
            self.faults.install()
            direct_api = self.faults.function("api", handlers["api"], throttle=False)
            handlers = {name: self.faults.api(handler) if name == "api" else self.faults.function(name, handler)
                        for name, handler in handlers.items()}
        else:
            direct_api = handlers["api"]
        functions[API_FUNCTION] = lambda event: direct_api(event, None)  # direct invoke
        functions[ENQUEUER_FUNCTION] = lambda event: handlers["enqueuer"](event, None)  # stream recovery

        # the dispatcher's mapping deletes and releases messages from each of its concurrent invocations, and receives
        sqs = session.client("sqs", config=BotoConfig(max_pool_connections=opts.dispatcher_max_concurrency + 1))
        self._failure_clients = (session.client("dynamodbstreams"), session.client("sqs"))
        if opts.state_dir:
            opts.state_dir.mkdir(parents=True, exist_ok=True)
        checkpoints = CheckpointStore(opts.state_dir / "checkpoints.json" if opts.state_dir else None)
        self._stream = StreamPoller(
            FunctionSpec("enqueuer", handlers["enqueuer"], stopping=self._stop), session.client("dynamodbstreams"),
            self.stream_arn, event_filters()["enqueuer"], checkpoints, self._stop,
            max_retries=opts.stream_retry_attempts, on_failure=self._on_stream_failure, region=REGION)
        dispatcher = FunctionSpec("dispatcher", handlers["dispatcher"], opts.dispatcher_timeout, self._stop)
        self._sweeper = sweeper = FunctionSpec("sweeper", handlers["sweeper"], 60, self._stop)
        queues = [(self.queue_url, resources.queue_arn)] + (
            [(self.flow_queue_url, flow_queue_arn)] if self.flow_queue_url and flow_queue_arn else [])
        self._dispatcher_pollers = [QueuePoller(
            dispatcher, sqs, url, arn, self._stop, concurrency=opts.dispatcher_max_concurrency,
            batch_size=opts.dispatcher_batch_size, max_batching_window=opts.dispatcher_max_batching_window,
            visibility_timeout=opts.visibility_timeout, wait_seconds=1 if self._moto or self._long_polls else 0,
            region=REGION) for url, arn in queues]
        self._threads += [self._stream, *self._dispatcher_pollers,
                          ScheduleRule(sweeper, opts.sweep_interval, self._stop)]
        self._quiet = QuietCheck(session, self.waiting_queue_urls, self.table_name, opts.delay_window,
                                 opts.shard_count, self.stats.claims_settled, self._stream)
        self._api = ApiServer(handlers["api"], opts.port, require_signature=opts.require_signature)
        self._api.start()
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for poller in self._threads:
            poller.wake()
        try:
            if self._on_stop is not None:
                try:
                    self._on_stop()
                except Exception:  # noqa: BLE001 - a speed-up only: the pollers end on their own
                    logger.warning("on_stop failed; the pollers end at their next poll", exc_info=True)
            for thread in self._threads:
                thread.join(timeout=10)
            for server in (self._api, self._lambda):
                if server is not None:
                    server.stop()
            if self._moto is not None:
                self._moto.stop()
        finally:  # whatever failed above, the process is left as the engine found it
            if self.faults:
                self.faults.uninstall()
            self._deadlines.uninstall()
            self._detach_runtime_logs()
            self._restore_env()

    def wait_until_quiet(self, timeout: float = 20.0) -> None:
        """Return once nothing is left that could still deliver, on two checks in a row a quarter second
        apart, so that a wrongful or duplicate delivery has had every chance to arrive: the delayer queue
        holds no message (visible, delayed or in flight), no timer is due within the delay window, every
        claim the engine saw was enqueued or written back, and the stream poller has read the stream to
        its end. Raises :class:`TimeoutError` after ``timeout`` seconds.

        Timers due beyond the window, and periodic timers' next occurrences among them, do not count:
        a test waits for those by their ids."""
        assert self._quiet is not None, "the engine is not started"
        self._quiet.wait(timeout)

    def sweep_now(self) -> None:
        """Run the sweeper once now, in this thread (as the schedule rule does every ``sweep_interval``); the
        stream poller then reads at once the claims it made (Lambda's mapping would within a quarter second)."""
        assert self._sweeper is not None and self._stream is not None, "the engine is not started"
        self._sweeper.invoke({"source": "aws.events", "detail-type": "Scheduled Event"})
        self._stream.wake()

    def redrive(self, **selection: Any) -> RedriveReport:
        """Redrive the engine's dead-letter queue: :func:`cdk_delayed_scheduler.operator.redrive` on the
        engine's table, queues and enqueuer; ``selection`` is its ``ids``, ``limit``, ``older_than_seconds``,
        ``newer_than_seconds``, ``group`` and ``dry_run``."""
        assert self._quiet is not None, "the engine is not started"
        return redrive(table_name=self.table_name, delayer_queue=self.queue_url,
                       dead_letter_queue=self.dead_letter_queue_url, enqueuer_function=ENQUEUER_FUNCTION,
                       **selection)

    @property
    def waiting_queue_urls(self) -> list[str]:
        """The queues where deliveries wait for their instant: the delayer queue, and the flow queue when there is
        one; the dispatcher reads both."""
        return [self.queue_url] + ([self.flow_queue_url] if self.flow_queue_url else [])

    def under_way(self, delayer_counts: Callable[[], tuple[int, int | None]] | None = None) -> list[str]:
        """What is under way now, if anything: a receivable message in the delayer queue, a dispatcher
        invocation running, a target function invoked as an event still running, a claim not yet enqueued
        or written back. Empty when the engine is settled;
        messages that wait out a delay or a visibility timeout do not count, nor do timers.

        With a long-polling mapping, a receive's messages count once its answer came back. ``delayer_counts``
        reads the delayer queue's receivable messages and how many its receives handed out so far (the
        testing kit reads both from its moto, in one request, and only when nothing else is under way):
        messages handed out but not taken up by an invocation yet then count too. Default: the queue's count,
        from SQS."""
        quiet, functions = self._quiet, self._lambda
        assert quiet is not None and self._dispatcher_pollers, "the engine is not started"

        def sqs_counts() -> tuple[int, int | None]:
            return quiet.receivable_messages(), None

        return under_way(Mappings(self._dispatcher_pollers), self.stats.claims_settled,
                         lambda: functions.events_running if functions is not None else 0,
                         delayer_counts or sqs_counts, read_counts_when_busy=delayer_counts is None)

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
        """The process's boto3 session for these credentials: a session loads each service's model once,
        which costs more than the rest of a start; its clients read the endpoints from the environment
        as they are made."""
        import boto3  # noqa: PLC0415 - after the environment points it at the endpoints

        key = (os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY"))
        with _SESSIONS_LOCK:
            session = _SESSIONS.get(key)
            if session is None:
                session = _SESSIONS[key] = boto3.session.Session()
        return session

    def client(self, service: str, **options: Any) -> Any:
        """A boto3 client of ``service`` on the engine's endpoints (moto, or ``endpoint_url``); ``options`` go to
        boto3's ``client`` (``config=``)."""
        return self._session().client(service, **options)

    def _mark_shards(self, session: Any) -> None:
        """A new table holds no timer of an earlier, larger shard count: say so with the sweeper's own
        shard mark, so its first sweep reads the mark instead of probing every shard up to the maximum
        (a probe meant for tables an older release wrote, which on a fresh engine only slows its start)."""
        from scheduler_runtime.aws.shards import ShardMark  # noqa: PLC0415 - importable once the handlers are

        ShardMark(session.client("dynamodb"), self.table_name).raise_to(self.options.shard_count)

    def _local_target(self, target: LocalTarget) -> LocalTarget:
        return self.faults.target(target) if self.faults else target

    def _every_target(self, named_targets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Every target's description by name, the default target's first."""
        return {contract.DEFAULT_TARGET_NAME: default_target_description(self.options.flow_control), **named_targets}

    def _set_function_environment(self, every_target: dict[str, dict[str, Any]], outcomes: MadeTarget | None) -> None:
        """Every variable the construct sets on the functions (``contract.ENV``), shared here by all of them; those
        of a prop not given (``max_lateness``, ``outcomes``) are absent, as deployed, and so is the flow queue's
        without a limited target."""
        opts, env = self.options, contract.ENV
        described = [*every_target.items(), *([("outcomes", outcomes.description)] if outcomes else [])]
        for name, description in described:
            problem = contract.target_description_problem(description)
            if problem:
                raise ValueError(f"the engine's target {name!r}: {problem}")
        values = {
            env.table_name: self.table_name,
            env.delayer_queue_url: self.queue_url,
            env.dead_letter_queue_url: self.dead_letter_queue_url,
            env.targets: json.dumps(every_target),
            env.shard_count: str(opts.shard_count),
            env.delay_window_seconds: str(opts.delay_window),
            env.history_retention_seconds: str(opts.history_retention),
            env.max_receive_count: str(opts.max_receive_count),
            env.retry_max_age_seconds: str(opts.retry_max_age),
            env.dispatcher_timeout_seconds: str(opts.dispatcher_timeout_seconds),
            env.dispatcher_max_batching_window_seconds: str(opts.dispatcher_max_batching_window),
            env.precision: opts.precision,
            env.listing: "true" if opts.listing else "false",
            env.metrics_namespace: opts.metrics_namespace,
            env.log_level: opts.log_level.upper(),
        }
        optional = {env.max_lateness_seconds: None if opts.max_lateness is None else str(opts.max_lateness),
                    env.outcomes: None if outcomes is None else outcomes_setting(opts, outcomes),
                    env.flow_queue_url: self.flow_queue_url}
        for name, value in optional.items():
            if value is not None:
                values[name] = value
            else:  # as a deployment without the prop: no variable, whatever this process's environment holds
                self._saved_env.setdefault(name, os.environ.get(name))
                os.environ.pop(name, None)
        self._set_env(**values)

    def _load_handlers(self) -> dict[str, Handler]:
        path = str(runtime_asset_path())
        if path not in sys.path:
            sys.path.insert(0, path)
        from scheduler_runtime import observability  # noqa: PLC0415 - importable only once the path is set
        from scheduler_runtime.aws import flow  # noqa: PLC0415 - as above

        flow.forget()  # a new deployment's sandboxes: nothing learned yet of its targets (their queues, the lead)
        observability.set_metric_sink(lambda line: logger.debug("metric %s", line))
        self._attach_runtime_logs()
        return {
            name: importlib.import_module(f"scheduler_runtime.handlers.{name}").handler
            for name in ("api", "sweeper", "enqueuer", "dispatcher")
        }

    def _attach_runtime_logs(self) -> None:
        """The runtime's logger runs at INFO at least, for the engine's counts; what goes on to the
        handlers above it is what ``log_level`` lets through, as ``LOG_LEVEL`` does when deployed."""
        runtime_logger = logging.getLogger("scheduler_runtime")
        self._saved_logger = (runtime_logger.level, runtime_logger.propagate)
        runtime_logger.setLevel(min(self._forward.level, logging.INFO))
        runtime_logger.propagate = False
        runtime_logger.addHandler(self._stats_handler)
        runtime_logger.addHandler(self._forward)

    def _detach_runtime_logs(self) -> None:
        runtime_logger = logging.getLogger("scheduler_runtime")
        runtime_logger.removeHandler(self._stats_handler)
        runtime_logger.removeHandler(self._forward)
        if self._saved_logger is not None:
            level, runtime_logger.propagate = self._saved_logger
            runtime_logger.setLevel(level)
            self._saved_logger = None

    def _on_stream_failure(self, function: str, records: list[dict[str, Any]]) -> None:
        """Count the records, and send the dead-letter queue what the construct's mapping sends its
        on-failure destination: the batch's stream range, no record (see ``recover-stream``)."""
        sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
        with self.stats.lock:
            self.stats.stream_failures.extend((function, n) for n in sequence_numbers)
        streams, sqs = self._failure_clients
        message = stream_failure_message(streams, self.stream_arn, function, sequence_numbers)
        sqs.send_message(QueueUrl=self.dead_letter_queue_url, MessageBody=json.dumps(message))


def _preceded(before: Callable[[], None], handler: Handler) -> Handler:
    def invoke(event: dict[str, Any], context: Any) -> Any:
        before()
        return handler(event, context)

    return invoke
