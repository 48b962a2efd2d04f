"""The visible-text fingerprint: blind to what changes on every response, not to the page's content."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from dualplane.control_plane.fetcher.fingerprint import text_fingerprint

PAGE = """<html><head><title>Lamp</title><script>var nonce = "{nonce}";</script><style>.a{{}}</style></head>
<body><h1>Desk lamp</h1><p>Price: {price}</p><form><input type=hidden name=csrf value="{nonce}">
<button>Add to cart</button></form><noscript>{nonce}</noscript></body></html>"""


def _print(price: str, nonce: str) -> str | None:
    return text_fingerprint(LexborHTMLParser(PAGE.format(price=price, nonce=nonce)))


def test_scripts_forms_and_tokens_do_not_change_it_a_price_does() -> None:
    assert _print("19.90", "abc") == _print("19.90", "xyz")
    assert _print("19.90", "abc") != _print("17.90", "abc")
    assert text_fingerprint(LexborHTMLParser("<html><body> </body></html>")) is None
