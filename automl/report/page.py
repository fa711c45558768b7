"""The fit report: what the search tried, what it kept and how far to trust its numbers.

:func:`automl.report.data.report_data` gathers a fitted model's results into plain JSON-ready data
(no new computation); :func:`render_html` draws a self-contained HTML page from that data alone, its plots
made with matplotlib and embedded as PNG, so it opens with no network; :func:`write_report` writes
both. Because the page is drawn from the JSON only, ``automl report RUN_ID`` redraws it from the
``report/report.json`` a fit logs to its MLflow parent run.
"""

import base64
import html
import io
import json
import math
from pathlib import Path

from ..tracking import MLflowTracker
from . import plots
from .data import FORMAT, TOP_N, report_data

__all__ = ["report_artifacts", "render_html", "run_description", "write_model_report", "write_report"]


def report_artifacts(data):
    """The report's files for an MLflow run: ``{"report/report.json": data, "report/report.html": page}``."""
    return {"report/report.json": data, "report/report.html": render_html(data)}


def write_model_report(model, path, nested_cv=None):
    """:func:`write_report` of a fitted model; a tracked fit's run gets both files (replacing ``report/``)."""
    data = report_data(model, nested_cv)
    html_path, _ = write_report(data, path)
    if model.mlflow_run_id_ is not None:
        MLflowTracker.for_run(model.mlflow_tracking_uri_, model.mlflow_run_id_).log_artifacts(report_artifacts(data))
    return html_path


def run_description(data):
    """A few lines of Markdown that say what a fit did: the description of its MLflow parent run.

    MLflow shows it on the run's page and in the runs table, so a fit reads at a glance without
    opening the report. Drawn from :func:`automl.report.data.report_data`'s ``data``, as the page is.
    """
    search, ensemble, d = data["search"], data["ensemble"], data["data"]
    on = ("a holdout" if search.get("validation") == "holdout" else "CV") + _row_order(search)
    lines = [f"{data['estimator']} on {d['n_samples']:,} rows x {d['n_features']} columns ({d['task']}), "
             f"{_metric(search)} on {on}; {_budget(data)}, fit in {search['timings_seconds'].get('total', 0):.0f} s.",
             f"Trials: {search['n_trials']} ({_states(search['states'], data['pruning'].get('n_stopped', 0))})."]
    if ensemble["fallback"]:
        lines.append("No trial beat the fallback: the model is a logistic or ridge regression.")
    else:
        best, score = data["leaderboard"][0], _pm(search["best_score"], search["best_score_std"])
        lines.append(f"Best trial {best['trial']} ({best['family']}): {score} (optimistic: the best of all trials).")
        members = ", ".join(f"{m['family']} {m['weight']:.2f}" for m in ensemble["members"][:5])
        more = f" and {len(ensemble['members']) - 5} more" if len(ensemble["members"]) > 5 else ""
        lines.append(f"Ensemble of {len(ensemble['members'])} ({members}{more}): {_fmt(ensemble['hillclimb_score'])} "
                     "on the predictions it was selected on.")
    findings = data["leakage"]["findings"]
    first = f", first: {findings[0]['message']}" if findings else "."
    lines.append(f"Leak check: {len(findings)} finding(s){first}")
    return "\n\n".join(lines)


# ---- files -----------------------------------------------------------------------------------------
def write_report(data, path):
    """Write the HTML page and the JSON data side by side.

    Parameters
    ----------
    data : dict
        From :func:`automl.report.report_data`, or read back from a run's ``report/report.json``.
    path : str or Path
        The HTML file; the JSON goes beside it with the suffix ``.json``. Parent folders are made.

    Returns
    -------
    html_path, json_path : Path
    """
    html_path = _html_path(path)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(data)
    html_path.write_text(page, encoding="utf-8")  # first: it fails if the name is taken by a folder
    json_path = html_path.with_suffix(".json")
    json_path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return html_path, json_path


def _html_path(path):
    """``path`` as an HTML file: ``report.html`` inside a folder, ``.html`` for another suffix, ``~`` expanded."""
    folder = str(path).endswith(("/", "\\"))  # Path() would drop the trailing separator
    path = Path(path).expanduser()
    if folder or path.is_dir() or path.name in ("", ".", ".."):
        return path / "report.html"
    if path.suffix.lower() in (".html", ".htm"):
        return path
    return path.with_suffix(".html") if path.suffix.lower() == ".json" else path.with_name(path.name + ".html")


# ---- page ------------------------------------------------------------------------------------------
def render_html(data):
    """The report as one self-contained HTML page (inline CSS, plots as embedded PNG).

    Parameters
    ----------
    data : dict
        From :func:`automl.report.report_data`.

    Returns
    -------
    page : str

    Raises
    ------
    ValueError
        If ``data`` is not an automl report (its ``format`` field differs).
    """
    if data.get("format") != FORMAT:
        raise ValueError(f"Not an automl report: its 'format' is {data.get('format')!r}, expected {FORMAT!r}.")
    search = data["search"]
    sections = [
        _overview(data), _data_section(data["data"]),
        _section("Search", _search_plots(data["trials"], search) + _leaderboard_table(data["leaderboard"])),
        _pruning_section(data["pruning"], data["trials"]), _ensemble_section(data["ensemble"], search),
        _leak_section(data["leakage"]), _nested_section(data["nested_cv"]),
        _reproducibility_section(data["reproducibility"]),
    ]
    title = f"automl report: {data['estimator']}, {_metric(search)}, {data['created']}"
    return _PAGE.format(title=_e(title), body="\n".join(s for s in sections if s))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }} h1 {{ font-size: 1.4em; }}
h2 {{ border-bottom: 1px solid #ccc; margin-top: 2em; }} img {{ max-width: 100%; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }} th {{ background: #f3f3f3; }}
th, td {{ border: 1px solid #ddd; padding: 3px 7px; text-align: right; }} td.text, th.text {{ text-align: left; }}
.cards {{ display: flex; gap: 1em; flex-wrap: wrap; }} .note {{ color: #555; font-size: 0.9em; }}
.card {{ border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; min-width: 180px; }}
.card b {{ font-size: 1.3em; display: block; }} .high {{ color: #b00; font-weight: bold; }} .medium {{ color: #b60; }}
code, pre {{ background: #f6f6f6; padding: 2px 4px; }} pre {{ white-space: pre-wrap; word-break: break-all; }}
</style></head><body>
<h1>{title}</h1>
{body}
</body></html>
"""


def _e(value):
    return html.escape(str(value))


def _section(title, body):
    return f"<h2>{_e(title)}</h2>\n{body}"


def _short(value):
    """A hyperparameter: 4 significant digits, so 1e-08 stays 1e-08 on a log-scale knob."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _fmt(value, digits=4):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(rows, columns, text_columns=()):
    head = "".join(f'<th class="{"text" if c in text_columns else ""}">{_e(c)}</th>' for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"text" if c in text_columns else ""}">{_e(_fmt(r.get(c)))}</td>'
                         for c in columns) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _row_order(search):
    """How the rows were split, beyond shuffled: `` that keeps each of N groups whole`` or `` in time order ...``."""
    if search.get("n_groups"):
        return f" that keeps each of {search['n_groups']:,} groups whole"
    if search.get("time_ordered"):
        return " in time order (every validated row later than its training rows)"
    return ""


def _metric(search):
    """The search metric's name, and that it weighs the rows when the fit was given ``sample_weight``."""
    return f"{search['metric']} weighted by sample_weight" if search.get("weighted") else search["metric"]


def _card(label, value, note=""):
    return f'<div class="card">{_e(label)}<b>{_e(value)}</b><span class="note">{_e(note)}</span></div>'


def _overview(data):
    search, nested = data["search"], data["nested_cv"]
    holdout = search.get("validation") == "holdout"
    on = "holdout" if holdout else "CV"
    best_note = (f"optimistic: the best of all trials, on the {'holdout rows' if holdout else 'folds'} it was chosen on"
                 f"{_row_order(search)}")
    if search["best_score"] is None:
        best_note = "no trial finished: the model is the fallback (logistic or ridge regression)"
    cards = [
        _card(f"best trial {on} {_metric(search)}", _pm(search["best_score"], search["best_score_std"]), best_note),
        _card(f"ensemble on {'the holdout' if holdout else 'pooled OOF'} predictions",
              _fmt(data["ensemble"]["hillclimb_score"]), "also optimistic: selected on the same predictions"),
        _card("trials", search["n_trials"], _states(search["states"], data["pruning"].get("n_stopped", 0))),
        _card("fit time", f"{search['timings_seconds'].get('total', float('nan')):.1f} s", _budget(data)),
    ]
    if nested:
        ens = nested["summary"]["ensemble"]
        cards.insert(1, _card("nested CV (honest)", _pm(ens["mean"], ens["sem"]),
                              f"+/- standard error over {len(nested['folds'])} outer folds (std {_fmt(ens['std'])})"))
    return '<div class="cards">' + "".join(cards) + "</div>"


def _states(states, n_stopped):
    """Trials by Optuna state, the PRUNED ones split into Hyperband's and the time budget's."""
    parts = []
    for state, n in states.items():
        if state == "PRUNED" and n_stopped:
            parts.append(f"{n - n_stopped} pruned, {n_stopped} stopped by the time budget")
        else:
            parts.append(f"{n} {'failed' if state == 'FAIL' else state.lower()}")
    return ", ".join(parts)


def _budget(data):
    budget = data["reproducibility"]["params"].get("time_budget")
    trials = data["reproducibility"]["params"].get("n_trials")
    return (f"budget {budget} s" if budget is not None else "no time budget") + (f", {trials} trials" if trials else "")


def _pm(mean, std):
    """``mean +/- std``, or the mean alone when there is no spread (one holdout, no trial)."""
    if std is None or not math.isfinite(std):
        return _fmt(mean)
    return f"{_fmt(mean)} +/- {_fmt(std)}"


def _data_section(d):
    target = "classes " + ", ".join(f"{c}: {n}" for c, n in zip(d["classes"], d["class_counts"]))
    if d.get("target_stats"):
        target = "target " + ", ".join(f"{k} {v:.4g}" for k, v in d["target_stats"].items())
    text = (f"<p>{d['n_samples']:,} rows, {d['n_features']} columns used, task {_e(d['task'])}; "
            f"{_e(target)}. Fingerprint <code>{_e(d['fingerprint'])}</code>.</p>")
    if d["dropped_columns"]:
        dropped = ", ".join(f"{c} ({why})" for c, why in d["dropped_columns"].items())
        text += f"<p>Dropped: {_e(dropped)}</p>"
    columns = _table(d["columns"], ["column", "kind", "missing_rate", "n_levels"], {"column", "kind"})
    return _section("Data", text + columns)


def _leaderboard_table(rows):
    shown = [{**r, "params": ", ".join(f"{k.split('.')[-1]}={_short(v)}" for k, v in (r["params"] or {}).items())}
             for r in rows]
    columns = ["trial", "family", "state", "mean", "std", "folds", "seconds", "weight", "params", "note"]
    return f"<h3>Leaderboard (top {TOP_N})</h3>" + _table(shown, columns, {"family", "state", "params", "note"})


def _pruning_section(p, trials):
    failed = sum(r["n_trials"] for r in p["trials_by_folds"] if r["state"] == "FAIL")
    text = (f"<p>{p['n_pruned']} trial(s) pruned by Hyperband and {p['n_stopped']} stopped by the time budget "
            f"(both Optuna's state PRUNED), {failed} failed or were stopped while running (state FAIL).")
    if p.get("validation") == "holdout":
        text += (" Validation on one holdout: a trial trains on 1/27, 1/9, 1/3 and all of the training rows in turn "
                 "(the rungs under 1,000 rows skipped), each scored on the same holdout rows; the leaderboard's "
                 "note gives the rows a stopped trial reached.</p>")
        return _section("Pruning", text)
    text += (f" Folds run: {p['folds_run']} of {p['folds_full_cv']} that full {p['n_folds']}-fold CV of every trial "
             f"would take; {p['folds_saved']} folds saved by Hyperband's pruning.</p>")
    return _section("Pruning", text + (_img(plots.folds(p)) if trials else ""))


def _ensemble_section(e, search):
    if e.get("fallback"):
        return _section("Ensemble", "<p>No trial finished, so there was nothing to select from: the model is "
                                    "the fallback (the portfolio's logistic or ridge regression), fit on "
                                    "all rows. Raise time_budget or n_trials.</p>")
    if search.get("validation") == "holdout":
        text = (f"<p>Caruana ensemble selection ({e['ensemble_size']} rounds, with replacement) on the trials' "
                f"predictions for the holdout rows: {len(e['members'])} member(s), each the model its trial trained "
                f"(no refit on all rows). Ensemble {_fmt(e['hillclimb_score'])} vs best single trial "
                f"{_fmt(e.get('best_single_oof_score'))} ({_e(_metric(search))}, both on the holdout).</p>")
    else:
        text = (f"<p>Caruana ensemble selection ({e['ensemble_size']} rounds, with replacement) on the trials' "
                f"out-of-fold predictions: {len(e['members'])} member(s), final fit {_e(e['final_fit'])}. "
                f"Ensemble {_fmt(e['hillclimb_score'])} vs best single trial {_fmt(e.get('best_single_oof_score'))} "
                f"({_e(_metric(search))}, both on all OOF predictions pooled; the leaderboard's means average "
                f"the per-fold scores instead). Members whose final fit would not end in the time budget are "
                f"dropped, the lightest first, and the score is that of the members kept.</p>")
    table = _table(e["members"], ["trial", "family", "weight", "mean", "std"], {"family"})
    return _section("Ensemble", text + (_img(plots.weights(e)) if e["members"] else "") + table)


def _leak_section(leakage):
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in leakage["notes"])
    if not leakage["findings"]:
        return _section("Leak check", "<p>No findings.</p>" + notes)
    rows = "".join(
        f'<tr><td class="text {_e(f["severity"])}">{_e(f["severity"])}</td><td class="text">{_e(f["kind"])}</td>'
        f'<td class="text">{_e(f["column"] if f["column"] is not None else "(rows)")}</td>'
        f'<td class="text">{_e(f["message"])}</td><td class="text">{_e(_evidence(f["evidence"]))}</td></tr>'
        for f in leakage["findings"]
    )
    head = '<tr><th class="text">severity</th><th class="text">kind</th><th class="text">column</th>' \
           '<th class="text">message</th><th class="text">evidence</th></tr>'
    return _section("Leak check", f"<table>{head}{rows}</table>" + notes)


def _evidence(evidence):
    if isinstance(evidence, str):  # a CSV round trip leaves the dict's repr
        return evidence
    return ", ".join(f"{k}={_fmt(v)}" for k, v in (evidence or {}).items())


def _nested_section(nested):
    if not nested:
        return _section("Nested CV", "<p>Not run. <code>automl.nested_cv(estimator, X, y)</code> or "
                                     "<code>automl evaluate</code> estimates what the whole search delivers "
                                     "on rows it never saw.</p>")
    summary = [{"quantity": q, **v} for q, v in nested["summary"].items()]
    columns = ["fold", "n_train", "n_test", "ensemble", "best_single", "inner_best", "optimism_gap",
               "dummy", "logreg", "ridge", "hgb", "best_family", "n_trials", "n_complete", "fit_seconds"]
    columns = [c for c in columns if c in nested["folds"][0]] if nested["folds"] else columns
    empty = [f["fold"] for f in nested["folds"] if not f.get("n_complete")]
    warning = "" if not empty else (
        f'<p class="high">In outer fold(s) {", ".join(map(str, empty))} no trial finished: the "ensemble" there '
        "is the fallback (logistic or ridge regression), so the estimate measures it, not the search. "
        "Raise the budget.</p>")
    text = (f"<p>The whole fit ran inside each outer training part and was scored on its outer test part "
            f"({_e(nested['metric'])}). optimism_gap = inner best CV score minus the same pipeline's outer "
            f"score: positive means the search flattered its winner.</p>")
    return _section("Nested CV", text + warning + _img(plots.nested(nested))
                    + _table(nested["folds"], columns, {"best_family"})
                    + "<h3>Mean, std and standard error over outer folds</h3>"
                    + _table(summary, ["quantity", "mean", "std", "sem"], {"quantity"}))


def _reproducibility_section(r):
    # Every parameter, None included (time_budget=None differs from the default 60); only the
    # empty default of `components` is left out. A user's own components print as their repr.
    params = {k: v for k, v in r["params"].items() if not (k == "components" and v in ((), []))}
    call = "AutoClassifier(" + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())) + ")"
    rows = [{"item": k, "value": v} for k, v in (
        ("random_state (seed used)", r["random_state"]), ("data fingerprint", r["fingerprint"]),
        ("model families", ", ".join(r["components"])), ("study", r["study_name"]),
        ("MLflow run", r["mlflow_run_id"]), ("MLflow tracking URI", r["mlflow_tracking_uri"]),
        *((f"version of {name}", v) for name, v in r["versions"].items()),
    )]
    text = ("<p>Same data (fingerprint), seed, <code>n_jobs=1</code> and trial count give the same "
            f"leaderboard. The fit was:</p><pre>{_e(call)}</pre>")
    return _section("Reproducibility", text + _table(rows, ["item", "value"], {"item", "value"}))


# ---- images -----------------------------------------------------------------------------------------
def _img(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<p><img alt="plot" src="data:image/png;base64,{encoded}"></p>'


def _search_plots(trials, search):
    if not any(t["state"] == "COMPLETE" for t in trials):
        return "<p>No trial finished: nothing to plot.</p>"
    return _img(plots.progress(trials, search)) + _img(plots.families(trials, search))
