#!/usr/bin/env python3
"""Stand-in for `docker`: records each call in $STANDIN_DIR/calls.log; `build` checks
the context has a Dockerfile; $STANDIN_MODE=build-fails fails as a pip step does."""
import os
import pathlib
import sys

state = pathlib.Path(os.environ["STANDIN_DIR"])
args = sys.argv[1:]
with open(state / "calls.log", "a") as log:
    log.write("docker " + " ".join(args) + "\n")
if args[:1] != ["build"] or not (pathlib.Path(args[-1]) / "Dockerfile").is_file():
    sys.stderr.write(f"ERROR: unable to prepare context: {' '.join(args)}\n")
    sys.exit(1)
if os.environ.get("STANDIN_MODE") == "build-fails":
    sys.stderr.write('ERROR: failed to solve: process "/bin/sh -c pip install --no-cache-dir -r /tmp/rwb-requirements.txt" did not complete successfully: exit code: 1\n')
    sys.exit(1)
sys.stderr.write(f"#9 naming to docker.io/library/{args[2]} done\n")
