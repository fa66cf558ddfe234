"""The suite section of docs/benchmarks.md: what a run's CPU says about its time."""

from __future__ import annotations

from bench.render import section_text

TIER = {"seconds": 600.0, "pytest_seconds": 590.0, "passed": True, "summary": "10 passed in 590.00s", "failures": [],
        "slowest_modules": [], "cpu_seconds": 700.0, "cores": 2,
        "early_runs": [{"name": "demo", "cpu_seconds": 6.0, "exit": 0}, {"name": "chaos", "cpu_seconds": 17.0, "exit": 0}]}


def test_the_cpu_floor_is_the_runs_cpu_over_the_cores_and_the_early_runs_are_listed_costliest_first() -> None:
    text = section_text("suite", {"suite": {"targets_s": {"quick": 120, "full": 480}, "runs": [{"full": TIER}]}})
    assert "**CPU: 700 s**" in text and "in less than 350 s" in text and "at or under 960 s" in text
    assert "used 58% of the cores' time" in text and "23 s of CPU together" in text
    assert text.index("| chaos |") < text.index("| demo |")


def test_a_tier_not_run_is_shown_as_not_measured() -> None:
    text = section_text("suite", {"suite": {"targets_s": {"quick": 120, "full": 480}, "runs": [{"full": TIER}]}})
    quick = text[text.index("### The quick tier"):text.index("### The full tier")]
    assert "Not measured" in quick and "| 1 |" not in quick
