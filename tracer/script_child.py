"""Entry point of one traced run of a user's script in a child process (see tracer/script.py)."""

import sys

from graphmode.tracer.script import child_main

sys.exit(child_main(sys.argv[1:]))
