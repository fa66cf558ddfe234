"""Outcome events on the local engine: ``EngineOptions(outcomes=...)`` and the CLI's ``--outcomes-url``,
``--outcomes-handler``, ``--outcomes NAME``, ``--outcome-kinds`` and ``--outcomes-include-payload``, the
construct's ``outcomes=Outcomes(target, kinds=..., include_payload=...)``."""

from __future__ import annotations

import json
import os
import queue
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.cli import build_parser
from cdk_delayed_scheduler.local.deliveries import QueueTarget, TopicTarget, url_target
from cdk_delayed_scheduler.local.outcome_target import outcomes_from_flags
from cdk_delayed_scheduler.local.target_file import read_target_file

from .conftest import wait_until

VARIABLE = contract.ENV.outcomes
EVERY_KIND = ("DELIVERED", "FAILED", "STALE", "CANCELLED")


class JsonReceiver(ThreadingHTTPServer):
    """An HTTP endpoint on 127.0.0.1 that keeps each JSON body POSTed to it, in ``received``, and answers the status
    ``status(body)`` chooses."""

    def __init__(self, status: Callable[[dict], int] = lambda body: 204) -> None:
        received: queue.Queue = queue.Queue()

        class Collect(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received.put(body)
                self.send_response(status(body))
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Collect)
        self.received = received
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def bodies(self) -> list[dict]:
        found = []
        while not self.received.empty():
            found.append(self.received.get())
        return found

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def receivers():
    """The schedules' target (answering 500 to a payload that says ``fail``) and the outcomes endpoint."""
    target, outcomes = JsonReceiver(lambda body: 500 if body["payload"].get("fail") else 204), JsonReceiver()
    yield target, outcomes
    target.close()
    outcomes.close()


@pytest.mark.e2e
def test_each_schedule_ends_in_one_outcome_posted_to_the_outcomes_url(receivers, monkeypatch):
    target, outcome_receiver = receivers
    monkeypatch.setenv(VARIABLE, "left alone")
    options = EngineOptions(target=url_target(target.url), outcomes=url_target(outcome_receiver.url, where="--outcomes-url"),
                            outcome_kinds=EVERY_KIND, shard_count=1, dispatcher_timeout=0.2)
    with Engine(options) as engine:
        assert json.loads(os.environ[VARIABLE])["kinds"] == list(EVERY_KIND)
        api = raw_client(engine.api_url)
        created = {}
        # Due at once: a dispatcher holding a message until it is due could outlast the 1 s visibility timeout.
        for n in range(12):
            created[f"ok-{n}"] = api.raw("createSchedule", {"id": f"ok-{n}", "delaySeconds": 0, "payload": {}})
        for n in range(4):
            created[f"fail-{n}"] = api.raw("createSchedule", {"id": f"fail-{n}", "delaySeconds": 0, "payload": {
                "fail": True}, "retry": {"maxAttempts": 2}})
        overdue = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 30))
        for n in range(3):
            created[f"stale-{n}"] = api.raw("createSchedule", {"id": f"stale-{n}", "dueAt": overdue, "payload": {},
                                                               "maxLatenessSeconds": 5})
        created["cancelled"] = api.raw("createSchedule", {"id": "cancelled", "delaySeconds": 3600, "payload": {}})
        assert all(answer.status == 201 for answer in created.values()), created
        assert api.raw("cancelSchedule", id="cancelled").status == 200
        outcomes: dict[str, list[dict]] = {}

        def every_one_ended() -> bool:
            for event in outcome_receiver.bodies():
                outcomes.setdefault(event["id"], []).append(event)
            return set(outcomes) == set(created)

        wait_until(every_one_ended, 30, "an outcome for every schedule")
        engine.wait_until_quiet()
        every_one_ended()
        stale_reads = [api.raw("getSchedule", id=f"stale-{n}").body for n in range(3)]
    assert os.environ[VARIABLE] == "left alone"

    delivered_ids = {envelope["id"] for envelope in target.bodies()}
    for schedule_id, events in outcomes.items():
        assert len({(e["dedupeKey"], e["outcome"]) for e in events}) == 1, events  # repeats, if any, are the same
        due_at = created[schedule_id].body["dueAt"]
        assert events[0]["dueAt"] == due_at and events[0]["dedupeKey"] == f"{schedule_id}@{parse_due_ms(due_at)}"
    kinds = {schedule_id: events[0]["outcome"] for schedule_id, events in outcomes.items()}
    assert kinds == {**{f"ok-{n}": "DELIVERED" for n in range(12)}, **{f"fail-{n}": "FAILED" for n in range(4)},
                     **{f"stale-{n}": "STALE" for n in range(3)}, "cancelled": "CANCELLED"}
    assert all(outcomes[f"ok-{n}"][0]["attempts"] == 1 for n in range(12))
    assert all(outcomes[f"ok-{n}"][0]["answer"]["statusCode"] == 200 for n in range(12))
    failed = [outcomes[f"fail-{n}"][0] for n in range(4)]
    assert all(e["attempts"] == 2 and "maxAttempts 2 reached" in e["reason"] and "500" in e["lastError"] for e in failed)
    assert all(outcomes[f"stale-{n}"][0]["reason"].startswith("stale") for n in range(3))
    assert all(read["status"] == "FAILED" for read in stale_reads)
    assert outcomes["cancelled"][0]["reason"] == "cancelled"
    assert not delivered_ids & {"cancelled", "stale-0", "stale-1", "stale-2"}
    assert all("payload" not in events[0] for events in outcomes.values())


@pytest.mark.e2e
def test_an_outcomes_queue_target_is_made_in_moto_and_is_no_schedule_target():
    options = EngineOptions(target=lambda envelope: None, outcomes=QueueTarget(), outcomes_include_payload=True,
                            shard_count=1, dispatcher_timeout=0.2)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        assert api.raw("createSchedule", {"id": "queued", "delaySeconds": 0, "payload": {"n": 1}}).status == 201
        sqs = engine.client("sqs")
        messages = wait_until(lambda: sqs.receive_message(QueueUrl=engine.outcomes_queue_url,
                                                          WaitTimeSeconds=1).get("Messages"), 20, "the outcome event")
        picked = api.raw("createSchedule", {"id": "no", "delaySeconds": 0, "payload": {}, "target": "outcomes"})
        setting = json.loads(os.environ[VARIABLE])
    event = json.loads(messages[0]["Body"])
    assert (event["outcome"], event["id"], event["payload"]) == ("DELIVERED", "queued", {"n": 1})
    assert setting == {"target": {"type": "sqs", "queueUrl": engine.outcomes_queue_url, "fifo": False},
                       "includePayload": True}  # the runtime's default kinds: none named
    assert picked.status == 400 and picked.body["field"] == "target"


def test_the_outcome_options_refuse_what_the_construct_refuses():
    with pytest.raises(ValueError, match=r"^outcome_kinds must be one or more of DELIVERED, FAILED, STALE, CANCELLED"):
        EngineOptions(outcomes=print, outcome_kinds=("DELIVERED", "LOST"))
    with pytest.raises(ValueError, match=r"^outcome_kinds must be one or more"):
        EngineOptions(outcomes=print, outcome_kinds="FAILED")
    with pytest.raises(ValueError, match=r"^outcome_kinds must be one or more .*, each once, got \('FAILED', 'FAILED'\)"):
        EngineOptions(outcomes=print, outcome_kinds=("FAILED", "FAILED"))
    with pytest.raises(ValueError, match=r"^outcomes_include_payload must be True or False, got 'yes'"):
        EngineOptions(outcomes=print, outcomes_include_payload="yes")
    with pytest.raises(ValueError, match=r"^outcomes must be a callable .* or one of QueueTarget"):
        EngineOptions(outcomes="http://127.0.0.1:1/")
    with pytest.raises(ValueError, match=r"^outcome_kinds and outcomes_include_payload need outcomes"):
        EngineOptions(outcome_kinds=("FAILED",))
    assert EngineOptions(outcomes=print, outcome_kinds=["STALE", "FAILED"]).outcome_kinds == ("FAILED", "STALE")


def test_the_outcome_flags_reach_the_options(tmp_path):
    args = build_parser().parse_args(["local", "--outcomes-url", "http://127.0.0.1:1/outcomes",
                                      "--outcome-kinds", "failed, STALE", "--outcomes-include-payload"])
    assert (args.outcome_kinds, args.outcomes_include_payload) == (("FAILED", "STALE"), True)
    assert callable(outcomes_from_flags(args, {}))
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"audit": {"type": "sqs"}, "alerts": {"type": "sns"}}))
    args = build_parser().parse_args(["local", "--targets", str(targets), "--outcomes", "alerts"])
    named = read_target_file(targets)
    assert outcomes_from_flags(args, named) == TopicTarget() and list(named) == ["audit"]  # no schedule target now
    assert outcomes_from_flags(build_parser().parse_args(["local"]), {}) is None


@pytest.mark.parametrize("argv, words", [
    (["--outcome-kinds", "DELIVERED,LOST"], "--outcome-kinds: must be one or more of DELIVERED,FAILED,STALE,CANCELLED"),
    (["--outcome-kinds", "FAILED,failed"], "each once, comma-separated, got 'FAILED,failed'"),
    (["--outcomes-url", "http://x", "--outcomes-handler", "a:b"], "not allowed with argument"),
    (["--outcomes-handler", "a:b", "--outcomes", "audit"], "not allowed with argument"),
])
def test_bad_outcome_flags_exit_2_naming_the_flag(argv, words, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["local", *argv])
    assert exited.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["--outcomes-url", "ftp://x"], "--outcomes-url must be an http(s) URL"),
    (["--outcomes-handler", "no_colon"], "--outcomes-handler must look like module:function"),
    (["--outcomes", "audit"], "--outcomes 'audit' names a target of --targets FILE: give that file too"),
    (["--outcome-kinds", "FAILED"], "--outcome-kinds and --outcomes-include-payload need an outcomes target"),
])
def test_outcome_flags_that_cannot_be_used_are_refused_naming_the_flag(argv, words):
    with pytest.raises(ValueError, match=f"^{re.escape(words)}"):
        outcomes_from_flags(build_parser().parse_args(["local", *argv]), {})
