//! `rwb init [DIR] [--trainer NAME]`: a small workspace that runs at once, called as
//! the chosen trainer calls its reward functions.
//!
//! Each template is a folder of `init_template/` (the files it writes, as they are
//! written) and one line of [`TEMPLATES`]: a new trainer is a folder and a line.

use super::Fail;
use std::path::Path;
use std::process::ExitCode;

/// A starting workspace: the trainer it is for, what it holds, and its files.
#[derive(Debug)]
pub struct Template {
    pub trainer: &'static str,
    pub about: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

/// `template!("trl", "about", ["rewards.py", ...])`: the files of
/// `init_template/trl/`, read in at build time.
macro_rules! template {
    ($trainer:literal, $about:literal, [$($file:literal),+ $(,)?]) => {
        Template {
            trainer: $trainer,
            about: $about,
            files: &[$(($file, include_str!(concat!("init_template/", $trainer, "/", $file)))),+],
        }
    };
}

/// Every template; the first is the default.
pub const TEMPLATES: &[Template] = &[
    template!(
        "reward-kit",
        "a reward-kit metric folder (metrics/length/main.py, @reward_function) on chat samples",
        ["metrics/length/main.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "trl",
        "TRL GRPOTrainer reward functions (rewards.py) on rollout groups in TRL's standard format, with [training]",
        ["rewards.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "verl",
        "a veRL compute_score (reward.py) on GSM8K-style dataset rows with responses, with [training]",
        ["reward.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "areal",
        "an AReaL reward function (rewards.py) called positionally with the templated prompt and the row",
        ["rewards.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "easyr1",
        "an EasyR1 batch reward file (math.py, REWARD_TYPE = \"batch\") scored by each dict's overall",
        ["math.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "swift",
        "ms-swift ORM classes (plugin.py) built with the training arguments, called per batch",
        ["plugin.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "slime",
        "a slime custom reward (custom_rm.py, async (args, sample)) on slime-shaped rows, reward_key set",
        ["custom_rm.py", "samples.jsonl", "rwb.toml"]
    ),
    template!(
        "skyrl",
        "a SkyRL gym compute_score(action, ground_truth) (gsm8k.py) on rows with reward_spec",
        ["gsm8k.py", "samples.jsonl", "rwb.toml"]
    ),
];

/// The template for `--trainer NAME` (the default without one).
pub fn template(trainer: Option<&str>) -> Result<&'static Template, String> {
    let Some(name) = trainer else {
        return Ok(&TEMPLATES[0]);
    };
    TEMPLATES.iter().find(|t| t.trainer == name).ok_or_else(|| {
        let known: Vec<String> = TEMPLATES
            .iter()
            .map(|t| format!("{} ({})", t.trainer, t.about))
            .collect();
        format!(
            "rwb init has no template for trainer '{name}'; give --trainer with one of: {}",
            known.join("; ")
        )
    })
}

pub(super) fn init(dir: &Path, trainer: Option<&str>) -> Result<ExitCode, Fail> {
    let template = template(trainer).map_err(Fail::Usage)?;
    for (rel, _) in template.files {
        let path = dir.join(rel);
        if path.exists() {
            return Err(Fail::Usage(format!(
                "{} already exists; rwb init writes only into a new or empty workspace",
                path.display()
            )));
        }
    }
    for (rel, text) in template.files {
        let path = dir.join(rel);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().expect("template files have a folder"))?;
            std::fs::write(&path, text)
        };
        write().map_err(|e| Fail::Usage(format!("cannot write {}: {e}", path.display())))?;
    }
    let shown = dir.display();
    println!("Wrote a {} workspace in {shown}:", template.trainer);
    for (rel, _) in template.files {
        println!("  {rel}");
    }
    println!("\nNext: `rwb run {shown}` to score it once, or `rwb {shown}` to open the workbench.");
    println!("Evaluators and settings are in {shown}/rwb.toml; `rwb check {shown}` shows how each function is called.");
    let others: Vec<&str> = TEMPLATES
        .iter()
        .map(|t| t.trainer)
        .filter(|t| *t != template.trainer)
        .collect();
    println!(
        "Other starting points: rwb init DIR --trainer {}",
        others.join("|")
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_has_an_rwb_toml_and_samples_and_unknown_ones_are_named() {
        for t in TEMPLATES {
            let names: Vec<&str> = t.files.iter().map(|(n, _)| *n).collect();
            assert!(names.contains(&"rwb.toml"), "{}", t.trainer);
            assert!(names.contains(&"samples.jsonl"), "{}", t.trainer);
            crate::workspace::Config::parse(
                t.files.iter().find(|(n, _)| *n == "rwb.toml").unwrap().1,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", t.trainer));
        }
        assert_eq!(template(None).unwrap().trainer, "reward-kit");
        let e = template(Some("ppo")).unwrap_err();
        assert!(
            e.starts_with("rwb init has no template for trainer 'ppo'; give --trainer with one of: reward-kit ("),
            "{e}"
        );
        assert!(e.contains("; trl (") && e.contains("; verl ("), "{e}");
    }
}
