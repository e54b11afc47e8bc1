"""``GET|PUT|DELETE /v1/postmortems/{id}`` and ``POST /v1/postmortems`` (ingest one).

A postmortem outside the caller's tiers is a 404 with the same body as an absent one on reads and
deletes. A write never answers 404: an id held by a postmortem outside the caller's tiers is the
same 409 as an id held by a visible one on POST (:func:`id_taken`), and ``supersedes`` must name
a postmortem the writer can see (:func:`cannot_supersede`: the same 400 for absent and hidden).
Writing and deleting need role admin; an admin may only write tiers they hold. Deleting removes
the document and every trace of it (``seenbefore.lifecycle.delete_postmortem``); a delete that
would cascade into a derived postmortem outside the caller's tiers is refused (409)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from seenbefore import lifecycle
from seenbefore.errors import ConflictError, ForbiddenError, InputError
from seenbefore.knowledge.failure_modes import failure_mode
from seenbefore.service.deps import Admin, App, Caller, Ready, Viewer
from seenbefore.service.models import (
    DeletionOut,
    FailureModeOut,
    PostmortemIn,
    PostmortemOut,
    SectionOut,
    WriteOut,
    problems,
)
from seenbefore.types import StoredDocument

router = APIRouter(prefix="/v1/postmortems", tags=["postmortems"], responses=problems())


def postmortem_out(doc: StoredDocument) -> PostmortemOut:
    pm = doc.postmortem
    return PostmortemOut(
        id=pm.id,
        title=pm.title,
        date=pm.date,
        services=list(pm.services),
        severity=pm.severity,
        status=pm.status,
        effective_status=doc.effective_status,
        supersedes=pm.supersedes,
        superseded_by=doc.superseded_by,
        access_tier=pm.access_tier,
        type=pm.type,
        failure_mode=FailureModeOut(**failure_mode(pm).as_dict()),
        tags=list(pm.tags),
        signals=list(pm.signals),
        extra=dict(pm.extra),
        body=pm.body,
        sections=[SectionOut(key=s.key, heading=s.heading, text=s.text) for s in pm.sections],
        chunk_count=doc.chunk_count,
        content_hash=pm.content_hash,
        ingested_at=doc.ingested_at,
        updated_at=doc.updated_at,
    )


@router.get(
    "/{doc_id}", response_model=PostmortemOut, summary="One postmortem", responses=problems(404)
)
def get(doc_id: str, app: App, who: Viewer) -> PostmortemOut:
    doc = app.kb.store.get(doc_id, who.principal.tiers)
    app.audit.record(
        who.principal,
        "show",
        session=who.session,
        doc_ids=[doc.postmortem.id],
        tiers=[doc.postmortem.access_tier],
    )
    return postmortem_out(doc)


def id_taken(doc_id: str) -> ConflictError:
    """The conflict a write meets when ``doc_id`` is taken, worded the same whether the holder
    is a postmortem the caller may see or one outside their tiers."""
    return ConflictError(
        f"postmortem id {doc_id!r} is taken, or is not yours to write; choose a new id "
        f"(PUT /v1/postmortems/{doc_id} replaces a postmortem of a tier you hold)"
    )


def cannot_supersede(target: str) -> InputError:
    """A write may retire only a postmortem its writer can see: superseding one outside the
    writer's tiers would change what that tier's readers find. Worded the same for an absent and
    a hidden target, so the answer says nothing about which it was."""
    return InputError(
        f"the document supersedes {target!r}, which is not a postmortem you can see (absent, or "
        "outside your tiers); supersede a postmortem of a tier you hold, or leave supersedes out"
    )


def _write(app: Ready, who: Caller, markdown: str, *, path_id: str | None) -> WriteOut:
    pm = lifecycle.parse_postmortem(app.kb, markdown, source=f"api:{who.principal.name}")
    if path_id is not None and pm.id != path_id:
        raise InputError(
            f"the document's front matter id is {pm.id!r} but the URL says {path_id!r}; "
            "make them the same"
        )
    if pm.access_tier not in who.principal.tiers:
        raise ForbiddenError(
            f"the document's access_tier is {pm.access_tier!r}, which {who.principal.name} does "
            f"not hold ({', '.join(who.principal.tiers)}); write only tiers you hold"
        )
    with app.write_lock:
        if pm.supersedes and pm.supersedes != pm.id:
            target = app.kb.store.documents_meta([pm.supersedes]).get(pm.supersedes)
            if target is None or target.postmortem.access_tier not in who.principal.tiers:
                raise cannot_supersede(pm.supersedes)  # absent and hidden: one answer
        existing = app.kb.store.documents_meta([pm.id]).get(pm.id)
        if existing is not None and (
            path_id is None or existing.postmortem.access_tier not in who.principal.tiers
        ):
            # one answer for a visible and a hidden holder of the id: never 404 on a write
            raise id_taken(pm.id)
        result = lifecycle.write_postmortem(app.kb, pm)
        app.kb.index()  # rebuilt once here, not by every concurrent search
    app.audit.record(
        who.principal,
        "postmortem.write",
        session=who.session,
        doc_ids=[pm.id],
        tiers=[pm.access_tier],
        decision=result.outcome,
        detail={"sha256": pm.content_hash, "chunks": result.chunks},
    )
    return WriteOut(
        id=pm.id,
        outcome=result.outcome,
        chunks=result.chunks,
        injection_flags=list(result.injection_flags),
    )


@router.post(
    "",
    response_model=WriteOut,
    status_code=status.HTTP_201_CREATED,
    summary="Ingest one postmortem (Markdown with front matter)",
    responses=problems(400, 409),
)
def create(body: PostmortemIn, app: App, who: Admin) -> WriteOut:
    return _write(app, who, body.markdown, path_id=None)


@router.put(
    "/{doc_id}",
    response_model=WriteOut,
    summary="Create or replace one postmortem",
    responses=problems(400, 409),
)
def replace(doc_id: str, body: PostmortemIn, app: App, who: Admin, response: Response) -> WriteOut:
    out = _write(app, who, body.markdown, path_id=doc_id)
    if out.outcome == "added":
        response.status_code = status.HTTP_201_CREATED
    return out


@router.delete(
    "/{doc_id}",
    response_model=DeletionOut,
    summary="Delete a postmortem and every trace of it",
    responses=problems(404, 409),
)
def delete(doc_id: str, app: App, who: Admin) -> DeletionOut:
    with app.write_lock:
        report = lifecycle.delete_postmortem(
            app.kb,
            doc_id,
            actor=who.principal,
            audit=app.audit,
            workflow=app.workflow,
            outbox_path=app.settings.home / lifecycle.OUTBOX_FILE,
            tiers=who.principal.tiers,
            session=who.session,
        )
    return DeletionOut(
        id=report.id,
        sha256=report.sha256,
        chunks=report.chunks,
        reviews_purged=report.reviews_purged,
        notifications_purged=report.notifications_purged,
        log_lines_purged=report.log_lines_purged,
        derived_deleted=list(report.derived_deleted),
        files_compacted=[p.rsplit("/", 1)[-1] for p in report.files_compacted],
    )
