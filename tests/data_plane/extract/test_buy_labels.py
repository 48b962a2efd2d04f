"""The add-to-cart label test: one label for each of its alternatives, so a quick pre-check that drops
ASCII labels early can never hide one (:func:`~data_plane.extract.product.product_markup.says_buy`)."""

from __future__ import annotations

import pytest

from dualplane.data_plane.extract.product.product_markup import says_buy

pytestmark = pytest.mark.unit

BUY_LABELS = [
    "Add to Cart", "add-to-basket", "ADD_TO_BAG", "Add to trolley", "Buy now", " Buy ",
    "In den Warenkorb", "In den Einkaufswagen", "Ajouter au panier", "Añadir al carrito", "Anadir a la cesta",
    "Aggiungi al carrello", "In winkelwagen", "In de winkelwagen", "Do košíku", "Do kosiku", "do kosika",
    "Kosárba", "Kosarba", "Do koszyka", "Lägg i varukorgen", "Lagg i kundvagnen", "Legg i handlekurven",
    "Læg i kurv", "Lag i kurv", "Lisää ostoskoriin", "Lisaa ostoskoriin", "Adicionar ao carrinho",
    "Sepete ekle", "В корзину", "カートに入れる", "加入购物车", "今すぐ購入する", "今すぐ購入",  # noqa: RUF001
    "productAddToCartForm.submit(this)",
]  # fmt: skip


@pytest.mark.parametrize("label", BUY_LABELS)
def test_every_add_to_cart_label_is_recognised(label: str) -> None:
    assert says_buy(label)


@pytest.mark.parametrize("label", ["Buy our book", "Home", "Read more", "Kontakt", "Über uns", "ニュース"])
def test_other_labels_are_not(label: str) -> None:
    assert not says_buy(label)
