"""The README's examples of operating timers and docs/client.md's redrive, run as written on the local scheduler:
the client's reschedule, pause, resume, group listings and group cancel print what their comments say; the README's
redrive command line and its Python run, and docs/client.md's, each send a parked schedule back for delivery, with
the resources named in the environment as a deployed stack's outputs would name them."""

from __future__ import annotations

import os
import re
import shlex
from datetime import timedelta
from pathlib import Path

import pytest

from cdk_delayed_scheduler.client import RetryPolicy
from cdk_delayed_scheduler.local import cli
from cdk_delayed_scheduler.local.engine import ENQUEUER_FUNCTION

ROOT = Path(__file__).resolve().parents[2]
BROKEN = {"now": True}


def flaky(event, context):
    if BROKEN["now"]:
        raise RuntimeError("down for maintenance")
    return {"ok": True}


def block(document: str, after: str, language: str = "python") -> str:
    """The first ``language`` code block of ``document`` (a path under the repository) after the text ``after``."""
    text = (ROOT / document).read_text(encoding="utf-8")
    assert after in text, f"{document} lost the text before its example: {after!r}"
    found = re.search(rf"```{language}\n(.*?)```", text.split(after, 1)[1], re.S)
    assert found, f"{document} lost its {language} example after {after!r}"
    return found.group(1)


def run(code: str, source: str, **names) -> None:
    exec(compile(code, source, "exec"), dict(names))  # noqa: S102 - the documented example, verbatim


def commented_output(code: str) -> list[str]:
    """What each ``print(...)  # <output>`` line of ``code`` says it prints."""
    return [line.split("  # ", 1)[1].strip() for line in code.splitlines() if line.startswith("print(")]


def park(local_scheduler, schedule_id: str) -> None:
    """A schedule whose only attempt failed: FAILED, parked in the dead-letter queue; the target then works."""
    BROKEN["now"] = True
    local_scheduler.client.schedule(timedelta(minutes=1), {"order": 7}, id=schedule_id,
                                    retry=RetryPolicy(max_attempts=1))
    local_scheduler.advance(minutes=1)
    assert local_scheduler.client.get(schedule_id).status == "FAILED"
    BROKEN["now"] = False


@pytest.fixture
def stack_names(local_scheduler, monkeypatch) -> None:
    """The environment the redrive examples read their resources from, naming the local scheduler's."""
    engine = local_scheduler.engine
    for name, value in {"TIMERS_TABLE": engine.table_name, "TIMERS_DELAYER_QUEUE": engine.queue_url,
                        "TIMERS_DEAD_LETTER_QUEUE": engine.dead_letter_queue_url,
                        "TIMERS_ENQUEUER": ENQUEUER_FUNCTION}.items():
        monkeypatch.setenv(name, value)


def test_the_readme_operations_example_prints_what_its_comments_say(local_scheduler, capsys):
    code = block("README.md", "With `timers`, the client above:")
    run(code, "README.md", timers=local_scheduler.client)
    assert capsys.readouterr().out.splitlines() == commented_output(code)


@pytest.mark.local_scheduler(target=flaky)
def test_the_readme_redrive_command_line_sends_the_parked_schedule_back(local_scheduler, stack_names, capsys):
    park(local_scheduler, "parked-command")
    line = block("README.md", "Once a failing target is mended", "bash").replace("\\\n", " ")  # one line
    argv = shlex.split(os.path.expandvars(line))
    assert argv[0] == "cdk-delayed-scheduler"
    assert cli.main(argv[1:]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "moved 1, skipped 0, left 0"
    local_scheduler.wait_until_quiet()
    assert local_scheduler.client.get("parked-command").status == "FIRED"


@pytest.mark.local_scheduler(target=flaky)
def test_the_readme_redrive_example_sends_the_parked_schedule_back(local_scheduler, stack_names, capsys):
    park(local_scheduler, "parked-readme")
    code = block("README.md", "The same run from Python")
    run(code, "README.md")
    assert capsys.readouterr().out.splitlines() == commented_output(code)
    local_scheduler.wait_until_quiet()
    assert local_scheduler.client.get("parked-readme").status == "FIRED"


@pytest.mark.local_scheduler(target=flaky)
def test_the_client_docs_redrive_example_sends_back_what_was_parked_over_ten_minutes_ago(local_scheduler,
                                                                                         stack_names, capsys):
    park(local_scheduler, "parked-docs")
    code = block("docs/client.md", "### Redriving the dead-letter queue")
    local_scheduler.advance(minutes=11)
    with pytest.raises(SystemExit) as ended:
        run(code, "docs/client.md")
    assert ended.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == "moved 1, skipped 0, left 0"
    local_scheduler.wait_until_quiet()
    assert local_scheduler.client.get("parked-docs").status == "FIRED"
