"""The registry of background jobs (see background/__init__.py).

A job is a name, how often it is due, and a step: a function that does a bounded piece of work
(a few seconds at most) and returns a Step saying what it did and whether more is waiting. A step
that says `more` is called again in the same round, after the other due jobs had their turn (or
before them, for a job that goes `first`); it must only say so when it made progress, or the
round would never end.
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    message: str = ""  # one line for the log and the status page ("12 of 720 hours summarised")
    more: bool = False  # more work is waiting and this step made progress


@dataclass(frozen=True)
class Job:
    name: str
    # Due this long after its last step that said no more; None: the runner's --every.
    every_s: float | None
    # Called with the runner's options (e.g. {"days": 30, "every": 30.0}) as keyword arguments.
    step: Callable[..., Step]
    # Whether the job runs unless asked for by name (`--only`): a demo writer does not.
    default: bool = True
    # Whether its steps go before the other jobs' while it has more to do (the chart summaries:
    # a fresh install's dashboard says "Summarising: 12 of 720 hours" until they are done, and
    # sharing the turns with a first search index would double that wait).
    first: bool = False


_registry: dict[str, Job] = {}


def register(job: Job) -> None:
    """Add a job (an app's AppConfig.ready calls this); registering a name again replaces it."""
    _registry[job.name] = job


def registered() -> list[Job]:
    return list(_registry.values())


def named(names: list[str]) -> list[Job]:
    unknown = [n for n in names if n not in _registry]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [_registry[n] for n in names]
