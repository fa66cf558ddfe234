"""The functions' asset: the runtime and the ``tzdata`` package, so that cron schedules find their
time zones on a Lambda image without ``/usr/share/zoneinfo``; staged once per content, so the asset
hash is stable."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler import _runtime_asset
from cdk_delayed_scheduler._runtime_asset import runtime_asset_path

pytestmark = pytest.mark.slow

#: Weekdays at 09:00 in Paris. After Friday 2026-03-27 12:00 UTC the next one is Monday the 30th,
#: the day after the clocks went forward: 09:00 CEST is 07:00 UTC (it would be 08:00 in winter).
CRON, ZONE = "0 9 ? * MON-FRI *", "Europe/Paris"
AFTER = dt.datetime(2026, 3, 27, 12, tzinfo=dt.timezone.utc)
EXPECTED = dt.datetime(2026, 3, 30, 7, tzinfo=dt.timezone.utc)

#: Run in ``python -I -S -B`` (no site-packages, no user site, PYTHON* variables ignored, no bytecode
#: written into the asset): only the standard library and ``argv[1]`` on ``sys.path``, and no system
#: zone files (``reset_tzpath``: ``-I`` ignores PYTHONTZPATH, so the search path is emptied here too).
PROBE = """
import json, sys, zoneinfo
sys.path[:] = [sys.argv[1]] + [p for p in sys.path if "-packages" not in p]
zoneinfo.reset_tzpath(to=[])
from scheduler_runtime.core.cron import parse, zone_of
try:
    import tzdata
    where = tzdata.__file__
except ImportError:
    where = None
try:
    answer = {"next": parse(sys.argv[2]).next_after(int(sys.argv[4]), zone_of(sys.argv[3]))}
except Exception as exc:
    answer = {"error": f"{type(exc).__name__}: {exc}"}
print(json.dumps({"tzdata": where, "tzpath": list(zoneinfo.TZPATH), **answer}))
"""


def _synth(outdir: Path) -> tuple[Path, str]:
    """A scheduler's stack synthesized into ``outdir``: (its functions' asset directory, the S3 key)."""
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Asset")
    DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Deliveries")))
    app.synth()
    template = json.loads((outdir / "Asset.template.json").read_text())
    keys = {r["Properties"]["Code"]["S3Key"] for r in template["Resources"].values()
            if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"].startswith("scheduler_runtime.")}
    (key,) = keys  # one asset for the four functions
    return outdir / f"asset.{key.removesuffix('.zip')}", key


@pytest.fixture(scope="module")
def asset(tmp_path_factory) -> tuple[Path, str]:
    return _synth(tmp_path_factory.mktemp("asset-cdk-out"))


def _probe(code_dir: Path) -> dict:
    ms = int(AFTER.timestamp() * 1000)
    result = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", PROBE, str(code_dir), CRON, ZONE, str(ms)],
                            env={"PYTHONTZPATH": ""}, capture_output=True, text=True, timeout=60, cwd=code_dir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_asset_holds_the_runtime_and_the_zone_files_and_no_caches(asset):
    directory, _ = asset
    shipped = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    assert {"scheduler_runtime/handlers/api.py", "scheduler_runtime/core/cron.py", "scheduler_runtime/contract.json",
            "tzdata/__init__.py", "tzdata/zoneinfo/Europe/Paris", "tzdata/zoneinfo/UTC"} <= shipped
    assert not [p for p in shipped if "__pycache__" in p or p.endswith(".pyc") or "/tests/" in p]
    package = runtime_asset_path() / "scheduler_runtime"
    runtime = {f"scheduler_runtime/{p.relative_to(package).as_posix()}" for p in package.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
               and not any(part.startswith(".") for part in p.relative_to(package).parts[:-1])}
    assert {p for p in shipped if not p.startswith("tzdata/")} == runtime  # the runtime, as it is, beside tzdata


def test_caches_and_folders_beside_the_runtime_package_never_ship(tmp_path, monkeypatch):
    """What a type checker or a test tool leaves in the runtime's directory (``lambda/.mypy_cache``,
    ``.hypothesis``, a cache inside the package) is not part of the asset: the asset stays what the wheel
    ships, so its hash is the same installed and in a checkout."""
    root = tmp_path / "lambda"
    for name in ("scheduler_runtime/__init__.py", "scheduler_runtime/core/cron.py", "scheduler_runtime/contract.json",
                 ".mypy_cache/3.11/cache.db", ".hypothesis/examples/x", "scheduler_runtime/.mypy_cache/c.json",
                 "scheduler_runtime/core/__pycache__/cron.cpython-311.pyc", "scheduler_runtime/tests/test_x.py",
                 "notes/readme.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    monkeypatch.setattr(_runtime_asset, "runtime_asset_path", lambda: root)
    runtime = {name for name in _runtime_asset._asset_files() if not name.startswith("tzdata/")}
    assert runtime == {"scheduler_runtime/__init__.py", "scheduler_runtime/core/cron.py",
                       "scheduler_runtime/contract.json"}


def test_cron_finds_its_zone_in_the_asset_alone(asset):
    """With nothing but the standard library and the asset on ``sys.path``, and no zone files on the
    machine's search path, ``zoneinfo`` reads Europe/Paris from the shipped ``tzdata``."""
    directory, _ = asset
    answer = _probe(directory)
    assert answer["tzpath"] == []
    assert answer["tzdata"] == str(directory / "tzdata" / "__init__.py")
    assert answer.get("next") == int(EXPECTED.timestamp() * 1000), answer


def test_without_the_shipped_tzdata_the_zone_is_not_found():
    """The same probe on the runtime alone (no ``tzdata`` beside it) cannot find Europe/Paris: the
    asset's copy is what makes the previous test pass."""
    answer = _probe(runtime_asset_path())
    assert answer["tzdata"] is None and answer["tzpath"] == []
    assert "next" not in answer and "timeZone must be an IANA time zone name" in answer["error"], answer


def test_the_asset_hash_is_stable_across_stagings(asset, tmp_path, monkeypatch):
    """A fresh staging (another temp dir, new files and times) gives the same asset hash: it depends on
    the shipped files alone. And a staging is reused, not rebuilt, by the next synth."""
    first_dir, first_key = asset
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    _runtime_asset.function_asset_path.cache_clear()
    try:
        staged = _runtime_asset.function_asset_path()
        assert staged.parent == tmp_path / "elsewhere"
        second_dir, second_key = _synth(tmp_path / "second")
        assert second_key == first_key
        _runtime_asset.function_asset_path.cache_clear()
        marker = staged / "tzdata" / "zones"
        reused_at = marker.stat().st_mtime_ns
        assert _runtime_asset.function_asset_path() == staged and marker.stat().st_mtime_ns == reused_at
    finally:
        _runtime_asset.function_asset_path.cache_clear()


def test_an_incomplete_staging_is_staged_again(tmp_path, monkeypatch):
    """A temp-dir cleaner that removed part of an old staging does not leave the asset short of files."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _runtime_asset.function_asset_path.cache_clear()
    try:
        staged = _runtime_asset.function_asset_path()
        (staged / "tzdata" / "zoneinfo" / "Europe" / "Paris").unlink()
        _runtime_asset.function_asset_path.cache_clear()
        assert _runtime_asset.function_asset_path() == staged
        assert (staged / "tzdata" / "zoneinfo" / "Europe" / "Paris").is_file()
        assert [p.name for p in tmp_path.iterdir()] == [staged.name]  # no partial or stale copies left
    finally:
        _runtime_asset.function_asset_path.cache_clear()
