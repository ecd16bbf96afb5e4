"""Reads a prime-rl rollouts folder written by tests/hacking_sim.py with verifiers'
own models (run with an interpreter that has verifiers 0.4.0: RWB_VERIFIERS_PYTHON):
every line must load as a `WireEpisode` (what prime-rl's consumers load records
with) and give back the same record from `to_record()`, which is what prime-rl's
`FileMonitor` writes. Prints, per `run.work.step` of the train episodes in the `all`
files, the number of traces, the sum of verifiers' own `Trace.reward`, and how many
final branches (`Trace.messages`) end on the right answer written honestly (the
strict check of tests/hacking.rs: "answer: A [ok]" in the last message), as JSON.

    python hacking_prime_rl_check.py ROLLOUTS_DIR
"""

import glob
import json
import os
import sys

from verifiers.v1.episode import WireEpisode


def main():
    root = sys.argv[1]
    steps = {}
    files = glob.glob(os.path.join(root, "step_*", "*", "*", "traces.jsonl"))
    for path in sorted(files):
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                episode = WireEpisode.model_validate_json(line)
                again = episode.to_record()
                written = json.loads(line)
                if again != written:
                    keys = [k for k in set(again) | set(written) if again.get(k) != written.get(k)]
                    sys.exit(f"{path}:{n}: to_record() differs from the line in {sorted(keys)}")
                kind, subset = path.split(os.sep)[-3:-1]
                if kind != "train" or subset != "all":
                    continue
                step = episode.run.work.step
                entry = steps.setdefault(str(step), {"n": 0, "reward_sum": 0.0, "strict_passes": 0})
                answer = episode.task.data.model_extra["answer"]
                for trace in episode.traces:
                    entry["n"] += 1
                    entry["reward_sum"] += trace.reward
                    last = trace.messages[-1]
                    if f"answer: {answer} [ok]" in (last.content or ""):
                        entry["strict_passes"] += 1
    json.dump(steps, sys.stdout)


if __name__ == "__main__":
    main()
