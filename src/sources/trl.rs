//! TRL `GRPOTrainer`'s completion logs: `completions/completions_{step:05d}.parquet`.
//!
//! Facts from huggingface/trl `trl/trainer/grpo_trainer.py` (commit d2b69d769dab):
//! at each logging step (`log_completions=True`) the trainer writes
//! `pd.DataFrame({"step": [global_step] * n, "prompt": ..., "completion": ...,
//! **rewards, **extra, "advantage": ...}).to_parquet(...)`, where `prompt` and
//! `completion` are `batch_decode(..., skip_special_tokens=True)` texts, `rewards`
//! holds one column per reward function (`rewards_per_func[:, i].tolist()`: floats,
//! NaN where the function returned `None`), and `extra` the columns the reward
//! functions logged with `log_extra` (e.g. `golden_answer`); dataset columns are not
//! logged. A group is the rollouts of one prompt within a step.
//!
//! Reward columns and `log_extra` columns are told apart by type: a float column is
//! a logged score (so is `advantage`); any other column is the sample's.

use super::table::{is_numeric, open_batches, table_rows, Roles};
use super::{Container, Format, Options, Peek, Rows};
use arrow_schema::DataType;
use std::path::Path;

pub struct Trl;

impl Format for Trl {
    fn name(&self) -> &'static str {
        "TRL completion log"
    }

    fn recognises(&self, peek: &Peek) -> bool {
        matches!(peek.container, Container::Parquet | Container::Arrow)
            && peek.has_all(&["step", "prompt", "completion", "advantage"])
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        let batches = open_batches(path)?;
        let Some(first) = batches.first() else {
            return Ok(Box::new(std::iter::empty()));
        };
        let mut roles = Roles {
            step: Some("step".into()),
            group: Some("prompt".into()),
            conversational: options.conversational,
            ..Roles::default()
        };
        for field in first.schema.fields() {
            let name = field.name();
            let float = matches!(
                field.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            match name.as_str() {
                "step" => {}
                "prompt" | "completion" => roles.sample.push((name.clone(), name.clone())),
                _ if float || options.logged_paths.contains(name) => {
                    if is_numeric(field.data_type()) || options.logged_paths.contains(name) {
                        roles.logged.push((name.clone(), name.clone()));
                    }
                }
                _ => roles.sample.push((name.clone(), name.clone())),
            }
        }
        Ok(table_rows(batches, roles))
    }

    fn checks_form(&self) -> bool {
        true
    }
}
