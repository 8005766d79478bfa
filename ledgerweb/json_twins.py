"""The JSON twin of the core's health report: the same data as the page, for scripts
(ledgerweb.http.respond picks the one asked for)."""

from dataclasses import asdict


def health_report(report, kept: bool) -> dict:
    return {
        "checked_at": report.checked_at,
        "took_ms": report.took_ms,
        "kept": kept,
        "findings": [asdict(f) | {"passed": f.passed} for f in report.findings],
    }
