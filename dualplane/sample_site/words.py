"""Vocabulary the content generators draw from: product parts, brands, people, prose.

Lists are written as ``|``-separated strings so they stay compact; order matters (it is part of
what makes a seed reproduce the same site), so append rather than reorder.
"""

from __future__ import annotations


def _split(text: str) -> tuple[str, ...]:
    return tuple(word.strip() for word in text.split("|"))


SHOP_NAMES = _split("Northwind Outfitters|Harbor & Pine|Kettle Supply Co.|Alder Home|Brightline Goods")
NEWS_NAMES = _split("The Daily Lantern|Metro Ledger|Field Notes Weekly|The Quiet Observer|Signal Post")
MIXED_NAMES = _split("Loom & Lens|Common Thread Magazine|Atlas Living|The Workbench|Parcel & Prose")

ADJECTIVES = _split(
    "Aurora|Nordic|Classic|Urban|Compact|Deluxe|Rustic|Modern|Vintage|Pro|Everyday|Ultra|Coastal|"
    "Alpine|Studio|Heritage|Essential|Summit|Luna|Terra"
)
MATERIALS = _split(
    "Oak|Walnut|Linen|Wool|Leather|Ceramic|Steel|Bamboo|Cotton|Glass|Copper|Canvas|Marble|Cork|"
    "Titanium|Merino"
)
PRODUCT_NOUNS = _split(
    "Desk Lamp|Backpack|Coffee Grinder|Throw Blanket|Chef's Knife|Water Bottle|Headphones|Armchair|"
    "Notebook|Kettle|Rain Jacket|Table Runner|Bookshelf|Wall Clock|Sneakers|Cutting Board|Teapot|"
    "Bluetooth Speaker|Duffel Bag|Pendant Light"
)
CATEGORIES = _split("Home|Kitchen|Outdoor|Audio|Apparel|Office|Furniture|Travel")
BRANDS = _split(
    "Fjordline|Hollowell|Kestrel & Co|Moraine|Pallas|Quillon|Redwick|Solent|Tamarack|Veldt|Wexford|Yarrow"
)

FIRST_NAMES = _split(
    "Amara|Ben|Chiara|Dmitri|Elena|Farid|Grace|Hiro|Inès|Jonas|Kavya|Liam|Maya|Noah|Olga|Pablo|"
    "Quinn|Rosa|Sven|Tariq|Uma|Viktor"
)
LAST_NAMES = _split(
    "Abernathy|Bianchi|Castillo|Dubois|Eriksen|Fischer|Gupta|Hansen|Ivanova|Jensen|Kowalski|"
    "Lindqvist|Moreau|Nakamura|Okafor|Petrov|Quint|Rossi|O'Neill"
)
SECTIONS = _split("World|Business|Technology|Science|Culture|Travel|Food|Sport")
HEADLINE_SUBJECTS = _split(
    "City council|Local bakers|Researchers|Rail operators|Startup founders|Farmers|The central bank|"
    "Museum curators|Engineers|Volunteers|Students|Fishermen"
)
HEADLINE_VERBS = _split("unveil|question|rethink|celebrate|delay|expand|test|reject|revive|debate|map|fund")
HEADLINE_OBJECTS = _split(
    "a plan for cheaper housing|the future of night trains|an old harbour warehouse|"
    "a quieter kind of tourism|the price of bread|solar roofs on schools|a new river crossing|"
    "the four-day week|forgotten orchard varieties|a citywide repair festival|"
    "underground data centres|the last paper mill"
)

WORDS = _split(
    "the|a|of|and|to|in|that|it|with|as|for|on|was|by|at|from|city|market|people|year|plan|council|"
    "river|station|price|morning|report|week|change|budget|project|neighbourhood|team|season|harbour|"
    "evidence|result|energy|water|school|street|policy|study|data|growth|local|public|small|new|old|"
    "quiet|early|recent|careful|open|said|found|expected|announced|argued|measured|planned|built|"
    "closed|opened|noted|reported|estimated|described|however|meanwhile|still|already|nearly|perhaps|"
    "again|later|often|rarely|together|instead|café|naïve"
)
