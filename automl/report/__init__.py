"""The fit report: a fitted model's results as JSON-ready data, and a self-contained HTML page drawn from it."""

from .data import TOP_N, report_data
from .page import render_html, report_artifacts, run_description, write_model_report, write_report

__all__ = ["TOP_N", "render_html", "report_artifacts", "report_data", "run_description", "write_model_report",
           "write_report"]
