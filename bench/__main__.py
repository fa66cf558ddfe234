"""``./dev bench``: run the benchmark suite and write docs/benchmarks.md, docs/benchmarks.json and the plots.

    ./dev bench                 # the full suite (about 40 minutes on 2 shared cores)
    ./dev bench --quick         # a smoke run (about 2-3 minutes), written to bench/.quick/
    ./dev bench --only precision,cost
    ./dev bench --report-only   # re-render the document from an existing JSON file
    ./dev bench --only deployed --check-report check.json  # record `cdk-delayed-scheduler check --json` on AWS

Before each section, a pure-Python loop of 10 million additions is timed (``common.LOOP``): the machine-speed
reference its figures are read against. Each section's figures are kept as ``stored.compact`` trims them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from . import common
from .common import ROOT, log
from .stored import compact, dump

SECTIONS = ("engine", "coldstart", "ingest", "cost", "flow", "precision", "burst", "synth", "suite", "load", "kit",
            "targets", "scale", "https", "redrive", "groups", "deployed")

FULL = {
    "engine": {"repeats": 3, "n": 150, "ceiling_s": 3.0, "idle_s": 20.0, "soak_s": 600.0, "soak_every_s": 30.0},
    "precision": {"repeats": 3, "n": 300, "span_s": 20.0, "mixed_repeats": 1},
    "burst": {"repeats": 3, "sizes": [1000, 10_000], "lead_s": 10.0, "cap_s": {"1000": 20.0, "10000": 60.0}},
    "ingest": {"repeats": 3, "n": 300},
    "cost": {"n": 100, "n_long_slow": 30, "payload_n": 40},
    "coldstart": {"repeats": 5},
    "synth": {"repeats": 3},
    "suite": {"repeats": 1, "loaded": 3},
    "load": {"repeats": 2, "n": 10_000},
    "kit": {"repeats": 15, "workload_repeats": 3},
    "targets": {"n": 300, "span_s": 20.0},
    "scale": {"bursts": [100_000, 1_000_000], "raised_burst": 1_000_000, "rates": [1, 10, 100, 1000], "poisson_s": 60.0,
              "periodic_n": 1_000_000, "periodic_s": 30.0, "create_rates": [1000, 10_000, 50_000], "create_s": 10.0,
              "waiting_n": 10_000_000},
    "https": {"n": 100, "threads": 10, "repeats": 200},
    "redrive": {"messages": 500, "repeats": 3},
    "groups": {"sizes": [1000], "repeats": 1, "watched": [10_000], "watch_s": 60.0, "seeded": [100_000]},
    "flow": {"repeats": 3, "workloads": [{"limited": 1000, "limits": {"rate": 50, "maxInFlight": 5}},
                                         {"limited": 200, "limits": {"rate": 20, "maxInFlight": 4}}],
             "free_every_s": 0.4,
             "cost": {"idle_n": 100, "idle_every_s": 0.2, "backlog_n": 200, "rate": 20, "max_in_flight": 4, "groups": 4},
             "simulation": {"n": 1_000_000, "rate": 1000, "grouped_n": 1_000_000, "big": 900_000, "small_groups": 99,
                            "group_rate": 50, "horizon_s": 1200.0, "events": 25_000_000,
                            "beside": {"n": 200_000, "free_every_s": 0.4, "free_for_s": 120.0}}},
    "deployed": {},  # measures nothing: its reports come from --check-report
}
QUICK = {
    "engine": {"repeats": 1, "n": 40, "ceiling_s": 1.0, "idle_s": 5.0, "soak_s": 20.0, "soak_every_s": 5.0},
    "precision": {"repeats": 1, "n": 80, "span_s": 8.0, "mixed_repeats": 1},
    "burst": {"repeats": 1, "sizes": [500], "lead_s": 6.0, "cap_s": 10.0, "capacity_s": 1.0},
    "ingest": {"repeats": 1, "n": 30},
    "cost": {"n": 10, "n_long_slow": 3, "payload_n": 10, "payload_paths": ["short"], "payload_labels": ["64KB"],
             "cancel_n": 3, "levels": ["sparse", "heavy"]},
    "coldstart": {"repeats": 3},
    "synth": None,
    "suite": {"repeats": 1, "paths": ["tests/unit/test_timeparse.py"], "loaded": 1},
    "load": {"repeats": 1, "n": 1000},
    "kit": {"repeats": 3, "workload_repeats": 1},
    "targets": {"n": 40, "span_s": 5.0},
    "scale": {"bursts": [10_000], "raised_burst": 10_000, "rates": [1, 100], "poisson_s": 10.0, "periodic_n": 60_000,
              "periodic_s": 5.0, "create_rates": [1000], "create_s": 2.0, "waiting_n": 10_000_000},
    "https": {"n": 100, "threads": 10, "repeats": 30},
    "redrive": {"messages": 50, "repeats": 1},
    "groups": {"sizes": [200], "repeats": 1, "watched": [500], "watch_s": 5.0, "seeded": [2000]},
    "flow": {"repeats": 1, "workloads": [{"limited": 100, "limits": {"rate": 20, "maxInFlight": 4}}], "free_every_s": 0.4,
             "cost": {"idle_n": 20, "idle_every_s": 0.2, "backlog_n": 40, "rate": 20, "max_in_flight": 4, "groups": 4},
             "simulation": {"n": 20_000, "rate": 1000, "grouped_n": 20_000, "big": 18_000, "small_groups": 99,
                            "group_rate": 50, "horizon_s": 120.0,
                            "beside": {"n": 20_000, "free_every_s": 0.4, "free_for_s": 30.0}}},
    "deployed": {},
}


def _git() -> dict:
    import subprocess

    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    return {"commit": run("rev-parse", "--short", "HEAD"),
            "runtime_or_engine_modified": bool(run("status", "--porcelain", "--", "lambda", "src"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat: a smoke run, not figures to quote")
    parser.add_argument("--only", help=f"comma-separated sections out of {','.join(SECTIONS)}")
    parser.add_argument("--out", type=Path, help="output directory (default docs/, or bench/.quick/ with --quick)")
    parser.add_argument("--report-only", action="store_true", help="re-render markdown and plots from the JSON")
    parser.add_argument("--check-report", action="append", type=Path, default=[], metavar="FILE",
                        help="a report of `cdk-delayed-scheduler check --json` against a deployed stack, recorded by "
                             "the deployed section (repeatable); without it, that section keeps the runs it holds")
    args = parser.parse_args(argv)
    out_dir = args.out or (ROOT / "bench" / ".quick" if args.quick else ROOT / "docs")
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "benchmarks.json"

    from . import render

    if args.report_only:
        data = json.loads(json_path.read_text())
        render.write(data, out_dir)
        log(f"wrote {out_dir / 'benchmarks.md'}")
        return 0

    sizes = QUICK if args.quick else FULL
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if args.check_report and "deployed" not in only:
        parser.error("--check-report needs the deployed section (--only deployed)")
    from . import deployed

    try:
        check_reports = [deployed.read(path) for path in args.check_report]
    except ValueError as exc:
        parser.error(str(exc))
    on_disk = json.loads(json_path.read_text()) if json_path.exists() else {}
    data: dict = dict(on_disk) if args.only else {}  # with --only, keep the other sections' figures
    data.update(
        quick=args.quick,
        started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        machine=common.machine(),
        git=_git(),
        sizes=sizes,
    )
    t0 = time.monotonic()
    for section in SECTIONS:
        if section not in only or sizes.get(section) is None:
            continue
        params = sizes[section]
        if section == "deployed":  # runs measured on AWS: the new reports, and those recorded before
            params = {**params, "reports": check_reports, "kept": on_disk.get("deployed")}
        module = __import__(f"bench.{section}", fromlist=["run"])
        data["machine_speed"] = common.loop_seconds()  # the reference the section's figures are read against
        data.setdefault("section_loop_s", {})[section] = data["machine_speed"]["median_s"]
        log(f"{section}: machine speed, a pure-Python loop of 10 million additions: "
            f"{data['machine_speed']['median_s']:.2f} s (median of 3)")
        started = time.monotonic()
        import os

        load_before = os.getloadavg()
        data.setdefault("section_started_utc", {})[section] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        modified = data["git"].get("runtime_or_engine_modified") and section != "suite"  # the suite runs a clone
        data.setdefault("section_git", {})[section] = f"{data['git'].get('commit')}{'+' if modified else ''}"
        try:
            data[section] = compact(section, module.run(**params))
        except Exception as exc:  # noqa: BLE001 - one broken section must not lose the others
            import traceback

            traceback.print_exc()
            data[section] = {"failed": f"{type(exc).__name__}: {exc}"}
        data.setdefault("section_seconds", {})[section] = time.monotonic() - started
        # other work on the shared machine shows up here (2 cores: a load above 2 means queueing)
        data.setdefault("load_average_1min", {})[section] = {"before": load_before[0], "after": os.getloadavg()[0]}
        data = _save(json_path, data, section, merge=bool(args.only))
    data["total_seconds"] = time.monotonic() - t0
    data["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    json_path.write_text(dump(data))
    render.write(data, out_dir)
    log(f"wrote {json_path}, {out_dir / 'benchmarks.md'} and plots in {data['total_seconds']:.0f} s")
    return 0


#: The per-section entries of the JSON: each run writes only its own sections' keys in them.
PER_SECTION = ("section_started_utc", "section_git", "section_loop_s", "section_seconds", "load_average_1min")


def _save(json_path: Path, data: dict, section: str, merge: bool) -> dict:
    """Write ``data`` with ``section`` just run; with ``merge`` (an ``--only`` run), over the figures on disk as
    they are now, so that a run of other sections that ended meanwhile keeps its own (each run read the file when it
    started). The merged data, which the run goes on with."""
    if merge and json_path.exists():
        on_disk = json.loads(json_path.read_text())
        on_disk.update({key: value for key, value in data.items() if key not in (*PER_SECTION, *SECTIONS)})
        on_disk[section] = data[section]
        for key in PER_SECTION:
            on_disk.setdefault(key, {})[section] = data[key][section]
        data = on_disk
    json_path.write_text(dump(data))
    return data


if __name__ == "__main__":
    raise SystemExit(main())
