"""Kubernetes manifests: schema-valid (bundled schemas, strict) and consistent with the app.

Both the base and the postgres overlay are rendered here (tests/deploy/kustomize.py, the subset
of kustomize they use) and every rendered object is validated, so what is checked is what
`kubectl apply -k` would send.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from kubernetes_validate.utils import latest_version

from seenbefore.config import Settings
from tests.deploy import dockerfile as df
from tests.deploy.app_contract import (
    REPO,
    allowed_env_names,
    default_port,
    secret_env_names,
    served_paths,
)
from tests.deploy.kustomize import Resource, load_documents, render

K8S = REPO / "deploy" / "k8s"
BASE = K8S / "base"
OVERLAY = K8S / "overlays" / "postgres"
# The oldest minor the big managed offerings still support, and the newest schemas bundled.
K8S_VERSIONS = ("1.30", latest_version())
SEENBEFORE_NAME = re.compile(r"\bSEENBEFORE_[A-Z0-9_]+\b")
RENDERS = {"base": BASE, "postgres": OVERLAY}


@pytest.fixture(scope="module", params=sorted(RENDERS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[Resource]]:
    return request.param, render(RENDERS[request.param])


def one(resources: list[Resource], kind: str) -> Resource:
    found = [r for r in resources if r["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(resources: list[Resource]) -> dict[str, Any]:
    containers = one(resources, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def pod_spec(resources: list[Resource]) -> dict[str, Any]:
    return dict(one(resources, "Deployment")["spec"]["template"]["spec"])


def configmap_env(resources: list[Resource]) -> dict[str, str]:
    """The variables the container gets from ConfigMaps through envFrom."""
    maps = {r["metadata"]["name"]: r for r in resources if r["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for source in container(resources).get("envFrom", []):
        assert "prefix" not in source
        if "configMapRef" in source:
            name = source["configMapRef"]["name"]
            assert name in maps, f"envFrom ConfigMap {name} is not in the render"
            env.update(maps[name]["data"])
        else:
            pytest.fail(f"envFrom {source}: only ConfigMaps, secrets go through secretKeyRef")
    return env


def served_port(resources: list[Resource]) -> int:
    return int(configmap_env(resources).get("SEENBEFORE_SERVE_PORT", default_port()))


def resolve_port(port: int | str, resources: list[Resource]) -> int:
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container(resources)["ports"] if "name" in p}
    assert port in named, f"port name {port!r} is not a container port"
    return int(named[port])


# ------------------------------------------------------------------------------------ schemas


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_rendered_object_validates_strictly(
    rendered: tuple[str, list[Resource]], version: str
) -> None:
    _, resources = rendered
    assert resources
    for resource in resources:
        kubernetes_validate.validate(resource, version, strict=True)


def test_strict_validation_rejects_a_misspelt_field() -> None:
    deployment = one(render(BASE), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"] = {
        "pth": "/readyz",
        "port": "http",
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[-1], strict=True)


def test_every_manifest_file_is_rendered_by_a_kustomization() -> None:
    listed: set[Path] = set()
    for kustomization in K8S.rglob("kustomization.yaml"):
        (spec,) = load_documents(kustomization)
        listed.add(kustomization)
        entries = list(spec.get("resources", [])) + [
            p["path"] for p in spec.get("patches", []) if "path" in p
        ]
        listed.update((kustomization.parent / e).resolve() for e in entries)
    files = {p.resolve() for p in K8S.rglob("*.yaml")}
    assert files - listed == set(), "manifests no kustomization renders (so never validated)"


# ------------------------------------------------------------------------ what the app reads


def test_env_names_are_ones_the_app_reads(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    allowed = allowed_env_names()
    names = set(configmap_env(resources)) | {e["name"] for e in container(resources)["env"]}
    assert names <= allowed, f"not read by the app: {sorted(names - allowed)}"
    names_in_text = {
        name for path in K8S.rglob("*.yaml") for name in SEENBEFORE_NAME.findall(path.read_text())
    }
    assert names_in_text <= allowed, f"not read by the app: {sorted(names_in_text - allowed)}"


def test_secrets_come_only_from_secret_refs(rendered: tuple[str, list[Resource]]) -> None:
    name, resources = rendered
    secrets = secret_env_names()
    leaked = secrets & set(configmap_env(resources))
    assert not leaked, f"secrets in a ConfigMap: {sorted(leaked)}"
    from_secrets = {}
    for var in container(resources)["env"]:
        if var["name"] in secrets:
            assert "value" not in var, f"{var['name']} has a literal value"
            from_secrets[var["name"]] = var["valueFrom"]["secretKeyRef"]
    expected = {"SEENBEFORE_ADMIN_TOKEN", "SEENBEFORE_LLM_API_KEY"}
    if name == "postgres":  # the service login and its tier key; never the maintenance login
        expected |= {"SEENBEFORE_DATABASE_URL", "SEENBEFORE_DATABASE_TIER_KEY"}
    assert set(from_secrets) == expected
    assert not from_secrets["SEENBEFORE_ADMIN_TOKEN"].get("optional", False)
    assert not any(r["kind"] == "Secret" for r in resources), "secret values never live in git"


def test_configmap_values_parse_as_settings(
    rendered: tuple[str, list[Resource]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, resources = rendered
    for name in allowed_env_names():
        monkeypatch.delenv(name, raising=False)
    for name, value in configmap_env(resources).items():
        assert isinstance(value, str), f"{name}: ConfigMap values must be strings"
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.home == Path("/data")
    assert settings.serve_host == "0.0.0.0"
    assert settings.serve_port == served_port(resources)
    assert settings.service_tiers == ("general",)
    assert settings.embedder == "minilm"


def test_config_file_is_a_mounted_secret(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    config_path = Path(configmap_env(resources)["SEENBEFORE_CONFIG"])
    volumes = {v["name"]: v for v in pod_spec(resources)["volumes"]}
    mounts = {Path(m["mountPath"]): m for m in container(resources)["volumeMounts"]}
    mount = mounts[config_path.parent]
    assert mount.get("readOnly") is True
    secret = volumes[mount["name"]]["secret"]
    assert {"key": "config.toml", "path": config_path.name} in secret["items"]


def test_home_is_mounted(rendered: tuple[str, list[Resource]]) -> None:
    name, resources = rendered
    home = configmap_env(resources)["SEENBEFORE_HOME"]
    mounts = {m["mountPath"]: m["name"] for m in container(resources)["volumeMounts"]}
    volume = {v["name"]: v for v in pod_spec(resources)["volumes"]}[mounts[home]]
    claims = {r["metadata"]["name"] for r in resources if r["kind"] == "PersistentVolumeClaim"}
    if name == "base":
        assert volume["persistentVolumeClaim"]["claimName"] in claims
    else:  # the knowledge base lives in PostgreSQL; /data is per-pod scratch
        assert "emptyDir" in volume and not claims
    # the root filesystem is read-only, so /tmp must be a volume too
    assert "/tmp" in mounts


def test_probes_hit_paths_the_app_serves_on_its_port(
    rendered: tuple[str, list[Resource]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, resources = rendered
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path))
    box = container(resources)
    probes = ("readinessProbe", "livenessProbe", "startupProbe")
    paths = served_paths(tmp_path, {box[probe]["httpGet"]["path"] for probe in probes})
    assert box["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert box["livenessProbe"]["httpGet"]["path"] == "/healthz"
    port = served_port(resources)
    assert port == default_port()
    for probe in probes:
        get = box[probe]["httpGet"]
        assert get["path"] in paths, f"{probe}: the app does not serve {get['path']}"
        assert resolve_port(get["port"], resources) == port
    assert [p["containerPort"] for p in box["ports"]] == [port]


def test_service_routes_to_the_pods_port(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    service = one(resources, "Service")
    labels = one(resources, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    selector = one(resources, "Deployment")["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    for port in service["spec"]["ports"]:
        assert resolve_port(port["targetPort"], resources) == served_port(resources)


def test_runs_seenbefore_serve_as_the_images_user(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    image = df.parse((REPO / "Dockerfile").read_text(encoding="utf-8"))
    entrypoint = image.final.last("ENTRYPOINT")
    assert entrypoint is not None and entrypoint.exec_form is not None
    box = container(resources)
    assert "command" not in box, "the image's ENTRYPOINT runs seenbefore"
    assert [*entrypoint.exec_form, *box["args"]] == ["seenbefore", "serve"]

    pod = pod_spec(resources)["securityContext"]
    user = image.final.last("USER")
    assert user is not None
    assert pod["runAsNonRoot"] is True and box["securityContext"]["runAsNonRoot"] is True
    assert str(pod["runAsUser"]) == user.args.split(":")[0]
    assert box["securityContext"]["allowPrivilegeEscalation"] is False
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert box["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_resources_are_requested_and_limited(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    limits = container(resources)["resources"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(limits[kind]), kind


# ---------------------------------------------------------------------- base versus overlay


def test_base_is_one_sqlite_writer() -> None:
    resources = render(BASE)
    deployment = one(resources, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "SEENBEFORE_DATABASE_URL" not in {e["name"] for e in container(resources)["env"]}
    claim = one(resources, "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_overlay_runs_replicas_over_postgres() -> None:
    resources = render(OVERLAY)
    deployment = one(resources, "Deployment")
    replicas = deployment["spec"]["replicas"]
    assert replicas == 3
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    env = {e["name"]: e for e in container(resources)["env"]}
    ref = env["SEENBEFORE_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "seenbefore-database", "key": "url"}
    key = env["SEENBEFORE_DATABASE_TIER_KEY"]["valueFrom"]["secretKeyRef"]
    assert key == {"name": "seenbefore-database", "key": "tier-key"}
    assert "SEENBEFORE_DATABASE_ADMIN_URL" not in env  # replicas never hold the owner's login
    assert not [r for r in resources if r["kind"] == "PersistentVolumeClaim"]
    budget = one(resources, "PodDisruptionBudget")
    assert 0 < budget["spec"]["minAvailable"] < replicas
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # the overlay changes only what it says it changes
    base = render(BASE)
    assert one(resources, "ConfigMap") == one(base, "ConfigMap")
    assert one(resources, "Service") == one(base, "Service")


def test_overlay_sets_the_database_up_with_the_maintenance_login_alone() -> None:
    """The one place the maintenance login's URL goes: a Job running `seenbefore database
    setup` (migrations, checkpoint tables, the replicas' tier key), as the image's user."""
    resources = render(OVERLAY)
    job = one(resources, "Job")
    [box] = job["spec"]["template"]["spec"]["containers"]
    image = df.parse((REPO / "Dockerfile").read_text(encoding="utf-8"))
    entrypoint = image.final.last("ENTRYPOINT")
    assert entrypoint is not None and entrypoint.exec_form is not None
    assert [*entrypoint.exec_form, *box["args"]] == ["seenbefore", "database", "setup"]
    env = {e["name"]: e for e in box["env"]}
    assert set(env) <= allowed_env_names()
    for name in secret_env_names() & set(env):
        assert "value" not in env[name], f"{name} has a literal value"
    admin = env["SEENBEFORE_DATABASE_ADMIN_URL"]["valueFrom"]["secretKeyRef"]
    assert admin == {"name": "seenbefore-database-admin", "key": "url"}
    deployment = container(resources)
    tier_key = {e["name"]: e for e in deployment["env"]}["SEENBEFORE_DATABASE_TIER_KEY"]
    assert env["SEENBEFORE_DATABASE_TIER_KEY"]["valueFrom"] == tier_key["valueFrom"]
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert not [r for r in render(BASE) if r["kind"] == "Job"]  # SQLite needs no set-up
