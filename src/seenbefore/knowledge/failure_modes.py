"""A failure mode for every postmortem: the author's ``type`` when given (it always wins), else
one inferred from its words, shown as inferred.

The classifier is multinomial naive Bayes over the features of failure_features.py, with each
mode's word distribution smoothed towards the background distribution of all training text
(Dirichlet prior, strength ``mu``), a uniform prior over modes, and a tempered posterior:
``p = softmax(alpha * min(1, max_evidence / n) * sum_w n_w log(P(w|mode) / P(w)))`` over the
``n`` features it knows. Its counts ship as failure_modes_model.json, fitted by
benchmarks/fit_failure_modes.py from the taxonomy's own words and postmortem collections whose
labels map to modes (never from the sample knowledge base). Pure Python and numpy; deterministic.

An inferred mode is *known* when its probability is at least :data:`CONFIDENT` (0.5: more likely
than every other mode together); below it the answer is "unknown", and the top mode is only the
nearest guess. Inferred modes never enter chunk text: retrieval does not change because of them.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from seenbefore.knowledge.failure_features import postmortem_text, text_features
from seenbefore.knowledge.failure_taxonomy import NO_TYPE, taxonomy
from seenbefore.types import Postmortem, StoredDocument

if TYPE_CHECKING:
    from seenbefore.storage.ports import DocumentReads

MODEL_FILE = "failure_modes_model.json"
CONFIDENT = 0.5
UNKNOWN = "unknown"
CACHE_SIZE = 8192


@dataclass(frozen=True)
class FailureMode:
    """A postmortem's failure mode: ``inferred`` False (and ``p`` 1.0) when the author wrote
    ``type``; else the classifier's top mode and its probability."""

    slug: str
    inferred: bool
    p: float

    @property
    def known(self) -> bool:
        """The author's type, or an inferred mode at ``p >= CONFIDENT``."""
        return not self.inferred or self.p >= CONFIDENT

    def label(self) -> str:
        """For people: ``bad-deploy``, ``bad-deploy (inferred, p 0.62)``, or
        ``unknown (inferred; nearest bad-deploy, p 0.21)``."""
        if not self.inferred:
            return self.slug
        if self.known:
            return f"{self.slug} (inferred, p {self.p:.2f})"
        return f"{UNKNOWN} (inferred; nearest {self.slug}, p {self.p:.2f})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "inferred": self.inferred,
            "p": round(self.p, 3),
            "known": self.known,
        }


@dataclass(frozen=True)
class Model:
    """Fitted log-ratios ``log P(w|mode) - log P(w)`` for the known features."""

    slugs: tuple[str, ...]
    index: Mapping[str, int]
    log_ratio: npt.NDArray[np.float64]  # features x modes
    alpha: float
    max_evidence: float

    def posterior(self, counts: Mapping[str, float]) -> npt.NDArray[np.float64]:
        """P(mode | features), in ``slugs`` order (uniform when no feature is known)."""
        rows, weights = [], []
        for feature, n in sorted(counts.items()):
            i = self.index.get(feature)
            if i is not None:
                rows.append(i)
                weights.append(n)
        if not rows:
            return np.full(len(self.slugs), 1.0 / len(self.slugs))
        w = np.asarray(weights, dtype=np.float64)
        score = w @ self.log_ratio[rows]
        evidence = float(w.sum())
        scale = self.alpha * min(1.0, self.max_evidence / evidence)
        logits = scale * score
        logits -= logits.max()
        p = np.exp(logits)
        return np.asarray(p / p.sum(), dtype=np.float64)


def build_model(
    slugs: Sequence[str],
    features: Sequence[str],
    counts: npt.NDArray[np.float64],
    *,
    mu: float,
    alpha: float,
    max_evidence: float,
) -> Model:
    """A Model from per-mode feature counts (features x modes)."""
    if counts.shape != (len(features), len(slugs)):
        raise ValueError(
            f"counts have shape {counts.shape}, expected ({len(features)}, {len(slugs)}): one "
            "row per feature, one column per mode"
        )
    totals = counts.sum(axis=1)
    background = (totals + 1.0) / (totals.sum() + len(features))
    per_mode = (counts + mu * background[:, None]) / (counts.sum(axis=0) + mu)[None, :]
    log_ratio = np.log(per_mode) - np.log(background)[:, None]
    return Model(
        slugs=tuple(slugs),
        index={f: i for i, f in enumerate(features)},
        log_ratio=log_ratio,
        alpha=alpha,
        max_evidence=max_evidence,
    )


def model_from_json(data: Mapping[str, Any]) -> Model:
    """The shipped parameters: ``slugs``, hyperparameters, and sparse ``counts``
    ({feature: [[mode index, count], ...]})."""
    slugs = list(data["slugs"])
    features = sorted(data["counts"])
    counts = np.zeros((len(features), len(slugs)))
    for row, feature in enumerate(features):
        for col, n in data["counts"][feature]:
            counts[row, int(col)] = float(n)
    return build_model(
        slugs,
        features,
        counts,
        mu=float(data["mu"]),
        alpha=float(data["alpha"]),
        max_evidence=float(data["max_evidence"]),
    )


@lru_cache(maxsize=1)
def shipped_model() -> Model:
    text = resources.files("seenbefore.knowledge").joinpath(MODEL_FILE).read_text("utf-8")
    model = model_from_json(json.loads(text))
    missing = set(taxonomy().slugs) ^ set(model.slugs)
    if missing:
        raise ValueError(
            f"{MODEL_FILE} and failure_modes.yaml disagree on the modes ({sorted(missing)}); "
            "refit with: python benchmarks/fit_failure_modes.py"
        )
    return model


def _top(model: Model, p: npt.NDArray[np.float64]) -> FailureMode:
    best = int(np.argmax(p))  # ties: the first in slug order
    return FailureMode(slug=model.slugs[best], inferred=True, p=float(p[best]))


def ranked(title: str, text: str, model: Model | None = None) -> list[tuple[str, float]]:
    """Every mode with its probability for ``title`` and ``text``, most likely first."""
    model = model or shipped_model()
    p = model.posterior(text_features(title, text))
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    return [(model.slugs[i], float(p[i])) for i in order]


def classify_text(title: str, text: str) -> FailureMode:
    """The inferred failure mode of ``title`` and ``text`` (inferred=True, whatever it says)."""
    model = shipped_model()
    return _top(model, model.posterior(text_features(title, text)))


_cache: OrderedDict[tuple[str, str], FailureMode] = OrderedDict()
_cache_lock = threading.Lock()


def _inferred(pm: Postmortem) -> FailureMode:
    """The inferred mode of ``pm``, remembered per (id, content hash): the most recent
    ``CACHE_SIZE`` are kept."""
    key = (pm.id, pm.content_hash)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    mode = classify_text(pm.title, postmortem_text(pm))
    with _cache_lock:
        _cache[key] = mode
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return mode


def failure_mode(pm: Postmortem) -> FailureMode:
    """``pm``'s failure mode: its author's ``type`` mapped through the taxonomy's aliases
    (inferred=False, p=1.0), else the mode its words suggest. Cached per (id, content hash):
    the features are read only when a postmortem is new or has changed."""
    if pm.type and pm.type not in NO_TYPE:  # stored before the validator dropped such a type
        return FailureMode(slug=taxonomy().canonical(pm.type), inferred=False, p=1.0)
    return _from_words(pm)


def _from_words(pm: Postmortem) -> FailureMode:
    """The mode ``pm``'s words suggest, whatever its author wrote."""
    if not pm.content_hash:  # built in memory, never stored: nothing to key a cache on
        return classify_text(pm.title, postmortem_text(pm))
    return _inferred(pm)


def failure_modes(docs: Mapping[str, StoredDocument]) -> dict[str, FailureMode]:
    """Each stored document's failure mode, by id."""
    return {doc_id: failure_mode(doc.postmortem) for doc_id, doc in docs.items()}


def query_mode_json(text: str) -> dict[str, Any]:
    """A search query's failure mode as the classifier reads it (always inferred), as JSON for
    seenbefore.retrieval.output.result_json."""
    return classify_text("", text).as_dict()


def failure_modes_json(store: DocumentReads, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The failure modes of ``doc_ids`` (search results: ids the caller may see) as JSON, for
    seenbefore.retrieval.output.result_json."""
    docs = store.documents_meta(list(dict.fromkeys(doc_ids))) if doc_ids else {}
    return {doc_id: mode.as_dict() for doc_id, mode in failure_modes(docs).items()}


def wanted_slug(text: str) -> str:
    """A ``--type`` / ``type`` filter's value as the slug it stands for (aliases mapped)."""
    return taxonomy().canonical(text)


def matches(mode: FailureMode, wanted: str) -> bool:
    """Whether ``mode`` passes a type filter for ``wanted`` (a slug or alias): the author's type,
    or a confident inferred one, is that mode."""
    return mode.known and mode.slug == wanted_slug(wanted)


def has_mode(pm: Postmortem, wanted: str) -> bool:
    """Whether ``pm`` passes a type filter for ``wanted``: its failure mode :func:`matches`; or
    its author wrote a word that is no failure mode of the taxonomy (graphrca's "Software",
    danluu's "Config Errors", a team's own word) and its words confidently say ``wanted``. The
    author's word still passes a filter for itself, but it no longer hides the mode the text
    names (Azure's leap-day certificate outage, filed under "Software", was not found by
    ``--type certificate-expiry``). An author's word that is a mode, or an alias of one, stands."""
    mode = failure_mode(pm)
    if matches(mode, wanted):
        return True
    if mode.inferred or mode.slug in taxonomy().slugs:
        return False
    return matches(_from_words(pm), wanted)
