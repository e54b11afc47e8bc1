"""Property (issue 12) at the HTTP doors: random postmortems written by admins of random tiers
(a taken id or a supersede target answered alike whether hidden or absent), read, searched,
audited, investigated from Alertmanager webhooks and closed by tokens of random tiers. Every
answer a caller gets equals the answer computed from the documents (and reviews) that caller
may see: ``POST`` conflicts never depend on a hidden holder, ``GET`` and search show
supersession over visible documents only, the audit log shows exactly the records of tiers
held, and a resolved alert closes a review only for a token that may see it or that delivered its
firing alert (it knows the review exists; closing tells it nothing more). One service
(SQLite, FastAPI's TestClient, in process) serves every example; each example has its own ids
and words, so examples do not see each other."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seenbefore.kb import KnowledgeBase
from seenbefore.security.tokens import TokenStore
from seenbefore.service.app import create_app
from seenbefore.service.routers.postmortems import cannot_supersede, id_taken
from tests.depth import examples
from tests.service.conftest import service_settings

TIERS = ("general", "restricted", "security")
CALLERS = [tuple(c) for n in range(1, len(TIERS) + 1) for c in itertools.combinations(TIERS, n)]
DATES = (None, "2024-06-01", "2024-06-01", "2025-02-11")
EXAMPLES = itertools.count()


@dataclass
class Door:
    client: TestClient
    tokens: dict[tuple[str, ...], str]
    operations: list[int] = field(default_factory=lambda: [0])

    def call(self, tiers: tuple[str, ...], method: str, url: str, **kw: Any) -> Any:
        out = self.client.request(
            method, url, headers={"Authorization": f"Bearer {self.tokens[tiers]}"}, **kw
        )
        assert out.status_code < 500, out.text
        self.operations[0] += 1
        return out


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    home = tmp_path_factory.mktemp("wall")
    cfg = service_settings(home, service_tiers=TIERS, tiers=TIERS, log_sample_fraction=0.0)
    tokens: dict[tuple[str, ...], str] = {}
    with KnowledgeBase(cfg) as kb:
        store = TokenStore(kb.store)
        for tiers in CALLERS:
            tokens[tiers], _ = store.create("admin-" + "-".join(tiers), "admin", list(tiers))
    with TestClient(create_app(cfg), raise_server_exceptions=False) as client:
        yield Door(client, tokens)


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(min_value=2, max_value=4))
    docs = [
        {
            "i": i,
            "tier": draw(st.sampled_from(TIERS)),
            "writer": draw(st.sampled_from(CALLERS)),
            "supersedes": draw(st.none() | st.integers(0, n)),  # n: an absent id
            "date": draw(st.sampled_from(DATES)),
            "words": draw(st.sets(st.integers(0, 3), min_size=1, max_size=2)),
        }
        for i in range(n)
    ]
    return {
        "docs": docs,
        "callers": draw(st.lists(st.sampled_from(CALLERS), min_size=1, max_size=2)),
        "query": draw(st.sets(st.integers(0, 3), min_size=1, max_size=2)),
        "include": draw(st.booleans()),
        "clash": draw(st.tuples(st.integers(0, n - 1), st.sampled_from(CALLERS))),
        "alert": draw(st.none() | st.tuples(st.sampled_from(CALLERS), st.sampled_from(CALLERS))),
    }


def _markdown(p: str, doc: dict[str, Any], n: int) -> str:
    words = " ".join(f"{p}w{w}" for w in sorted(doc["words"]))
    front = [f"id: {p}-{doc['i']}", f"title: Incident {words}", f"access_tier: {doc['tier']}"]
    if doc["date"]:
        front.append(f"date: {doc['date']}")
    if doc["supersedes"] is not None and doc["supersedes"] != doc["i"]:
        front.append(f"supersedes: {p}-{doc['supersedes'] if doc['supersedes'] < n else 'NONE'}")
    return "---\n" + "\n".join(front) + f"\n---\n## Summary\nThe {words} broke.\n"


def _superseder(p: str, visible: list[dict[str, Any]], i: int) -> str | None:
    """The view computed from visible documents only: the newest visible current superseder."""
    by = [d for d in visible if d["supersedes"] == i and d["i"] != i]
    if not by:
        return None
    by.sort(key=lambda d: f"{p}-{d['i']}")
    dated = sorted((d for d in by if d["date"]), key=lambda d: d["date"], reverse=True)
    return f"{p}-{[*dated, *(d for d in by if not d['date'])][0]['i']}"


def test_every_door_answers_from_the_visible_documents_only(door: Door) -> None:
    @settings(
        max_examples=examples(50),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(world=worlds())
    def check(world: dict[str, Any]) -> None:
        p = f"x{next(EXAMPLES)}"
        docs, n = world["docs"], len(world["docs"])
        everyone = CALLERS[-1]
        start = door.call(everyone, "get", "/v1/audit?limit=1").json()["records"]
        since = start[-1]["id"] if start else 0
        written: list[dict[str, Any]] = []

        def expected(doc: dict[str, Any], writer: tuple[str, ...]) -> tuple[int, str | None]:
            """The answer computed from what the writer may see (the route's order of checks)."""
            if doc["tier"] not in writer:
                return 403, None
            target = doc["supersedes"]
            if target is not None and target != doc["i"]:
                held = [d for d in written if d["i"] == target and d["tier"] in writer]
                if not held:  # absent or hidden: one answer
                    name = f"{p}-{target if target < n else 'NONE'}"
                    return 400, str(cannot_supersede(name))
            if any(d["i"] == doc["i"] for d in written):  # taken, whoever holds it
                return 409, str(id_taken(f"{p}-{doc['i']}"))
            return 201, None

        clash_i, clasher = world["clash"]
        writes = [(doc, doc["writer"]) for doc in docs]
        writes.append(({**docs[clash_i], "tier": clasher[0]}, clasher))
        for doc, writer in writes:
            status, detail = expected(doc, writer)
            body = {"markdown": _markdown(p, doc, n)}
            out = door.call(writer, "post", "/v1/postmortems", json=body)
            assert out.status_code == status, out.text
            if detail is not None:
                assert out.json()["detail"] == detail
            if status == 201:
                written.append(doc)

        for tiers in world["callers"]:
            visible = [d for d in written if d["tier"] in tiers]
            shown = {f"{p}-{d['i']}" for d in visible}
            for i in [*range(n), n]:
                doc_id = f"{p}-{i}"
                got = door.call(tiers, "get", f"/v1/postmortems/{doc_id}")
                if doc_id not in shown:
                    assert (got.status_code, got.json()["detail"]) == (
                        404,
                        f"no postmortem with id '{doc_id}'",
                    )
                    continue
                by = _superseder(p, visible, i)
                body = got.json()
                assert (body["effective_status"], body["superseded_by"]) == (
                    "superseded" if by else "current",
                    by,
                )
            query = " ".join(f"{p}w{w}" for w in sorted(world["query"]))
            found = door.call(
                tiers,
                "post",
                "/v1/search",
                json={"query": query, "k": 50, "include_superseded": world["include"]},
            ).json()["results"]
            expected = set()
            for d in visible:
                by = _superseder(p, visible, d["i"])
                if d["words"] & world["query"] and (world["include"] or by is None):
                    expected.add((f"{p}-{d['i']}", "superseded" if by else "current", by))
            assert {(r["id"], r["status"], r["superseded_by"]) for r in found} == expected

        if world["alert"] is not None:
            sender, closer = world["alert"]
            alert = {
                "status": "firing",
                "labels": {"alertname": f"{p}Alert"},
                "annotations": {"summary": " ".join(f"{p}w{w}" for w in range(4))},
                "startsAt": "2026-11-30T00:11:42Z",
                "fingerprint": p,
            }
            fired = door.call(
                sender, "post", "/v1/alerts/alertmanager", json={"version": "4", "alerts": [alert]}
            ).json()
            rid = fired["started"][0]["investigation_id"]
            review = door.call(everyone, "get", f"/v1/investigations/{rid}").json()
            needs = {*review["tiers"], review["access_tier"]}
            may = needs <= set(closer)
            assert door.call(closer, "get", f"/v1/investigations/{rid}").status_code == (
                200 if may else 404
            )
            done = door.call(
                closer,
                "post",
                "/v1/alerts/alertmanager",
                json={"version": "4", "alerts": [{**alert, "status": "resolved"}]},
            ).json()
            assert done["closed"] == ([rid] if may or closer == sender else [])

        records = door.call(everyone, "get", f"/v1/audit?since_id={since}&limit=1000").json()
        reviews = {
            r["draft_id"]: door.call(everyone, "get", f"/v1/investigations/{r['draft_id']}").json()
            for r in records["records"]
            if r["draft_id"]
        }
        for tiers in world["callers"]:
            held = set(tiers)
            expected_ids = [
                r["id"]
                for r in records["records"]
                if set(r["tiers"]) <= held
                and (
                    not r["draft_id"]
                    or {*reviews[r["draft_id"]]["tiers"], reviews[r["draft_id"]]["access_tier"]}
                    <= held
                )
            ]
            seen = door.call(tiers, "get", f"/v1/audit?since_id={since}&limit=1000").json()
            last = records["records"][-1]["id"] if records["records"] else since
            assert [r["id"] for r in seen["records"] if r["id"] <= last] == expected_ids
            assert not any(
                f"{p}-{d['i']}" in r["doc_ids"]
                for r in seen["records"]
                for d in written
                if d["tier"] not in held
            )

    check()
    assert door.operations[0] >= examples(600), door.operations[0]
