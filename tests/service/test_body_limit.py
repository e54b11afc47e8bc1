"""Bounded input at the door (issue 12): a request body over the limit is refused with 413
problem+json before it is parsed and before authentication, whether it declares its length or
streams it; webhook alert fields are capped with the truncation marked; a batch is validated
whole before any investigation starts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from seenbefore.cli.common import JSON_SCHEMA_VERSION
from seenbefore.service.models import SEARCH_JSON_VERSION
from tests.service.conftest import MakeService, Service

MB = 1024 * 1024


def test_an_unauthenticated_150_mb_body_is_refused_before_it_is_read(service: Service) -> None:
    body = b"x" * (150 * MB)
    out = service.client.post(
        "/v1/search", content=body, headers={"Content-Type": "application/json"}
    )
    assert out.status_code == 413
    assert out.headers["content-type"] == "application/problem+json"
    problem = out.json()
    assert problem["status"] == 413 and problem["type"].endswith("content-too-large")
    assert f"{150 * MB:,} bytes" in problem["detail"] and "1,048,576" in problem["detail"]


def test_a_streamed_body_is_counted_and_cut_off(service: Service) -> None:
    sent = [0]

    def chunks() -> Iterator[bytes]:
        for _ in range(64):  # 4 MB in 64 KB pieces, no Content-Length
            sent[0] += 1
            yield b"y" * 65536

    out = service.client.post(
        "/v1/search",
        content=chunks(),
        headers={"Content-Type": "application/json", **service.headers("viewer")},
    )
    assert out.status_code == 413
    assert "more than 1,048,576 bytes" in out.json()["detail"]


def test_a_body_under_the_limit_still_reaches_auth_and_the_route(service: Service) -> None:
    assert service.client.post("/v1/search", json={"query": "pool"}).status_code == 401
    ok = service.as_("viewer", "post", "/v1/search", json={"query": "checkout pool"})
    assert ok.status_code == 200
    assert ok.json()["version"] == JSON_SCHEMA_VERSION  # the same key the CLI's --json carries
    assert SEARCH_JSON_VERSION == JSON_SCHEMA_VERSION


def test_the_limit_is_a_setting(make_service: MakeService) -> None:
    service = make_service(max_request_bytes=2048)
    big = {"query": "pool " * 600}  # ~3 KB
    assert service.as_("viewer", "post", "/v1/search", json=big).status_code == 413
    assert service.as_("viewer", "post", "/v1/search", json={"query": "pool"}).status_code == 200


def _firing(**annotations: str) -> dict[str, Any]:
    return {
        "status": "firing",
        "labels": {"alertname": "PoolExhausted", "service": "checkout-api"},
        "annotations": annotations,
        "startsAt": "2026-11-30T00:11:42Z",
        "fingerprint": "c0ffee",
    }


def test_a_huge_summary_is_capped_and_the_cut_marked(make_service: MakeService) -> None:
    service = make_service(max_request_bytes=4 * MB)
    summary = "checkout pool exhausted " + "z" * (MB - 24)
    out = service.as_(
        "responder",
        "post",
        "/v1/alerts/alertmanager",
        json={"version": "4", "alerts": [_firing(summary=summary)]},
    )
    assert out.status_code == 200, out.text
    rid = out.json()["started"][0]["investigation_id"]
    review = service.as_("viewer", "get", f"/v1/investigations/{rid}").json()
    query = review["request"]["query"]
    assert query.startswith("checkout pool exhausted zzz")
    assert "… [truncated 1,048,576 → 2,000 chars]" in query
    assert len(query) < 10_000
    assert review["source"]["truncated"] == ["alerts[0].annotations.summary"]


def test_a_batch_with_a_bad_alert_starts_nothing_and_names_it(service: Service) -> None:
    good = _firing(summary="checkout pool exhausted")
    out = service.as_(
        "responder",
        "post",
        "/v1/alerts/alertmanager",
        json={"version": "4", "alerts": [good, {"status": "firing"}]},
    )
    assert out.status_code == 400
    assert out.json()["detail"].startswith("alerts[1] ")
    assert service.as_("viewer", "get", "/v1/reviews?status=all").json()["reviews"] == []


def test_a_real_server_refuses_150_mb_after_reading_the_headers_only(service: Service) -> None:
    """uvicorn on a socket: the 413 comes back while the client has sent 64 KB of 150 MB."""
    import socket
    import urllib.parse

    from seenbefore.service.app import create_app
    from tests.service.live import live_server

    with live_server(create_app(service.settings)) as url:
        where = urllib.parse.urlsplit(url)
        with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {150 * MB}\r\n\r\n".encode()
                + b"x" * 65536
            )
            answer = b""
            while b"\r\n\r\n" not in answer:
                piece = sock.recv(65536)
                if not piece:
                    break
                answer += piece
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"application/problem+json" in answer
