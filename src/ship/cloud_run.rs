//! Deploy to Google Cloud Run (SPEC §12) with the gcloud calls reward-kit 0.4.1's
//! `deploy --target gcp-cloud-run` makes, in its order and argument form: the Artifact
//! Registry repository (created when missing), `gcloud builds submit` of the build
//! context, the endpoint key in Secret Manager (unless no auth), `gcloud run deploy`
//! and the service URL.

use super::tool::{self, args, Tool, ToolError};
use regex::Regex;
use std::path::PathBuf;

/// reward-kit's default Artifact Registry repository.
pub const DEFAULT_REPO: &str = "reward-kit-evaluators";

/// What to deploy where.
#[derive(Clone, Debug)]
pub struct CloudRunRequest {
    pub id: String,
    pub project: String,
    pub region: String,
    pub repo: String,
    /// The endpoint key to store in Secret Manager; `None` deploys without one.
    pub key: Option<String>,
    /// The build context (`container::write`).
    pub context: PathBuf,
}

/// A deployed service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudRunService {
    pub url: String,
    pub image: String,
    /// The Secret Manager secret holding the key, when there is one.
    pub secret: Option<String>,
}

/// One step, for messages: what was being done, the API it needs, a role that allows it.
#[derive(Clone, Copy)]
struct Step {
    doing: &'static str,
    api: &'static str,
    role: &'static str,
}

const REPO_STEP: Step = Step {
    doing: "checking the Artifact Registry repository",
    api: "artifactregistry.googleapis.com",
    role: "roles/artifactregistry.admin",
};
const BUILD_STEP: Step = Step {
    doing: "building the image with Cloud Build",
    api: "cloudbuild.googleapis.com",
    role: "roles/cloudbuild.builds.editor",
};
const SECRET_STEP: Step = Step {
    doing: "storing the endpoint key in Secret Manager",
    api: "secretmanager.googleapis.com",
    role: "roles/secretmanager.admin",
};
const RUN_STEP: Step = Step {
    doing: "deploying the Cloud Run service",
    api: "run.googleapis.com",
    role: "roles/run.admin",
};

impl CloudRunRequest {
    /// `R-docker.pkg.dev/P/REPO/ID:latest`.
    pub fn image(&self) -> String {
        format!(
            "{}-docker.pkg.dev/{}/{}/{}:latest",
            self.region, self.project, self.repo, self.id
        )
    }

    /// reward-kit's name for the key's secret: `rk-eval-ID-authkey`, the id kept to
    /// letters, digits, `-` and `_`.
    pub fn secret_name(&self) -> String {
        let clean: String = self
            .id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        let clean = if clean.is_empty() {
            "rewardkit-evaluator".into()
        } else {
            clean
        };
        format!("rk-eval-{clean}-authkey")
    }
}

/// Runs every step, reporting each to `progress`; the first failure stops and is
/// returned as a message that says what to do.
pub async fn deploy(
    request: &CloudRunRequest,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<CloudRunService, String> {
    let image = request.image();
    ensure_repo(request, progress).await?;
    progress(&format!(
        "building {image} with Cloud Build (this takes a few minutes)"
    ));
    let build = args(&["builds", "submit"])
        .into_iter()
        .chain([request.context.display().to_string()])
        .chain(args(&["--tag", &image, "--project", &request.project]))
        .collect::<Vec<_>>();
    gcloud(&build, request, BUILD_STEP).await?;
    let secret = match &request.key {
        Some(key) => Some(store_key(request, key, progress).await?),
        None => None,
    };
    progress(&format!("deploying Cloud Run service {}", request.id));
    let mut run = args(&[
        "run",
        "deploy",
        &request.id,
        "--image",
        &image,
        "--region",
        &request.region,
        "--project",
        &request.project,
        "--port",
        "8080",
        "--allow-unauthenticated",
    ]);
    if let Some(version) = &secret {
        run.extend(args(&[
            "--update-secrets",
            &format!("RK_ENDPOINT_API_KEY={version}"),
        ]));
    }
    gcloud(&run, request, RUN_STEP).await?;
    let url = service_url(request).await?;
    Ok(CloudRunService {
        url,
        image,
        secret: secret.map(|_| request.secret_name()),
    })
}

/// `gcloud artifacts repositories describe`; on NOT_FOUND, `create` it.
async fn ensure_repo(
    request: &CloudRunRequest,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), String> {
    let (repo, project, region) = (&request.repo, &request.project, &request.region);
    progress(&format!(
        "checking Artifact Registry repository {repo} in {region}"
    ));
    let describe = args(&[
        "artifacts",
        "repositories",
        "describe",
        repo,
        "--project",
        project,
        "--location",
        region,
    ]);
    match tool::call(Tool::Gcloud, &describe, None).await {
        Ok(_) => return Ok(()),
        Err(e) if is_not_found(&e) && !project_missing(&e, project) => {}
        Err(e) => return Err(explain(&e, request, REPO_STEP)),
    }
    progress(&format!("creating Artifact Registry repository {repo}"));
    let create = args(&[
        "artifacts",
        "repositories",
        "create",
        repo,
        "--project",
        project,
        "--repository-format",
        "docker",
        "--location",
        region,
        "--description",
        "Repository for reward-kit evaluators (created by rwb deploy)",
    ]);
    gcloud(&create, request, REPO_STEP).await.map(|_| ())
}

/// The key as a new version of the service's secret (created when missing); returns
/// `SECRET:VERSION` for `--update-secrets`.
async fn store_key(
    request: &CloudRunRequest,
    key: &str,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<String, String> {
    let (secret, project) = (request.secret_name(), &request.project);
    progress(&format!(
        "storing the endpoint key in Secret Manager secret {secret}"
    ));
    let describe = args(&["secrets", "describe", &secret, "--project", project]);
    match tool::call(Tool::Gcloud, &describe, None).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) && !project_missing(&e, project) => {
            let labels = format!("managed-by=rwb,evaluator-id={}", request.id);
            let create = args(&[
                "secrets",
                "create",
                &secret,
                "--project",
                project,
                "--replication-policy",
                "automatic",
                "--labels",
                &labels,
            ]);
            gcloud(&create, request, SECRET_STEP).await?;
        }
        Err(e) => return Err(explain(&e, request, SECRET_STEP)),
    }
    // the key travels in a private temporary file, never on a command line
    let file = tempfile::NamedTempFile::new()
        .map_err(|e| format!("cannot write the key to a temporary file: {e}"))?;
    std::fs::write(file.path(), key)
        .map_err(|e| format!("cannot write the key to a temporary file: {e}"))?;
    let add = args(&[
        "secrets",
        "versions",
        "add",
        &secret,
        "--project",
        project,
        "--data-file",
        &file.path().display().to_string(),
    ]);
    gcloud(&add, request, SECRET_STEP).await?;
    drop(file);
    let latest = args(&[
        "secrets",
        "versions",
        "describe",
        "latest",
        "--secret",
        &secret,
        "--project",
        project,
        "--format",
        "value(name)",
    ]);
    let name = gcloud(&latest, request, SECRET_STEP).await?;
    secret_version(&name).ok_or_else(|| {
        format!("Secret Manager answered '{name}' for the new version of {secret}, not projects/P/secrets/S/versions/N: run `gcloud secrets versions list {secret} --project {project}` to check it")
    })
}

/// `projects/P/secrets/S/versions/N` → `S:N`.
pub fn secret_version(name: &str) -> Option<String> {
    match name.trim().split('/').collect::<Vec<_>>()[..] {
        ["projects", _, "secrets", secret, "versions", version] => {
            Some(format!("{secret}:{version}"))
        }
        _ => None,
    }
}

/// The service's URL from `gcloud run services describe`; it must be https (plain
/// http only on a loopback host, where no key crosses the network: a local stand-in).
async fn service_url(request: &CloudRunRequest) -> Result<String, String> {
    let describe = args(&[
        "run",
        "services",
        "describe",
        &request.id,
        "--region",
        &request.region,
        "--project",
        &request.project,
        "--format",
        "value(status.url)",
    ]);
    let url = gcloud(&describe, request, RUN_STEP).await?;
    let loopback = url
        .strip_prefix("http://")
        .map(|rest| rest.split('/').next().unwrap_or(rest))
        .is_some_and(crate::remote::host::is_loopback_name);
    if url.starts_with("https://") || loopback {
        Ok(url)
    } else {
        Err(format!(
            "Cloud Run deployed {} but its URL is '{url}', not https://: check the service with `gcloud run services describe {} --region {} --project {}`",
            request.id, request.id, request.region, request.project
        ))
    }
}

/// One gcloud call; its stdout, or the failure explained for `step`.
async fn gcloud(list: &[String], request: &CloudRunRequest, step: Step) -> Result<String, String> {
    tool::call(Tool::Gcloud, list, None)
        .await
        .map(|out| out.stdout)
        .map_err(|e| explain(&e, request, step))
}

fn is_not_found(e: &ToolError) -> bool {
    let err = e.stderr();
    err.to_uppercase().contains("NOT_FOUND") || err.to_lowercase().contains("failed to find")
}

/// gcloud says the project itself does not exist (`Project 'P' not found`, `project [P]
/// does not exist`), as opposed to a repository or secret in it.
fn project_missing(e: &ToolError, project: &str) -> bool {
    let pattern = format!(
        r#"(?i)project\s*[\['"]?{}[\]'"]?\s+(was\s+)?(not found|does not exist)"#,
        regex::escape(project)
    );
    Regex::new(&pattern).is_ok_and(|re| re.is_match(e.stderr()))
}

/// A failed gcloud call as what the user should do about it.
fn explain(e: &ToolError, request: &CloudRunRequest, step: Step) -> String {
    let project = &request.project;
    let said = tool::last_lines(e.stderr(), 2);
    let err = e.stderr();
    if matches!(e, ToolError::Missing { .. }) {
        return e.to_string();
    }
    if project_missing(e, project) {
        return format!("GCP project '{project}' does not exist or your account cannot see it: check --gcp-project (`gcloud projects list` shows yours). gcloud said: {said}");
    }
    if err.contains("SERVICE_DISABLED")
        || err.contains("has not been used in project")
        || err.contains("is not enabled")
    {
        return format!("the API for {} is not enabled in project '{project}': run `gcloud services enable {} --project {project}`, then deploy again. gcloud said: {said}", step.doing, step.api);
    }
    if err.contains("PERMISSION_DENIED") || err.contains("does not have permission") {
        return format!("permission denied while {} in project '{project}': your gcloud account needs {} (ask a project owner) or another account (`gcloud auth login`). gcloud said: {said}", step.doing, step.role);
    }
    if step.doing == BUILD_STEP.doing {
        return format!("the image build failed: read the Cloud Build log (often a requirement that does not install: check the metric folders' requirements.txt), fix it and deploy again; the build context is {}. gcloud said: {said}", request.context.display());
    }
    format!("{} failed: `{}` said: {said}", step.doing, e.command())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str) -> CloudRunRequest {
        CloudRunRequest {
            id: id.into(),
            project: "proj-1".into(),
            region: "us-central1".into(),
            repo: DEFAULT_REPO.into(),
            key: None,
            context: PathBuf::from("/ctx"),
        }
    }

    #[test]
    fn image_and_secret_names_are_reward_kits() {
        let r = request("my.eval");
        assert_eq!(
            r.image(),
            "us-central1-docker.pkg.dev/proj-1/reward-kit-evaluators/my.eval:latest"
        );
        assert_eq!(r.secret_name(), "rk-eval-myeval-authkey");
        assert_eq!(
            request("..").secret_name(),
            "rk-eval-rewardkit-evaluator-authkey"
        );
    }

    #[test]
    fn a_secret_version_name_becomes_secret_colon_version() {
        assert_eq!(
            secret_version("projects/123/secrets/rk-eval-a-authkey/versions/7\n").as_deref(),
            Some("rk-eval-a-authkey:7")
        );
        assert_eq!(secret_version("latest"), None);
    }

    #[test]
    fn a_missing_project_is_told_apart_from_a_missing_repository() {
        let failed = |stderr: &str| ToolError::Failed {
            tool: Tool::Gcloud,
            command: "gcloud x".into(),
            stderr: stderr.into(),
        };
        let repo = failed("ERROR: (gcloud.artifacts.repositories.describe) NOT_FOUND: Requested entity was not found.");
        assert!(is_not_found(&repo) && !project_missing(&repo, "proj-1"));
        let project = failed("ERROR: (gcloud.artifacts.repositories.describe) NOT_FOUND: Project 'proj-1' not found or deleted.");
        assert!(project_missing(&project, "proj-1"));
    }
}
