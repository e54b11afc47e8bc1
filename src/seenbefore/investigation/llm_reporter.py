"""The LLM reporter: drafts the hypothesis with a language model, inside guard rails.

The prompt quotes each retrieved section whole, fenced as untrusted data; a section the
injection scanner flags is not sent at all (the prompt says it was withheld, and why). The answer
must be a :class:`Draft` as JSON; one repair request is allowed, then the offline reporter takes
over (and says so). After validation the evidence wins: invented citations are dropped,
confidence and the verdict are the Investigator's (the calibrated p_precedent and the verdict
derived from it, whatever the model wrote), and a sentence the model wrote that reads as an
injection or repeats a flagged span is withheld (``Draft.withheld`` lists it beside the withheld sections).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import ValidationError

from seenbefore.core.confidence import label
from seenbefore.investigation.budget import Fitted, PromptTooLong, estimate_tokens, fit_prompt
from seenbefore.investigation.evidence import EVIDENCE_SECTIONS, Evidence, EvidenceItem
from seenbefore.investigation.llm import (
    LLM,
    Completion,
    LLMContextExceeded,
    LLMError,
    LLMTimeout,
    LLMTruncated,
    Message,
    unfence,
)
from seenbefore.investigation.reporter import OFFLINE_LABEL, Draft, OfflineReporter, trace
from seenbefore.investigation.templates import render
from seenbefore.investigation.withhold import Flagged, describe, flagged_sections, sweep

__all__ = ["REJECTIONS", "SYSTEM_FIELDS", "LLMReporter", "draft_schema", "judge", "render"]

DEFAULT_REPLY_TOKENS = 800  # a client that states no max_tokens
CONTEXT_ATTEMPTS = 3  # calls a draft may make while learning the window and the token count
SYSTEM_FIELDS = ("drafted_by", "advisory", "retrieval_trace", "withheld")
MODEL_TEXT_FIELDS = (
    "summary",
    "hypothesis",
    "suggested_checks",
    "mitigations",
    "missing_information",
    "staleness_note",
)


class RepairTooLong(PromptTooLong):
    """The answer failed validation and the repair request would not fit the window."""


# what the retrieval decides, whatever the model writes: filled from the evidence, so the model
# is neither asked for them nor spends its reply on them
RETRIEVAL_FIELDS = ("confidence", "confidence_label", "novel", "verdict")


def _untitled(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _untitled(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node


@cache
def draft_schema() -> str:
    """The JSON schema the model must follow: Draft's, less the fields the system and the
    retrieval fill, without pydantic's titles (a small model's window is precious)."""
    schema = Draft.model_json_schema()
    for key in (*SYSTEM_FIELDS, *RETRIEVAL_FIELDS):
        schema["properties"].pop(key, None)
    schema["required"] = [k for k in schema.get("required", []) if k in schema["properties"]]
    schema.pop("description", None)
    defs = schema.get("$defs", {})
    defs.pop("Withheld", None)  # only the system-filled field used it
    if not defs:
        schema.pop("$defs", None)
    return json.dumps(_untitled(schema), separators=(",", ":"))


def _parse(text: str, evidence: Evidence) -> Draft:
    """The model's answer as a Draft: fields the system fills are ignored if it sends them, and
    the retrieval's (confidence, verdict) filled from ``evidence`` where it leaves them out."""
    raw = unfence(text)
    try:
        # strict=False: raw newlines and tabs inside strings, which small models write (and
        # llama.cpp's JSON grammar lets through), are text, not a reason to reject the answer
        data = json.loads(raw, strict=False)
    except ValueError:
        return Draft.model_validate_json(raw)  # raises the ValidationError the repair quotes
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in SYSTEM_FIELDS}
        data = {
            "confidence": evidence.confidence,
            "confidence_label": evidence.confidence_label,
            "novel": evidence.novel,
            "verdict": evidence.verdict,
        } | data
    return Draft.model_validate(data)


def _describe(exc: ValidationError) -> str:
    lines = [
        f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False)[:10]
    ]
    return "\n".join(lines)


JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 5},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
}
# why a draft fell back to the offline reporter, by name (the trace's llm.rejection)
REJECTIONS = (
    "local-only",
    "nothing-to-compare",
    "context",
    "validation",
    "truncated",
    "timeout",
    "call-failed",
)


class _Usage:
    def __init__(self, model: str) -> None:
        self.model, self.prompt_tokens, self.completion_tokens, self.calls = model, 0, 0, 0
        self.response_format = ""
        self.prompt: dict[str, Any] = {}  # what fit_prompt kept and cut
        self.started = time.perf_counter()

    def add(self, completion: Completion) -> Completion:
        self.model = completion.model or self.model
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.response_format = completion.response_format or self.response_format
        self.calls += 1
        return completion

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "elapsed_s": round(time.perf_counter() - self.started, 3),
        }
        if self.response_format:
            out["response_format"] = self.response_format
        if self.prompt:
            out["prompt"] = self.prompt
        return out


class LLMReporter:
    """Draft with a language model; fall back to ``fallback`` (offline) when it cannot be used.

    ``local_only_tiers``: evidence from these access tiers is never sent to an endpoint whose
    host is not in ``allowed_hosts``; such drafts are written offline instead.
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        fallback: OfflineReporter = OfflineReporter(),
        allowed_hosts: Sequence[str] = (),
        local_only_tiers: Sequence[str] = (),
    ) -> None:
        self.llm = llm
        # the model's window: the client's setting, then what the server says (fit_prompt)
        self.context_tokens: int | None = getattr(llm, "context_tokens", None)
        self.max_tokens = int(getattr(llm, "max_tokens", DEFAULT_REPLY_TOKENS))
        # how far the server's token counts ran over fit_prompt's estimate (learned)
        self.estimate_scale = 1.0
        self.fallback = fallback
        self.allowed_hosts = tuple(h.lower() for h in allowed_hosts)
        self.local_only_tiers = tuple(local_only_tiers)

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "model", type(self.llm).__name__))

    @property
    def host(self) -> str | None:
        host = getattr(self.llm, "host", None)
        return str(host).lower() if host else None

    def draft(self, evidence: Evidence, *, today: dt.date | None = None) -> Draft:
        usage = _Usage(self.model)
        if evidence.compared_nothing:
            reason = (
                "the language model was not called: the knowledge base holds no postmortem "
                "these tiers can see, so there is nothing to draft from"
            )
            return self._offline(evidence, today, usage, "nothing-to-compare", reason, skipped=True)
        blocked = sorted({i.access_tier for i in evidence.items} & set(self.local_only_tiers))
        if blocked and self.host not in self.allowed_hosts:
            reason = (
                f"the language model was not called: evidence from local-only tier(s) "
                f"{', '.join(blocked)} may not go to host {self.host or '(unknown)'}, "
                "which is not in allowed_hosts"
            )
            return self._offline(evidence, today, usage, "local-only", reason, skipped=True)
        flagged = flagged_sections(evidence)
        hidden: dict[str, dict[str, str]] = {}
        for f in flagged:
            hidden.setdefault(f.doc_id, {})[f.section] = describe(f.kinds)

        def render_with(items: Sequence[EvidenceItem]) -> list[Message]:
            return render(
                "reporter.j2",
                query=evidence.request.query,
                items=items,
                evidence=evidence,
                section_keys=EVIDENCE_SECTIONS,
                hidden=hidden,
                schema=draft_schema(),
            )

        context, source = self.context_tokens, "setting"
        for attempt in range(1, CONTEXT_ATTEMPTS + 1):
            try:
                fitted = fit_prompt(
                    render_with,
                    evidence.items,
                    context=context,
                    max_tokens=self.max_tokens,
                    source=source,
                    scale=self.estimate_scale,
                )
                usage.prompt = fitted.trace
                parsed, repaired = self._ask(fitted, usage, evidence)
            except LLMContextExceeded as exc:
                # the server said its window (fit the prompt to it), or that a fitted prompt
                # was longer than estimated (estimate by its count): ask again
                said = exc.context or context
                if attempt == CONTEXT_ATTEMPTS or said is None:
                    return self._offline(evidence, today, usage, "context", f"{exc}")
                if said == context:
                    estimated = usage.prompt.get("estimated") or 0
                    counted = exc.prompt_tokens or 0
                    grow = counted / estimated if counted > estimated > 0 else 1.25
                    self.estimate_scale *= grow
                context, source = said, "server"
                self.context_tokens = context
                continue
            except RepairTooLong as exc:
                return self._offline(evidence, today, usage, "validation", f"{exc}")
            except PromptTooLong as exc:
                return self._offline(evidence, today, usage, "context", f"{exc}")
            except ValidationError as second:
                reason = (
                    "the model's answer failed validation twice (after one repair request): "
                    + _describe(second).replace("\n", "; ")
                )
                return self._offline(evidence, today, usage, "validation", reason)
            except LLMTruncated as exc:
                if exc.completion is not None:
                    usage.add(exc.completion)
                reason = f"the model's answer was cut at its token limit: {exc}"
                return self._offline(evidence, today, usage, "truncated", reason)
            except LLMTimeout as exc:
                return self._offline(
                    evidence, today, usage, "timeout", f"the model timed out: {exc}"
                )
            except LLMError as exc:
                reason = f"the model call failed: {exc}"
                return self._offline(evidence, today, usage, "call-failed", reason)
            return self._guard(parsed, evidence, usage, repaired, flagged)
        raise AssertionError("unreachable: the last attempt returns")

    def _ask(self, fitted: Fitted, usage: _Usage, evidence: Evidence) -> tuple[Draft, bool]:
        """The model's draft for ``fitted`` and whether it took the one repair round; raises
        ValidationError when the repaired answer fails too, LLMError when a call fails."""
        schema = json.loads(draft_schema())
        messages = fitted.messages
        ask = {"schema": schema, "max_tokens": fitted.reply_tokens}
        answer = usage.add(self.llm.complete(messages, **ask))
        try:
            return _parse(answer.text, evidence), False
        except ValidationError as first:
            repair = render("reporter_repair.j2", error=_describe(first), schema=draft_schema())
            messages = [*messages, {"role": "assistant", "content": answer.text}, *repair]
            context = fitted.trace.get("context_tokens")
            needed = estimate_tokens(messages) + (fitted.reply_tokens or 0)
            if context and needed > context:
                raise RepairTooLong(
                    f"the answer failed validation ({_describe(first).splitlines()[0]}) and the "
                    f"repair request (about {needed} tokens with its reply) would not fit the "
                    f"{context}-token context"
                ) from None
            answer = usage.add(self.llm.complete(messages, **ask))
            return _parse(answer.text, evidence), True

    def _offline(
        self,
        evidence: Evidence,
        today: dt.date | None,
        usage: _Usage,
        rejection: str,
        reason: str,
        *,
        skipped: bool = False,
    ) -> Draft:
        """The offline draft, saying which named rejection (``REJECTIONS``) sent it there."""
        draft = self.fallback.draft(evidence, today=today)
        llm_trace = usage.as_dict() | {
            ("skipped" if skipped else "fallback"): reason,
            "rejection": rejection,
        }
        return draft.model_copy(
            update={
                "drafted_by": f"{OFFLINE_LABEL}; used instead of language model {self.model} "
                f"because {reason}",
                "retrieval_trace": draft.retrieval_trace | {"llm": llm_trace},
            }
        )

    def _guard(
        self,
        draft: Draft,
        evidence: Evidence,
        usage: _Usage,
        repaired: bool,
        flagged: list[Flagged],
    ) -> Draft:
        known = {i.doc_id for i in evidence.items}
        cited = list(dict.fromkeys(draft.cited_incidents))
        invented = [c for c in cited if c not in known]
        kept = [c for c in cited if c in known]
        missing = list(draft.missing_information)
        text = {k: getattr(draft, k) for k in ("summary", "hypothesis")}
        lists = {k: list(getattr(draft, k)) for k in ("suggested_checks", "mitigations")}
        extra: dict[str, Any] = {}
        if invented:
            missing.append(
                f"the model cited {', '.join(invented)}, which are not among the retrieved "
                "postmortems; those citations were removed"
            )
            extra["invented_citations"] = invented
            for doc_id in invented:
                text = {k: v.replace(doc_id, "[removed citation]") for k, v in text.items()}
                lists = {
                    k: [s.replace(doc_id, "[removed citation]") for s in v]
                    for k, v in lists.items()
                }
        # one number and the verdict from it: the retrieval's, whatever the model wrote
        confidence = evidence.confidence
        if abs(draft.confidence - confidence) > 1e-9:
            extra["model_confidence_ignored"] = draft.confidence
        if draft.novel != evidence.novel:
            extra["model_novel_ignored"] = draft.novel
        fields: dict[str, Any] = {**text, **lists, "missing_information": missing}
        fields["staleness_note"] = draft.staleness_note
        withheld = [f.entry for f in flagged]
        for key in MODEL_TEXT_FIELDS:
            swept = sweep(key, fields[key], flagged)
            if swept.entry is not None:
                fields[key] = swept.value
                withheld.append(swept.entry)
        if len(withheld) > len(flagged):
            extra["withheld_from_model_output"] = [w.section for w in withheld[len(flagged) :]]
        drafted_by = f"language model {usage.model} (OpenAI-compatible endpoint"
        drafted_by += f" at {self.host})" if self.host else ")"
        drafted_by += "; answer repaired once" if repaired else ""
        drafted_by += "; checked against the retrieved evidence"
        return draft.model_copy(
            update={
                **fields,
                "cited_incidents": kept,
                "withheld": withheld,
                "confidence": confidence,
                "confidence_label": evidence.confidence_label or label(confidence),
                "novel": evidence.novel,
                "verdict": evidence.verdict or ("no precedent" if evidence.novel else ""),
                "drafted_by": drafted_by,
                "advisory": Draft.model_fields["advisory"].default,
                "retrieval_trace": trace(evidence) | extra | {"llm": usage.as_dict()},
            }
        )


def judge(llm: LLM, draft: Draft, expected_root_cause: str) -> tuple[float, int]:
    """Model-graded root-cause score, 0 to 5, and the tokens the grading used."""
    answer = llm.complete(
        render("judge.j2", draft=draft, expected=expected_root_cause), schema=JUDGE_SCHEMA
    )
    tokens = answer.prompt_tokens + answer.completion_tokens
    try:
        data = json.loads(unfence(answer.text))
    except json.JSONDecodeError:
        data = None
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 5:
        raise LLMError(
            f"judge model {answer.model or '?'} answered {answer.text[:200]!r}; expected a JSON "
            'object {"score": <0-5>, "reason": "..."}; check the model supports JSON output'
        )
    return float(score), tokens
