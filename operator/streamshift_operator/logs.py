"""The operator's log: one JSON object a line, without a line per successful periodic tick.

Kopf's CLI sets up its stream handler with the level from `--verbose`/`--quiet` before the
operator starts; `structured()` (called at startup) sets it up again with kopf's JSON format at
that same level, each line with the object it concerns (namespace and name) where there is one.
The event handlers that drive the periodic ticks (`query_seen`, `migration_seen`) run on every
watch event of their objects; kopf logs each success at INFO, which would be most of the log, so
those success lines are dropped. Their failures, and every other handler's lines, stay.
"""

import logging
import re

import kopf

PERIODIC = ("query_seen", "migration_seen")


class PeriodicSuccesses(logging.Filter):
    """Drops kopf's "Handler 'x' succeeded." lines of the named handlers."""

    def __init__(self, handlers: tuple[str, ...] = PERIODIC) -> None:
        super().__init__()
        names = "|".join(re.escape(name) for name in handlers)
        self.pattern = re.compile(rf"Handler '({names})' succeeded\.$")

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


def structured() -> None:
    """JSON lines at the level the CLI chose, without the periodic handlers' successes."""
    level = logging.getLogger().getEffectiveLevel()
    kopf.configure(
        debug=level <= logging.DEBUG,
        quiet=level >= logging.WARNING,
        log_format=kopf.LogFormat.JSON,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(PeriodicSuccesses())
