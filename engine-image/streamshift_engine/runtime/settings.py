"""Reading worker settings: a getter over env and file values that names the setting in every
error (`ConfigError`), the optional YAML settings file, and the value parsers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


@dataclass(frozen=True)
class Topic:
    """A plan input or output and its Kafka topic."""

    name: str
    topic: str
    partitions: int


class ConfigError(ValueError):
    """A bad setting; the message starts with the setting's name."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(f"{setting}: {message}")
        self.setting = setting


class Getter:
    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def text(self, name: str, default: str | None = None) -> str:
        value = self.values.get(name, default)
        if value is None or str(value).strip() == "":
            raise ConfigError(name, "is required")
        return str(value).strip()

    def parse(self, name: str, convert: Callable[[str], T], default: str | None = None) -> T:
        raw = self.text(name, default)
        try:
            return convert(raw)
        except (ValueError, TypeError, KeyError) as error:
            raise ConfigError(name, f"bad value {raw!r}: {error}") from None


def settings_file(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("STREAMSHIFT_CONFIG_FILE")
    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError("STREAMSHIFT_CONFIG_FILE", str(error)) from None
    if not isinstance(data, dict):
        raise ConfigError("STREAMSHIFT_CONFIG_FILE", "must hold a mapping of setting names")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}


def topics(raw: str) -> tuple[Topic, ...]:
    items = json.loads(raw)
    if not isinstance(items, list):
        raise ValueError("expected a JSON list of {name, topic, partitions}")
    return tuple(Topic(str(i["name"]), str(i["topic"]), int(i.get("partitions", 1))) for i in items)


def partitions(raw: str) -> tuple[int, ...]:
    values = tuple(sorted({natural(part) for part in raw.split(",") if part.strip()}))
    if not values:
        raise ValueError("no partitions")
    return values


def start(raw: str) -> bool:
    """`run` restores and starts at once; `hold` waits for a migration's target `begin`."""
    if raw not in ("run", "hold"):
        raise ValueError("must be run or hold")
    return raw == "hold"


def natural(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def positive(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError("must be positive")
    return value


def port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value < 65536:
        raise ValueError("not a TCP port")
    return value
