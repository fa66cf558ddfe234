"""What the integration tests (``integ_*.py``) share: the functions they deploy beside the scheduler, and
their assertions, run one after another.

- ``new_app()``: the test's app; ``helper_function()``: a function of the test functions' one Lambda asset,
  staged (``bundle_path()``) from ``integ/functions/`` and the part of the package that needs no aws-cdk-lib
  (the typed client, the envelope, the webhook check and the operator's redrive, with the runtime they
  load); they use the botocore that Lambda's Python runtime holds.
- ``Seen``: the seen table and the recorder, the target (and the consumer behind every other target) that
  writes down each delivery; ``seen.probe(timers)`` adds the probe, which calls the scheduler with the
  typed client and counts what the seen table holds (``functions/probe.py`` says what it answers).
- ``Scenario``: an ``IntegTest`` whose assertions run in the order they are added, each after the one
  before: ``api`` (a direct invoke of the api function), ``call`` (a client call through the probe),
  ``deliveries`` and its shorthands (what reached the targets), ``invoke`` (any test function), ``then``
  (any other assertion).

Expectations use integ-tests' own ``Match`` (``aws_cdk.integ_tests_alpha.Match``): the matchers of
``aws_cdk.assertions`` reach the assertion handler as plain objects, and never match.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import integ_tests_alpha as integ
from constructs import Construct

import cdk_delayed_scheduler
from cdk_delayed_scheduler import DelayedScheduler
from cdk_delayed_scheduler._runtime_asset import runtime_asset_path

REGION = "us-east-1"
Match = integ.Match
FUNCTIONS = Path(__file__).resolve().parent / "functions"
#: What the test functions import of the package: none of it imports aws-cdk-lib or constructs.
CLIENT_SIDE = ("__init__.py", "_cdk_required.py", "_contract.py", "_runtime_asset.py", "_wire.py", "envelope.py",
               "outcome.py", "webhook.py", "operator.py", "py.typed", "client")
#: How long a waiting assertion polls before it fails, and how often.
WAIT = cdk.Duration.minutes(6)
POLL = cdk.Duration.seconds(10)


def new_app() -> cdk.App:
    """The test's app, writing its assembly where ``CDK_OUTDIR`` says when it is made: integ-runner sets it
    for each test's process, and snapshot.py changes it between the tests it synthesizes in one process."""
    outdir = os.environ.get("CDK_OUTDIR")
    return cdk.App(outdir=outdir) if outdir else cdk.App()


def invoke_event(method: str, path: str, body: Any = None) -> str:
    """The direct-invoke event of the api function: ``{"method", "path", "body"?}``."""
    return json.dumps({"method": method, "path": path, **({"body": body} if body is not None else {})})


def timer(schedule_id: str, delay_seconds: int, **fields: Any) -> dict[str, Any]:
    """A create body (``POST /schedules``, a batch item): due in ``delay_seconds``, payload ``{"timer": <id>}``
    unless ``fields`` give one."""
    return {"id": schedule_id, "delaySeconds": delay_seconds, "payload": {"timer": schedule_id}, **fields}


def created(status: str, **fields: Any) -> dict[str, Any]:
    """A batch result: the item created (201), answering ``status`` (and ``fields``)."""
    return {"status": 201, "body": {"status": status, **fields}}


# --- the test functions' code --------------------------------------------------------------------------
def _shipped(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def bundle_files() -> dict[str, Path]:
    """Each file of the test functions' asset (its path in the asset) -> its source."""
    package = Path(cdk_delayed_scheduler.__file__).resolve().parent
    files = {p.name: p for p in _shipped(FUNCTIONS)}
    for name in CLIENT_SIDE:
        for path in _shipped(package / name) if (package / name).is_dir() else [package / name]:
            files[f"cdk_delayed_scheduler/{path.relative_to(package).as_posix()}"] = path
    runtime = runtime_asset_path()
    for path in _shipped(runtime / "scheduler_runtime"):
        files[f"cdk_delayed_scheduler/_runtime/{path.relative_to(runtime).as_posix()}"] = path
    return files


@lru_cache(maxsize=1)
def bundle_path() -> Path:
    """The asset's directory, staged once per content under the temp directory (again when a temp-dir
    cleaner removed part of it)."""
    files = bundle_files()
    digest = hashlib.sha256()
    for name, source in sorted(files.items()):
        digest.update(f"{name}\0{hashlib.sha256(source.read_bytes()).hexdigest()}\0".encode())
    staged = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-integ-functions-{digest.hexdigest()[:20]}"
    if staged.is_dir():
        if all((staged / name).is_file() for name in files):
            return staged
        shutil.rmtree(staged, ignore_errors=True)  # a staging that lost files (a build is renamed in whole)
    build = Path(tempfile.mkdtemp(prefix=f"{staged.name}.", dir=staged.parent))
    for name, source in files.items():
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, build / name)
    build.chmod(0o755)
    try:
        build.rename(staged)
    except OSError:  # staged meanwhile by another synth
        shutil.rmtree(build, ignore_errors=True)
    return staged


def helper_function(scope: Construct, id: str, handler: str, *, environment: Optional[Mapping[str, str]] = None,
                    timeout: cdk.Duration = cdk.Duration.seconds(30)) -> lambda_.Function:
    """A function of the test functions' asset (``handler`` is ``<module>.handler``), with a log group
    that goes with the stack."""
    log_group = logs.LogGroup(scope, f"{id}Logs", retention=logs.RetentionDays.ONE_WEEK,
                              removal_policy=cdk.RemovalPolicy.DESTROY)
    return lambda_.Function(scope, id, runtime=lambda_.Runtime.PYTHON_3_13, handler=handler,
                            code=lambda_.Code.from_asset(str(bundle_path())), memory_size=256, timeout=timeout,
                            environment=dict(environment or {}), log_group=log_group)


class Seen(Construct):
    """The seen table (``id``, ``sk``) and the recorder function, allowed to read and write it."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.table = dynamodb.Table(
            self, "Table", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, removal_policy=cdk.RemovalPolicy.DESTROY)
        self.recorder = self.function("Recorder", "recorder.handler", timeout=cdk.Duration.seconds(10))

    def function(self, id: str, handler: str, *, environment: Optional[Mapping[str, str]] = None,
                 timeout: cdk.Duration = cdk.Duration.seconds(30)) -> lambda_.Function:
        """A test function that may read and write the seen table (``SEEN_TABLE``)."""
        function = helper_function(self, id, handler, timeout=timeout,
                                   environment={"SEEN_TABLE": self.table.table_name, **(environment or {})})
        self.table.grant_read_write_data(function)
        return function

    def probe(self, timers: DelayedScheduler) -> lambda_.Function:
        """The probe of ``timers``: it may invoke its api function (``grant_invoke``)."""
        probe = self.function("Probe", "probe.handler", environment={"API_FUNCTION": timers.api_function.function_name})
        timers.grant_invoke(probe)
        return probe


class Scenario:
    """An ``IntegTest`` of ``stack`` whose assertions run in the order they are added."""

    def __init__(self, app: cdk.App, stack: cdk.Stack, name: str, *, timers: DelayedScheduler,
                 probe: Optional[lambda_.IFunction] = None) -> None:
        self.test = integ.IntegTest(app, name, test_cases=[stack], diff_assets=False, regions=[REGION])
        self.timers = timers
        self.probe = probe
        self._last: Optional[integ.IApiCall] = None

    def then(self, call: integ.IApiCall, *, wait: Optional[cdk.Duration] = None) -> integ.IApiCall:
        """Run ``call`` after the assertion added before it; with ``wait``, poll it until it matches."""
        if wait is not None:
            call.wait_for_assertions(total_timeout=wait, interval=POLL)
        if self._last is not None:
            self._last.next(call)
        self._last = call
        return call

    def invoke(self, function: lambda_.IFunction, event: Mapping[str, Any], like: Mapping[str, Any], *,
               wait: Optional[cdk.Duration] = None) -> integ.IApiCall:
        """Invoke ``function`` with ``event``; its answer must hold ``like``."""
        call = self.test.assertions.invoke_function(function_name=function.function_name, payload=json.dumps(event))
        call.expect(integ.ExpectedResult.object_like({"Payload": Match.serialized_json(Match.object_like(like))}))
        return self.then(call, wait=wait)

    def api(self, method: str, path: str, body: Any = None, *, status: int, like: Optional[Mapping[str, Any]] = None,
            wait: Optional[cdk.Duration] = None) -> integ.IApiCall:
        """A direct invoke of the api function; it must answer ``status`` with a body that holds ``like``."""
        answer: dict[str, Any] = {"statusCode": status, **({"body": Match.object_like(like)} if like else {})}
        call = self.test.assertions.invoke_function(function_name=self.timers.api_function.function_name,
                                                    payload=invoke_event(method, path, body))
        call.expect(integ.ExpectedResult.object_like({"Payload": Match.serialized_json(Match.object_like(answer))}))
        return self.then(call, wait=wait)

    def call(self, method: str, *args: Any, like: Mapping[str, Any], mark: Optional[str] = None) -> integ.IApiCall:
        """``SchedulerClient.<method>(*args)`` through the probe: its answer (the API's JSON) must hold ``like``;
        with ``mark``, the mark is set once it answered."""
        return self.invoke(self._probe(), {"call": method, "args": list(args), **({"mark": mark} if mark else {})},
                           {"answer": Match.object_like(dict(like))})

    def deliveries(self, schedule_id: str, like: Mapping[str, Any], *, since: Optional[str] = None, at_least: int = 1,
                   wait_seconds: int = 0, read: bool = False, wait: Optional[cdk.Duration] = WAIT) -> integ.IApiCall:
        """What reached the targets for ``schedule_id`` (since the mark ``since``; with ``read``, and the
        schedule's status) must hold ``like``, polled until it does within ``wait`` (``None``: read once)."""
        event: dict[str, Any] = {"deliveries": schedule_id, "atLeast": at_least, "waitSeconds": wait_seconds,
                                 **({"since": since} if since else {}), **({"read": True} if read else {})}
        return self.invoke(self._probe(), event, like, wait=wait)

    def delivered(self, schedule_id: str, *, target: str = "default", **like: Any) -> integ.IApiCall:
        """The one-shot ``schedule_id`` was delivered once, to ``target``, not early, at the due time it has
        now, and reads as ``FIRED``; ``like`` adds to what the probe's answer must hold."""
        return self.deliveries(schedule_id, {"count": 1, "early": 0, "targets": [target], "status": "FIRED",
                                             "asRecorded": True, **like}, read=True)

    def never_delivered(self, schedule_id: str, status: str = "CANCELLED") -> integ.IApiCall:
        """Nothing of the one-shot ``schedule_id`` reached a target, and it reads as ``status`` (read once)."""
        return self.deliveries(schedule_id, {"count": 0, "status": status}, read=True, wait=None)

    def occurrences(self, timer_id: str, *, at_least: int = 1, since: Optional[str] = None) -> integ.IApiCall:
        """At least ``at_least`` occurrences of the periodic timer ``timer_id`` (since the mark ``since``)
        reached the default target, none early."""
        return self.deliveries(timer_id, {"reached": True, "early": 0, "targets": ["default"]},
                               since=since, at_least=at_least)

    def quiet(self, timer_id: str, *, since: str, seconds: int) -> integ.IApiCall:
        """No occurrence of ``timer_id`` started in the ``seconds`` after the mark ``since``."""
        return self.deliveries(timer_id, {"count": 0, "waited": True}, since=since, wait_seconds=seconds)

    def _probe(self) -> lambda_.IFunction:
        if self.probe is None:
            raise ValueError("probe: this scenario was made without one (Scenario(..., probe=seen.probe(timers)))")
        return self.probe
