"""The tests' count of what still waits in the delayer queue never misses a message whose delay ends
while the queue is read (a dispatch loop that read an empty queue would stop before its delivery)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from .dispatching import waiting_in_delayer

pytestmark = pytest.mark.usefixtures("virtual_clock")

VISIBLE, DELAYED = "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"


class QueueWhoseOneMessageSurfacesMidRead:
    """One message, delayed until the first count is computed and visible from the second on: each count
    is computed at its own instant, visible first when both are asked for, as moto computes them."""

    def __init__(self) -> None:
        self.counts_computed = 0

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict:
        attributes = {}
        for name in (VISIBLE, DELAYED):
            if name in AttributeNames:
                delayed = self.counts_computed == 0
                attributes[name] = str(int(delayed if name == DELAYED else not delayed))
                self.counts_computed += 1
        return {"Attributes": attributes}


def test_a_message_whose_delay_ends_between_the_two_counts_is_still_counted():
    aws = SimpleNamespace(sqs=QueueWhoseOneMessageSurfacesMidRead(), delayer_url="https://sqs/delayer")
    assert waiting_in_delayer(aws) >= 1


def test_an_empty_queue_reads_as_empty():
    class Empty:
        def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict:
            return {"Attributes": {name: "0" for name in AttributeNames}}

    assert waiting_in_delayer(SimpleNamespace(sqs=Empty(), delayer_url="https://sqs/delayer")) == 0
