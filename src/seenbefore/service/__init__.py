"""The HTTP service: FastAPI app factory, one router per resource, the web review queue.

``create_app`` is imported lazily so that light modules here (sampling, rate limiting) can be
used without importing FastAPI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from seenbefore.config import Settings

__all__ = ["create_app"]


def create_app(settings: Settings | None = None, **kwargs: Any) -> FastAPI:
    from seenbefore.service.app import create_app as factory

    return factory(settings, **kwargs)
