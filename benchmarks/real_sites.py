"""Real sites for the crawl benchmark: built HTML of public GitHub repositories, served locally.

Seven sites, each pinned to a repository, a commit and a folder (``SITES``), are unpacked from git
snapshots under ``--mirror-root`` into ``--cache-dir`` (HTML files only, with their real sizes and
links) and served one host per site on 127.0.0.1 ports, with ``--latency-ms`` per response, a
robots.txt per host and a request log (``real_sites_server.py``). Links to anything outside the
mirrored set (other hosts, images, files left out) answer 404, to every crawler alike.

Getting the snapshots: either the ``fetch`` tool of the development VM (it lands bare repositories
as ``/work/.mirror/OWNER+NAME/repo``), or ``git clone --bare https://github.com/OWNER/NAME
MIRROR_ROOT/OWNER+NAME`` of each repository below (then the commit must be in the clone).

    .venv/bin/python benchmarks/real_sites.py --mirror-root /work/.mirror           # build, print, serve
    .venv/bin/python benchmarks/real_sites.py --build-only                           # pages, MB per site
    .venv/bin/python benchmarks/real_sites.py --sites flink-news                     # one site only

``crawl_vs_scrapy.py`` starts it (``--site real``, the default) and reads the printed description.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from real_sites_server import serve

DEFAULT_MIRROR_ROOT = Path("/work/.mirror")
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "dualplane" / "real-sites"
ALLOW_ALL_ROBOTS = "User-agent: *\nDisallow:\n"


@dataclass(frozen=True)
class MirrorSite:
    """One real site: which files of which commit of which repository are served, and how.

    ``include`` is a regex searched in each HTML file's path below ``folder`` (None: every one);
    ``robots`` is the robots.txt served (none of the three repositories commits one).
    """

    name: str
    kind: str
    repo: str
    commit: str
    folder: str
    licence: str
    include: str | None = None
    robots: str = ALLOW_ALL_ROBOTS

    def wanted(self, path: str) -> bool:
        return path.endswith(".html") and (self.include is None or re.search(self.include, path) is not None)


SITES = (
    MirrorSite(
        name="paws-docs",
        kind="documentation (MkDocs Material, built)",
        repo="paws-r/paws-r.github.io",
        commit="6586e33260fa56b00bfb830383e81a4d58f61cac",
        folder="docs",
        licence="Apache-2.0 (the paws SDK the pages are generated from; the site repo states none)",
        # Of 12,928 API pages of 190 KB (2.6 GB): the guides, the reference index and the services
        # a*, b* and d* with their operations. The nav of every page links every service's index
        # page: the ~300 others answer 404.
        include=r"^(?!docs/)|^docs/reference_index/|^docs/[abd][^/]*/index\.html$",
    ),
    MirrorSite(
        name="kaitai-formats",
        kind="catalogue (format gallery: an item page and 17 generated-code pages per format)",
        repo="kaitai-io/formats-kaitai-io.github.io",
        commit="4ac6e434f7f71b44add8bb3dd946086ff9151b5c",
        folder="",
        licence="each format's own, shown on its page (mostly CC0-1.0 and MIT)",
        robots="User-agent: *\nDisallow: /xref.html\n",
    ),
    MirrorSite(
        name="flink-news",
        kind="blog and news archive (Hugo, built)",
        repo="apache/flink-web",
        commit="aa5b0b18dc0ae74cd3f97bca518fc46124e1927a",
        folder="content",
        licence="Apache-2.0",
        robots="User-agent: *\nDisallow: /zh/\n",
    ),
    # Added for issue #35 (figures before that are of the three above): documentation of generators the
    # extractor's routes were not written on, from the test split of doc_sites.py.
    MirrorSite(
        name="rusty-machine",
        kind="API documentation (rustdoc 2017, built)",
        repo="AtheMathmo/rusty-machine",
        commit="ffa15674a3bc893b06cf7d3f72043e0b801223c8",
        folder="",
        licence="MIT",
    ),
    MirrorSite(
        name="csveed",
        kind="project site (Maven site 2025: Doxia pages, Javadoc 21, JXR source, JaCoCo reports; built)",
        repo="42BV/CSVeed",
        commit="54ea51cdff30a041b6e1c430cd63046e5f8d3ebe",
        folder="",
        licence="Apache-2.0",
    ),
    # Added in the thirteenth CPU round (issue #35): the test4 split of doc_sites.py, generators no route
    # knows (Antora, VuePress): what a crawl's extractor learns per host is measured on them.
    MirrorSite(
        name="infor-notes",
        kind="documentation (Antora 3.1.14, default UI, built)",
        repo="inf0rmatiker/inf0rmatiker.github.io",
        commit="4353038c0465594e707a963d9fd609aad3425227",
        folder="docs-site",
        licence="Apache-2.0",
    ),
    MirrorSite(
        name="hakan-notes",
        kind="notes (VuePress 1.4.0, default theme, Turkish, built)",
        repo="hakanyalcinkaya/hakanyalcinkaya.github.io",
        commit="3ce03711f825e1abc6028c63b347228f090a7dc3",
        folder="",
        licence="none stated (read from the snapshot only)",
        include=r"^(?!docs/)",
    ),
)


def git_dir(mirror_root: Path, repo: str) -> Path:
    """The git directory of ``repo`` under ``mirror_root``: the fetch tool's ``OWNER+NAME/repo``, a
    bare clone ``OWNER+NAME``, or a clone with a work tree ``OWNER+NAME/.git``."""
    base = mirror_root / repo.replace("/", "+")
    for candidate in (base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    raise SystemExit(
        f"no snapshot of {repo} under {mirror_root}: expected {base}/repo (fetch tool) or a bare clone "
        f"at {base} (git clone --bare https://github.com/{repo} {base})"
    )


def build(site: MirrorSite, mirror_root: Path, cache_dir: Path) -> dict[str, Any]:
    """Unpack ``site``'s HTML files into ``cache_dir/NAME`` once per commit; returns its manifest."""
    root = cache_dir / site.name
    manifest_path = root / "_manifest.json"
    if manifest_path.is_file():
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        if manifest.get("site") == asdict(site):
            return manifest
    git = ["git", "--git-dir", str(git_dir(mirror_root, site.repo))]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "-z", site.commit, "--", site.folder or "."], capture_output=True, check=False
    )
    if listing.returncode != 0:
        raise SystemExit(
            f"git ls-tree of {site.repo}@{site.commit} failed: {listing.stderr.decode().strip()}"
        )
    prefix = f"{site.folder}/" if site.folder else ""
    blobs = {}  # path below the folder -> blob id
    for entry in listing.stdout.split(b"\0"):
        if entry:
            info, path = entry.decode().split("\t", 1)
            relative = path.removeprefix(prefix)
            if info.split()[1] == "blob" and site.wanted(relative):
                blobs[relative] = info.split()[2]
    sizes, missing = _unpack(git, blobs, root)
    manifest = {
        "site": asdict(site),
        "pages": len(sizes),
        "bytes": sum(sizes),
        "median_page_bytes": statistics.median(sizes) if sizes else 0,
        "missing_from_snapshot": missing,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def _unpack(git: list[str], blobs: dict[str, str], root: Path) -> tuple[list[int], list[str]]:
    """Write every blob to ``root/PATH`` through one ``git cat-file --batch``. Snapshots of the fetch
    tool lack files of 4 MiB and more: those are listed as missing (and served as 404), not fatal."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    sizes, missing = [], []
    request = "".join(f"{blob}\n" for blob in blobs.values()).encode()
    with subprocess.Popen(
        [*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as cat:
        assert cat.stdin is not None and cat.stdout is not None
        writer = threading.Thread(target=_feed, args=(cat.stdin, request), daemon=True)
        writer.start()
        for path in blobs:
            header = cat.stdout.readline().split()
            if header[-1] == b"missing":
                missing.append(path)
                continue
            size = int(header[2])
            body = cat.stdout.read(size + 1)[:size]  # the content, then a newline
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            sizes.append(size)
        writer.join()
    return sizes, missing


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with pipe:
        pipe.write(data)


def chosen(names: str) -> tuple[MirrorSite, ...]:
    """The sites named (comma-separated), in ``SITES`` order; ``all`` for every one."""
    known = {site.name: site for site in SITES}
    wanted = list(known) if names == "all" else names.split(",")
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"no real site {', '.join(unknown)}; choose from {', '.join(known)} or all")
    return tuple(site for site in SITES if site.name in wanted)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRROR_ROOT)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--base-port", type=int, default=0, help="first port (0: a free range)")
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--build-only", action="store_true", help="unpack and describe, do not serve")
    parser.add_argument("--sites", default="all", help=f"some of {','.join(s.name for s in SITES)}")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sites = chosen(args.sites)
    manifests = [build(site, args.mirror_root, args.cache_dir) for site in sites]
    if args.build_only:
        _describe_build(manifests, args.json)
        return
    serve(sites, args.cache_dir, args.base_port, args.latency_ms, manifests)


def _describe_build(manifests: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(manifests, indent=1))
        return
    for manifest in manifests:
        site = manifest["site"]
        print(
            f"{site['name']:16}{manifest['pages']:7} pages {manifest['bytes'] / 1e6:8.1f} MB  median "
            f"{manifest['median_page_bytes'] / 1024:6.1f} KiB  {site['repo']}@{site['commit'][:10]}"
        )
    total = sum(m["pages"] for m in manifests), sum(m["bytes"] for m in manifests) / 1e6
    print(f"{'all':16}{total[0]:7} pages {total[1]:8.1f} MB", file=sys.stdout)


if __name__ == "__main__":
    main()
