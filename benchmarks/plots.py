"""PNG plots of a compare.py results CSV on the large tables (issue 25).

    .venv/bin/python benchmarks/plots.py --csv benchmarks/results/large.csv --out docs/img/

writes ``<prefix>-score-vs-rows.png``: the held-out score against the training rows (log scale) of one
table at several sizes (synthetic-100k, -1m, -5m), a line per system, a panel per budget; and
``<prefix>-score-vs-time.png``: the score against the fit seconds on each large dataset, a point per
system and budget, a system's budgets joined by a line. Points are means over the seeds. As in the
summary (peers/summary.py), a failed or timed-out run counts as the constant predictor of its split;
such points are marked with an X and the number of failed seeds, and their seconds are the whole
process's (there is no fit time). Runs not in the CSV yet are listed and skipped.

Matplotlib's object API only (a Figure on an Agg canvas, no pyplot state): safe to import anywhere.
"""

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from peers import data
from peers.summary import METRIC_NAMES, SYSTEM_ORDER, latest, with_goodness

BENCH = Path(__file__).resolve().parent
SIZES = ["synthetic-100k", "synthetic-1m", "synthetic-5m"]  # one generator at three sizes
BETTER = {"binary": "higher is better", "multiclass": "lower is better", "regression": "lower is better"}
FAILED_LABEL = "X: failed or timed-out seeds, scored as the constant predictor"


# --- data -----------------------------------------------------------------------------------------

def read_points(csv_path):
    """Per (system, dataset, budget): means over seeds of the score (a failed run at the constant
    predictor's), seconds and training rows, and the counts of runs and failed runs."""
    frame = with_goodness(latest(pd.read_csv(csv_path)))
    # A failed run has no fit time; its whole process stands in, as for wall_ratio in compare.py.
    frame["seconds"] = frame["fit_seconds"].fillna(frame["process_seconds"])
    frame["failed"] = (frame["status"] != "ok").astype(int)
    grouped = frame.groupby(["system", "dataset", "budget"])
    return grouped.agg(value=("value", "mean"), seconds=("seconds", "mean"), n_train=("n_train", "mean"),
                       failed=("failed", "sum"), runs=("seed", "size"), task=("task", "first")).reset_index()


def systems_of(points):
    """The CSV's systems in the summary's order (then any others), so colours match across figures."""
    present = set(points["system"])
    return [s for s in SYSTEM_ORDER if s in present] + sorted(present - set(SYSTEM_ORDER))


def report_missing(points, datasets, budgets, what):
    """Print the (system, dataset, budget) runs a figure would show but the CSV does not hold yet."""
    held = set(zip(points["system"], points["dataset"], points["budget"]))
    for dataset in datasets:
        if dataset not in set(points["dataset"]):
            print(f"{what}: {dataset}: no rows yet, skipped")
            continue
        for budget in budgets:
            absent = [s for s in systems_of(points) if (s, dataset, budget) not in held]
            if absent:
                print(f"{what}: {dataset} at {budget:g} s: no rows of {' '.join(absent)} yet, skipped")


# --- drawing --------------------------------------------------------------------------------------

def new_figure(n_panels):
    """A figure on an Agg canvas with n_panels axes (up to 3 a row); unused cells are removed."""
    ncols = min(3, n_panels)
    nrows = math.ceil(n_panels / ncols)
    figure = Figure(figsize=(4.6 * ncols, 3.8 * nrows + 0.8), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        figure.delaxes(ax)
    return figure, axes[:n_panels]


def draw_system(ax, block, x, color, order):
    """One system's points joined in the order of column ``order``; failed points get an X and 'k/n failed'."""
    block = block.sort_values(order)
    ax.plot(block[x], block["value"], "-o", color=color, markersize=4, linewidth=1.4)
    failed = block[block["failed"] > 0]
    ax.scatter(failed[x], failed["value"], marker="X", s=110, color=color, edgecolors="black", zorder=3)
    for row in failed.itertuples():
        ax.annotate(f"{row.failed}/{row.runs} failed", (getattr(row, x), row.value), fontsize=7,
                    textcoords="offset points", xytext=(-7, 7), ha="right")


def compact(value, _position=None):
    """80000 -> 80k, 4000000 -> 4M, 0.5 -> 0.5: tick labels that fit side by side."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def positive(values):
    """The finite values above 0, sorted: what a log axis can show (a row may lack its seconds)."""
    return sorted(v for v in values if math.isfinite(v) and v > 0)


def log_x_at(ax, values):
    """A log x axis ticked at ``values`` only (matplotlib's own log ticks crowd a narrow range)."""
    values = positive(values)
    if not values:
        return
    ax.set_xscale("log")
    ax.set_xticks(values, [compact(v) for v in values])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(min(values) / 1.6, max(values) * 1.6)


def log_x_decades(ax, values):
    """A log x axis over whole decades around ``values``, decades labelled compactly."""
    values = positive(values)
    if not values:
        return
    ax.set_xscale("log")
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    ax.set_xlim(10.0 ** low, 10.0 ** max(high, low + 1))
    ax.xaxis.set_major_formatter(FuncFormatter(compact))


def metric_label(task):
    return f"held-out {METRIC_NAMES[task]} ({BETTER[task]})"


def finish(figure, systems, colors, any_failed, title, path):
    """Figure-wide legend (systems, and the failure marker when used), title, and the PNG."""
    handles = [Line2D([], [], color=colors[s], marker="o", markersize=4, label=s) for s in systems]
    if any_failed:
        handles.append(Line2D([], [], color="grey", marker="X", markersize=9, markeredgecolor="black",
                              linestyle="none", label=FAILED_LABEL))
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize=8)
    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


def colors_of(systems):
    palette = colormaps["tab10"]
    return {s: palette(i % 10) for i, s in enumerate(systems)}


# --- the two figures ------------------------------------------------------------------------------

def rows_of(points, datasets, budgets, figure, path):
    """The points of ``datasets`` at ``budgets``; what is missing is said, and so is a figure left unwritten."""
    chosen = points[points["dataset"].isin(datasets) & points["budget"].isin(budgets)]
    report_missing(points, datasets, budgets, figure)
    if chosen.empty:
        print(f"{figure}: no rows of {' '.join(datasets)}; {path.name} not written")
    return chosen


def score_vs_rows(points, sizes, budgets, path):
    """(a) The score against training rows on the tables of ``sizes``, a panel per budget."""
    chosen = rows_of(points, sizes, budgets, "score vs rows", path)
    if chosen.empty:
        return
    panels = sorted(chosen["budget"].unique())
    figure, axes = new_figure(len(panels))
    systems = systems_of(points)
    colors = colors_of(systems)
    for ax, budget in zip(axes, panels):
        block = chosen[chosen["budget"] == budget]
        for system, line in block.groupby("system"):
            draw_system(ax, line, "n_train", colors[system], order="n_train")
        log_x_at(ax, block["n_train"].unique())
        ax.set(title=f"budget {budget:g} s", xlabel="training rows (log scale)",
               ylabel=metric_label(block["task"].iloc[0]))
        ax.grid(alpha=0.3)
    finish(figure, systems, colors, bool(chosen["failed"].any()),
           f"Held-out score against training rows ({', '.join(d for d in sizes if d in set(chosen['dataset']))})",
           path)


def score_vs_time(points, datasets, budgets, path):
    """(b) The score against fit seconds, a panel per dataset, a system's budgets joined by a line."""
    chosen = rows_of(points, datasets, budgets, "score vs time", path)
    if chosen.empty:
        return
    panels = [d for d in datasets if d in set(chosen["dataset"])]
    figure, axes = new_figure(len(panels))
    systems = systems_of(points)
    colors = colors_of(systems)
    for ax, dataset in zip(axes, panels):
        block = chosen[chosen["dataset"] == dataset]
        for system, line in block.groupby("system"):
            # Joined in budget order: a longer budget that ended sooner (early stop) shows as a step back.
            draw_system(ax, line, "seconds", colors[system], order="budget")
        log_x_decades(ax, block["seconds"])
        ax.set(title=dataset, xlabel="fit seconds (log scale)", ylabel=metric_label(block["task"].iloc[0]))
        ax.grid(alpha=0.3)
    budgets_shown = ", ".join(f"{b:g}" for b in sorted(chosen["budget"].unique()))
    finish(figure, systems, colors, bool(chosen["failed"].any()),
           f"Held-out score against fit time (budget {budgets_shown} s)", path)


# --- command line ---------------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=BENCH / "results" / "large.csv")
    parser.add_argument("--out", type=Path, default=BENCH.parent / "docs" / "img", help="directory of the PNGs")
    parser.add_argument("--prefix", default="large", help="file names: <prefix>-score-vs-rows.png, ...")
    parser.add_argument("--sizes", nargs="+", default=SIZES, help="one table at several sizes (figure a)")
    parser.add_argument("--datasets", nargs="+", help="figure b's panels; default: every large table")
    parser.add_argument("--budgets", nargs="+", type=float, help="default: every budget in the CSV")
    return parser.parse_args()


def main():
    args = parse_args()
    if not args.csv.exists() or args.csv.stat().st_size == 0:
        sys.exit(f"no results in {args.csv}; `compare.py run --suite large` writes them")
    points = read_points(args.csv)
    budgets = args.budgets or sorted(points["budget"].unique())
    datasets = args.datasets or data.large_names()
    score_vs_rows(points, args.sizes, budgets, args.out / f"{args.prefix}-score-vs-rows.png")
    score_vs_time(points, datasets, budgets, args.out / f"{args.prefix}-score-vs-time.png")


if __name__ == "__main__":
    main()
