"""Labelled product facts in a product's text: "SKU: MUG-01", "Art.-Nr. 4711", "Kód: DOV1512", "EAN 40…".

Shops print their item number, GTIN and brand next to a label, in a table row, a definition list or
a line ("Product code: DZZ49092"); the area's text has one block element a line, so a label and its
value are on one line or on two consecutive ones. Labels are known in the languages of the markets
shops sell in. An item number must hold a digit: "SKU: N/A" or "Code: FREESHIP" name none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from dualplane.data_plane.extract.product.identifiers import gtin_of

# Item numbers: the shop's own; an MPN or model number is the maker's and is not one.
SKU_LABELS = (
    r"SKU", r"(?:Catalog(?:ue)?\s+)?Item\s*#", r"Item\s+(?:No\.?|number|code)", r"Product\s*#",
    r"Product\s+(?:code|ID|No\.?|number)", r"Article\s*(?:No\.?|number)",
    r"Ref(?:erence)?\.?\s*(?:No\.?|#|number)?", r"Cat(?:alog(?:ue)?)?\.?\s*(?:No\.?|number|#)",
    r"Style\s*(?:No\.?|#)", r"Stock\s*(?:code|no\.?|number|#)",
    r"ASIN", r"Code", r"Art(?:ikel)?\.?[\s-]*(?:Nr|No)\.?", r"Artikelnummer",
    r"Artikelcode", r"Bestell(?:nummer|-?Nr\.?)", r"Best\.-Nr\.?", r"R[ée]f[ée]rence", r"R[ée]f\.",
    r"Code\s*(?:article|produit)", r"N°\s*d'article", r"Referencia",
    r"C[óo]digo(?:\s*de\s*(?:producto|art[íi]culo))?", r"Codice(?:\s*(?:articolo|prodotto))?",
    r"Cod\.\s*art\.?", r"Productcode", r"K[óo]d(?:\s*(?:produktu|zbo[žz][íi]|tovaru))?",
    r"Katalogov[ée]\s*[čc][íi]slo", r"Objednac[íi]\s*[čc][íi]slo", r"Cikksz[áa]m", r"Term[ée]kk[óo]d",
    r"Kod\s*produktu", r"Numer\s*katalogowy", r"Indeks", r"Art\.?\s*nr\.?", r"Varenummer", r"Varenr\.?",
    r"Tuotenumero", r"Tuotekoodi", r"Refer[êe]ncia", r"[ÜU]r[üu]n\s*kodu", r"Stok\s*kodu", r"Артикул",
    r"Код(?:\s*товара)?", r"商品コード", r"商品编号",
    r"Walmart\s*#", r"Listing\s*#", r"ISBN-?10",
    # "Item:" alone names many things ("Item: 3 pack"): only with one identifier, holding a digit, as the
    # rest of its line ("Item: 10188") or alone on the next one.
    r"Item(?=[ \t]*:[ \t]*\n?[ \t]*[\w\-./]*\d[\w\-./]*[ \t]*$)",
)  # fmt: skip
"""Marketplaces label their own item number: "Walmart #: 552662041", Etsy's "Listing # 78608690", Amazon's
"ASIN: B0…", and on a book's page Amazon's ASIN is its "ISBN-10" (no GTIN: 10 digits)."""
GTIN_LABELS = (r"GTIN(?:-?1[234]|-?8)?", r"EAN(?:-?13)?", r"UPC", r"ISBN(?:-?1[03])?", r"JAN", r"Barcode")
BRAND_LABELS = (
    r"Brand", r"Marke", r"Marque", r"Marca", r"Merk", r"Manufacturer", r"Hersteller", r"Fabricant",
    r"Fabricante", r"Produttore", r"Značka", r"Márka", r"Producent", r"Varumärke", r"Merke", r"Valmistaja",
    r"Производитель",
)  # fmt: skip
_BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\u200b]")
_SEPARATOR = r"[\s]*[:#]?[ \t]*\n?[ \t]*[:#]?\s*"


def _labelled(labels: tuple[str, ...], value: str) -> re.Pattern[str]:
    alternatives = "|".join(labels)
    # A label starts a line (or follows a "|" or "•" separator): "Promo code: SAVE10" inside a sentence
    # or a banner is no item number.
    return re.compile(
        rf"(?:^[ \t]*|(?<=[|•·(])[ \t]*)(?:{alternatives})(?![^\W\d_]){_SEPARATOR}{value}", re.I | re.M
    )


# A brand may stand between the label and the number ("SKU: Treasure Garden UM9109-3462"): up to two
# capitalised words without digits, on the label's line, are passed over.
_BRAND_BEFORE = r"(?-i:(?:[A-Z][A-Za-z&'-]*[ \t]+){0,2})"
_SKU = _labelled(SKU_LABELS, rf"{_BRAND_BEFORE}(?P<value>[A-Za-z0-9][\w\-./]{{0,63}})(?![\w\-/])")
_GTIN = _labelled(GTIN_LABELS, r"(?P<value>\d[\d \-]{6,18}\d)\b")
_BRAND = _labelled(BRAND_LABELS, r"(?P<value>[^\n·|•;,:]{1,60}?)[ \t]*(?=[\n·|•;,]|$)")


def clean(text: str) -> str:
    """``text`` without the invisible direction marks some shops put around a label's colon ("ASIN : B0…")."""
    return _BIDI.sub("", text)


def labelled_sku(text: str) -> str | None:
    """The first item number after an item-number label in ``text`` (one that holds a digit)."""
    return next(labelled_skus(text), None)


def labelled_skus(text: str) -> Iterator[str]:
    """Every item number after an item-number label in ``text``, in order."""
    for match in _SKU.finditer(text):
        value = match.group("value").rstrip(".")
        if any(char.isdigit() for char in value):
            yield value


def lines_of(text: str) -> str:
    """``text`` with spaces collapsed and blank lines dropped, as labels and values are matched."""
    return "\n".join(line for raw in text.splitlines() if (line := " ".join(raw.split())))


def labelled_gtin(text: str) -> str | None:
    """The first valid GTIN (check digit verified) after a GTIN, EAN, UPC or ISBN label."""
    for match in _GTIN.finditer(text):
        gtin = gtin_of(match.group("value").strip())
        if gtin:
            return gtin
    return None


def labelled_brand(text: str) -> str | None:
    match = _BRAND.search(text)
    return match.group("value").strip() if match else None
