//! One generation: what the cache holds is taken, what is missing is asked for,
//! `concurrency` requests at a time, and each answer is stored as it arrives.
//!
//! Seeds as vLLM gives them (`vllm/v1/engine/parallel_sampling.py` @
//! 003d3ee22261b7937258b7531aee00e10393f1d6, `ParentRequest._get_child_sampling_params`:
//! child `index` of an `n` request is seeded `seed + index`): completion j of a prompt
//! is the server's completion for seed S + j. So the missing indices of a prompt are
//! asked as runs of consecutive indices, each one request with `n` = its length and
//! `seed` = S + its first index — the same completions as one request per index, in
//! fewer requests. Without a seed a prompt's missing completions are one request.
//! A server that answers fewer choices than `n`, or gives one up (`abort`), is asked
//! again for the rest.

use super::answer::{Completion, Route};
use super::cache::{self, Cache, CompletionKey};
use super::client::{Client, Failure, TRIES};
use super::prompts::{Prompt, PromptInput};
use super::{Event, Settings};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// What a generation came to.
#[derive(Debug, Default)]
pub struct Report {
    /// Each prompt's completions (of the indices asked for), in index order; `None`
    /// for a prompt that did not get them all (it is in `failures`).
    pub groups: Vec<Option<Vec<Completion>>>,
    /// Prompts that failed for good, with the server's message, in prompt order.
    pub failures: Vec<(usize, String)>,
    /// Completions taken from the cache.
    pub cached: u64,
    /// Completions the server gave (and that were stored).
    pub answered: u64,
    /// Requests sent (tries included).
    pub requests: u64,
}

/// One request's worth: a prompt's indices, asked together.
struct Job {
    prompt: usize,
    indices: Vec<u32>,
}

/// What the requests share while they run.
struct Shared<'a> {
    settings: &'a Settings,
    prompts: &'a [Prompt],
    keys: Vec<Vec<CompletionKey>>,
    first_index: u32,
    cache: &'a Cache,
    client: Client,
    events: &'a (dyn Fn(Event) + Sync),
    slots: Mutex<Vec<Vec<Option<Completion>>>>,
    failures: Mutex<HashMap<usize, String>>,
    fatal: Mutex<Option<String>>,
    cancel: CancellationToken,
    answered: AtomicU64,
    requests: AtomicU64,
}

/// Asks for completions `indices` of every prompt (completion j of the `-n N` group is
/// index j; the workbench asks for indices past those it has). `Err` is a failure of
/// the whole generation (exit 2): the endpoint, the key, the cache.
pub async fn generate(
    settings: &Settings,
    prompts: &[Prompt],
    indices: Range<u32>,
    cache: &Cache,
    events: &(dyn Fn(Event) + Sync),
) -> Result<Report, String> {
    let keys = keys_of(settings, prompts, indices.clone());
    let flat: Vec<CompletionKey> = keys.iter().flatten().copied().collect();
    let mut stored = cache.get_many(&flat)?.into_iter();
    let slots: Vec<Vec<Option<Completion>>> = keys
        .iter()
        .map(|ks| ks.iter().map(|_| stored.next().flatten()).collect())
        .collect();
    let cached = slots.iter().flatten().filter(|s| s.is_some()).count() as u64;
    events(Event::Planned {
        prompts: prompts.len(),
        completions: flat.len() as u64,
        cached,
    });
    let jobs = plan(settings, &slots, indices.start);
    for (p, group) in slots.iter().enumerate() {
        if group.iter().all(Option::is_some) {
            events(Event::Done { prompt: p });
        }
    }
    let shared = Shared {
        settings,
        prompts,
        keys,
        first_index: indices.start,
        cache,
        client: Client::new(
            &settings.params.endpoint,
            settings.key.clone(),
            &settings.api_key_env,
            settings.timeout,
        )?,
        events,
        slots: Mutex::new(slots),
        failures: Mutex::default(),
        fatal: Mutex::default(),
        cancel: CancellationToken::new(),
        answered: AtomicU64::new(0),
        requests: AtomicU64::new(0),
    };
    futures::stream::iter(jobs)
        .for_each_concurrent(settings.concurrency.max(1), |job| shared.run(job))
        .await;
    if let Some(fatal) = shared.fatal.lock().unwrap().take() {
        return Err(fatal);
    }
    let mut failures: Vec<(usize, String)> =
        shared.failures.into_inner().unwrap().into_iter().collect();
    failures.sort_by_key(|(p, _)| *p);
    let groups = shared
        .slots
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|group| group.into_iter().collect::<Option<Vec<_>>>())
        .collect();
    Ok(Report {
        groups,
        failures,
        cached,
        answered: shared.answered.into_inner(),
        requests: shared.requests.into_inner(),
    })
}

/// Every completion's cache key, by prompt and index. The k-th prompt of a set with a
/// given content is occurrence k: two equal prompts are two groups.
fn keys_of(
    settings: &Settings,
    prompts: &[Prompt],
    indices: Range<u32>,
) -> Vec<Vec<CompletionKey>> {
    let mut seen: HashMap<blake3::Hash, u32> = HashMap::new();
    prompts
        .iter()
        .map(|prompt| {
            let identity = blake3::hash(input_json(&prompt.input).as_bytes());
            let occurrence = seen.entry(identity).or_insert(0);
            let this = *occurrence;
            *occurrence += 1;
            indices
                .clone()
                .map(|j| cache::key(&settings.params, &prompt.input, this, j))
                .collect()
        })
        .collect()
}

fn input_json(input: &PromptInput) -> String {
    match input {
        PromptInput::Chat(turns) => json!(["chat", turns]).to_string(),
        PromptInput::Text(text) => json!(["text", text]).to_string(),
    }
}

/// The requests for what the cache lacks: with a seed, runs of consecutive missing
/// indices; without, all of a prompt's missing indices at once.
fn plan(settings: &Settings, slots: &[Vec<Option<Completion>>], first: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (prompt, group) in slots.iter().enumerate() {
        let missing: Vec<u32> = group
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(j, _)| first + j as u32)
            .collect();
        jobs.extend(split(settings, prompt, missing));
    }
    jobs
}

/// A prompt's missing indices as jobs (see [`plan`]).
fn split(settings: &Settings, prompt: usize, missing: Vec<u32>) -> Vec<Job> {
    if missing.is_empty() {
        return Vec::new();
    }
    if settings.params.seed.is_none() {
        return vec![Job {
            prompt,
            indices: missing,
        }];
    }
    let mut jobs: Vec<Job> = Vec::new();
    for j in missing {
        match jobs.last_mut() {
            Some(job) if job.indices.last() == Some(&(j - 1)) => job.indices.push(j),
            _ => jobs.push(Job {
                prompt,
                indices: vec![j],
            }),
        }
    }
    jobs
}

impl Shared<'_> {
    /// Runs one job to its end: its completions stored, or its prompt failed.
    async fn run(&self, job: Job) {
        let prompt = job.prompt;
        let mut pending = vec![job];
        let mut rounds = 0;
        while let Some(job) = pending.pop() {
            if self.cancel.is_cancelled() {
                return;
            }
            rounds += 1;
            let missing = match self.ask(&job).await {
                Ok(missing) => missing,
                Err(Failure::Stopped) => return,
                Err(Failure::Fatal(message)) => {
                    self.fatal.lock().unwrap().get_or_insert(message);
                    self.cancel.cancel();
                    return;
                }
                Err(Failure::Prompt(message)) => return self.fail(prompt, message),
            };
            if missing.is_empty() {
                continue;
            }
            if rounds >= TRIES {
                let message = format!(
                    "POST {} gave {} of the completions asked for after {TRIES} requests (the rest were missing or aborted)",
                    self.client.url(route(&self.prompts[prompt].input)),
                    job.indices.len() - missing.len(),
                );
                return self.fail(prompt, message);
            }
            pending.extend(split(self.settings, prompt, missing).into_iter().rev());
        }
    }

    /// One request (with its tries): stores what it gives; the indices it did not give.
    async fn ask(&self, job: &Job) -> Result<Vec<u32>, Failure> {
        let prompt = &self.prompts[job.prompt];
        let route = route(&prompt.input);
        let body = request_body(self.settings, &prompt.input, job);
        let retrying = |why: &str, wait| {
            self.requests.fetch_add(1, Ordering::Relaxed);
            (self.events)(Event::Retrying {
                prompt: job.prompt,
                why: why.to_string(),
                wait,
            })
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        let answer = self
            .client
            .ask(route, &body, &self.cancel, retrying)
            .await?;
        let mut missing = Vec::new();
        let mut got: Vec<(u32, Completion)> = Vec::new();
        let mut choices = answer.choices.into_iter();
        for &j in &job.indices {
            match choices.next() {
                Some(c) if !c.aborted() => got.push((j, c)),
                _ => missing.push(j),
            }
        }
        let keys = &self.keys[job.prompt];
        let entries: Vec<(CompletionKey, &Completion)> = got
            .iter()
            .map(|(j, c)| (keys[(j - self.first_index) as usize], c))
            .collect();
        self.cache.put(&entries).map_err(Failure::Fatal)?;
        self.answered.fetch_add(got.len() as u64, Ordering::Relaxed);
        let complete = {
            let mut slots = self.slots.lock().unwrap();
            let group = &mut slots[job.prompt];
            let arrived = got.len() as u32;
            for (j, c) in got {
                group[(j - self.first_index) as usize] = Some(c);
            }
            arrived > 0 && group.iter().all(Option::is_some)
        };
        (self.events)(Event::Arrived {
            prompt: job.prompt,
            completions: (job.indices.len() - missing.len()) as u32,
            tokens: answer.completion_tokens,
        });
        if complete {
            (self.events)(Event::Done { prompt: job.prompt });
        }
        Ok(missing)
    }

    fn fail(&self, prompt: usize, message: String) {
        let mut failures = self.failures.lock().unwrap();
        if let std::collections::hash_map::Entry::Vacant(entry) = failures.entry(prompt) {
            entry.insert(message.clone());
            (self.events)(Event::Failed { prompt, message });
        }
    }
}

fn route(input: &PromptInput) -> Route {
    match input {
        PromptInput::Chat(_) => Route::Chat,
        PromptInput::Text(_) => Route::Text,
    }
}

/// The request for `job`: `n` its length, `seed` S + its first index.
fn request_body(settings: &Settings, input: &PromptInput, job: &Job) -> Vec<u8> {
    let params = &settings.params;
    let mut body = serde_json::Map::new();
    body.insert("model".into(), Value::String(params.model.clone()));
    match input {
        PromptInput::Chat(turns) => body.insert("messages".into(), Value::Array(turns.clone())),
        PromptInput::Text(text) => body.insert("prompt".into(), Value::String(text.clone())),
    };
    body.insert("n".into(), json!(job.indices.len()));
    body.insert("max_tokens".into(), json!(params.max_tokens));
    if let Some(t) = params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = params.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(seed) = params.seed {
        // checked up front: S + N fits
        body.insert("seed".into(), json!(seed + i64::from(job.indices[0])));
    }
    serde_json::to_vec(&Value::Object(body)).expect("a request serializes")
}

#[cfg(test)]
mod tests {
    use super::super::{Params, DEFAULT_TIMEOUT};
    use super::*;

    fn settings(seed: Option<i64>) -> Settings {
        Settings {
            params: Params {
                endpoint: "http://h".into(),
                model: "m".into(),
                temperature: Some(1.0),
                top_p: None,
                max_tokens: 32,
                seed,
            },
            n: 6,
            concurrency: 2,
            api_key_env: "K".into(),
            key: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    fn slots(pattern: &str) -> Vec<Option<Completion>> {
        pattern
            .chars()
            .map(|c| {
                (c == 'x').then(|| Completion::Text {
                    text: "t".into(),
                    finish_reason: json!("stop"),
                })
            })
            .collect()
    }

    #[test]
    fn seeded_gaps_are_asked_as_runs_seeded_at_their_start() {
        let s = settings(Some(100));
        let jobs = plan(&s, &[slots("x..x.x"), slots("xxxxxx")], 0);
        let asked: Vec<(usize, Vec<u32>)> =
            jobs.iter().map(|j| (j.prompt, j.indices.clone())).collect();
        assert_eq!(asked, vec![(0, vec![1, 2]), (0, vec![4])]);
        let input = PromptInput::Text("p".into());
        let body: Value = serde_json::from_slice(&request_body(&s, &input, &jobs[0])).unwrap();
        assert_eq!(
            body,
            json!({"model": "m", "prompt": "p", "n": 2, "max_tokens": 32, "temperature": 1.0, "seed": 101})
        );
        let body: Value = serde_json::from_slice(&request_body(&s, &input, &jobs[1])).unwrap();
        assert_eq!(body["seed"], json!(104));
        assert_eq!(body["n"], json!(1));
    }

    #[test]
    fn unseeded_gaps_are_one_request() {
        let s = settings(None);
        let jobs = plan(&s, &[slots("x..x.x")], 10);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].indices, vec![11, 12, 14]);
        let input = PromptInput::Chat(vec![json!({"role": "user", "content": "q"})]);
        let body: Value = serde_json::from_slice(&request_body(&s, &input, &jobs[0])).unwrap();
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "user", "content": "q"}], "n": 3, "max_tokens": 32, "temperature": 1.0})
        );
    }

    #[test]
    fn equal_prompts_are_groups_of_their_own() {
        let s = settings(Some(1));
        let p = |text: &str| Prompt {
            at: "p".into(),
            input: PromptInput::Text(text.into()),
            columns: Default::default(),
        };
        let keys = keys_of(&s, &[p("a"), p("b"), p("a")], 0..2);
        assert_ne!(keys[0], keys[2]);
        assert_eq!(keys_of(&s, &[p("a")], 0..2)[0], keys[0]);
        assert_eq!(keys_of(&s, &[p("b")], 1..2)[0][0], keys[1][1]);
    }
}
