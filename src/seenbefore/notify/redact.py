"""Keep webhook URLs and routing keys out of logs and recorded errors.

Senders register their secrets here when they are built. ``redact`` masks every registered secret
(and anything shaped like a Slack webhook URL, and the ``sig=`` signature of a Teams Workflows
trigger URL) in a string. httpx logs each request's full URL at
INFO level, and a Slack webhook URL *is* the credential, so a filter on the ``httpx`` and
``httpcore.*`` loggers masks registered secrets in their records before any handler sees them; it
changes nothing else about those records.
"""

from __future__ import annotations

import logging
import re
import threading

MASK = "[redacted]"
MIN_SECRET_LENGTH = 4  # shorter strings would mask ordinary words; no real key is this short

_SLACK_HOOK = re.compile(r"https?://hooks\.slack(?:-gov)?\.com/\S*")
_SIGNATURE = re.compile(r"([?&]sig=)[^&\s\"'<>]+")  # the signature of a Workflows trigger URL
_secrets: set[str] = set()
_lock = threading.Lock()
# Logger filters do not apply to child loggers' records, so each httpcore logger is named.
_FILTERED_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


def register_secret(*values: str) -> None:
    """Remember ``values`` as secrets: ``redact`` masks them from now on (process-wide)."""
    with _lock:
        _secrets.update(v for v in values if len(v) >= MIN_SECRET_LENGTH)
    install_log_filter()


def redact(text: str) -> str:
    """``text`` with every registered secret and any Slack webhook URL replaced by ``MASK``."""
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)  # longest first: a URL before its path
    text = _SLACK_HOOK.sub(MASK, text)  # first: a short registered secret could break the URL
    text = _SIGNATURE.sub(rf"\1{MASK}", text)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Formats a record's message once, with secrets masked, and lets it through."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed record: mask what we can see
            message = f"{record.msg} {record.args}"
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


_filter = RedactingFilter()


def install_log_filter() -> None:
    """Attach the redacting filter to the HTTP client loggers (idempotent)."""
    for name in _FILTERED_LOGGERS:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
