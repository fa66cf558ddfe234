"""Snapshot check for the integration tests, for when integ-runner cannot read the assembly.

integ-runner 2.197.10 (the newest on npm) bundles a toolkit that reads cloud assembly
schema 53 at most, while aws-cdk-lib 2.275 writes schema 55, so integ-runner stops with
"Cloud assembly schema version mismatch" before comparing anything. Until it catches up,
this script does what its snapshot mode does, offline: synthesize each ``integ_*.py`` with
integ-runner's test environment and compare every template, and the integ manifest's test
cases, with the committed ``<test>.snapshot/`` (asset hashes ignored: ``diff_assets=False``).

    python integ/snapshot.py            # exit 1 and print the differences when stale
    python integ/snapshot.py --update   # rewrite the snapshots (``npm run integ:snapshot-update``)

Every test is synthesized in one child process, one after the other (each test's app writes where
``CDK_OUTDIR`` says when it is made: ``harness.new_app()``), so Python, jsii and aws-cdk-lib load once:
about 2 s a test after the first, against 12-16 s for a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")
# The environment integ-runner gives a test app (DEFAULT_SYNTH_OPTIONS.env in integ-runner).
INTEG_ENV = {
    "CDK_INTEG_ACCOUNT": "12345678",
    "CDK_INTEG_REGION": "test-region",
}


def tests(names: list[str] | None = None) -> list[Path]:
    found = sorted(HERE.glob("integ_*.py"))
    return [t for t in found if not names or t.name in names or t.stem in names]


def snapshot_dir(test: Path) -> Path:
    return test.with_name(f"{test.name}.snapshot")


def synth(selected: list[Path], root: Path) -> dict[Path, Path]:
    """Synthesize the ``selected`` tests in one child process: each test's assembly, under ``root``."""
    env = {**os.environ, **INTEG_ENV, "CDK_CONTEXT_JSON": "{}"}
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    result = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--synth-into", str(root),
                             *(t.name for t in selected)], cwd=HERE, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"synthesizing {[t.name for t in selected]} failed:\n{result.stderr[-4000:]}")
    return {test: root / test.name for test in selected}


def _synth_here(root: Path, names: list[str]) -> None:
    """The child's part: run each test as integ-runner would (``python <test>``), its assembly in ``root/<test>``."""
    sys.path.insert(0, str(HERE))
    for name in names:
        os.environ["CDK_OUTDIR"] = str(root / name)
        try:
            runpy.run_path(str(HERE / name), run_name="__main__")
        except Exception as error:
            raise RuntimeError(f"synthesizing {name} failed") from error


def _normalized(path: Path) -> object:
    data = json.loads(_ASSET_HASH.sub("<asset-hash>", path.read_text()))
    for resource in (data.get("Resources") or {}).values() if isinstance(data, dict) else ():
        # An assertion's `salt` is the synthesis time, there to make it run on every deploy.
        if str(resource.get("Type", "")).startswith("Custom::DeployAssert") and "salt" in resource.get("Properties", {}):
            resource["Properties"]["salt"] = "<salt>"
    return data


def comparable(assembly: Path) -> dict[str, object]:
    """What a snapshot check compares: every template, and the test cases of integ.json."""
    out: dict[str, object] = {p.name: _normalized(p) for p in sorted(assembly.glob("*.template.json"))}
    integ = assembly / "integ.json"
    if integ.exists():
        out["integ.json#testCases"] = _normalized(integ).get("testCases")
    return out


def differences(expected: dict[str, object], actual: dict[str, object]) -> list[str]:
    """Human-readable differences between two ``comparable()`` results (empty when equal)."""
    diffs = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual:
            diffs.append(f"{name}: in the snapshot, no longer synthesized")
        elif name not in expected:
            diffs.append(f"{name}: synthesized, missing from the snapshot")
        elif expected[name] != actual[name]:
            diffs.extend(f"{name}: {line}" for line in _diff(expected[name], actual[name]))
    return diffs


def _diff(a: object, b: object, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        lines = []
        for key in sorted(set(a) | set(b)):
            if key not in b:
                lines.append(f"{where}/{key}: removed")
            elif key not in a:
                lines.append(f"{where}/{key}: added")
            else:
                lines.extend(_diff(a[key], b[key], f"{where}/{key}"))
        return lines
    if a != b:
        return [f"{where}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}"]
    return []


def check(selected: list[Path]) -> dict[str, list[str]]:
    """Each selected test's differences from its committed snapshot (an empty list: current)."""
    with tempfile.TemporaryDirectory(prefix="integ-snapshot-") as tmp:
        actual = {test: comparable(assembly) for test, assembly in synth(selected, Path(tmp)).items()}
    found = {}
    for test in selected:
        snapshot = snapshot_dir(test)
        found[test.name] = (differences(comparable(snapshot), actual[test]) if snapshot.is_dir()
                            else [f"{snapshot.name}: no snapshot; run `python integ/snapshot.py --update`"])
    return found


def update(selected: list[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="integ-snapshot-") as tmp:
        for test, assembly in synth(selected, Path(tmp)).items():
            snapshot = snapshot_dir(test)
            if snapshot.exists():
                shutil.rmtree(snapshot)
            # Like integ-runner, keep the assembly without the staged asset folders.
            shutil.copytree(assembly, snapshot,
                            ignore=shutil.ignore_patterns("asset.*", "cdk.out", "validation-report.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots")
    parser.add_argument("--synth-into", type=Path, help=argparse.SUPPRESS)  # the child process of synth()
    parser.add_argument("tests", nargs="*", help="test files (default: every integ_*.py)")
    args = parser.parse_args(argv)
    if args.synth_into:
        _synth_here(args.synth_into, args.tests)
        return 0
    selected = tests(args.tests)
    if args.update:
        update(selected)
        print("\n".join(f"updated {snapshot_dir(test).name}" for test in selected))
        return 0
    stale = 0
    for name, diffs in check(selected).items():
        print(f"{'STALE' if diffs else 'ok   '} {name}")
        for line in diffs[:50]:
            print(f"    {line}")
        stale += bool(diffs)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
