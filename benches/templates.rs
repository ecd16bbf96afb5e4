//! Issue 23's speed target: rendering 100,000 prompts with a real chat template costs
//! under 0.1 s, the template compiled once. Renders the Qwen2.5 and Gemma 2 templates
//! of tests/corpus_trainers/templates over 100k two-turn conversations (each sample
//! line parsed, its prompt turns rendered, as the worker pool does before a batch), and
//! prints the ratio to a floor measured in the same process: the same lines parsed and
//! their turns joined into ChatML by hand (no template engine).
//!
//! cargo bench --bench templates

use reward_workbench::engine::chat_template::{templated_prompt, templated_prompts, ChatTemplate};
use reward_workbench::workspace::template::Templates;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const PROMPTS: usize = 100_000;
const ROUNDS: usize = 3;

fn best(mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut fastest = Duration::MAX;
    let mut out = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        out = f();
        fastest = fastest.min(start.elapsed());
    }
    (fastest, out)
}

fn main() {
    let lines: Vec<String> = (0..PROMPTS)
        .map(|i| {
            serde_json::json!({"messages": [
                {"role": "user", "content": format!("Reason, then answer inside <answer></answer>. What is {i} + {}?", i % 97)},
                {"role": "assistant", "content": format!("<answer>{}</answer>", i + i % 97)}
            ], "answer": (i + i % 97).to_string()})
            .to_string()
        })
        .collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let parse = best(|| {
        lines
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l)
                    .unwrap()
                    .as_object()
                    .unwrap()
                    .len()
            })
            .sum()
    });
    println!(
        "parsing the {PROMPTS} sample lines (the pool does it before rendering): {:.3} s",
        parse.0.as_secs_f64()
    );
    let floor = best(|| {
        let mut bytes = 0;
        for v in &parsed {
            let turns = v["messages"].as_array().unwrap();
            let mut out = String::new();
            for t in &turns[..turns.len() - 1] {
                out.push_str("<|im_start|>");
                out.push_str(t["role"].as_str().unwrap());
                out.push('\n');
                out.push_str(t["content"].as_str().unwrap());
                out.push_str("<|im_end|>\n");
            }
            out.push_str("<|im_start|>assistant\n");
            bytes += out.len();
        }
        bytes
    });
    println!(
        "floor: ChatML joined by hand, {PROMPTS} prompts: {:.3} s",
        floor.0.as_secs_f64()
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers/templates");
    let templates = Templates::new(&dir);
    for name in ["qwen2.5.json", "gemma.json"] {
        let source = templates.load(name, "chat_template").unwrap();
        let compile = Instant::now();
        let template = ChatTemplate::compile(&source).unwrap();
        let compiled = compile.elapsed();
        let (took, bytes) = best(|| {
            let mut bytes = 0;
            for v in &parsed {
                bytes += templated_prompt(v, &template, name).unwrap().unwrap().len();
            }
            bytes
        });
        assert!(bytes > 0);
        // GRPO data: groups of 8 rollouts of one prompt, as the pool renders a batch
        let grouped: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                lines[i - i % 8]
                    .clone()
                    .replace("</answer>\"}", &format!("</answer>{}\"}}", l.len()))
            })
            .collect();
        let (in_groups, _) = best(|| {
            templated_prompts(&template, grouped.iter().map(String::as_str), name)
                .into_iter()
                .filter(|r| r.is_ok())
                .count()
        });
        println!(
            "{name}: {PROMPTS} samples in groups of 8, parsed and rendered as a batch is: {:.3} s",
            in_groups.as_secs_f64()
        );
        println!(
            "{name}: compiled once in {:.1} ms; {PROMPTS} prompts rendered in {:.3} s ({:.2}x the floor; target < 0.1 s: {})",
            compiled.as_secs_f64() * 1000.0,
            took.as_secs_f64(),
            took.as_secs_f64() / floor.0.as_secs_f64(),
            if took.as_secs_f64() < 0.1 { "PASS" } else { "FAIL" }
        );
    }
}
