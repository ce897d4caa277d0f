"""The remote store against real servers: SeaweedFS (S3) and nginx (WebDAV), started here.

The S3 tests share one server and one cold build ("runner A", which writes); each later
runner is a fresh folder with an empty store, as a new CI machine or a laptop would be.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cache.key import canonical_json
from pipeline.cache.remote import Remote, record_matches, remote_config
from pipeline.cache.store import Store
from pipeline.errors import UserError
from tests.cache import servers
from tests.e2e.runner import ADD_AND_CNN, doit_argv

ROOT = Path(__file__).resolve().parents[2]


def e2e(test):
    """Runs ``doit build`` (torch, the TOSA reference model) in temporary runner folders,
    against the real servers."""
    for mark in (pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref,
                 pytest.mark.needs_servers):
        test = mark(test)
    return test


MODELS = ADD_AND_CNN


def runner(folder: Path, models: str = "[add]") -> Path:
    """A fresh checkout: the models and a targets.yaml with one host target, no store."""
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "models", folder / "models")
    (folder / "targets.yaml").write_text(
        MODELS + f"targets:\n  ref:\n    cpu: host\n    npu: null\n    models: {models}\n")
    return folder


def doit(folder: Path, remote: str, env: dict[str, str], *args: str,
         python: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    argv = doit_argv(folder, "build", f"remote={remote}", *args, python=python)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("AWS_", "ETHOSU_PIPELINE_REMOTE"))}
    proc = subprocess.run(argv, capture_output=True, text=True, env={**clean, **env},
                          check=False)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def computed(proc: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"^   (\S+): built in", proc.stdout, re.MULTILINE)


def restored(proc: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"^   (\S+): restored from remote", proc.stdout, re.MULTILINE)


def summary(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("remote cache ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def client(server: servers.S3Server, prefix: str):
    from obstore.store import S3Store

    return S3Store(servers.BUCKET, prefix=prefix, endpoint=server.endpoint,
                   access_key_id=servers.WRITER[0], secret_access_key=servers.WRITER[1],
                   region="us-east-1", client_options={"allow_http": True})


def listing(server: servers.S3Server, prefix: str, under: str = "") -> list[str]:
    import obstore

    return sorted(m["path"] for batch in obstore.list(client(server, prefix), under or None)
                  for m in batch)


def manifests(server: servers.S3Server, prefix: str) -> tuple[list[dict], list[dict]]:
    """The manifests under ``ac/``: (the stage entries, the loaded-files indexes). A stage that
    records the files it loaded (the operator files of quantize and lower: graph/loaded.py)
    writes an index under its first-level key beside its entry."""
    import obstore

    found = [json.loads(bytes(obstore.get(client(server, prefix), path).bytes()))
             for path in listing(server, prefix, "ac")]
    indexes = [m for m in found if m["record"].get("stage") == "loaded-files"]
    return [m for m in found if m not in indexes], indexes


# ---- fixtures ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = servers.start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    servers._stop(server.proc)


@pytest.fixture(scope="module")
def dav(tmp_path_factory):
    server = servers.start_webdav(tmp_path_factory.mktemp("nginx"))
    yield server
    servers._stop(server.proc)


@pytest.fixture(scope="module")
def written(s3, tmp_path_factory):
    """Runner A: a cold build that writes to s3://cache/team (run under -X importtime)."""
    folder = runner(tmp_path_factory.mktemp("runs") / "a")
    proc = doit(folder, "s3://cache/team", s3.env(), "remote_mode=write",
                python=("-X", "importtime"))
    return folder, proc


# ---- S3 (SeaweedFS) ---------------------------------------------------------------------

@e2e
def test_writer_uploads_each_stage_it_computed_manifest_last(written, s3):
    folder, proc = written
    built = computed(proc)
    assert built, proc.stdout
    entries, indexes = manifests(s3, "team")
    assert sorted(m["record"]["stage"] for m in entries) == sorted(t.split(":")[0] for t in built)
    assert {m["record"]["stage"] for m in entries if "loaded" in m["record"]} == {
        "quantize", "lower"}  # the stages whose entries an index points to
    total = len(entries) + len(indexes)
    assert f"{len(built)} misses" in summary(proc) and f"({total} entries)" in summary(proc)
    blobs = set(listing(s3, "team", "cas"))
    for manifest in entries + indexes:  # every manifest's blobs are there: a reader never sees half
        assert {f"cas/{d[:2]}/{d}" for d in manifest["outputs"].values()} <= blobs


@e2e
def test_fresh_runner_restores_everything_and_computes_nothing(written, s3, tmp_path):
    first, proc = written
    folder = runner(tmp_path / "b")
    again = doit(folder, "s3://cache/team", s3.env(servers.READER))
    assert computed(again) == []
    assert sorted(restored(again)) == sorted(computed(proc))
    # a hit per stage entry, and one per loaded-files index read on the way to its entry
    lookups = sum(len(found) for found in manifests(s3, "team"))
    assert f"{lookups} hits, 0 misses, 0 damaged" in summary(again)
    for name in ("model.tosa", "io.json", "verify.json"):
        assert (folder / "build/ref/add" / name).read_bytes() == \
            (first / "build/ref/add" / name).read_bytes()


def push(store: Path, s3: servers.S3Server, prefix: str) -> None:
    """Upload a runner's local store to ``s3://cache/<prefix>`` (``pipeline.cache push``)."""
    seeded = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store", str(store),
                             "push", "--remote", f"s3://cache/{prefix}"],
                            capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, **s3.env()}, check=False)
    assert seeded.returncode == 0, seeded.stderr


@e2e
def test_second_runner_builds_only_what_the_first_did_not(written, s3, tmp_path):
    """Against a copy of runner A's entries (its store pushed to a prefix of this test's own),
    so that what this runner writes never reaches the tests that count runner A's entries."""
    first, proc = written
    push(first / "store", s3, "second")
    folder = runner(tmp_path / "c", models="[add, cnn]")
    second = doit(folder, "s3://cache/second", s3.env(), "remote_mode=write")
    assert sorted(restored(second)) == sorted(computed(proc))
    assert computed(second) and all(":cnn" in task for task in computed(second))
    assert len(manifests(s3, "second")[0]) == len(computed(proc)) + len(computed(second))


@e2e
def test_noop_build_never_imports_the_client(written, s3):
    folder, proc = written
    assert re.search(r"\| obstore$", proc.stderr, re.MULTILINE), "the cold build used it"
    noop = doit(folder, "s3://cache/team", s3.env(), "remote_mode=write",
                python=("-X", "importtime"))
    assert computed(noop) == [] and restored(noop) == []
    assert "obstore" not in noop.stderr
    assert "remote cache" not in noop.stderr  # nothing consulted, nothing to sum up


@e2e
def test_tampered_remote_blob_is_a_miss_and_recomputed(written, s3, tmp_path):
    import obstore

    first, _ = written
    push(first / "store", s3, "tampered")
    store = client(s3, "tampered")
    quantize = next(json.loads(bytes(obstore.get(store, p).bytes()))
                    for p in listing(s3, "tampered", "ac")
                    if '"stage": "quantize"' in bytes(obstore.get(store, p).bytes()).decode())
    name, digest = sorted(quantize["outputs"].items())[0]
    blob = bytearray(obstore.get(store, f"cas/{digest[:2]}/{digest}").bytes())
    blob[len(blob) // 2] ^= 0xFF
    obstore.put(store, f"cas/{digest[:2]}/{digest}", bytes(blob))

    folder = runner(tmp_path / "d")
    proc = doit(folder, "s3://cache/tampered", s3.env(servers.READER))
    assert re.search(rf"remote cache entry {quantize['key'][:12]} .* is damaged \({name} does "
                     "not match its checksum\\); recomputing", proc.stderr), proc.stderr
    stages = [t.split(":")[0] for t in computed(proc)]
    assert stages[0] == "quantize" and "export" not in stages, proc.stdout
    assert "1 damaged" in summary(proc)
    assert json.loads((folder / "build/ref/report.json").read_text())["models"]["add"]


@e2e
def test_read_only_credentials_upload_nothing(s3, tmp_path):
    folder = runner(tmp_path / "e")
    proc = doit(folder, "s3://cache/readonly", s3.env(servers.READER), "remote_mode=write")
    assert computed(proc)  # the build itself is green
    warnings = re.findall(r"^warning: remote cache .* refused an upload .*$", proc.stderr,
                          re.MULTILINE)
    assert len(warnings) == 1 and "PermissionDeniedError" in warnings[0]
    assert listing(s3, "readonly") == []
    assert "(0 entries), 1 errors" in summary(proc)


def _race(store: Path, url: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline.cache", "--store", str(store),
                             "push", "--remote", url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **env})


@e2e
@pytest.mark.parametrize("backend", ["s3", "webdav"])
def test_two_concurrent_writers_on_one_key_both_succeed(written, s3, dav, backend, tmp_path):
    """Two stores hold the same keys with different manifests (made at other times); both
    push at once. Both succeed and a reader gets one whole, valid entry per key."""
    first, _ = written
    twin = tmp_path / "twin"
    shutil.copytree(first / "store", twin)
    for manifest in twin.glob("??/*/manifest.json"):
        data = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**data, "created": "2000-01-01T00:00:00Z"}))
    url = "s3://cache/race" if backend == "s3" else f"{dav.url}/race"
    env = s3.env() if backend == "s3" else dav.env()
    racers = [_race(first / "store", url, env), _race(twin, url, env)]
    outputs = [r.communicate(timeout=60) for r in racers]
    assert [r.returncode for r in racers] == [0, 0], outputs
    entries = sum(int(re.search(r"\((\d+) entries\)", out).group(1)) for out, _ in outputs)
    keys = len(list(twin.glob("??/*/manifest.json")))
    assert keys <= entries <= 2 * keys  # S3: exactly one publishes each key
    if backend == "s3":
        assert entries == keys
    pulled = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store",
                             str(tmp_path / "pulled"), "pull", "--remote", url],
                            capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, **env}, check=False)
    assert pulled.returncode == 0 and f"{keys} hits, 0 misses, 0 damaged" in pulled.stdout, \
        pulled.stdout + pulled.stderr


# ---- WebDAV (nginx) ---------------------------------------------------------------------

@e2e
def test_webdav_authenticated_push_then_anonymous_build_restores(written, dav, tmp_path):
    first, proc = written
    pushed = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store",
                             str(first / "store"), "push", "--remote", f"{dav.url}/main"],
                            capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, **dav.env()}, check=False)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert (dav.root / "main" / "ac").is_dir()
    folder = runner(tmp_path / "f")
    again = doit(folder, f"{dav.url}/main", dav.env(user=None))
    assert computed(again) == [] and sorted(restored(again)) == sorted(computed(proc))


@e2e
def test_webdav_anonymous_writer_is_refused_with_one_warning(written, dav):
    first, _ = written
    pushed = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store",
                             str(first / "store"), "push", "--remote", f"{dav.url}/anon"],
                            capture_output=True, text=True, cwd=ROOT, env=dict(os.environ),
                            check=False)
    assert pushed.returncode == 1
    assert len(re.findall("refused an upload", pushed.stderr)) == 1, pushed.stderr
    assert "UnauthenticatedError" in pushed.stderr
    assert not (dav.root / "anon" / "ac").exists()


# ---- an unreachable remote --------------------------------------------------------------

@pytest.fixture(params=["closed-port", "silent"])
def dead_endpoint(request):
    if request.param == "closed-port":
        yield f"http://127.0.0.1:{servers.free_port()}"
        return
    silent = servers.SilentServer()
    yield f"http://127.0.0.1:{silent.port}"
    silent.close()


def test_unreachable_remote_gives_up_in_bounded_time(dead_endpoint, tmp_path, monkeypatch):
    for name, value in {"AWS_ENDPOINT_URL": dead_endpoint, "AWS_ACCESS_KEY_ID": "k",
                        "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
                        "ETHOSU_PIPELINE_REMOTE_TIMEOUT": "1"}.items():
        monkeypatch.setenv(name, value)
    remote = Remote(remote_config("s3://cache/x", "read", tmp_path / "state"))
    store = Store(tmp_path / "store")
    started = time.monotonic()
    assert remote.fetch(store, "ab" * 32) is False
    assert time.monotonic() - started < 2 * 1 + 1.5  # one try, one retry, each 1 s at most
    started = time.monotonic()
    assert remote.fetch(store, "cd" * 32) is False  # off for the rest of the run
    assert time.monotonic() - started < 0.05
    assert (tmp_path / "state" / "off").read_text().startswith("remote cache s3://cache/x "
                                                                "unreachable")


@e2e
def test_build_against_a_server_that_never_answers_warns_once_and_succeeds(tmp_path):
    silent = servers.SilentServer()
    try:
        folder = runner(tmp_path / "g")
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.port}", "AWS_ACCESS_KEY_ID": "k",
               "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1",
               "ETHOSU_PIPELINE_REMOTE_TIMEOUT": "1"}
        proc = doit(folder, "s3://cache/x", env, "remote_mode=write")
    finally:
        silent.close()
    assert len(re.findall("^warning: remote cache .* unreachable", proc.stderr,
                          re.MULTILINE)) == 1, proc.stderr
    assert "(off after an error)" in summary(proc) and "1 errors" in summary(proc)
    assert computed(proc)


# ---- configuration and checks -----------------------------------------------------------

@pytest.mark.parametrize(("url", "mode", "message"), [
    ("ftp://host/cache", "read", r"must start with s3://, http://, https:// or file://; got 'ftp'"),
    ("https://user:secret@host/cache", "read", r"must hold no credentials"),
    ("s3:///prefix", "read", r"must name a bucket"),
    ("s3://bucket", "push", r"remote_mode must be one of read, write; got 'push'"),
])
def test_bad_remote_settings_are_one_line_errors(url, mode, message, tmp_path):
    with pytest.raises(UserError, match=message) as error:
        remote_config(url, mode, tmp_path)
    assert "secret" not in str(error.value)


def test_no_remote_means_none(tmp_path, monkeypatch):
    monkeypatch.delenv("ETHOSU_PIPELINE_REMOTE", raising=False)
    assert remote_config(None, None, tmp_path) is None
    monkeypatch.setenv("ETHOSU_PIPELINE_REMOTE", "file:///tmp/x")
    assert remote_config(None, None, tmp_path).write is False


def test_record_matches_the_three_kinds_of_key():
    from pipeline.graph.loaded import index_key, loaded_key

    record = {"stage": "export", "code": "c", "inputs": {}, "options": {}, "tools": {}}
    key = hashlib.sha256(canonical_json(record).encode()).hexdigest()
    assert record_matches(key, record)
    assert not record_matches(key, {**record, "code": "d"})
    second, second_record = loaded_key(key, record, [Path(__file__)], Path(__file__).parent)
    assert second != key and record_matches(second, second_record)
    assert record_matches(index_key(key), {"stage": "loaded-files", "key": key})
    assert not record_matches(index_key(key), {"stage": "loaded-files", "key": second})


@e2e
def test_file_remote_push_pull_round_trip(written, tmp_path):
    first, _ = written
    url = f"file://{tmp_path / 'shared'}"
    for command, store in (("push", first / "store"), ("pull", tmp_path / "pulled")):
        proc = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store", str(store),
                               command, "--remote", url], capture_output=True, text=True,
                              cwd=ROOT, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    keys = sorted(p.parent.name for p in (first / "store").glob("??/*/manifest.json"))
    assert sorted(p.parent.name for p in (tmp_path / "pulled").glob("??/*/manifest.json")) == keys
    assert all(Store(tmp_path / "pulled").verify(k) is None for k in keys)


@pytest.mark.parametrize(("change", "why"), [
    (lambda m: {**m, "key": "0" * 64}, "belongs to another key"),
    (lambda m: {**m, "record": {**m["record"], "code": "other"}}, "belongs to another key"),
    (lambda m: {**m, "outputs": {"../escape": "a" * 64}}, "lists no valid outputs"),
    (lambda m: {**m, "outputs": {"model.tosa": "../../" + "a" * 58}}, "lists no valid outputs"),
    (lambda m: {**m, "outputs": ["model.tosa"]}, "lists no valid outputs"),
    (lambda m: "not a manifest", "is unreadable"),
], ids=["other-key", "other-record", "path-in-name", "path-in-digest", "outputs-list",
        "not-json-object"])
def test_hostile_manifests_are_refused_before_any_blob_is_fetched(change, why):
    from pipeline.cache.remote import parse_manifest

    record = {"stage": "lower", "code": "c", "inputs": {}, "options": {}, "tools": {}}
    key = hashlib.sha256(canonical_json(record).encode()).hexdigest()
    good = {"key": key, "record": record, "outputs": {"model.tosa": "a" * 64},
            "modes": "not a dict"}
    manifest, problem = parse_manifest(key, json.dumps(good).encode())
    assert problem is None and manifest["modes"] == set()
    assert why in parse_manifest(key, json.dumps(change(good)).encode())[1]


def test_a_bad_remote_url_stops_doit_with_one_line(tmp_path):
    folder = runner(tmp_path / "h")
    argv = doit_argv(folder, "build", "remote=https://ci:hunter2@cache.example.com/team")
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: remote=https://cache.example.com...: the URL must hold no credentials or query; "
        "got some. Credentials come from AWS_* (s3) or ETHOSU_PIPELINE_REMOTE_TOKEN / _USER and "
        "_PASSWORD (http) (see docs/caching.md#credentials)"]
