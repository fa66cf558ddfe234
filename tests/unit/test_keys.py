import collections

import pytest

from scheduler_runtime.core import contract, keys


def test_shard_is_stable_and_in_range():
    for count in (1, 4, 16, 97):
        for n in range(200):
            shard = keys.shard_for(f"id-{n}", count)
            assert 0 <= shard < count
            assert shard == keys.shard_for(f"id-{n}", count)


def test_shards_spread_evenly():
    counts = collections.Counter(keys.shard_for(f"order-{n}", 16) for n in range(16_000))
    assert len(counts) == 16
    assert max(counts.values()) < 1.15 * 1000 and min(counts.values()) > 0.85 * 1000


def test_shard_count_must_be_positive():
    with pytest.raises(ValueError):
        keys.shard_for("x", 0)


def test_timer_sort_keys_order_by_due_time():
    dues = [5, 40, 1_000, 1_795_255_200_000, 9_999_999_999_999]
    sort_keys = [keys.timer_sort_key(due, "z") for due in dues]
    assert sort_keys == sorted(sort_keys)
    # Same due time: ids break the tie, and every due <= cutoff sorts below the cutoff key.
    assert keys.timer_sort_key(100, "a") < keys.timer_sort_key(100, "b") < keys.due_cutoff_sort_key(100)
    assert keys.due_cutoff_sort_key(100) < keys.timer_sort_key(101, "a")


def test_due_cutoff_includes_ids_with_any_allowed_character():
    for schedule_id in ("A", "z", "0", "9", ".", "_", ":", "-", "a" * 128):
        assert keys.timer_sort_key(7, schedule_id) < keys.due_cutoff_sort_key(7)


def test_record_and_timer_keys_do_not_collide():
    record = keys.record_key("TIMER#0001")
    timer = keys.timer_key(1, 5, "x")
    assert record.pk.startswith(keys.RECORD_PREFIX) and timer.pk.startswith(keys.TIMER_PREFIX)
    assert record.pk != timer.pk
    assert record.as_item_key() == {"pk": {"S": "SCHEDULE#TIMER#0001"}, "sk": {"S": "RECORD"}}


def test_dedupe_key_is_stable_per_occurrence():
    assert keys.dedupe_key("a", 1) == keys.dedupe_key("a", 1)
    assert keys.dedupe_key("a", 1) != keys.dedupe_key("a", 2)


@pytest.mark.parametrize("good", ["a", "A-Z.0_9:x", "x" * 128])
def test_id_pattern_accepts(good):
    assert contract.ID_PATTERN.match(good)


@pytest.mark.parametrize("bad", ["", "x" * 129, "has space", "slash/", "é", "new\nline", "a#b"])
def test_id_pattern_rejects(bad):
    assert not contract.ID_PATTERN.match(bad)


def test_timer_sort_key_round_trips_and_tokens_differ():
    due, sid = 1_795_255_200_250, "order:1.a-b"
    assert keys.parse_timer_sort_key(keys.timer_sort_key(due, sid)) == (due, sid)
    assert keys.shard_of_partition(keys.timer_partition(37)) == 37
    assert keys.schedule_id_of(keys.record_key(sid).pk) == sid
    tokens = {keys.new_token() for _ in range(1000)}
    assert len(tokens) == 1000 and all(len(t) == 12 for t in tokens)
