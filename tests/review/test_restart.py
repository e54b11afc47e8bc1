"""A review started in one process is decided from another: the first process is killed
(SIGKILL, no clean shutdown) right after it starts two reviews."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seenbefore.kb import KnowledgeBase
from seenbefore.review import ReviewWorkflow
from seenbefore.security.tokens import Principal
from tests.conftest import REPO
from tests.review.conftest import ALL_TIERS, CERT, make_settings

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from seenbefore.investigation.query import from_text
    from seenbefore.kb import KnowledgeBase
    from seenbefore.review import ReviewWorkflow
    from seenbefore.security.tokens import Principal
    from tests.review.conftest import ALL_TIERS, make_settings

    settings = make_settings(Path(sys.argv[1]))
    kb = KnowledgeBase(settings)
    wf = ReviewWorkflow(kb, settings)
    service = Principal("service:alertmanager", "responder", ALL_TIERS)
    for n, text in enumerate(sys.argv[2:]):
        print(wf.start(from_text(text), principal=service, source_key=f"fp{n}:t").id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.integration
def test_a_review_survives_its_process(home: Path, alice: Principal) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(home), CERT, CERT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    first, second = done.stdout.split()
    settings = make_settings(home)
    with KnowledgeBase(settings) as kb, ReviewWorkflow(kb, settings) as wf:
        assert {r.id for r in wf.list(tiers=ALL_TIERS)} == {first, second}
        approved = wf.approve(first, reviewer=alice)
        assert approved.status == "approved"
        assert kb.store.get(f"PM-{first}", ALL_TIERS).postmortem.extra["review_id"] == first
        again = wf.dismiss(second, reviewer=alice, reason="wrong_precedent", note="not certs")
        assert again.round == 2 and again.awaiting_decision
        assert again.requested_by == "service:alertmanager"
        assert "INC-2021-007" in again.excluded_doc_ids
