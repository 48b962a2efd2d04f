"""What shops write about stock, in the languages of the markets they sell in, as regular expressions.

Each state has *strong* phrases, read anywhere in a product's area ("Out of stock", "Nur noch 3 auf
Lager", "Plus que 2 en stock"), and the in-stock state also *loose* words that count only as the whole
text of an element about stock (``class="availability"``: "Disponible", "Skladem"), since in running
text they often mean something else ("disponible en 3 couleurs"). States are tried in the order of
:data:`STRONG`: a pre-order or a low stock is also "available", and "nicht auf Lager" holds "auf Lager".
"""

# Cyrillic letters here are meant (Russian phrases), not look-alikes of Latin ones:
# ruff: noqa: RUF001

from __future__ import annotations

import re
from typing import Literal

State = Literal["in_stock", "out_of_stock", "limited", "preorder"]
_N = r"\d{1,4}"

PREORDER = (
    r"\bpre[\s-]?orders?\b", r"\bpre[\s-]?sale\b", r"\bback[\s-]?order", r"\bvorbestell",
    r"\bpr[ée]commande", r"\bpreventa\b", r"\bpre[\s-]?ordine\b", r"\bvoorbestel", r"\bprzedsprzeda[żz]",
    r"\bp[řr]edobjedn", r"\bförhandsboka", r"\bforudbestil", r"\bennakkotilaa", r"\bпредзаказ", r"予約",
)  # fmt: skip
LIMITED = (
    rf"\bonly {_N} (?:\w+ )?(?:left|remaining|in stock|available)\b",
    rf"\b{_N} (?:left|remaining) in stock\b", r"\blimited (?:stock|availability|quantit(?:y|ies))\b",
    r"\blow (?:in )?stock\b", r"\b(?:almost|nearly) (?:gone|sold out)\b", r"\bfew (?:items )?left\b",
    r"\blast (?:few )?(?:items|pieces)\b", rf"\bnur noch {_N}\b",
    r"\bwenige (?:artikel |stück )?(?:auf lager|vorrätig|verfügbar)\b", r"\bgeringer (?:lager)?bestand\b",
    rf"\bplus que {_N}\b", r"\bderni[eè]res? (?:pi[eè]ces|articles|exemplaires)\b", r"\bstock limit[ée]\b",
    r"\b[úu]ltimas unidades\b", rf"\bqueda(?:n)? (?:s[óo]lo )?{_N}\b", r"\bpocas unidades\b",
    r"\bultimi pezzi\b", rf"\bsolo {_N} disponibil", r"\bdisponibilit[àa] limitata\b",
    rf"\bnog (?:maar )?{_N} (?:op voorraad|beschikbaar|stuks?)\b", r"\blaatste (?:stuks|exemplaren)\b",
    r"\bbeperkte voorraad\b", r"\bostatnie sztuki\b", r"\bposledn[íi] kusy\b",
    rf"\bmég {_N}\b.{{0,40}}készleten\b", r"\butols[óo] darabok\b", r"\bf[åa] kvar\b",
    rf"\b(?:endast|bara) {_N} kvar\b", r"\bf[åa] (?:på lager|igjen)\b", r"\bmuutama jäljellä\b",
    r"\bостал(?:ось|ся|ись) \d", r"残りわずか", r"\bson \d+ (?:adet|ürün)\b",
)  # fmt: skip
# A stock label answered yes or no ("In stock: Yes", "Auf Lager: nein", "Наличие на складе: Да").
_STOCK_LABEL = (
    r"\b(?:in stock|on stock|available|availability|auf lager|vorrätig|lieferbar|verfügbar|en stock|"
    r"disponible|disponibile|op voorraad|na stanie|skladem|raktáron|в наличии|наличие(?: на складе)?)\s*:\s*"
)
# "Not available for VAT relief / in your country / to ship abroad" is about a tax, a region or a delivery,
# not stock; "not available for purchase" (or order, sale) is.
_ELSE_THAN_STOCK = r"(?!\s+(?:for|in|to)\s+(?!(?:purchase|order|sale)\b))"
OUT_OF_STOCK = (
    r"\bout[\s-]of[\s-]stock\b", r"\bsold[\s-]?out\b", r"\bnot (?:currently )?in stock\b",
    rf"\b(?:currently|temporarily) (?:unavailable|not available)\b{_ELSE_THAN_STOCK}",
    r"\bno longer available\b",
    rf"\b(?:item|product) (?:is )?(?:currently )?(?:unavailable|not available)\b{_ELSE_THAN_STOCK}",
    r"\bdiscontinued\b",
    r"\bausverkauft\b", r"\bvergriffen\b",
    r"\bnicht (?:mehr )?(?:auf lager|verfügbar|lieferbar|vorrätig|bestellbar)\b", r"\bépuisée?s?\b",
    r"\brupture de stock\b", r"\b(?:actuellement |temporairement )?indisponible\b", r"\bplus disponible\b",
    r"\bnon disponible\b", r"\bagotad[oa]s?\b", r"\bsin (?:stock|existencias)\b", r"\bno disponible\b",
    r"\bfuera de stock\b", r"\besaurit[oa]\b", r"\bnon disponibile\b", r"\buitverkocht\b",
    r"\bniet (?:meer )?(?:op voorraad|leverbaar|beschikbaar)\b", r"\besgotad[oa]\b", r"\bindispon[íi]vel\b",
    r"\bsem estoque\b", r"\bfora de estoque\b", r"\bniedost[ęe]pn[ya]\b",
    r"\bbrak (?:w magazynie|towaru|na stanie)\b", r"\bwyprzedan[ya]\b", r"\bvyprod[áa]no\b",
    r"\bnen[íi] skladem\b", r"\bnedostupn[ée]\b", r"\bnincs (?:raktáron|készleten)\b", r"\belfogyott\b",
    r"\bslut i lager\b", r"\bslutsåld\b", r"\bej i lager\b", r"\btillfälligt slut\b", r"\butsolgt\b",
    r"\budsolgt\b", r"\bikke på lager\b", r"\bloppuunmyyty\b", r"\bei varastossa\b", r"\bstokta yok\b",
    r"\btükendi\b", r"\bнет в наличии\b", r"\bраспродан", r"在庫切れ", r"売り切れ", r"缺货", r"售罄",
)  # fmt: skip
IN_STOCK = (
    r"\b(?<!back )in[\s-]stock\b", r"\b(?<!not )available (?:now|to ship|instantly)\b",
    r"\b(?<!not )available for (?:immediate )?(?:shipping|delivery|dispatch)\b", r"\bready to ship\b",
    r"\bships (?:today|within)\b", r"\busually dispatched within\b", r"\bauf lager\b",
    r"\b(?:sofort )?lieferbar\b", r"\bvorrätig\b", r"\bsofort verfügbar\b", r"\ben stock\b",
    r"\bdisponible imm[ée]diatement\b", r"\ben existencia\b", r"\bdisponibilit[àa] immediata\b",
    r"\bin magazzino\b", r"\bop voorraad\b", r"\bdirect leverbaar\b", r"\bem estoque\b", r"\bw magazynie\b",
    r"\bna stanie\b", r"\bskladem\b", r"\bna sklad[ěe]\b", r"\braktáron\b", r"\bkészleten\b",
    r"\bi lager\b", r"\bpå lager\b", r"\bvarastossa\b", r"\bstokta\b", r"\bв наличии\b", r"在庫あり", r"有货",
    r"现货",
)  # fmt: skip
LOOSE_OUT_OF_STOCK = ("unavailable", "not available", "none in stock", "no stock", "0 in stock")
"""Out of stock only as the whole text of an element about stock ("Image unavailable" is no statement)."""
LOOSE_IN_STOCK = (
    "available", "in stock", "disponible", "verfügbar", "lieferbar", "disponibile", "beschikbaar",
    "leverbaar", "disponível", "dostępny", "dostępne", "dostupné", "skladem", "raktáron", "tillgänglig",
    "saatavilla", "на складе",
)  # fmt: skip


def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.I)


STRONG: tuple[tuple[State, re.Pattern[str]], ...] = (
    ("preorder", _compiled(PREORDER)),
    ("limited", _compiled(LIMITED)),
    ("out_of_stock", _compiled(OUT_OF_STOCK)),
    ("in_stock", _compiled(IN_STOCK)),
)
ANSWERED: tuple[tuple[State, re.Pattern[str]], ...] = (
    ("out_of_stock", re.compile(rf"{_STOCK_LABEL}(?:no|nein|non|nee|nie|ne|нет)\b", re.I)),
    ("in_stock", re.compile(rf"{_STOCK_LABEL}(?:yes|ja|oui|s[ií]|tak|ano|igen|да|есть)\b", re.I)),
)
"""A stock label answered yes or no; read only in text holding a colon, before the out-of-stock and
in-stock phrases ("In stock: No" holds "In stock")."""
LOOSE: tuple[tuple[State, re.Pattern[str]], ...] = (
    ("out_of_stock", re.compile(rf"^\W*(?:{'|'.join(map(re.escape, LOOSE_OUT_OF_STOCK))})\W*$", re.I)),
    ("in_stock", re.compile(rf"^\W*(?:{'|'.join(map(re.escape, LOOSE_IN_STOCK))})\W*$", re.I)),
)
