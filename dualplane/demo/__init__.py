"""``dualplane demo``: a round trip through every plane, then a crawl of the sample site."""
