"""``cdk-delayed-scheduler check`` against the local engine, whose API (HTTP and direct invoke) is the deployed one's.

The engine's delay window is 4 s and its sweeper runs every 0.5 s, so a run's short timers (due 1.5 s after their
create) go straight to the delayer queue and its long ones (due 6 s after) wait for the sweeper; its periodic timer
fires every 2 s. A healthy engine passes; an engine whose target refuses every delivery, or one that loses the
delayer queue's messages, fails the run, which names each timer not delivered. The console script runs ``check``
in a base install (no moto, boto3, Flask, rich or aws-cdk-lib)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler.check import make_plan, run_check
from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.cli import main
from cdk_delayed_scheduler.local.deliveries import Recorder
from cdk_delayed_scheduler.local.engine import API_FUNCTION

from ..base_install import without_modules
from .conftest import wait_until
from .launching import SCRIPT

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
FAST = ["--short-delay", "1.5", "--long-delay", "6", "--every", "2", "--timers", "3", "--timeout", "15"]
"""A run of about 10 s on an engine with a 4 s window: 3 short timers, 3 long ones, 2 cancels, a reschedule."""
DELIVERED = {"short-1", "short-2", "short-3", "long-1", "long-2", "long-3", "reschedule"}
NOT_INSTALLED = ("boto3", "moto", "flask", "flask_cors", "rich", "aws_cdk", "constructs", "jsii")


class Target:
    """The engine's one target: it records each delivery, or refuses each while ``down`` (one engine per process:
    engines started side by side would share the process's local Lambda endpoint)."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        self.down = False

    def __call__(self, envelope: dict[str, Any]) -> None:
        if self.down:
            raise RuntimeError(f"the target is down: {envelope['id']}")
        self.recorder(envelope)


@pytest.fixture(scope="module")
def target() -> Target:
    return Target()


@pytest.fixture(scope="module")
def engine(target: Target) -> Iterator[Engine]:
    """An engine that refuses unsigned API requests, as API Gateway with IAM auth does."""
    with Engine(EngineOptions(target=target, delay_window=4, sweep_interval=0.5, shard_count=2,
                              require_signature=True)) as engine:
        yield engine


@pytest.fixture
def recorder(target: Target) -> Recorder:
    return target.recorder


@pytest.fixture
def target_down(target: Target) -> Iterator[None]:
    target.down = True
    yield
    target.down = False


@pytest.fixture(scope="module")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """This environment as a base install sees it: the ``local`` and ``cdk`` extras' modules cannot be imported."""
    return without_modules(tmp_path_factory.mktemp("base-install"), NOT_INSTALLED)


class CheckProcess:
    """``cdk-delayed-scheduler check`` run as a user runs it, its stderr read as it comes."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen([SCRIPT, "check", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env or dict(os.environ))
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._pumps = [threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
                       for stream, sink in ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr))]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(stream: Any, sink: list[str]) -> None:
        for line in stream:  # line by line, so that said() sees each one as it comes
            sink.append(line)

    def said(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first stderr line matching ``pattern``, once it is printed."""
        return wait_until(lambda: next((m for m in map(re.compile(pattern).search, list(self.stderr)) if m), None),
                          timeout, f"check printed {pattern!r}")

    def finish(self, timeout: float = 90) -> tuple[int, str, str]:
        code = self.process.wait(timeout=timeout)
        for pump in self._pumps:
            pump.join(timeout=5)  # everything it wrote is read
        return code, "".join(self.stdout), "".join(self.stderr)


def _run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *args, *FAST, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _run_id(report: dict[str, Any]) -> str:
    return str(report["run"])


def _problems_of(report: dict[str, Any]) -> dict[str, list[str]]:
    return {t["id"].removeprefix(f"{_run_id(report)}-"): t["problems"] for t in report["timers"] if t["problems"]}


def _delivered_names(recorder: Recorder, run: str) -> dict[str, int]:
    """Each of the run's timers the target received -> how many times."""
    counts: dict[str, int] = {}
    for delivery in recorder.deliveries:
        payload = delivery.envelope.get("payload") or {}
        if isinstance(payload, dict) and payload.get("check") == run:
            counts[payload["timer"]] = counts.get(payload["timer"], 0) + 1
    return counts


def _assert_cleaned_up(engine: Engine, run: str) -> None:
    client = SchedulerClient(engine.api_url)
    with pytest.raises(NotFoundError):
        client.get_periodic(f"{run}-periodic")
    assert [s.id for s in client.list(group=run) if s.status in ("SCHEDULED", "QUEUED")] == []


def test_a_check_over_the_http_api_passes_in_a_base_install_and_prints_the_lateness_table(engine, recorder, base_install):
    check = CheckProcess("--api-url", engine.api_url, "--region", "us-east-1", *FAST, env=base_install)
    code, stdout, stderr = check.finish()
    assert code == 0, stdout + stderr
    run = re.search(r"run (check-[0-9a-f]{8})", stdout).group(1)
    rows = {line.split()[0]: line.split()[1:4] for line in stdout.splitlines()
            if line.split()[:1] in (["short"], ["long"], ["reschedule"], ["all"])}
    assert rows == {"short": ["3", "3", "0"], "long": ["3", "3", "0"], "reschedule": ["1", "1", "0"],
                    "all": ["7", "7", "0"]}
    assert "periodic every 2 s: fired " in stdout and stdout.rstrip().endswith("OK: none lost, none early, nothing "
                                                                               "delivered after a cancel or a reschedule")
    delivered = _delivered_names(recorder, run)
    assert {name: n for name, n in delivered.items() if name != "periodic"} == dict.fromkeys(DELIVERED, 1)
    assert delivered["periodic"] >= 3
    _assert_cleaned_up(engine, run)


def test_a_check_by_direct_invoke_of_the_api_function_passes(engine, recorder, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", engine.lambda_endpoint_url)
    code, report = _run_in_process(capsys, "--function", API_FUNCTION)
    assert code == 0 and report["ok"], report["problems"]
    assert {t["id"].removeprefix(f"{_run_id(report)}-"): t["status"] for t in report["timers"]} == {
        **dict.fromkeys(DELIVERED, "FIRED"), "cancel-short": "CANCELLED", "cancel-long": "CANCELLED"}
    assert all(t["latenessMs"] >= 0 for t in report["timers"] if t["status"] == "FIRED")
    assert report["periodic"]["firedCount"] >= 3 and report["periodic"]["skippedCount"] == 0
    (moved,) = (t for t in report["timers"] if t["path"] == "reschedule")
    (envelope,) = [d.envelope for d in recorder.deliveries if d.envelope["id"] == moved["id"]]
    assert envelope["dueAt"] == moved["dueAt"]  # its new due time, which the record holds
    _assert_cleaned_up(engine, _run_id(report))


def test_a_check_fails_naming_each_timer_when_the_target_refuses_every_delivery(engine, target_down, capsys):
    code, report = _run_in_process(capsys, "--api-url", engine.api_url)
    assert code == 1 and not report["ok"]
    problems = _problems_of(report)
    assert set(problems) == DELIVERED
    assert all(p[0].startswith("not delivered: parked in the dead-letter queue (") and "the target is down" in p[0]
               for p in problems.values())
    assert any("an occurrence failed" in p and "the target is down" in p for p in report["periodic"]["problems"])
    assert [row["delivered"] for row in report["lateness"]] == [0, 0, 0, 0]
    _assert_cleaned_up(engine, _run_id(report))


def test_a_check_fails_naming_exactly_the_timers_whose_messages_the_engine_lost(engine, recorder):
    """The delayer queue is purged once the run's timers are created: the short ones, still delayed in it, are never
    delivered, and the run names each timer the target did not receive, and no other."""
    check = CheckProcess("--api-url", engine.api_url, *FAST[2:], "--short-delay", "2.5", "--timeout", "5")
    run = check.said(r"run (check-[0-9a-f]{8})").group(1)
    check.said(r"created \d+ timers")
    engine.client("sqs").purge_queue(QueueUrl=engine.queue_url)
    code, stdout, stderr = check.finish()
    assert code == 1, stdout + stderr
    delivered = _delivered_names(recorder, run)
    named = set(re.findall(rf"{run}-([a-z0-9-]+): not delivered: reads QUEUED", stdout))
    assert named and named == DELIVERED - set(delivered), stdout
    assert {"short-1", "short-2", "short-3"} <= named
    assert stdout.rstrip().splitlines()[-1].startswith("FAILED: ")
    _assert_cleaned_up(engine, run)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_check_cleans_up_and_exits_130(engine, how):
    check = CheckProcess("--api-url", engine.api_url, *FAST[:2], "--long-delay", "120")
    run = check.said(r"run (check-[0-9a-f]{8})").group(1)
    check.said(r"created \d+ timers")
    check.process.send_signal(how)
    code, stdout, stderr = check.finish()
    assert code == 130, stdout + stderr
    assert f"clean-up: cancelled the group {run}: " in stderr and "check: interrupted" in stderr, stderr
    client = SchedulerClient(engine.api_url)
    assert client.get(f"{run}-long-1").status == "CANCELLED"
    _assert_cleaned_up(engine, run)


def test_a_stop_asked_while_the_run_waits_ends_it_at_its_next_safe_point_after_the_clean_up(engine):
    """What a signal does (it sets ``stop``): the run ends between two calls, never inside one, cleans up, then
    raises ``KeyboardInterrupt``."""
    client, plan, stop, said = SchedulerClient(engine.api_url), make_plan(short_delay=1.5, long_delay=120), \
        threading.Event(), []

    def say(line: str) -> None:
        said.append(line)
        if line.startswith("check: created"):
            stop.set()  # as the signal handler does, while the run goes on to wait

    with pytest.raises(KeyboardInterrupt):
        run_check(client, plan, say=say, stop=stop)
    assert any(line.startswith(f"check: clean-up: cancelled the group {plan.group}: ") for line in said), said
    assert client.get(f"{plan.run_id}-long-1").status == "CANCELLED"
    with pytest.raises(NotFoundError):
        client.get_periodic(plan.periodic_id)


def test_a_dry_run_prints_the_plan_and_creates_nothing(engine, recorder, capsys):
    assert main(["check", "--api-url", engine.api_url, *FAST, "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["dryRun"] and len(plan["timers"]) == 9
    client = SchedulerClient(engine.api_url)
    for timer in plan["timers"]:
        with pytest.raises(NotFoundError):
            client.get(timer["id"])
    with pytest.raises(NotFoundError):
        client.get_periodic(plan["periodic"]["id"])
    assert main(["check", "--function", API_FUNCTION, *FAST, "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("cdk-delayed-scheduler check --dry-run: nothing is sent\n")
    assert re.search(r"POST /schedules check-[0-9a-f]{8}-cancel-long  delaySeconds 7\.05 \(expects SCHEDULED: the "
                     r"long path\), then DELETE at once", text), text
    assert not _delivered_names(recorder, plan["run"])


def test_a_check_whose_first_call_is_refused_fails_at_once_naming_the_field_and_cleans_up(engine, capsys):
    assert main(["check", "--api-url", engine.api_url, "--target", "nowhere", *FAST]) == 1
    out = capsys.readouterr().out
    run = re.search(r"run (check-[0-9a-f]{8})", out).group(1)
    assert "  setup: ValidationError 400: target must be a registered target name" in out
    assert "lateness from the records" not in out and out.rstrip().endswith("FAILED: 1 problem")
    assert f"clean-up: cancelled the group {run}: 0 timers were still waiting" in out
    _assert_cleaned_up(engine, run)


def test_bad_options_exit_2_naming_the_option(capsys):
    assert main(["check", "--api-url", "http://127.0.0.1:9", "--long-delay", "2", "--short-delay", "1.5",
                 "--timers", "3"]) == 2
    assert "--long-delay must be longer than the short timers' last due time (3 s)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--api-url", "http://127.0.0.1:9", "--function", "f"])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_the_check_command_imports_none_of_the_local_or_cdk_extras_even_where_installed():
    code = ("import sys; from cdk_delayed_scheduler.local.cli import main; "
            "assert main(['check', '--function', 'f', '--dry-run']) == 0; "
            "assert not [m for m in sys.modules if m.startswith(('moto', 'boto3', 'flask', 'rich', 'aws_cdk'))], "
            "sorted(sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
