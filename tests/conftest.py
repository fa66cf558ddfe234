"""Suite-wide settings: no test reaches beyond 127.0.0.1, and boto3 never finds real credentials.

The suite's chaos run (``tests/e2e/test_chaos_e2e.py``) spends most of its minute waiting for retries,
on about a fifth of a core. The controlling pytest process starts it when the session begins, as a
user runs it (the console script), so that its waits overlap the other modules; its module then
reads the report. Run alone (or if the controller did not start it), the module runs it itself.
"""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

# Rates raised for the rarer opportunities (batch sends, dispatcher requests, target calls), so that each
# kind is expected at least about eight times in a run this small.
SUITE_FAULTS = ("all=0.03,batch-fail=0.25,batch-partial=0.25,crash=0.012,lambda-throttle=0.08,target-error=0.05,"
                "target-timeout=0.04")
SUITE_CHAOS_ARGS = ["--timers", "150", "--span", "6", "--faults", SUITE_FAULTS, "--seed", "3", "--json"]
CHAOS_REPORT_ENV = "CDK_DELAYED_SCHEDULER_SUITE_CHAOS_REPORT"
CHAOS_MODULE = Path(__file__).parent / "e2e" / "test_chaos_e2e.py"
_started: list = []


def chaos_command(report: Path) -> list[str]:
    """The suite's chaos run: its output goes to ``report`` (renamed into place once it ends), its exit
    code to ``report`` + ``.rc``."""
    script = Path(sys.executable).with_name("cdk-delayed-scheduler")
    run = " ".join([str(script), "chaos", *SUITE_CHAOS_ARGS])
    return ["sh", "-c", f"{run} > '{report}.part' 2>&1; echo $? > '{report}.rc'; mv '{report}.part' '{report}'"]


def _selects(config, module: Path) -> bool:
    paths = [Path(str(arg).split("::")[0]).resolve() for arg in config.args] or [Path.cwd()]
    return any(module == path or path in module.parents for path in paths)


def pytest_configure(config):
    if hasattr(config, "workerinput") or CHAOS_REPORT_ENV in os.environ or not _selects(config, CHAOS_MODULE.resolve()):
        return
    report = Path(tempfile.mkdtemp(prefix="suite-chaos-")) / "report.txt"
    os.environ[CHAOS_REPORT_ENV] = str(report)  # the workers, started after this, inherit it
    _started.append(subprocess.Popen(chaos_command(report), start_new_session=True))


def pytest_unconfigure(config):
    for process in _started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
