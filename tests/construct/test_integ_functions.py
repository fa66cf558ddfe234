"""The integration tests' functions (integ/functions/), run here on moto before an account runs them: the
recorder writes down a delivery whatever shape it arrives in, once per occurrence, and refuses a
``failUntilHealed`` one until it is healed; the probe counts what it wrote (since a mark, early ones
apart); the HTTPS receiver records a signed request and answers 401 to an unsigned one."""

from __future__ import annotations

import base64
import json
import sys
import time
from datetime import datetime, timezone

import boto3
import pytest
from moto import mock_aws

from construct_helpers import INTEG

FUNCTIONS = INTEG / "functions"
MODULES = ("seen", "recorder", "probe", "receiver")
TABLE = "integ-seen"


def envelope(schedule_id: str, *, due_s: float, fired_s: float, target: str = "default", attempt: int = 1) -> dict:
    def text(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    return {"id": schedule_id, "dueAt": text(due_s), "firedAt": text(fired_s), "attempt": attempt,
            "dedupeKey": f"{schedule_id}@{int(due_s * 1000)}", "payload": {"test": "functions"}, "target": target}


@pytest.fixture(scope="module")
def functions(monkeypatch_module):
    """The functions' modules, imported under moto with the seen table made; removed from sys.modules after."""
    with mock_aws():
        boto3.client("dynamodb").create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                                  {"AttributeName": "sk", "AttributeType": "S"}])
        secret = boto3.client("secretsmanager").create_secret(Name="hook", SecretString="integ-signing-secret")
        monkeypatch_module.setenv("SEEN_TABLE", TABLE)
        monkeypatch_module.setenv("API_FUNCTION", "api")
        monkeypatch_module.setenv("SIGNING_SECRET_ARN", secret["ARN"])
        monkeypatch_module.syspath_prepend(str(FUNCTIONS))
        modules = {name: __import__(name) for name in MODULES}
        yield modules
        for name in MODULES:
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_each_shape_of_delivery_is_recorded_with_how_it_arrived(functions):
    recorder, probe = functions["recorder"], functions["probe"]
    now = time.time()
    shapes = {
        "invoke": lambda e: e,
        "sqs": lambda e: {"Records": [{"eventSource": "aws:sqs", "messageId": "m1", "body": json.dumps(e)}]},
        "sns": lambda e: {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": json.dumps(e)}}]},
        "eventbridge": lambda e: {"detail-type": "Timer due", "source": "integ", "detail": e},
        "stepfunctions": lambda e: {"execution": "shape-stepfunctions-1", "envelope": e},
    }
    for kind, shape in shapes.items():
        recorder.handler(shape(envelope(f"shape-{kind}", due_s=now - 2, fired_s=now - 1, target=kind)), None)
    answers = {kind: probe.deliveries(f"shape-{kind}") for kind in shapes}
    assert {kind: (a["count"], a["reached"], a["early"], a["targets"], a["arrivedAs"])
            for kind, a in answers.items()} == {kind: (1, True, 0, [kind], [kind]) for kind in shapes}
    assert answers["stepfunctions"]["executions"] == ["shape-stepfunctions-1"]


def test_a_repeated_occurrence_counts_once_with_its_latest_attempt(functions):
    recorder, probe = functions["recorder"], functions["probe"]
    now = time.time()
    for attempt in (1, 2):
        recorder.handler(envelope("repeat", due_s=now - 2, fired_s=now - 1, attempt=attempt), None)
    recorder.handler(envelope("repeat", due_s=now - 1, fired_s=now - 0.5), None)  # the next occurrence
    answer = probe.deliveries("repeat", at_least=3)
    assert (answer["count"], answer["reached"], answer["attempts"]) == (2, False, [1, 2])


def test_a_delivery_started_before_its_due_time_counts_as_early(functions):
    recorder, probe = functions["recorder"], functions["probe"]
    now = time.time()
    recorder.handler(envelope("early", due_s=now + 30, fired_s=now), None)
    assert probe.deliveries("early")["early"] == 1


def test_since_counts_only_what_started_after_the_mark_and_says_how_long_ago_it_was(functions):
    recorder, probe = functions["recorder"], functions["probe"]
    now = time.time()
    recorder.handler(envelope("marked", due_s=now - 30, fired_s=now - 30), None)
    recorder.handler(envelope("marked", due_s=now - 2, fired_s=now - 2), None)
    boto3.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": "mark"}, "sk": {"S": "before-second"},
                                                             "atMs": {"N": str(int((now - 10) * 1000))}})
    assert probe.deliveries("marked")["count"] == 2
    assert probe.deliveries("marked", since="before-second", wait_seconds=5)["count"] == 1
    assert probe.deliveries("marked", since="before-second", wait_seconds=5)["waited"] is True
    assert probe.deliveries("marked", since="before-second", wait_seconds=60)["waited"] is False


def test_a_failing_delivery_is_refused_until_it_is_healed(functions):
    recorder, probe = functions["recorder"], functions["probe"]
    now = time.time()
    failing = {**envelope("failing", due_s=now - 2, fired_s=now - 1), "payload": {"failUntilHealed": True}}
    with pytest.raises(recorder.NotHealed):
        recorder.handler(failing, None)
    assert probe.deliveries("failing")["count"] == 0
    boto3.client("dynamodb").put_item(TableName=TABLE, Item={"id": {"S": "failing"}, "sk": {"S": "heal"}})
    recorder.handler({**failing, "attempt": 2}, None)
    assert probe.deliveries("failing")["attempts"] == [2]


def test_the_receiver_records_a_signed_request_and_refuses_an_unsigned_one(functions):
    from scheduler_runtime.core.contract import WEBHOOK
    from scheduler_runtime.core.signing import envelope_body, webhook_headers

    receiver, probe = functions["receiver"], functions["probe"]
    now = time.time()
    body = envelope_body(envelope("hooked", due_s=now - 2, fired_s=now - 1, target="hook"))
    headers = webhook_headers(json.loads(body), body, b"integ-signing-secret", now, WEBHOOK)
    event = {"body": base64.b64encode(body).decode(), "isBase64Encoded": True,
             "headers": {name.lower(): value for name, value in headers.items()}}
    assert receiver.handler(event, None) == {"statusCode": 204}
    assert receiver.handler({"body": body.decode(), "headers": {"content-type": "application/json"}}, None) == {
        "statusCode": 401}
    answer = probe.deliveries("hooked")
    assert (answer["count"], answer["arrivedAs"], answer["targets"]) == (1, ["https"], ["hook"])
