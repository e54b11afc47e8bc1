"""Fit the reporter's prompt to the model's context window.

A model answers only what fits its window: the prompt plus the reply. When the window is known
(the ``llm_context_tokens`` setting, or what the server said when a prompt did not fit), the
reply gets at most a third of it and the prompt the rest, less a margin. A prompt over its
budget is cut in this order, and the trace says what went:

1. the candidates' quoted sections, each cut to ``SECTION_CAPS`` characters in turn;
2. then trailing candidates (the weakest matches), down to one;
3. then the reply's share, down to ``MIN_REPLY`` tokens;
4. if one candidate with its sections at the smallest cap still does not fit, the model is not
   called (:class:`PromptTooLong`): the instructions and the schema alone need more room.

Tokens are estimated from characters (``CHARS_PER_TOKEN``, measured on the reporter's prompt
with SmolLM2's tokenizer: 3.4 characters a token; 3.0 errs on the side of cutting).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seenbefore.investigation.evidence import EvidenceItem
from seenbefore.investigation.llm import LLMError, Message

__all__ = ["Fitted", "PromptTooLong", "estimate_tokens", "fit_prompt", "reply_tokens"]

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # chat-template tokens around each message
MARGIN = 32  # tokens kept free beyond the estimate
SECTION_CAPS = (1600, 800, 400, 200, 100)  # characters per quoted section, tried in turn
MIN_REPLY = 256  # the shortest reply a draft is asked to fit in (a small draft is ~150 tokens)
CUT_MARK = " [...cut to fit the model's context]"


class PromptTooLong(LLMError):
    """Even the smallest prompt does not fit the model's context window."""


@dataclass(frozen=True)
class Fitted:
    messages: list[Message]
    reply_tokens: int | None  # the reply limit for this call (None: the client's own)
    trace: dict[str, Any] = field(default_factory=dict)


def estimate_tokens(messages: Sequence[Message], scale: float = 1.0) -> int:
    """Tokens ``messages`` will take, estimated from their characters (module doc); ``scale``
    corrects the estimate by what the server counted for an earlier prompt."""
    chars = sum(len(m.get("content", "")) for m in messages)
    return int(scale * chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)


def reply_tokens(context: int, max_tokens: int) -> int:
    """The reply's share of a ``context``-token window: at most a third, at most ``max_tokens``."""
    return max(1, min(max_tokens, context // 3))


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head = text[:cap].rsplit(" ", 1)[0] or text[:cap]
    return head + CUT_MARK


def _capped(items: Sequence[EvidenceItem], cap: int) -> tuple[list[EvidenceItem], int]:
    out, cut = [], 0
    for item in items:
        sections = {k: _cut(v, cap) for k, v in item.sections.items()}
        cut += sum(sections[k] != v for k, v in item.sections.items())
        out.append(replace(item, sections=sections))
    return out, cut


def fit_prompt(
    render: Callable[[Sequence[EvidenceItem]], list[Message]],
    items: Sequence[EvidenceItem],
    *,
    context: int | None,
    max_tokens: int,
    source: str = "setting",
    scale: float = 1.0,
) -> Fitted:
    """The prompt ``render`` makes from as much of ``items`` as fits ``context`` (module doc).
    ``context`` None: the window is unknown, the prompt goes whole. ``scale``: how far the
    server's count of an earlier prompt exceeded the estimate (1: not known to)."""
    messages = render(items)
    if context is None:
        return Fitted(
            messages, None, {"context_tokens": None, "estimated": estimate_tokens(messages)}
        )
    reply = reply_tokens(context, max_tokens)
    budget = context - reply - MARGIN
    trace: dict[str, Any] = {
        "context_tokens": context,
        "context_from": source,
        "reply_tokens": reply,
        "prompt_budget": budget,
    }
    if scale != 1.0:
        trace["estimate_scale"] = round(scale, 3)
    estimated = estimate_tokens(messages, scale)
    if estimated <= budget:
        return Fitted(messages, reply, trace | {"estimated": estimated})
    for cap in SECTION_CAPS:
        capped, cut = _capped(items, cap)
        messages = render(capped)
        estimated = estimate_tokens(messages, scale)
        trace |= {"section_cap_chars": cap, "sections_cut": cut}
        if estimated <= budget:
            return Fitted(messages, reply, trace | {"estimated": estimated})
    dropped: list[str] = []
    while len(capped) > 1:
        dropped.insert(0, capped.pop().doc_id)
        messages = render(capped)
        estimated = estimate_tokens(messages, scale)
        if estimated <= budget:
            return Fitted(
                messages, reply, trace | {"estimated": estimated, "candidates_dropped": dropped}
            )
    # last, the reply gives up room, down to MIN_REPLY tokens
    shorter = context - MARGIN - estimated
    if shorter >= MIN_REPLY:
        trace |= {"reply_tokens": shorter, "prompt_budget": context - shorter - MARGIN}
        return Fitted(
            messages, shorter, trace | {"estimated": estimated, "candidates_dropped": dropped}
        )
    raise PromptTooLong(
        f"the prompt needs about {estimated} tokens with one candidate and its sections cut to "
        f"{SECTION_CAPS[-1]} characters, over the {budget} a {context}-token context leaves "
        f"beside a {reply}-token reply; give the model a larger context (llama.cpp: --n_ctx) "
        "or set llm_context_tokens to the window it has"
    )
