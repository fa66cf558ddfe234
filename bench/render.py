"""Write docs/benchmarks.md and its plots from the JSON ``./dev bench`` records.

Each section's report (``bench.report_*``) returns its figures; this module fills the Markdown templates in
``bench/templates/`` with them, the only place the document's wording lives. A template file holds a section's
text, then its named parts, each after ``<!-- part: NAME -->`` and a space (a phrase on that line) or a new line.
``${name}`` stands for a figure (any other ``$`` is text). A figure is text; a list of rows (lists of cells) is a
table's body; a dict with a ``part`` key is that part of the same file, filled with the dict; a list of such dicts
or texts is one a line (a blank line between blocks of several lines). A section's ``summary`` parts are its rows
of the summary table; ``notes.md`` is the hand-written analysis.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any, Callable

from . import deployed, flow, report_cost, report_engine, report_house, report_levers, report_scale, report_timing
from .common import LOOP_REFERENCE_S
from .fmt import num
from .plots import plots

TEMPLATES = Path(__file__).resolve().parent / "templates"
_PART = re.compile(r"^<!-- part: (\w+) -->[ \n]", re.M)

#: Each section's report, in the document's order: its figures from the whole JSON, or None when not measured.
SECTIONS: tuple[tuple[str, Callable[[dict], dict | None]], ...] = (
    ("engine", report_engine.engine), ("precision", report_timing.precision), ("burst", report_timing.burst),
    ("ingest", report_engine.ingest), ("cost", report_cost.cost), ("levers", report_levers.levers),
    ("operation_costs", report_levers.operation_costs), ("cron_lever", report_levers.cron_lever),
    ("flow", flow.figures),
    ("coldstart", report_house.coldstart), ("synth", report_house.synth), ("suite", report_house.suite),
    ("load", report_engine.load), ("kit", report_house.kit), ("targets", report_timing.targets),
    ("scale", report_scale.scale), ("https", report_house.https), ("redrive", report_house.redrive),
    ("groups", report_house.groups), ("deployed", deployed.figures))
#: The summary table's rows: (section, part), in order.
SUMMARY = (("engine", "summary"), ("precision", "summary"), ("burst", "summary"), ("suite", "summary"),
           ("engine", "summary_resources"), ("ingest", "summary"), ("cost", "summary"), ("flow", "summary"),
           ("coldstart", "summary"), ("synth", "summary"), ("load", "summary"), ("kit", "summary"), ("targets", "summary"),
           ("https", "summary"), ("scale", "summary"), ("redrive", "summary"), ("groups", "summary"),
           ("deployed", "summary"))


class _Template(string.Template):
    """Only ``${name}`` is a placeholder: prices such as ``$1.00`` stay text."""

    pattern = (r"\$(?:(?P<escaped>(?!))|\{(?P<braced>[_a-z][_a-z0-9]*)\}|(?P<named>(?!))|"  # type: ignore[assignment]
               r"(?P<invalid>(?!)))")


def parts(name: str) -> dict[str, str]:
    """The parts of ``templates/<name>.md``: ``main`` (what comes before the first marker) and the named ones."""
    chunks = _PART.split((TEMPLATES / f"{name}.md").read_text())
    return {key: text.strip("\n") for key, text in zip(["main", *chunks[1::2]], chunks[::2])}


def fill(texts: dict[str, str], part: str, figures: dict) -> str:
    values = {key: _text(texts, value) for key, value in figures.items()}
    try:
        return _Template(texts[part]).substitute(values)
    except KeyError as missing:
        raise KeyError(f"the part {part!r} needs the figure {missing}, which its report does not give") from None


def _text(texts: dict[str, str], value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return fill(texts, value["part"], value)
    if isinstance(value, (list, tuple)):  # rows or lines one a line; blocks of several lines apart
        lines = ["| " + " | ".join(_text(texts, c) for c in v) + " |" if isinstance(v, (list, tuple)) else _text(texts, v)
                 for v in value]
        return ("\n\n" if any("\n" in line for line in lines) else "\n").join(lines)
    return str(value)


def section_text(name: str, data: dict) -> str:
    """One section's text (its heading unnumbered) from ``data``, the JSON or the part of it the section reads."""
    return fill(parts(name), "main", dict(SECTIONS)[name](data) or {})


def summary_text(name: str, data: dict) -> str:
    """One section's rows of the summary table."""
    return fill(parts(name), "summary", dict(SECTIONS)[name](data) or {})


def write(data: dict, out: Path) -> None:
    made = plots(data, out)
    view = {key: None if isinstance(value, dict) and value.get("failed") else value for key, value in data.items()}
    figures = {name: f for name, report in SECTIONS if (f := report(view)) is not None}
    texts = {name: parts(name) for name in figures}
    body = "\n\n".join(fill(texts[name], "main", f) for name, f in figures.items())
    number = iter(range(1, len(SECTIONS) + 1))
    body = re.sub(r"^## ", lambda _: f"## {next(number)}. ", body, flags=re.M)
    summary = "\n".join(fill(texts[name], part, figures[name]) for name, part in SUMMARY if name in figures)
    summary = "\n".join(line for line in summary.splitlines() if line.strip())  # one table: a row left out leaves no gap
    doc = fill(parts("document"), "main", {
        **header(data), "summary": summary, "notes": (TEMPLATES / "notes.md").read_text(), "sections": body,
        "plots": [f"![{name}]({name})\n" for name in made]})
    (out / "benchmarks.md").write_text(re.sub(r"\n{3,}", "\n\n", doc).rstrip() + "\n")


def header(data: dict) -> dict:
    """The run's figures above the summary: when, on what machine and code, at what load and speed."""
    m, secs = data.get("machine", {}), data.get("section_seconds", {})
    failed = [f"> **The {name} section failed** ({value['failed'][:200]}): its figures are missing."
              for name, value in data.items() if isinstance(value, dict) and value.get("failed")]
    loops = data.get("section_loop_s") or {}
    commits = sorted(set((data.get("section_git") or {}).values()) or {(data.get("git") or {}).get("commit")} - {None})
    return {
        "quick": {"part": "quick"} if data.get("quick") else None, "failed": failed,
        "finished": data.get("finished_utc", "n/a"), "sections_seconds": ", ".join(f"{k} {v:.0f} s" for k, v in secs.items()),
        "total_seconds": num(sum(secs.values())), "cpus": m.get("cpus", "?"), "cpu": m.get("cpu", "?"),
        "memory_gb": m.get("memory_gb", "?"), "python": m.get("python", "?"), "moto": m.get("moto", "?"),
        "boto3": m.get("boto3", "?"),
        "loop": {"part": "loop" if loops else "no_loop", "reference_s": num(LOOP_REFERENCE_S, 1),
                 "sections": ", ".join(f"{num(v, 2)} s ({k})" for k, v in loops.items())},
        "commits": ", ".join(f"`{c.rstrip('+')}`" + (" (with uncommitted changes in `lambda/` or `src/`)" if c.endswith("+")
                                                        else "") for c in commits) or "n/a",
        "loads": ", ".join(f"{k} {v['before']:.1f}/{v['after']:.1f}" for k, v in (data.get("load_average_1min") or {}).items())}
