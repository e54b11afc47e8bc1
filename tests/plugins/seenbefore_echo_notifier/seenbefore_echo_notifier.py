"""An example third-party seenbefore plugin: one notifier, one embedder, one LLM client.

The notifier appends each notification as a JSON line to the file named by ``path`` in its
``[notify.echo]`` table; the embedder counts letters; the LLM client answers a fixed reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seenbefore.errors import ConfigError
from seenbefore.investigation.llm import Completion, Message
from seenbefore.notify.base import DeliveryResult, Notification


class EchoNotifier:
    def __init__(self, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix

    def send(self, message: Notification) -> DeliveryResult:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(message.to_json() + "\n")
        return DeliveryResult(ok=True, status=200, body=f"{self.prefix}{message.anomaly.id}")


def build_notifier(table: Mapping[str, Any], *, client: Any = None) -> EchoNotifier:
    unknown = sorted(set(table) - {"path", "prefix"})
    if unknown:
        raise ConfigError(f"notify.echo has unknown keys {unknown}; allowed: ['path', 'prefix']")
    if not isinstance(table.get("path"), str):
        raise ConfigError("notify.echo.path is missing; expected a file path")
    return EchoNotifier(Path(table["path"]), str(table.get("prefix", "echo:")))


class LetterEmbedder:
    name = "echo-letters-26"
    dim = 26

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    out[row, ord(char) - ord("a")] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def build_embedder(options: Mapping[str, Any]) -> LetterEmbedder:
    return LetterEmbedder()


class EchoLLM:
    model = "echo"

    def complete(self, messages: list[Message], *, json_mode: bool = True) -> Completion:
        return Completion('{"summary": "echo"}', 1, 1, self.model)


def build_llm(settings: Mapping[str, Any]) -> EchoLLM:
    return EchoLLM()
