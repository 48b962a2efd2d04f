"""Pure web helpers shared by every stage: URL canonicalization, charsets, the SSRF guard."""
