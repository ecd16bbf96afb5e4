"""rwb's Python side: a fork-server ("zygote") and the evaluator workers it forks.

rwb starts it once per interpreter through the entry script beside this package:

    python rwb_worker.py SOCKET_PATH COMPAT_DIR

The zygote imports everything a worker needs (json, inspect, and reward_kit: the
real package when it imports, else rwb's bundled copy from COMPAT_DIR), then waits
for commands on stdin. A code change therefore costs one fork of this warm process,
not a new interpreter and its imports.

Each forked worker connects to rwb's Unix socket, imports ONE evaluator and then
serves batches of sample lines, sending one result line per sample as soon as it
is computed. User code never sees the protocol channel: its prints are captured per
evaluation and returned with the result, and file descriptor 1 points at stderr.

Protocol (one JSON object per line unless said otherwise):
  rwb -> zygote stdin   {"op": "fork", "token": T, "root": DIR, "evaluator": {...}}
                        (evaluator: name, file, folder, module (package functions),
                        function, style, trainer, chat_template ("chatml", "raw",
                        "jinja": rendered by rwb), solution_str, kwargs, timeout)
                        {"op": "preload", "modules": ["numpy", ...]}
  zygote -> rwb stdout  {"zygote": "ready", "python": ..., "reward_kit": ...}
  worker -> socket      {"hello": T, "pid": P}
                        {"ready": T, "style": ..., "style_reason": ..., "files": [...],
                         "third_party": [...], "packages": {"modules": [...], "dists": [...]}}
                        or {"import_error": {"type", "message", "traceback", "file", "line"}}
  rwb -> socket         "B <n>" then n lines "<id> <raw sample JSON>"; "Q" to quit
                        "B <n> <c>": the same with up to c evaluations in flight (see
                        Concurrent); "B <n>" keeps one at a time, as before, and
                        a sample line of it may be "<id> @<k>" followed by k bytes:
                        the marshal data of the sample's dict and a zero byte
                        (src/engine/marshal.rs; wire._sample reads both forms)
                        "P <n> <c>": as "B", each sample line followed by a line holding
                        the prompt rwb rendered with the trainer's Jinja chat template
                        (a JSON string, or null); it reaches the styles inside the
                        sample under styles.samples.TEMPLATED
  worker -> socket      {"i": id, "ms": f, "ok": {...result...}, "out": "..."}
                        {"i": id, "ms": f, "err": {...}, "out": "..."}
                        {"i": id, "ns": n, "ok": {...}}: a plain result written by
                        wire._plain_line, its time in whole nanoseconds
                        {"done": n, "files": [...]?, "packages": {...}?} after each batch
                        {"retire": "timeout"} instead, after an interrupted evaluation:
                        the worker leaves and its process group dies with it
  "files" are every project file imported so far (sent when they changed); "packages"
  the third-party module files and distributions imported since the last report.

A result line always begins {"i": id, so rwb can name the sample of a line it cannot
read. Each worker leads its own process group: killing the group kills whatever an
evaluation started. The per-evaluation timeout is a watchdog thread in the worker
that signals the main thread (see Evaluation); rwb kills a worker whose evaluation
overruns it by more than a short grace.

The modules, each one job (none imports the worker or the zygote but those two):
  wire        the bytes of every line: encoder, sample decoder, plain result lines,
              flush thresholds, the mark page's layout (the per-sample hot paths)
  results     what a return becomes: rwb's result dict, checked (InvalidResult)
  errors      what an exception becomes: type, message, traceback, project line
  timeouts    the per-evaluation timeout: watchdog thread, EvalTimeout
  output      what user code prints: Capture, and RoutedOutput for concurrency
  imports     what an evaluator imported: project files, packages, distributions
  paths       which files are rwb's own, which the project's
  asyncs      `async def` evaluators: the worker's event loop
  load        reward_kit in the zygote; the evaluator's module and function
  styles/     the calling styles, one module each, and the table that picks one
  worker      Worker: one evaluator, many batches (run_pointwise is the hot path)
  concurrent  evaluations in flight together (`concurrency = N`)
  checks      contract checks (the "C" batch)
  zygote      the fork-server's main loop and a forked child's start
"""
