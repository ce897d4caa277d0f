"""Test support: the real servers of the remote-store tests (``pipeline.cache.servers``) and
a silent one (a hung server, for the timeouts)."""

from __future__ import annotations

import socket
import threading

from pipeline.cache.servers import (  # noqa: F401 (the tests reach them as servers.<name>)
    BUCKET,
    HTTP_USER,
    READER,
    WRITER,
    HttpServer,
    S3Server,
    free_port,
    start_seaweedfs,
    start_webdav,
)
from pipeline.cache.servers import stop as _stop  # noqa: F401


class SilentServer:
    """A socket that accepts connections and never answers (a hung server)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()
