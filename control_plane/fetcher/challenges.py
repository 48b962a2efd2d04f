"""Bot-challenge and captcha page detectors: one table, one row per thing we recognise.

To recognise a new interstitial, add a row to :data:`DETECTORS` and a realistic snippet of it to
``tests/control_plane/fetcher/test_classify.py``. A row matches when every condition it sets holds:

- ``body``: a regex (bytes, written in lower case) found in the first :data:`SCAN_BYTES` of the body,
  lower-cased; ``hints``: literal pieces the regex cannot match without, the cheap test first (a
  page costs a lower-casing and a few substring scans, not a dozen regex scans: 3 ms -> 0.05 ms on a
  5 KiB page);
- ``headers``: for each (lower-case) header name, a regex found in its value;
- ``statuses``: the status is one of these;
- ``max_body_bytes``: the body is at most this long. Captcha widgets also sit on ordinary login
  and contact forms, so widget-only rows fire only on tiny pages, where the widget *is* the page.

Markers that also appear on normal pages of protected sites (Cloudflare's ``jsd`` bot script
under ``/cdn-cgi/challenge-platform/scripts/``, PerimeterX's ``_pxAppId`` sensor, DataDome's
``js.datadome.co`` tag) are deliberately not used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

SCAN_BYTES = 64 * 1024
# Real interstitials are a few KiB; ordinary pages with a captcha form are usually far larger.
TINY_PAGE_BYTES = 32 * 1024
BLOCKED_MARKER = "x-dualplane-blocked"
"""Header a backend sets when the block was detected upstream (e.g. by a scraping API)."""


def _re(pattern: str) -> re.Pattern[bytes]:
    """A body pattern, matched against the lower-cased body (so it must be written in lower case)."""
    if pattern != pattern.lower():
        raise ValueError(
            f"body patterns are matched against the lower-cased body; write {pattern!r} in lower case"
        )
    return re.compile(pattern.encode(), re.DOTALL)


def _header(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


@dataclass(frozen=True)
class Detector:
    """One recognisable challenge or block page; see the module docstring for the conditions."""

    name: str
    vendor: str
    body: re.Pattern[bytes] | None = None
    hints: tuple[bytes, ...] = ()
    headers: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    statuses: frozenset[int] | None = None
    max_body_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.body is not None and not self.hints:
            raise ValueError(f"detector {self.name!r} has a body pattern but no hints to test first")

    def matches(self, status: int, headers: Mapping[str, str], lowered: bytes) -> bool:
        """Whether this row matches; ``lowered`` is the body's first SCAN_BYTES, lower-cased."""
        if self.statuses is not None and status not in self.statuses:
            return False
        if self.max_body_bytes is not None and len(lowered) > self.max_body_bytes:
            return False
        for name, pattern in self.headers.items():
            if name not in headers or not pattern.search(headers[name]):
                return False
        if self.body is None:
            return True
        return any(hint in lowered for hint in self.hints) and self.body.search(lowered) is not None


def _tiny_page(name: str, vendor: str, body: str, *hints: bytes) -> Detector:
    """A row whose body marker is trusted only on a tiny page, where it *is* the page (a captcha
    widget, an interstitial's title): the same marker sits on ordinary forms and articles."""
    return Detector(name, vendor, body=_re(body), hints=hints, max_body_bytes=TINY_PAGE_BYTES)


DETECTORS: tuple[Detector, ...] = (
    # A backend (e.g. the scraping API adapter) already knows the request was blocked.
    Detector("upstream-marker", "dualplane", headers={BLOCKED_MARKER: _header(".")}),
    # Cloudflare labels every challenge response it serves with this header.
    Detector("cloudflare-mitigated", "Cloudflare", headers={"cf-mitigated": _header(r"\bchallenge\b")}),
    # Cloudflare managed/JS challenge page: its config object, its orchestrator script, and the
    # element ids of the older "I'm Under Attack" page.
    Detector(
        "cloudflare-challenge",
        "Cloudflare",
        body=_re(
            r"window\._cf_chl_opt|/cdn-cgi/challenge-platform/h/[bg]/orchestrate/"
            r"|id=[\"']cf-challenge-running|cf-browser-verification|cf_chl_prog"
        ),
        hints=(b"_cf_chl", b"challenge-platform", b"cf-challenge", b"cf-browser-verification"),
    ),
    # Cloudflare's "Attention Required!" captcha page and "Sorry, you have been blocked" WAF page.
    Detector(
        "cloudflare-block",
        "Cloudflare",
        body=_re(r"<title>\s*attention required! \| cloudflare|<div[^>]+id=[\"']cf-error-details"),
        hints=(b"attention required", b"cf-error-details"),
    ),
    # The interstitial's title alone, on a tiny page (other Cloudflare markers can be missing).
    _tiny_page("just-a-moment", "Cloudflare", r"<title>\s*just a moment\.\.\.\s*</title>", b"just a moment"),
    # A 403 answered by Cloudflare itself is a bot or WAF block more often than the origin's.
    Detector(
        "cloudflare-403", "Cloudflare", headers={"server": _header(r"^cloudflare")}, statuses=frozenset({403})
    ),
    # Google reCAPTCHA widget (v2 checkbox or invisible) as the whole page.
    _tiny_page(
        "recaptcha",
        "Google",
        r"class=[\"'][^\"']*\bg-recaptcha\b|(?:www\.google|www\.recaptcha)\.(?:com|net)/recaptcha/",
        b"recaptcha",
    ),
    # hCaptcha widget as the whole page.
    _tiny_page(
        "hcaptcha",
        "hCaptcha",
        r"class=[\"'][^\"']*\bh-captcha\b|(?:js|api|newassets)\.hcaptcha\.com",
        b"h-captcha",
        b"hcaptcha.com",
    ),
    # Cloudflare Turnstile widget as the whole page.
    _tiny_page(
        "turnstile",
        "Cloudflare",
        r"class=[\"'][^\"']*\bcf-turnstile\b|challenges\.cloudflare\.com/turnstile/",
        b"turnstile",
    ),
    # PerimeterX / HUMAN block page: the "press & hold" captcha container and its script host.
    Detector(
        "perimeterx",
        "PerimeterX",
        body=_re(r"id=[\"']px-captcha\b|captcha\.px-cdn\.net|/captcha/captcha\.js\?a="),
        hints=(b"px-captcha", b"px-cdn", b"/captcha/captcha.js"),
    ),
    # PerimeterX's block page also carries the _pxhd cookie value inline; only trusted when tiny.
    _tiny_page("perimeterx-pxhd", "PerimeterX", r"\b_pxhd\b", b"_pxhd"),
    # DataDome serves its captcha in an iframe from captcha-delivery.com.
    Detector(
        "datadome",
        "DataDome",
        body=_re(r"(?:geo|ct|interstitial)\.captcha-delivery\.com"),
        hints=(b"captcha-delivery",),
    ),
    # DataDome marks the responses it blocks with x-datadome (and answers them with 403).
    Detector("datadome-header", "DataDome", headers={"x-datadome": _header(".")}, statuses=frozenset({403})),
    # Akamai's edge refusal: "Access Denied ... Reference #18.xxxx" on a tiny page.
    Detector(
        "akamai-reference",
        "Akamai",
        body=_re(r"<title>\s*access denied\s*</title>.*reference(?:\s|&#32;)+(?:#|&#35;)[0-9a-f]"),
        hints=(b"access denied",),
        max_body_bytes=8 * 1024,
    ),
    # Imperva (Incapsula) interstitial and block page.
    Detector(
        "imperva", "Imperva", body=_re(r"_incapsula_resource|incapsula incident id"), hints=(b"incapsula",)
    ),
    # AWS WAF tells the client which action it took.
    Detector("aws-waf", "AWS", headers={"x-amzn-waf-action": _header(r"captcha|challenge|block")}),
    # LinkedIn and a few others answer bots with the non-standard status 999.
    Detector("status-999", "generic", statuses=frozenset({999})),
    # Generic human checks, only on tiny pages: an article may say these words in passing.
    Detector(
        "generic-human-check",
        "generic",
        body=_re(
            r"verify (?:that )?you are (?:a )?human|are you a (?:robot|human)"
            r"|prove you(?:'re| are) (?:not a robot|human)"
            r"|unusual traffic from your (?:computer )?network|please complete the security check"
            r"|press (?:&amp;|&) hold"
        ),
        # One per alternative of the pattern, as specific as it allows: "robot" and "hold" stood in
        # most pages (meta robots, placeholders), so the pattern ran on nearly every small page.
        hints=(b"verify", b"are you a ", b"prove you", b"unusual traffic", b"security check", b"press &"),
        max_body_bytes=TINY_PAGE_BYTES,
    ),
)


def find_challenge(
    status: int, headers: Mapping[str, str], body: bytes, detectors: tuple[Detector, ...] = DETECTORS
) -> Detector | None:
    """The first detector matching this response (``headers`` with lower-case names), or None."""
    lowered = body[:SCAN_BYTES].lower()
    for detector in detectors:
        if detector.matches(status, headers, lowered):
            return detector
    return None
