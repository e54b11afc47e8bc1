"""Links in quoted text become data (issue 33): never a live link in a draft or a notification.

A root cause is quoted back into drafts ("In that incident the root cause was: ...") and from
there into Slack, Teams, PagerDuty and Opsgenie. A Markdown link in it (``[Open the
runbook](http://evil.example/phish)``) rendered as a disguised link in an incident channel, and
a bare URL is linked by every one of those clients. :func:`inert_links` rewrites both so that
no renderer links them: the URL is *defanged* the way security teams quote indicators
(``hxxps://evil[.]example/phish``: the scheme broken, the host's dots bracketed), and a Markdown
link becomes its label followed by the defanged URL in parentheses, so a reader still sees where
it pointed. Defanged text is left as it is (the rewrite is idempotent). Standard library only.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["defang", "inert_links"]

_SCHEMES: Final = {"http": "hxxp", "https": "hxxps", "ftp": "fxp", "ws": "wxs", "wss": "wxss"}
_URL: Final = r"(?:https?|ftp|wss?)://[^\s<>()\[\]\"'`|]+"
# ![label](url "title") or [label](url): the label without brackets, the URL up to a space or ')'
_MARKDOWN: Final = re.compile(
    rf"(!?)\[([^\]\n]{{0,300}})\]\(\s*<?({_URL})>?(?:\s+\"[^\"\n]{{0,200}}\")?\s*\)", re.IGNORECASE
)
_ANGLE: Final = re.compile(rf"<({_URL})(?:\|([^>\n]{{0,300}}))?>", re.IGNORECASE)  # <url|label>
_BARE: Final = re.compile(rf"\b{_URL}", re.IGNORECASE)
_TRAILING: Final = ".,;:!?"


def defang(url: str) -> str:
    """``https://a.example/x`` -> ``hxxps://a[.]example/x``."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    host = host.replace(".", "[.]")
    return f"{_SCHEMES.get(scheme.lower(), scheme)}{sep}{host}{slash}{path}"


def inert_links(text: str) -> str:
    """``text`` with every link made plain data: Markdown links and images as ``label (URL)``,
    ``<url>`` and ``<url|label>`` as the same, bare URLs defanged."""

    def markdown(m: re.Match[str]) -> str:
        label = m[2].strip() or "link"
        return f"{'image: ' if m[1] else ''}{label} ({defang(m[3])})"

    def angle(m: re.Match[str]) -> str:
        return f"{m[2].strip()} ({defang(m[1])})" if m[2] else defang(m[1])

    def bare(m: re.Match[str]) -> str:
        url = m[0]
        cut = len(url.rstrip(_TRAILING))  # a sentence's full stop is not part of the URL
        return defang(url[:cut]) + url[cut:]

    text = _MARKDOWN.sub(markdown, text)
    text = _ANGLE.sub(angle, text)
    return _BARE.sub(bare, text)
