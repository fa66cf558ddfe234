"""``local_scheduler()``: the local engine in-process, for a user's own tests."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ._deliveries import Delivery, DeliveryLog, LambdaHandler
from ._outcomes import OutcomeLog

if TYPE_CHECKING:
    from ..client import SchedulerClient
    from ..local import Engine
    from ..local.deliveries import ResourceTarget
    from ..operator import RedriveReport
    from ..outcome import Outcome
    from ._clock import KitClock
    from ._webhooks import WebhookAnswer, WebhookReceiver

DEFAULT_TARGET = "default"
KIT_OPTIONS = ("target", "targets", "endpoint_url", "port", "state_dir", "outcome_kinds")
"""Engine options the kit sets itself (``outcomes`` is the kit's own keyword: whether it records them)."""
_active = threading.Lock()


class LocalScheduler:
    """A running local scheduler: a client, what each target received, and a clock to move."""

    def __init__(self, engine: Engine, clock: KitClock, log: DeliveryLog, url_env: str | None,
                 webhooks: WebhookReceiver | None = None, outcomes: OutcomeLog | None = None) -> None:
        self.engine = engine
        """The :class:`~cdk_delayed_scheduler.local.Engine` underneath (its stats, queues, table)."""
        self._clock = clock
        self._log = log
        self._outcomes = outcomes
        self._url_env = url_env
        self._webhooks = webhooks
        self._client: SchedulerClient | None = None
        self._ddb: Any = None

    @property
    def api_url(self) -> str:
        """The HTTP API on 127.0.0.1, for ``SchedulerClient(api_url)`` or any HTTP client."""
        return self.engine.api_url

    @property
    def function_name(self) -> str:
        """The api function's name, for ``SchedulerClient.for_function`` (direct invoke)."""
        from ..local.engine import API_FUNCTION  # noqa: PLC0415

        return API_FUNCTION

    @property
    def aws_endpoint_url(self) -> str:
        """The kit's moto, where the AWS SDK in this process calls while the scheduler runs (``AWS_ENDPOINT_URL``):
        an account of its own, apart from moto's ``mock_aws``, emptied at each start."""
        return self.engine.endpoint_url

    @property
    def env(self) -> dict[str, str]:
        """The environment the scheduler set for this process while it runs: the AWS SDK's endpoints
        (``AWS_ENDPOINT_URL`` for moto, ``AWS_ENDPOINT_URL_LAMBDA`` for the api function), and
        ``url_env`` with the API's URL when it was given."""
        names = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA", "AWS_REGION", "AWS_DEFAULT_REGION"]
        if self._url_env:
            names.append(self._url_env)
        return {name: os.environ[name] for name in names if name in os.environ}

    @property
    def client(self) -> SchedulerClient:
        """A :class:`~cdk_delayed_scheduler.client.SchedulerClient` on the HTTP API (made on first use)."""
        if self._client is None:
            from ..client import SchedulerClient  # noqa: PLC0415 - botocore only once a test uses it

            self._client = SchedulerClient(self.api_url, sign=False)
        return self._client

    def now(self) -> datetime:
        """The scheduler's clock: the real time the block started at, plus every :meth:`advance` so far (and the
        waits of the scheduler's own, such as a sub-second remainder before a due time); it stands still between."""
        return datetime.fromtimestamp(self._clock.now_ms() / 1000, tz=timezone.utc)

    def deliveries(self, target: str | None = DEFAULT_TARGET) -> list[Delivery]:
        """What ``target`` received so far, in arrival order (``None``: every target's). A queue target's
        messages are received from its queue (and deleted there) when this is called; a state machine
        target's deliveries are its executions' inputs, in the order they started; an ``HttpsTarget``'s are
        the signed requests the kit received in place of its URL (each delivery's ``request``). An
        ``HttpsTarget`` whose URL is on this machine is the test's own receiver's: this raises ``ValueError``."""
        self._drain_queues()
        self._known(target)
        from ..local.deliveries import HttpsTarget  # noqa: PLC0415 - loaded with the engine

        if isinstance(self.engine.options.targets.get(target or ""), HttpsTarget) and target not in self._received():
            raise ValueError(f"target: {target!r} is an HttpsTarget whose URL is on this machine: its deliveries are "
                             "the requests your receiver there got (the kit receives those of any other URL)")
        return self._log.of(target)

    def outcomes(self, schedule_id: str) -> list[str]:
        """How ``schedule_id`` ended so far: the kinds of its outcome events (``DELIVERED``, ``FAILED``, ``STALE``,
        ``CANCELLED``), one for a one-shot, one per ended occurrence of a periodic timer, in the order they arrived,
        each once (repeats dropped by ``(dedupeKey, outcome)``). What is under way settles first, so the outcome
        of a cancel, or of a delivery ``advance`` made, is there when this answers."""
        return self._outcome_log().kinds(schedule_id)

    def outcome_events(self, schedule_id: str | None = None) -> list[Outcome]:
        """The outcome events (typed :class:`~cdk_delayed_scheduler.outcome.Outcome`) of ``schedule_id``, or
        (``None``) of every schedule, in the order they arrived, each once, after what is under way settled."""
        return self._outcome_log().events(schedule_id)

    def _outcome_log(self) -> OutcomeLog:
        from ._stepping import settle  # noqa: PLC0415

        if self._outcomes is None:
            raise ValueError("outcomes: this scheduler does not record outcome events: start it with "
                             "local_scheduler(outcomes=True), or @pytest.mark.local_scheduler(outcomes=True)")
        settle(self.engine, self._clock)
        return self._outcomes

    def answer_webhooks(self, target: str, answer: WebhookAnswer) -> None:
        """What the kit answers ``target``'s requests (an ``HttpsTarget`` it receives) from now on: a status
        (a 2xx, the default 200, is a delivery; 408, 429 or a 5xx is retried; any other status parks the schedule),
        or a callable that takes each ``WebhookRequest`` and returns one (what it raises is answered 500)."""
        from ._webhooks import check_answer  # noqa: PLC0415

        self._known(target)
        if self._webhooks is None or target not in self._webhooks.names:
            received = ", ".join(self._received()) or "none"
            raise ValueError(f"target: {target!r} is not an HttpsTarget the kit receives (those of a URL on this "
                             f"machine go there; the kit receives: {received})")
        check_answer(answer)
        self._webhooks.answer(target, answer)

    def _known(self, target: str | None) -> None:
        if target is not None and target != DEFAULT_TARGET and target not in self.engine.options.targets:
            known = ", ".join([DEFAULT_TARGET, *self.engine.options.targets])
            raise ValueError(f"target: {target!r} is not a target of this scheduler (it has {known})")

    def _received(self) -> list[str]:
        """The ``HttpsTarget`` names whose requests the kit receives."""
        return self._webhooks.names if self._webhooks is not None else []

    def queue_url(self, target: str) -> str:
        """The SQS queue a resource target's deliveries arrive in: a ``QueueTarget``'s own, the one subscribed to
        a ``TopicTarget``'s topic, or the one a ``BusTarget``'s rule sends to."""
        try:
            return self.engine.target_queue_urls[target]
        except KeyError:
            raise ValueError(f"target: {target!r} is not a queue target of this scheduler "
                             f"(queue targets: {', '.join(self.engine.target_queue_urls) or 'none'})") from None

    def wait_until_quiet(self, timeout: float = 20.0) -> None:
        """Wait, in real time, until nothing is left that could still deliver without the clock moving
        (see ``Engine.wait_until_quiet``); TimeoutError after ``timeout`` seconds, naming what waits for the
        clock (a retry after its backoff, a timer) and the :meth:`advance` that reaches it."""
        try:
            self.engine.wait_until_quiet(timeout)
        except TimeoutError as not_quiet:
            raise TimeoutError(f"{not_quiet}. {self._waiting_for_the_clock()}") from None
        self._drain_queues()

    def _waiting_for_the_clock(self, shown: int = 10) -> str:
        from scheduler_runtime.core.timeparse import format_rfc3339_ms  # noqa: PLC0415 - loaded with the engine

        from ._stepping import waiting_for_the_clock  # noqa: PLC0415

        waiting = waiting_for_the_clock(self.engine, self._clock, self._dynamodb())
        if not waiting:
            return "Nothing waits for the kit's clock (a target still running?)"
        now_ms = self._clock.now_ms()
        listed = ", ".join(f"{schedule_id} due {format_rfc3339_ms(due_ms)} (in {(due_ms - now_ms) / 1000:.1f} s)"
                           for schedule_id, due_ms in waiting[:shown])
        more = f" and {len(waiting) - shown} more" if len(waiting) > shown else ""
        seconds = max(0, math.ceil((waiting[-1][1] - now_ms) / 1000))
        return (f"Waiting for the kit's clock: {listed}{more}. The clock moves only with advance(): "
                f"call advance(seconds={seconds}) to reach them")

    def advance(self, seconds: float = 0, *, minutes: float = 0, hours: float = 0, days: float = 0) -> None:
        """Let this much time pass at once: every one-shot and periodic occurrence due by then is delivered,
        in due order, each when the clock reaches its due time, through the runtime's real protocol."""
        from ._stepping import advance  # noqa: PLC0415

        total = seconds + 60 * minutes + 3600 * hours + 86400 * days
        if not total >= 0 or math.isinf(total):
            raise ValueError(f"advance: the time to pass must be a finite number of seconds >= 0, got {total}")
        advance(self.engine, self._clock, math.ceil(total * 1000))
        self._drain_queues()

    def redrive(self, **selection: Any) -> RedriveReport:
        """Send what the dead-letter queue holds back for delivery, as ``cdk-delayed-scheduler redrive`` does
        (:meth:`Engine.redrive <cdk_delayed_scheduler.local.Engine.redrive>`; ``selection``: ``ids``, ``limit``,
        ``older_than_seconds``, ``newer_than_seconds``, ``group``, ``dry_run``): what it moved, what it skipped
        and why, and what was parked again (each schedule is taken at most once a run)."""
        return self.engine.redrive(**selection)

    def _dynamodb(self) -> Any:
        if self._ddb is None:
            self._ddb = self.engine.client("dynamodb")
        return self._ddb

    def _drain_queues(self) -> None:
        """Record what the queue targets' queues hold (deleting it there) and the state machine targets'
        executions not recorded yet."""
        if self.engine.target_queue_urls:
            sqs = self.engine.client("sqs")
            for name, url in self.engine.target_queue_urls.items():
                arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                self._log.drain_queue(name, sqs, url, arn)
        if self.engine.target_state_machine_arns:
            stepfunctions = self.engine.client("stepfunctions")
            for name, arn in self.engine.target_state_machine_arns.items():
                self._log.read_executions(name, stepfunctions, arn)


@contextmanager
def local_scheduler(target: LambdaHandler | None = None,
                    targets: Mapping[str, LambdaHandler | ResourceTarget | None] | None = None, *,
                    url_env: str | None = None, outcomes: bool = False, **engine_options: Any) -> Iterator[LocalScheduler]:
    """Run the scheduler in this process for the ``with`` block, on free ports, with an empty account.

    ``target`` is the default target's Lambda-style handler (``handler(envelope, None)``), if any: every
    target records what it receives whatever it does. ``targets`` names more targets: a handler (or
    ``None``) is a Lambda function, a ``LambdaTarget(handler, invocation_type="Event")`` one invoked as an
    event, a ``QueueTarget()`` an SQS queue, a ``TopicTarget()`` an SNS topic, a
    ``BusTarget(detail_type=..., source=...)`` an EventBridge bus, a ``StateMachineTarget()`` a Step
    Functions state machine, an ``HttpsTarget(url, secret)`` an HTTPS endpoint (``http://127.0.0.1:...``
    for a receiver of the test's own). ``url_env`` names an environment
    variable to hold the API's URL for the block. ``outcomes=True`` records every outcome event, of every kind
    (:meth:`LocalScheduler.outcomes`): each then takes a second trip through the delayer queue, which makes
    ``advance`` about a fifth slower, so it is off unless asked. Other keywords are ``EngineOptions`` fields
    (``listing=True``, ``delay_window=...``).
    """
    if not isinstance(outcomes, bool):
        raise ValueError(f"local_scheduler: outcomes must be True or False (the kit is the outcomes target, and "
                         f"outcome_events() answers what it kept), got {type(outcomes).__name__}")
    taken = sorted(set(engine_options) & set(KIT_OPTIONS))
    if taken:
        raise ValueError(f"local_scheduler: {', '.join(taken)} cannot be set here (target= and targets= name the "
                         "targets; the kit chooses the ports and the endpoint, and records every outcome kind)")
    if not _active.acquire(blocking=False):
        raise RuntimeError("local_scheduler: one runs per process at a time (the runtime reads its settings "
                           "from the process environment); leave the other one first")
    try:
        yield from _run(target, dict(targets or {}), url_env, OutcomeLog() if outcomes else None, engine_options)
    finally:
        _active.release()


def _run(target: LambdaHandler | None, targets: dict[str, LambdaHandler | ResourceTarget | None], url_env: str | None,
         outcomes: OutcomeLog | None, engine_options: dict[str, Any]) -> Iterator[LocalScheduler]:
    from .._contract import contract  # noqa: PLC0415
    from .._local_required import require_local  # noqa: PLC0415

    require_local("the testing kit (local_scheduler)")
    from ..local import Engine, EngineOptions  # noqa: PLC0415 - the engine only once a kit is used
    from ..local.deliveries import RESOURCE_TARGETS, resource_target_names  # noqa: PLC0415
    from ._clock import KitClock, SharedMoto  # noqa: PLC0415

    for name, spec in targets.items():
        if spec is not None and not callable(spec) and not isinstance(spec, RESOURCE_TARGETS):
            raise ValueError(f"targets[{name!r}] must be a Lambda-style handler, None (record only) or "
                             f"{resource_target_names()}, got {type(spec).__name__}")
    endpoint = SharedMoto.fresh_endpoint()
    clock = KitClock(endpoint, time.time_ns() // 1_000_000)  # it starts at the real time
    log = DeliveryLog(clock.now_ms)
    with _webhook_receiver(log, targets) as webhooks:
        named = {name: _recorded(log, name, spec, webhooks) for name, spec in targets.items()}
        recording: dict[str, Any] = {"outcomes": outcomes, "outcome_kinds": contract.OUTCOME_KINDS} if outcomes else {}
        options = EngineOptions(target=log.lambda_target(DEFAULT_TARGET, target), targets=named, endpoint_url=endpoint,
                                **recording, **engine_options)
        engine = Engine(options, corrected_endpoint=True, before_api_call=clock.tick,  # the kit's moto child
                        on_stop=clock.end_long_polls)
        saved = os.environ.get(url_env) if url_env else None
        try:
            engine.start()
            from ._stepping import waiting_queues  # noqa: PLC0415

            clock.install(*waiting_queues(engine))
            if url_env:
                os.environ[url_env] = engine.api_url
            yield LocalScheduler(engine, clock, log, url_env, webhooks, outcomes)
        finally:
            if url_env:
                if saved is None:
                    os.environ.pop(url_env, None)
                else:
                    os.environ[url_env] = saved
            try:
                engine.stop()
            finally:
                clock.uninstall()


@contextmanager
def _webhook_receiver(log: DeliveryLog, targets: dict[str, LambdaHandler | ResourceTarget | None]
                      ) -> Iterator[WebhookReceiver | None]:
    """The receiver of the ``HttpsTarget`` requests the kit takes, while the block runs (``None``: no target
    needs one)."""
    from ..local.deliveries import HttpsTarget  # noqa: PLC0415
    from ._webhooks import WebhookReceiver, received_by_the_kit  # noqa: PLC0415

    if not any(isinstance(spec, HttpsTarget) and received_by_the_kit(spec) for spec in targets.values()):
        yield None
        return
    receiver = WebhookReceiver(log)
    try:
        yield receiver
    finally:
        receiver.stop()


def _recorded(log: DeliveryLog, name: str, spec: LambdaHandler | ResourceTarget | None,
              webhooks: WebhookReceiver | None) -> Any:
    """A named target as the engine takes it: a Lambda-style one (a handler, ``None`` or a ``LambdaTarget``)
    records what it receives before its handler runs; an ``HttpsTarget`` the kit receives sends to the kit's
    receiver, which records each request; the others are read back from moto."""
    from ..local.deliveries import RESOURCE_TARGETS, HttpsTarget, LambdaTarget  # noqa: PLC0415
    from ._webhooks import received_by_the_kit  # noqa: PLC0415

    if isinstance(spec, LambdaTarget):
        deliver = log.lambda_target(name, spec.handler)
        return dataclasses.replace(spec, handler=lambda envelope, _context: deliver(envelope))
    if isinstance(spec, HttpsTarget) and webhooks is not None and received_by_the_kit(spec):
        return webhooks.take(name, spec)
    return spec if isinstance(spec, RESOURCE_TARGETS) else log.lambda_target(name, spec)
