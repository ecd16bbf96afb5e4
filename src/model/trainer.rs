//! Which trainer the user trains with (`trainer = "..."` at the top of `rwb.toml`, or
//! per evaluator; SPEC §3): a fact of the user's setup that says how a function is
//! called and how rewards become advantages (SPEC §14).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A trainer whose conventions rwb follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Trainer {
    /// Hugging Face TRL (`GRPOTrainer`, `RLOOTrainer`).
    #[serde(rename = "trl")]
    Trl,
    /// Google Tunix (`RLLearner`, its GRPO learner).
    #[serde(rename = "tunix")]
    Tunix,
    /// veRL (`compute_score`, `core_algos`).
    #[serde(rename = "verl")]
    Verl,
    /// OpenRLHF (`reward_func(queries, prompts, labels)`).
    #[serde(rename = "openrlhf")]
    OpenRlhf,
    /// Prime Intellect's verifiers (Rubric reward functions).
    #[serde(rename = "verifiers")]
    Verifiers,
    /// reward-kit / Fireworks evaluators.
    #[serde(rename = "reward-kit")]
    RewardKit,
    /// AReaL (`RLVRWorkflow`: `fn(prompt, completion, prompt_ids, completion_ids, **row)`).
    #[serde(rename = "areal")]
    Areal,
    /// EasyR1 (`REWARD_TYPE = "batch"` or `"sequential"`, scores under `overall`).
    #[serde(rename = "easyr1")]
    EasyR1,
    /// ms-swift (an `ORM` class, constructed with the trainer's `args`).
    #[serde(rename = "swift")]
    Swift,
    /// slime (`async def fn(args, sample)`, or a group reward over `samples`).
    #[serde(rename = "slime")]
    Slime,
    /// SkyRL's gym environments (`compute_score(action, ground_truth)`).
    #[serde(rename = "skyrl")]
    Skyrl,
}

impl Trainer {
    /// Every trainer, in the order messages list them.
    pub const ALL: [Trainer; 11] = [
        Trainer::Trl,
        Trainer::Tunix,
        Trainer::Verl,
        Trainer::OpenRlhf,
        Trainer::Verifiers,
        Trainer::RewardKit,
        Trainer::Areal,
        Trainer::EasyR1,
        Trainer::Swift,
        Trainer::Slime,
        Trainer::Skyrl,
    ];

    /// The name `rwb.toml` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Trainer::Trl => "trl",
            Trainer::Tunix => "tunix",
            Trainer::Verl => "verl",
            Trainer::OpenRlhf => "openrlhf",
            Trainer::Verifiers => "verifiers",
            Trainer::RewardKit => "reward-kit",
            Trainer::Areal => "areal",
            Trainer::EasyR1 => "easyr1",
            Trainer::Swift => "swift",
            Trainer::Slime => "slime",
            Trainer::Skyrl => "skyrl",
        }
    }

    pub fn parse(text: &str) -> Option<Trainer> {
        Trainer::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

impl fmt::Display for Trainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trainer_reads_back_its_own_name() {
        for t in Trainer::ALL {
            assert_eq!(Trainer::parse(t.as_str()), Some(t));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{t}\""));
            assert_eq!(serde_json::from_str::<Trainer>(&json).unwrap(), t);
        }
        assert_eq!(Trainer::parse("TRL"), None);
    }
}
