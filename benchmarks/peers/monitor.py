"""Run one command in a fresh process session, tracking the peak RSS of all it starts, with a time limit.

Memory is read from /proc (Linux) every ``POLL_SECONDS``: the sum of the resident set sizes of every
process in the child's session, i.e. the child and all its descendants (worker pools, loky and
multiprocessing children), including orphans re-parented to init. Summed RSS counts pages shared
between forked workers once per process, so it overstates the physical memory of fork-heavy systems;
it is what an operator sizing a machine sees. A sub-process that starts its own session (as Ray's
daemons do; none of the systems here installs Ray) would escape both the count and the kill.

CPU used by OTHER processes during the run (``foreign_cpu``, in cores, averaged over the run) is the
machine's busy time (/proc/stat) minus the run's own (its rusage) and the harness's: on this 2-core
machine a fit whose two OpenMP threads compete with another process can take 40 times longer (LightGBM
on kc1: 0.1 s alone, 4 s beside a pytest run), so a run with foreign_cpu well above 0 has no
comparable timings.
"""

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

POLL_SECONDS = 0.2
BUSY_CORES = 0.25  # foreign_cpu above this: the run shared the machine, its timings are suspect
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def session_members(session):
    """Pids of the processes whose session id is ``session``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Fields after the parenthesised command name: state ppid pgrp session ...
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[3]) == session:
            members.append(int(stat.parent.name))
    return members


def session_rss(session):
    """Summed resident set size, in bytes, of the processes of a session."""
    total = 0
    for pid in session_members(session):
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
        except OSError:
            continue
    return total


def kill_session(session):
    """SIGKILL every process of the session (the child's own process group, then any stragglers)."""
    try:
        os.killpg(session, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in session_members(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def busy_cpu_seconds():
    """CPU seconds the whole machine has spent not idle since boot (user, nice, system, irq, steal)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    """CPU seconds of the harness and of its waited-for children (the runs and their descendants)."""
    return sum(getattr(resource.getrusage(who), field)
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def run_monitored(command, timeout, log_path, cwd=None, env=None):
    """Run ``command`` (stdout and stderr to ``log_path``); returns exit code, wall, peak RSS, timed_out
    and foreign_cpu.

    The child leads a new session, so its pid is the session id of everything it starts. Whatever is
    left of the session when the child exits (or when the time limit kills it) is killed, so no
    worker of one run lives on to slow the next.
    """
    started, busy, own = time.time(), busy_cpu_seconds(), own_cpu_seconds()
    peak, timed_out = 0, False
    with open(log_path, "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                 start_new_session=True)
        while child.poll() is None:
            peak = max(peak, session_rss(child.pid))
            if time.time() - started > timeout:
                timed_out = True
                kill_session(child.pid)
                child.wait()
                break
            time.sleep(POLL_SECONDS)
        wall = time.time() - started
        foreign = (busy_cpu_seconds() - busy) - (own_cpu_seconds() - own)
        kill_session(child.pid)
    return {"returncode": child.returncode, "process_seconds": wall, "peak_rss_mb": peak / 2**20,
            "timed_out": timed_out, "foreign_cpu": max(foreign, 0.0) / wall}


def monitored_row(command, timeout, name):
    """Run ``command`` (which writes its figures as JSON to the path given after ``--out``, appended here) with
    :func:`run_monitored`, and return those figures with its wall, peak RSS and foreign load; None (the log's
    end printed to stderr) when it failed."""
    import json
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        out, log = Path(folder) / "row.json", Path(folder) / "log.txt"
        run = run_monitored([*command, "--out", str(out)], timeout, log)
        if run["returncode"] != 0:
            print(f"{name} failed:\n{log.read_text()[-2000:]}", file=sys.stderr)
            return None
        row = {**json.loads(out.read_text()), "wall": run["process_seconds"], "peak_rss_mb": run["peak_rss_mb"],
               "foreign_cpu": run["foreign_cpu"]}
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    return row


def save_and_show(rows, csv, columns):
    """Append ``rows`` (dicts) to the CSV file ``csv`` (when given) and print their ``columns`` as a table."""
    import pandas as pd
    from pathlib import Path

    table = pd.DataFrame(rows)
    if not len(table):
        return
    if csv:
        table.to_csv(csv, mode="a", header=not Path(csv).exists(), index=False)
    print(table[columns].to_string(index=False, float_format="%.4f"))
