"""Which services ``stack up`` started, kept in ``DATA_DIR/stack.json`` so ``down`` stops only those."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from dualplane.stack.process import same_process


@dataclass(frozen=True)
class StartedService:
    """A process ``stack up`` started: its pid plus its kernel start time, which make it unique."""

    pid: int
    started_at: float
    start_ticks: int | None = None

    def running(self) -> bool:
        return same_process(self.pid, self.start_ticks)


class StackState:
    """A small JSON file of started services, rewritten atomically on every change."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "stack.json"

    def load(self) -> dict[str, StartedService]:
        if not self.path.exists():
            return {}
        raw = json.loads(self.path.read_text() or "{}")
        return {name: StartedService(**entry) for name, entry in raw.items()}

    def record(self, name: str, service: StartedService) -> None:
        entries = self.load()
        entries[name] = service
        self._write(entries)

    def forget(self, name: str) -> None:
        entries = self.load()
        if entries.pop(name, None) is not None:
            self._write(entries)

    def _write(self, entries: dict[str, StartedService]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({k: asdict(v) for k, v in entries.items()}, indent=2))
        temporary.replace(self.path)
