"""The handler tests' virtual time itself: the runtime's clock moves only when told or slept on, never back, and
in-process moto's SQS (delays, visibility timeouts, timestamps, long polls) follows it to the millisecond."""

from __future__ import annotations

import threading

import pytest

from scheduler_runtime import clock
from scheduler_runtime.clock import VirtualClock

from .virtual_time import START_MS, receivable_instants


def test_a_sleep_moves_the_clock_at_once_and_threads_each_wake_at_their_own_instant():
    virtual = VirtualClock(START_MS)
    virtual.sleep(1.5)
    assert virtual.now_ms() == START_MS + 1500
    read, woken = threading.Barrier(3), {}

    def wait_for(instant_ms: int) -> None:
        left_ms = instant_ms - virtual.now_ms()
        read.wait()  # every thread has read the clock before any of them sleeps
        virtual.sleep(left_ms / 1000)
        woken[instant_ms] = True

    threads = [threading.Thread(target=wait_for, args=(START_MS + 1500 + ms,)) for ms in (300, 700, 200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    # Each waited from its own reading: the clock ends at the latest instant, not at the sum of the waits.
    assert len(woken) == 3 and virtual.now_ms() == START_MS + 2200


def test_the_clock_moves_forward_only():
    virtual = VirtualClock(START_MS)
    assert virtual.advance(60) == START_MS + 60_000
    virtual.move_to(START_MS + 90_000)
    with pytest.raises(ValueError, match="never moves back"):
        virtual.move_to(START_MS + 89_999)
    with pytest.raises(ValueError, match="never moves back"):
        virtual.advance(-1)
    with pytest.raises(ValueError):
        virtual.sleep(-0.001)
    assert virtual.now_ms() == virtual.at_ms == START_MS + 90_000


def test_the_fixture_sets_the_runtimes_clock_and_sqs_delays_visibility_and_timestamps_follow_it(aws, virtual_clock):
    assert clock.PROCESS.now_ms() == START_MS
    aws.sqs.send_message(QueueUrl=aws.target_url, MessageBody="later", DelaySeconds=15)
    assert receivable_instants(aws.target_url) == [START_MS + 15_000]
    virtual_clock.move_to(START_MS + 14_999)
    assert aws.receive(aws.target_url) == []  # not a millisecond early
    virtual_clock.move_to(START_MS + 15_000)
    [message] = aws.receive(aws.target_url)
    assert message["attributes"]["SentTimestamp"] == str(START_MS)
    # In flight for the queue's visibility timeout (30 s), then visible again at the instant it ends.
    assert receivable_instants(aws.target_url) == [START_MS + 45_000]
    virtual_clock.move_to(START_MS + 45_000)
    [again] = aws.receive(aws.target_url)
    assert again["attributes"]["ApproximateReceiveCount"] == "2"


def test_a_long_poll_answers_when_a_message_comes_due_or_once_its_wait_has_passed(aws, virtual_clock):
    aws.sqs.send_message(QueueUrl=aws.target_url, MessageBody="soon", DelaySeconds=3)
    [message] = aws.receive(aws.target_url, wait=20)
    assert message["body"] == "soon" and virtual_clock.now_ms() == START_MS + 3000
    assert aws.receive(aws.target_url, wait=20) == [] and virtual_clock.now_ms() == START_MS + 23_000
