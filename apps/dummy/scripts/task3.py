"""task3 of the dummy app: FLAG true with a single child."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dummy_lib import main, run  # noqa: E402

TASK = "task3"
CHILDREN = ["task5"]
BROADCAST = True


def task(filename, pathin, pathout):
    """Jupiter's contract: filename is a str (one input) or a list (a join); returns output paths."""
    return run(TASK, CHILDREN, BROADCAST, filename, pathin, pathout)


if __name__ == "__main__":
    main(task)
