"""Step Functions state machines as targets, through dispatcher handler events on in-process moto: a
delivery starts one execution with the envelope as its input, named after the ``dedupeKey`` within
Step Functions' rules; a second start of the same occurrence, which a STANDARD workflow refuses
(``ExecutionAlreadyExists``), counts as delivered; and each failure is classified as the SNS and
EventBridge targets' are: throttling and internal errors retried, a denied permission, a missing state
machine and an invalid request parked at once with the reason."""

from __future__ import annotations

import json
import os
import re

import pytest

from scheduler_runtime.aws.targets import execution_name

from .conftest import aws_client, call_api, faulty, schedule
from .dispatching import dispatch, receive
from .target_delivery import ACCOUNT, deliver_once, parked_reason, raises

pytestmark = pytest.mark.usefixtures("virtual_clock")

DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
ROLE = f"arn:aws:iam::{ACCOUNT}:role/workflow"


@pytest.fixture
def workflows(aws, monkeypatch) -> dict[str, str]:
    """Targets ``standard`` and ``express`` (a state machine of each type) and ``no-machine`` (none
    exists). {name: the state machine's ARN}."""
    sfn = aws_client("stepfunctions")
    machines = {name: sfn.create_state_machine(name=name, definition=DEFINITION, roleArn=ROLE, type=name.upper())[
        "stateMachineArn"] for name in ("standard", "express")}
    machines["no-machine"] = f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:gone"
    targets = json.loads(os.environ["TARGETS"])
    targets.update({name: {"type": "stepfunctions", "stateMachineArn": arn} for name, arn in machines.items()})
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    return machines


def executions(machine: str) -> list[dict]:
    sfn = aws_client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    return [{**execution, "input": json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"])}
            for execution in listed]


# --- deliveries start executions -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["standard", "express"])
def test_a_schedule_starts_one_execution_with_the_envelope_as_its_input(aws, workflows, kind):
    assert deliver_once(aws, f"sfn-{kind}", kind, payload={"hello": "workflow"}) == {"batchItemFailures": []}
    [execution] = executions(workflows[kind])
    envelope = execution["input"]
    assert set(envelope) == {"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}
    assert (envelope["id"], envelope["payload"], envelope["target"]) == (f"sfn-{kind}", {"hello": "workflow"}, kind)
    assert execution["name"] == execution_name(envelope["dedupeKey"])
    assert call_api("GET", f"/schedules/sfn-{kind}")[1]["status"] == "FIRED"


def test_a_repeated_delivery_to_a_standard_workflow_is_refused_by_name_and_counted_as_delivered(aws, workflows):
    schedule("twice", 0, target="standard")
    [message] = aws.receive(aws.delayer_url)
    started: list[dict] = []

    def start_execution(real, **kwargs):
        started.append(kwargs)
        return real.start_execution(**kwargs)

    with faulty("stepfunctions", start_execution=start_execution):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
        assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # SQS handed the message out again
    first, again = started
    assert json.loads(again["input"])["attempt"] == 2 and again["name"] == first["name"]
    [execution] = executions(workflows["standard"])  # Step Functions refused the second: ExecutionAlreadyExists
    assert execution["input"]["attempt"] == 1
    assert aws.receive(aws.dlq_url) == []


@pytest.mark.parametrize("dedupe_key", ["a@1767225600000", "order:42.v2@1767225600123", "x" * 128 + "@1767225600000"])
def test_an_execution_name_keeps_step_functions_rules_and_differs_per_occurrence(dedupe_key):
    name = execution_name(dedupe_key)
    assert re.fullmatch(r"[0-9A-Za-z_-]{1,80}", name)
    assert name == execution_name(dedupe_key)
    assert execution_name(dedupe_key.replace("@1767225600", "@1767225601")) != name


def test_occurrences_whose_readable_part_is_the_same_get_different_names():
    long_id = "y" * 100
    assert execution_name(f"{long_id}@1") != execution_name(f"{long_id}@2")
    assert execution_name("a.b@1") != execution_name("a:b@1")  # both read a-b-1


# --- failures: retried, or parked at once with the reason ---------------------------------------


@pytest.mark.parametrize("code", ["ThrottlingException", "ExecutionLimitExceeded", "KmsThrottlingException",
                                  "InternalServerError"])
def test_a_throttled_or_failing_start_is_retried(aws, workflows, code):
    schedule("sfn-retry", 0, target="standard")
    [message] = aws.receive(aws.delayer_url)
    with faulty("stepfunctions", start_execution=raises(code, "StartExecution")):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert aws.receive(aws.dlq_url) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # the retry, once Step Functions takes it
    [execution] = executions(workflows["standard"])
    assert execution["input"]["attempt"] == 2


def test_a_state_machine_that_does_not_exist_parks_the_schedule_at_once_with_the_reason(aws, workflows):
    assert deliver_once(aws, "lost", "no-machine") == {"batchItemFailures": []}
    reason = parked_reason(aws, "lost")
    assert reason.startswith("undeliverable (attempt 1, not retried): ")
    assert f"state machine {workflows['no-machine']} refuses the envelope for good: StateMachineDoesNotExist" in reason


@pytest.mark.parametrize("code", ["AccessDeniedException", "KmsAccessDeniedException", "StateMachineDeleting",
                                  "InvalidArn", "InvalidName", "InvalidExecutionInput", "ValidationException"])
def test_a_denied_or_invalid_start_parks_the_schedule_at_once(aws, workflows, code):
    with faulty("stepfunctions", start_execution=raises(code, "StartExecution")):
        assert deliver_once(aws, "denied", "standard") == {"batchItemFailures": []}
    assert f"refuses the envelope for good: {code}: injected" in parked_reason(aws, "denied")
    assert executions(workflows["standard"]) == []
