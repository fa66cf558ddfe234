"""Project definition. Owns pyproject.toml: edit this file, then run `./dev projen`."""

from projen.python import BuildSystem, PythonProject, UvOptions

NAME = "cdk-delayed-scheduler"

project = PythonProject(
    name=NAME,
    module_name="cdk_delayed_scheduler",
    version="0.1.0",
    description=(
        "AWS CDK construct for to-the-second one-shot timers at any horizon, "
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
        "aws-cdk-lib>=2.180.0,<3",
        "constructs>=10.0.0,<11",
    ],
    dev_deps=[
        "boto3>=1.34",
        "moto[server]>=5.1",
        "rich>=13",
        "pytest>=8",
        "pytest-randomly>=3.15",
        "mypy>=1.10",
        "cdk-nag>=3,<4",
        "cfn-lint>=1",
        "hatchling>=1.25",
        "uv>=0.5",
        "matplotlib>=3.8",
        "aws-cdk.integ-tests-alpha>=2.180.0a0,<3",
    ],
    uv_options=UvOptions(
        build_system=BuildSystem(requires=["hatchling>=1.25"], build_backend="hatchling.build"),
        project={
            "name": NAME,
            "requires_python": ">=3.10",
            "scripts": {"cdk-delayed-scheduler": "cdk_delayed_scheduler.local.cli:main"},
            "optional_dependencies": {"local": ["boto3>=1.34", "moto[server]>=5.1", "rich>=13"]},
        },
    ),
)

project.gitignore.exclude(
    "node_modules/", "cdk.out/", "dist/", "*.egg-info/", ".local-engine/", "/integ/**/cdk.out/",
    "bench/out/", ".ruff_cache/", ".pytest_cache/",
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
        # Random order is switched on once the suite is order-independent (issue 13).
        "addopts": "-p no:randomly",
        "pythonpath": ["src", "lambda"],
        "markers": [
            "e2e: end-to-end runs of the local engine (slow)",
            "slow: construct checks that synthesize, build a wheel, run the CDK CLI or deploy into moto (still run by default)",
        ],
        "filterwarnings": ["ignore::DeprecationWarning:jsii.*"],
    },
)

project.synth()
