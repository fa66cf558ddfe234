"""Two PATCH calls of one body racing on the api handler (a client's retry while its first call still runs): each
step ordered by the test, on in-process moto. Both arm the same timer key (the id and the new due time), so
neither may remove or replace the timer the record ends up naming."""

import pytest

from scheduler_runtime.core.timeparse import parse_instant

from .conftest import faulty
from .rescheduling import create, patch
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


def _timers(aws) -> list[dict]:
    return [i for i in aws.ddb.scan(TableName=aws.table)["Items"] if i["pk"]["S"].startswith("TIMER#")]


def _is_new_timer(kwargs: dict) -> bool:
    return kwargs["Item"]["pk"]["S"].startswith("TIMER#")


def test_a_repeat_patch_that_read_the_record_before_the_first_landed_keeps_the_first_ones_timer(aws):
    """The repeat reads the record (the old token), then the first call arms the new due time and takes the record;
    the repeat's timer write comes last, on the same key. Written over the first's timer, then removed as the
    repeat's own once its record update failed, it left the schedule SCHEDULED with no timer: never delivered."""
    create("twice", 3600)
    body = {"dueAt": round(now_s() + 7200, 3)}
    first: list = []

    def first_call_lands_before_this_write(real, **kwargs):
        if _is_new_timer(kwargs) and not first:
            first.append(None)
            first[0] = patch("twice", body)  # the first call, from its read to its answer
        return real.put_item(**kwargs)

    with faulty("dynamodb", put_item=first_call_lands_before_this_write):
        repeat = patch("twice", body)
    assert (first[0][0], repeat[0]) == (200, 200) and repeat[1]["dueAt"] == first[0][1]["dueAt"], (first, repeat)
    record = aws.item("SCHEDULE#twice", "RECORD")
    [timer] = _timers(aws)
    assert record["status"]["S"] == "SCHEDULED" and timer["token"]["S"] == record["token"]["S"]
    assert "cancelled" not in timer  # live: the sweeper claims it at the new due time
    assert int(timer["sk"]["S"].split("#")[0]) == parse_instant(repeat[1]["dueAt"])


def test_a_patch_meets_a_timer_of_a_crashed_call_on_its_key_and_still_arms_its_new_due_time(aws):
    """A call that crashed after its timer write left a stray on the key; the client's retry of that body arms the
    new due time all the same (the record names the live timer), whether or not the stray is old."""
    create("retried", 3600)
    body = {"dueAt": round(now_s() + 7200, 3)}
    before = len(_timers(aws))

    def crash_after_the_timer(real, **kwargs):
        if "rescheduleHash" in kwargs["UpdateExpression"]:
            raise RuntimeError("the function died after its timer write")
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=crash_after_the_timer):
        assert patch("retried", body)[0] == 500
    assert len(_timers(aws)) == before + 1  # the crashed call's stray
    status, answer = patch("retried", body)
    assert (status, answer["status"]) == (200, "SCHEDULED"), answer
    record = aws.item("SCHEDULE#retried", "RECORD")
    live = [t for t in _timers(aws) if "cancelled" not in t]
    assert [t["token"]["S"] for t in live] == [record["token"]["S"]]
