"""The deployed section of docs/benchmarks.md: reports of ``cdk-delayed-scheduler check --json``, built through the
real report classes, recorded by ``./dev bench --only deployed --check-report FILE`` and shown as a table per run;
with none recorded, the commands that record one."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import common, deployed
from bench.render import section_text, summary_text, write
from cdk_delayed_scheduler._check_report import PeriodicResult, TimerResult
from cdk_delayed_scheduler.check import CheckReport, make_plan

DUE = datetime(2026, 11, 25, 12, tzinfo=timezone.utc)
COMMANDS = ("cdk-delayed-scheduler check --api-url <TimersApi output> --json > check.json\n"
            "./dev bench --only deployed --check-report check.json")


def _timer(name: str, row: str, lateness_ms: int | None, action: str | None = None, *problems: str,
           due: datetime = DUE) -> TimerResult:
    fired = None if lateness_ms is None else due + timedelta(milliseconds=lateness_ms)
    return TimerResult(f"check-aws-{name}", row, action, "FIRED" if fired else "CANCELLED", due, fired,
                       1 if fired else None, lateness_ms, problems)


def _report(*extra: TimerResult, periodic_problems: tuple[str, ...] = (), run_id: str = "check-aws",
            due: datetime = DUE) -> dict:
    """What ``check --json`` prints for a run whose timers fall due at ``due``: four short timers, two long ones, a
    cancel and a periodic timer."""
    timers = (*(_timer(f"short-{n}", "short", ms, due=due) for n, ms in enumerate((120, 80, 95, 410), 1)),
              _timer("long-1", "long", 2_300, due=due), _timer("long-2", "long", 1_900, due=due),
              _timer("cancel-short", "short", None, "cancel", due=due), *extra)
    periodic = PeriodicResult(f"{run_id}-periodic", 30, 4, 3, 0, 150, periodic_problems)
    return CheckReport(make_plan(run_id=run_id), timers, periodic).to_json()


def _file(tmp_path: Path, report: dict, name: str = "check.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report, indent=2))  # as `check --json` prints it
    return path


def test_with_no_run_recorded_the_section_says_so_and_gives_the_commands_that_record_one(tmp_path: Path) -> None:
    text = section_text("deployed", {})
    assert text.startswith("## Deployed on AWS (`cdk-delayed-scheduler check`)")
    assert "the only figures in this document measured on AWS itself" in text
    assert "No run has been recorded yet." in text and f"```\n{COMMANDS}\n```" in text
    assert "| path |" not in text and summary_text("deployed", {}).strip() == ""
    write({}, tmp_path)  # the whole document: the section is there, with no summary row
    document = (tmp_path / "benchmarks.md").read_text()
    assert re.search(r"^## \d+\. Deployed on AWS \(`cdk-delayed-scheduler check`\)$", document, re.M)
    assert COMMANDS in document
    assert "lateness on AWS" not in document


def test_a_report_is_stored_per_path_and_shown_as_a_table_with_a_summary_row() -> None:
    stored = deployed.run([_report()])
    (entry,) = stored["runs"]
    assert {key: entry[key] for key in ("run", "group", "ok", "problems", "first_due_utc", "last_fired_utc")} == {
        "run": "check-aws", "group": "check-aws", "ok": True, "problems": 0,
        "first_due_utc": "2026-11-25T12:00:00.000Z", "last_fired_utc": "2026-11-25T12:00:02.300Z"}
    assert [p["path"] for p in entry["paths"]] == ["short", "long", "reschedule", "periodic", "all"]
    text = section_text("deployed", {"deployed": stored})
    assert ("**Run `check-aws`** (group `check-aws`): timers due from 2026-11-25T12:00:00.000Z, the last delivered at "
            "2026-11-25T12:00:02.300Z; OK, no problem.") in text
    assert "| short | 4 | 4 | 0 | 95 | 410 | 410 | 0 |" in text
    assert "| long | 2 | 2 | 0 | 1,900 | 2,300 | 2,300 | 0 |" in text
    assert "| periodic, every 30 s | 1 | 4 occurrences |  |  |  | 150 (the last occurrence) | 0 |" in text
    assert "| all one-shot | 6 | 6 | 0 | 120 | 2,300 | 2,300 | 0 |" in text
    assert "No run has been recorded yet." not in text
    assert summary_text("deployed", {"deployed": stored}).strip() == (
        "| lateness on AWS (`cdk-delayed-scheduler check`, run `check-aws`), p50 / p99 / max of 6 one-shot timers "
        "delivered | 120 / 2,300 / 2,300 ms | OK, no problem | measured on AWS, not this machine |")


def test_a_report_with_problems_counts_them_per_path_and_is_not_ok() -> None:
    early = _timer("long-3", "long", -40, None, "early: fired 40 ms before its due time")
    report = _report(early, periodic_problems=("passed over 1 occurrences, never delivered",))
    (entry,) = deployed.run([report])["runs"]
    assert entry["ok"] is False and entry["problems"] == 2
    text = section_text("deployed", {"deployed": {"runs": [entry]}})
    assert "; **FAILED: 2 problems**." in text
    assert "| long | 3 | 3 | 1 | 1,900 | 2,300 | 2,300 | 1 |" in text
    assert "| periodic, every 30 s | 1 | 4 occurrences |  |  |  | 150 (the last occurrence) | 1 |" in text
    assert "| all one-shot | 7 | 7 | 1 | 120 | 2,300 | 2,300 | 1 |" in text


def test_a_file_that_is_not_a_check_report_is_refused_naming_the_option_and_the_file(tmp_path: Path) -> None:
    plan = _file(tmp_path, {"dryRun": True, **make_plan(run_id="check-aws").to_json()}, "plan.json")
    with pytest.raises(ValueError, match=r"--check-report .*plan\.json: not a report .* \(it has no ok, lateness"):
        deployed.read(plan)
    with pytest.raises(ValueError, match=r"--check-report .*missing\.json"):
        deployed.read(tmp_path / "missing.json")


@pytest.fixture
def quick_main(monkeypatch: pytest.MonkeyPatch):
    """``./dev bench`` without timing the machine or asking git: only the deployed section's own work."""
    monkeypatch.setattr(common, "loop_seconds", lambda: {"median_s": 0.6, "runs": [0.6]})
    monkeypatch.setattr(bench_main, "_git", lambda: {"commit": "abc1234", "runtime_or_engine_modified": False})
    return bench_main.main


def test_a_later_run_without_check_report_keeps_the_runs_recorded_before(tmp_path: Path, quick_main) -> None:
    first = _file(tmp_path, _report(run_id="check-one"), "one.json")
    assert quick_main(["--only", "deployed", "--out", str(tmp_path), "--check-report", str(first)]) == 0
    assert quick_main(["--only", "deployed", "--out", str(tmp_path)]) == 0
    second = _file(tmp_path, _report(run_id="check-two", due=DUE + timedelta(days=1)), "two.json")
    assert quick_main(["--only", "deployed", "--out", str(tmp_path), "--check-report", str(second),
                       "--check-report", str(first)]) == 0  # a run recorded again replaces its entry
    runs = json.loads((tmp_path / "benchmarks.json").read_text())["deployed"]["runs"]
    assert [r["run"] for r in runs] == ["check-one", "check-two"]
    document = (tmp_path / "benchmarks.md").read_text()
    assert "**Run `check-one`**" in document and "run `check-two`), p50 / p99 / max" in document


def test_a_bad_check_report_or_one_without_the_deployed_section_stops_the_run_before_anything_is_written(
        tmp_path: Path, quick_main, capsys: pytest.CaptureFixture[str]) -> None:
    report = _file(tmp_path, _report())
    with pytest.raises(SystemExit):
        quick_main(["--only", "redrive", "--out", str(tmp_path), "--check-report", str(report)])
    assert "--check-report needs the deployed section" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        quick_main(["--only", "deployed", "--out", str(tmp_path), "--check-report", str(tmp_path / "missing.json")])
    assert "--check-report" in capsys.readouterr().err and not (tmp_path / "benchmarks.json").exists()
