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
        // the sandbox's tests start its fork server in rwb's box, as rwb does
        .env("RWB_BIN", env!("CARGO_BIN_EXE_rwb"))
        .output()
        .expect("python3 runs");
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "python unittest failed:\n{report}");
    assert!(report.contains("\nOK"), "no tests ran?\n{report}");
}

/// Every Python file under src/engine/python is embedded (a style module added to the
/// worker package but not to `PYTHON_FILES` would be missing from the runtime folder),
/// at the path the runtime folder gives it: the bundled reward_kit and rwb's package
/// for reward code (`rwb`) under `compat/`.
#[test]
fn every_python_file_is_embedded() {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "py") {
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let bundled = rel.starts_with("reward_kit/") || rel.starts_with("rwb/");
                out.push(if bundled {
                    format!("compat/{rel}")
                } else {
                    rel
                });
            }
        }
    }
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
    let mut on_disk = Vec::new();
    walk(&base, &base, &mut on_disk);
    on_disk.sort();
    // (the E2B stand-in's dist-info METADATA is embedded too: not a .py file)
    let mut embedded: Vec<String> = reward_workbench::engine::PYTHON_FILES
        .iter()
        .map(|(rel, _)| rel.to_string())
        .filter(|rel| rel.ends_with(".py"))
        .collect();
    embedded.sort();
    assert_eq!(embedded, on_disk);
    for (rel, text) in reward_workbench::engine::PYTHON_FILES {
        let source = std::fs::read_to_string(base.join(rel.replace("compat/", ""))).unwrap();
        assert_eq!(*text, source, "{rel} is embedded as it is on disk");
    }
}
