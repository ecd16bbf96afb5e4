#!/usr/bin/env python3
"""Stand-in for `kubectl`: records each call in $STANDIN_DIR/calls.log and answers as
the real one does; $STANDIN_MODE: no-cluster, forbidden, no-namespace, secret-exists."""
import os
import pathlib
import shutil
import sys

state = pathlib.Path(os.environ["STANDIN_DIR"])
args = sys.argv[1:]
with open(state / "calls.log", "a") as log:
    log.write("kubectl " + " ".join(args) + "\n")
mode = os.environ.get("STANDIN_MODE", "")
ns = args[args.index("--namespace") + 1] if "--namespace" in args else "default"


def fail(message):
    sys.stderr.write(message + "\n")
    sys.exit(1)


if mode == "no-cluster":
    fail("The connection to the server localhost:8080 was refused - did you specify the right host or port?")
if args[:2] == ["get", "secret"]:
    if mode != "secret-exists":
        fail(f'Error from server (NotFound): secrets "{args[2]}" not found')
    print(f"NAME  TYPE  DATA  AGE\n{args[2]}  Opaque  1  3d")
elif args[:3] == ["create", "secret", "generic"]:
    if mode == "no-namespace":
        fail(f'error: failed to create secret namespaces "{ns}" not found')
    source = [a for a in args if a.startswith("--from-file=")][0].split("=", 2)
    shutil.copy(source[2], state / "secret-value")
    (state / "secret-field").write_text(source[1])
    print(f"secret/{args[3]} created")
elif args[:2] == ["apply", "-f"]:
    if mode == "forbidden":
        fail(f'Error from server (Forbidden): error when creating "{args[2]}": deployments.apps is forbidden: User "dev" cannot create resource "deployments" in API group "apps" in the namespace "{ns}"')
    shutil.copy(args[2], state / "applied.yaml")
    print("deployment.apps/svc created\nservice/svc created\nhorizontalpodautoscaler.autoscaling/svc created")
else:
    fail(f"error: unknown command {' '.join(args)}")
