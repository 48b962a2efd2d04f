"""Session profiles against the sample site's consent and login hosts, over real HTTP.

A profile's consent and login posts run once per domain; their cookies open the gated pages,
persist in a 0600 file for the next fetcher, and are posted again when the site forgets them. A
refused login fails the fetch with a reason that names the fields, never their values.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.backends.profiled import ProfiledBackend
from dualplane.control_plane.fetcher.profiles import Profile, match
from dualplane.control_plane.fetcher.sessions import FormStep, SessionFailed, SessionJars
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.core.web.urls import domain_of
from dualplane.sample_site import SampleSite, SiteSpec
from dualplane.sample_site.sessions import PASSWORD, REGION, USER

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

CONSENT, LOGIN = 0, 2
SPEC = SiteSpec(
    seed=3, hosts=3, pages_per_host=4, latency_ms=0, consent_hosts=(CONSENT,), login_hosts=(LOGIN,)
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def site() -> Iterator[SampleSite]:
    with SampleSite(SPEC) as running:
        yield running


class Book:
    def __init__(self, *profiles: Profile) -> None:
        self.profiles = profiles

    def match(self, domain: str) -> Profile | None:
        return match(self.profiles, domain)

    def close(self) -> None:
        pass


def backend(site: SampleSite, jars: SessionJars, password: str = PASSWORD) -> ProfiledBackend:
    origin = site.spec.origin
    profiles = Book(
        Profile("region", (domain_of(origin(CONSENT)),), consent=FormStep("/consent", {"region": REGION})),
        Profile("members", (domain_of(origin(LOGIN)),),
                login=FormStep("/login", {"user": USER, "password": password}, secret=True)),
    )  # fmt: skip
    direct = DirectBackend(SsrfGuard.from_setting("127.0.0.1"))
    return ProfiledBackend(direct, direct, profiles, lambda: None, sessions=jars)  # type: ignore[arg-type,return-value]


def request(url: str) -> FetchRequest:
    return FetchRequest(
        url=url, user_agent="ours", connect_timeout_s=5, read_timeout_s=5, max_bytes=1_000_000
    )


def product(site: SampleSite, host: int, index: int = 0) -> str:
    return [p.url for p in site.truth().products if p.url.startswith(site.spec.origin(host) + "/")][index]


def posts(site: SampleSite, host: int) -> int:
    return sum(1 for entry in site.log(host) if entry.method == "POST")


async def test_consent_and_login_open_the_gated_pages_once_per_domain_and_persist(
    site: SampleSite, tmp_path: Path
) -> None:
    jars_file = tmp_path / "sessions.json"
    fetching = backend(site, SessionJars(jars_file))
    before = posts(site, CONSENT), posts(site, LOGIN)
    answers = [
        await fetching.fetch(request(product(site, host, i))) for host in (CONSENT, LOGIN) for i in (0, 1)
    ]
    await fetching.aclose()

    assert [a.status for a in answers] == [200] * 4
    assert all(a.final_url == a.url and b'class="price-box"' in a.body for a in answers)
    assert (posts(site, CONSENT), posts(site, LOGIN)) == (before[0] + 1, before[1] + 1)
    assert stat.S_IMODE(jars_file.stat().st_mode) == 0o600
    assert PASSWORD not in jars_file.read_text()

    # Another fetcher process on this machine: the jars are read back, nobody signs in again.
    again = backend(site, SessionJars(jars_file))
    answer = await again.fetch(request(product(site, LOGIN, 1)))
    await again.aclose()
    assert answer.status == 200 and answer.final_url == answer.url
    assert posts(site, LOGIN) == before[1] + 1


async def test_a_forgotten_session_signs_in_again_and_a_refused_login_names_no_secret(
    site: SampleSite, tmp_path: Path
) -> None:
    jars_file = tmp_path / "sessions.json"
    fetching = backend(site, SessionJars(jars_file))
    await fetching.fetch(request(product(site, LOGIN)))
    jars_file.write_text(jars_file.read_text().replace("s-7f3a9c", "expired"))  # the site no longer knows it
    stale = backend(site, SessionJars(jars_file))
    before = posts(site, LOGIN)
    answer = await stale.fetch(request(product(site, LOGIN, 1)))
    after = posts(site, LOGIN)

    refused = backend(site, SessionJars(), password="wrong-guess")
    with pytest.raises(SessionFailed) as failure:
        await refused.fetch(request(product(site, LOGIN)))
    for opened in (fetching, stale, refused):
        await opened.aclose()

    assert answer.status == 200 and answer.final_url == answer.url and after == before + 1
    assert "answered 400" in str(failure.value) and "--login-field" in str(failure.value)
    assert "wrong-guess" not in str(failure.value)


def test_login_values_never_show_and_env_values_stay_on_the_fetcher(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = Profile(
        "m", ("shop.example",), login=FormStep("/login", {"user": "ann", "password": "env:PW"}, True)
    )
    monkeypatch.setenv("PW", "from-the-environment")

    assert profile.public()["login"] == {"path": "/login", "fields": {"user": "***", "password": "***"}}
    assert (
        Profile.from_json(profile.to_json()) == profile and b"from-the-environment" not in profile.to_json()
    )
    assert profile.login is not None and profile.login.form()["password"] == "from-the-environment"
