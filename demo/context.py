"""The state one build shares: the seeded generator, id factory, row sink and text pools."""

import random
from dataclasses import dataclass

from ledgerfacts.ulid import UlidFactory

from .content import ContentPools
from .pipeline import RequestFactory
from .sink import RowSink
from .tools import ToolPools


@dataclass
class DemoContext:
    rng: random.Random
    ulid: UlidFactory
    sink: RowSink
    now: int  # the anchor time (Unix ms): everything happens in the 30 days before it
    content: ContentPools
    tools: ToolPools
    requests: RequestFactory

    @classmethod
    def create(cls, seed: int, now: int, sink: RowSink) -> "DemoContext":
        rng = random.Random(seed)
        ulid = UlidFactory(rng)
        return cls(rng, ulid, sink, now, ContentPools(rng), ToolPools(rng),
                   RequestFactory(rng, ulid, sink, now))  # fmt: skip
