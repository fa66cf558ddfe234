"""The sweeper, each case through a handler event on in-process moto: a sweep that stopped early (its
invocation running out of time) is resumed where it stopped, so the last shards never starve, and
claim errors before the early stop still raise ``SweepIncomplete``; timers in shards that a lower
``shard_count`` dropped are still swept.
"""

import pytest

from scheduler_runtime.aws import shards
from scheduler_runtime.core.keys import shard_for
from scheduler_runtime.handlers import sweeper
from scheduler_runtime.handlers.sweeper import SweepIncomplete

from .conftest import call_api, faulty, schedule, service_error, window
from .sweeping import fresh_sandbox, removed_id, runs_out_after  # noqa: F401 - fresh_sandbox is an autouse fixture
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


# --- an early-stopped sweep is resumed where it stopped ------------------------------------------

def spread_over_shards(prefix: str, per_shard: int, shard_count: int = 4, lowest: int = 0) -> list[str]:
    """Ids, ``per_shard`` in each shard from ``lowest`` to ``shard_count - 1``."""
    ids: dict[int, list[str]] = {shard: [] for shard in range(lowest, shard_count)}
    n = 0
    while any(len(found) < per_shard for found in ids.values()):
        candidate, n = f"{prefix}-{n}", n + 1
        found = ids.get(shard_for(candidate, shard_count))
        if found is not None and len(found) < per_shard:
            found.append(candidate)
    return sorted(sum(ids.values(), []))


def test_sweeps_that_keep_stopping_early_still_reach_every_shard(aws):
    ids = spread_over_shards("load", 2)
    for schedule_id in ids:
        schedule(schedule_id, 20, long=True)
    results = [sweeper.handler({}, runs_out_after(checks=1)) for _ in range(2)]  # each has time for two shards
    assert [r["complete"] for r in results] == [False, False]
    claimed = [removed_id(r) for r in aws.new_stream_records("REMOVE")]
    assert sorted(claimed) == ids  # every shard, each timer once


def test_a_claim_error_before_an_early_stop_still_raises(aws):
    ids = spread_over_shards("bad", 1) + spread_over_shards("good", 1)  # whichever shard comes first holds a bad one

    def claims_of_bad_fail(real, **kwargs):
        if "#bad-" in kwargs["Key"]["sk"]["S"]:
            raise service_error("DeleteItem", "ProvisionedThroughputExceededException")
        return real.delete_item(**kwargs)

    for schedule_id in ids:
        schedule(schedule_id, 20, long=True)
    with faulty("dynamodb", delete_item=claims_of_bad_fail), pytest.raises(SweepIncomplete, match="1 claims failed"):
        sweeper.handler({}, runs_out_after(checks=0))  # stops after its first shard
    again = sweeper.handler({})
    assert again["complete"] is True and again["claimed"] == len(ids) - 1


# --- a lower shard_count strands nothing -----------------------------------------------------------

def written_under_sixteen_shards(monkeypatch) -> list[str]:
    """One-shots and a periodic occurrence, all in shards 4-15 of 16, due in 20 s; their timer ids."""
    monkeypatch.setenv("SHARD_COUNT", "16")
    one_shots = spread_over_shards("wide", 1, shard_count=16, lowest=4)
    for schedule_id in one_shots:
        schedule(schedule_id, 20, long=True)
    periodic = next(i for i in (f"tick-{n}" for n in range(100)) if shard_for(i, 16) >= 4)
    with window(1):
        assert call_api("PUT", f"/periodic/{periodic}", {"every": 3600, "startAt": round(now_s() + 20, 3),
                                                        "payload": "tick"})[0] == 201
    return sorted(one_shots + [f"{periodic}#p"])


def test_timers_written_under_sixteen_shards_are_delivered_after_the_count_drops_to_four(aws, monkeypatch):
    expected = written_under_sixteen_shards(monkeypatch)
    with window(1):
        assert sweeper.handler({})["claimed"] == 0  # a sweep under 16: nothing due yet, the mark says 16
    monkeypatch.setenv("SHARD_COUNT", "4")
    result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"]) == (len(expected), 16)


def test_a_table_without_the_mark_is_probed_once_then_swept_with_one_query_a_shard(aws, monkeypatch):
    expected = written_under_sixteen_shards(monkeypatch)  # no sweep ran under 16: no mark
    monkeypatch.setenv("SHARD_COUNT", "4")
    result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"]) == (len(expected), 16)
    assert shards.ShardMark(aws.ddb, aws.table).read() == 16
    queries: list = []

    def count(real, **kwargs):
        queries.append(kwargs["ExpressionAttributeValues"][":p"]["S"])
        return real.query(**kwargs)

    with faulty("dynamodb", query=count):
        assert sweeper.handler({})["shards"] == 16
    assert sorted(queries) == [f"TIMER#{n:04d}" for n in range(16)]  # a warm sandbox reads no mark


def test_a_mark_the_sweeper_may_not_write_is_logged_and_the_sweep_still_covers_what_it_probed(aws, monkeypatch, caplog):
    expected = written_under_sixteen_shards(monkeypatch)
    monkeypatch.setenv("SHARD_COUNT", "4")

    def denied(real, **kwargs):
        if kwargs["Key"]["pk"]["S"] == shards.MARK_KEY.pk:
            raise service_error("UpdateItem", "AccessDeniedException")
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=denied):
        result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"], shards.ShardMark(aws.ddb, aws.table).read()) == (len(expected), 16, None)
    assert "shard_mark_not_written" in caplog.text
