//! `rwb check`'s contract breaks as a user reads them: one evaluator's breaks put
//! together by kind — the same words whatever number or exception message each sample
//! gave ("score 23.33 to 42.33 is outside [0, 1]") — every number rounded to 4
//! significant digits, and the samples as a count with a location or two.

use serde::Serialize;

/// `x` rounded to 4 significant digits, as `%.4g` would but without an exponent
/// between 1e-4 and 1e15: `23.33`, `0.569`, `6`, `12350`, `1.5e-07`.
pub fn four_digits(x: f64) -> String {
    if !x.is_finite() {
        return crate::model::py_float(x);
    }
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(3 - exp);
    let rounded = (x * scale).round() / scale;
    // rounding may carry into the next power of ten (9.9996 → 10)
    let exp = rounded.abs().log10().floor() as i32;
    if !(-4..15).contains(&exp) {
        let text = format!("{rounded:.3e}");
        let (mantissa, power) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let power: i32 = power.parse().unwrap_or(0);
        return format!(
            "{mantissa}e{}{:02}",
            if power < 0 { '-' } else { '+' },
            power.abs()
        );
    }
    let decimals = (3 - exp).max(0) as usize;
    let text = format!("{rounded:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A score as [`four_digits`], a whole one written as a float (`0.0`, `1.0`), as
/// Python prints a reward's scores.
pub fn score_digits(x: f64) -> String {
    let text = four_digits(x);
    if x.is_finite() && !text.contains(['.', 'e']) {
        text + ".0"
    } else {
        text
    }
}

/// Samples (`FILE:LINE`) as a user reads them: the one; or how many, with the first
/// two (all three when there are three).
pub fn samples_text(samples: &[String]) -> String {
    match samples.len() {
        0 => String::new(),
        1 => samples[0].clone(),
        n => format!("{n} samples: {}", locations(samples)),
    }
}

/// The first two samples, or all of them when there are three or fewer.
pub fn locations(samples: &[String]) -> String {
    if samples.len() <= 3 {
        samples.join(", ")
    } else {
        format!("{}, {}, …", samples[0], samples[1])
    }
}

/// One kind of contract break: its words (with the numbers its samples gave, a range
/// where they differ) and the samples that showed it, in file and line order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Kind {
    pub issue: String,
    pub samples: Vec<String>,
}

/// A piece of an issue's text: words, a number, or an exception's message.
#[derive(Debug, PartialEq)]
enum Part {
    Words(String),
    Number(f64),
    Message(String),
}

/// `issue` cut into parts: after "raised TYPE: " the message is one part; elsewhere
/// each number standing alone (not inside a word or a name like `main.py:41`).
fn parts(issue: &str) -> Vec<Part> {
    if let Some(at) = issue
        .find("raised ")
        .filter(|&i| i == 0 || issue[..i].ends_with(' '))
    {
        let after = &issue[at + "raised ".len()..];
        let name = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(after.len());
        if name > 0 && after[name..].starts_with(": ") {
            let head = &issue[..at + "raised ".len() + name];
            let mut out = numbers(head);
            out.push(Part::Words(": ".into()));
            out.push(Part::Message(after[name + 2..].to_string()));
            return out;
        }
    }
    numbers(issue)
}

fn numbers(text: &str) -> Vec<Part> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut words = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let alone = !before.is_some_and(|b| b.is_ascii_alphanumeric() || b"_.:'\"".contains(&b));
        let starts = bytes[i].is_ascii_digit()
            || (bytes[i] == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        if alone && starts {
            let end = number_end(bytes, i);
            let ends_alone = !bytes
                .get(end)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
            if let (true, Ok(x)) = (ends_alone, text[i..end].parse::<f64>()) {
                if !words.is_empty() {
                    out.push(Part::Words(std::mem::take(&mut words)));
                }
                out.push(Part::Number(x));
                i = end;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        words.push(c);
        i += c.len_utf8();
    }
    if !words.is_empty() {
        out.push(Part::Words(words));
    }
    out
}

/// The end of the number that starts at `i`: `-12.5e-3`.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let digits = |i: &mut usize| {
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    };
    if bytes[i] == b'-' {
        i += 1;
    }
    digits(&mut i);
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        digits(&mut i);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = j;
            digits(&mut i);
        }
    }
    i
}

/// What issues of one kind share: their words, and where numbers and messages go.
fn shape(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Words(w) => w.as_str(),
            Part::Number(_) => "\u{0}",
            Part::Message(_) => "\u{1}",
        })
        .collect()
}

/// (file, line) of a `FILE:LINE` sample, for ordering.
pub fn place(sample: &str) -> (&str, u64) {
    match sample.rsplit_once(':') {
        Some((file, line)) => (file, line.parse().unwrap_or(u64::MAX)),
        None => (sample, 0),
    }
}

/// The breaks of one evaluator (each distinct issue with its samples) put together by
/// kind, the kind most samples showed first.
pub fn kinds(breaks: &[(String, Vec<String>)]) -> Vec<Kind> {
    struct Group {
        parts: Vec<Part>,
        numbers: Vec<(f64, f64)>,
        messages: Vec<String>,
        samples: Vec<String>,
    }
    let mut groups: Vec<(String, Group)> = Vec::new();
    for (issue, samples) in breaks {
        let parts = parts(issue);
        let key = shape(&parts);
        let index = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((
                    key,
                    Group {
                        numbers: Vec::new(),
                        messages: Vec::new(),
                        samples: Vec::new(),
                        parts: Vec::new(),
                    },
                ));
                groups.len() - 1
            }
        };
        let group = &mut groups[index].1;
        let mut slot = 0;
        for part in &parts {
            match part {
                Part::Number(x) => {
                    match group.numbers.get_mut(slot) {
                        Some((low, high)) => {
                            *low = low.min(*x);
                            *high = high.max(*x);
                        }
                        None => group.numbers.push((*x, *x)),
                    }
                    slot += 1;
                }
                Part::Message(m) if !group.messages.contains(m) => group.messages.push(m.clone()),
                _ => {}
            }
        }
        if group.parts.is_empty() {
            group.parts = parts;
        }
        for s in samples {
            if !group.samples.contains(s) {
                group.samples.push(s.clone());
            }
        }
    }
    let mut out: Vec<Kind> = groups
        .into_iter()
        .map(|(_, mut g)| {
            g.samples.sort_by(|a, b| place(a).cmp(&place(b)));
            let mut numbers = g.numbers.iter();
            let issue = g
                .parts
                .iter()
                .map(|p| match p {
                    Part::Words(w) => w.clone(),
                    Part::Number(_) => match numbers.next() {
                        Some((low, high)) if low == high => four_digits(*low),
                        Some((low, high)) => {
                            format!("{} to {}", four_digits(*low), four_digits(*high))
                        }
                        None => String::new(),
                    },
                    Part::Message(_) => message_text(&g.messages),
                })
                .collect();
            Kind {
                issue,
                samples: g.samples,
            }
        })
        .collect();
    out.sort_by_key(|k| std::cmp::Reverse(k.samples.len()));
    out
}

/// An exception's messages over the samples: the first (shortened), and how many
/// others there were.
fn message_text(messages: &[String]) -> String {
    let first = messages.first().map(String::as_str).unwrap_or("");
    let first = match first.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None => first.to_string(),
    };
    match messages.len() {
        0 | 1 => first,
        2 => format!("{first} (and 1 other message)"),
        n => format!("{first} (and {} other messages)", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        let cases = [
            (23.333333333333332, "23.33"),
            (0.5690080380309784, "0.569"),
            (6.0, "6"),
            (-0.0, "0"),
            (12345.0, "12350"),
            (9.99996, "10"),
            (0.00012345, "0.0001235"),
            (1.5e-7, "1.5e-07"),
            (3.2857142857142856e20, "3.286e+20"),
            (-42.333333333333336, "-42.33"),
            (1.0, "1"),
        ];
        for (x, want) in cases {
            assert_eq!(four_digits(x), want, "{x}");
        }
        assert_eq!(four_digits(f64::NAN), "nan");
        assert_eq!(
            [0.0, 1.0, 0.5690080380309784, 12345.0].map(score_digits),
            ["0.0", "1.0", "0.569", "12350.0"]
        );
    }

    fn at(lines: &[u32]) -> Vec<String> {
        lines.iter().map(|l| format!("s.jsonl:{l}")).collect()
    }

    #[test]
    fn issues_that_differ_only_in_their_numbers_are_one_kind_with_a_range() {
        let breaks = vec![
            (
                "component 'len' score 3.2857142857142856 is outside [0, 1]".to_string(),
                at(&[4]),
            ),
            (
                "component 'len' score 4.428571428571429 is outside [0, 1]".to_string(),
                at(&[1, 2]),
            ),
            (
                "score 23.333333333333332 is outside [0, 1]".to_string(),
                at(&[4]),
            ),
            (
                "score 31.333333333333332 is outside [0, 1]".to_string(),
                at(&[1, 2]),
            ),
            (
                "score 42.333333333333336 is outside [0, 1]".to_string(),
                at(&[3]),
            ),
            ("did not return within 5 s".to_string(), at(&[10])),
        ];
        assert_eq!(
            kinds(&breaks),
            vec![
                Kind {
                    issue: "score 23.33 to 42.33 is outside [0, 1]".into(),
                    samples: at(&[1, 2, 3, 4]),
                },
                Kind {
                    issue: "component 'len' score 3.286 to 4.429 is outside [0, 1]".into(),
                    samples: at(&[1, 2, 4]),
                },
                Kind {
                    issue: "did not return within 5 s".into(),
                    samples: at(&[10]),
                },
            ]
        );
    }

    #[test]
    fn an_exception_is_one_kind_whatever_its_message_and_names_keep_their_digits() {
        let breaks = vec![
            (
                "raised ValueError: could not convert string to float: 'x'".to_string(),
                at(&[2]),
            ),
            (
                "raised ValueError: could not convert string to float: 'y'".to_string(),
                at(&[4]),
            ),
            ("raised KeyError: 'step_2'".to_string(), at(&[5])),
            (
                "a second identical call raised ValueError: 3 is odd".to_string(),
                at(&[6]),
            ),
            ("mutated its input: metrics_v2".to_string(), at(&[7])),
        ];
        let found: Vec<String> = kinds(&breaks).into_iter().map(|k| k.issue).collect();
        assert_eq!(
            found,
            [
                "raised ValueError: could not convert string to float: 'x' (and 1 other message)",
                "raised KeyError: 'step_2'",
                "a second identical call raised ValueError: 3 is odd",
                "mutated its input: metrics_v2",
            ]
        );
    }

    #[test]
    fn samples_are_counted_with_a_location_or_two() {
        assert_eq!(samples_text(&at(&[4])), "s.jsonl:4");
        assert_eq!(
            samples_text(&at(&[1, 2, 3])),
            "3 samples: s.jsonl:1, s.jsonl:2, s.jsonl:3"
        );
        assert_eq!(
            samples_text(&at(&[1, 2, 3, 9])),
            "4 samples: s.jsonl:1, s.jsonl:2, …"
        );
    }
}
