"""The local stack's optional schema registry: where it listens, when it is part of the stack, its fixes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualplane.core.settings import SchemaRegistrySettings, Settings, StackSettings
from dualplane.stack import LocalStack
from dualplane.stack.exceptions import StackError
from dualplane.stack.schema_registry import DEFAULT_URL, FIXES, SchemaRegistryServer, SourceFix
from dualplane.stack.state import StackState, StartedService

pytestmark = pytest.mark.unit


def settings_in(tmp_path: Path, url: str | None = None) -> Settings:
    return Settings(stack=StackSettings(data_dir=tmp_path), schema_registry=SchemaRegistrySettings(url=url))


def test_it_listens_where_the_clients_look_or_on_the_default_port(tmp_path: Path) -> None:
    assert SchemaRegistryServer(settings_in(tmp_path)).url == DEFAULT_URL
    moved = SchemaRegistryServer(settings_in(tmp_path, "http://localhost:18081/,http://127.0.0.1:18082"))
    assert (moved.endpoint.host, moved.endpoint.port) == ("127.0.0.1", 18081)


def test_a_remote_registry_is_not_the_local_stacks_to_serve(tmp_path: Path) -> None:
    with pytest.raises(StackError, match=r"DUALPLANE_SCHEMA_REGISTRY_URL.*not a loopback address"):
        _ = SchemaRegistryServer(settings_in(tmp_path, "https://registry.internal:8081")).endpoint


def test_the_registry_joins_the_stack_when_asked_or_once_started(tmp_path: Path) -> None:
    names = lambda stack: [service.name for service in stack.services]  # noqa: E731

    assert names(LocalStack(settings_in(tmp_path))) == ["kafka", "rabbitmq", "s3"]
    assert names(LocalStack(settings_in(tmp_path), with_registry=True))[-1] == "schema-registry"
    StackState(tmp_path).record("schema-registry", StartedService(pid=1, started_at=0.0))
    assert names(LocalStack(settings_in(tmp_path)))[-1] == "schema-registry"  # so `down` stops it


def test_a_fix_inserts_its_code_once_before_its_anchor(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "lib.rs"
    source.write_text("fn a() {\n    body();\n}\n")

    SourceFix("src/lib.rs", "    body();\n", "    fixed();\n").apply(tmp_path)

    assert source.read_text() == "fn a() {\n    fixed();\n    body();\n}\n"
    with pytest.raises(StackError, match="no longer applies"):
        SourceFix("src/lib.rs", "    gone();\n", "").apply(tmp_path)


def test_every_fix_names_a_source_file_of_the_crate() -> None:
    assert {fix.path for fix in FIXES} == {"src/compatibility.rs", "src/registry.rs"}
    assert all(fix.before.endswith("\n") and fix.code.endswith("\n") for fix in FIXES)
