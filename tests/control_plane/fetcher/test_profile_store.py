"""Profiles in their compacted topic: a running view follows set and delete; the CLI hides header values."""

from __future__ import annotations

import time

import pytest

from dualplane.brokers.amqp.consumer import wait_for
from dualplane.control_plane.fetcher import profile_store
from dualplane.control_plane.fetcher.profiles import Profile
from tests.support.cli import run_cli
from tests.support.factories import ControlPlaneFactory

pytestmark = pytest.mark.integration


def test_a_running_view_follows_profiles_set_and_deleted(control_plane: ControlPlaneFactory) -> None:
    settings = control_plane.settings()
    kafka, topic = settings.kafka, settings.topics.profiles
    profile_store.put(kafka, topic, Profile("shops", ("*.shop.example",), backend="browser"))
    view = profile_store.ProfileView(kafka, topic)
    view.start()
    try:
        assert (found := view.match("eu.shop.example")) is not None and found.backend == "browser"

        profile_store.put(kafka, topic, Profile("eu", ("eu.shop.example",)))
        assert wait_for(lambda: _name(view, "eu.shop.example") == "eu", timeout_s=10, interval_s=0.1)
        profile_store.delete(kafka, topic, "eu")
        assert wait_for(lambda: _name(view, "eu.shop.example") == "shops", timeout_s=10, interval_s=0.1)
    finally:
        started = time.monotonic()
        view.close()
    assert time.monotonic() - started < 5
    assert set(profile_store.read_profiles(kafka, topic)) == {"shops"}


def test_the_cli_sets_lists_and_deletes_without_printing_header_values(
    control_plane: ControlPlaneFactory,
) -> None:
    env = control_plane.settings().to_env()

    made = run_cli(
        "profile", "set", "login", "--domain", "shop.example", "--header", "Cookie: session=s3cret",
        "--backend", "browser", "--wait-timeout", "15s", "--json", env=env,
    )  # fmt: skip
    listed = run_cli("profile", "list", "--json", env=env)
    bad = run_cli("profile", "set", "x", "--domain", "shop.example", "--backend", "cloud", env=env)
    deleted = run_cli("profile", "delete", "login", "--json", env=env)
    missing = run_cli("profile", "show", "login", env=env)

    assert made.exit_code == 0 and made.json()["profile"]["wait_s"] == 15, made.stderr
    assert listed.json()["profiles"][0]["headers"] == ["Cookie"]
    assert "s3cret" not in made.stdout + listed.stdout
    assert bad.exit_code == 2 and "backend must be direct, browser or api" in bad.stderr
    assert deleted.exit_code == 0 and missing.exit_code == 1 and "no profile 'login'" in missing.stderr


def _name(view: profile_store.ProfileView, domain: str) -> str | None:
    found = view.match(domain)
    return found.name if found else None


def test_the_cli_stores_consent_and_login_steps_and_never_prints_login_values(
    control_plane: ControlPlaneFactory,
) -> None:
    env = control_plane.settings().to_env()

    made = run_cli(
        "profile", "set", "members", "--domain", "shop.example", "--consent", "/consent", "--consent-field",
        "region=de", "--login", "/login", "--login-field", "user=ann-7q", "--login-field", "password=s3cret",
        "--json", env=env,
    )  # fmt: skip
    shown = run_cli("profile", "show", "members", env=env)
    orphan = run_cli("profile", "set", "x", "--domain", "shop.example", "--login-field", "user=ann", env=env)

    assert made.exit_code == 0, made.stderr
    assert made.json()["profile"]["login"] == {"path": "/login", "fields": {"user": "***", "password": "***"}}
    assert made.json()["profile"]["consent"] == {"path": "/consent", "fields": {"region": "de"}}
    assert "s3cret" not in made.stdout + shown.stdout + shown.stderr and "ann-7q" not in made.stdout
    assert orphan.exit_code == 2 and "give --login PATH" in orphan.stderr
