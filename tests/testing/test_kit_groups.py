"""Groups in a user's test: the kit's client cancels a group, and ``advance`` then delivers only what the
cancel did not stop (members that joined after it, other groups); a group lists without ``listing``.
docs/client.md's group example runs as written on the kit's client."""

import re
from datetime import timedelta
from pathlib import Path

import pytest

from cdk_delayed_scheduler.client import NotFoundError, ScheduleStatus


def test_advance_delivers_nothing_of_a_cancelled_group_but_what_joined_after(local_scheduler):
    timers = local_scheduler.client
    stopped = [timers.schedule(timedelta(minutes=m), {"n": m}, group="user-42").id for m in (1, 30, 90)]
    timers.put_periodic("user-42-digest", {"digest": True}, every=3600, group="user-42")
    other = timers.schedule(timedelta(minutes=30), "other", group="user-7").id
    assert [s.id for s in timers.list(group="user-42")] == stopped  # no listing=True needed

    cancelled = timers.cancel_group("user-42")
    assert (cancelled.stopped_schedules, cancelled.stopped_periodic) == (3, 1)
    later = timers.schedule(timedelta(minutes=30), "later", group="user-42").id

    local_scheduler.advance(hours=3)
    assert sorted(d.id for d in local_scheduler.deliveries()) == sorted([other, later])
    assert {timers.get(i).status for i in stopped} == {ScheduleStatus.CANCELLED}
    with pytest.raises(NotFoundError):
        timers.get_periodic("user-42-digest")
    assert timers.cancel_group("user-42").stopped_schedules == 0  # the later one was delivered already


def test_the_client_docs_group_example_prints_what_it_says(local_scheduler, capsys):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n((?:(?!```).)*?cancel_group\(.*?)```", docs, re.S)
    assert block, "docs/client.md lost its group example"
    code = re.sub(r"^  ", "", block.group(1), flags=re.M)  # the example is indented in its list item
    exec(compile(code, "docs/client.md", "exec"), {"timers": local_scheduler.client})  # noqa: S102 - verbatim
    said = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(said) and all(comment.startswith(out) for out, comment in zip(printed, said)), printed
