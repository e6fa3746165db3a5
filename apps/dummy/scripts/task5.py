"""task5 of the dummy app: join of task1 and task3, FLAG true."""
import os
import sys

# The shared body lives next to this file; no .pyc files in the app folder (it may be read-only).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dummy_lib import main, run  # noqa: E402

TASK = "task5"
CHILDREN = ["task6"]
BROADCAST = True


def task(filename, pathin, pathout):
    """Jupiter's contract: filename is a str (one input) or a list (a join); returns output paths."""
    return run(TASK, CHILDREN, BROADCAST, filename, pathin, pathout)


if __name__ == "__main__":
    main(task)
