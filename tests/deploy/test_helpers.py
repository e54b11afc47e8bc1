"""The deploy tests' own tools: the Dockerfile parser, .dockerignore matching, the renderer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from seenbefore.config import Settings
from tests.deploy import dockerfile as df
from tests.deploy.app_contract import allowed_env_names, secret_env_names
from tests.deploy.kustomize import RenderError, render

DOCKERFILE = textwrap.dedent(
    """\
    # syntax=docker/dockerfile:1
    ARG BASE=python:3.11-slim
    FROM ${BASE} AS build
    # a comment
    ARG EXTRA=x
    RUN --network=none echo one \\
        # a comment inside a continuation is dropped
        && echo ${EXTRA}
    FROM $BASE
    ENV A=1 B="two words" \\
        C=${A}/c
    ENV LEGACY value with spaces
    COPY --from=build /opt /opt
    CMD ["run", "it"]
    """
)


def test_dockerfile_parser_reads_stages_flags_continuations_and_env() -> None:
    parsed = df.parse(DOCKERFILE)
    assert parsed.directives == {"syntax": "docker/dockerfile:1"}
    assert parsed.global_args == {"BASE": "python:3.11-slim"}
    assert [(s.index, s.base, s.name) for s in parsed.stages] == [
        (0, "python:3.11-slim", "build"),
        (1, "python:3.11-slim", None),
    ]
    (run,) = parsed.stages[0].all("RUN")
    assert run.flag("network") == "none"
    assert run.args.split() == ["echo", "one", "&&", "echo", "${EXTRA}"]
    assert run.line == 6
    assert parsed.final.env(parsed.global_args) == {
        "A": "1",
        "B": "two words",
        "C": "1/c",
        "LEGACY": "value with spaces",
    }
    cmd = parsed.final.last("CMD")
    assert cmd is not None and cmd.exec_form == ["run", "it"]
    copy = parsed.final.last("COPY")
    assert copy is not None and copy.flag("from") == "build" and copy.exec_form is None


def test_dockerfile_parser_rejects_instructions_before_from() -> None:
    with pytest.raises(ValueError, match="before the first FROM"):
        df.parse("RUN echo\nFROM scratch\n")


def test_dockerignore_matching_follows_docker_rules() -> None:
    rules = df.parse_dockerignore("# c\n/build\n**/*.pyc\ndocs/*.md\n!docs/keep.md\ndata*\n")
    assert df.is_ignored("build/lib/x.py", rules)  # a directory pattern covers its contents
    assert not df.is_ignored("src/build/x.py", rules)  # patterns are anchored at the root
    assert df.is_ignored("a/b/c.pyc", rules) and df.is_ignored("c.pyc", rules)
    assert df.is_ignored("docs/guide.md", rules)
    assert not df.is_ignored("docs/keep.md", rules)  # the later exception wins
    assert not df.is_ignored("docs/sub/guide.md", rules)  # * does not cross '/'
    assert df.is_ignored("data-2024/x", rules)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(
        tmp_path / "base" / "kustomization.yaml",
        """\
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources: [cm.yaml]
        """,
    )
    write(
        tmp_path / "base" / "cm.yaml",
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        data: {K: v}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: b}
        data: {K: v}
        """,
    )
    return tmp_path


def overlay(tree: Path, patches: str) -> Path:
    write(
        tree / "over" / "kustomization.yaml",
        f"""\
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources: [../base]
        patches:
        {textwrap.indent(textwrap.dedent(patches), "        ").strip()}
        """,
    )
    return tree / "over"


def test_renderer_applies_json6902_to_the_target_only(tree: Path) -> None:
    write(tree / "over" / "p.yaml", "- {op: replace, path: /data/K, value: w}\n")
    out = render(overlay(tree, "- {path: p.yaml, target: {kind: ConfigMap, name: b}}"))
    assert [(r["metadata"]["name"], r["data"]["K"]) for r in out] == [("a", "v"), ("b", "w")]


def test_renderer_fails_a_failing_test_op(tree: Path) -> None:
    write(tree / "over" / "p.yaml", "- {op: test, path: /data/K, value: other}\n")
    with pytest.raises(RenderError, match="JSON 6902"):
        render(overlay(tree, "- {path: p.yaml, target: {kind: ConfigMap, name: a}}"))


def test_renderer_deletes_with_patch_delete(tree: Path) -> None:
    write(
        tree / "over" / "d.yaml",
        "$patch: delete\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    out = render(overlay(tree, "- {path: d.yaml}"))
    assert [r["metadata"]["name"] for r in out] == ["b"]


def test_renderer_refuses_what_it_does_not_implement(tree: Path) -> None:
    write(tree / "over" / "s.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    with pytest.raises(RenderError, match="only JSON 6902"):
        render(overlay(tree, "- {path: s.yaml}"))
    write(
        tree / "base" / "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [cm.yaml]\nnamePrefix: x-\n",
    )
    with pytest.raises(RenderError, match="namePrefix"):
        render(tree / "base")


def test_contract_derives_env_names_from_settings() -> None:
    allowed = allowed_env_names()
    assert {"SEENBEFORE_HOME", "SEENBEFORE_SERVE_PORT", "SEENBEFORE_DATABASE_URL"} <= allowed
    assert {"SEENBEFORE_CONFIG", "SEENBEFORE_ADMIN_TOKEN"} <= allowed
    assert "SEENBEFORE_SERVE_PROT" not in allowed
    assert secret_env_names() >= {
        "SEENBEFORE_LLM_API_KEY",
        "SEENBEFORE_DATABASE_URL",
        "SEENBEFORE_ADMIN_TOKEN",
    }
    assert "SEENBEFORE_HOME" not in secret_env_names()


def test_renderer_sets_images_like_kustomize_edit_set_image(tmp_path: Path) -> None:
    write(
        tmp_path / "kustomization.yaml",
        """\
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources: [d.yaml]
        images:
          - {name: seenbefore, newName: registry.example.com/team/seenbefore, newTag: "0.2.0"}
        """,
    )
    write(
        tmp_path / "d.yaml",
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          template:
            spec:
              containers:
                - {name: a, image: "seenbefore:0.1.0"}
                - {name: b, image: "registry.example.com:5000/other:1"}
        """,
    )
    (out,) = render(tmp_path)
    images = [c["image"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert images == [
        "registry.example.com/team/seenbefore:0.2.0",
        "registry.example.com:5000/other:1",
    ]


@pytest.mark.parametrize("value", ["general,ops", " general , ops ", '["general", "ops"]'])
def test_tier_lists_from_env_accept_commas_and_json(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # The ConfigMap sets SEENBEFORE_SERVICE_TIERS as plain text; settings once JSON-decoded it
    # first and failed on anything but a JSON list.
    monkeypatch.setenv("SEENBEFORE_SERVICE_TIERS", value)
    assert Settings().service_tiers == ("general", "ops")
