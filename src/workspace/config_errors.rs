//! Every problem of an `rwb.toml` at once, in file order (issue 32): serde stops at
//! the first, so each problem's lines are set aside and the file read again, until
//! it reads or a problem cannot be set aside (broken TOML syntax). An unknown key
//! gets the nearest known one as "did you mean" (an unknown value already lists the
//! few there are).

use serde::de::DeserializeOwned;

/// At most this many problems are collected (a file of another program's settings
/// would otherwise list every line).
const MOST: usize = 20;

/// Reads `text` as `T`, or names every problem found, each as `line N: [table]
/// key: what is wrong`, in file order.
pub(super) fn parse_all<T: DeserializeOwned>(text: &str) -> Result<T, Vec<String>> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut problems: Vec<(usize, String)> = Vec::new();
    loop {
        let current = lines.join("\n");
        let error = match toml::from_str::<T>(&current) {
            Ok(value) if problems.is_empty() => return Ok(value),
            Ok(_) => break,
            Err(e) => e,
        };
        let message = did_you_mean(error.message().trim());
        let Some(start) = error.span().map(|s| s.start.min(current.len())) else {
            problems.push((usize::MAX, message));
            break;
        };
        let line = current[..start].matches('\n').count() + 1;
        let described = match super::config::field_at(text, line) {
            Some(field) => format!("line {line}: {field}: {message}"),
            None => format!("line {line}: {message}"),
        };
        if problems.iter().any(|(_, p)| *p == described) {
            break;
        }
        problems.push((line, described));
        if problems.len() >= MOST || !set_aside(&mut lines, line) {
            break;
        }
    }
    problems.sort_by_key(|(line, _)| *line);
    Err(problems.into_iter().map(|(_, p)| p).collect())
}

/// Blanks the setting at `line` (1-based) and the lines that continue its value, or
/// a whole table when `line` is its header; false when what is left is no longer
/// TOML (the problem was the syntax itself: nothing after it can be read).
fn set_aside(lines: &mut [String], line: usize) -> bool {
    let Some(first) = line.checked_sub(1).filter(|i| *i < lines.len()) else {
        return false;
    };
    let before = lines.join("\n");
    if toml::from_str::<toml::Table>(&before).is_err() {
        return false;
    }
    let header = is_header(&lines[first]);
    lines[first].clear();
    for l in lines[first + 1..].iter_mut() {
        if is_header(l) || (!header && is_assignment(l)) {
            break;
        }
        l.clear();
    }
    toml::from_str::<toml::Table>(&lines.join("\n")).is_ok()
}

fn is_header(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('[')
        && t[1..]
            .trim_start()
            .starts_with(|c: char| c.is_alphanumeric() || c == '[' || c == '"' || c == '_')
}

/// `key = ...` (a bare, dotted or quoted key).
fn is_assignment(line: &str) -> bool {
    let Some((key, _)) = line.split_once('=') else {
        return false;
    };
    let key = key.trim();
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.\"' ".contains(c))
}

/// serde's "unknown field `timeot`, expected one of `path`, `timeout`" as "unknown
/// field `timeot`: did you mean `timeout`?" when one of the expected names is within
/// a third of the key's letters (at least one edit); as it was otherwise.
pub(super) fn did_you_mean(message: &str) -> String {
    let Some((_, rest)) = message.split_once("unknown field `") else {
        return message.to_string();
    };
    let Some((given, after)) = rest.split_once('`') else {
        return message.to_string();
    };
    let Some((_, expected)) = after.split_once("expected") else {
        return message.to_string();
    };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let best = names
        .iter()
        .map(|n| (edit_distance(&given.to_lowercase(), &n.to_lowercase()), *n))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((d, name)) if d <= (given.chars().count() / 3).max(1) => {
            format!("unknown field `{given}`: did you mean `{name}`?")
        }
        _ => message.to_string(),
    }
}

/// Levenshtein distance (insertions, deletions, substitutions), with a swap of two
/// neighbouring letters counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("timeot", "timeout"), 1);
        assert_eq!(edit_distance("pyhton", "python"), 1);
        assert_eq!(edit_distance("abc", "xyz"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }

    #[test]
    fn a_close_name_is_suggested_a_far_one_not() {
        assert_eq!(
            did_you_mean("unknown field `timeot`, expected one of `path`, `timeout`"),
            "unknown field `timeot`: did you mean `timeout`?"
        );
        assert_eq!(
            did_you_mean("unknown field `pyhton`, expected `python` or `jobs`"),
            "unknown field `pyhton`: did you mean `python`?"
        );
        let variant = "unknown variant `trx`, expected one of `trl`, `verl`";
        assert_eq!(did_you_mean(variant), variant);
        let far = "unknown field `colour`, expected `path` or `style`";
        assert_eq!(did_you_mean(far), far);
        assert_eq!(did_you_mean("invalid type: string"), "invalid type: string");
    }
}

#[cfg(test)]
mod every_problem {
    use crate::workspace::Config;

    #[test]
    fn every_problem_is_named_in_file_order_with_did_you_mean() {
        let text = "\
pyhton = \"python3\"
timeout = \"ten\"
[evaluators.acc]
function = \"rewards.py::acc\"
timeot = 5
weight = 1.0
[trainig]
algorithm = \"grpo\"
[generate]
model = \"m\"
n = \"four\"
";
        let e = Config::parse(text).unwrap_err();
        let problems: Vec<&str> = e
            .strip_prefix("5 problems: ")
            .unwrap_or_else(|| panic!("{e}"))
            .split("; line ")
            .collect();
        assert!(
            problems[0].starts_with("line 1: pyhton: unknown field `pyhton`"),
            "{e}"
        );
        assert!(problems[0].ends_with("did you mean `python`?"), "{e}");
        assert!(
            problems[1].starts_with("2: timeout: invalid type: string \"ten\""),
            "{e}"
        );
        assert!(
            problems[2].starts_with("5: [evaluators.acc] timeot: unknown field `timeot`"),
            "{e}"
        );
        assert!(problems[2].ends_with("did you mean `timeout`?"), "{e}");
        assert!(problems[3].starts_with("7: unknown field `trainig`"), "{e}");
        assert!(problems[3].ends_with("did you mean `training`?"), "{e}");
        assert!(
            problems[4].starts_with("11: [generate] n: invalid type: string \"four\""),
            "{e}"
        );
        // one problem reads as before
        let e = Config::parse("jobs = 2\ntimeot = 5\n").unwrap_err();
        assert!(
            e.starts_with("line 2: timeot: unknown field `timeot`"),
            "{e}"
        );
        assert!(e.ends_with("`timeot`: did you mean `timeout`?"), "{e}");
        // broken syntax: nothing after it can be read, it alone is named
        let e = Config::parse("jobs = \nfoo = 1\n").unwrap_err();
        assert!(e.starts_with("line 1"), "{e}");
        assert!(!e.contains("problems"), "{e}");
    }
}
