"""A real S3 HTTP API on loopback: moto's server mode, which boto3 talks to over the network.

moto keeps objects in memory, so the local endpoint starts empty after ``stack down``; that suits
a development stack (the compose stack runs MinIO with a volume instead). ``after_ready``
creates the configured bucket so the services find it.
"""

from __future__ import annotations

import sys

from dualplane.connectors.storage import s3
from dualplane.extras import require
from dualplane.stack.base import Endpoint, LocalService
from dualplane.stack.exceptions import StackError
from dualplane.stack.process import spawn_detached


class S3Endpoint(LocalService):
    name = "s3"

    @property
    def endpoint(self) -> Endpoint:
        url = self.settings.s3.endpoint_url
        if url is None:
            raise StackError("DUALPLANE_S3_ENDPOINT_URL is empty (real AWS); the local stack needs one")
        return Endpoint.parse(url, 9000, "DUALPLANE_S3_ENDPOINT_URL")

    def check_prerequisites(self) -> None:
        require("moto.server", "the local stack's S3 endpoint (moto's server mode)")

    def start(self) -> int:
        host, port = self.endpoint.host, self.endpoint.port
        command = [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)]
        return spawn_detached(command, self.log_path)

    def healthy(self) -> tuple[bool, str]:
        if not self.endpoint.port_open():
            return False, "port closed"
        if s3.answers(self.settings.s3):
            return True, "moto S3 API"
        return False, "port open but ListBuckets failed"

    def after_ready(self) -> None:
        s3.ensure_bucket(self.settings.s3)

    def display_endpoint(self) -> str:
        return str(self.settings.s3.endpoint_url)
