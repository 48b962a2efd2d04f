"""One Apache Kafka release as jars, fetched from Maven Central with ``mvn`` and cached.

The jars live outside the repository, in ``$XDG_CACHE_HOME/dualplane/kafka-VERSION/libs``
(default ``~/.cache``), so every checkout and every test run shares one download.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from dualplane.stack.exceptions import PrerequisiteMissing, StackError

JAVA_FIX = "java not found: install a Java 17+ runtime (`apt-get install -y openjdk-17-jre-headless`)"
MVN_FIX = "mvn not found: install Maven (`apt-get install -y maven`) to fetch the Kafka jars"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dualplane"


def template(name: str) -> str:
    return (resources.files("dualplane.stack") / "templates" / name).read_text()


class KafkaDistribution:
    """The jars of Kafka ``version``: ``install()`` once, then ``java_command()`` as often as needed."""

    def __init__(self, version: str, root: Path | None = None) -> None:
        self.version = version
        self.home = (root or cache_root()) / f"kafka-{version}"
        self.libs = self.home / "libs"
        self._complete_marker = self.home / ".complete"

    @property
    def installed(self) -> bool:
        return self._complete_marker.exists()

    def install(self) -> None:
        """Resolve the release with ``mvn dependency:copy-dependencies`` unless already cached."""
        if self.installed:
            return
        if shutil.which("mvn") is None:
            raise PrerequisiteMissing(MVN_FIX)
        self.home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.home) as work:
            pom = Path(work) / "pom.xml"
            pom.write_text(template("kafka-pom.xml").replace("${kafka.version}", self.version))
            staging = Path(work) / "libs"
            result = subprocess.run(
                ["mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
                 f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if result.returncode != 0:
                tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
                raise StackError(
                    f"mvn could not fetch Kafka {self.version}: {' | '.join(tail)}. "
                    "Check DUALPLANE_STACK_KAFKA_VERSION and that Maven Central is reachable."
                )
            shutil.rmtree(self.libs, ignore_errors=True)
            staging.rename(self.libs)
        self._complete_marker.write_text(self.version)

    def java_command(self, main_class: str, *args: str, jvm_options: tuple[str, ...] = ()) -> list[str]:
        """``java -cp libs/* [options] main_class args`` for a class of this release."""
        java = shutil.which("java")
        if java is None:
            raise PrerequisiteMissing(JAVA_FIX)
        return [java, *jvm_options, "-cp", f"{self.libs}/*", main_class, *args]
