"""Shop hosts a crawler must talk to first: a consent page, and a login (``SiteSpec.consent_hosts``,
``SiteSpec.login_hosts``), as many real shops have.

- A **consent host** answers every page with a redirect to ``/consent`` until the request carries
  the ``region`` cookie; the consent form (``POST /consent``, field ``region``) sets it. Only the
  host's own region (``REGION``) gives its products' prices in the host's currency; any other
  answer is refused (400), as a shop that does not sell there.
- A **login host** sends product pages to ``/login`` until the request carries the ``session``
  cookie of a signed-in shopper; ``POST /login`` with ``USER`` and ``PASSWORD`` sets it.

robots.txt, the home page and static files stay open, so a crawl finds its way in.
"""

from __future__ import annotations

from collections.abc import Mapping

from dualplane.sample_site.spec import SiteSpec

REGION = "de"
USER, PASSWORD = "shopper", "sample-site-password"
SESSION = "s-7f3a9c"  # the signed-in shopper's session cookie
OPEN_PATHS = ("/robots.txt", "/static/", "/images/", "/consent", "/login")


def gate(spec: SiteSpec, host: int, path: str, cookies: Mapping[str, str]) -> str | None:
    """Where a GET of ``path`` is sent instead of being answered (a redirect target), or None."""
    if path == "/" or path.startswith(OPEN_PATHS):
        return None
    if host in spec.consent_hosts and cookies.get("region") != REGION:
        return f"/consent?next={path}"
    if host in spec.login_hosts and path.startswith("/product/") and cookies.get("session") != SESSION:
        return f"/login?next={path}"
    return None


def post(spec: SiteSpec, host: int, path: str, form: Mapping[str, str]) -> tuple[int, dict[str, str]]:
    """The answer to a form post: a 303 to ``/`` setting the cookie, or 400 / 404."""
    if path == "/consent" and host in spec.consent_hosts:
        if form.get("region") != REGION:
            return 400, {}
        return 303, {"Location": "/", "Set-Cookie": f"region={REGION}; Path=/; SameSite=Lax"}
    if path == "/login" and host in spec.login_hosts:
        if (form.get("user"), form.get("password")) != (USER, PASSWORD):
            return 400, {}
        return 303, {"Location": "/", "Set-Cookie": f"session={SESSION}; Path=/; HttpOnly"}
    return 404, {}


def form_page(path: str) -> str:
    """The consent or login page a gated request is sent to."""
    if path == "/consent":
        fields = f'<select name="region"><option value="{REGION}">Deutschland</option></select>'
    else:
        fields = '<input name="user"> <input name="password" type="password">'
    return (
        f'<!doctype html><html><body><form method="post" action="{path}">{fields}'
        '<button type="submit">Continue</button></form></body></html>'
    )
