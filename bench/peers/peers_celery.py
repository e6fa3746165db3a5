"""The Celery app of bench:peers, for `celery -A peers_celery worker` (see peers.py)."""
import os

from peers import celery_module

app, _tasks = celery_module(os.environ["JPEERS_REDIS"])
