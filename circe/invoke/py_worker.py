"""Jupiter's persistent Python task worker (one per task runner).

Usage: python3 -u py_worker.py <scripts_dir> <module>
   (or forked by py_forkserver.py, which calls main(scripts_dir, module) with stdin and stdout
   connected to the node host)

Imports <module> once from <scripts_dir> (which is put first on sys.path) and then serves
requests, one JSON object per line on stdin:
    {"id": 1, "filename": "a.txt" | ["a.txt", "b.txt"], "pathin": "...", "pathout": "..."}
A request may name another "module" of <scripts_dir> (imported once, on first use) whose task
it calls, and a request without "filename" only imports its module: the execution profiler
runs many tasks in one interpreter this way (<module> may then be empty: nothing at start).
answering one JSON object per line on the original stdout:
    {"id": 1, "ok": true, "result": ["/abs/out/file", ...]}
    {"id": 1, "ok": false, "error": "ValueError: ...", "trace": "..."}
Anything the task prints goes to stderr (file descriptor 1 itself is redirected), so task
output can never corrupt the protocol.
"""
import json
import os
import sys
import traceback


def main(scripts_dir=None, module_name=None):
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    if scripts_dir is None:
        scripts_dir, module_name = sys.argv[1], sys.argv[2]
    # The working directory is the scripts folder (the wrapper of original apps starts us in /
    # before /centralized_scheduler is mounted).
    os.chdir(scripts_dir)
    sys.path.insert(0, scripts_dir)
    tasks = {}

    def task_of(name):
        if name not in tasks:
            tasks[name] = getattr(__import__(name), "task")
        return tasks[name]

    try:
        task = task_of(module_name) if module_name else None
    except BaseException as e:  # report import problems instead of dying silently
        send({"ready": False, "error": "%s: %s" % (type(e).__name__, e), "trace": traceback.format_exc()})
        return 1
    send({"ready": True, "pid": os.getpid()})

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            fn = task_of(req["module"]) if req.get("module") else task
            if "filename" not in req:
                send({"id": req["id"], "ok": True, "result": []})
                continue
            result = fn(req["filename"], req["pathin"], req["pathout"])
            if result is None:
                result = []
            elif isinstance(result, (str, bytes, os.PathLike)):
                result = [result]
            out = []
            for p in result:
                p = os.fsdecode(os.fspath(p))
                out.append(p)
            send({"id": req["id"], "ok": True, "result": out})
        except SystemExit as e:
            send({"id": req["id"], "ok": False, "error": "task called exit(%s)" % (e.code,), "trace": ""})
        except BaseException as e:
            send({"id": req["id"], "ok": False, "error": "%s: %s" % (type(e).__name__, e), "trace": traceback.format_exc()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
