"""Render a kustomization without the kustomize binary, for the subset this project uses.

Supported: ``resources`` (files, or directories holding a kustomization.yaml, recursively),
``images`` (newName / newTag / digest, as ``kustomize edit set image`` writes them) and
``patches`` entries (``path`` or inline ``patch``) that are either RFC 6902 JSON patches with a
``target`` (applied with the ``jsonpatch`` library, ``test`` ops included) or a ``$patch: delete``
document that removes a resource. Anything else in a kustomization raises, so a manifest never
silently renders differently here than under ``kubectl apply -k``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

Resource = dict[str, Any]

SUPPORTED_KEYS = frozenset({"apiVersion", "kind", "resources", "patches", "images"})
TARGET_KEYS = frozenset({"group", "version", "kind", "name", "namespace"})


class RenderError(Exception):
    """The kustomization uses something this renderer does not implement, or a patch fails."""


def load_documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as fh:
        return [doc for doc in yaml.safe_load_all(fh) if doc is not None]


def _group_version(resource: Resource) -> tuple[str, str]:
    group, _, version = str(resource["apiVersion"]).rpartition("/")
    return group, version


def matches(resource: Resource, target: dict[str, Any]) -> bool:
    unknown = set(target) - TARGET_KEYS
    if unknown:
        raise RenderError(f"patch target keys {sorted(unknown)} are not supported")
    group, version = _group_version(resource)
    wanted = {
        "group": group,
        "version": version,
        "kind": resource.get("kind"),
        "name": resource.get("metadata", {}).get("name"),
        "namespace": resource.get("metadata", {}).get("namespace"),
    }
    return all(wanted[key] == value for key, value in target.items())


def _identity(resource: Resource) -> tuple[str, str, str]:
    return (
        str(resource.get("apiVersion")),
        str(resource.get("kind")),
        str(resource.get("metadata", {}).get("name")),
    )


def render(directory: Path) -> list[Resource]:
    """The resources ``kubectl kustomize directory`` would print (for the supported subset)."""
    kustomization_file = directory / "kustomization.yaml"
    (kustomization,) = load_documents(kustomization_file)
    unknown = set(kustomization) - SUPPORTED_KEYS
    if unknown:
        raise RenderError(f"{kustomization_file}: keys {sorted(unknown)} are not supported here")
    if kustomization.get("kind") != "Kustomization":
        raise RenderError(f"{kustomization_file}: kind is {kustomization.get('kind')!r}")

    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            resources.extend(render(path))
        elif path.is_file():
            resources.extend(load_documents(path))
        else:
            raise RenderError(f"{kustomization_file}: resource {entry!r} does not exist")
    seen = [_identity(r) for r in resources]
    duplicates = {i for i in seen if seen.count(i) > 1}
    if duplicates:
        raise RenderError(f"{kustomization_file}: duplicate resources {sorted(duplicates)}")

    for entry in kustomization.get("patches", []):
        resources = _apply(directory, entry, resources)
    for entry in kustomization.get("images", []):
        resources = [_set_image(r, entry) for r in resources]
    return resources


def _image_name(image: str) -> str:
    name = image.split("@", 1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name


def _set_image(resource: Resource, entry: dict[str, Any]) -> Resource:
    unknown = set(entry) - {"name", "newName", "newTag", "digest"}
    if unknown:
        raise RenderError(f"images entry keys {sorted(unknown)} are not supported")
    pod = resource.get("spec", {}).get("template", {}).get("spec", {})
    boxes = [*pod.get("containers", []), *pod.get("initContainers", [])]
    if not any(_image_name(b["image"]) == entry["name"] for b in boxes):
        return resource
    out = copy.deepcopy(resource)
    pod = out["spec"]["template"]["spec"]
    for box in [*pod.get("containers", []), *pod.get("initContainers", [])]:
        if _image_name(box["image"]) != entry["name"]:
            continue
        old = box["image"]
        name = entry.get("newName", entry["name"])
        if "digest" in entry:
            box["image"] = f"{name}@{entry['digest']}"
        elif "newTag" in entry:
            box["image"] = f"{name}:{entry['newTag']}"
        else:
            box["image"] = name + old[len(_image_name(old)) :]
    return out


def _apply(directory: Path, entry: dict[str, Any], resources: list[Resource]) -> list[Resource]:
    if "path" in entry:
        docs = load_documents(directory / entry["path"])
        if len(docs) != 1:
            raise RenderError(f"patch {entry['path']}: expected one YAML document, got {len(docs)}")
        patch = docs[0]
    elif "patch" in entry:
        patch = yaml.safe_load(entry["patch"])
    else:
        raise RenderError(f"patch entry {entry} has neither path nor patch")
    unknown = set(entry) - {"path", "patch", "target"}
    if unknown:
        raise RenderError(f"patch entry keys {sorted(unknown)} are not supported")

    if isinstance(patch, list):  # RFC 6902
        target = entry.get("target")
        if not target:
            raise RenderError("a JSON 6902 patch needs a target")
        hits = [i for i, r in enumerate(resources) if matches(r, target)]
        if not hits:
            raise RenderError(f"JSON 6902 patch target {target} matches no resource")
        out = list(resources)
        for i in hits:
            try:
                out[i] = jsonpatch.apply_patch(copy.deepcopy(out[i]), patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise RenderError(f"JSON 6902 patch on {_identity(out[i])}: {exc}") from exc
        return out

    if isinstance(patch, dict) and patch.get("$patch") == "delete":
        doomed = _identity(patch)
        kept = [r for r in resources if _identity(r) != doomed]
        if len(kept) == len(resources):
            raise RenderError(f"$patch: delete of {doomed} matches no resource")
        return kept

    raise RenderError(
        "only JSON 6902 patches and `$patch: delete` are supported by this renderer; "
        f"got {type(patch).__name__} patch {str(patch)[:80]!r}"
    )
