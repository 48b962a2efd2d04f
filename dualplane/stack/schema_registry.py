"""An optional Confluent-compatible schema registry on loopback: Rivven's ``rivven-schema``, in memory.

The server speaks the Confluent Schema Registry REST API (register under a subject, fetch by id,
per-subject compatibility, BACKWARD checks on Avro). It is a Rust binary that cargo builds from the
crate's published source once per machine into ``$XDG_CACHE_HOME/dualplane/rivven-schema-VERSION``
(``dualplane stack install``, so ``make setup``): minutes to build, well under a second to start.
It runs only when asked (``dualplane stack up --with-registry``, the Schema Registry tests).

Two fixes (:data:`FIXES`) are applied to the published source before building; both are bugs our
evolution hits, and every other behaviour is the crate's own. Drop them once a release has them:

- its Avro compatibility check knows no logical types, so it refuses any new version of a schema
  with a ``timestamp-millis`` or ``decimal`` field ("writer=TimestampMillis, reader=TimestampMillis");
  the fix declares identical types compatible, as the Avro specification does;
- a schema it already knows under another subject (``page_record`` v2 under ``records-value``,
  then under a replay topic's subject) is added to a subject only when that subject is empty, and
  without a compatibility check; the fix adds it as a new version, after the check, unless the
  subject already holds it (the Confluent registry's behaviour).

Schemas live in memory, like the local S3 endpoint's objects: after ``stack down`` the registry
starts empty and hands out ids again from 1, so Kafka data written in registry mode against the
previous run no longer resolves. That suits a development stack; the compose stack runs a registry
that keeps its schemas. Address: ``DUALPLANE_SCHEMA_REGISTRY_URL`` when it names a loopback URL,
else ``http://127.0.0.1:8081``; clients use the registry only when that variable is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import httpx

from dualplane.core.settings import Settings
from dualplane.stack.base import Endpoint, LocalService
from dualplane.stack.exceptions import PrerequisiteMissing, StackError
from dualplane.stack.kafka_dist import cache_root
from dualplane.stack.process import spawn_detached

CRATE = "rivven-schema"
CRATE_VERSION = "0.0.22"
# Only what the server needs: Avro checks and the HTTP server (the CLI feature carries its logging).
CRATE_FEATURES = "server,avro,cli"
DEFAULT_URL = "http://127.0.0.1:8081"
CARGO_FIX = (
    "cargo not found: install a Rust toolchain with rustup (Debian's own cargo is too old for the "
    "registry's dependencies) to build the local schema registry, or skip it: it is optional"
)
HEALTH_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class SourceFix:
    """Insert ``code`` into ``path`` (relative to the crate) just before the one line ``before``."""

    path: str
    before: str
    code: str

    def apply(self, root: Path) -> None:
        target = root / self.path
        text = target.read_text()
        if text.count(self.before) != 1:
            raise StackError(f"a dualplane fix no longer applies to {target}; update FIXES for this release")
        target.write_text(text.replace(self.before, self.code + self.before))


FIXES = (
    SourceFix(
        "src/compatibility.rs",
        "    match (writer, reader) {\n        // Same type always compatible\n",
        "    if writer == reader {\n"
        "        return Ok(()); // identical types, logical ones too (dualplane's fix)\n"
        "    }\n",
    ),
    SourceFix(
        "src/registry.rs",
        "            if versions.is_empty() {\n                self.storage\n",
        "            // dualplane's fix: a schema known under other subjects becomes a new version here\n"
        "            // (checked first) unless this subject holds it; `versions` steers the code below\n"
        "            let mut held = false;\n"
        "            for number in &versions {\n"
        "                let version = SchemaVersion::new(*number);\n"
        "                if let Some(entry) = self.storage.get_subject_version(&subject, version).await? {\n"
        "                    held = held || entry.id == existing.id;\n"
        "                }\n"
        "            }\n"
        "            let checked = self.get_subject_compatibility(&subject) != CompatibilityLevel::None;\n"
        "            if !held && !versions.is_empty() && checked {\n"
        "                self.check_compatibility_internal(&subject, schema_type, &normalized_schema)\n"
        "                    .await?;\n"
        "            }\n"
        "            let versions: Vec<u32> = if held { versions } else { Vec::new() };\n",
    ),
)


def find_cargo() -> str | None:
    """cargo on the PATH, or where rustup puts it (a non-login shell may lack ``~/.cargo/bin``)."""
    rustup_cargo = Path.home() / ".cargo" / "bin" / "cargo"
    return shutil.which("cargo") or (str(rustup_cargo) if rustup_cargo.is_file() else None)


class RegistryDistribution:
    """The ``rivven-schema`` binary: ``install()`` builds it once, then ``binary`` runs it."""

    def __init__(self, version: str = CRATE_VERSION, root: Path | None = None) -> None:
        self.version = version
        self.home = (root or cache_root()) / f"{CRATE}-{version}"
        self.binary = self.home / "bin" / CRATE

    @property
    def installed(self) -> bool:
        return self.binary.is_file()

    def install(self) -> None:
        """Fetch the pinned crate, apply :data:`FIXES`, build it with its lock file; once per machine."""
        if self.installed:
            return
        cargo = find_cargo()
        if cargo is None:
            raise PrerequisiteMissing(CARGO_FIX)
        self.home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.home) as work:
            source = self._fixed_source(cargo, Path(work))
            _cargo(cargo, "install", "--path", str(source), "--locked", "--root", str(self.home),
                   "--no-default-features", "--features", CRATE_FEATURES)  # fmt: skip
        if not self.installed:
            raise StackError(f"cargo built {CRATE} {self.version} but {self.binary} is missing")

    def _fixed_source(self, cargo: str, work: Path) -> Path:
        """A copy of the crate's published source (``cargo info`` unpacks it) with :data:`FIXES` applied."""
        _cargo(cargo, "info", f"{CRATE}@{self.version}")
        cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
        unpacked = sorted(cargo_home.glob(f"registry/src/*/{CRATE}-{self.version}"))
        if not unpacked:
            raise StackError(f"cargo fetched {CRATE} {self.version} but its source is not under {cargo_home}")
        source = work / unpacked[-1].name
        shutil.copytree(unpacked[-1], source)
        for fix in FIXES:
            fix.apply(source)
        return source


def _cargo(cargo: str, *args: str) -> None:
    result = subprocess.run([cargo, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise StackError(
            f"`cargo {args[0]}` failed for {CRATE}: {' | '.join(tail)}. Check that the crate registry is "
            "reachable and that the Rust toolchain is recent (rustup update)"
        )


class SchemaRegistryServer(LocalService):
    name = "schema-registry"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.distribution = RegistryDistribution()

    @property
    def url(self) -> str:
        """The registry's URL: the first of ``DUALPLANE_SCHEMA_REGISTRY_URL``, else the default."""
        configured = self.settings.schema_registry.url
        return (configured.split(",")[0].strip() if configured else DEFAULT_URL).rstrip("/")

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint.parse(self.url, 8081, "DUALPLANE_SCHEMA_REGISTRY_URL")

    def check_prerequisites(self) -> None:
        if not self.distribution.installed and find_cargo() is None:
            raise PrerequisiteMissing(CARGO_FIX)

    def install(self) -> None:
        self.distribution.install()

    def start(self) -> int:
        host, port = self.endpoint.host, str(self.endpoint.port)
        return spawn_detached(
            [str(self.distribution.binary), "serve", "--host", host, "--port", port], self.log_path
        )

    def healthy(self) -> tuple[bool, str]:
        if not self.endpoint.port_open():
            return False, "port closed"
        try:
            response = httpx.get(f"{self.url}/subjects", timeout=HEALTH_TIMEOUT_S, auth=self._auth())
            subjects = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as error:
            return False, f"port open but GET /subjects failed: {error}"
        if not isinstance(subjects, list):
            return False, f"port open but GET /subjects answered {response.status_code}"
        return True, f"Confluent REST API, {len(subjects)} subjects"

    def display_endpoint(self) -> str:
        return self.url

    def _auth(self) -> tuple[str, str] | None:
        secret = self.settings.schema_registry.basic_auth_user_info
        if secret is None:
            return None
        user, _, password = secret.get_secret_value().partition(":")
        return user, password
