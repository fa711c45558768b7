"""The report's figures: matplotlib ``Figure`` objects drawn from report data (:mod:`automl.report`).

Built without pyplot, so no global figure state and no display backend are involved; each function
takes the report's plain data (lists of dicts) and returns one Figure.
"""

import numpy as np
import pandas as pd

__all__ = ["families", "folds", "nested", "progress", "weights"]

STATE_COLORS = {"COMPLETE": "#1f77b4", "PRUNED": "#bbbbbb", "FAIL": "#d62728", "RUNNING": "#ff7f0e"}


# ---- plots -----------------------------------------------------------------------------------------
def _new_figure(width=8.0, height=3.6):
    # Figure without pyplot: no global state, no display backend needed.
    from matplotlib.figure import Figure
    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator
    return MaxNLocator(integer=True)


def _family_colors(families):
    from matplotlib import colormaps
    palette = colormaps["tab10"]
    return {f: palette(i % 10) for i, f in enumerate(sorted(set(families)))}


def progress(trials, search):
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
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.set(xlabel="trial", ylabel=f"mean CV {search['metric']}", title="Search progress")
    ax.legend(fontsize=7, loc="best", ncol=2)
    return figure


def families(trials, search):
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


def folds(pruning):
    """Trials by the number of folds they ran, split by how they ended."""
    figure, ax = _new_figure(height=3.0)
    counts = pd.DataFrame(pruning["trials_by_folds"])
    steps = np.arange(0, pruning["n_folds"] + 1)
    bottom = np.zeros(len(steps))
    if len(counts):
        for state, rows in counts.groupby("state"):
            heights = rows.set_index("folds")["n_trials"].reindex(steps, fill_value=0).to_numpy()
            ax.bar(steps, heights, bottom=bottom, color=STATE_COLORS.get(state, "#777777"), label=state.lower())
            bottom += heights
    ax.set_xticks(steps)
    ax.yaxis.set_major_locator(_integer_ticks())
    ax.set(xlabel="folds run", ylabel="trials", title="Where trials stopped")
    ax.legend(fontsize=8)
    return figure


def weights(ensemble):
    figure, ax = _new_figure(height=0.5 + 0.35 * len(ensemble["members"]))
    members = ensemble["members"]
    labels = [f"trial {m['trial']} ({m['family']})" for m in members]
    ax.barh(labels[::-1], [m["weight"] for m in members][::-1], color="#1f77b4")
    ax.set(xlabel="weight in the soft vote", title="Ensemble members")
    return figure


def nested(report):
    """Per-quantity mean with its standard error, across outer folds (points: no bar baseline to mislead)."""
    figure, ax = _new_figure(height=3.0)
    quantities = ("ensemble", "best_single", "inner_best", "logreg", "ridge", "hgb", "dummy")
    names = [q for q in quantities if q in report["summary"]]
    means = [report["summary"][q]["mean"] for q in names]
    errors = [report["summary"][q]["sem"] or 0.0 for q in names]
    colors = {"ensemble": "#1f77b4", "best_single": "#1f77b4", "inner_best": "#ff7f0e"}
    for i, (name, mean, error) in enumerate(zip(names, means, errors)):
        if mean is not None:
            ax.errorbar(i, mean, yerr=error, fmt="o", capsize=4, color=colors.get(name, "#777777"))
    ax.set_xticks(range(len(names)), names)
    ax.set(ylabel=report["metric"], title="Nested CV: outer test score +/- standard error "
                                          "(inner_best: the search's own claim)")
    return figure
