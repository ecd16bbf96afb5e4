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
//! - "as the pool renders": the distinct prompts from lines in batches of 256 (the
//!   pool's largest), taken from one queue by as many lanes as the machine has
//!   CPUs, each on a thread of its own: the pool's lanes are tasks on the runtime's
//!   threads, and each renders the batch it is about to send (engine/pool.rs
//!   `Lane::send`). This is the time rendering takes in a run.
//! - "in the workbench": a template that keeps what it renders (the workbench's
//!   pool asks for it): its first run, and the next run on the same lines.
//! - "groups of 8": GRPO data, 8 rollouts of each prompt, from lines.
//!
//! cargo bench --bench templates

use reward_workbench::engine::chat_template::{templated_prompt, templated_prompts, ChatTemplate};
use reward_workbench::workspace::template::Templates;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    for name in ["qwen2.5.json", "gemma.json"] {
        let source = templates.load(name, "chat_template").unwrap();
        let compile = Instant::now();
        let _compiled = ChatTemplate::compile(&source).unwrap();
        let compiled = compile.elapsed();
        // every first-render figure compiles its template afresh for each round, so
        // that no round reads back what an earlier one rendered
        let fresh = || ChatTemplate::compile(&source).unwrap();
        let (took, bytes) = best_with(fresh, |t| {
            let mut bytes = 0;
            for v in &parsed {
                bytes += templated_prompt(v, t, name).unwrap().unwrap().len();
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
        let from_lines_with = |t: &ChatTemplate| -> usize {
            templated_prompts(t, lines.iter().map(String::as_str), name)
                .into_iter()
                .map(|r| r.unwrap().unwrap().len())
                .sum()
        };
        let (from_lines, rendered) = best_with(fresh, from_lines_with);
        assert_eq!(rendered, bytes);
        println!(
            "{name}: {PROMPTS} distinct prompts, from lines, one lane: {:.3} s ({:.2}x the floor from lines; target < 0.1 s: {})",
            from_lines.as_secs_f64(),
            from_lines.as_secs_f64() / line_floor.0.as_secs_f64(),
            verdict(from_lines)
        );
        let (pooled, rendered) = best_with(fresh, |t| pooled_render(t, &lines, lanes, name));
        assert_eq!(rendered, bytes);
        println!(
            "{name}: {PROMPTS} distinct prompts, from lines, as the pool renders them ({lanes} lanes, batches of 256): {:.3} s ({:.2}x one lane; target < 0.1 s: {})",
            pooled.as_secs_f64(),
            pooled.as_secs_f64() / from_lines.as_secs_f64(),
            verdict(pooled)
        );
        // in the workbench, a template keeps what it renders: its first run pays for
        // the keeping, the next one on the same samples (every save, another
        // evaluator with this template) reads the prompts back
        let keeping = || fresh().keeping_prompts();
        let (first_kept, rendered) = best_with(keeping, from_lines_with);
        assert_eq!(rendered, bytes);
        let template = keeping();
        assert_eq!(from_lines_with(&template), bytes);
        let (again, rendered) = best(|| from_lines_with(&template));
        assert_eq!(rendered, bytes);
        let (again_pooled, _) = best(|| pooled_render(&template, &lines, lanes, name));
        println!(
            "{name}: in the workbench (prompts kept), from lines, one lane: the first run {:.3} s ({:.2}x not keeping), the next {:.3} s ({:.2}x the first; as the pool renders them {:.3} s; target < 0.1 s: {})",
            first_kept.as_secs_f64(),
            first_kept.as_secs_f64() / from_lines.as_secs_f64(),
            again.as_secs_f64(),
            again.as_secs_f64() / first_kept.as_secs_f64(),
            again_pooled.as_secs_f64(),
            verdict(again)
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
        let (in_groups, _) = best_with(fresh, |t| {
            templated_prompts(t, grouped.iter().map(String::as_str), name)
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

/// Like [`best`], each round on what `setup` makes (not timed).
fn best_with<T>(setup: impl Fn() -> T, f: impl Fn(&T) -> usize) -> (Duration, usize) {
    let mut fastest = Duration::MAX;
    let mut out = 0;
    for _ in 0..ROUNDS {
        let input = setup();
        let start = Instant::now();
        out = f(&input);
        fastest = fastest.min(start.elapsed());
    }
    (fastest, out)
}

/// The lines rendered in batches of 256 taken from one queue by `lanes` threads, as
/// the pool's lanes render the batches they send; the rendered bytes.
fn pooled_render(template: &ChatTemplate, lines: &[String], lanes: usize, name: &str) -> usize {
    let batches: Vec<&[String]> = lines.chunks(256).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes)
            .map(|_| {
                scope.spawn(|| {
                    let mut bytes = 0;
                    while let Some(batch) = batches.get(next.fetch_add(1, Ordering::Relaxed)) {
                        bytes +=
                            templated_prompts(template, batch.iter().map(String::as_str), name)
                                .into_iter()
                                .map(|r| r.unwrap().unwrap().len())
                                .sum::<usize>();
                    }
                    bytes
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}
