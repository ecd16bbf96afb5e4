//! `rwb deploy --target cloud-run|k8s` (SPEC §12): flags and `[deploy]` settings into
//! the options of `ship::targets`, whose progress and result it prints.
//!
//! Exit codes as for Fireworks: 0 deployed; 1 a tool or the API failed (the message
//! says what to do); 2 usage, workspace or credentials errors.

use super::{DeployArgs, Fail};
use crate::ship::cloud_run::DEFAULT_REPO;
use crate::ship::targets::{self, CloudRunOptions, Deployed, K8sOptions, ServiceKey, TargetError};
use crate::workspace::Config;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TargetName {
    #[default]
    Fireworks,
    CloudRun,
    K8s,
}

/// The flags of the targets beside Fireworks.
#[derive(Args, Debug, Default)]
pub struct TargetArgs {
    /// Where to deploy: fireworks (default), cloud-run or k8s.
    #[arg(long, value_enum, default_value_t = TargetName::Fireworks)]
    pub target: TargetName,
    /// Cloud Run: the Google Cloud project.
    #[arg(long, value_name = "P")]
    pub gcp_project: Option<String>,
    /// Cloud Run: the region (e.g. us-central1).
    #[arg(long, value_name = "R")]
    pub gcp_region: Option<String>,
    /// Cloud Run: the Artifact Registry repository (default reward-kit-evaluators).
    #[arg(long, value_name = "REPO")]
    pub gcp_ar_repo: Option<String>,
    /// Cloud Run, k8s: run the service without a key (anyone with the URL can use it).
    #[arg(long)]
    pub no_auth: bool,
    /// Cloud Run: register the service on Fireworks as a remote-url evaluator.
    #[arg(long)]
    pub register: bool,
    /// k8s: the namespace (default "default").
    #[arg(long, value_name = "N")]
    pub namespace: Option<String>,
    /// k8s: an image built before (for Cloud Run, or by docker build); else rwb builds
    /// rwb-ID:latest with docker.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// k8s: run `kubectl apply -f` on the written manifests.
    #[arg(long)]
    pub apply: bool,
    /// The rwb binary to put into the image (a Linux x86-64 build; default: this one).
    #[arg(long, value_name = "PATH")]
    pub rwb_binary: Option<PathBuf>,
}

impl TargetArgs {
    /// A flag of another target is a usage error rather than silently ignored (a
    /// `--gcp-project` given with `--target k8s` means the user expected something).
    pub fn check_flags(&self) -> Result<(), Fail> {
        use TargetName::{CloudRun, K8s};
        let given = [
            ("--gcp-project", self.gcp_project.is_some(), &[CloudRun][..]),
            ("--gcp-region", self.gcp_region.is_some(), &[CloudRun]),
            ("--gcp-ar-repo", self.gcp_ar_repo.is_some(), &[CloudRun]),
            ("--register", self.register, &[CloudRun]),
            ("--no-auth", self.no_auth, &[CloudRun, K8s]),
            ("--rwb-binary", self.rwb_binary.is_some(), &[CloudRun, K8s]),
            ("--namespace", self.namespace.is_some(), &[K8s]),
            ("--image", self.image.is_some(), &[K8s]),
            ("--apply", self.apply, &[K8s]),
        ];
        let name = |t: &TargetName| match t {
            TargetName::Fireworks => "fireworks",
            CloudRun => "cloud-run",
            K8s => "k8s",
        };
        for (flag, set, targets) in given {
            if set && !targets.contains(&self.target) {
                let fits: Vec<&str> = targets.iter().map(name).collect();
                return Err(Fail::Usage(format!(
                    "{flag} is for --target {}, not --target {}: drop it or change the target",
                    fits.join(" or --target "),
                    name(&self.target)
                )));
            }
        }
        Ok(())
    }
}

pub(super) async fn deploy(args: DeployArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        return Err(Fail::Usage(format!(
            "workspace folder not found: {} (give an existing folder)",
            dir.display()
        )));
    }
    let settings = Settings::load(&dir)?;
    let t = &args.targets;
    let id = args.id.clone().or(settings.get("id")?).ok_or_else(|| {
        Fail::Usage(
            "rwb deploy needs an id: give --id ID (or set id under [deploy] in rwb.toml)".into(),
        )
    })?;
    let key = ServiceKey::choose(args.remote_key.clone(), t.no_auth).map_err(usage)?;
    let crate::ship::fireworks::Code::Evaluators {
        specs: evaluators,
        python,
    } = super::deploy::load_evaluators(&dir, &args)?
    else {
        unreachable!("the workspace's evaluators are code");
    };
    let mut progress = |line: &str| eprintln!("rwb deploy: {line}");
    let result = match t.target {
        TargetName::CloudRun => {
            let options = CloudRunOptions {
                id: id.trim().to_string(),
                project: or_setting(&t.gcp_project, &settings, "gcp_project")?.unwrap_or_default(),
                region: or_setting(&t.gcp_region, &settings, "gcp_region")?.unwrap_or_default(),
                repo: or_setting(&t.gcp_ar_repo, &settings, "gcp_ar_repo")?
                    .unwrap_or_else(|| DEFAULT_REPO.into()),
                key,
                register: t.register.then_some(args.force),
                rwb_binary: t.rwb_binary.clone(),
            };
            targets::cloud_run(&dir, &evaluators, &python, &options, &mut progress).await
        }
        _ => {
            let options = K8sOptions {
                id: id.trim().to_string(),
                namespace: or_setting(&t.namespace, &settings, "namespace")?
                    .unwrap_or_else(|| "default".into()),
                image: or_setting(&t.image, &settings, "image")?,
                apply: t.apply,
                key,
                rwb_binary: t.rwb_binary.clone(),
            };
            targets::kubernetes(&dir, &evaluators, &python, &options, &mut progress).await
        }
    };
    finish(result)
}

fn finish(result: Result<Deployed, TargetError>) -> Result<ExitCode, Fail> {
    match result {
        Ok(deployed) => {
            for note in &deployed.notes {
                eprintln!("rwb deploy: {note}");
            }
            if let Some(name) = &deployed.registered {
                eprintln!("rwb deploy: registered {name} on Fireworks");
            }
            if let Some(url) = &deployed.url {
                println!("{url}");
            }
            if let Some(file) = &deployed.file {
                println!("{}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(TargetError::Usage(m)) => Err(Fail::Usage(m)),
        Err(TargetError::Failed(m)) => {
            eprintln!("rwb: deploy failed: {m}");
            Ok(ExitCode::from(1))
        }
    }
}

fn usage(e: TargetError) -> Fail {
    Fail::Usage(e.to_string())
}

/// The flag, else the `[deploy]` setting.
fn or_setting(
    flag: &Option<String>,
    settings: &Settings,
    key: &str,
) -> Result<Option<String>, Fail> {
    match flag.clone().filter(|v| !v.trim().is_empty()) {
        Some(v) => Ok(Some(v)),
        None => settings.get(key),
    }
}

/// `[deploy]` of rwb.toml.
struct Settings(toml::Table);

impl Settings {
    fn load(dir: &Path) -> Result<Settings, Fail> {
        Ok(Settings(
            Config::load(&dir.join("rwb.toml"))?
                .deploy
                .unwrap_or_default(),
        ))
    }

    fn get(&self, key: &str) -> Result<Option<String>, Fail> {
        match self.0.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Fail::Usage(format!(
                "rwb.toml: [deploy] {key} must be a string"
            ))),
        }
    }
}
