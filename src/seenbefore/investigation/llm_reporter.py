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
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import ValidationError

from seenbefore.core.confidence import label
from seenbefore.investigation.evidence import EVIDENCE_SECTIONS, Evidence
from seenbefore.investigation.llm import LLM, Completion, LLMError, LLMTimeout, unfence
from seenbefore.investigation.reporter import OFFLINE_LABEL, Draft, OfflineReporter, trace
from seenbefore.investigation.templates import render
from seenbefore.investigation.withhold import Flagged, describe, flagged_sections, sweep

__all__ = ["SYSTEM_FIELDS", "LLMReporter", "draft_schema", "judge", "render"]

SYSTEM_FIELDS = ("drafted_by", "advisory", "retrieval_trace", "withheld")
MODEL_TEXT_FIELDS = (
    "summary",
    "hypothesis",
    "suggested_checks",
    "mitigations",
    "missing_information",
    "staleness_note",
)


@cache
def draft_schema() -> str:
    """The JSON schema the model must follow: Draft's, less the fields the system fills."""
    schema = Draft.model_json_schema()
    for key in SYSTEM_FIELDS:
        schema["properties"].pop(key, None)
    defs = schema.get("$defs", {})
    defs.pop("Withheld", None)  # only the system-filled field used it
    if not defs:
        schema.pop("$defs", None)
    return json.dumps(schema)


def _parse(text: str) -> Draft:
    """The model's answer as a Draft; fields the system fills are ignored if it sends them."""
    raw = unfence(text)
    try:
        data = json.loads(raw)
    except ValueError:
        return Draft.model_validate_json(raw)  # raises the ValidationError the repair quotes
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in SYSTEM_FIELDS}
    return Draft.model_validate(data)


def _describe(exc: ValidationError) -> str:
    lines = [
        f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False)[:10]
    ]
    return "\n".join(lines)


class _Usage:
    def __init__(self, model: str) -> None:
        self.model, self.prompt_tokens, self.completion_tokens, self.calls = model, 0, 0, 0

    def add(self, completion: Completion) -> Completion:
        self.model = completion.model or self.model
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.calls += 1
        return completion

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
        }


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
        blocked = sorted({i.access_tier for i in evidence.items} & set(self.local_only_tiers))
        if blocked and self.host not in self.allowed_hosts:
            reason = (
                f"the language model was not called: evidence from local-only tier(s) "
                f"{', '.join(blocked)} may not go to host {self.host or '(unknown)'}, "
                "which is not in allowed_hosts"
            )
            return self._offline(evidence, today, usage, reason, skipped=True)
        flagged = flagged_sections(evidence)
        hidden: dict[str, dict[str, str]] = {}
        for f in flagged:
            hidden.setdefault(f.doc_id, {})[f.section] = describe(f.kinds)
        messages = render(
            "reporter.j2",
            query=evidence.request.query,
            items=evidence.items,
            evidence=evidence,
            section_keys=EVIDENCE_SECTIONS,
            hidden=hidden,
            schema=draft_schema(),
        )
        repaired = False
        try:
            answer = usage.add(self.llm.complete(messages))
            try:
                parsed = _parse(answer.text)
            except ValidationError as first:
                repaired = True
                repair = render("reporter_repair.j2", error=_describe(first), schema=draft_schema())
                messages += [{"role": "assistant", "content": answer.text}, *repair]
                answer = usage.add(self.llm.complete(messages))
                parsed = _parse(answer.text)
        except ValidationError as second:
            reason = (
                "the model's answer failed validation twice (after one repair request): "
                + _describe(second).replace("\n", "; ")
            )
            return self._offline(evidence, today, usage, reason)
        except LLMTimeout as exc:
            return self._offline(evidence, today, usage, f"the model timed out: {exc}")
        except LLMError as exc:
            return self._offline(evidence, today, usage, f"the model call failed: {exc}")
        return self._guard(parsed, evidence, usage, repaired, flagged)

    def _offline(
        self,
        evidence: Evidence,
        today: dt.date | None,
        usage: _Usage,
        reason: str,
        *,
        skipped: bool = False,
    ) -> Draft:
        draft = self.fallback.draft(evidence, today=today)
        llm_trace = usage.as_dict() | {("skipped" if skipped else "fallback"): reason}
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
                "confidence_label": label(confidence),
                "novel": evidence.novel,
                "verdict": evidence.verdict or ("no precedent" if evidence.novel else ""),
                "drafted_by": drafted_by,
                "advisory": Draft.model_fields["advisory"].default,
                "retrieval_trace": trace(evidence) | extra | {"llm": usage.as_dict()},
            }
        )


def judge(llm: LLM, draft: Draft, expected_root_cause: str) -> tuple[float, int]:
    """Model-graded root-cause score, 0 to 5, and the tokens the grading used."""
    answer = llm.complete(render("judge.j2", draft=draft, expected=expected_root_cause))
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
