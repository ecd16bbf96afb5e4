//! SPEC §19 in a real terminal: tmux runs the real binary on a folder of veRL rollout
//! dumps (a seeded simulated run with a planted hack, tests/hacking_sim.py), `v`
//! draws the proxy and the held-out check per step as a chart with the onset marked
//! and the alerts beneath, `/hacked` keeps the samples the proxy passes and the
//! held-out check fails (newest step first), and a step file landing while the
//! workbench is open moves the chart on.

mod common;
use common::*;
use serde_json::Value;

const SIM: &str = include_str!("hacking_sim.py");

const STRICT: &str = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if f"answer: {ground_truth} [ok]" in solution_str else 0.0
"#;

#[test]
fn the_chart_marks_the_onset_and_hacked_keeps_the_false_passes() {
    let python = std::env::var_os("RWB_DATA_PYTHON").unwrap_or_else(|| "python3".into());
    let ws = Ws::new(&[
        ("strict.py", STRICT),
        (
            "rwb.toml",
            "trainer = \"verl\"\n[evaluators.strict]\nfunction = \"strict.py::compute_score\"\nheldout = true\n",
        ),
        ("hacking_sim.py", SIM),
    ]);
    let out = std::process::Command::new(&python)
        .arg(ws.file("hacking_sim.py"))
        .args(["verl", "hack"])
        .arg(ws.file("dumps"))
        .arg(ws.file("expected.json"))
        .args([
            "--steps",
            "21",
            "--groups",
            "8",
            "--size",
            "4",
            "--planted",
            "12",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.file("expected.json")).unwrap()).unwrap();
    let onset = expected["onset"]["step"]
        .as_i64()
        .expect("the planted hack has an onset");
    // the last step lands later, while the workbench is open
    std::fs::rename(ws.file("dumps/21.jsonl"), ws.file("step21.jsonl")).unwrap();
    let false_passes = |upto: i64| -> i64 {
        expected["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["step"].as_i64().unwrap() <= upto)
            .map(|s| {
                (s["false_pass_rate"].as_f64().unwrap() * s["n"].as_f64().unwrap()).round() as i64
            })
            .sum()
    };
    let tmux = Tmux::start(&ws, 160, 50, &format!("{RWB} . -s dumps/"));
    tmux.wait_for("640 samples scored", |s| {
        s.contains("Samples 640/640") && !s.contains("evaluating")
    });
    tmux.key("v");
    let screen = tmux.wait_for("the chart with the onset", |s| {
        s.contains("Proxy and held-out per step") && s.contains(&format!("onset {onset}"))
    });
    assert!(
        screen.contains("logged score (score) vs evaluator strict"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("onset: step {onset} (")),
        "{screen}"
    );
    // the legend names the two lines
    assert!(
        screen.contains("proxy") && screen.contains("held-out"),
        "{screen}"
    );
    assert!(screen.contains("┃1.00│"), "{screen}");
    // the x axis runs from the first step to the last so far
    assert!(screen.contains("step"), "{screen}");
    tmux.key("Escape");
    tmux.keys(&["/"]);
    tmux.keys(&["hacked"]);
    tmux.keys(&["Enter"]);
    let kept = false_passes(20);
    let screen = tmux.wait_for("the false passes", |s| {
        s.contains(&format!("Samples {kept}/640 filter: hacked"))
    });
    // newest step first: the first row is step 20's
    let first_row = screen
        .lines()
        .find(|l| l.contains(" ▸ answer"))
        .unwrap_or_else(|| panic!("no row: {screen}"));
    assert!(
        first_row.contains("Step 20 question"),
        "{first_row}\n{screen}"
    );
    // the trainer writes step 21: read, scored, counted, charted
    std::fs::rename(ws.file("step21.jsonl"), ws.file("dumps/21.jsonl")).unwrap();
    let kept = false_passes(21);
    let screen = tmux.wait_for("step 21 landed", |s| {
        s.contains(&format!("Samples {kept}/672 filter: hacked")) && !s.contains("evaluating")
    });
    let first_row = screen.lines().find(|l| l.contains(" ▸ answer")).unwrap();
    assert!(
        first_row.contains("Step 21 question"),
        "{first_row}\n{screen}"
    );
    tmux.key("Escape");
    tmux.key("v");
    tmux.wait_for("the chart reaches step 21", |s| {
        s.contains("Proxy and held-out per step")
            && s.contains("21")
            && s.contains(&format!("onset {onset}"))
    });
    tmux.keys(&["q"]);
}
