"""Entry point of one traced run of a user's script in a child process (see tracer/script.py)."""

import sys

from graphmode.tracer.phases import mark

mark("child: python started")
from graphmode.tracer.script import child_main  # noqa: E402

sys.exit(child_main(sys.argv[1:]))
