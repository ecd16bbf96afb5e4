//! Issue 23's speed target: rendering 100,000 prompts with a real chat template costs
//! under 0.1 s, the template compiled once. Renders the Qwen2.5 and Gemma 2 templates
//! of tests/corpus_trainers/templates over 100k two-turn conversations and prints each
//! figure with its ratio to a floor measured in the same process (no template engine:
//! the turns joined into ChatML by hand):
//! - "distinct, parsed": each sample already parsed into a `serde_json::Value`, its
//!   prompt turns rendered (`templated_prompt`); floor: the parsed turns joined.
//! - "distinct, from lines": what the worker pool does before sending a batch
//!   (`templated_prompts` over the sample lines: each line's prompt read, rendered);
//!   floor: each line parsed into a `serde_json::Value` and its turns joined.
//! - "groups of 8": GRPO data, 8 rollouts of each prompt, from lines.
//!
//! cargo bench --bench templates

use reward_workbench::engine::chat_template::{templated_prompt, templated_prompts, ChatTemplate};
use reward_workbench::workspace::template::Templates;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const PROMPTS: usize = 100_000;
const ROUNDS: usize = 5;

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
    fn join(v: &Value) -> usize {
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
        out.len()
    }
    let floor = best(|| parsed.iter().map(join).sum());
    println!(
        "floor: ChatML joined by hand, {PROMPTS} parsed samples: {:.3} s",
        floor.0.as_secs_f64()
    );
    let line_floor = best(|| {
        lines
            .iter()
            .map(|l| join(&serde_json::from_str::<Value>(l).unwrap()))
            .sum()
    });
    println!(
        "floor from lines: each line parsed, ChatML joined by hand, {PROMPTS} samples: {:.3} s",
        line_floor.0.as_secs_f64()
    );
    let verdict = |took: Duration| {
        if took.as_secs_f64() < 0.1 {
            "PASS"
        } else {
            "FAIL"
        }
    };
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
        println!(
            "{name}: compiled once in {:.1} ms; {PROMPTS} distinct prompts, parsed: {:.3} s ({:.2}x the floor; target < 0.1 s: {})",
            compiled.as_secs_f64() * 1000.0,
            took.as_secs_f64(),
            took.as_secs_f64() / floor.0.as_secs_f64(),
            verdict(took)
        );
        let (from_lines, rendered) = best(|| {
            templated_prompts(&template, lines.iter().map(String::as_str), name)
                .into_iter()
                .map(|r| r.unwrap().unwrap().len())
                .sum()
        });
        assert_eq!(rendered, bytes);
        println!(
            "{name}: {PROMPTS} distinct prompts, from lines: {:.3} s ({:.2}x the floor from lines; target < 0.1 s: {})",
            from_lines.as_secs_f64(),
            from_lines.as_secs_f64() / line_floor.0.as_secs_f64(),
            verdict(from_lines)
        );
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
            "{name}: {PROMPTS} samples in groups of 8, from lines: {:.3} s ({:.2}x the floor from lines)",
            in_groups.as_secs_f64(),
            in_groups.as_secs_f64() / line_floor.0.as_secs_f64(),
        );
    }
}
