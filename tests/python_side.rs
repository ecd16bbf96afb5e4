//! The Python that runs inside workers is tested like the Rust: this runs the unittest
//! suite in tests/python (the bundled reward_kit against real reward-kit 0.4.1's
//! recorded behaviour, and the worker's helpers) with the machine's python3.

use std::process::Command;

#[test]
fn python_unit_tests_pass() {
    let root = env!("CARGO_MANIFEST_DIR");
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests/python", "-v"])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "python unittest failed:\n{report}");
    assert!(report.contains("\nOK"), "no tests ran?\n{report}");
}
