"""Fork server of Python task workers (a node host of the process runtime runs one).

Usage: python3 -u py_forkserver.py <socket_path>

Why: a node host runs dozens of Python tasks, each in an interpreter of its own so that a crash
stays that task's. Starting an interpreter costs ~60-90 ms of CPU and ~7 MB of memory of its
own (site, encodings, .pth hooks), 200 times over for a 200-task app, all at deploy time. This
process pays for the interpreter once and forks a worker per request: each worker is still a
process of its own (a crash, os._exit or kill ends that worker alone), sharing the server's
pages copy-on-write. A worker connects to <socket_path> (the host listens there, in a folder
only its user can enter), says {"hello": <id>, "pid": <pid>} and then speaks py_worker's
protocol over that connection (stdin and stdout of py_worker.py are the connection).

Requests on stdin, one JSON object per line:
    {"id": 7, "scripts_dir": "/app/scripts", "module": "t1", "stderr": "/path/t1@node1.log" | null}
Answers on stdout, one JSON object per line:
    {"id": 7, "pid": 1234}                  forked
    {"id": 7, "error": "OSError: ..."}      could not fork
    {"exit": 1234, "code": 3} | {"exit": 1234, "signal": 9}   a worker ended (reaped here)
The server ends when its stdin closes (the host is gone); workers already forked end when their
connection closes.
"""
import json
import os
import select
import signal
import socket
import sys
import traceback

import py_worker


def worker(req, sock_path):
    """In the forked child: become one task's py_worker, never return."""
    code = 1
    try:
        if req.get("stderr"):
            fd = os.open(req["stderr"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(fd, 2)
            os.close(fd)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock_path)
        s.sendall((json.dumps({"hello": req["id"], "pid": os.getpid()}) + "\n").encode())
        os.dup2(s.fileno(), 0)
        os.dup2(s.fileno(), 1)
        s.close()
        sys.stdin = open(0, "r", encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)
        sys.argv = [py_worker.__file__, req["scripts_dir"], req.get("module") or ""]
        code = py_worker.main(req["scripts_dir"], req.get("module") or "")
    except BaseException:  # noqa: BLE001 - whatever happens, this process must not return to the server loop
        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code if isinstance(code, int) else 1)


def main():
    sock_path = sys.argv[1]
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    # SIGCHLD wakes the loop (a handler must be set for the wakeup fd to be written).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    buf = b""
    while True:
        try:
            ready, _, _ = select.select([0, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if os.WIFSIGNALED(status):
                    send({"exit": pid, "signal": os.WTERMSIG(status)})
                else:
                    send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
        if 0 not in ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return 0
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            req = json.loads(line)
            sys.stderr.flush()
            out.flush()
            try:
                pid = os.fork()
            except OSError as e:
                send({"id": req["id"], "error": "%s: %s" % (type(e).__name__, e)})
                continue
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the task's own subprocesses are waited for as usual
                out.close()
                os.close(wake_r)
                os.close(wake_w)
                worker(req, sock_path)
            send({"id": req["id"], "pid": pid})


if __name__ == "__main__":
    sys.exit(main())
