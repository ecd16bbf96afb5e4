//! What `rwb check`'s audit saw an evaluator reach (SPEC §16, §18), as the worker's
//! audit hook wrote it (`src/engine/python/rwb_py/audit.py`), sorted into kinds, and
//! judged: what only means a reward cannot be replayed exactly (a network call, a
//! file in its temporary folder), what rwb's box refused, and what fails the check:
//! the policy's text run outside rwb's sandbox, or a write outside the places a
//! contained reward may write to while the workers run open.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A kind of thing an evaluator reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    Network,
    Sandbox,
    Subprocess,
    Shell,
    /// A completion compiled and run in the reward's own process.
    CompletionInProcess,
    /// A subprocess or a shell command made of a completion's text.
    CompletionSubprocess,
    CompletionShell,
    Write,
    /// A write the filesystem refused (rwb's box, or permissions).
    RefusedWrite,
    Other,
}

/// The worker's words for each kind (`audit.py`), and what the target is called.
const PREFIXES: [(&str, Reach, &str); 8] = [
    ("calls the network: ", Reach::Network, "addresses"),
    ("runs code in rwb's sandbox: ", Reach::Sandbox, "addresses"),
    ("runs a subprocess: ", Reach::Subprocess, "commands"),
    ("runs a shell command: ", Reach::Shell, "commands"),
    (
        "runs completion text in-process (exec): ",
        Reach::CompletionInProcess,
        "sources",
    ),
    (
        "runs completion text in a subprocess: ",
        Reach::CompletionSubprocess,
        "commands",
    ),
    (
        "runs completion text in a shell: ",
        Reach::CompletionShell,
        "commands",
    ),
    ("writes ", Reach::Write, "files"),
];

impl Reach {
    /// A finding as the worker wrote it: its kind and what it reached.
    pub fn parse(what: &str) -> (Reach, &str) {
        for (prefix, reach, _) in PREFIXES {
            if let Some(target) = what.strip_prefix(prefix) {
                return (reach, target);
            }
        }
        if let Some(path) = what
            .strip_prefix("tried to write ")
            .and_then(|p| p.strip_suffix(" (refused)"))
        {
            return (Reach::RefusedWrite, path);
        }
        (Reach::Other, what)
    }

    /// The words that come before what was reached ("runs a subprocess").
    pub fn words(self) -> &'static str {
        match self {
            Reach::RefusedWrite => "tried to write",
            Reach::Other => "reaches",
            _ => PREFIXES
                .iter()
                .find(|p| p.1 == self)
                .map_or("", |p| p.0.trim_end().trim_end_matches(':')),
        }
    }

    /// What its targets are called ("commands").
    pub fn targets(self) -> &'static str {
        PREFIXES
            .iter()
            .find(|p| p.1 == self)
            .map_or("files", |p| p.2)
    }

    /// Whether it runs the policy's text (SPEC §18: that belongs in rwb's sandbox).
    pub fn runs_completion(self) -> bool {
        matches!(
            self,
            Reach::CompletionInProcess | Reach::CompletionSubprocess | Reach::CompletionShell
        )
    }
}

/// What a finding means for the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fails the check (exit 1).
    Fails,
    /// Refused by rwb's box: nothing happened, the sample's call saw an error.
    Refused,
    /// Said, and only means the reward cannot be replayed exactly.
    Seen,
}

/// How an evaluator's worker runs, and the places a contained reward may write to.
#[derive(Clone, Debug, Default)]
pub struct Judge {
    /// rwb's box holds the worker (writes outside its holes are refused).
    pub contained: bool,
    /// TMPDIR, `/tmp`, `~/.cache` and `[sandbox] writable` (SPEC §18).
    pub writable: Vec<PathBuf>,
}

impl Judge {
    pub fn verdict(&self, reach: Reach, target: &str) -> Verdict {
        match reach {
            r if r.runs_completion() => Verdict::Fails,
            Reach::Write if !self.contained && !self.may_write(Path::new(target)) => Verdict::Fails,
            Reach::RefusedWrite if self.contained => Verdict::Refused,
            _ => Verdict::Seen,
        }
    }

    fn may_write(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(w))
    }

    /// What to do about a kind of finding that fails the check, in words.
    pub fn advice(&self, reach: Reach) -> String {
        let sandbox = "run it through `rwb.sandbox.run(code, tests)` or `run_code` (SPEC §18), or set [sandbox] e2b = true for open-r1's code_reward";
        match reach {
            Reach::CompletionInProcess => format!(
                "the policy's code runs inside the reward's own process: it can rewrite the reward's verdict, and nothing limits its memory, time or network{}; {sandbox}",
                if self.contained { " (rwb's box guards your files, not the reward)" } else { ", and with workers open it has your full power" }
            ),
            Reach::CompletionSubprocess | Reach::CompletionShell if self.contained => format!(
                "contained, it cannot write your files, but nothing limits its memory, processes or time, it keeps the worker's network, and it can fake a pass (exit 0 before the asserts); {sandbox}"
            ),
            Reach::CompletionSubprocess | Reach::CompletionShell => format!(
                "the workers run open: the policy's code runs with your full power (your files, your network), with no limit on memory, processes or time; keep workers contained (no --no-contain, no [sandbox] workers = \"open\") and {sandbox}"
            ),
            Reach::Write => "outside its temporary folder, ~/.cache and [sandbox] writable, with the workers open: contained, rwb would refuse it; keep workers contained, or if the reward must write there add the folder to writable = [...] under [sandbox] in rwb.toml".into(),
            _ => String::new(),
        }
    }
}

/// The places a contained reward may write to, for judging writes of open workers:
/// the temporary folders, the devices (`/dev/null`, `/dev/shm`), the cache folder and
/// `[sandbox] writable` (made absolute from the workspace `root`).
pub fn writable_places(root: &Path, writable: &[String]) -> Vec<PathBuf> {
    let mut out = vec![
        PathBuf::from("/tmp"),
        std::env::temp_dir(),
        PathBuf::from("/dev"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        out.push(PathBuf::from(home).join(".cache"));
    }
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME") {
        out.push(PathBuf::from(cache));
    }
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    out.extend(writable.iter().map(|w| root.join(w)));
    out
}

/// One line of the audit's report: a kind of finding with each distinct thing it
/// reached (in the order first seen) and the samples that reached it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub reach: Reach,
    pub verdict: Verdict,
    pub targets: Vec<(String, Vec<String>)>,
}

impl Group {
    /// Every sample of the group, each once, in the order first seen.
    pub fn samples(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.targets.iter().flat_map(|t| &t.1) {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }
}

/// What an evaluator reached (each finding with its samples), grouped by kind and
/// verdict: the failing kinds first, then the refused, then the rest.
pub fn group(reaches: &[(String, Vec<String>)], judge: &Judge) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (what, samples) in reaches {
        let (reach, target) = Reach::parse(what);
        let verdict = judge.verdict(reach, target);
        let target = (target.to_string(), samples.clone());
        match out
            .iter_mut()
            .find(|g| g.reach == reach && g.verdict == verdict)
        {
            Some(g) => g.targets.push(target),
            None => out.push(Group {
                reach,
                verdict,
                targets: vec![target],
            }),
        }
    }
    let rank = |v: Verdict| match v {
        Verdict::Fails => 0,
        Verdict::Refused => 1,
        Verdict::Seen => 2,
    };
    out.sort_by_key(|g| rank(g.verdict));
    out
}

/// A command or source as the report shows it: indented under its line, `width`
/// lines at most (then how many more), each line clipped.
pub fn block(text: &str, indent: &str, most: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(most)
        .map(|l| {
            let shown: String = match l.char_indices().nth(100) {
                Some((cut, _)) => format!("{}…", &l[..cut]),
                None => l.to_string(),
            };
            format!("{indent}│ {shown}")
        })
        .collect();
    if lines.len() > most {
        let more = lines.len() - most;
        out.push(format!(
            "{indent}│ … {more} more line{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(lines: &[u32]) -> Vec<String> {
        lines.iter().map(|l| format!("s.jsonl:{l}")).collect()
    }

    #[test]
    fn the_policys_text_run_anywhere_but_the_sandbox_fails_contained_or_open() {
        for contained in [true, false] {
            let judge = Judge {
                contained,
                writable: vec![PathBuf::from("/tmp")],
            };
            for what in [
                "runs completion text in-process (exec): import os",
                "runs completion text in a subprocess: python3 -c print(1)",
                "runs completion text in a shell: rm -rf ~",
            ] {
                let (reach, target) = Reach::parse(what);
                assert_eq!(judge.verdict(reach, target), Verdict::Fails, "{what}");
                assert!(judge.advice(reach).contains("rwb.sandbox.run"), "{what}");
            }
            let (reach, target) = Reach::parse("runs a subprocess: git status");
            assert_eq!(judge.verdict(reach, target), Verdict::Seen);
            let (reach, target) = Reach::parse("runs code in rwb's sandbox: /run/rwb/sandbox.sock");
            assert_eq!(
                (reach, judge.verdict(reach, target)),
                (Reach::Sandbox, Verdict::Seen)
            );
        }
    }

    #[test]
    fn a_write_fails_only_where_the_box_would_have_refused_it_and_open() {
        let writable = vec![PathBuf::from("/tmp"), PathBuf::from("/home/u/.cache")];
        let open = Judge {
            contained: false,
            writable: writable.clone(),
        };
        let contained = Judge {
            contained: true,
            writable,
        };
        for (what, when_open, when_contained) in [
            ("writes /tmp/x/judged.json", Verdict::Seen, Verdict::Seen),
            (
                "writes /home/u/.cache/m/w.bin",
                Verdict::Seen,
                Verdict::Seen,
            ),
            ("writes /home/u/pwned.txt", Verdict::Fails, Verdict::Seen),
            ("writes /tmpfoo/x", Verdict::Fails, Verdict::Seen),
            (
                "tried to write /home/u/pwned.txt (refused)",
                Verdict::Seen,
                Verdict::Refused,
            ),
        ] {
            let (reach, target) = Reach::parse(what);
            assert_eq!(open.verdict(reach, target), when_open, "{what}");
            assert_eq!(contained.verdict(reach, target), when_contained, "{what}");
        }
        assert_eq!(
            Reach::parse("tried to write /a b (refused)"),
            (Reach::RefusedWrite, "/a b")
        );
    }

    #[test]
    fn findings_are_grouped_by_kind_failing_ones_first() {
        let judge = Judge::default();
        let reaches = vec![
            ("calls the network: a:443".to_string(), at(&[1, 2])),
            (
                "runs completion text in a subprocess: python -c A".to_string(),
                at(&[1]),
            ),
            (
                "runs completion text in a subprocess: python -c B".to_string(),
                at(&[2]),
            ),
            ("calls the network: b:443".to_string(), at(&[2])),
        ];
        let groups = group(&reaches, &judge);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].reach, groups[0].verdict, groups[0].samples()),
            (Reach::CompletionSubprocess, Verdict::Fails, at(&[1, 2]))
        );
        assert_eq!(groups[1].targets.len(), 2);
        assert_eq!(groups[1].reach.words(), "calls the network");
    }

    #[test]
    fn a_long_script_is_indented_and_shortened() {
        let script = "def add(a, b):\n    return a + b\nassert add(1, 2) == 3\nassert add(2, 2) == 4\nprint('ok')\n";
        assert_eq!(
            block(script, "    ", 3),
            [
                "    │ def add(a, b):",
                "    │     return a + b",
                "    │ assert add(1, 2) == 3",
                "    │ … 2 more lines",
            ]
        );
    }
}
