"""The construct's event filters, as the local engine applies them, pass exactly the records each handler wants."""

import pytest

from cdk_delayed_scheduler._runtime_asset import event_filters
from cdk_delayed_scheduler.local.event_filter import matches

TIMER_KEYS = {"pk": {"S": "TIMER#0003"}, "sk": {"S": "000001795255200000#a"}}
RECORD_KEYS = {"pk": {"S": "SCHEDULE#a"}, "sk": {"S": "RECORD"}}
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def record(event_name, keys, old=None, identity=None):
    out = {"eventName": event_name, "dynamodb": {"Keys": keys, **({"OldImage": old} if old is not None else {})}}
    if identity:
        out["userIdentity"] = identity
    return out


@pytest.mark.parametrize(
    "rec, enqueuer",
    [
        (record("INSERT", TIMER_KEYS), False),
        (record("INSERT", RECORD_KEYS), False),
        (record("MODIFY", TIMER_KEYS), False),
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS}), True),  # a claim
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS, "cancelled": {"BOOL": True}}), False),  # a cancel
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS}, identity=TTL_IDENTITY), False),  # a TTL expiry
        (record("REMOVE", RECORD_KEYS, old={**RECORD_KEYS}), False),
    ],
)
def test_the_enqueuer_gets_only_claims(rec, enqueuer):
    assert matches(event_filters()["enqueuer"], rec) is enqueuer


def test_only_the_enqueuer_reads_the_stream():
    # Short timers go straight to the queue: no other handler reads the stream any more.
    assert set(event_filters()) == {"enqueuer"}


def test_matcher_operators():
    assert matches({"a": [{"anything-but": ["x"]}]}, {"a": "y"})
    assert not matches({"a": [{"anything-but": ["x"]}]}, {"a": "x"})
    assert matches({"a": [1, 2]}, {"a": 2}) and not matches({"a": [1, 2]}, {"a": 3})
    assert not matches({"a": {"b": ["x"]}}, {})
    with pytest.raises(ValueError):
        matches({"a": [{"numeric": [">", 1]}]}, {"a": 2})
