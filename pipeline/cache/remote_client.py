"""The remote store's settings and its client: URL and mode checks, credentials, time-outs.

Nothing here imports obstore at module level: ``make_client`` does, on the first local miss.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pipeline.errors import UserError, see

SCHEMES = ("s3", "http", "https", "file")
MODES = ("read", "write")
_BACKENDS = "docs/caching.md#backends"  # what each URL scheme means
DEFAULT_TIMEOUT = 10.0  # seconds a request may wait for a byte; connecting gets 2


@dataclass(frozen=True)
class RemoteConfig:
    """Where the remote is and how a run uses it (picklable: doit's workers get a copy)."""

    url: str
    write: bool
    state: str  # the run's shared state folder (off markers, counters)
    timeout: float = DEFAULT_TIMEOUT


def remote_config(url: str | None, mode: str | None, state: Path) -> RemoteConfig | None:
    """The remote from ``remote=``/``remote_mode=`` (else their environment variables); None
    when no remote is set. Raises UserError for a URL or mode the build cannot use."""
    url = url or os.environ.get("ETHOSU_PIPELINE_REMOTE") or None
    mode = mode or os.environ.get("ETHOSU_PIPELINE_REMOTE_MODE") or "read"
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise UserError(f"remote={url}: the URL must start with s3://, http://, https:// or "
                        f"file://; got '{parts.scheme or url}' {see(_BACKENDS)}")
    if parts.username or parts.password or parts.query:
        raise UserError(f"remote={parts.scheme}://{parts.hostname}...: the URL must hold no "
                        "credentials or query; got some. Credentials come from AWS_* (s3) or "
                        "ETHOSU_PIPELINE_REMOTE_TOKEN / _USER and _PASSWORD (http) "
                        f"{see('docs/caching.md#credentials')}")
    if parts.scheme == "s3" and not parts.netloc:
        raise UserError(f"remote={url}: an s3 URL must name a bucket (s3://bucket/prefix) "
                        f"{see(_BACKENDS)}")
    if mode not in MODES:
        raise UserError(f"remote_mode={mode}: remote_mode must be one of read, write; "
                        f"got '{mode}' {see('docs/caching.md#read-only-by-default')}")
    raw = os.environ.get("ETHOSU_PIPELINE_REMOTE_TIMEOUT", "")
    try:
        timeout = float(raw) if raw else DEFAULT_TIMEOUT
        if not 0 < timeout <= 600:
            raise ValueError
    except ValueError:
        page = see("docs/caching.md#the-remote-never-fails-a-build")
        raise UserError("ETHOSU_PIPELINE_REMOTE_TIMEOUT: the time-out must be seconds in "
                        f"(0, 600]; got '{raw}' {page}") from None
    return RemoteConfig(url.rstrip("/"), mode == "write", str(state), timeout)


def short_error(error: Exception) -> str:
    """obstore's message without its debug dump: the request, the retries, the cause."""
    head, _, debug = str(error).partition("Debug source:")
    head = re.sub(r", max_retries: \d+, retry_timeout: \S+", "", " ".join(head.split()))
    causes = [k for k in dict.fromkeys(re.findall(r"kind: (\w+)", debug)) if k != "Request"]
    return head[:220] + (f" ({', '.join(causes)})" if causes else "")



def make_client(config: RemoteConfig):
    """The obstore store for the URL, with bounded time-outs and at most one retry."""
    from datetime import timedelta

    from obstore.store import HTTPStore, LocalStore, S3Store

    parts = urlsplit(config.url)
    # A stalled server is noticed after `timeout` seconds without a byte (read_timeout); a
    # slow but moving transfer (a big runtime blob on a laptop's link) may take 30 times that.
    options = {"connect_timeout": f"{min(2.0, config.timeout)}s",
               "read_timeout": f"{config.timeout}s", "timeout": f"{30 * config.timeout}s"}
    retry = {"max_retries": 1, "retry_timeout": timedelta(seconds=30 * config.timeout),
             "backoff": {"init_backoff": timedelta(milliseconds=100),
                         "max_backoff": timedelta(seconds=1)}}
    if parts.scheme == "file":
        folder = Path(parts.path)
        folder.mkdir(parents=True, exist_ok=True)
        return LocalStore(folder)
    if parts.scheme == "s3":
        endpoint = (os.environ.get("ETHOSU_PIPELINE_REMOTE_ENDPOINT")
                    or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))
        extra = {}
        if endpoint:
            extra["endpoint"] = endpoint
            options["allow_http"] = endpoint.startswith("http://")
        if config.write:
            extra["checksum_algorithm"] = "SHA256"  # servers that check it refuse a bad PUT
        return S3Store(parts.netloc, prefix=parts.path.strip("/") or None,
                       client_options=options, retry_config=retry, **extra)
    headers = http_auth()
    if headers:
        options["default_headers"] = headers
    options["allow_http"] = parts.scheme == "http"
    return HTTPStore(config.url, client_options=options, retry_config=retry)


def http_auth() -> dict[str, str]:
    """The Authorization header from ETHOSU_PIPELINE_REMOTE_TOKEN (bearer) or
    ETHOSU_PIPELINE_REMOTE_USER + _PASSWORD (basic); none for anonymous reads."""
    token = os.environ.get("ETHOSU_PIPELINE_REMOTE_TOKEN")
    if token:
        return {"Authorization": f"Bearer {token}"}
    user = os.environ.get("ETHOSU_PIPELINE_REMOTE_USER")
    if user:
        pair = f"{user}:{os.environ.get('ETHOSU_PIPELINE_REMOTE_PASSWORD', '')}".encode()
        return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
    return {}
