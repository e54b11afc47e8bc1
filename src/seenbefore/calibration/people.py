"""What people said, as labels with provenance: review decisions and feedback on a search's top
result (stored by review/labels.py ``record_label``, each with the principal who decided), and
the refit that uses them.

A label says whether the TOP result of one search was a precedent, with the signals that
search measured. People's labels join the self-made cases of the last self-calibration
(selfcal.py keeps them, :data:`CASES`) as one style of their own, ``people``: every style weighs
the same in a fit, so all people's labels together weigh as much as one style of self-made
queries; within it every principal weighs the same, and no principal more than
:data:`MAX_PRINCIPAL_SHARE` of it. So twenty hostile labels from one responder cannot outvote
the knowledge base and everyone else.

Changing the shared model needs the reviewer role: the labels of principals below it (a
responder's MCP feedback, say) are kept and counted, but a refit uses them only when an admin
accepts them (``seenbefore calibrate --from-reviews --accept-all-roles``). A refit is kept only
when it beats the live model on data it was not fitted on and the principals who triggered it
did not write: people's labels fall in two halves (reviews alternate), the refit is made
twice, each time without one half, and each is judged on the self-made held-out half plus the
labels of the half it did not see that every *other* principal wrote. What is kept is the fit on every
label. A refit that is not kept writes nothing (the record stays byte-for-byte as it was).

A dismissal for ``right_precedent_wrong_cause`` is recorded but left out of the fit: the
reviewer confirmed the top result WAS the precedent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seenbefore.calibration import fitting, record

if TYPE_CHECKING:
    from seenbefore.core.confidence import ConfidenceModel
    from seenbefore.kb import KnowledgeBase
    from seenbefore.storage.ports import Store

CASES = "calibration_cases"  # settings key: the last self-calibration's labelled rows per mode
STYLE = "people"
MIN_PER_CLASS = 3
MAX_PRINCIPAL_SHARE = 0.25  # of the people style's weight, once three or more principals speak
REFIT_EVERY = 10  # new labels after which the next decision refits
REFIT_RECORD = "review_refit"  # settings key: labels counted at the last refit
NOT_AGAINST_RETRIEVAL = ("right_precedent_wrong_cause",)
ROLES = ("viewer", "responder", "reviewer", "admin")  # security/tokens.py, increasing power
MIN_ROLE = "reviewer"  # whose labels move the shared model without an admin's acceptance


@dataclass(frozen=True)
class PersonLabel:
    review_id: str
    round: int
    doc_id: str
    model_key: str
    signals: Mapping[str, float]
    label: int
    reason: str
    who: str
    role: str  # the role its decision or feedback recorded (labels stored before: viewer)


def labels(store: Store) -> list[PersonLabel]:
    """Every stored label with the principal whose decision or feedback made it."""
    rows = store.query(
        "SELECT l.review_id, l.round, l.doc_id, l.model_key, l.signals, l.label, l.reason,"
        " e.actor AS who, e.detail AS detail"
        " FROM calibration_labels l LEFT JOIN review_events e ON e.id ="
        " (SELECT MAX(d.id) FROM review_events d WHERE d.review_id = l.review_id"
        "  AND d.round = l.round AND d.action IN ('approved', 'dismissed', 'feedback'))"
        " ORDER BY l.id"
    )

    def role_of(who: str, detail: str | None) -> str:
        """The role the decision recorded; the local CLI user is an admin; else viewer."""
        role = str(json.loads(detail or "{}").get("role") or "")
        if role in ROLES:
            return role
        return "admin" if who.startswith("local:") else "viewer"

    return [
        PersonLabel(
            str(r["review_id"]),
            int(r["round"]),
            str(r["doc_id"]),
            str(r["model_key"]),
            {k: float(v) for k, v in json.loads(r["signals"]).items()},
            int(r["label"]),
            str(r["reason"]),
            str(r["who"] or "unknown"),
            role_of(str(r["who"] or "unknown"), r["detail"]),
        )
        for r in rows
    ]


def trusted(people: Sequence[PersonLabel], *, all_roles: bool = False) -> list[PersonLabel]:
    """The labels that may move the shared model: those of principals with MIN_ROLE or higher,
    or every label when an admin accepts them all (``all_roles``)."""
    if all_roles:
        return list(people)
    return [p for p in people if ROLES.index(p.role) >= ROLES.index(MIN_ROLE)]


def as_rows(people: Sequence[PersonLabel]) -> list[fitting.Labelled]:
    """People's labels as fit rows of style ``people``: each principal weighs the same, and
    none more than MAX_PRINCIPAL_SHARE of the style once three or more principals speak."""
    usable = [p for p in people if p.reason not in NOT_AGAINST_RETRIEVAL]
    counts: dict[str, int] = {}
    for p in usable:
        counts[p.who] = counts.get(p.who, 0) + 1
    if not counts:
        return []
    share = 1.0 / len(counts)
    if len(counts) >= 3:
        share = min(share, MAX_PRINCIPAL_SHARE)
    return [
        fitting.Labelled(p.signals, bool(p.label), STYLE, True, share / counts[p.who])
        for p in usable
    ]


def halves(people: Sequence[PersonLabel]) -> dict[str, int]:
    """Which fold of the refit's check each review's labels sit in (0 or 1): reviews
    alternate in the order their first label was stored, so the halves differ by one review
    at most and every round of a review goes with it."""
    order: dict[str, int] = {}
    for p in people:
        order.setdefault(p.review_id, len(order) % 2)
    return order


def _held_out_check(
    fit_self: Sequence[fitting.Labelled],
    held_self: Sequence[fitting.Labelled],
    mine: Sequence[PersonLabel],
    by: Sequence[str],
    live: ConfidenceModel | None,
    refitted: ConfidenceModel,
    source: str,
) -> tuple[bool, str, str]:
    """(kept, why, on what): the refit made without each half of ``mine`` in turn, judged
    against ``live`` on ``held_self`` plus that half's labels by principals outside ``by``;
    kept when its balanced log-loss, averaged over the folds, is the lower. Where no fold
    can be made and judged (every label is by ``by``, say), ``refitted`` (the fit on every
    label) is judged on ``held_self`` alone, and says so."""
    folds = []
    half = halves(mine)
    for fold in (0, 1):
        seen = [p for p in mine if half[p.review_id] != fold]
        unseen = [p for p in mine if half[p.review_id] == fold and p.who not in by]
        check = [*held_self, *as_rows(unseen)]
        if not unseen or not check:
            continue
        try:
            made = fitting.fit([*fit_self, *as_rows(seen)], check, source=source)
        except ValueError:
            continue
        folds.append((made.model, check, len(unseen)))
    if not folds:
        if not held_self:
            return False, "no labels or self-made cases it was not fitted on to check it", ""
        kept, why = fitting.beats(refitted, live, held_self)
        return kept, why, f"{len(held_self)} held-out self-made cases (no labels left out)"
    mine_loss = sum(fitting.balanced_log_loss(m, c) for m, c, _ in folds) / len(folds)
    on = (
        f"{len(held_self)} held-out self-made cases + {sum(n for *_, n in folds)} labels of "
        f"other principals, each judging a refit made without it ({len(folds)} fold(s))"
    )
    if live is None:
        return True, f"held-out log-loss {mine_loss:.3f}; no live model to beat", on
    theirs = sum(fitting.balanced_log_loss(live, c) for _, c, _ in folds) / len(folds)
    verdict = "kept" if mine_loss < theirs else "not kept: the live model stays"
    return (
        mine_loss < theirs,
        f"held-out log-loss {mine_loss:.3f} vs the live model's {theirs:.3f}: {verdict}",
        on,
    )


def keep_cases(store: Store, fingerprint: Mapping[str, str], rows: Mapping[str, Any]) -> None:
    """Keep the self-made rows per mode ({key: (fit rows, held rows)}) for later refits."""

    def dump(part: Sequence[fitting.Labelled]) -> list[list[Any]]:
        return [
            [dict(r.signals), r.right, r.style, r.has_precedent, r.weight, r.recurrence]
            for r in part
        ]

    store.set_json(
        CASES,
        {
            "fingerprint": dict(fingerprint),
            "modes": {k: {"fit": dump(f), "held": dump(h)} for k, (f, h) in rows.items()},
        },
    )


def kept_cases(store: Store) -> dict[str, tuple[list[fitting.Labelled], list[fitting.Labelled]]]:
    data = store.get_json(CASES) or {}

    def load(part: Sequence[Sequence[Any]]) -> list[fitting.Labelled]:
        return [
            fitting.Labelled(dict(s), bool(r), str(st), bool(h), float(w), bool(rc))
            for s, r, st, h, w, rc in part
        ]

    return {k: (load(v["fit"]), load(v["held"])) for k, v in (data.get("modes") or {}).items()}


def refit(
    kb: KnowledgeBase,
    *,
    persist: bool = True,
    by: Sequence[str] = (),
    all_roles: bool = False,
    who: str = "reviews",
) -> dict[str, Any]:
    """Refit each mode with people's labels joined to the kept self-made cases; keep a mode's
    fit only when it beats the live model on data it was not fitted on and ``by`` (the
    principals whose labels asked for the refit; default: none) did not write
    (:func:`_held_out_check`). Only labels of principals with MIN_ROLE or
    higher count unless ``all_roles`` (an admin accepting them). ValueError when there are no
    labels."""
    said = labels(kb.store)
    if not said:
        raise ValueError("no review decisions recorded yet; approve or dismiss reviews first")
    people = trusted(said, all_roles=all_roles)
    cases = kept_cases(kb.store)
    if not cases:
        kb.maybe_self_calibrate(force=True)
        cases = kept_cases(kb.store)
    report: dict[str, Any] = {"labels": len(said), "models": {}, "notes": []}
    pending = len(said) - len(people)
    if pending:
        report["notes"].append(
            f"{pending} label(s) from principals below the {MIN_ROLE} role were kept but not "
            "fitted: an admin accepts them with `seenbefore calibrate --from-reviews "
            "--accept-all-roles`"
        )
    skipped = [p for p in people if p.reason in NOT_AGAINST_RETRIEVAL]
    if skipped:
        report["notes"].append(
            f"{len(skipped)} dismissal(s) for right_precedent_wrong_cause left out: the reviewer "
            "confirmed the top result was the precedent"
        )
    principals = sorted({p.who for p in people})
    report["principals"] = {w: sum(p.who == w for p in people) for w in principals}
    for key in sorted({p.model_key for p in people} | set(cases)):
        mine = [p for p in people if p.model_key == key]
        fit_self, held_self = cases.get(key, ([], []))
        rows = as_rows(mine)
        positives = sum(r.right for r in rows)
        entry: dict[str, Any] = {
            "labels": len(rows),
            "positive": positives,
            "self_made_cases": len(fit_self) + len(held_self),
        }
        report["models"][key] = entry
        if not rows:
            entry.update(kept=False, precedence="no labels for this mode")
            continue
        if not fit_self and (positives < MIN_PER_CLASS or len(rows) - positives < MIN_PER_CLASS):
            entry.update(
                kept=False, precedence="too few labels of each class and no self-made cases"
            )
            continue
        source = (
            f"fitted on {len(fit_self)} self-made cases + {len(rows)} people's labels from "
            f"{len({p.who for p in mine})} principal(s)"
        )
        others = as_rows([p for p in mine if p.who not in by])
        try:
            made = fitting.fit([*fit_self, *rows], [*held_self, *others] or rows, source=source)
            kept, why, on = _held_out_check(
                fit_self, held_self, mine, by, kb.confidence_model(key), made.model, source
            )
        except ValueError as exc:
            entry.update(kept=False, precedence=f"could not fit: {exc}")
            continue
        entry.update(
            kept=kept,
            precedence=why,
            checked_on=on,
            lo=made.model.lo,
            hi=made.model.hi,
            thresholds_by_shape={k: list(v) for k, v in made.model.shapes.items()},
            weights=dict(made.model.weights),
            source=source,
        )
        if kept and persist:
            line = f"{key}: {source}; 'no precedent' at p <= {made.model.lo}, 'found' at p >= {made.model.hi}"
            record.keep_model(
                kb.store, key, made.model, by="reviews", line=line, who=", ".join(by) or who
            )
    return report


def reviewed_figures(kb: KnowledgeBase) -> dict[str, Any] | None:
    """The live confidence models' figures on the queries people decided on (None before the
    first decision): what people actually typed, against the self-made cases of ``stats``'s
    held-out line. A label is 1 when the reviewer confirmed the top result as the precedent."""
    people = labels(kb.store)
    if not people:
        return None
    out: dict[str, Any] = {}
    for key in sorted({p.model_key for p in people}):
        model = kb.confidence_model(key)
        if model is None:
            continue
        rows = [
            fitting.Labelled(p.signals, bool(p.label), STYLE) for p in people if p.model_key == key
        ]
        out[key] = fitting.figures(model, rows).get("all", {})
    return out or None


def maybe_refit(kb: KnowledgeBase, *, every: int | None = None) -> dict[str, Any] | None:
    """Refit once ``every`` new labels arrived since the last refit (each approval, dismissal
    and feedback adds one); the principals of those new labels are the ones whose labels may
    not judge the refit. None when it was not due. A fit that cannot run is recorded with its
    reason; it never fails the decision that triggered it."""
    every = REFIT_EVERY if every is None else every
    people = trusted(labels(kb.store))
    last = kb.store.get_json(REFIT_RECORD) or {}
    seen = int(last.get("labels", 0))
    if every <= 0 or len(people) - seen < every:
        return None
    by = sorted({p.who for p in people[seen:]})
    rec: dict[str, Any] = {"labels": len(people), "at": record.now(), "by": by}
    try:
        report = refit(kb, persist=True, by=by)
        rec["kept"] = {k: bool(m.get("kept")) for k, m in report["models"].items()}
        rec["precedence"] = {k: m.get("precedence") for k, m in report["models"].items()}
    except ValueError as exc:
        report = {"error": str(exc)}
        rec["error"] = str(exc)
    kb.store.set_json(REFIT_RECORD, rec)
    return report
