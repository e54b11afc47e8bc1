"""One exception tree for seenbefore.

::

    SeenbeforeError                 base: every error the package raises on purpose
    ├── ConfigError                 bad settings or environment
    │   └── MissingExtraError       an optional dependency (a pip extra) is not installed
    ├── InputError                  bad input from a user (CLI argument, query, request body)
    │   ├── MappingError            a JSONL field mapping that does not fit the records
    │   └── AccountRequired         approving a draft that needs a person's account, without one
    ├── PostmortemInvalid           a postmortem failed validation (it goes to quarantine)
    ├── NotFoundError               no such document / quarantine entry (or not visible to the caller)
    ├── AuthError                   no token, or a token that is unknown or revoked (HTTP 401)
    ├── ForbiddenError              a valid token whose role may not do this (HTTP 403)
    ├── ConflictError               the request conflicts with the current state (HTTP 409)
    ├── RateLimitedError            too many requests for this token (HTTP 429)
    │   └── BusyError               the server is at its limit for this work now (HTTP 503)
    └── StoreError                  the knowledge base store failed or is unusable
        ├── SchemaVersionError      the store was written by a newer or unknown schema
        └── EmbedderMismatchError   vectors from a different embedder or dimension

Messages say what was received, the rule, and the fix. The CLI maps the tree once to a clean
one-line message and a non-zero exit.
"""

from __future__ import annotations


class SeenbeforeError(Exception):
    """Base class for every error seenbefore raises on purpose."""

    exit_code = 1


class ConfigError(SeenbeforeError):
    """Settings or environment are not usable."""

    exit_code = 2


class MissingExtraError(ConfigError):
    """What was asked for needs an optional dependency that is not installed.

    ``purpose`` is what was asked for, ``package`` the distribution that is missing and
    ``extra`` the seenbefore extra that installs it (``pip install 'seenbefore[extra]'``)."""

    def __init__(self, purpose: str, package: str, extra: str, detail: str = "") -> None:
        because = f" ({detail})" if detail else ""
        super().__init__(
            f"{purpose} needs {package}, which is not installed{because}; install the "
            f"'{extra}' extra: pip install 'seenbefore[{extra}]'"
        )
        self.purpose = purpose
        self.package = package
        self.extra = extra


class InputError(SeenbeforeError):
    """Input from a user (argument, query, request) is not acceptable."""

    exit_code = 2


class MappingError(InputError):
    """A JSONL field mapping does not fit the records being imported."""


class AccountRequired(InputError):
    """A draft that may not be approved as drafted ("no precedent", or a precedent a reviewer
    already dismissed) was approved without a person's account. ``missing`` names the fields
    still to write (``root_cause``, ``resolution``, ``type``), ``why`` says why they are needed."""

    def __init__(self, message: str, missing: tuple[str, ...], why: str) -> None:
        super().__init__(message)
        self.missing = missing
        self.why = why


class PostmortemInvalid(SeenbeforeError):
    """A postmortem failed validation; ``reason`` is what goes into quarantine."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"postmortem {source}: {reason}")
        self.source = source
        self.reason = reason


class NotFoundError(SeenbeforeError):
    """Nothing with that id exists, or it is not visible to the caller (indistinguishable)."""

    exit_code = 3


class AuthError(SeenbeforeError):
    """No credentials, or credentials that are unknown or revoked."""

    exit_code = 4


class ForbiddenError(SeenbeforeError):
    """Valid credentials whose role does not allow the action."""

    exit_code = 4


class ConflictError(SeenbeforeError):
    """The request conflicts with the current state (e.g. a review already decided)."""

    exit_code = 5


class RateLimitedError(SeenbeforeError):
    """Too many requests for one token; ``retry_after_s`` says when to try again."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BusyError(RateLimitedError):
    """The server is at its limit for this kind of work right now (concurrent detections, their
    memory); not the caller's rate: ``retry_after_s`` says when to try again."""


class StoreError(SeenbeforeError):
    """The knowledge base store failed or cannot be used."""


class SchemaVersionError(StoreError):
    """The store's schema version is newer than this code, or the file is not a seenbefore store."""


class EmbedderMismatchError(StoreError):
    """Vectors in the store come from a different embedder or dimension than the one in use."""
