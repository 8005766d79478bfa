"""Timestamps of the imported formats as Unix ms: SQLite sources write any unit, transcripts ISO."""

import pytest

from importers.times import any_unit_ms, zoned_iso_ms


@pytest.mark.parametrize(
    "value, ms",
    [
        (1_706_889_600_000, 1_706_889_600_000),
        (1_706_889_600, 1_706_889_600_000),
        (1_706_889_600.25, 1_706_889_600_250),
        (1_706_889_600_000_000, 1_706_889_600_000),
        (1_706_889_600_000_000_000, 1_706_889_600_000),
        ("1706889600000", 1_706_889_600_000),
        ("2024-02-02T16:00:00Z", 1_706_889_600_000),
        ("2024-02-02T17:00:00+01:00", 1_706_889_600_000),
        ("2024-02-02 16:00:00", 1_706_889_600_000),
        (None, None),
        (True, None),
        (0, None),
        (-5, None),
        ("soon", None),
        (float("inf"), None),
        (float("nan"), None),
        (b"\x00", None),
    ],
)
def test_sqlite_sources_may_write_any_unit_or_iso_text(value, ms):
    assert any_unit_ms(value) == ms


@pytest.mark.parametrize(
    "value, ms",
    [
        ("2025-06-10T12:36:23.208Z", 1_749_558_983_208),
        ("2025-06-10T14:36:23.208+02:00", 1_749_558_983_208),
        ("2025-06-10T12:36:23", None),  # no zone: a transcript's times all have one
        ("1749558983208", None),
        (1_749_558_983_208, None),
        ("yesterday", None),
        (None, None),
    ],
)
def test_transcripts_write_iso_times_with_a_zone(value, ms):
    assert zoned_iso_ms(value) == ms


def test_a_time_without_a_zone_is_utc_only_from_a_sqlite_source():
    assert any_unit_ms("2025-06-10 12:36:23") == zoned_iso_ms("2025-06-10T12:36:23Z")
    assert zoned_iso_ms("2025-06-10 12:36:23") is None
