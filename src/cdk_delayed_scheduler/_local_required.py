"""The local engine's dependencies, checked before an engine starts.

moto (with Flask, which its server is built on), boto3 and rich are the ``local`` extra
(``pip install 'cdk-delayed-scheduler[local]'``), so that application code installs the client and
the envelope type without them. The engine, the testing kit, ``cdk-delayed-scheduler local`` and
``demo`` check for them first and say what to install, before they start anything.
"""

from __future__ import annotations

import importlib.util

#: The ``local`` extra's distributions (a test compares them with pyproject.toml), and the module
#: each provides.
DISTRIBUTIONS = {"boto3": "boto3", "moto": "moto", "flask": "flask", "flask-cors": "flask_cors", "rich": "rich"}
#: What the engine itself imports (``rich`` draws the demo's progress and tables).
ENGINE = ("boto3", "moto", "flask", "flask-cors")
INSTALL = "pip install 'cdk-delayed-scheduler[local]'"


def require_local(what: str, needs: tuple[str, ...] = ENGINE) -> None:
    """Raise ModuleNotFoundError naming the ``local`` extra when a distribution of ``needs`` is missing."""
    missing = [name for name in needs if importlib.util.find_spec(DISTRIBUTIONS[name]) is None]
    if missing:
        raise ModuleNotFoundError(
            f"{what} needs the 'local' extra: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
            f"installed. Install it with {INSTALL}. The client (cdk_delayed_scheduler.client) needs none of it.",
            name=DISTRIBUTIONS[missing[0]])
