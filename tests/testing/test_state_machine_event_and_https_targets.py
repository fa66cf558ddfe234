"""The kit's state machine targets (deliveries read back from the executions moto started), Lambda targets
invoked as an event (the handler's failure is its own, not a failed delivery) and HTTPS targets (the secret
in moto's Secrets Manager)."""

import json
import os
from datetime import timedelta

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.testing import HttpsTarget, LambdaTarget, StateMachineTarget


def refuse(event, context):
    raise RuntimeError(f"refused {event['id']}")


@pytest.mark.local_scheduler(targets={"flow": StateMachineTarget(), "fast": StateMachineTarget(express=True)})
def test_a_state_machines_deliveries_are_its_executions_inputs_in_the_order_they_started(local_scheduler):
    for n, target in enumerate(("flow", "fast", "flow")):
        local_scheduler.client.schedule(timedelta(minutes=1 + n), {"n": n}, id=f"run-{n}", target=target)
    local_scheduler.advance(minutes=3)

    assert [(d.id, d.payload) for d in local_scheduler.deliveries("flow")] == [("run-0", {"n": 0}), ("run-2", {"n": 2})]
    assert [d.id for d in local_scheduler.deliveries("fast")] == ["run-1"]
    assert [d.id for d in local_scheduler.deliveries("flow")] == ["run-0", "run-2"]  # read again: not twice
    for delivery in local_scheduler.deliveries(None):  # the start date is on the kit's clock
        assert timedelta(0) <= delivery.lateness < timedelta(seconds=2), delivery
    sfn = local_scheduler.engine.client("stepfunctions")
    machine = sfn.describe_state_machine(stateMachineArn=local_scheduler.engine.target_state_machine_arns["fast"])
    assert machine["type"] == "EXPRESS"


@pytest.mark.local_scheduler(targets={"event": LambdaTarget(refuse, invocation_type="Event"),
                                      "sync": LambdaTarget(refuse)})
def test_a_handler_invoked_as_an_event_that_raises_still_counts_as_delivered_and_a_synchronous_one_not(
        local_scheduler):
    for target in ("event", "sync"):
        local_scheduler.client.schedule(timedelta(seconds=30), {}, id=f"to-{target}", target=target)
    local_scheduler.advance(seconds=30)

    (by_event,) = local_scheduler.deliveries("event")
    assert by_event.error == "RuntimeError: refused to-event"          # the handler ran and raised ...
    assert [d.error for d in local_scheduler.deliveries("sync")] == ["RuntimeError: refused to-sync"]
    stats = local_scheduler.engine.stats                              # ... after Lambda accepted the event
    assert stats.events["delivered"] == 1                            # the synchronous one failed, to be retried
    local_scheduler.advance(minutes=30)
    assert len(local_scheduler.deliveries("sync")) > 1 and len(local_scheduler.deliveries("event")) == 1
    assert local_scheduler.client.get("to-sync").attempts > 1 and stats.events["delivered"] == 1

def test_a_lambda_target_takes_a_known_invocation_type_and_a_callable():
    with pytest.raises(ValueError, match=r"invocation_type must be one of RequestResponse, Event, got 'event'"):
        LambdaTarget(refuse, invocation_type="event")
    with pytest.raises(ValueError, match=r"handler must be a Lambda-style callable or None, got str"):
        LambdaTarget("module:function")


@pytest.mark.local_scheduler(targets={"hook": HttpsTarget("http://localhost:9/timers", "s3cret", timeout_seconds=3)})
def test_an_https_targets_secret_is_kept_in_moto_and_its_deliveries_are_read_at_its_receiver(local_scheduler):
    hook = json.loads(os.environ[contract.ENV.targets])["hook"]  # as the functions read it
    assert {k: v for k, v in hook.items() if k != "secretArn"} == {
        "type": "https", "url": "http://localhost:9/timers", "timeoutSeconds": 3}
    secrets = local_scheduler.engine.client("secretsmanager")
    assert secrets.get_secret_value(SecretId=hook["secretArn"])["SecretString"] == "s3cret"
    with pytest.raises(ValueError, match=r"target: 'hook' is an HttpsTarget whose URL is on this machine: its "):
        local_scheduler.deliveries("hook")
