"""ULIDs: 48 bits of Unix milliseconds + 80 random bits, as 26 Crockford base32 characters.

The random bits come from the generator the caller gives: the demo builder passes its seeded
random.Random (so two builds with the same seed and anchor time are byte-identical), a fork passes
random.SystemRandom.
"""

import random

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Two characters per 10 bits: 13 table lookups encode the 130 bits (the first 2 are always 0).
_PAIRS = [CROCKFORD[i >> 5] + CROCKFORD[i & 31] for i in range(1024)]


def encode(value: int) -> str:
    """A 128-bit integer as 26 Crockford base32 characters.

    Unrolled on purpose: ids are the most frequent value of a large build, and this is about
    twice as fast as a loop or base64.b32encode (pure Python since 3.10).
    """
    p = _PAIRS
    return "".join((
        p[value >> 120], p[(value >> 110) & 1023], p[(value >> 100) & 1023],
        p[(value >> 90) & 1023], p[(value >> 80) & 1023], p[(value >> 70) & 1023],
        p[(value >> 60) & 1023], p[(value >> 50) & 1023], p[(value >> 40) & 1023],
        p[(value >> 30) & 1023], p[(value >> 20) & 1023], p[(value >> 10) & 1023],
        p[value & 1023],
    ))  # fmt: skip


def decode_time(ulid: str) -> int:
    """The millisecond timestamp of a ULID (for tests and sanity checks)."""
    value = 0
    for char in ulid[:10]:
        value = value * 32 + CROCKFORD.index(char)
    return value


class UlidFactory:
    def __init__(self, rng: random.Random):
        self._random_bits = rng.getrandbits

    def new(self, ms: int) -> str:
        return encode((ms << 80) | self._random_bits(80))
