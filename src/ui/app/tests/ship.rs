//! The ship panel: deploy dialog, tunnel URL, remote evaluators and their scores.

use super::*;

#[test]
fn the_deploy_dialog_edits_and_confirms_and_ship_keys_work_in_the_ship_panel() {
    let mut app = app();
    app.ship.default_id = "proposed".into();
    app.update(key('d'));
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.id == "proposed"));
    for _ in 0.."proposed".len() {
        app.update(code(KeyCode::Backspace));
    }
    for c in "mine".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    for c in "My Judge".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    app.update(key(' '));
    let effects = app.update(code(KeyCode::Enter));
    assert_eq!(
        effects,
        vec![Effect::Deploy {
            id: "mine".into(),
            display_name: "My Judge".into(),
            force: true
        }]
    );
    assert_eq!(
        app.overlay,
        Overlay::Ship,
        "progress shows in the ship panel"
    );
    assert_eq!(
        app.update(key('p')),
        vec![Effect::CompareRemote],
        "ship keys act inside the panel"
    );
    assert_eq!(app.overlay, Overlay::Ship);
    app.update(key('j'));
    assert_eq!(app.overlay, Overlay::None, "other keys close it");
    app.update(key('d'));
    app.update(code(KeyCode::Esc));
    assert_eq!(app.overlay, Overlay::None, "Esc cancels the dialog");
}

#[test]
fn copy_takes_the_tunnel_url_with_its_generated_key() {
    let mut app = app();
    app.update(Msg::Ship(ShipMsg::Serving(Some(
        "http://127.0.0.1:8001".into(),
    ))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("http://127.0.0.1:8001".into())]
    );
    app.update(Msg::Ship(ShipMsg::Tunnel(Some(
        "https://a.serveo.net".into(),
    ))));
    app.update(Msg::Ship(ShipMsg::TunnelKey(Some(TunnelKey::Generated(
        "k3y".into(),
    )))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("https://a.serveo.net\nX-Api-Key: k3y".into())]
    );
    assert_eq!(
        app.notice.as_deref(),
        Some("copied https://a.serveo.net and its key")
    );
    // a key from the environment is the user's own: not copied
    app.update(Msg::Ship(ShipMsg::TunnelKey(Some(TunnelKey::FromEnv))));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::Copy("https://a.serveo.net".into())]
    );
}

#[test]
fn remote_scores_mark_differences_and_filter() {
    let mut app = app();
    let scores = app
        .samples
        .iter()
        .map(|s| {
            (
                s.hash,
                "a".to_string(),
                Some(if s.at.index == 2 {
                    0.9
                } else {
                    s.at.index as f64 / 10.0
                }),
            )
        })
        .collect();
    app.update(Msg::Ship(ShipMsg::Remote {
        source: "http://x".into(),
        scores,
    }));
    assert_eq!(app.remote_differs(&app.samples[2].clone(), 0), Some(true));
    assert_eq!(app.remote_differs(&app.samples[1].clone(), 0), Some(false));
    assert_eq!(
        app.remote_differs(&app.samples[1].clone(), 1),
        None,
        "no remote score for b"
    );
    assert!(app
        .ship
        .log
        .last()
        .unwrap()
        .contains("1 of 5 samples differ"));
    app.set_filter("remote".into());
    assert_eq!(app.view, vec![2]);
}

#[test]
fn the_deploy_dialog_chooses_cloud_run_or_kubernetes_with_the_arrows() {
    use crate::ui::deploy_target::{Target, TargetRequest};
    let mut app = app();
    app.ship.default_id = "svc".into();
    app.update(key('d'));
    app.update(code(KeyCode::Right));
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.targets.target == Target::CloudRun));
    // Enter without a project stays in the dialog and says what is missing
    assert_eq!(app.update(code(KeyCode::Enter)), vec![]);
    assert!(
        matches!(&app.overlay, Overlay::Deploy(f) if f.targets.problem.as_deref() == Some("give the GCP project"))
    );
    app.update(code(KeyCode::Tab));
    for c in "proj-1".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Tab));
    app.update(code(KeyCode::Tab));
    app.update(key(' '));
    let cloud_run = TargetRequest {
        target: Target::CloudRun,
        id: "svc".into(),
        gcp_project: "proj-1".into(),
        gcp_region: "us-central1".into(),
        register: true,
        namespace: "default".into(),
        image: None,
        apply: false,
    };
    assert_eq!(
        app.update(code(KeyCode::Enter)),
        vec![Effect::DeployTarget(cloud_run)]
    );
    assert_eq!(
        app.overlay,
        Overlay::Ship,
        "progress shows in the ship panel"
    );

    app.update(key('d'));
    // ← from Fireworks: the two export targets (SPEC §21), then Kubernetes
    for _ in 0..3 {
        app.update(code(KeyCode::Left));
    }
    assert!(matches!(&app.overlay, Overlay::Deploy(f) if f.targets.target == Target::K8s));
    for _ in 0..3 {
        app.update(code(KeyCode::Tab));
    }
    app.update(key(' '));
    let Some(Effect::DeployTarget(request)) = app.update(code(KeyCode::Enter)).pop() else {
        panic!("Enter deploys to Kubernetes");
    };
    assert_eq!(
        (
            request.target,
            request.namespace.as_str(),
            request.image,
            request.apply
        ),
        (Target::K8s, "default", None, true)
    );
}

#[test]
fn a_remote_evaluator_has_no_file_to_edit_and_keeps_its_outcomes_whole() {
    use crate::model::Placement;
    let mut app = app();
    app.store_details = true;
    let placed = |name, placement| EvaluatorInfo {
        style: Some(Style::RewardKit),
        placement: Some(placement),
        ..info(name)
    };
    let url = "http://127.0.0.1:8001/evaluate";
    app.update(Msg::Evaluators(vec![
        placed(
            "a",
            Placement::Local {
                workers: 2,
                concurrency: 1,
                contained: None,
            },
        ),
        placed("b", Placement::Remote { url: url.into() }),
    ]));
    for evaluator in 0..2 {
        app.update(result(
            evaluator,
            3,
            Box::new(Outcome::scored(0.5, Map::new())),
        ));
    }
    let whole = |app: &App, e: usize| {
        app.samples[3].cells[e]
            .outcome
            .as_ref()
            .unwrap()
            .full
            .is_some()
    };
    // a local result is read back from the store on selection; a remote one never is
    assert_eq!((whole(&app, 0), whole(&app, 1)), (false, true));

    app.update(key('l'));
    assert_eq!(app.update(key('e')), vec![]);
    assert_eq!(
        app.notice.as_deref(),
        Some("b runs at http://127.0.0.1:8001/evaluate: there is no file to edit here (edit it where it is deployed)")
    );
    app.update(key('h'));
    assert_eq!(
        app.update(key('e')),
        vec![Effect::Edit {
            file: PathBuf::from("metrics/a/main.py"),
            line: None
        }]
    );
}
