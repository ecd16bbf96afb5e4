//! The safety net for a run that never ends (issue 24): a test's `rwb run` still going
//! at its limit fails with gdb's stacks of rwb's threads and the Python stack of each
//! worker, so the next hang names its line — through py-spy where it is installed,
//! else through the worker's own faulthandler (SIGUSR1 → stacks-PID.txt).

mod common;

use common::{output_within, Ws, RWB};
use std::process::Command;
use std::time::Duration;

const STUCK: &str = "import time\n\n\ndef evaluate(messages, **kwargs):\n    while True:\n        time.sleep(0.05)  # stuck here\n";

fn stuck_report(faulthandler: bool) -> String {
    let ws = Ws::new(&[
        ("metrics/stuck/main.py", STUCK),
        ("rwb.toml", "timeout = 600\n"),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n",
        ),
    ]);
    let mut command = Command::new(RWB);
    command
        .args(["run", ws.path().to_str().unwrap(), "--no-cache"])
        .env_remove("VIRTUAL_ENV");
    if faulthandler {
        // the test's own process reads this (tests/common's python_stacks)
        std::env::set_var("RWB_TEST_NO_PY_SPY", "1");
    }
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        output_within(&mut command, Duration::from_secs(4))
    }));
    let message = match report {
        Ok(_) => panic!("the stuck run ended by itself"),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "(not a string)".into()),
    };
    message
}

#[test]
fn a_stuck_run_is_reported_with_its_workers_python_line() {
    // both ways in one test: the faulthandler way sets a variable of this process
    let message = stuck_report(true);
    assert!(message.contains("still ran after 4s: killed."), "{message}");
    assert!(message.contains("its Python processes:"), "{message}");
    assert!(
        message.contains("main.py\", line 6 in evaluate"),
        "faulthandler names the evaluator's line:\n{message}"
    );
    std::env::remove_var("RWB_TEST_NO_PY_SPY");
    if Command::new("py-spy").arg("--version").output().is_ok() {
        let message = stuck_report(false);
        assert!(
            message.contains("evaluate (main.py:6)"),
            "py-spy names the evaluator's line:\n{message}"
        );
    } else {
        eprintln!("py-spy is not installed: only the faulthandler way was checked");
    }
}
