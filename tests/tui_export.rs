//! SPEC §21 in the workbench: the deploy dialog's export targets (`d`, then `←`)
//! write the NeMo Gym folder and the verifiers package into the workspace, and say so
//! in the ship panel; a folder that is not empty is refused there too.

mod common;
use common::*;

#[test]
fn the_deploy_dialog_exports_for_nemo_gym_and_verifiers() {
    let ws = Ws::new(&[
        ("metrics/exact/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(3)),
    ]);
    let tmux = Tmux::start(&ws, 150, 40, RWB);
    tmux.wait_for("the scores", |s| s.contains("0.040"));
    for (lefts, label, folder, file) in [
        (1, "verifiers", "vfpkg", "vfpkg/pyproject.toml"),
        (2, "NeMo Gym", "gymsrv", "gymsrv/configs/exact.yaml"),
    ] {
        tmux.key("d");
        tmux.wait_for("the deploy dialog", |s| s.contains("Deploy to Fireworks"));
        for _ in 0..lefts {
            tmux.key("Left");
        }
        tmux.wait_for("the export form", |s| {
            s.contains(&format!("Export for {label}")) && s.contains("folder")
        });
        for _ in 0..40 {
            tmux.key("BSpace");
        }
        for c in folder.chars() {
            tmux.key(&c.to_string());
        }
        tmux.key("Enter");
        tmux.wait_for("the export result", |s| {
            s.contains(&format!("exported for {label}"))
        });
        assert!(ws.file(file).is_file(), "{file} written");
        tmux.key("Escape");
    }
    // the same folder again: refused, the files kept
    tmux.key("d");
    tmux.wait_for("the deploy dialog", |s| s.contains("Deploy to Fireworks"));
    tmux.key("Left");
    for _ in 0..40 {
        tmux.key("BSpace");
    }
    for c in "vfpkg".chars() {
        tmux.key(&c.to_string());
    }
    tmux.key("Enter");
    tmux.wait_for("the refusal", |s| {
        s.contains("export failed") && s.contains("not empty")
    });
    tmux.key("Escape");
    tmux.key("q");
}
