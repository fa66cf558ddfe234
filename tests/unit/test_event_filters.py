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
    "rec, fast_track, enqueuer",
    [
        (record("INSERT", TIMER_KEYS), True, False),
        (record("INSERT", RECORD_KEYS), False, False),
        (record("MODIFY", TIMER_KEYS), False, False),
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS}), False, True),  # a claim
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS, "cancelled": {"BOOL": True}}), False, False),  # a cancel
        (record("REMOVE", TIMER_KEYS, old={**TIMER_KEYS}, identity=TTL_IDENTITY), False, False),  # a TTL expiry
        (record("REMOVE", RECORD_KEYS, old={**RECORD_KEYS}), False, False),
    ],
)
def test_each_handler_gets_only_its_records(rec, fast_track, enqueuer):
    filters = event_filters()
    assert matches(filters["fastTrack"], rec) is fast_track
    assert matches(filters["enqueuer"], rec) is enqueuer


def test_matcher_operators():
    assert matches({"a": [{"anything-but": ["x"]}]}, {"a": "y"})
    assert not matches({"a": [{"anything-but": ["x"]}]}, {"a": "x"})
    assert matches({"a": [1, 2]}, {"a": 2}) and not matches({"a": [1, 2]}, {"a": 3})
    assert not matches({"a": {"b": ["x"]}}, {})
    with pytest.raises(ValueError):
        matches({"a": [{"numeric": [">", 1]}]}, {"a": 2})
