"""The Dockerfile's structure, checked by parsing it: base images cannot be pulled here."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from seenbefore.config import Settings
from tests.deploy import dockerfile as df
from tests.deploy.app_contract import (
    REPO,
    allowed_env_names,
    default_port,
    secret_env_names,
    served_paths,
)

# Variables the image sets that the app itself does not read: Python, pip and the model libraries.
RUNTIME_ENV = frozenset(
    {
        "PATH",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PIP_NO_CACHE_DIR",
        "PIP_DISABLE_PIP_VERSION_CHECK",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HOME",
        "XDG_CACHE_HOME",
    }
)
SECRET_NAME = re.compile(r"(TOKEN|KEY|URL|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
DEAD_PROXY = "http://127.0.0.1:9"  # discard port: nothing answers
SEENBEFORE_NAME = re.compile(r"\bSEENBEFORE_[A-Z0-9_]+\b")


@pytest.fixture(scope="module")
def dockerfile() -> df.Dockerfile:
    return df.parse((REPO / "Dockerfile").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ignore_rules() -> list[df.IgnoreRule]:
    return df.parse_dockerignore((REPO / ".dockerignore").read_text(encoding="utf-8"))


def final_env(dockerfile: df.Dockerfile) -> dict[str, str]:
    return dockerfile.final.env(dockerfile.global_args)


def image_port(dockerfile: df.Dockerfile) -> int:
    return int(final_env(dockerfile).get("SEENBEFORE_SERVE_PORT", default_port()))


def test_multi_stage_runtime_copies_the_builders_venv(dockerfile: df.Dockerfile) -> None:
    assert len(dockerfile.stages) >= 2
    copies_from = [c for c in dockerfile.final.all("COPY") if c.flag("from")]
    assert copies_from, "the runtime stage copies nothing from an earlier stage"
    for copy in copies_from:
        source = dockerfile.stage(copy.flag("from") or "")
        assert source is not None and source.index < dockerfile.final.index
    venv = [c for c in copies_from if "/opt/venv" in c.args]
    assert venv, "the runtime stage must copy the builder's virtual environment"
    # The venv keeps its path, so its scripts' shebangs stay valid.
    assert venv[0].args.split() == ["/opt/venv", "/opt/venv"]
    assert final_env(dockerfile)["PATH"].startswith("/opt/venv/bin")


def test_builder_installs_cpu_torch_before_the_project_with_extras(
    dockerfile: df.Dockerfile,
) -> None:
    (venv_copy,) = [c for c in dockerfile.final.all("COPY") if c.args.startswith("/opt/venv")]
    builder = dockerfile.stage(venv_copy.flag("from") or "")
    assert builder is not None
    runs = [r.args for r in builder.all("RUN")]
    torch_at = next(i for i, r in enumerate(runs) if "torch==2.13.0" in r)
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs[torch_at]
    scope = {**dockerfile.global_args}
    for arg in builder.all("ARG"):
        name, _, default = arg.args.partition("=")
        scope[name] = default
    project_at = next(i for i, r in enumerate(runs) if re.search(r'pip install "\.\[', r))
    assert torch_at < project_at, "torch must be installed before sentence-transformers"
    extras = re.search(r"\.\[([^\]]+)\]", df.substitute(runs[project_at], scope))
    assert extras is not None
    assert {"neural", "server"} <= set(extras.group(1).split(","))
    # the postgres overlay runs this same image
    assert "postgres" in extras.group(1).split(",")


def test_final_user_is_not_root(dockerfile: df.Dockerfile) -> None:
    users = [i for s in dockerfile.stages for i in s.all("USER")]
    final_user = dockerfile.final.last("USER")
    assert final_user is not None, "the runtime stage never leaves root"
    assert users[-1] is final_user
    user, _, group = final_user.args.strip().partition(":")
    assert user not in {"root", "0", ""}
    assert group not in {"root", "0"}
    # numeric, so Kubernetes runAsNonRoot can verify it without /etc/passwd
    assert user.isdigit()


def test_healthcheck_probes_healthz_on_the_served_port(
    dockerfile: df.Dockerfile, tmp_path: Path
) -> None:
    check = dockerfile.final.last("HEALTHCHECK")
    assert check is not None
    assert check.args.startswith("CMD ")
    command = df.Instruction("CMD", check.args[4:], (), check.line).exec_form
    assert command is not None and command[0] == "python", "slim images have no curl"
    assert served_paths(tmp_path, ["/healthz"]) == {"/healthz"}
    assert "/healthz" in command[-1]
    # the port is the image's SEENBEFORE_SERVE_PORT (read at run time, same default)
    assert "SEENBEFORE_SERVE_PORT" in command[-1]
    assert f"'{image_port(dockerfile)}'" in command[-1]


class _Health(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        code = self.status if self.path == "/healthz" else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_healthcheck_command_passes_only_on_a_healthy_answer(
    dockerfile: df.Dockerfile,
    health_server: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    healthy: bool,
) -> None:
    check = dockerfile.final.last("HEALTHCHECK")
    assert check is not None
    command = df.Instruction("CMD", check.args[4:], (), check.line).exec_form
    assert command is not None
    monkeypatch.setattr(_Health, "status", status)
    port = str(health_server.server_address[1])
    # a proxy configured for the LLM endpoint must not swallow the loopback probe
    env = {"SEENBEFORE_SERVE_PORT": port, "http_proxy": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY}
    done = subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, timeout=30, check=False
    )
    assert (done.returncode == 0) is healthy, done.stderr.decode()[-500:]


def test_healthcheck_command_fails_when_nothing_listens(dockerfile: df.Dockerfile) -> None:
    check = dockerfile.final.last("HEALTHCHECK")
    assert check is not None
    command = df.Instruction("CMD", check.args[4:], (), check.line).exec_form
    assert command is not None
    with ThreadingHTTPServer(("127.0.0.1", 0), _Health) as idle:
        free_port = idle.server_address[1]  # bound, then closed: nothing listens on it
    env = {"SEENBEFORE_SERVE_PORT": str(free_port)}
    done = subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, timeout=30, check=False
    )
    assert done.returncode != 0


def test_exposes_and_binds_the_served_port(dockerfile: df.Dockerfile) -> None:
    exposed = [w.split("/")[0] for e in dockerfile.final.all("EXPOSE") for w in e.args.split()]
    assert exposed == [str(image_port(dockerfile))]
    assert image_port(dockerfile) == default_port()
    # 127.0.0.1 (the default) would be unreachable from outside the container
    assert final_env(dockerfile)["SEENBEFORE_SERVE_HOST"] == "0.0.0.0"


def test_runs_seenbefore_serve_in_exec_form(dockerfile: df.Dockerfile) -> None:
    entrypoint = dockerfile.final.last("ENTRYPOINT")
    cmd = dockerfile.final.last("CMD")
    assert entrypoint is not None and cmd is not None
    assert entrypoint.exec_form is not None and cmd.exec_form is not None, "exec form gets signals"
    assert [*entrypoint.exec_form, *cmd.exec_form] == ["seenbefore", "serve"]


def test_data_volume_is_the_home(dockerfile: df.Dockerfile) -> None:
    volumes = [w.strip('[]",') for v in dockerfile.final.all("VOLUME") for w in v.args.split()]
    assert volumes == ["/data"]
    assert final_env(dockerfile)["SEENBEFORE_HOME"] == "/data"


def test_model_is_verified_offline_in_the_final_image(dockerfile: df.Dockerfile) -> None:
    stage = dockerfile.final
    venv_at = next(i for i, ins in enumerate(stage.instructions) if "/opt/venv" in ins.args)
    checks = [
        (i, ins)
        for i, ins in enumerate(stage.instructions)
        if ins.keyword == "RUN" and "MiniLMEmbedder" in ins.args
    ]
    assert checks, "no RUN loads the model"
    at, run = checks[0]
    assert at > venv_at
    assert run.flag("network") == "none"
    assert "HF_HUB_OFFLINE=1" in run.args
    assert final_env(dockerfile)["HF_HUB_OFFLINE"] == "1"


def test_env_names_are_ones_the_app_or_runtime_reads(dockerfile: df.Dockerfile) -> None:
    allowed = allowed_env_names()
    set_names = {
        k for s in dockerfile.stages for e in s.all("ENV") for k, _ in df.parse_key_values(e.args)
    }
    assert {n for n in set_names if n.startswith("SEENBEFORE_")} <= allowed
    assert {n for n in set_names if not n.startswith("SEENBEFORE_")} <= RUNTIME_ENV
    mentioned = set(SEENBEFORE_NAME.findall(dockerfile.text))
    assert mentioned, "the image sets no SEENBEFORE_* variable at all"
    assert mentioned <= allowed, f"not read by the app: {sorted(mentioned - allowed)}"


def test_image_settings_parse(dockerfile: df.Dockerfile, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in allowed_env_names():
        monkeypatch.delenv(name, raising=False)
    for name, value in final_env(dockerfile).items():
        if name.startswith("SEENBEFORE_"):
            monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.home == Path("/data")
    assert settings.serve_port == image_port(dockerfile)
    assert settings.embedder == "minilm"


def test_no_secrets_baked_in(dockerfile: df.Dockerfile) -> None:
    secrets = secret_env_names()
    for stage in dockerfile.stages:
        for ins in stage.all("ENV"):
            for name, value in df.parse_key_values(ins.args):
                assert name not in secrets, f"{name} is a secret; pass it at run time"
                assert not (SECRET_NAME.search(name) and value), f"ENV {name} has a value"
        for ins in stage.all("ARG"):
            name, _, value = ins.args.partition("=")
            assert not (SECRET_NAME.search(name) and value), f"ARG {name} has a default"
    for name, value in dockerfile.global_args.items():
        assert not (SECRET_NAME.search(name) and value)


def test_copied_sources_exist_and_are_in_the_context(
    dockerfile: df.Dockerfile, ignore_rules: list[df.IgnoreRule]
) -> None:
    copied = []
    for stage in dockerfile.stages:
        for ins in stage.all("COPY") + stage.all("ADD"):
            if ins.flag("from"):
                continue
            *sources, _ = ins.exec_form or ins.args.split()
            copied.extend(sources)
    assert {"pyproject.toml", "README.md", "src", "examples/postmortems"} <= set(copied)
    for source in copied:
        assert (REPO / source).exists(), source
        assert not df.is_ignored(source, ignore_rules), f"{source} is in .dockerignore"
    assert not df.is_ignored("src/seenbefore/config.py", ignore_rules)
    sample = next((REPO / "examples" / "postmortems").glob("*.md")).relative_to(REPO)
    assert not df.is_ignored(sample.as_posix(), ignore_rules)


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        ".seenbefore/kb.sqlite",
        ".seenbefore-demo/kb.sqlite",
        "benchmarks/results/latency.json",
        "src/seenbefore/__pycache__/config.cpython-311.pyc",
        "config.toml",
        "kb.sqlite",
        ".env",
    ],
)
def test_dockerignore_keeps_environments_vcs_and_data_out(
    ignore_rules: list[df.IgnoreRule], path: str
) -> None:
    assert df.is_ignored(path, ignore_rules)


def test_the_images_install_ships_every_data_file() -> None:
    # The image installs the project non-editable, so a file outside [tool.setuptools.package-data]
    # (a template, a stylesheet) is missing in the container though present in a checkout.
    with (REPO / "pyproject.toml").open("rb") as fh:
        patterns = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["seenbefore"]
    package = REPO / "src" / "seenbefore"
    shipped = {path for pattern in patterns for path in package.glob(pattern)}
    data_files = {
        path
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }
    assert data_files, "no data files found: the package layout changed"
    missing = sorted(str(p.relative_to(package)) for p in data_files - shipped)
    assert not missing, f"not in package-data, so not in the image: {missing}"
