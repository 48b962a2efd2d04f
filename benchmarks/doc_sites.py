"""Documentation sites the extractor was not tuned on, from other generators and eras, split by site.

The ``docs`` set of ``extraction_speed.py`` is NumPy's Sphinx pages, and the text routes were written
while measuring it and the crawl benchmark's three sites: a route that misses on a generator it never met
costs as much as trafilatura alone there. These sites are built documentation committed to public GitHub
repositories (gh-pages branches, committed ``docs/html``), pinned like ``real_sites.py``'s and unpacked
from the same kind of snapshot into ``--cache-dir``. Each is in one split: rules are tuned on ``dev``
sites and reported on ``test`` sites, so a rule that helps only where it was written shows it;
``test2`` sites were added after the rules of the others were written (and the ``test`` sites profiled);
``test3`` after those of ``test2`` were, and ``test4`` after those of ``test3`` were; each measured before any
rule was looked for on it.

    .venv/bin/python benchmarks/doc_sites.py                       # unpack, pages and MB per site
    PYTHONPATH=. .venv/bin/python benchmarks/extraction_speed.py --sets docsites-dev,docsites-test

Nothing of these pages is committed: they are read from the snapshots (``real_sites.git_dir``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real_sites import DEFAULT_MIRROR_ROOT, MirrorSite, build

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "dualplane" / "doc-sites"
SPLITS = ("dev", "test", "test2", "test3", "test4")


@dataclass(frozen=True)
class DocSite:
    """A documentation site and its split; ``generator`` names what built it (for the report only)."""

    site: MirrorSite
    split: str
    generator: str


def _site(name: str, generator: str, split: str, repo: str, commit: str, folder: str, licence: str,  # noqa: PLR0917
          include: str | None = None) -> DocSite:  # fmt: skip
    kind = f"documentation ({generator})"
    return DocSite(MirrorSite(name, kind, repo, commit, folder, licence, include), split, generator)


DOC_SITES = (
    # dev: what routes may be tuned on.
    _site("botorch", "Docusaurus 1, with Sphinx API pages", "dev", "pytorch/botorch",
          "72eb5f8bf9c6aa6fe2fdae8fb0267b275ca8c477", "", "MIT", include=r"^(?!v/)"),
    _site("asynchttpclient", "Maven site 2014: Javadoc 1.6, JXR source, reports", "dev",
          "AsyncHttpClient/async-http-client", "be283a183306a7d46cb3aa2501de18b72e32b04b", "", "Apache-2.0"),
    _site("rulinalg", "rustdoc 2017", "dev", "AtheMathmo/rulinalg",
          "20121a0a8bf0092ab45f85b12bf5d49efdbfa10e", "doc", "MIT"),
    _site("dbus-glue", "Doxygen 1.9", "dev", "5cript/dbus-glue",
          "3fc7d3d5eafed903a7c3cc0afadd89d69a6da973", "docs/html", "MIT", include=r"^(?!search/)"),
    _site("drf", "MkDocs 1.6, Material", "dev", "encode/django-rest-framework",
          "c043dfea4f8e0c3122005284ebc17cd62a66d375", "", "BSD-3-Clause"),
    # test: reported on, never tuned on.
    _site("ax", "Docusaurus 1, with Sphinx API pages", "test", "facebook/Ax",
          "b42e911494ccecd33009eaa1a7b051354021cd67", "", "MIT", include=r"^(?!versions/)"),
    _site("csveed", "Maven site 2025: Doxia, Javadoc 21, JXR, JaCoCo", "test", "42BV/CSVeed",
          "54ea51cdff30a041b6e1c430cd63046e5f8d3ebe", "", "Apache-2.0"),
    _site("rusty-machine", "rustdoc 2017", "test", "AtheMathmo/rusty-machine",
          "ffa15674a3bc893b06cf7d3f72043e0b801223c8", "", "MIT"),
    _site("pcre2", "man pages as hand-styled HTML (1990s style)", "test", "PCRE2Project/pcre2",
          "1cad831209af67d24298c301a74c615d3a6d57eb", "doc/html", "BSD-3-Clause (PCRE2 licence)"),
    _site("mkdocs", "MkDocs 1.6, its own theme (no generator meta)", "test", "mkdocs/mkdocs",
          "2d44ad3c584c6974645d501c0c9cd636aacebce1", "", "BSD-2-Clause"),
    _site("tqdm", "MkDocs 1.4, Material", "test", "tqdm/tqdm.github.io",
          "a69d00d4b939118ff53b3fbca2b9c5f827f74379", "", "MPL-2.0 and MIT (tqdm's)"),
    _site("libcomposition", "Doxygen 1.13, doxygen-awesome theme", "test", "4D-STAR/libcomposition",
          "30da87c74c2b99a0983cb7061d1406d2352132d0", "docs/html", "GPL-3.0", include=r"^(?!search/)"),
    _site("topbarplus", "MkDocs 1.6, Material", "test", "1ForeverHD/TopbarPlus",
          "44514e1df3d401185cc70cf8c4f6913c3b0bc881", "site", "TopbarPlus's own (credit required)"),
    # test2: added after every rule of the first two splits was written, and after the test sites were
    # profiled; six generators none of the other splits has, or of another era.
    _site("dapjs", "TypeDoc", "test2", "ARMmbed/dapjs",
          "c66d800870e75a004bf51d4ac0df12f765c79885", "docs", "MIT"),
    _site("azure-storage-ruby", "YARD 0.9.5 (Ruby)", "test2", "Azure/azure-storage-ruby",
          "091e1408d9803dff56f26105e77eb33ff81fb9dc", "doc", "MIT"),
    _site("movevis", "pkgdown (R)", "test2", "16EAGLE/moveVis",
          "0e6f5d515740046af341c0907dc173262098b887", "docs", "GPL-3.0"),
    _site("flat", "Haddock 2.22 (Haskell)", "test2", "Quid2/flat",
          "ca49b2430b79e3a3cf873b0a376c8e9bfa73dc70", "docs", "BSD-3-Clause"),
    _site("rocoto", "Maven site 2012: Doclava, JXR source, reports", "test2", "99soft/rocoto",
          "c25b5101df20e910df8bab79736cc3a295d112e0", "", "Apache-2.0"),
    _site("openxrprovider", "Doxygen 1.8.15", "test2", "1runeberg/OpenXRProvider",
          "89228dfee33b6dd7b4899e04f2a13c29968cc448", "docs/html", "MIT", include=r"^(?!search/)"),
    # test3: added in the tenth CPU round, its figures taken on main before any rule was looked for.
    _site("rust-cookbook", "mdBook 0.5.3 (2026)", "test3", "rust-lang-nursery/rust-cookbook",
          "9c75edcb12544dc1fcb0408604cf0c7aa74b5059", "", "CC0-1.0"),
    _site("kit", "YARD 0.9.25 with Kit::Doc, ExDoc's theme (Ruby, 2020)", "test3", "rubykit/kit",
          "11d97e321b7678fb34a3ec03fe18d1309c83b55b", "", "MIT", include=r"/edge/"),
    _site("htdp-universe", "JSDoc 4.0.2, default template (2024)", "test3", "leiDnedyA/htdp-universe-js",
          "2bbb13db73dd428a1147eccfb46008d24cb4d1df", "docs", "MIT or Apache-2.0"),
    # test4: added in the eleventh CPU round, its figures taken on main before any rule was looked for.
    _site("infor-notes", "Antora 3.1.14, default UI (2026)", "test4", "inf0rmatiker/inf0rmatiker.github.io",
          "4353038c0465594e707a963d9fd609aad3425227", "docs-site", "Apache-2.0"),
    _site("hakan-notes", "VuePress 1.4.0, default theme (Turkish, 2020)", "test4",
          "hakanyalcinkaya/hakanyalcinkaya.github.io", "3ce03711f825e1abc6028c63b347228f090a7dc3", "",
          "none stated (read from the snapshot only)", include=r"^(?!docs/)"),
)  # fmt: skip


def sites_of(split: str) -> tuple[DocSite, ...]:
    if split not in SPLITS:
        raise SystemExit(f"no split {split!r}; choose from {', '.join(SPLITS)}")
    return tuple(site for site in DOC_SITES if site.split == split)


def built(split: str, mirror_root: Path = DEFAULT_MIRROR_ROOT, cache_dir: Path = DEFAULT_CACHE_DIR
          ) -> dict[str, Path]:  # fmt: skip
    """Every site of ``split`` unpacked under ``cache_dir``: its name -> its folder there."""
    for doc_site in sites_of(split):
        build(doc_site.site, mirror_root, cache_dir)
    return {doc_site.site.name: cache_dir / doc_site.site.name for doc_site in sites_of(split)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRROR_ROOT)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for doc_site in DOC_SITES:
        manifest = build(doc_site.site, args.mirror_root, args.cache_dir)
        rows.append({"split": doc_site.split, "generator": doc_site.generator, **manifest})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for row in rows:
        site = row["site"]
        print(f"{row['split']:5} {site['name']:16}{row['pages']:6} pages {row['bytes'] / 1e6:7.1f} MB  "
              f"{row['generator']}  {site['repo']}@{site['commit'][:10]}")  # fmt: skip


if __name__ == "__main__":
    main()
