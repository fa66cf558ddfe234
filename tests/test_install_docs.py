"""The pages a user reads before installing agree with what the package is: the PyPI page
(``docs/pypi.md``) names every target kind, every extra and the testing kit; ``docs/installing.md``
counts the extras as pyproject.toml declares them, lists the moto services the ``local`` extra
installs, and says which installer its sizes were measured with."""

from __future__ import annotations

import re
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency there reads TOML the same way
    import tomli as tomllib  # type: ignore[no-redef]
from pathlib import Path

from cdk_delayed_scheduler._contract import contract

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]
#: How the pages name each kind of target (``contract.json``'s ``targetTypes``).
TARGET_KINDS = {"lambda": "Lambda function", "sqs": "SQS queue", "sns": "SNS topic", "eventbridge": "EventBridge bus",
                "stepfunctions": "Step Functions state machine", "https": "HTTPS endpoint"}
#: How the pages name each moto service (an extra of the ``moto`` requirement).
MOTO_SERVICES = {"dynamodb": "DynamoDB", "dynamodbstreams": "DynamoDB Streams", "sqs": "SQS", "sns": "SNS",
                 "events": "EventBridge", "stepfunctions": "Step Functions", "secretsmanager": "Secrets Manager"}
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five"}


def _one_line(markdown: str) -> str:
    return " ".join(markdown.split())


def _moto_extras() -> list[str]:
    (moto,) = [r for r in EXTRAS["local"] if r.startswith("moto[")]
    return re.fullmatch(r"moto\[([a-z,]+)\].*", moto).group(1).split(",")


def test_the_pypi_page_names_every_target_kind_every_extra_and_the_testing_kit():
    assert set(TARGET_KINDS) == set(contract.TARGET_TYPES)
    page = (ROOT / PROJECT["readme"]).read_text(encoding="utf-8")
    opening = _one_line(page.split("\n\n")[1])
    assert [kind for kind, name in TARGET_KINDS.items() if name not in opening] == [], opening
    assert [extra for extra in EXTRAS if f"pip install 'cdk-delayed-scheduler[{extra}]'" not in page] == []
    assert "`cdk_delayed_scheduler.testing`" in page and "docs/testing.md" in page


def test_the_readme_names_every_target_kind():
    opening = _one_line((ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")[1])
    assert [kind for kind, name in TARGET_KINDS.items() if name not in opening] == [], opening


def test_installing_counts_the_extras_and_has_an_install_line_for_each():
    page = (ROOT / "docs" / "installing.md").read_text(encoding="utf-8")
    assert f"with {NUMBERS[len(EXTRAS)]} extras" in page
    assert [extra for extra in EXTRAS if f"pip install 'cdk-delayed-scheduler[{extra}]'" not in page] == []


def test_installing_lists_the_moto_services_the_local_extra_installs():
    page = (ROOT / "docs" / "installing.md").read_text(encoding="utf-8")
    assert set(_moto_extras()) == set(MOTO_SERVICES)
    (row,) = [line for line in page.splitlines() if line.startswith("|") and "cdk-delayed-scheduler[local]'" in line]
    listed = row.split("moto's", 1)[1]
    assert [name for name in MOTO_SERVICES.values() if name not in listed] == [], row
    assert f"`moto[{','.join(_moto_extras())}]`" in page  # the extra's requirement, as the page explains it
    for distribution in ("boto3", "Flask", "flask-cors", "rich"):
        assert distribution in row


def test_installing_says_its_sizes_are_uvs_and_gives_pips():
    page = (ROOT / "docs" / "installing.md").read_text(encoding="utf-8")
    header = next(line for line in page.splitlines() if line.startswith("| where |"))
    assert header.rstrip(" |").endswith("fresh venv, uv"), header
    assert "made with uv, not pip" in page
    assert re.search(r"pip \(`python -m venv`.*?`\[cdk\]` in \d+ MB, `\[local\]` in \d+ MB", _one_line(page))
