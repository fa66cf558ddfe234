"""docs/consuming.md's duplicate-handling recipes (Powertools idempotency keyed on `dedupeKey`, and for outcome
events on `(dedupeKey, outcome)`), run as written against moto: an attempt killed mid-work does not lose the
work, and a repeat after success does not redo it. The recipe the page had before (claim the key, release it
only when the work raises) loses the work in the same killed-attempt scenario, which shows the scenario can fail."""

from __future__ import annotations

import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator
from unittest import mock

import boto3
import pytest
from moto.server import ThreadedMotoServer

from cdk_delayed_scheduler.local.pollers import LambdaContext
from scheduler_runtime.core import outcomes
from scheduler_runtime.core.envelope import build_envelope

from ..e2e.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
KILLED_ATTEMPT_BUDGET_MS = 0  # the killed attempt is at its deadline in the work: Lambda kills it as it times out

# The recipe docs/consuming.md had before: claim the key first, release it only when the work raises.
CLAIM_FIRST_RECIPE = '''
import os
import time

import boto3

seen = boto3.resource("dynamodb").Table(os.environ["SEEN_TABLE"])


def first_time(dedupe_key):
    try:
        seen.put_item(Item={"pk": dedupe_key, "expiresAt": int(time.time()) + 86400},
                      ConditionExpression="attribute_not_exists(pk)")
        return True
    except seen.meta.client.exceptions.ConditionalCheckFailedException:
        return False


def forget(dedupe_key):
    seen.delete_item(Key={"pk": dedupe_key})


def handler(envelope, context):
    if not first_time(envelope["dedupeKey"]):
        return
    try:
        settle_order(envelope["payload"]["order"])
    except Exception:
        forget(envelope["dedupeKey"])
        raise
'''

# A Lambda invocation that gets as far as the work, says so on stdout (the order, and the time then), and hangs
# there until it is killed.
KILLED_ATTEMPT = '''
import json
import pathlib
import signal
import sys
import time

from cdk_delayed_scheduler.local.pollers import LambdaContext

source, envelope, budget_ms = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])


def settle_order(order):
    print(json.dumps({"order": order, "at": time.time()}), flush=True)
    signal.pause()


namespace = {"settle_order": settle_order}
exec(compile(pathlib.Path(source).read_text(), "recipe", "exec"), namespace)
namespace["handler"](envelope, LambdaContext("recipe", budget_ms / 1000))
'''


def context() -> LambdaContext:
    """A Lambda context for one invocation of the recipe's handler, with 30 s to run."""
    return LambdaContext("recipe", 30)


def documented_block(heading: str) -> str:
    """The first Python block under `heading` in docs/consuming.md, verbatim."""
    page = (ROOT / "docs" / "consuming.md").read_text(encoding="utf-8")
    block = re.search(rf"^## {re.escape(heading)}\n.*?```python\n(.*?)```", page, re.S | re.M)
    assert block, f"docs/consuming.md lost the code under {heading!r}"
    return block.group(1)


@pytest.fixture(scope="module")
def aws_env() -> Iterator[dict[str, str]]:
    """A moto server on 127.0.0.1 with the idempotency table (Powertools' key schema) and the old recipe's table."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION,
           "IDEMPOTENCY_TABLE": "idempotency", "SEEN_TABLE": "seen"}
    dynamodb = boto3.client("dynamodb", region_name=REGION, endpoint_url=env["AWS_ENDPOINT_URL"],
                            aws_access_key_id="testing", aws_secret_access_key="testing")
    for table, key in (("idempotency", "id"), ("seen", "pk")):
        dynamodb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                              KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}])
    try:
        yield env
    finally:
        server.stop()


@pytest.fixture
def aws(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    return aws_env


def envelope() -> dict[str, Any]:
    schedule = f"order-{uuid.uuid4().hex[:8]}"
    return {"id": schedule, "dueAt": "2026-01-01T00:00:00.000Z", "firedAt": "2026-01-01T00:00:00.120Z",
            "attempt": 1, "dedupeKey": f"{schedule}@1767225600000", "payload": {"order": schedule},
            "target": "default"}


def load(source: str, **names: Any) -> Callable[[dict[str, Any], LambdaContext], Any]:
    """The recipe's handler, with the names the page leaves to the reader (`settle_order`, `log`) being those given."""
    namespace: dict[str, Any] = dict(names)
    exec(compile(source, "recipe", "exec"), namespace)  # noqa: S102 - the recipe under test, verbatim
    handler: Callable[[dict[str, Any], LambdaContext], Any] = namespace["handler"]
    return handler


def kill_mid_work(source: str, event: dict[str, Any], env: dict[str, str], tmp_path: Path) -> float:
    """Run one attempt in a child process, SIGKILL it once it is inside the work; answer when it was there, on its
    clock (after its claim on the key was written, so its in-progress record expires at this time plus its budget)."""
    recipe = tmp_path / "recipe.py"
    recipe.write_text(source, encoding="utf-8")
    child = subprocess.Popen(  # noqa: S603 - this interpreter, fixed arguments
        [sys.executable, "-c", KILLED_ATTEMPT, str(recipe), json.dumps(event), str(KILLED_ATTEMPT_BUDGET_MS)],
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        readable, _, _ = select.select([child.stdout], [], [], 10)
        line = child.stdout.readline() if readable else ""  # type: ignore[union-attr]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with child.stdout, child.stderr:  # type: ignore[union-attr]
        assert line, f"the attempt never reached the work: {child.stderr.read()}"  # type: ignore[union-attr]
    in_the_work = json.loads(line)
    assert in_the_work["order"] == event["payload"]["order"]
    return float(in_the_work["at"])


def settled_by_retries_after_a_killed_attempt(source: str, env: dict[str, str], tmp_path: Path,
                                              retries: int) -> tuple[dict[str, Any], list[str]]:
    """Kill a first attempt mid-work, then deliver the same envelope `retries` times after that attempt's
    in-progress deadline; answer the envelope and the orders the retries settled."""
    event = envelope()
    in_the_work = kill_mid_work(source, event, env, tmp_path)
    settled: list[str] = []
    handler = load(source, settle_order=settled.append)
    deadline_ms = int(in_the_work * 1000) + KILLED_ATTEMPT_BUDGET_MS  # the in-progress record's expiry, or later
    wait_until(lambda: int(time.time() * 1000) > deadline_ms, 1, "the killed attempt's deadline passed")
    for attempt in range(2, 2 + retries):
        handler({**event, "attempt": attempt}, context())
    return event, settled


def test_a_retry_after_an_attempt_killed_mid_work_does_the_work_once(aws: dict[str, str], tmp_path: Path) -> None:
    # the second retry is a repeat of the successful first one
    event, settled = settled_by_retries_after_a_killed_attempt(documented_block("A Lambda target"), aws, tmp_path,
                                                                retries=2)
    assert settled == [event["payload"]["order"]]


def test_a_repeat_after_a_successful_attempt_does_not_redo_the_work(aws: dict[str, str]) -> None:
    settled: list[str] = []
    handler = load(documented_block("A Lambda target"), settle_order=settled.append)
    event = envelope()
    handler(event, context())
    handler(event, context())  # the same delivery handed over twice
    assert settled == [event["payload"]["order"]]


def test_a_failed_attempt_leaves_the_work_to_the_retry(aws: dict[str, str]) -> None:
    settled: list[str] = []

    def settle_once_it_works(order: str) -> None:
        if not failed:
            failed.append(order)
            raise RuntimeError("the order service is down")
        settled.append(order)

    failed: list[str] = []
    handler = load(documented_block("A Lambda target"), settle_order=settle_once_it_works)
    event = envelope()
    with pytest.raises(RuntimeError):
        handler(event, context())
    handler({**event, "attempt": 2}, context())
    assert settled == [event["payload"]["order"]]


def test_the_sqs_consumer_settles_each_envelope_once_across_redeliveries(aws: dict[str, str]) -> None:
    settled: list[str] = []
    handler = load(documented_block("An SQS target, consumed by a Lambda function"), settle_order=settled.append)
    first, second = envelope(), envelope()

    def sqs_event(*bodies: dict[str, Any]) -> dict[str, Any]:
        return {"Records": [{"messageId": uuid.uuid4().hex, "body": json.dumps(body),
                             "messageAttributes": {"dedupeKey": {"stringValue": body["dedupeKey"]}}}
                            for body in bodies]}

    assert handler(sqs_event(first), context()) == {"batchItemFailures": []}
    assert handler(sqs_event(first, second), context()) == {"batchItemFailures": []}
    assert settled == [first["payload"]["order"], second["payload"]["order"]]


def test_the_claim_first_recipe_loses_the_work_of_an_attempt_killed_mid_work(
        aws: dict[str, str], tmp_path: Path) -> None:
    _, settled = settled_by_retries_after_a_killed_attempt(CLAIM_FIRST_RECIPE, aws, tmp_path, retries=1)
    assert settled == []  # the retry was dropped as a repeat: the delivery counts, the order was never settled


def outcome_record(kind: outcomes.Kind, schedule: str) -> dict[str, Any]:
    """An SQS record whose body is the runtime's outcome event of `schedule`'s occurrence."""
    due_ms = 1_767_225_600_000
    envelope = build_envelope(schedule, due_ms, due_ms + 120, 1, '{"order": 1}', "default")
    details = ({"firedAt": envelope["firedAt"], "latenessMs": 120} if kind is outcomes.Kind.DELIVERED
               else {"reason": "https://example.com/hook answered 410"})
    body = outcomes.event(kind, envelope, None, due_ms + 200, 1, False, **details)
    return {"messageId": uuid.uuid4().hex, "body": json.dumps(body)}


def test_the_outcomes_consumer_acts_once_per_dedupe_key_and_outcome(aws: dict[str, str]) -> None:
    log = mock.Mock(spec=logging.Logger)
    handler = load(documented_block("Outcome events"), log=log)
    delivered, failed = f"order-{uuid.uuid4().hex[:8]}", f"order-{uuid.uuid4().hex[:8]}"
    first = outcome_record(outcomes.Kind.DELIVERED, delivered)
    repeat = {**first, "messageId": uuid.uuid4().hex}  # the same event, handed over again

    assert handler({"Records": [first, repeat]}, context()) == {"batchItemFailures": []}
    assert handler({"Records": [repeat, outcome_record(outcomes.Kind.FAILED, failed)]}, context()) == {
        "batchItemFailures": []}
    assert log.info.call_args_list == [mock.call("timer %s ended %s", delivered, "DELIVERED")]
    assert log.error.call_args_list == [
        mock.call("timer %s ended %s: %s", failed, "FAILED", "https://example.com/hook answered 410")]
