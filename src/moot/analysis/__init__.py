"""Honest comparisons of stored runs: paired statistics, transitions, oracles, calibration, reports.

``build_report(run)`` reads a run store; ``print_report``, ``report_markdown`` and ``write_html``
render it; ``compare_conditions(run, a, b)`` is the paired comparison of two conditions. The
statistics are pure functions in ``moot.analysis.stats``, ``transitions`` and ``calibration``.

Names load on first use (PEP 562), so that ``moot.analysis.cli`` stays cheap to import for the
command line; scipy, statsmodels, scikit-learn, matplotlib and jinja2 load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "AnalysisError": "transcripts",
    "Report": "records",
    "build_report": "report",
    "compare_conditions": "report",
    "print_comparison": "render",
    "print_report": "render",
    "report_markdown": "render",
    "report_html": "html",
    "write_html": "html",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"moot.analysis.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'moot.analysis' has no attribute {name!r}")
