//! What a newcomer meets in the workbench (issue 32), in a real terminal: tmux runs
//! the real binary on a workspace `rwb init --trainer trl` wrote, the test edits
//! files like a user would, and reads the screen with capture-pane.

mod common;
use common::*;

/// `rwb init --trainer trl` into a fresh workspace folder.
fn trl_workspace() -> Ws {
    let ws = Ws::new(&[]);
    let init = rwb(
        &["init", ws.path().to_str().unwrap(), "--trainer", "trl"],
        ws.path(),
    );
    assert_eq!(init.code, 0, "{}", init.stderr);
    ws
}

/// The list pane's header row.
fn header(screen: &str) -> &str {
    screen.lines().nth(1).unwrap_or("")
}

#[test]
fn columns_that_do_not_fit_are_counted_and_scroll_sideways() {
    let ws = trl_workspace();
    let tmux = Tmux::start(&ws, 80, 24, RWB);
    let screen = tmux.wait_for("the scores and a marker", |s| {
        s.contains("Samples 8/8") && header(s).contains(" ▸") && s.contains("1.000")
    });
    assert!(header(&screen).contains("accura"), "{screen}");
    assert!(!header(&screen).contains('◂'), "{screen}");
    tmux.keys(&[">"]);
    let screen = tmux.wait_for("the columns scrolled", |s| header(s).contains("◂1"));
    // the selected evaluator's score stays first
    assert!(header(&screen).contains("accura"), "{screen}");
    tmux.keys(&["<"]);
    tmux.wait_for("back", |s| {
        !header(s).contains('◂') && header(s).contains(" ▸")
    });
    tmux.keys(&["q"]);
}

#[test]
fn a_runs_change_since_the_baseline_shows_without_a_key() {
    let ws = trl_workspace();
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    // the first run done: group 0's advantages are on screen
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 8/8") && s.contains("+0.833")
    });
    tmux.keys(&["b"]);
    tmux.wait_for("the pin", |s| s.contains("baseline pinned: 8 samples"));
    let rewards = std::fs::read_to_string(ws.file("rewards.py")).unwrap();
    // accuracy now accepts any answer
    ws.write(
        "rewards.py",
        &rewards.replace(
            "rewards.append(1.0 if found and found.group(1).strip() == str(answer).strip() else 0.0)",
            "rewards.append(1.0 if found else 0.0)",
        ),
    );
    // no key pressed: the notice is still there, and the run's change below it
    let screen = tmux.wait_for("the attribution", |s| {
        s.contains("vs baseline · accuracy_reward: 3 samples changed (3 up, 0 down")
    });
    assert!(screen.contains("baseline pinned: 8 samples"), "{screen}");
    tmux.keys(&["q"]);
}

#[test]
fn rwb_toml_problems_and_group_sizes_are_said_as_the_file_is_saved() {
    let ws = trl_workspace();
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    tmux.wait_for("the scores", |s| {
        s.contains("Samples 8/8") && s.contains("+0.833")
    });
    let toml = std::fs::read_to_string(ws.file("rwb.toml")).unwrap();
    ws.write(
        "rwb.toml",
        &toml.replace("group_size = 4", "group_size = 3"),
    );
    tmux.wait_for("the group size warning", |s| {
        s.contains("⚠ [training] group_size = 3, but 2 of 2 groups differ")
    });
    tmux.keys(&["j"]);
    let broken = toml
        .replace(
            "trainer = \"trl\"",
            "trainer = \"trl\"\npyhton = \"python3\"",
        )
        .replace("weight = 0.5", "wieght = 0.5");
    ws.write("rwb.toml", &broken);
    let screen = tmux.wait_for("every problem", |s| {
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        flat.contains("rwb.toml: 2 problems: line 7: pyhton: unknown field `pyhton`: did you mean `python`?; line 15: [evaluators.format_reward] wieght: unknown field `wieght`: did you mean `weight`? (keeping the last good configuration)")
    });
    assert!(
        !screen.contains("rwb.toml: ./rwb.toml"),
        "the file named once: {screen}"
    );
    tmux.keys(&["q"]);
}
