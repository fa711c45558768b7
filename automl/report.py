"""The fit report: what the search tried, what it kept and how far to trust its numbers.

:func:`report_data` gathers a fitted model's results into plain JSON-ready data (no new
computation); :func:`render_html` draws a self-contained HTML page from that data alone, its plots
made with matplotlib and embedded as PNG, so it opens with no network; :func:`write_report` writes
both. Because the page is drawn from the JSON only, ``automl report RUN_ID`` redraws it from the
``report/report.json`` a fit logs to its MLflow parent run.
"""

import base64
import datetime
import html
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["report_artifacts", "report_data", "render_html", "write_report"]

FORMAT, VERSION = "automl-report", 1
TOP_N = 20  # leaderboard rows shown
_STATE_COLORS = {"COMPLETE": "#1f77b4", "PRUNED": "#bbbbbb", "FAIL": "#d62728", "RUNNING": "#ff7f0e"}


# ---- data ------------------------------------------------------------------------------------------
def report_data(model, nested_cv=None):
    """Gather a fitted model's results as plain data, the content of the report.

    Parameters
    ----------
    model : AutoClassifier
        Fitted.
    nested_cv : NestedCVReport or None, default=None
        A nested-CV estimate of the same configuration (:func:`automl.nested_cv`), shown beside
        the search's own optimistic best score.

    Returns
    -------
    data : dict
        JSON-serializable: ``format, version, created, estimator, data, search, trials,
        leaderboard, pruning, ensemble, leakage, nested_cv, reproducibility``.
    """
    board = model.leaderboard_
    return _json_safe({
        "format": FORMAT, "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "estimator": type(model).__name__,
        "data": _data_summary(model.profile_, model.classes_),
        "search": _search_summary(model, board),
        "trials": _records(board.drop(columns=["params"]).sort_values("trial")),
        "leaderboard": _records(board.head(TOP_N)),
        "pruning": _pruning_summary(board, _n_folds(model)),
        "ensemble": _ensemble_summary(model, board),
        "leakage": {"findings": _records(model.leak_report_.to_frame()),
                    "notes": list(getattr(model.leak_report_, "notes", ()))},
        "nested_cv": None if nested_cv is None else nested_cv.to_dict(),
        "reproducibility": _reproducibility(model),
    })


def _n_folds(model):
    return model.cv if isinstance(model.cv, int) else model.cv.get_n_splits()


def _data_summary(profile, classes):
    columns = [
        {"column": c, "kind": profile.kinds.get(c, "numeric"), "missing_rate": profile.missing_rate.get(c, 0.0),
         "n_levels": len(profile.categories[c]) if c in profile.categories else None}
        for c in profile.feature_names
    ]
    return {
        "n_samples": profile.n_samples, "n_features": profile.n_features, "task": profile.task,
        "classes": [str(c) for c in classes], "class_counts": list(profile.class_counts),
        "columns": columns, "dropped_columns": dict(profile.dropped_columns),
        "fingerprint": profile.fingerprint,
    }


def _search_summary(model, board):
    states = board["state"].value_counts()
    return {
        "metric": model.metric_, "greater_is_better": model.study_.direction.name == "MAXIMIZE",
        "n_trials": len(board), "states": {s: int(n) for s, n in states.items()},
        "n_trials_killed": model.n_trials_killed_, "best_score": model.best_score_,
        "best_score_std": model.best_score_std_, "best_params": model.best_params_,
        "best_trial": int(board["trial"].iloc[0]) if len(board) and board["state"].iloc[0] == "COMPLETE" else None,
        "timings_seconds": dict(model.timings_),
    }


def _pruning_summary(board, n_folds):
    """How many folds Hyperband spared: trials stopped early never ran their remaining folds."""
    stopped = board[board["state"] == "PRUNED"]
    folds_by_trial = board.groupby(["folds", "state"]).size()
    return {
        "n_folds": n_folds, "n_pruned": len(stopped),
        "folds_run": int(board["folds"].sum()), "folds_full_cv": int(len(board) * n_folds),
        "folds_saved": int((n_folds - stopped["folds"]).sum()),
        "trials_by_folds": [{"folds": int(f), "state": s, "n_trials": int(n)} for (f, s), n in folds_by_trial.items()],
    }


def _ensemble_summary(model, board):
    members = board[board["weight"] > 0][["trial", "family", "weight", "mean", "std"]]
    return {
        "members": _records(members.sort_values("weight", ascending=False)),
        "hillclimb_score": model.ensemble_score_, "best_single_score": model.best_score_,
        "ensemble_size": model.ensemble_size, "final_fit": model.final_fit,
    }


def _reproducibility(model):
    from .persistence import package_versions

    return {
        "random_state": model.random_state_, "params": model.get_params(deep=False),
        "components": [spec.key for spec in model.components_], "versions": package_versions(),
        "fingerprint": model.profile_.fingerprint, "study_name": model.study_.study_name,
        "mlflow_run_id": model.mlflow_run_id_, "mlflow_tracking_uri": model.mlflow_tracking_uri_,
    }


def _records(frame):
    return json.loads(frame.to_json(orient="records", default_handler=str))


def _json_safe(value):
    """``value`` in JSON's types: numpy numbers as Python ones, NaN and inf as None, objects as repr."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return repr(value)


def report_artifacts(data):
    """The report's files for an MLflow run: ``{"report/report.json": data, "report/report.html": page}``."""
    return {"report/report.json": data, "report/report.html": render_html(data)}


# ---- files -----------------------------------------------------------------------------------------
def write_report(data, path):
    """Write the HTML page and the JSON data side by side.

    Parameters
    ----------
    data : dict
        From :func:`report_data`, or read back from a run's ``report/report.json``.
    path : str or Path
        The HTML file; the JSON goes beside it with the suffix ``.json``. Parent folders are made.

    Returns
    -------
    html_path, json_path : Path
    """
    html_path = Path(path)
    if html_path.suffix.lower() not in (".html", ".htm"):
        html_path = html_path.with_name(html_path.name + ".html")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    json_path = html_path.with_suffix(".json")
    json_path.write_text(json.dumps(data, indent=1))
    html_path.write_text(render_html(data), encoding="utf-8")
    return html_path, json_path


# ---- page ------------------------------------------------------------------------------------------
def render_html(data):
    """The report as one self-contained HTML page (inline CSS, plots as embedded PNG).

    Parameters
    ----------
    data : dict
        From :func:`report_data`.

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
    title = f"automl report: {data['estimator']}, {search['metric']}, {data['created']}"
    return _PAGE.format(title=_e(title), body="\n".join(s for s in sections if s))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
h1 {{ font-size: 1.4em; }} h2 {{ border-bottom: 1px solid #ccc; margin-top: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }}
th, td {{ border: 1px solid #ddd; padding: 3px 7px; text-align: right; }}
th {{ background: #f3f3f3; }} td.text, th.text {{ text-align: left; }}
.cards {{ display: flex; gap: 1em; flex-wrap: wrap; }}
.card {{ border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; min-width: 180px; }}
.card b {{ font-size: 1.3em; display: block; }} .note {{ color: #555; font-size: 0.9em; }}
.high {{ color: #b00; font-weight: bold; }} .medium {{ color: #b60; }}
img {{ max-width: 100%; }} code, pre {{ background: #f6f6f6; padding: 2px 4px; }}
pre {{ white-space: pre-wrap; word-break: break-all; }}
</style></head><body>
<h1>{title}</h1>
{body}
</body></html>
"""


def _e(value):
    return html.escape(str(value))


def _section(title, body):
    return f"<h2>{_e(title)}</h2>\n{body}"


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


def _card(label, value, note=""):
    return f'<div class="card">{_e(label)}<b>{_e(value)}</b><span class="note">{_e(note)}</span></div>'


def _overview(data):
    search, nested = data["search"], data["nested_cv"]
    best_note = "optimistic: the best of all trials, on the folds it was chosen on"
    if search["best_score"] is None:
        best_note = "no trial finished: the model is the fallback logistic regression"
    cards = [
        _card(f"best trial CV {search['metric']}", _pm(search["best_score"], search["best_score_std"]), best_note),
        _card("ensemble on OOF predictions", _fmt(data["ensemble"]["hillclimb_score"]),
              "also optimistic: selected on the same predictions"),
        _card("trials", search["n_trials"], ", ".join(f"{n} {s.lower()}" for s, n in search["states"].items())),
        _card("fit time", f"{search['timings_seconds'].get('total', float('nan')):.1f} s",
              f"budget {data['reproducibility']['params'].get('time_budget')} s"),
    ]
    if nested:
        ens = nested["summary"]["ensemble"]
        cards.insert(1, _card("nested CV (honest)", _pm(ens["mean"], ens["std"]),
                              f"{len(nested['folds'])} outer folds, +/- std; standard error {_fmt(ens['sem'])}"))
    return '<div class="cards">' + "".join(cards) + "</div>"


def _pm(mean, std):
    return f"{_fmt(mean)} +/- {_fmt(std)}"


def _data_section(d):
    counts = ", ".join(f"{c}: {n}" for c, n in zip(d["classes"], d["class_counts"]))
    text = (f"<p>{d['n_samples']:,} rows, {d['n_features']} columns used, task {_e(d['task'])}; "
            f"classes {_e(counts)}. Fingerprint <code>{_e(d['fingerprint'])}</code>.</p>")
    if d["dropped_columns"]:
        dropped = ", ".join(f"{c} ({why})" for c, why in d["dropped_columns"].items())
        text += f"<p>Dropped: {_e(dropped)}</p>"
    columns = _table(d["columns"], ["column", "kind", "missing_rate", "n_levels"], {"column", "kind"})
    return _section("Data", text + columns)


def _leaderboard_table(rows):
    shown = [{**r, "params": ", ".join(f"{k.split('.')[-1]}={_fmt(v, 4)}" for k, v in (r["params"] or {}).items())}
             for r in rows]
    columns = ["trial", "family", "state", "mean", "std", "folds", "seconds", "weight", "params", "note"]
    return f"<h3>Leaderboard (top {TOP_N})</h3>" + _table(shown, columns, {"family", "state", "params", "note"})


def _pruning_section(p, trials):
    text = (f"<p>{p['n_pruned']} trials stopped early by Hyperband or the time budget. Folds run: "
            f"{p['folds_run']} of {p['folds_full_cv']} that full {p['n_folds']}-fold CV of every trial would "
            f"take; {p['folds_saved']} folds saved.</p>")
    return _section("Pruning", text + _img(_plot_folds(p)))


def _ensemble_section(e, search):
    text = (f"<p>Caruana ensemble selection ({e['ensemble_size']} rounds, with replacement) on the trials' "
            f"out-of-fold predictions: {len(e['members'])} member(s), final fit {_e(e['final_fit'])}. "
            f"Ensemble {_fmt(e['hillclimb_score'])} vs best single trial {_fmt(e['best_single_score'])} "
            f"({_e(search['metric'])}, both on OOF predictions).</p>")
    table = _table(e["members"], ["trial", "family", "weight", "mean", "std"], {"family"})
    return _section("Ensemble", text + (_img(_plot_weights(e)) if e["members"] else "") + table)


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
               "dummy", "logreg", "hgb", "best_family", "fit_seconds"]
    text = (f"<p>The whole fit ran inside each outer training part and was scored on its outer test part "
            f"({_e(nested['metric'])}). optimism_gap = inner best CV score minus the same pipeline's outer "
            f"score: positive means the search flattered its winner.</p>")
    return _section("Nested CV", text + _img(_plot_nested(nested)) + _table(nested["folds"], columns, {"best_family"})
                    + "<h3>Mean, std and standard error over outer folds</h3>"
                    + _table(summary, ["quantity", "mean", "std", "sem"], {"quantity"}))


def _reproducibility_section(r):
    params = {k: v for k, v in r["params"].items() if v not in (None, (), [])}
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


# ---- plots -----------------------------------------------------------------------------------------
def _img(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<p><img alt="plot" src="data:image/png;base64,{encoded}"></p>'


def _new_figure(width=8.0, height=3.6):
    # Figure without pyplot: no global state, no display backend needed.
    from matplotlib.figure import Figure
    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()


def _family_colors(families):
    from matplotlib import colormaps
    palette = colormaps["tab10"]
    return {f: palette(i % 10) for i, f in enumerate(sorted(set(families)))}


def _search_plots(trials, search):
    return _img(_plot_progress(trials, search)) + _img(_plot_families(trials, search))


def _plot_progress(trials, search):
    """Each trial's mean CV score in trial order, and the best complete score so far."""
    figure, ax = _new_figure()
    frame = pd.DataFrame(trials)
    done = frame[frame["state"] == "COMPLETE"].dropna(subset=["mean"])
    colors = _family_colors(frame["family"].dropna())
    for family, rows in done.groupby("family"):
        ax.scatter(rows["trial"], rows["mean"], s=18, color=colors[family], label=family)
    stopped = frame[frame["state"] == "PRUNED"].dropna(subset=["mean"])
    ax.scatter(stopped["trial"], stopped["mean"], s=12, marker="x", color="#aaaaaa", label="stopped early (partial)")
    if len(done):
        best = done["mean"].cummax() if search["greater_is_better"] else done["mean"].cummin()
        ax.step(done["trial"], best, where="post", color="black", label="best so far")
    ax.set(xlabel="trial", ylabel=f"mean CV {search['metric']}", title="Search progress")
    ax.legend(fontsize=7, loc="best", ncol=2)
    return figure


def _plot_families(trials, search):
    """Distribution of complete trials' scores per model family."""
    figure, ax = _new_figure(height=3.2)
    done = pd.DataFrame(trials)
    done = done[done["state"] == "COMPLETE"].dropna(subset=["mean"])
    families = sorted(done["family"].unique())
    colors = _family_colors(pd.DataFrame(trials)["family"].dropna())
    for i, family in enumerate(families):
        scores = done.loc[done["family"] == family, "mean"]
        jitter = np.linspace(-0.15, 0.15, len(scores)) if len(scores) > 1 else [0.0]
        ax.scatter(i + np.asarray(jitter), scores, s=16, color=colors[family])
        ax.hlines(scores.median(), i - 0.3, i + 0.3, color="black")
    ax.set_xticks(range(len(families)), [f"{f}\n(n={int((done['family'] == f).sum())})" for f in families])
    ax.set(ylabel=f"mean CV {search['metric']}", title="Complete trials by model family (bar: median)")
    return figure


def _plot_folds(pruning):
    """Trials by the number of folds they ran, split by how they ended."""
    figure, ax = _new_figure(height=3.0)
    counts = pd.DataFrame(pruning["trials_by_folds"])
    folds = np.arange(0, pruning["n_folds"] + 1)
    bottom = np.zeros(len(folds))
    if len(counts):
        for state, rows in counts.groupby("state"):
            heights = rows.set_index("folds")["n_trials"].reindex(folds, fill_value=0).to_numpy()
            ax.bar(folds, heights, bottom=bottom, color=_STATE_COLORS.get(state, "#777777"), label=state.lower())
            bottom += heights
    ax.set_xticks(folds)
    ax.set(xlabel="folds run", ylabel="trials", title="Where trials stopped")
    ax.legend(fontsize=8)
    return figure


def _plot_weights(ensemble):
    figure, ax = _new_figure(height=0.5 + 0.35 * len(ensemble["members"]))
    members = ensemble["members"]
    labels = [f"trial {m['trial']} ({m['family']})" for m in members]
    ax.barh(labels[::-1], [m["weight"] for m in members][::-1], color="#1f77b4")
    ax.set(xlabel="weight in the soft vote", title="Ensemble members")
    return figure


def _plot_nested(nested):
    """Per-quantity mean with its standard error bar, across outer folds."""
    figure, ax = _new_figure(height=3.0)
    names = [q for q in ("ensemble", "best_single", "inner_best", "logreg", "hgb", "dummy") if q in nested["summary"]]
    means = [nested["summary"][q]["mean"] for q in names]
    errors = [nested["summary"][q]["sem"] or 0.0 for q in names]
    colors = ["#1f77b4", "#1f77b4", "#ff7f0e", "#999999", "#999999", "#cccccc"]
    ax.bar(names, [m if m is not None else np.nan for m in means], yerr=errors, color=colors[:len(names)], capsize=4)
    finite = [m for m in means if m is not None]
    if finite:
        low = min(finite) - 2 * max(errors + [0.01])
        ax.set_ylim(low, max(finite) + 2 * max(errors + [0.01]))
    ax.set(ylabel=nested["metric"], title="Nested CV: outer test score (inner_best: the search's own claim)")
    return figure
