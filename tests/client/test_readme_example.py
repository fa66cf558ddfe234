"""The README's client example, run as written against the local engine (SigV4 required, listing on)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_client_example_runs_as_written(local, monkeypatch, capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### From application code: the typed client.*?```python\n(.*?)```", readme, re.S)
    assert block, "the README's client section lost its example"
    monkeypatch.setenv("TIMERS_API", local.engine.api_url)
    exec(compile(block.group(1), "README.md", "exec"), {})  # noqa: S102 - the documented example, verbatim
    assert capsys.readouterr().out.splitlines()[0] == "SCHEDULED"
