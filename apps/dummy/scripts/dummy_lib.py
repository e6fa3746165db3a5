"""Shared body of the dummy app's tasks (Jupiter's task contract).

Every task records lineage instead of doing real work, so a test can check by content that
joins waited for every parent and that FLAG routing sent each file to the right child:

* Each output is a small JSON file: the job, the producing task, the child it is meant for
  (``"all"`` for FLAG true), the original sample inputs (name and SHA-256 prefix) and a sorted
  list of ``task<-parents`` lines merged from every input plus the task's own line.
* A task refuses an input addressed to another task, and inputs of mixed jobs.
* Output names keep Jupiter's job-prefix rule: ``<job>_<task>_<child>`` (FLAG false: one output
  per child, in child order) or ``<job>_<task>_all`` (FLAG true: one output for every child).
"""
import hashlib
import json
import os
import sys
import time

# Simulated compute time per call (seconds); small so tests and demos stay fast.
BUSY_SECONDS = float(os.environ.get("DUMMY_BUSY_SECONDS", "0.02"))


def job_prefix(name):
    """Jupiter's job id: the name before the first '_', or before the first '.' without '_'."""
    base = os.path.basename(name)
    if "_" in base:
        return base.split("_", 1)[0]
    return base.split(".", 1)[0]


def _busy(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x = (x * 31 + 7) % 1000003
    return x


def _read(path):
    """A lineage record from a parent task, or None for a raw sample input from the home."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        rec = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, data
    if isinstance(rec, dict) and "lineage" in rec and "task" in rec:
        return rec, data
    return None, data


def run(task, children, broadcast, filename, pathin, pathout):
    names = [filename] if isinstance(filename, str) else list(filename)
    _busy(BUSY_SECONDS)
    parents, lineage, sources, jobs = set(), set(), set(), set()
    for name in names:
        path = os.path.join(pathin, name)
        jobs.add(job_prefix(name))
        rec, data = _read(path)
        if rec is None:
            parents.add("home")
            sources.add("%s:%s" % (os.path.basename(name), hashlib.sha256(data).hexdigest()[:16]))
        else:
            if rec["to"] not in (task, "all"):
                raise ValueError("%s received %s, which %s addressed to %s" % (task, name, rec["task"], rec["to"]))
            parents.add(rec["task"])
            lineage.update(rec["lineage"])
            sources.update(rec["sources"])
    if len(jobs) != 1:
        raise ValueError("%s received inputs of different jobs: %s" % (task, sorted(jobs)))
    job = jobs.pop()
    lineage.add("%s<-%s" % (task, ",".join(sorted(parents))))
    os.makedirs(pathout, exist_ok=True)
    outputs = []
    for to in (["all"] if broadcast else children):
        out = os.path.join(pathout, "%s_%s_%s" % (job, task, to))
        record = {"job": job, "task": task, "to": to, "sources": sorted(sources), "lineage": sorted(lineage)}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        outputs.append(out)
    return outputs


def main(task_fn):
    """Run one task by hand: python3 scripts/task0.py [input files...] (default: the first sample).

    Outputs go to ./generated_files; their paths are printed.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    files = sys.argv[1:] or [os.path.join(here, "..", "sample_input", "1botnet.ipsum")]
    files = [os.path.abspath(f) for f in files]
    pathin = os.path.dirname(files[0])
    names = [os.path.relpath(f, pathin) for f in files]
    outs = task_fn(names[0] if len(names) == 1 else names, pathin, os.path.abspath("generated_files"))
    print("\n".join(outs))
