//! `rwb deploy --target cloud-run|k8s` (SPEC §12) against stand-in `gcloud`, `kubectl`
//! and `docker` executables (tests/standins/*.py, written into a folder put first on
//! PATH) that record every call and answer as the real tools do, failures included;
//! and the container's start command run locally with the real rwb binary.

mod common;

use common::{exchange, free_port, Run, Ws, LENGTH_EVALUATOR, RWB};
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const GCLOUD: &str = include_str!("standins/gcloud.py");
const KUBECTL: &str = include_str!("standins/kubectl.py");
const DOCKER: &str = include_str!("standins/docker.py");

/// A folder of stand-in tools and the folder they record into.
struct Tools {
    bin: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Tools {
    /// Stand-ins for `names` (gcloud, kubectl, docker); the others are not installed.
    fn new(names: &[&str]) -> Tools {
        let tools = Tools {
            bin: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        for name in names {
            let text = match *name {
                "gcloud" => GCLOUD,
                "kubectl" => KUBECTL,
                _ => DOCKER,
            };
            let path = tools.bin.path().join(name);
            std::fs::write(&path, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        tools
    }

    /// `rwb deploy ARGS` with the stand-ins first on PATH (`mode` picks a failure).
    fn deploy(&self, ws: &Ws, args: &[&str], mode: &str, env: &[(&str, &str)]) -> Run {
        let path = format!(
            "{}:{}",
            self.bin.path().display(),
            std::env::var("PATH").unwrap()
        );
        let mut cmd = Command::new(RWB);
        cmd.arg("deploy")
            .arg(ws.path())
            .args(args)
            .current_dir(ws.path())
            .env("PATH", path)
            .env("STANDIN_DIR", self.state.path())
            .env("STANDIN_MODE", mode)
            .env("NO_PROXY", "*");
        for var in [
            "VIRTUAL_ENV",
            "RK_ENDPOINT_API_KEY",
            "FIREWORKS_API_KEY",
            "FIREWORKS_ACCOUNT_ID",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(common::output_within(&mut cmd, common::RUN_LIMIT))
    }

    /// Every recorded call, one per line; a `--data-file`/`--from-file` temporary path
    /// is shown as TMP.
    fn calls(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.state.path().join("calls.log")).unwrap_or_default();
        let tmp = regex::Regex::new(r"(--data-file |--from-file=api-key=)\S+").unwrap();
        log.lines()
            .map(|l| tmp.replace(l, "${1}TMP").into_owned())
            .collect()
    }

    fn recorded(&self, name: &str) -> String {
        std::fs::read_to_string(self.state.path().join(name)).unwrap_or_default()
    }
}

fn workspace() -> Ws {
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("metrics/length/requirements.txt", "regex>=2024.1\n"),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"word word\"}]}\n",
        ),
    ])
}

fn show(run: &Run) -> String {
    format!(
        "exit {}\nstdout: {}\nstderr: {}",
        run.code, run.stdout, run.stderr
    )
}

const IMAGE: &str = "us-central1-docker.pkg.dev/proj-1/reward-kit-evaluators/svc:latest";
const CLOUD_RUN: [&str; 8] = [
    "--target",
    "cloud-run",
    "--id",
    "svc",
    "--gcp-project",
    "proj-1",
    "--gcp-region",
    "us-central1",
];

/// The calls of a first deploy (repository and secret both missing), SPEC §12 in
/// reward-kit 0.4.1's argument order.
fn first_deploy_calls(ws: &Ws) -> Vec<String> {
    let context = ws.path().join(".rwb/build/svc");
    vec![
        "gcloud artifacts repositories describe reward-kit-evaluators --project proj-1 --location us-central1".into(),
        "gcloud artifacts repositories create reward-kit-evaluators --project proj-1 --repository-format docker --location us-central1 --description Repository for reward-kit evaluators (created by rwb deploy)".into(),
        format!("gcloud builds submit {} --tag {IMAGE} --project proj-1", context.display()),
        "gcloud secrets describe rk-eval-svc-authkey --project proj-1".into(),
        "gcloud secrets create rk-eval-svc-authkey --project proj-1 --replication-policy automatic --labels managed-by=rwb,evaluator-id=svc".into(),
        "gcloud secrets versions add rk-eval-svc-authkey --project proj-1 --data-file TMP".into(),
        "gcloud secrets versions describe latest --secret rk-eval-svc-authkey --project proj-1 --format value(name)".into(),
        format!("gcloud run deploy svc --image {IMAGE} --region us-central1 --project proj-1 --port 8080 --allow-unauthenticated --update-secrets RK_ENDPOINT_API_KEY=rk-eval-svc-authkey:1"),
        "gcloud run services describe svc --region us-central1 --project proj-1 --format value(status.url)".into(),
    ]
}

#[test]
fn cloud_run_makes_reward_kits_gcloud_calls_and_prints_the_url() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let run = tools.deploy(
        &ws,
        &CLOUD_RUN,
        "",
        &[("RK_ENDPOINT_API_KEY", "given-key-1")],
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_eq!(run.stdout, "https://svc-abc123-uc.a.run.app\n");
    assert_eq!(tools.calls(), first_deploy_calls(&ws));
    // the key went into Secret Manager as given, and is not printed
    assert_eq!(tools.recorded("secret-value"), "given-key-1");
    assert!(!run.stderr.contains("given-key-1"), "{}", run.stderr);
    // the build context gcloud uploaded: the generated Dockerfile with the requirements
    let dockerfile = tools.recorded("Dockerfile");
    assert!(
        dockerfile.contains("FROM python:3.11-slim\n"),
        "{dockerfile}"
    );
    assert!(dockerfile.contains("RUN pip install --no-cache-dir -r /tmp/rwb-requirements.txt\n"));
    let context = ws.path().join(".rwb/build/svc");
    assert_eq!(
        std::fs::read_to_string(context.join("requirements.txt")).unwrap(),
        "regex>=2024.1\n"
    );
    assert!(context.join("workspace/metrics/length/main.py").is_file());
    assert_eq!(
        std::fs::read(context.join("rwb")).unwrap().len(),
        std::fs::read(RWB).unwrap().len()
    );
}

#[test]
fn a_second_deploy_reuses_the_repository_and_secret_and_a_generated_key_is_shown_once() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    assert_eq!(tools.deploy(&ws, &CLOUD_RUN, "", &[]).code, 0);
    let first_key = tools.recorded("secret-value");
    assert_eq!(
        first_key.len(),
        43,
        "a generated key: 32 random bytes, base64"
    );
    std::fs::remove_file(tools.state.path().join("calls.log")).unwrap();
    let run = tools.deploy(&ws, &CLOUD_RUN, "", &[]);
    assert_eq!(run.code, 0, "{}", show(&run));
    let second_key = tools.recorded("secret-value");
    assert_ne!(second_key, first_key);
    let calls = tools.calls();
    let expected: Vec<String> = first_deploy_calls(&ws)
        .into_iter()
        .filter(|c| !c.contains(" create "))
        .map(|c| c.replace("rk-eval-svc-authkey:1", "rk-eval-svc-authkey:2"))
        .collect();
    assert_eq!(calls, expected);
    let shown: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains(&second_key))
        .collect();
    assert_eq!(shown, [format!("rwb deploy: endpoint key (send it as X-Api-Key; shown once, kept in Secret Manager secret rk-eval-svc-authkey: `gcloud secrets versions access latest --secret rk-eval-svc-authkey --project proj-1`): {second_key}")]);
}

#[test]
fn no_auth_stores_no_secret_and_warns() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let mut args = CLOUD_RUN.to_vec();
    args.extend(["--no-auth", "--gcp-ar-repo", "my-repo"]);
    let run = tools.deploy(&ws, &args, "", &[("RK_ENDPOINT_API_KEY", "unused")]);
    assert_eq!(run.code, 0, "{}", show(&run));
    let image = "us-central1-docker.pkg.dev/proj-1/my-repo/svc:latest";
    assert_eq!(
        tools.calls(),
        [
            "gcloud artifacts repositories describe my-repo --project proj-1 --location us-central1".to_string(),
            "gcloud artifacts repositories create my-repo --project proj-1 --repository-format docker --location us-central1 --description Repository for reward-kit evaluators (created by rwb deploy)".into(),
            format!("gcloud builds submit {} --tag {image} --project proj-1", ws.path().join(".rwb/build/svc").display()),
            format!("gcloud run deploy svc --image {image} --region us-central1 --project proj-1 --port 8080 --allow-unauthenticated"),
            "gcloud run services describe svc --region us-central1 --project proj-1 --format value(status.url)".into(),
        ]
    );
    assert!(run.stderr.contains("rwb deploy: warning: the service runs without a key: anyone who finds its URL can run your evaluators (drop --no-auth to require RK_ENDPOINT_API_KEY)\n"), "{}", run.stderr);
}

#[test]
fn each_gcloud_failure_says_what_to_do_and_stops_there() {
    let cases = [
        ("no-project", 1, "rwb: deploy failed: GCP project 'proj-1' does not exist or your account cannot see it: check --gcp-project (`gcloud projects list` shows yours). gcloud said: ERROR: (gcloud.artifacts.repositories.describe) NOT_FOUND: Project 'proj-1' not found or deleted.\n"),
        ("denied", 1, "rwb: deploy failed: permission denied while checking the Artifact Registry repository in project 'proj-1': your gcloud account needs roles/artifactregistry.admin (ask a project owner) or another account (`gcloud auth login`). gcloud said: ERROR: (gcloud.artifacts.repositories.describe) PERMISSION_DENIED: Permission 'artifactregistry.repositories.get' denied on resource '//artifactregistry.googleapis.com/projects/proj-1/locations/us-central1/repositories/reward-kit-evaluators' (or it may not exist).\n"),
        ("build-fails", 3, "rwb: deploy failed: the image build failed: read the Cloud Build log (often a requirement that does not install: check the metric folders' requirements.txt), fix it and deploy again; the build context is CTX. gcloud said: ERROR: (gcloud.builds.submit) build 5f3c2a1e completed with status \"FAILURE\"\n"),
        ("disabled", 3, "rwb: deploy failed: the API for building the image with Cloud Build is not enabled in project 'proj-1': run `gcloud services enable cloudbuild.googleapis.com --project proj-1`, then deploy again. gcloud said: ERROR: (gcloud.builds.submit) FAILED_PRECONDITION: Cloud Build API has not been used in project proj-1 before or it is disabled. SERVICE_DISABLED\n"),
    ];
    for (mode, calls, message) in cases {
        let ws = workspace();
        let tools = Tools::new(&["gcloud"]);
        let run = tools.deploy(&ws, &CLOUD_RUN, mode, &[]);
        assert_eq!(run.code, 1, "{mode}: {}", show(&run));
        let message = message.replace(
            "CTX",
            &ws.path().join(".rwb/build/svc").display().to_string(),
        );
        assert!(run.stderr.ends_with(&message), "{mode}: {}", run.stderr);
        assert_eq!(tools.calls().len(), calls, "{mode}: {:?}", tools.calls());
        assert_eq!(run.stdout, "");
    }
}

#[test]
fn missing_gcloud_and_missing_flags_are_reported_before_anything_runs() {
    let ws = workspace();
    let tools = Tools::new(&[]);
    let mut cmd = Command::new(RWB);
    cmd.args(["deploy", ws.path().to_str().unwrap()])
        .args(CLOUD_RUN)
        .env("PATH", tools.bin.path());
    let run = Run::from(common::output_within(&mut cmd, common::RUN_LIMIT));
    assert_eq!(run.code, 1, "{}", show(&run));
    assert!(run.stderr.ends_with("rwb: deploy failed: gcloud is not installed or not on PATH (No such file or directory (os error 2)): install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install), then run `gcloud auth login`\n"), "{}", run.stderr);

    let tools = Tools::new(&["gcloud"]);
    let run = tools.deploy(
        &ws,
        &["--target", "cloud-run", "--id", "svc", "--gcp-region", "r"],
        "",
        &[],
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "rwb: Cloud Run needs --gcp-project: give it (or set gcp_project under [deploy] in rwb.toml)\n");
    let run = tools.deploy(
        &ws,
        &[
            "--target",
            "cloud-run",
            "--id",
            "My_Svc",
            "--gcp-project",
            "p",
            "--gcp-region",
            "r",
        ],
        "",
        &[],
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "rwb: id 'My_Svc' cannot name a service: give lowercase letters, digits and hyphens, starting with a letter, at most 49 characters (for example --id my-evaluator)\n");
    // a flag of another target is an error, not silently ignored
    let run = tools.deploy(
        &ws,
        &["--target", "k8s", "--id", "svc", "--gcp-project", "p"],
        "",
        &[],
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "rwb: --gcp-project is for --target cloud-run, not --target k8s: drop it or change the target\n");
    let run = tools.deploy(&ws, &["--id", "svc", "--no-auth"], "", &[]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "rwb: --no-auth is for --target cloud-run or --target k8s, not --target fireworks: drop it or change the target\n");
    assert_eq!(tools.calls(), Vec::<String>::new());
}

/// A stand-in Fireworks API on 127.0.0.1 that records the bodies it is sent.
fn fireworks_stand_in() -> (String, Arc<Mutex<Vec<Value>>>, common::Loopback) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: axum::body::Bytes| {
        let record = record.clone();
        async move {
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            record.lock().unwrap().push(json!({"path": uri.path(), "body": body}));
            axum::Json(json!({"name": format!("accounts/acct-1/evaluators/{}", body["evaluatorId"].as_str().unwrap_or("?"))}))
        }
    });
    let server = common::Loopback::serve(app);
    (server.base(), seen, server)
}

#[test]
fn register_puts_a_remote_url_evaluator_with_the_key_in_front_of_the_service() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let (base, seen, _server) = fireworks_stand_in();
    let mut args = CLOUD_RUN.to_vec();
    args.push("--register");
    let env = [
        ("RK_ENDPOINT_API_KEY", "given-key-2"),
        ("FIREWORKS_API_BASE", base.as_str()),
        ("FIREWORKS_API_KEY", "fw-key"),
        ("FIREWORKS_ACCOUNT_ID", "acct-1"),
    ];
    let run = tools.deploy(&ws, &args, "", &env);
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(
        run.stderr
            .contains("rwb deploy: registered accounts/acct-1/evaluators/svc on Fireworks\n"),
        "{}",
        run.stderr
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["path"], "/v1/accounts/acct-1/evaluators");
    let body = &seen[0]["body"];
    assert_eq!(body["evaluatorId"], "svc");
    assert_eq!(
        body["evaluator"]["description"],
        "Cloud Run service https://svc-abc123-uc.a.run.app"
    );
    let criterion = &body["evaluator"]["criteria"][0];
    assert_eq!(criterion["name"], "remote_eval_proxy");
    let main = criterion["codeSnippets"]["fileContents"]["main.py"]
        .as_str()
        .unwrap();
    assert!(
        main.contains("https://svc-abc123-uc.a.run.app/evaluate"),
        "{main}"
    );
    assert!(main.contains("given-key-2"), "{main}");
    assert_eq!(tools.calls().len(), 9);
}

#[test]
fn register_without_fireworks_credentials_stops_before_any_gcloud_call() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let home = tempfile::tempdir().unwrap();
    let mut args = CLOUD_RUN.to_vec();
    args.push("--register");
    let run = tools.deploy(&ws, &args, "", &[("HOME", home.path().to_str().unwrap())]);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(run.stderr.contains("FIREWORKS_API_KEY"), "{}", run.stderr);
    assert_eq!(tools.calls(), Vec::<String>::new());
}

/// The manifests of `deploy/k8s/svc.yaml`, parsed back.
fn manifests(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| {
            let yaml = serde_yaml_ng::Value::deserialize(doc).unwrap();
            serde_json::to_value(yaml).unwrap()
        })
        .collect()
}

#[test]
fn k8s_writes_the_manifests_and_applies_them_with_the_key_in_a_secret() {
    let ws = workspace();
    let tools = Tools::new(&["kubectl", "docker"]);
    let args = [
        "--target",
        "k8s",
        "--id",
        "svc",
        "--namespace",
        "evals",
        "--image",
        IMAGE,
        "--apply",
    ];
    let run = tools.deploy(&ws, &args, "", &[("RK_ENDPOINT_API_KEY", "given-key-3")]);
    assert_eq!(run.code, 0, "{}", show(&run));
    let file = ws.path().join("deploy/k8s/svc.yaml");
    assert_eq!(run.stdout, format!("{}\n", file.display()));
    assert_eq!(
        tools.calls(),
        [
            "kubectl get secret rwb-svc-key --namespace evals".to_string(),
            "kubectl create secret generic rwb-svc-key --namespace evals --from-file=api-key=TMP"
                .into(),
            format!("kubectl apply -f {}", file.display()),
        ]
    );
    assert_eq!(tools.recorded("secret-value"), "given-key-3");
    assert_eq!(
        tools.recorded("applied.yaml"),
        std::fs::read_to_string(&file).unwrap()
    );

    let docs = manifests(&file);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Deployment", "Service", "HorizontalPodAutoscaler"]);
    for doc in &docs {
        assert_eq!(doc["metadata"]["name"], "svc");
        assert_eq!(doc["metadata"]["namespace"], "evals");
    }
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], IMAGE);
    assert_eq!(
        container["ports"],
        json!([{"name": "http", "containerPort": 8080}])
    );
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(
            container[probe]["httpGet"],
            json!({"path": "/health", "port": "http"})
        );
    }
    assert_eq!(
        container["env"],
        json!([
            {"name": "PORT", "value": "8080"},
            {"name": "RK_ENDPOINT_API_KEY", "valueFrom": {"secretKeyRef": {"name": "rwb-svc-key", "key": "api-key"}}}
        ])
    );
    assert_eq!(
        docs[1]["spec"]["ports"],
        json!([{"name": "http", "port": 80, "targetPort": "http"}])
    );
    assert_eq!(
        docs[2]["spec"]["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "svc"})
    );
    assert_eq!(docs[2]["spec"]["minReplicas"], 1);
    assert_eq!(docs[2]["spec"]["maxReplicas"], 5);
}

#[test]
fn k8s_without_an_image_builds_one_with_docker_and_without_apply_only_writes() {
    let ws = workspace();
    let tools = Tools::new(&["kubectl", "docker"]);
    let run = tools.deploy(&ws, &["--target", "k8s", "--id", "svc"], "", &[]);
    assert_eq!(run.code, 0, "{}", show(&run));
    let context = ws.path().join(".rwb/build/svc");
    assert_eq!(
        tools.calls(),
        [format!(
            "docker build --tag rwb-svc:latest {}",
            context.display()
        )]
    );
    let docs = manifests(&ws.path().join("deploy/k8s/svc.yaml"));
    assert_eq!(docs[0]["metadata"]["namespace"], "default");
    assert_eq!(
        docs[0]["spec"]["template"]["spec"]["containers"][0]["image"],
        "rwb-svc:latest"
    );
    let path = ws.path().join("deploy/k8s/svc.yaml");
    assert!(
        run.stderr.contains(&format!(
            "rwb deploy: apply it with `kubectl apply -f {}` (or run again with --apply)\n",
            path.display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn each_k8s_failure_says_what_to_do() {
    let apply = [
        "--target", "k8s", "--id", "svc", "--image", "img:1", "--apply",
    ];
    let cases: [(&[&str], &str, &[&str], &str); 5] = [
        (&["--target", "k8s", "--id", "svc"], "build-fails", &["kubectl", "docker"], "rwb: deploy failed: the image build failed: fix the step docker names (often a requirement that does not install: check the metric folders' requirements.txt) and deploy again; the build context is CTX. docker said: ERROR: failed to solve: process \"/bin/sh -c pip install --no-cache-dir -r /tmp/rwb-requirements.txt\" did not complete successfully: exit code: 1\n"),
        (&apply, "no-cluster", &["kubectl"], "rwb: deploy failed: kubectl cannot reach a cluster: check `kubectl config current-context` and that the cluster is up. kubectl said: The connection to the server localhost:8080 was refused - did you specify the right host or port?\n"),
        (&apply, "forbidden", &["kubectl"], "permission denied in namespace 'default': your kubectl user may not create these objects there (ask for a role that may, or give --namespace). kubectl said: Error from server (Forbidden): error when creating \"FILE\": deployments.apps is forbidden: User \"dev\" cannot create resource \"deployments\" in API group \"apps\" in the namespace \"default\"\n"),
        (&apply, "no-namespace", &["kubectl"], "rwb: deploy failed: namespace 'default' does not exist: create it (`kubectl create namespace default`) or give --namespace. kubectl said: error: failed to create secret namespaces \"default\" not found\n"),
        (&apply, "", &[], "rwb: deploy failed: kubectl is not installed or not on PATH (No such file or directory (os error 2)): install kubectl (https://kubernetes.io/docs/tasks/tools/) and point it at your cluster (`kubectl config use-context NAME`)\n"),
    ];
    for (args, mode, installed, message) in cases {
        let ws = workspace();
        let tools = Tools::new(installed);
        let run = if installed.is_empty() {
            let mut cmd = Command::new(RWB);
            cmd.args(["deploy", ws.path().to_str().unwrap()])
                .args(args)
                .env("PATH", tools.bin.path());
            Run::from(common::output_within(&mut cmd, common::RUN_LIMIT))
        } else {
            tools.deploy(&ws, args, mode, &[])
        };
        assert_eq!(run.code, 1, "{mode}: {}", show(&run));
        let message = message
            .replace(
                "CTX",
                &ws.path().join(".rwb/build/svc").display().to_string(),
            )
            .replace(
                "FILE",
                &ws.path().join("deploy/k8s/svc.yaml").display().to_string(),
            );
        assert!(run.stderr.ends_with(&message), "{mode}: {}", run.stderr);
    }
}

/// Waits until something listens on `port`.
fn wait_for_port(port: u16, child: &mut std::process::Child) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the start command exited: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn request(port: u16, method: &str, path: &str, auth: Option<&str>, body: &str) -> (u16, Value) {
    let auth = auth.map(|h| format!("{h}\r\n")).unwrap_or_default();
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, body) = exchange(&format!("http://127.0.0.1:{port}"), &text);
    let body = body.trim();
    // a chunked body: the JSON is the line between the chunk sizes
    let json = body.lines().find(|l| l.starts_with('{')).unwrap_or(body);
    (
        status,
        serde_json::from_str(json).unwrap_or(Value::String(body.into())),
    )
}

#[test]
fn the_containers_start_command_serves_the_workspace_locally_with_the_key() {
    let ws = workspace();
    let tools = Tools::new(&["docker"]);
    assert_eq!(
        tools
            .deploy(&ws, &["--target", "k8s", "--id", "svc"], "", &[])
            .code,
        0
    );
    let context: PathBuf = ws.path().join(".rwb/build/svc");
    let dockerfile = std::fs::read_to_string(context.join("Dockerfile")).unwrap();
    let cmd_line = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("CMD "))
        .unwrap();
    let argv: Vec<String> = serde_json::from_str(cmd_line).unwrap();
    assert_eq!(argv[..2], ["sh", "-c"]);
    assert_eq!(
        dockerfile.lines().find(|l| l.starts_with("WORKDIR")),
        Some("WORKDIR /workspace")
    );

    let port = free_port();
    let path = format!("{}:{}", context.display(), std::env::var("PATH").unwrap());
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(context.join("workspace"))
        .env("PATH", path)
        .env("PORT", port.to_string())
        .env("RK_ENDPOINT_API_KEY", "local-key")
        .env_remove("VIRTUAL_ENV")
        .spawn()
        .unwrap();
    wait_for_port(port, &mut child);
    let sample = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "word word"}]}"#;
    let results = [
        request(port, "GET", "/health", Some("X-Api-Key: local-key"), ""),
        request(port, "GET", "/health", None, ""),
        request(
            port,
            "POST",
            "/evaluate/length",
            Some("X-Api-Key: local-key"),
            sample,
        ),
        request(
            port,
            "POST",
            "/evaluate/length",
            Some("Authorization: Bearer local-key"),
            sample,
        ),
        request(port, "POST", "/evaluate/length", None, sample),
        request(
            port,
            "POST",
            "/evaluate/length",
            Some("X-Api-Key: wrong"),
            sample,
        ),
    ];
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(results[0].0, 200);
    assert_eq!(results[0].1["status"], "ok");
    assert_eq!(results[0].1["reward_function"], "length");
    assert_eq!(results[1], (200, json!({"status": "ok"})));
    for answer in &results[2..4] {
        assert_eq!(answer.0, 200, "{answer:?}");
        assert_eq!(answer.1["score"], 0.09);
        assert_eq!(answer.1["reason"], "9 chars");
    }
    assert_eq!(results[4].0, 401);
    assert_eq!(results[5].0, 403);
}

#[test]
fn the_workbench_deploys_to_cloud_run_from_the_keyboard() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let command = format!(
        "PATH={}:{} STANDIN_DIR={} {RWB}",
        tools.bin.path().display(),
        std::env::var("PATH").unwrap(),
        tools.state.path().display()
    );
    let tmux = common::Tmux::start(&ws, 150, 40, &command);
    tmux.wait_for("the scores", |s| s.contains("0.090"));
    tmux.key("d");
    tmux.key("Right");
    tmux.wait_for("the Cloud Run dialog", |s| {
        s.contains("Deploy to Cloud Run") && s.contains("GCP project")
    });
    for _ in 0..40 {
        tmux.key("BSpace");
    }
    for c in ["s", "v", "c", "Tab", "p", "1", "Enter"] {
        tmux.key(c);
    }
    let screen = tmux.wait_for("the service URL in the ship panel", |s| {
        s.contains("deployed to Cloud Run: https://svc-abc123-uc.a.run.app")
    });
    assert!(screen.contains("deploy: endpoint key"), "{screen}");
    tmux.key("q");
    let calls = tools.calls();
    assert_eq!(calls.len(), 9, "{calls:?}");
    assert_eq!(
        calls[8],
        "gcloud run services describe svc --region us-central1 --project p1 --format value(status.url)"
    );
}

/// The version in production: the length evaluator scoring against 50 characters, so
/// its scores differ from the local ones.
const DEPLOYED_LENGTH: &str = r#"
from reward_kit import reward_function, EvaluateResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = len(messages[-1]["content"])
    return EvaluateResult(score=min(n / 50.0, 1.0), reason=f"{n} chars of 50")
"#;

#[test]
fn the_workbench_scores_the_deployed_service_as_a_live_column() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    // the deployed service: a real rwb serve on loopback that requires the key
    let key = "deploy-key-5c1e9";
    let deployed = Ws::new(&[
        ("metrics/length/main.py", DEPLOYED_LENGTH),
        ("samples.jsonl", ""),
    ]);
    let port = free_port();
    let mut service = Command::new(RWB)
        .args(["serve", deployed.path().to_str().unwrap()])
        .args(["--port", &port.to_string()])
        .env("RK_ENDPOINT_API_KEY", key)
        .env_remove("VIRTUAL_ENV")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_port(port, &mut service);
    let command = format!(
        "PATH={}:{} STANDIN_DIR={} STANDIN_URL=http://127.0.0.1:{port} RK_ENDPOINT_API_KEY={key} {RWB}",
        tools.bin.path().display(),
        std::env::var("PATH").unwrap(),
        tools.state.path().display()
    );
    let tmux = common::Tmux::start(&ws, 150, 40, &command);
    tmux.wait_for("the scores", |s| s.contains("0.090"));
    tmux.key("d");
    tmux.key("Right");
    tmux.wait_for("the Cloud Run dialog", |s| s.contains("GCP project"));
    for _ in 0..40 {
        tmux.key("BSpace");
    }
    for c in ["s", "v", "c", "Tab", "p", "1", "Enter"] {
        tmux.key(c);
    }
    tmux.wait_for("the new column announced", |s| {
        s.contains("column length@cloud-run")
    });
    tmux.key("Escape");
    // the served score (9 chars of 50) beside the local one (9 of 100)
    let screen = tmux.wait_for("the served score in the column", |s| {
        s.contains("0.090") && s.contains("0.180")
    });
    assert!(screen.contains("length@cloud-run"), "{screen}");
    assert!(!screen.contains(key), "the key is on screen:\n{screen}");
    // D on the column drops it
    tmux.key("l");
    tmux.key("D");
    let screen = tmux.wait_for("the column dropped", |s| {
        s.contains("dropped the column length@cloud-run")
    });
    assert!(!screen.contains("0.180"), "{screen}");
    tmux.key("q");
    let _ = service.kill();
    let _ = service.wait();
}

#[test]
fn a_service_url_in_clear_text_is_refused_unless_it_is_this_machine() {
    let ws = workspace();
    let tools = Tools::new(&["gcloud"]);
    let run = tools.deploy(
        &ws,
        &CLOUD_RUN,
        "",
        &[("STANDIN_URL", "http://svc.example.com")],
    );
    assert_eq!(run.code, 1, "{}", show(&run));
    assert!(run.stderr.ends_with("rwb: deploy failed: Cloud Run deployed svc but its URL is 'http://svc.example.com', not https://: check the service with `gcloud run services describe svc --region us-central1 --project proj-1`\n"), "{}", run.stderr);
    // a stand-in on loopback (no key crosses the network) is taken as it is
    let run = tools.deploy(
        &ws,
        &CLOUD_RUN,
        "",
        &[("STANDIN_URL", "http://127.0.0.1:8123")],
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(
        run.stdout.contains("http://127.0.0.1:8123"),
        "{}",
        show(&run)
    );
}
