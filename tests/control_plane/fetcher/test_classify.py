"""classify(): status rules, Retry-After, and challenge detection by content, headers and size."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest

from dualplane.control_plane.fetcher.backends.base import FetchRequest, FetchResponse
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.challenges import DETECTORS, TINY_PAGE_BYTES
from dualplane.control_plane.fetcher.classify import MAX_RETRY_AFTER_S, classify, parse_retry_after
from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.sample_site import AntiBot, SampleSite, SiteSpec

pytestmark = pytest.mark.unit


def response(status: int = 200, body: bytes = b"", headers: Mapping[str, str] | None = None) -> FetchResponse:
    return FetchResponse(
        url="https://shop.example/p/1",
        final_url="https://shop.example/p/1",
        status=status,
        headers=dict(headers or {"content-type": "text/html"}),
        body=body,
        redirect_chain=(),
        elapsed_ms=12.0,
        content_type="text/html",
        charset="utf-8",
    )


def padded(html: str, size: int = 3 * TINY_PAGE_BYTES) -> bytes:
    """A normal, large page around ``html`` (real product pages are 100+ KiB)."""
    filler = "<p>" + "Sturdy oak table, hand-finished, ships in two weeks. " * 20 + "</p>\n"
    body = f"<html><head><title>Oak table</title></head><body>{html}"
    while len(body) < size:
        body += filler
    return (body + "</body></html>").encode()


# --- status rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, Outcome.OK),
        (203, Outcome.OK),
        (204, Outcome.OK),
        (301, Outcome.REDIRECT),
        (302, Outcome.REDIRECT),
        (308, Outcome.REDIRECT),
        (404, Outcome.NOT_FOUND),
        (410, Outcome.NOT_FOUND),
        (429, Outcome.RATE_LIMITED),
        (401, Outcome.FORBIDDEN),
        (403, Outcome.FORBIDDEN),
        (407, Outcome.FORBIDDEN),
        (451, Outcome.FORBIDDEN),
        (408, Outcome.TIMEOUT),
        (400, Outcome.INVALID_CONTENT),
        (405, Outcome.INVALID_CONTENT),
        (414, Outcome.INVALID_CONTENT),
        (500, Outcome.SERVER_ERROR),
        (502, Outcome.SERVER_ERROR),
        (503, Outcome.SERVER_ERROR),
        (520, Outcome.SERVER_ERROR),
    ],
)
def test_status_decides_when_no_detector_matches(status: int, expected: Outcome) -> None:
    verdict = classify(response(status, b"<html><body>plain</body></html>"))
    assert verdict.outcome is expected
    assert verdict.detail.startswith(f"HTTP {status}")


def test_429_keeps_retry_after_seconds() -> None:
    verdict = classify(response(429, b"Too Many Requests", {"retry-after": "120"}))
    assert (verdict.outcome, verdict.retry_after_s) == (Outcome.RATE_LIMITED, 120.0)
    assert classify(response(429)).retry_after_s is None


def test_503_keeps_retry_after_but_other_statuses_ignore_it() -> None:
    assert classify(response(503, headers={"retry-after": "30"})).retry_after_s == 30.0
    assert classify(response(200, headers={"retry-after": "30"})).retry_after_s is None


def test_retry_after_http_date_is_measured_against_the_response_date() -> None:
    headers = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", "date": "Wed, 21 Oct 2015 07:26:30 GMT"}
    assert classify(response(429, headers=headers)).retry_after_s == 90.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("  17 ", 17.0),
        ("2.5", 2.5),
        ("-5", 0.0),
        ("99999999", MAX_RETRY_AFTER_S),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 60.0),
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # already past
        ("soon", None),
        ("nan", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 27, 0, tzinfo=UTC)
    assert parse_retry_after(value, now=now) == expected


# --- challenge pages, by vendor -------------------------------------------------------------

CLOUDFLARE_MANAGED = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="robots" content="noindex,nofollow">
</head><body><div class="main-wrapper" role="main"><div class="main-content"><noscript>
<div id="challenge-error-title">
<span id="challenge-error-text">Enable JavaScript and cookies to continue</span></div></noscript></div></div>
<script>(function(){window._cf_chl_opt={cvId: '3',cZone: "www.example.com",cType: 'managed',
cRay: '8a1b2c3d4e5f6a7b',cH: 'abc',cUPMDTk: "\\/?__cf_chl_tk=xyz",cFPWv: 'b',cTplV: 5,
cTplB: 'cf',fa: "\\/?__cf_chl_f_tk=xyz"};
var cpo = document.createElement('script');
cpo.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8a1b2c3d4e5f6a7b';
document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>"""

CLOUDFLARE_BLOCKED = """<!DOCTYPE html><html class="no-js" lang="en-US"><head>
<title>Attention Required! | Cloudflare</title><meta charset="UTF-8" /></head><body>
<div id="cf-wrapper"><div id="cf-error-details" class="cf-error-details-wrapper">
<div class="cf-wrapper cf-header">
<h1 data-translate="block_headline">Sorry, you have been blocked</h1>
<h2 class="cf-subheadline">You are unable to access example.com</h2></div></div></div></body></html>"""

RECAPTCHA = """<html><head><title>Security check</title>
<script src="https://www.google.com/recaptcha/api.js" async defer></script></head>
<body><form action="/verify" method="POST"><p>One more step</p>
<div class="g-recaptcha" data-sitekey="6LcAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"></div>
<input type="submit" value="Continue"></form></body></html>"""

GOOGLE_SORRY = """<html><head><title>https://www.google.com/search?q=oak</title></head><body>
<div style="max-width:400px;"><hr noshade size="1" style="color:#ccc;">
<div style="font-size:13px;">Our systems have detected unusual traffic from your computer network.
This page checks to see if it's really you sending the requests, and not a robot.</div>
<div id="infoDiv" style="display:none;">This page appears when Google automatically detects requests.</div>
</div></body></html>"""

HCAPTCHA = """<!doctype html><html><head><title>Checking your browser</title>
<script src="https://js.hcaptcha.com/1/api.js" async defer></script></head><body>
<form method="post"><div class="h-captcha" data-sitekey="10000000-ffff-ffff-ffff-000000000001"></div>
<button type="submit">Submit</button></form></body></html>"""

TURNSTILE = """<!doctype html><html><head><title>Verifying</title>
<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer></script></head><body>
<form method="post"><div class="cf-turnstile" data-sitekey="1x00000000000000000000AA"></div></form>
</body></html>"""

PERIMETERX = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Access to this page has been denied</title></head><body><div class="px-captcha-container">
<div class="px-captcha-header">Before we continue...</div>
<div class="px-captcha-message">Press &amp; Hold to confirm you are a human (and not a bot).</div>
<div id="px-captcha"></div></div><script>window._pxAppId = 'PXabcdefgh';
window._pxJsClientSrc = '/abcdefgh/init.js';
window._pxVid = '';window._pxUuid = 'c0ffee00-0000-4000-8000-000000000000';
window._pxHostUrl = '/abcdefgh/xhr';</script>
<script src="/abcdefgh/captcha/captcha.js?a=c&u=c0ffee00&v=&m=0"></script></body></html>"""

DATADOME = """<html><head><title>example.com</title><style>#cmsg{animation: A 1.5s;}</style></head>
<body style="margin:0"><p id="cmsg">Please enable JS and disable any ad blocker</p>
<script data-cfasync="false">var dd={'rt':'c','cid':'AHrlqAAAAAMAx','hsh':'ABCDEF','t':'fe','s':12345,
'e':'abc','host':'geo.captcha-delivery.com','cookie':'abc'}</script>
<script data-cfasync="false" src="https://ct.captcha-delivery.com/c.js"></script></body></html>"""

AKAMAI = """<HTML><HEAD>
<TITLE>Access Denied</TITLE>
</HEAD><BODY>
<H1>Access Denied</H1>

You don't have permission to access "http&#58;&#47;&#47;www&#46;example&#46;com&#47;" on this server.<P>
Reference&#32;&#35;18&#46;2f1e3b17&#46;1720000000&#46;1a2b3c4d
<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;18&#46;2f1e3b17&#46;1720000000&#46;1a2b3c4d</P>
</BODY>
</HTML>"""

IMPERVA = """<html style="height:100%"><head><META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW"></head>
<body style="margin:0px;height:100%"><iframe id="main-iframe" src="/_Incapsula_Resource?CWUDNSAI=9&xinfo=1"
frameborder=0 width="100%" height="100%">Request unsuccessful. Incapsula incident ID: 1234-5678</iframe>
</body></html>"""

GENERIC = """<html><head><title>Please wait</title></head><body><h1>Are you a robot?</h1>
<p>Please verify you are human to continue to the store.</p></body></html>"""


JUST_A_MOMENT = """<!DOCTYPE html><html><head><title>Just a moment...</title></head>
<body><p>Checking your browser before accessing the site.</p>
<script src="/cdn-cgi/x.js"></script></body></html>"""

# (detector expected to fire, status, body, headers): at least one row per detector.
CHALLENGES: list[tuple[str, int, str, dict[str, str]]] = [
    ("cloudflare-mitigated", 403, CLOUDFLARE_MANAGED, {"server": "cloudflare", "cf-mitigated": "challenge"}),
    ("cloudflare-challenge", 200, CLOUDFLARE_MANAGED, {}),
    ("cloudflare-challenge", 503, CLOUDFLARE_MANAGED, {}),
    ("cloudflare-block", 403, CLOUDFLARE_BLOCKED, {}),
    ("just-a-moment", 200, JUST_A_MOMENT, {}),
    ("cloudflare-403", 403, "<html><body>error code: 1020</body></html>", {"server": "cloudflare"}),
    ("recaptcha", 200, RECAPTCHA, {}),
    ("generic-human-check", 200, GOOGLE_SORRY, {}),
    ("hcaptcha", 200, HCAPTCHA, {}),
    ("turnstile", 200, TURNSTILE, {}),
    ("perimeterx", 403, PERIMETERX, {}),
    ("perimeterx-pxhd", 403, "<html><script>window._pxhd='abc:def';</script></html>", {}),
    ("datadome", 200, DATADOME, {}),
    ("datadome-header", 403, "{}", {"x-datadome": "protected", "content-type": "application/json"}),
    ("akamai-reference", 403, AKAMAI, {"server": "AkamaiGHost"}),
    ("imperva", 200, IMPERVA, {}),
    ("aws-waf", 405, "<html><body></body></html>", {"x-amzn-waf-action": "captcha"}),
    ("aws-waf", 202, "", {"x-amzn-waf-action": "challenge"}),
    ("status-999", 999, "", {}),
    ("generic-human-check", 200, GENERIC, {}),
    ("upstream-marker", 200, "", {"x-dualplane-blocked": "scraping API: detected"}),
]


@pytest.mark.parametrize(("detector", "status", "body", "headers"), CHALLENGES)
def test_challenge_pages_are_blocked_challenge(
    detector: str, status: int, body: str, headers: dict[str, str]
) -> None:
    verdict = classify(response(status, body.encode(), headers))
    assert verdict.outcome is Outcome.BLOCKED_CHALLENGE, verdict.detail
    assert verdict.detail.endswith(f"({detector})")


def test_every_detector_has_a_snippet() -> None:
    assert {row[0] for row in CHALLENGES} == {detector.name for detector in DETECTORS}


def test_a_429_stays_rate_limited_whatever_its_body() -> None:
    verdict = classify(response(429, RECAPTCHA.encode(), {"retry-after": "7"}))
    assert (verdict.outcome, verdict.retry_after_s) == (Outcome.RATE_LIMITED, 7.0)


def test_pxhd_is_ignored_on_full_size_pages() -> None:
    assert classify(response(200, padded("<script>var _pxhd = 1;</script>"))).outcome is Outcome.OK


# --- normal pages that look a bit like challenges -------------------------------------------

CLOUDFLARE_BOT_SCRIPT = """<script>(function(){function c(){var b=a.contentDocument||a.contentWindow.document;
if(b){var d=b.createElement('script');d.innerHTML="window.__CF$cv$params={r:'8a1b',t:'MTcy'};
var a=document.createElement('script');a.nonce='';a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';
document.getElementsByTagName('head')[0].appendChild(a);";b.getElementsByTagName('head')[0].appendChild(d)}}
}());</script>"""


@pytest.mark.parametrize(
    ("status", "body", "headers"),
    [
        # Cloudflare's bot-management script is on every page of protected sites.
        (200, padded(CLOUDFLARE_BOT_SCRIPT), {"server": "cloudflare", "cf-ray": "8a1b-FRA"}),
        (200, padded(CLOUDFLARE_BOT_SCRIPT, size=4000), {"server": "cloudflare"}),
        # A newsletter or contact form with a captcha, on a full-size page.
        (200, padded(RECAPTCHA), {}),
        (200, padded(HCAPTCHA), {}),
        (200, padded(TURNSTILE), {}),
        # PerimeterX's sensor and DataDome's tag load on ordinary pages too.
        (
            200,
            padded(
                "<script>window._pxAppId = 'PXabcdefgh';</script><script src='/abcdefgh/init.js'></script>"
            ),
            {},
        ),
        (
            200,
            padded('<script src="https://js.datadome.co/tags.js" async></script>'),
            {"x-datadome": "protected"},
        ),
        # An article about captchas.
        (200, padded("<h1>Are you a robot? How sites verify you are human</h1>"), {}),
        # A tiny but ordinary page.
        (200, b"<html><head><title>About</title></head><body><p>We sell tables.</p></body></html>", {}),
        (200, b"User-agent: *\nDisallow: /private/\n", {"content-type": "text/plain"}),
        (200, b"", {}),
        # A tiny 404 page with a captcha-protected contact form is still just gone.
        (404, RECAPTCHA.encode(), {"server": "cloudflare"}),
    ],
)
def test_normal_pages_are_not_flagged(status: int, body: bytes, headers: dict[str, str]) -> None:
    verdict = classify(response(status, body, headers or None))
    assert verdict.outcome is (Outcome.OK if status == 200 else Outcome.NOT_FOUND), verdict.detail


# --- against a running sample site ----------------------------------------------------------


def _request(url: str) -> FetchRequest:
    return FetchRequest(url, "dualplane-test/1.0", 5.0, 5.0, max_bytes=2 * 1024 * 1024)


async def _fetch_all(urls: list[str], parallel: int = 16) -> list[FetchResponse]:
    gate = asyncio.Semaphore(parallel)
    async with DirectBackend(SsrfGuard(["127.0.0.1"])) as backend:

        async def one(url: str) -> FetchResponse:
            async with gate:
                return await backend.fetch(_request(url))

        return await asyncio.gather(*(one(url) for url in urls))


def test_no_page_of_the_sample_site_is_classified_as_a_challenge() -> None:
    with SampleSite(SiteSpec(seed=11, hosts=3, pages_per_host=30, latency_ms=0)) as site:
        walk = site.explore()
        extras = [
            url + path for url in site.urls for path in ("/robots.txt", "/sitemap.xml", "/private/account")
        ]
        urls = sorted(walk.pages | set(walk.redirects) | walk.broken) + extras
        responses = asyncio.run(_fetch_all(urls))
    assert len(walk.pages) > 100
    verdicts = {r.url: classify(r) for r in responses}
    blocked = [url for url, v in verdicts.items() if v.outcome is Outcome.BLOCKED_CHALLENGE]
    assert blocked == []
    for url in walk.pages | set(walk.redirects) | set(extras):
        assert verdicts[url].outcome is Outcome.OK, (url, verdicts[url].detail)
    for url in walk.broken:
        assert verdicts[url].outcome is Outcome.NOT_FOUND, url


def test_sample_site_anti_bot_pages_are_all_recognised() -> None:
    spec = SiteSpec(
        seed=11, hosts=1, pages_per_host=5, latency_ms=0, anti_bot=AntiBot(max_rps=2, mode="mixed")
    )
    with SampleSite(spec) as site:

        async def hammer() -> list[FetchResponse]:
            async with DirectBackend(SsrfGuard(["127.0.0.1"])) as backend:
                return [await backend.fetch(_request(site.seeds[0])) for _ in range(12)]

        responses = asyncio.run(hammer())
        log = site.log(0)
    expected = {None: Outcome.OK, "429": Outcome.RATE_LIMITED, "captcha": Outcome.BLOCKED_CHALLENGE}
    outcomes = [classify(r).outcome for r in responses]
    assert outcomes == [expected[entry.blocked] for entry in log]
    assert outcomes.count(Outcome.BLOCKED_CHALLENGE) >= 4
    assert outcomes.count(Outcome.RATE_LIMITED) >= 4
    captchas = [r for r in responses if r.status == 200 and classify(r).outcome is Outcome.BLOCKED_CHALLENGE]
    assert captchas
    assert all(classify(r).retry_after_s == 5.0 for r in responses if r.status == 429)
    # Each captcha page is recognised by its content alone, without the cf-mitigated header.
    for page in captchas:
        bare = response(200, page.body, {"content-type": "text/html"})
        assert classify(bare).outcome is Outcome.BLOCKED_CHALLENGE
