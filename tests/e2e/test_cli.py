"""The console script as a user runs it: ``cdk-delayed-scheduler local`` and ``demo``."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

import boto3
import pytest

from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.local.cli import build_parser
from cdk_delayed_scheduler.local.deliveries import QueueTarget
from cdk_delayed_scheduler.local.engine_options import EngineOptions
from cdk_delayed_scheduler.local.flow_control import flow_control_from_flags
from cdk_delayed_scheduler.local.named_targets import default_target_description, make_target
from cdk_delayed_scheduler.local.target_file import read_target_file

from .conftest import process_alive, wait_until
from .launching import SCRIPT, Running

pytestmark = pytest.mark.e2e


class Receiver(ThreadingHTTPServer):
    """A ``--target-url`` on 127.0.0.1: each envelope POSTed to it goes into ``received``."""

    def __init__(self) -> None:
        received: queue.Queue = queue.Queue()

        class Collect(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                received.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Collect)
        self.received = received
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"
        threading.Thread(target=self.serve_forever, daemon=True).start()


def _with_a_handler(folder: Path, receiver: Receiver) -> Running:
    """``local --verbose --target-handler``, started in the handler's folder with no ``PYTHONPATH`` (the
    module is found in the working directory, as ``python -m`` finds it); the handler appends each event
    to ``events.jsonl`` there."""
    (folder / "my_callback.py").write_text(
        "import json\n"
        "def handler(event, context):\n"
        f"    with open({str(folder / 'events.jsonl')!r}, 'a') as out:\n"
        "        out.write(json.dumps(event) + '\\n')\n"
        "    return {'ok': True}\n"
    )
    return Running("--verbose", "--target-handler", "my_callback:handler", env={"PYTHONPATH": ""}, cwd=folder,
                   wait=False)


def _with_a_targets_file(folder: Path, receiver: Receiver) -> Running:
    """``local --targets FILE``: the topic target ``alerts`` and the bus target ``events``."""
    targets = folder / "targets.json"
    targets.write_text(json.dumps({"alerts": {"type": "sns"},
                                   "events": {"type": "eventbridge", "detailType": "Due", "source": "cli.test"}}))
    return Running("--targets", str(targets), wait=False)


LAUNCHES: dict[str, Callable[[Path, Receiver], Running]] = {
    "quiet_local": lambda folder, receiver: Running(wait=False),
    "ctrl_c_local": lambda folder, receiver: Running(wait=False),
    "target_url_local": lambda folder, receiver: Running("--target-url", receiver.url, wait=False),
    "targets_file_local": _with_a_targets_file,
    "verbose_with_a_handler": _with_a_handler,
}
"""How each ``local`` process the tests use is started, by the name of the fixture that hands it over."""


@dataclass
class Launched:
    processes: dict[str, Running]
    folders: dict[str, Path]
    receiver: Receiver

    def __call__(self, name: str) -> Running:
        return self.processes[name].started()


@pytest.fixture(scope="module")
def launched(request, tmp_path_factory) -> Iterator[Launched]:
    """The ``local`` processes that the module's selected tests use, all started as the module begins, so
    that their start-ups overlap (``launched(name)`` waits for one's start); any still running at the end
    are killed."""
    wanted = sorted({name for item in request.session.items if item.module is request.module
                     for name in item.fixturenames if name in LAUNCHES})
    receiver = Receiver()
    folders = {name: tmp_path_factory.mktemp(name) for name in wanted}
    processes = {name: LAUNCHES[name](folders[name], receiver) for name in wanted}
    yield Launched(processes, folders, receiver)
    for running in processes.values():
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait(timeout=10)
    receiver.shutdown()
    receiver.server_close()


@pytest.fixture
def quiet_local(launched) -> Running:
    """``local`` as started with no options beyond the module's."""
    return launched("quiet_local")


@pytest.fixture
def ctrl_c_local(launched) -> Running:
    """Another such ``local``, to stop with Ctrl-C."""
    return launched("ctrl_c_local")


@pytest.fixture
def target_url_local(launched) -> Running:
    """``local --target-url`` to the module's receiver (``launched.receiver``)."""
    return launched("target_url_local")


@pytest.fixture
def targets_file_local(launched) -> Running:
    """``local --targets FILE`` naming a topic target and a bus target."""
    return launched("targets_file_local")


def schedule_soon(api: SchedulerClient, schedule_id: str) -> None:
    status, _ = api.raw("createSchedule", {"id": schedule_id, "delaySeconds": 1, "payload": {"from": "cli"}})
    assert status == 201


def test_local_prints_one_json_line_per_delivery_and_stops_cleanly_on_sigterm(quiet_local):
    running = quiet_local
    try:
        schedule_soon(running.api, "cli-1")
        envelope = json.loads(running.lines.get(timeout=20))
    finally:
        code = running.stop()
    assert envelope["id"] == "cli-1" and envelope["payload"] == {"from": "cli"} and envelope["attempt"] == 1
    assert code == 0
    assert any("stopped" in line for line in running.stderr)
    assert not any("Traceback" in line or " INFO " in line for line in running.stderr)  # quiet unless --verbose


def test_ctrl_c_stops_quietly_like_sigterm(ctrl_c_local):
    running = ctrl_c_local
    try:
        schedule_soon(running.api, "cli-ctrl-c")
        assert json.loads(running.lines.get(timeout=20))["id"] == "cli-ctrl-c"  # the pollers are at work
    finally:
        code = running.stop(signal.SIGINT)
    assert code == 0
    assert any("stopped" in line for line in running.stderr)
    text = "".join(running.stderr)
    assert "Traceback" not in text and "KeyboardInterrupt" not in text and "poll failed" not in text, text


@pytest.fixture(scope="module")
def verbose_with_a_handler(launched):
    """One ``local --verbose --target-handler`` process, shared by the tests that only need it running,
    and the file its handler appends each event to."""
    running = launched("verbose_with_a_handler")
    yield running, launched.folders["verbose_with_a_handler"] / "events.jsonl"
    running.stop()


def handled(events: Path, schedule_id: str) -> dict | None:
    """The envelope the target handler wrote for ``schedule_id``, once it has."""
    lines = events.read_text().splitlines() if events.exists() else []
    return next((e for e in map(json.loads, lines) if e["id"] == schedule_id), None)


def test_local_calls_a_target_handler(verbose_with_a_handler):
    running, events = verbose_with_a_handler
    schedule_soon(running.api, "cli-handler")
    envelope = wait_until(lambda: handled(events, "cli-handler"), 20, "the target handler was not called")
    assert envelope["payload"] == {"from": "cli"} and envelope["attempt"] == 1


def test_the_printed_lambda_endpoint_answers_direct_invokes_of_the_printed_function(verbose_with_a_handler, monkeypatch):
    running, events = verbose_with_a_handler
    text = wait_until(lambda: "AWS_ENDPOINT_URL=" in "".join(running.stderr) and "".join(running.stderr), 10,
                      "the endpoints were not printed")
    match = re.search(r"function (\S+) .*AWS_ENDPOINT_URL_LAMBDA=(http://127\.0\.0\.1:\d+) AWS_DEFAULT_REGION=(\S+)", text)
    assert match, text
    function, endpoint, region = match.groups()
    assert re.search(r"AWS_ENDPOINT_URL=http://127\.0\.0\.1:\d+", text), text
    # The settings the line gives, as a producer in another process would set them.
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # a generic endpoint must not win
    client = boto3.client("lambda", aws_access_key_id="any", aws_secret_access_key="any")
    event = {"method": "POST", "path": "/schedules",
             "body": {"id": "cli-direct", "delaySeconds": 1, "payload": {"from": "invoke"}}}
    response = client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    answer = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, answer
    assert answer["statusCode"] == 201, answer
    timers = SchedulerClient.for_function(function)
    assert timers.get("cli-direct").id == "cli-direct"
    envelope = wait_until(lambda: handled(events, "cli-direct"), 20, "the direct invoke's schedule was not delivered")
    assert envelope["payload"] == {"from": "invoke"}


def test_verbose_logs_the_runtime_events(verbose_with_a_handler):
    running, _ = verbose_with_a_handler
    schedule_soon(running.api, "cli-verbose")

    def delivered_logged() -> bool:
        return any('"event": "delivered"' in line and "cli-verbose" in line
                   for line in list(running.stderr) if "scheduler_runtime INFO" in line)

    wait_until(delivered_logged, 20, "no delivered event was logged")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads child processes from /proc")
def test_local_posts_to_a_target_url_and_its_moto_dies_with_it_when_killed(target_url_local, launched):
    """Delivery to ``--target-url``; then the engine is killed (no chance to clean up), and the moto
    it runs in a child process of its own goes with it."""
    running = target_url_local
    try:
        schedule_soon(running.api, "cli-url")  # the engine works through it
        envelope = launched.receiver.received.get(timeout=20)
        moto = _descendants(running.process.pid)  # moto's zygote and the server it forked for this engine
        assert len(moto) == 2 and all(process_alive(pid) for pid in moto)
        running.process.kill()
        running.process.wait(timeout=10)
        wait_until(lambda: not any(process_alive(pid) for pid in moto), 10, "moto outlived the engine that started it",
                   interval=0.1)
    finally:
        if running.process.poll() is None:
            running.process.kill()
    assert envelope["id"] == "cli-url" and set(envelope) >= {"dueAt", "firedAt", "dedupeKey"}


def test_local_delivers_to_the_topic_and_the_bus_a_targets_file_names(targets_file_local):
    """``--targets FILE`` in the construct's description: the engine makes the topic and the bus in its moto,
    and prints the queue each one's deliveries arrive in."""
    running = targets_file_local
    try:
        def queue_lines() -> list[str] | None:
            found = [line for line in running.stderr if "its deliveries arrive in" in line]
            return found if len(found) == 2 else None

        lines = wait_until(queue_lines, 20, "the targets' queues were not printed")
        queues = dict(re.search(r"target (\S+): its deliveries arrive in the queue (\S+)", line).groups() for line in lines)
        moto = re.search(r"AWS_ENDPOINT_URL=(\S+)", "".join(running.stderr)).group(1)
        for name in ("alerts", "events"):
            status, _ = running.api.raw("createSchedule", {"id": f"to-{name}", "delaySeconds": 1, "payload": {"n": 1},
                                                           "target": name})
            assert status == 201
        sqs = boto3.client("sqs", endpoint_url=moto, region_name="us-east-1")
        for name, envelope_of in (("alerts", lambda body: body), ("events", lambda body: body["detail"])):
            messages = wait_until(lambda: sqs.receive_message(QueueUrl=queues[name], WaitTimeSeconds=1).get("Messages"),
                                  20, f"nothing arrived from target {name}")
            envelope = envelope_of(json.loads(messages[0]["Body"]))
            assert (envelope["id"], envelope["target"], envelope["payload"]) == (f"to-{name}", name, {"n": 1})
    finally:
        running.stop()


@pytest.mark.parametrize(
    "args, words",
    [
        (["local", "--shard-count", "0"], "must be >= 1"),
        (["local", "--sweep-interval", "-1"], "must be > 0"),
        (["local", "--port", "70000"], "0-65535"),
        (["local", "--target-handler", "no_colon"], "module:function"),
        (["local", "--target-handler", "no_such_module_xyz:handler"], "cannot be loaded"),
        (["local", "--target-url", "ftp://x"], "http(s) URL"),
        (["local", "--target-url", "http://x", "--target-handler", "a:b"], "not allowed with"),
        (["local", "--targets", "/no/such/targets.json"], "cannot be read as JSON"),
        (["local", "--outcomes-url", "ftp://x"], "--outcomes-url must be an http(s) URL"),
        (["local", "--outcome-kinds", "FAILED"], "need an outcomes target"),
        (["local", "--flow-control-rate", "0"], "--flow-control-rate: must be a whole number, 1-100000, got '0'"),
        (["local", "--flow-control-max-in-flight", "many"], "--flow-control-max-in-flight: must be a whole number"),
        (["local", "--flow-control-period", "60"], "--flow-control-period needs --flow-control-rate"),
        (["local", "--flow-control-per-group-period", "60"],
         "--flow-control-per-group-period needs --flow-control-per-group-rate"),
        (["local", "--flow-control-rate", "5", "--flow-control-per-group-rate", "6"],
         "flow_control: perGroup.rate must be at most the target's rate per second"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, words):
    result = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert words in result.stderr


def _limits(*argv: str) -> dict | None:
    """The default target's limits ``cdk-delayed-scheduler local <argv>`` gives."""
    return flow_control_from_flags(build_parser().parse_args(["local", *argv]))


def test_the_flow_control_flags_are_the_default_targets_limits():
    assert _limits() is None
    assert _limits("--flow-control-rate", "20", "--flow-control-max-in-flight", "4") == {"rate": 20, "maxInFlight": 4}
    assert _limits("--flow-control-rate", "100", "--flow-control-period", "60") == {"rate": 100, "periodSeconds": 60}
    assert EngineOptions(flow_control=_limits("--flow-control-max-in-flight", "1")).flow_control == {"maxInFlight": 1}


def test_the_per_group_flags_are_the_default_targets_per_group_limits_rendered_into_its_description():
    assert _limits("--flow-control-per-group-rate", "5", "--flow-control-per-group-period", "10",
                   "--flow-control-per-group-max-in-flight", "2") == {
        "perGroup": {"rate": 5, "periodSeconds": 10, "maxInFlight": 2}}  # a target may limit only its groups
    limits = _limits("--flow-control-rate", "100", "--flow-control-max-in-flight", "20",
                     "--flow-control-per-group-max-in-flight", "2")
    assert limits == {"rate": 100, "maxInFlight": 20, "perGroup": {"maxInFlight": 2}}
    assert default_target_description(EngineOptions(flow_control=limits).flow_control)["flowControl"] == limits


def test_engine_options_hold_a_groups_limits_within_the_targets_as_the_runtime_does():
    with pytest.raises(ValueError, match=r"^flow_control: perGroup.maxInFlight must be at most the target's "
                                         r"maxInFlight, 2, got 3$"):
        EngineOptions(flow_control={"maxInFlight": 2, "perGroup": {"maxInFlight": 3}})


def test_a_targets_file_gives_each_target_its_flow_control(tmp_path):
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"orders": {"type": "sqs", "flowControl": {"rate": 50, "maxInFlight": 10}},
                                   "audit": {"type": "lambda", "handler": "json:dumps", "flowControl": {"rate": 1,
                                                                                                    "periodSeconds": 60}},
                                   "alerts": {"type": "sns"},
                                   "tenants": {"type": "lambda", "handler": "json:dumps",
                                               "flowControl": {"rate": 50, "perGroup": {"rate": 5}}}}))
    named = read_target_file(targets)
    assert named["orders"] == QueueTarget(flow_control={"rate": 50, "maxInFlight": 10})
    assert named["alerts"].flow_control is None
    made = make_target(None, "unused", "local-target-2", named["audit"], {}, lambda target: target)
    assert made.description["flowControl"] == {"rate": 1, "periodSeconds": 60}  # rendered as the construct does
    grouped = make_target(None, "unused", "local-target-3", named["tenants"], {}, lambda target: target)
    assert grouped.description["flowControl"] == {"rate": 50, "perGroup": {"rate": 5}}


@pytest.mark.parametrize("limits, words", [
    ({"rate": 0}, "'orders': flowControl: rate must be a whole number, 1-100000, got 0"),
    ({"periodSeconds": 5}, "'orders': flowControl: needs rate, maxInFlight or perGroup"),
    ({"rate": 5, "burst": 2}, "'orders': flowControl: takes no burst"),
    ({"rate": 5, "perGroup": {"rate": 6}}, "'orders': flowControl: perGroup.rate must be at most the target's rate"),
    ({"perGroup": {"perGroup": {"rate": 1}}}, "'orders': flowControl: perGroup takes no perGroup of its own"),
])
def test_a_targets_file_refuses_bad_flow_control_naming_the_target_and_the_field(tmp_path, limits, words):
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"orders": {"type": "sqs", "flowControl": limits}}))
    with pytest.raises(ValueError, match=re.escape(words)):
        read_target_file(targets)


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def _descendants(pid: int) -> set[int]:
    children = _children(pid)
    return children.union(*(_descendants(child) for child in children))
