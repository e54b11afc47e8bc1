"""Whole-table reads of the PostgreSQL store, for the in-memory indexes and supersession
(storage/postgres/store.py runs them with every tier: they are maintenance, not a caller's view).
Ids sort ``COLLATE "C"`` (byte order), as SQLite sorts them."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.storage.base import ChunkRows, DocumentRows
from seenbefore.storage.postgres.pool import Conn
from seenbefore.storage.supersession import SupersedeRow
from seenbefore.types import Chunk


def fingerprints(conn: Conn) -> dict[str, tuple[str, str]]:
    rows = conn.execute("SELECT id, content_hash, source FROM documents").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _among(column: str, ids: list[Any] | None) -> tuple[str, tuple[Any, ...]]:
    """A WHERE clause keeping rows whose ``column`` is in ``ids`` ('' and no parameter for
    None: every row)."""
    return ("", ()) if ids is None else (f" WHERE {column} = ANY (%s)", (ids,))


def supersede_rows(conn: Conn, doc_ids: list[str] | None = None) -> list[SupersedeRow]:
    where, params = _among("id", doc_ids)
    rows = conn.execute(
        "SELECT id, status, access_tier, supersedes, date FROM documents" + where, params
    )
    return [
        SupersedeRow(r[0], r[1], r[2], r[3], r[4].isoformat() if r[4] else None)
        for r in rows.fetchall()
    ]


def superseded_ids(conn: Conn) -> list[str]:
    rows = conn.execute("SELECT id FROM documents WHERE effective_status = 'superseded'")
    return [r[0] for r in rows.fetchall()]


def chunks_by_id(conn: Conn, chunk_ids: list[int]) -> dict[int, Chunk]:
    rows = conn.execute(
        "SELECT id, doc_id, section_key, section_heading, section_position, position,"
        " text FROM chunks WHERE id = ANY (%s)",
        (chunk_ids,),
    ).fetchall()
    return {r[0]: Chunk(r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}


def vectors(
    conn: Conn, dim: int, chunk_ids: list[int] | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(chunk ids, matrix) for every chunk that has a vector (or those of ``chunk_ids``),
    ordered by chunk id."""
    where, params = _among("chunk_id", chunk_ids)
    rows = conn.execute(
        "SELECT chunk_id, embedding FROM vectors" + where + " ORDER BY chunk_id", params
    ).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    for i, row in enumerate(rows):
        matrix[i] = row[1].to_numpy()
    return ids, matrix


def chunk_rows(conn: Conn, doc_ids: list[str] | None = None) -> ChunkRows:
    """Every chunk's id, document id and text (or those of ``doc_ids``), grouped by document."""
    where, params = _among("doc_id", doc_ids)
    rows = conn.execute(
        "SELECT id, doc_id, text FROM chunks" + where + ' ORDER BY doc_id COLLATE "C", id', params
    ).fetchall()
    return ChunkRows(
        ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        doc_ids=[r[1] for r in rows],
        texts=[r[2] for r in rows],
    )


def document_rows(conn: Conn, doc_ids: list[str] | None = None) -> DocumentRows:
    where, params = _among("id", doc_ids)
    rows = conn.execute(
        "SELECT id, access_tier, effective_status, date, services, signals FROM documents"
        + where
        + ' ORDER BY id COLLATE "C"',
        params,
    ).fetchall()
    return DocumentRows(
        ids=[r[0] for r in rows],
        tiers=[r[1] for r in rows],
        current=[r[2] == "current" for r in rows],
        dates=[r[3].isoformat() if r[3] else None for r in rows],
        services=[tuple(r[4]) for r in rows],
        signals=[tuple(json.loads(r[5])) for r in rows],
    )
