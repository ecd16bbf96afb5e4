//! The list's one-line titles: what a row shows of its sample's text. A sample's
//! title is its prompt (the last user turn, or the end of a templated text, where the
//! question is) ▸ its completion. The rows of one prompt (a rollout group: NeMo-RL,
//! SkyRL and AReaL log the same chat-templated prompt on each) would all start with
//! the same words, too long to leave room for anything else: when the prompt is
//! longer than a title keeps and a neighbouring row has the same one, the row shows
//! what differs first, `▸ completion ◂ question`.

use super::screen::content_text;
use super::{App, Sample};
use serde_json::Value;
use std::sync::LazyLock;

/// How much of a text prompt's end the title keeps.
const PROMPT_TAIL: usize = 40;

/// A one-line title for the list: the last user turn, flattened; for a sample of a
/// prompt and a completion (a trainer's log), the prompt's (its last user turn, or
/// the tail of a templated text, where the question is) ▸ the completion.
#[cfg(test)]
pub(in crate::ui::app) fn sample_title(raw: &str, sample: &Sample) -> String {
    title_of(raw, sample, |_| false)
}

/// [`sample_title`], where `shared(prompt)` says whether a neighbouring row has the
/// same prompt (asked only of a prompt longer than a title keeps): then the row's
/// completion comes first.
fn title_of(raw: &str, sample: &Sample, shared: impl FnOnce(&Value) -> bool) -> String {
    if let Some(bad) = &sample.bad {
        return format!("✗ {bad}");
    }
    let parsed: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    if let Some(messages) = parsed.get("messages") {
        let question = flat(&last_turn(messages, "user").unwrap_or_default());
        let answer = last_answer(messages);
        return match answer {
            Some(answer) if long(&question) && shared(&prompt_of(&parsed)) => {
                what_differs(&answer, &tail(&question, PROMPT_TAIL))
            }
            _ => question,
        };
    }
    let Some(prompt) = parsed.get("prompt") else {
        return String::new();
    };
    let (shown, question) = match prompt {
        Value::Array(_) => {
            let turn = flat(&last_turn(prompt, "user").unwrap_or_default());
            (turn.clone(), turn)
        }
        other => {
            let text = flat(&content_text(other));
            (
                tail(&text, PROMPT_TAIL),
                tail(&question_of(&text), PROMPT_TAIL),
            )
        }
    };
    let completion = match parsed.get("completion") {
        Some(c @ Value::Array(_)) => last_turn(c, "assistant").unwrap_or_default(),
        Some(c) => content_text(c),
        None => return shown,
    };
    let whole = match prompt {
        Value::Array(_) => shown.clone(),
        other => flat(&content_text(other)),
    };
    if long(&whole) && shared(prompt) {
        return what_differs(&completion, &question);
    }
    format!("{shown} ▸ {}", flat(&completion))
}

impl App {
    /// The title of sample `i`, as its row shows it (see the module doc).
    pub(super) fn list_title(&self, i: usize) -> String {
        let sample = &self.samples[i];
        let raw = self.text(sample);
        title_of(&raw, sample, |prompt| self.neighbour_shares(i, prompt))
    }

    /// Whether a row next to sample `i` (in the files' order) has the prompt
    /// `prompt`: the same rollout group by the source's facts, or the same prompt in
    /// its text.
    fn neighbour_shares(&self, i: usize, prompt: &Value) -> bool {
        let sample = &self.samples[i];
        let group = sample.at.facts.as_ref().and_then(|f| f.group.as_deref());
        let neighbours = [i.checked_sub(1), i.checked_add(1)];
        neighbours.into_iter().flatten().any(|j| {
            let Some(other) = self.samples.get(j).filter(|s| s.bad.is_none()) else {
                return false;
            };
            let theirs = other.at.facts.as_ref().and_then(|f| f.group.as_deref());
            match (group, theirs) {
                (Some(a), Some(b)) => a == b,
                _ => {
                    let text: Value = serde_json::from_str(&self.text(other)).unwrap_or_default();
                    match text.get("messages") {
                        Some(_) => prompt_of(&text) == *prompt,
                        None => text.get("prompt") == Some(prompt),
                    }
                }
            }
        })
    }
}

/// `▸ completion ◂ question`: a row of a shared prompt, what differs first.
fn what_differs(completion: &str, question: &str) -> String {
    format!("▸ {} ◂ {question}", flat(completion))
}

/// Whether a prompt's text is longer than a title keeps of it.
fn long(text: &str) -> bool {
    text.chars().count() > PROMPT_TAIL
}

/// The prompt of a chat sample: its turns before the last assistant turn.
fn prompt_of(sample: &Value) -> Value {
    let Some(messages) = sample.get("messages").and_then(Value::as_array) else {
        return sample.get("prompt").cloned().unwrap_or_default();
    };
    let end = messages
        .iter()
        .rposition(|m| role(m) == Some("assistant"))
        .unwrap_or(messages.len());
    Value::Array(messages[..end].to_vec())
}

/// The last assistant turn of a chat, when it comes after its last user turn.
fn last_answer(messages: &Value) -> Option<String> {
    let ms = messages.as_array()?;
    let answer = ms.iter().rposition(|m| role(m) == Some("assistant"))?;
    let question = ms.iter().rposition(|m| role(m) == Some("user"));
    (question.is_none_or(|q| q < answer)).then(|| content_text(&ms[answer]["content"]))
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The content of the last turn of `role` in a list of messages.
fn last_turn(messages: &Value, role_name: &str) -> Option<String> {
    messages.as_array().and_then(|ms| {
        ms.iter()
            .rev()
            .find(|m| role(m) == Some(role_name))
            .and_then(|m| m.get("content"))
            .map(content_text)
    })
}

/// Whitespace runs made one space.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A chat template's markers: special tokens (`<|im_start|>`, `<｜Assistant｜>`,
/// `<start_of_turn>`, `</s>`, `[INST]`), with the role a turn's marker names.
static TEMPLATE_MARKS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?:<\|[^|<>]{0,40}\|>|<｜[^｜<>]{0,40}｜>|<(?:start|end)_of_turn>)(?:\s*(?:system|user|assistant|model)\b)?|</?s>|<(?:bos|eos)>|\[/?INST\]",
    )
    .expect("a regex")
});

/// The question at the end of a templated prompt: the text without the template's
/// markers and the role word it ends on (`…What is 2+2? assistant` → `…What is
/// 2+2?`).
fn question_of(text: &str) -> String {
    let plain = flat(&TEMPLATE_MARKS.replace_all(text, " "));
    let mut words: Vec<&str> = plain.split(' ').collect();
    while let Some(last) = words.last() {
        let word = last.trim_end_matches(':').to_lowercase();
        if matches!(word.as_str(), "assistant" | "model" | "gpt" | "bot") {
            words.pop();
        } else {
            break;
        }
    }
    words.join(" ")
}

/// The last `n` characters of `text` (`…` before them when cut).
fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_string();
    }
    let kept: String = text.chars().skip(count - (n - 1)).collect();
    format!("…{kept}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Sample {
        Sample {
            at: crate::model::SampleRef {
                index: 0,
                file: 0,
                line: 1,
                facts: None,
            },
            offset: 0,
            len: 0,
            hash: [0; 16],
            bad: None,
            cells: Default::default(),
        }
    }

    #[test]
    fn a_shared_long_prompt_shows_the_completion_first_and_its_question() {
        let templated = "<|im_start|>system\nYou are a careful assistant who shows the work.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
        let raw = json!({"prompt": templated, "completion": "It is\n4"}).to_string();
        assert_eq!(
            title_of(&raw, &sample(), |_| true),
            "▸ It is 4 ◂ …istant who shows the work. What is 2+2?"
        );
        // alone, or short, the prompt comes first as before
        assert!(title_of(&raw, &sample(), |_| false).ends_with("assistant ▸ It is 4"));
        let short = json!({"prompt": "2+2=", "completion": "4"}).to_string();
        assert_eq!(title_of(&short, &sample(), |_| true), "2+2= ▸ 4");
        // a chat whose long question is shared
        let q = "Explain, step by step, why the sum of two odd numbers is always even.";
        let chat = json!({"messages": [{"role": "user", "content": q},
                                       {"role": "assistant", "content": "Write them 2a+1, 2b+1"}]});
        assert_eq!(
            title_of(&chat.to_string(), &sample(), |_| true),
            format!("▸ Write them 2a+1, 2b+1 ◂ {}", tail(q, PROMPT_TAIL))
        );
        assert_eq!(title_of(&chat.to_string(), &sample(), |_| false), q);
    }

    #[test]
    fn a_templates_markers_and_its_last_role_word_are_no_part_of_the_question() {
        assert_eq!(
            question_of("<|im_start|>user What is 2+2?<|im_end|> <|im_start|>assistant"),
            "What is 2+2?"
        );
        assert_eq!(
            question_of("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"),
            "Hi"
        );
        assert_eq!(
            question_of("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
            "Hi"
        );
        assert_eq!(question_of("[INST] Hi [/INST]"), "Hi");
        // a text decoded with the special tokens stripped (TRL's) ends on its role
        assert_eq!(
            question_of("user\nWhat is 2+2?\nassistant\n"),
            "user What is 2+2?"
        );
    }
}
