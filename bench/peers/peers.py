"""bench:peers' driver for the peers (Dask distributed, Celery), run with Debian's /usr/bin/python3.

Usage: python3 peers.py <dask|celery> <redis url> <stages dir>

<stages dir> holds stages.py (written by the bench: `stage(item)` hands [key, payload] on and
stamps its start and end inside the task function). Commands, one JSON object per line on stdin,
each answered by one JSON line on stdout:
    {"op": "start"}                       -> {"ok": true}
    {"op": "throughput", "n": N, "tag": "t1"} -> {"secs": ...}  N items submitted at once (open loop)
    {"op": "latency", "n": N, "tag": "l1"}    -> {"e2e": [ms, ...]}  one at a time (closed loop), each
                                              waited for by a blocking call (no polling)
    {"op": "stop"}                        -> {"ok": true}
Everything the peers print goes to stderr.
"""
import json
import os
import subprocess
import sys
import time

PAYLOAD = "p" * 100


def celery_module(redis_url):
    """Celery app as its documentation sets it up for a pipeline (see README, Benchmarks)."""
    from celery import Celery
    import stages

    app = Celery("jpeers", broker=redis_url, backend=redis_url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # One queue per stage, each consumed by its own worker (routing guide).
        task_routes={"jpeers.s%d" % i: {"queue": "jpeers-s%d" % i} for i in (1, 2, 3)},
        # Celery's defaults otherwise: acknowledged when a worker takes the task, prefetch
        # multiplier 4 (the docs' advice for many short tasks). task_acks_late=True (what would
        # match Jupiter's guarantee: nothing lost when a worker dies) made every worker stall
        # about 5 s between tasks with the Redis transport of this version, so it is left off.
        broker_connection_retry_on_startup=True,
        result_expires=3600,
    )
    tasks = [app.task(name="jpeers.s%d" % i)(stages.stage) for i in (1, 2, 3)]
    return app, tasks


class Celery:
    def __init__(self, redis_url, stages_dir):
        self.url = redis_url
        self.stages_dir = stages_dir
        self.workers = []

    def start(self):
        from celery import chain

        self.chain = chain
        self.app, self.tasks = celery_module(self.url)
        # The workers' banners and warnings go to a file beside the stages (shown on failure).
        self.log = open(os.path.join(self.stages_dir, "celery-workers.log"), "ab")
        env = dict(os.environ, PYTHONPATH=self.stages_dir + os.pathsep + os.path.dirname(os.path.abspath(__file__)), JPEERS_REDIS=self.url)
        for i in (1, 2, 3):
            # One prefork worker per stage with one child process (a no-op task is CPU-bound).
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "peers_celery", "worker", "-Q", "jpeers-s%d" % i, "-c", "1", "-P", "prefork",
                 "-n", "jpeers-s%d@%%h" % i, "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"],
                env=env, stdout=self.log, stderr=self.log))
        # Ready once a chain has gone through all three.
        self.chain(*[t.s() if j else t.s(["warm", PAYLOAD]) for j, t in enumerate(self.tasks)]).apply_async().get(timeout=120)

    def submit(self, key):
        s1, s2, s3 = self.tasks
        return self.chain(s1.s([key, PAYLOAD]), s2.s(), s3.s()).apply_async()

    def throughput(self, n, tag):
        t0 = time.time()
        results = [self.submit("%s-%d" % (tag, i)) for i in range(n)]
        for r in results:
            r.get(timeout=600)
        return time.time() - t0

    def latency(self, n, tag):
        out = []
        for i in range(n):
            t0 = time.time()
            self.submit("%s-%d" % (tag, i)).get(timeout=60)
            out.append((time.time() - t0) * 1000)
        return out

    def stop(self):
        for w in self.workers:
            w.terminate()
        for w in self.workers:
            try:
                w.wait(20)
            except subprocess.TimeoutExpired:
                w.kill()


class Dask:
    def __init__(self, redis_url, stages_dir):
        self.stages_dir = stages_dir

    def start(self):
        from dask.distributed import Client, LocalCluster
        import stages

        self.stage = stages.stage
        # Three single-threaded worker processes, one per stage; each stage's tasks pinned to
        # its worker with workers= (the docs' way to place work), pure=False (every item is new).
        self.cluster = LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40)
        self.client = Client(self.cluster)
        self.latency(3, "warm")

    def chain(self, items):
        # The workers as they are now: on a loaded machine a nanny may have restarted one (a new
        # address), and tasks pinned to the old one would wait forever.
        self.client.wait_for_workers(3, timeout=120)
        f = items
        for w in sorted(self.client.scheduler_info()["workers"])[:3]:
            f = self.client.map(self.stage, f, workers=[w], allow_other_workers=False, pure=False)
        return f

    def throughput(self, n, tag):
        t0 = time.time()
        from dask.distributed import wait

        futures = self.chain([["%s-%d" % (tag, i), PAYLOAD] for i in range(n)])
        wait(futures, timeout=600)  # a lost worker fails the round instead of hanging it
        self.client.gather(futures)
        return time.time() - t0

    def latency(self, n, tag):
        out = []
        for i in range(n):
            t0 = time.time()
            f = [["%s-%d" % (tag, i), PAYLOAD]]
            self.chain(f)[0].result(timeout=60)
            out.append((time.time() - t0) * 1000)
        return out

    def stop(self):
        self.client.close()
        self.cluster.close()


def main():
    system, redis_url, stages_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, stages_dir)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    peer = {"dask": Dask, "celery": Celery}[system](redis_url, stages_dir)
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "start":
                peer.start()
                res = {"ok": True}
            elif op == "throughput":
                res = {"secs": peer.throughput(cmd["n"], cmd["tag"])}
            elif op == "latency":
                res = {"e2e": peer.latency(cmd["n"], cmd["tag"])}
            elif op == "stop":
                peer.stop()
                proto.write(json.dumps({"ok": True}) + "\n")
                return 0
            else:
                res = {"error": "unknown op %s" % op}
        except Exception as e:  # reported to the bench, which stops
            res = {"error": "%s: %s" % (type(e).__name__, e)}
        proto.write(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
