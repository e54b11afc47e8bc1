"""What the app reads and serves, derived from the code, for the deploy tests to check against.

Environment names come from ``Settings.model_fields`` (read as ``SEENBEFORE_<NAME>``)
plus the two variables read outside it; a probe path counts as served when the app
(``seenbefore.service.app.create_app``, called in process) answers it with anything but 404/405,
or, until the service exists, when it is one of the paths documented for it.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Iterable
from pathlib import Path

from pydantic import SecretStr

from seenbefore.config import ENV_PREFIX, Settings

REPO = Path(__file__).resolve().parents[2]
PREFIX = ENV_PREFIX

# Read outside Settings: the TOML file's path (config.py) and the admin token registered at start.
# read outside Settings: the config file's path, the admin token (cli/serve.py), the MiniLM ONNX
# export's folder (retrieval/onnx_minilm.py)
EXTRA_ENV = frozenset({"SEENBEFORE_CONFIG", "SEENBEFORE_ADMIN_TOKEN", "SEENBEFORE_MODEL_CACHE"})
# Secrets read outside Settings (inside it, SecretStr fields are found by type).
EXTRA_SECRET_ENV = frozenset({"SEENBEFORE_ADMIN_TOKEN"})

# Documented in issue 7 until src/seenbefore/service/app.py exists with create_app.
DOCUMENTED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def env_name(field_name: str) -> str:
    return f"{PREFIX}{field_name}".upper()


def settings_env_names() -> frozenset[str]:
    return frozenset(env_name(name) for name in Settings.model_fields)


def allowed_env_names() -> frozenset[str]:
    """Every SEENBEFORE_* variable the app reads."""
    return settings_env_names() | EXTRA_ENV


def _mentions_secret(annotation: object) -> bool:
    if annotation is SecretStr:
        return True
    return any(_mentions_secret(arg) for arg in typing.get_args(annotation))


def secret_env_names() -> frozenset[str]:
    """Variables that must come from a Secret, never a literal value or a ConfigMap."""
    hints = typing.get_type_hints(Settings, include_extras=True)
    secret_fields = {name for name in Settings.model_fields if _mentions_secret(hints[name])}
    return frozenset(env_name(name) for name in secret_fields) | EXTRA_SECRET_ENV


def default_port() -> int:
    port = Settings.model_fields["serve_port"].default
    assert isinstance(port, int)
    return port


def served_paths(home: Path, candidates: Iterable[str]) -> frozenset[str]:
    """Those of ``candidates`` the service answers with a GET (anything but 404/405), asked in
    process (no lifespan, no network), or the documented paths until the service exists."""
    try:
        module = importlib.import_module("seenbefore.service.app")
    except ModuleNotFoundError as exc:
        if exc.name in {"seenbefore.service", "seenbefore.service.app"}:
            return frozenset(candidates) & DOCUMENTED_PATHS
        raise
    create_app = getattr(module, "create_app", None)
    if create_app is None:
        return frozenset(candidates) & DOCUMENTED_PATHS
    from fastapi.testclient import TestClient

    kwargs = {}
    if "settings" in inspect.signature(create_app).parameters:
        kwargs["settings"] = Settings(home=home, embedder="none")
    client = TestClient(create_app(**kwargs))
    try:
        return frozenset(
            path for path in candidates if client.get(path).status_code not in {404, 405}
        )
    finally:
        client.close()
