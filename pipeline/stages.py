"""The eight pipeline stages and what a request's stage_timings say about them (seeds/002).

Pure functions: `stage_timings` is JSON written by another program, so parsing never raises and
reports what it had to ignore.
"""

import json
import math
from dataclasses import dataclass, field

STAGES = (
    "receiveEvent",
    "resolveIdentity",
    "resolveAccess",
    "executeTriggers",
    "assembleContext",
    "runAgent",
    "deliverResponse",
    "finalize",
)
STAGE_INDEX = {name: i for i, name in enumerate(STAGES)}
STATUSES = ("processing", "completed", "failed", "skipped")
FINAL_STATUSES = ("completed", "failed", "skipped")


@dataclass
class Timings:
    ms: dict[str, float]  # valid, non-negative durations, known stages first in pipeline order
    problems: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.ms.values())

    @property
    def unknown(self) -> list[str]:
        return [name for name in self.ms if name not in STAGE_INDEX]


def parse_timings(raw) -> Timings:
    if raw is None or raw == "":
        return Timings({}, ["no stage timings were recorded"])
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError) as error:
        return Timings({}, [f"stage_timings is not valid JSON ({str(error)[:80]})"])
    if not isinstance(value, dict):
        return Timings({}, [f"stage_timings is a JSON {type(value).__name__}, not an object"])
    ms, problems = {}, []
    for name, duration in value.items():
        if isinstance(duration, bool) or not isinstance(duration, int | float):
            problems.append(f"{name}: {duration!r} is not a number of milliseconds")
        elif not math.isfinite(duration) or duration < 0:
            problems.append(f"{name}: {duration} ms cannot be a duration")
        else:
            ms[str(name)] = duration
    unknown = [n for n in ms if n not in STAGE_INDEX]
    if unknown:
        problems.append(
            "unknown stage" + ("s" if len(unknown) > 1 else "") + ": " + ", ".join(unknown)
        )
    ordered = {n: ms[n] for n in STAGES if n in ms} | {n: ms[n] for n in unknown}
    return Timings(ordered, problems)


@dataclass(frozen=True)
class Bar:
    """One stage of the waterfall; offsets and widths are fractions of the whole request."""

    stage: str
    state: str  # "done", "failed", "running", "not reached", "no timing", "unknown stage"
    ms: float | None
    offset: float
    width: float

    @property
    def offset_pct(self) -> str:
        return f"{self.offset * 100:.3f}"

    @property
    def width_pct(self) -> str:
        return f"{self.width * 100:.3f}"


def waterfall(timings: Timings, *, stage: str, status: str, error_stage: str | None) -> list[Bar]:
    """Stages in pipeline order, each placed after the ones before it (they run one by one);
    stages past the one the request reached are 'not reached'; unknown stages go at the end."""
    total = timings.total or 1
    reached = STAGE_INDEX.get(error_stage or stage, -1)
    if status in ("completed", "skipped"):
        reached = len(STAGES) - 1
    bars, offset = [], 0.0
    for i, name in enumerate(STAGES):
        ms = timings.ms.get(name)
        if name == error_stage:
            state = "failed"
        elif ms is not None:
            state = "done"
        elif i > reached:
            state = "not reached"
        elif status == "processing" and i == reached:
            state = "running"
        elif status == "skipped":
            state = "skipped"
        else:
            state = "no timing"
        width = (ms or 0) / total
        bars.append(Bar(name, state, ms, offset, width))
        offset += width
    for name in timings.unknown:
        width = timings.ms[name] / total
        bars.append(Bar(name, "unknown stage", timings.ms[name], offset, width))
        offset += width
    return bars


def stage_problems(*, stage: str, status: str, error_stage: str | None, error_message) -> list[str]:
    """What contradicts the lifecycle of seeds/002 in a row's stage, status and error fields."""
    problems = []
    if status not in STATUSES:
        problems.append(f"unknown status {status!r}")
    if stage not in STAGE_INDEX:
        problems.append(f"unknown stage {stage!r}")
    if status == "failed" and not error_stage:
        problems.append("the request failed but names no error_stage")
    if error_stage and error_stage not in STAGE_INDEX:
        problems.append(f"unknown error_stage {error_stage!r}")
    if error_stage and not error_message:
        problems.append(f"error_stage is {error_stage} but there is no error_message")
    if status in ("completed", "skipped") and stage != "finalize":
        problems.append(f"status is {status} but the stage is {stage}, not finalize")
    return problems
