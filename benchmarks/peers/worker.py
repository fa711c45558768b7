"""One benchmark run in its own process: load, split, fit one system, score, write a JSON result.

    PYTHONPATH=benchmarks <venv>/bin/python -m peers.worker --system flaml --dataset kc1 --seed 0 \\
        --budget 60 --out /tmp/run/result.json --workdir /tmp/run

Started by benchmarks/compare.py with the system's venv, which measures memory and kills it past
its time limit. Exits 1 after writing ``{"status": "failed", "error": ...}`` when the system raises.
"""

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

from peers import data
from peers.systems import SYSTEMS


def run(args):
    X, y, task = data.load(args.dataset, args.data_dir)
    X_train, X_test, y_train, y_test = data.split(X, y, args.seed, task)
    fit = SYSTEMS[args.system][1]
    started = time.time()
    predict, info = fit(X_train, y_train, task, args.budget, args.seed, args.workdir)
    fit_seconds = time.time() - started
    started = time.time()
    prediction = predict(X_test)  # class probabilities, or point predictions for regression
    predict_seconds = time.time() - started
    if task in data.REGRESSION:
        held_out = data.regression_scores(y_test, prediction)
    else:
        held_out = data.scores(y_test, prediction, y_train.unique(), task)
    result = {"status": "ok", "split_hash": data.split_hash(y_test), "fit_seconds": fit_seconds,
              "predict_seconds": predict_seconds, **held_out, **info}
    if "total_seconds" in info:  # ours: time in fit outside the search, the final fit and the model check
        result["overhead_seconds"] = (fit_seconds - info["search_seconds"] - info["ensemble_seconds"]
                                      - info.get("model_check_seconds", 0.0))
        result["overhead_share"] = result["overhead_seconds"] / fit_seconds
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", required=True, choices=sorted(SYSTEMS))
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--budget", type=float, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--data-dir", default=str(data.DATA_DIR))
    args = parser.parse_args()
    try:
        result = run(args)
    except Exception as error:  # recorded as a failed row, with the error text, by the harness
        traceback.print_exc()
        result = {"status": "failed", "error": f"{type(error).__name__}: {error}"}
    Path(args.out).write_text(json.dumps(result, default=float))
    sys.exit(0 if result["status"] == "ok" else 1)


if __name__ == "__main__":
    main()
