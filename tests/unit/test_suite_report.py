"""The suite section of docs/benchmarks.md: what a run's CPU says about its time."""

from __future__ import annotations

from bench.report import _suite_cpu


def test_the_cpu_floor_is_the_runs_cpu_over_the_cores_and_the_early_runs_are_listed_costliest_first() -> None:
    run = {"seconds": 600.0, "cpu_seconds": 700.0, "cores": 2,
           "early_runs": [{"name": "demo", "cpu_seconds": 6.0, "exit": 0}, {"name": "chaos", "cpu_seconds": 17.0, "exit": 0}]}
    text = "\n".join(_suite_cpu(run))
    assert "**CPU: 700 s**" in text and "in less than 350 s" in text and "at or under 360 s" in text
    assert "kept 58% of the cores busy" in text and "23 s of CPU together" in text
    assert text.index("| chaos |") < text.index("| demo |")


def test_a_run_recorded_without_its_cpu_adds_nothing() -> None:
    assert _suite_cpu({"seconds": 600.0}) == []
