"""rlwatch's own reward-hacking detector over a folder of veRL step dumps (run with an
interpreter that has rlwatch 0.5.1: RWB_RLWATCH_PYTHON), for tests/hacking.rs's
cross-check of rwb's variance-explosion alerts (SPEC §19).

Each step's rewards (the rows' logged `score`, steps in order) go to rlwatch's
`DetectorSuite` with its default configuration, as `RLWatch.log_step` hands them on
(rlwatch/core.py: `reward_mean = np.mean(rewards)`, `reward_std = np.std(rewards)`,
then `check_step(step, reward_mean=..., reward_std=..., rewards=...)`), without the
alert manager's cooldown (delivery, not detection). Prints, as JSON, every step at
which the detector's variance check fired and its severity (`warning`, `critical`),
and the baseline variance it used. Its other check (the dip test's `warning` on a
bimodal buffer) is not a variance explosion and is left out.

    python hacking_rlwatch.py DUMPS_DIR
"""

import json
import os
import sys

import numpy as np
from rlwatch.config import RLWatchConfig
from rlwatch.detectors import DetectorSuite


def main():
    root = sys.argv[1]
    steps = {}
    for name in os.listdir(root):
        with open(os.path.join(root, name)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for row in rows:
            steps.setdefault(row["step"], []).append(row["score"])
    suite = DetectorSuite(RLWatchConfig())
    fired = []
    for step in sorted(steps):
        rewards = np.array(steps[step], dtype=float)
        alerts = suite.check_step(
            step,
            reward_mean=float(np.mean(rewards)),
            reward_std=float(np.std(rewards)),
            rewards=rewards,
        )
        for alert in alerts:
            if alert.detector == "reward_hacking" and "variance_ratio" in alert.metric_values:
                fired.append(
                    {
                        "step": step,
                        "severity": alert.severity,
                        "ratio": alert.metric_values["variance_ratio"],
                    }
                )
    detector = suite.reward_detector
    json.dump(
        {
            "fired": fired,
            "baseline_variance": detector._baseline_variance,
            "warmup_steps": detector.config.warmup_steps,
            "variance_multiplier": detector.config.variance_multiplier,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
