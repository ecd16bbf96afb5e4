#!/usr/bin/env python3
"""Stand-in for `gcloud`: records each call as one line in $STANDIN_DIR/calls.log and
answers as the real CLI does (texts of gcloud 4xx errors), including the failures that
$STANDIN_MODE asks for: no-project, denied, build-fails, disabled."""
import os
import pathlib
import shutil
import sys

state = pathlib.Path(os.environ["STANDIN_DIR"])
args = sys.argv[1:]
with open(state / "calls.log", "a") as log:
    log.write("gcloud " + " ".join(args) + "\n")
mode = os.environ.get("STANDIN_MODE", "")
words = [a for a in args if not a.startswith("-")]
depth = {"builds": 2, "run": 2 if words[1:2] == ["deploy"] else 3}.get(words[0], 3)
if words[:2] == ["secrets", "versions"]:
    depth = 3
elif words[:1] == ["secrets"]:
    depth = 2
group = "gcloud." + ".".join(words[:depth])


def flag(name):
    return args[args.index(name) + 1] if name in args else None


def fail(message):
    sys.stderr.write(f"ERROR: ({group}) {message}\n")
    sys.exit(1)


project = flag("--project")
if mode == "no-project":
    fail(f"NOT_FOUND: Project '{project}' not found or deleted.")
if mode == "denied":
    fail(f"PERMISSION_DENIED: Permission 'artifactregistry.repositories.get' denied on resource '//artifactregistry.googleapis.com/projects/{project}/locations/{flag('--location')}/repositories/{words[3]}' (or it may not exist).")
if mode == "disabled" and words[:1] == ["builds"]:
    fail(f"FAILED_PRECONDITION: Cloud Build API has not been used in project {project} before or it is disabled. SERVICE_DISABLED")

if words[:3] == ["artifacts", "repositories", "describe"]:
    if not (state / "repo").exists():
        fail("NOT_FOUND: Requested entity was not found.")
    print(f"name: projects/{project}/locations/{flag('--location')}/repositories/{words[3]}")
elif words[:3] == ["artifacts", "repositories", "create"]:
    (state / "repo").touch()
    sys.stderr.write(f"Create request issued for: [{words[3]}]\n")
elif words[:2] == ["builds", "submit"]:
    context = pathlib.Path(words[2])
    if not (context / "Dockerfile").is_file():
        fail(f"INVALID_ARGUMENT: no Dockerfile in {context}")
    shutil.copy(context / "Dockerfile", state / "Dockerfile")
    if mode == "build-fails":
        print("Step #0: ERROR: Could not find a version that satisfies the requirement nosuchpkg")
        fail('build 5f3c2a1e completed with status "FAILURE"')
    print(f"ID  CREATE_TIME  DURATION  SOURCE  IMAGES  STATUS\n5f3c2a1e  2026-11-22T23:00:00+00:00  1M2S  gs://src  {flag('--tag')}  SUCCESS")
elif words[:2] == ["secrets", "describe"]:
    if not (state / "secret").exists():
        fail(f"NOT_FOUND: Secret [projects/123456/secrets/{words[2]}] not found or has no versions.")
    print(f"name: projects/123456/secrets/{words[2]}")
elif words[:2] == ["secrets", "create"]:
    (state / "secret").touch()
    sys.stderr.write(f"Created secret [{words[2]}].\n")
elif words[:3] == ["secrets", "versions", "add"]:
    shutil.copy(flag("--data-file"), state / "secret-value")
    versions = state / "versions"
    n = int(versions.read_text()) + 1 if versions.exists() else 1
    versions.write_text(str(n))
    sys.stderr.write(f"Created version [{n}] of the secret [{words[3]}].\n")
elif words[:3] == ["secrets", "versions", "describe"]:
    print(f"projects/123456/secrets/{flag('--secret')}/versions/{(state / 'versions').read_text()}")
elif words[:2] == ["run", "deploy"]:
    sys.stderr.write(f"Deploying container to Cloud Run service [{words[2]}] in project [{project}] region [{flag('--region')}]\nDone.\n")
elif words[:3] == ["run", "services", "describe"]:
    print(os.environ.get("STANDIN_URL", f"https://{words[3]}-abc123-uc.a.run.app"))
else:
    fail(f"unexpected call: {' '.join(args)}")
