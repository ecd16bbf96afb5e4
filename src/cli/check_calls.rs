//! What `rwb check` says about how each evaluator is called (SPEC §3): the trainer,
//! the form its arguments take (text or messages), the first sample's prompt as the
//! trainer templated it, and a warning when the scores suggest the function got a
//! form it was not written for (every sample the same score, or every call failing
//! on its arguments' type).

use crate::engine::chat_template::{templated_prompt, ChatTemplate};
use crate::model::{EvaluatorSpec, Outcome, SampleRef, SolutionStr, Style};
use crate::runner::{Event, Prepared, Repeats, Runner};
use crate::workspace::{ReadAhead, SamplesFile};
use serde_json::Value;

/// The first sample of the files, parsed (`None`: there is none, or it is bad).
pub(super) fn first_sample(files: &[SamplesFile]) -> Option<Value> {
    let line = ReadAhead::spawn(files, Some(1)).next()?.ok()?;
    if line.bad.is_some() {
        return None;
    }
    serde_json::from_str(&line.raw).ok()
}

/// Whether a sample holds its conversation as text (a string `completion`).
fn text_form(sample: &Value) -> bool {
    !sample.get("messages").is_some_and(Value::is_array)
        && sample.get("completion").is_some_and(Value::is_string)
}

/// The form of the arguments `style` passes for `sample`, in words.
pub(super) fn arguments_form(style: Style, spec: &EvaluatorSpec, sample: &Value) -> String {
    let as_held = if text_form(sample) {
        "text (the samples' string prompt and completion)"
    } else {
        "lists of messages"
    };
    match style {
        Style::Trl => format!("prompts and completions as {as_held}, one call per batch"),
        Style::Tunix => {
            "prompts as templated text, completions as text, columns as arrays, one call per batch"
                .into()
        }
        Style::OpenRlhf => {
            "queries (templated prompt + completion) and prompts as text, labels; one sample a call"
                .into()
        }
        Style::Verl if spec.solution_str == SolutionStr::PromptAndResponse => {
            "solution_str as text: the templated prompt followed by the completion".into()
        }
        Style::Verl => "solution_str as text: the completion".into(),
        Style::RewardKit => "messages as message dicts (a text prompt is one user turn)".into(),
        Style::Batch => "rollouts_messages, lists of message dicts, one call per batch".into(),
        Style::Simple => "response and prompt as text".into(),
        Style::Verifiers => format!("prompt and completion as {as_held}"),
        Style::Areal => "prompt (templated) and completion as text, the token ids, the row as keywords; one sample a call, positionally".into(),
        Style::EasyR1 => "a list of {response, response_length, ground_truth} dicts, one call per batch".into(),
        Style::EasyR1Sequential => "one {response, response_length, ground_truth} dict a call".into(),
        Style::Swift => "an instance made with trainer_args, called with completions as text and the columns batched".into(),
        Style::Slime => "args (trainer_args) and slime's Sample (prompt, response, label, ...), awaited one sample a call".into(),
        Style::SlimeGroup => "args (trainer_args) and a list of slime Samples, one call per group (batch)".into(),
        Style::Skyrl => "action (the completion's text) and ground_truth, one sample a call".into(),
        Style::VerifiersTask => "the task's rewards and metrics on the sample's trace (task data, trace)".into(),
        Style::Call => "as call = { ... } in rwb.toml says, one sample a call".into(),
        Style::CallBatch => "as call = { ... } in rwb.toml says, one call per batch".into(),
        Style::Grader => "the sample's columns as item.*, its completion as sample.output_text (an OpenAI grader), one sample a call".into(),
    }
}

/// The first sample's prompt as `spec`'s trainer templated it, for the styles that
/// hand templated text to the function: (which template made it, the text).
pub(super) fn rendered_prompt(
    style: Style,
    spec: &EvaluatorSpec,
    sample: &Value,
) -> Option<(String, Result<String, String>)> {
    let templated = style.takes_templated_prompt()
        || (style == Style::Verl && spec.solution_str == SolutionStr::PromptAndResponse);
    if !templated {
        return None;
    }
    let which = spec.chat_template.describe();
    let text = ChatTemplate::compile(&spec.chat_template)
        .and_then(|t| templated_prompt(sample, &t, &which))
        .map(|p| p.unwrap_or_default())
        .map_err(|e| e.to_string());
    Some((which, text))
}

/// Scores every local evaluator on the checked samples through the cache (a
/// `repeat = K` one K times, merged as `rwb run` merges them: SPEC §16), per
/// evaluator the samples in the order they came and their outcomes; none for a
/// remote evaluator (its contract is checked where it runs).
pub(super) async fn scored(
    runner: &Runner,
    prepared: &[Prepared],
    files: &[SamplesFile],
    max_samples: usize,
    threshold: f64,
) -> Vec<Vec<(SampleRef, Outcome)>> {
    let local: Vec<usize> = (0..prepared.len())
        .filter(|&i| !prepared[i].spec.source.is_remote())
        .collect();
    let chosen: Vec<Prepared> = local.iter().map(|&i| prepared[i].clone()).collect();
    let (runs, of) = runner.expand_repeats(&chosen);
    let mut repeats = Repeats::new(&chosen, threshold).map(|r| r.with(of));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = runner.run(&runs, files, Some(max_samples), true, false, tx);
    let collect = async {
        let mut outcomes: Vec<Vec<(SampleRef, Outcome)>> = vec![Vec::new(); prepared.len()];
        while let Some(event) = rx.recv().await {
            let event = match repeats.as_mut() {
                Some(r) => r.add(event),
                None => Some(event),
            };
            if let Some(Event::Result {
                evaluator,
                at,
                outcome,
                ..
            }) = event
            {
                outcomes[local[evaluator]].push((at, outcome));
            }
        }
        outcomes
    };
    let (_, outcomes) = tokio::join!(run, collect);
    outcomes
}

/// Per evaluator, what looks like a function called in a form it was not written
/// for, from its outcomes on the checked samples ([`scored`]).
pub(super) fn form_warnings(
    scored: &[Vec<(SampleRef, Outcome)>],
    prepared: &[Prepared],
    files: &[SamplesFile],
    styles: &[Option<Style>],
) -> Vec<Option<String>> {
    let text = first_sample(files).is_some_and(|s| text_form(&s));
    let label = files.first().map_or("FILE", |f| f.label.as_str());
    scored
        .iter()
        .zip(styles)
        .zip(prepared)
        .map(|((o, style), p)| {
            let outcomes: Vec<&Outcome> = o.iter().map(|(_, o)| o).collect();
            style.and_then(|s| warning(s, &outcomes, &another_form(s, p.spec.trainer, text, label)))
        })
        .collect()
}

/// What to write when a function seems to get a form it was not written for: with
/// the trainer set and text samples, TRL's conversational form (`form =
/// "conversational"`: a TRL log holds text even when the dataset was
/// conversational, SPEC §13); with the trainer set, the evaluator's `style`; else
/// the trainer.
fn another_form(
    style: Style,
    trainer: Option<crate::model::Trainer>,
    text: bool,
    label: &str,
) -> String {
    match trainer {
        Some(_) if text && matches!(style, Style::Trl | Style::Verifiers) => format!(
            "the samples hold text completions (a TRL log always does); if the trainer's dataset was conversational, it passed lists of messages: write [samples.log] path = \"{label}\" form = \"conversational\" in rwb.toml"
        ),
        Some(t) => format!(
            "trainer = \"{t}\" is set in rwb.toml; if this function is called another way, set style = \"...\" under its [evaluators.NAME]"
        ),
        None => "if your trainer passes another form, set trainer = \"...\" (or style) in rwb.toml".into(),
    }
}

/// The warning for one evaluator's outcomes, if any.
fn warning(style: Style, outcomes: &[&Outcome], advice: &str) -> Option<String> {
    if outcomes.len() < 2 {
        return None;
    }
    let passed = match style {
        Style::RewardKit | Style::Batch => "message dicts",
        Style::Trl | Style::Verifiers | Style::VerifiersTask | Style::Call | Style::CallBatch => {
            "the samples' own form"
        }
        _ => "text",
    };
    let form_error = |o: &&Outcome| {
        o.error.as_ref().is_some_and(|e| {
            matches!(e.kind.as_str(), "TypeError" | "AttributeError")
                && ["str", "list", "dict", "expected string"]
                    .iter()
                    .any(|t| e.message.contains(t))
        })
    };
    if outcomes.iter().all(form_error) {
        let first = outcomes[0]
            .error
            .as_ref()
            .map(|e| format!("{}: {}", e.kind, e.message));
        return Some(format!(
            "every call failed on the form of its arguments ({}): it was passed {passed}; {advice}",
            first.unwrap_or_default()
        ));
    }
    let scores: Vec<f64> = outcomes.iter().filter_map(|o| o.score).collect();
    if scores.len() == outcomes.len() && scores.windows(2).all(|w| w[0] == w[1]) {
        return Some(format!(
            "every sample scores {}: check that the function reads the form it is passed ({passed}); Tunix and OpenRLHF pass templated text, TRL the dataset's own form; {advice}",
            crate::trust::issues::four_digits(scores[0])
        ));
    }
    None
}
