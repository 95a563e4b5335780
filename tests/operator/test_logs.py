"""The operator's log: JSON lines, no line per successful periodic tick, failures kept."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from streamshift_operator.logs import structured


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    logger = logging.getLogger()
    handlers, level = list(logger.handlers), logger.level
    logger.setLevel(logging.INFO)
    yield logger
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_json_lines_without_the_periodic_successes(
    root: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    structured()
    assert root.level == logging.INFO  # the CLI's level kept
    objects = logging.getLogger("kopf.objects")
    objects.info("Handler 'query_seen' succeeded.")
    objects.info("Handler 'migration_seen' succeeded.")
    objects.error("Handler 'query_seen' failed with an exception. Will retry.")
    objects.info("Handler 'query_created' succeeded.")
    logging.getLogger("streamshift_operator.ticker").warning("tick of %s failed", "sq/a")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [line["message"] for line in lines] == [
        "Handler 'query_seen' failed with an exception. Will retry.",
        "Handler 'query_created' succeeded.",
        "tick of sq/a failed",
    ]
    assert [line["severity"] for line in lines] == ["error", "info", "warn"]


def test_a_quiet_operator_stays_quiet(
    root: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    root.setLevel(logging.WARNING)
    structured()
    logging.getLogger("kopf.objects").info("Handler 'query_created' succeeded.")
    assert capsys.readouterr().err == ""
