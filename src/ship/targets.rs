//! The deploy targets beside Fireworks (SPEC §12), from a workspace's evaluators to a
//! running service: the build context, Cloud Run (optionally registered on Fireworks as
//! a `--remote-url` evaluator) and Kubernetes. `rwb deploy` and the workbench's `d`
//! both call these, so a deploy from the keyboard is the one from the command line.

use super::cloud_run::{self, CloudRunRequest};
use super::container;
use super::fireworks::{self, Code, Credentials, DeployRequest, EvaluatorPayload};
use super::k8s::{self, K8sRequest};
use crate::model::EvaluatorSpec;
use std::path::{Path, PathBuf};

/// A failure before anything was deployed because the input is wrong (exit 2), or
/// while deploying (exit 1). Both say what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    Usage(String),
    Failed(String),
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Usage(m) | TargetError::Failed(m) => f.write_str(m),
        }
    }
}

/// The endpoint key of a service: given (`RK_ENDPOINT_API_KEY`), generated for it, or
/// none (`--no-auth`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceKey {
    Given(String),
    Generated(String),
    Off,
}

impl ServiceKey {
    /// `given` when not empty, else a new key, unless `no_auth`.
    pub fn choose(given: Option<String>, no_auth: bool) -> Result<ServiceKey, TargetError> {
        if no_auth {
            return Ok(ServiceKey::Off);
        }
        match given.filter(|k| !k.trim().is_empty()) {
            Some(key) => Ok(ServiceKey::Given(key)),
            None => super::guard::generate_key()
                .map(ServiceKey::Generated)
                .map_err(TargetError::Failed),
        }
    }

    pub fn value(&self) -> Option<&str> {
        match self {
            ServiceKey::Given(k) | ServiceKey::Generated(k) => Some(k),
            ServiceKey::Off => None,
        }
    }
}

/// What a Cloud Run deploy needs besides the workspace.
#[derive(Clone, Debug)]
pub struct CloudRunOptions {
    pub id: String,
    pub project: String,
    pub region: String,
    pub repo: String,
    pub key: ServiceKey,
    /// Register the service on Fireworks as a remote-url evaluator (with `force`).
    pub register: Option<bool>,
    pub rwb_binary: Option<PathBuf>,
}

/// What a Kubernetes deploy needs besides the workspace.
#[derive(Clone, Debug)]
pub struct K8sOptions {
    pub id: String,
    pub namespace: String,
    /// An image built elsewhere; else rwb builds `rwb-ID:latest` with docker.
    pub image: Option<String>,
    pub apply: bool,
    pub key: ServiceKey,
    pub rwb_binary: Option<PathBuf>,
}

/// The result of a deploy, for the command line and the ship panel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deployed {
    /// The service URL (Cloud Run).
    pub url: Option<String>,
    /// The manifests file (Kubernetes).
    pub file: Option<PathBuf>,
    /// The Fireworks evaluator registered for the URL.
    pub registered: Option<String>,
    /// Lines the user should read (what to do next, where the key is).
    pub notes: Vec<String>,
}

/// Service names on Cloud Run and object names on Kubernetes: lowercase letters,
/// digits and hyphens, starting with a letter, at most 49 characters.
pub fn check_service_id(id: &str) -> Result<(), TargetError> {
    let ok = id.len() <= 49
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && !id.ends_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(TargetError::Usage(format!(
            "id '{id}' cannot name a service: give lowercase letters, digits and hyphens, starting with a letter, at most 49 characters (for example --id my-evaluator)"
        )))
    }
}

/// Writes the build context of the workspace `dir` for service `id`.
fn build_context(
    dir: &Path,
    id: &str,
    evaluators: &[EvaluatorSpec],
    python: &Path,
    rwb_binary: Option<&Path>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<PathBuf, TargetError> {
    let payload = EvaluatorPayload::from_evaluators(evaluators, python)
        .map_err(|e| TargetError::Usage(e.to_string()))?;
    let rwb = container::rwb_binary(rwb_binary).map_err(TargetError::Usage)?;
    let context =
        container::write(dir, id, &payload.requirements, &rwb).map_err(TargetError::Failed)?;
    for warning in &context.warnings {
        progress(&format!("warning: {warning}"));
    }
    progress(&format!(
        "wrote the build context {}",
        context.dir.display()
    ));
    Ok(context.dir)
}

/// Cloud Run: build, store the key, deploy, and with `register` put a Fireworks
/// remote-url evaluator in front of the service.
pub async fn cloud_run(
    dir: &Path,
    evaluators: &[EvaluatorSpec],
    python: &Path,
    options: &CloudRunOptions,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Deployed, TargetError> {
    check_service_id(&options.id)?;
    for (flag, value) in [
        ("--gcp-project", &options.project),
        ("--gcp-region", &options.region),
    ] {
        if value.trim().is_empty() {
            return Err(TargetError::Usage(format!(
                "Cloud Run needs {flag}: give it (or set {} under [deploy] in rwb.toml)",
                flag.trim_start_matches("--").replace('-', "_")
            )));
        }
    }
    // credentials first: a missing key must not cost a build
    let creds = match options.register {
        Some(_) => Some(Credentials::load().map_err(|e| TargetError::Usage(e.to_string()))?),
        None => None,
    };
    let context = build_context(
        dir,
        &options.id,
        evaluators,
        python,
        options.rwb_binary.as_deref(),
        progress,
    )?;
    let request = CloudRunRequest {
        id: options.id.clone(),
        project: options.project.clone(),
        region: options.region.clone(),
        repo: options.repo.clone(),
        key: options.key.value().map(str::to_string),
        context,
    };
    let service = cloud_run::deploy(&request, progress)
        .await
        .map_err(TargetError::Failed)?;
    progress(&format!(
        "Cloud Run service {} answers at {}",
        options.id, service.url
    ));
    let mut deployed = Deployed {
        url: Some(service.url.clone()),
        notes: key_notes(&options.key, service.secret.as_deref(), &options.project),
        ..Deployed::default()
    };
    if let (Some(force), Some(creds)) = (options.register, creds) {
        let request = DeployRequest {
            id: options.id.clone(),
            display_name: None,
            description: Some(format!("Cloud Run service {}", service.url)),
            force,
            code: Code::RemoteUrl {
                url: format!("{}/evaluate", service.url.trim_end_matches('/')),
                api_key: options.key.value().map(str::to_string),
            },
        };
        let result = fireworks::deploy(&creds, &request, progress)
            .await
            .map_err(|e| TargetError::Failed(format!("the service runs at {}, but registering it on Fireworks failed: {e} (run again with --register --force to retry)", service.url)))?;
        deployed.registered = Some(result.name);
    }
    Ok(deployed)
}

fn key_notes(key: &ServiceKey, secret: Option<&str>, project: &str) -> Vec<String> {
    let secret = secret.unwrap_or("?");
    match key {
        ServiceKey::Generated(k) => vec![format!(
            "endpoint key (send it as X-Api-Key; shown once, kept in Secret Manager secret {secret}: `gcloud secrets versions access latest --secret {secret} --project {project}`): {k}"
        )],
        ServiceKey::Given(_) => vec![format!("the service requires RK_ENDPOINT_API_KEY (stored in Secret Manager secret {secret})")],
        ServiceKey::Off => vec![NO_AUTH_WARNING.to_string()],
    }
}

/// What `--no-auth` costs, in one line.
pub const NO_AUTH_WARNING: &str = "warning: the service runs without a key: anyone who finds its URL can run your evaluators (drop --no-auth to require RK_ENDPOINT_API_KEY)";

/// Kubernetes: the image (given, or built with docker), the manifests file, and with
/// `apply` the key's Secret and `kubectl apply -f`.
pub async fn kubernetes(
    dir: &Path,
    evaluators: &[EvaluatorSpec],
    python: &Path,
    options: &K8sOptions,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Deployed, TargetError> {
    check_service_id(&options.id)?;
    let mut notes = Vec::new();
    let image = match &options.image {
        Some(image) => image.clone(),
        None => {
            let context = build_context(
                dir,
                &options.id,
                evaluators,
                python,
                options.rwb_binary.as_deref(),
                progress,
            )?;
            let image = K8sRequest::local_image(&options.id);
            progress(&format!("docker build --tag {image} {}", context.display()));
            k8s::docker_build(&image, &context)
                .await
                .map_err(TargetError::Failed)?;
            notes.push(format!("built {image} locally: a remote cluster needs it in a registry (docker push it and give --image REGISTRY/{image})"));
            image
        }
    };
    let request = K8sRequest {
        id: options.id.clone(),
        namespace: options.namespace.clone(),
        image,
        auth: options.key != ServiceKey::Off,
    };
    let file = k8s::write(dir, &request).map_err(TargetError::Failed)?;
    progress(&format!("wrote {}", file.display()));
    if options.apply {
        let created = k8s::apply(&request, &file, options.key.value(), progress)
            .await
            .map_err(TargetError::Failed)?;
        if let (true, ServiceKey::Generated(k)) = (created, &options.key) {
            notes.push(format!(
                "endpoint key (send it as X-Api-Key; shown once, kept in secret {}): {k}",
                request.secret_name()
            ));
        }
        notes.push(format!("applied: `kubectl get pods --namespace {} -l app.kubernetes.io/name={}` shows the pods", request.namespace, request.id));
    } else {
        if request.auth {
            notes.push(format!("the pods read the key from secret {}: create it (`kubectl create secret generic {} --namespace {} --from-file={}=KEYFILE`)", request.secret_name(), request.secret_name(), request.namespace, k8s::SECRET_KEY));
        }
        notes.push(format!(
            "apply it with `kubectl apply -f {}` (or run again with --apply)",
            file.display()
        ));
    }
    if !request.auth {
        notes.push(NO_AUTH_WARNING.to_string());
    }
    Ok(Deployed {
        file: Some(file),
        notes,
        ..Deployed::default()
    })
}
