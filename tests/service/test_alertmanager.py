"""A real Prometheus Alertmanager (Debian's /usr/bin/prometheus-alertmanager) on 127.0.0.1 with a
webhook receiver pointing at the running service: an alert posted to Alertmanager's API becomes
an investigation with a draft; resolving it closes the investigation."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from seenbefore.service.app import create_app
from tests.service.conftest import prepare_home, service_settings
from tests.service.live import live_server

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
DEADLINE_S = 60.0

pytestmark = pytest.mark.integration

CONFIG = """\
route:
  receiver: seenbefore
  group_by: ['alertname', 'service']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: seenbefore
    webhook_configs:
      - url: {url}/v1/alerts/alertmanager
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials_file: {token_file}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _poll(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise AssertionError(f"no {what} within {DEADLINE_S:.0f} s")


def _start_alertmanager(
    tmp: Path, service_url: str, token: str
) -> tuple[subprocess.Popen[bytes], str]:
    token_file = tmp / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    config = tmp / "alertmanager.yml"
    config.write_text(CONFIG.format(url=service_url, token_file=token_file))
    port = _free_port()
    with (tmp / "alertmanager.log").open("wb") as log:  # the child keeps its own copy
        process = subprocess.Popen(
            [
                ALERTMANAGER,
                f"--config.file={config}",
                f"--storage.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(
                f"alertmanager exited {process.returncode}: {(tmp / 'alertmanager.log').read_text()}"
            )
        try:
            return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    _poll("ready Alertmanager", ready)
    return process, url


@pytest.fixture
def alertmanager_home(tmp_path: Path) -> Iterator[Path]:
    if not os.path.exists(ALERTMANAGER):
        pytest.fail(f"{ALERTMANAGER} is missing: `make test` installs it (scripts/system_deps.sh)")
    yield tmp_path


def test_alert_through_a_real_alertmanager_becomes_an_investigation(
    alertmanager_home: Path,
) -> None:
    tmp = alertmanager_home
    settings = service_settings(tmp / "home")
    tokens = prepare_home(settings.home, tmp / "docs", settings)
    viewer = {"Authorization": f"Bearer {tokens['viewer']}"}
    with live_server(create_app(settings)) as service_url:
        am_dir = tmp / "am"
        am_dir.mkdir()
        process, am_url = _start_alertmanager(am_dir, service_url, tokens["responder"])
        try:
            starts = dt.datetime.now(dt.UTC).replace(microsecond=0)
            alert = {
                "labels": {
                    "alertname": "CheckoutPoolExhausted",
                    "service": "checkout-api",
                    "severity": "critical",
                },
                "annotations": {
                    "summary": "database connections at the pool limit on checkout-api",
                    "description": "p99 latency eightfold, requests waiting for a connection",
                },
                "startsAt": starts.isoformat().replace("+00:00", "Z"),
                "generatorURL": "http://127.0.0.1/graph",
            }
            posted = httpx.post(f"{am_url}/api/v2/alerts", json=[alert], timeout=10)
            assert posted.status_code == 200, posted.text

            def drafted() -> dict[str, Any] | None:
                reviews = httpx.get(
                    f"{service_url}/v1/reviews?status=all", headers=viewer, timeout=10
                ).json()["reviews"]
                return next((r for r in reviews if r["draft"]), None)

            review = _poll("investigation with a draft", drafted)
            assert review["requested_by"] == "service:alertmanager"
            assert review["severity"] == "SEV1"
            assert review["source"]["labels"]["alertname"] == "CheckoutPoolExhausted"
            assert review["source_key"].endswith(":" + alert["startsAt"])
            assert review["evidence"]["candidates"][0]["doc_id"] == "POOL-1"
            assert review["draft"]["cited_incidents"][0] == "POOL-1"

            resolved = {**alert, "endsAt": dt.datetime.now(dt.UTC).isoformat()}
            assert httpx.post(f"{am_url}/api/v2/alerts", json=[resolved], timeout=10).is_success

            def closed() -> bool:
                got = httpx.get(
                    f"{service_url}/v1/investigations/{review['id']}", headers=viewer, timeout=10
                ).json()
                return bool(got["status"] == "closed" and got["outcome"] == "alert_resolved")

            _poll("closed investigation", closed)
            reviews = httpx.get(
                f"{service_url}/v1/reviews?status=all", headers=viewer, timeout=10
            ).json()["reviews"]
            assert len(reviews) == 1  # every re-delivery was idempotent
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
