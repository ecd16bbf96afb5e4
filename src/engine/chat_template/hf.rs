//! What Hugging Face's Jinja environment adds to Jinja (transformers'
//! `chat_template_utils._compile_jinja_template`): `raise_exception(message)`,
//! `strftime_now(format)` and a `tojson` that writes what Python's `json.dumps` writes;
//! and what Python does that minijinja does not by itself: a float written into the
//! text as Python's `str` writes it (`1e-05`, `2.5e+20`).
//!
//! Pure functions of their arguments (and the clock); nothing here knows samples.

use crate::model::py_float;
use minijinja::{Error, ErrorKind, Output, State, Value};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// Hugging Face's `raise_exception(message)`: the template refuses the conversation.
pub(super) fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// Hugging Face's `strftime_now(format)`: the local date and time, formatted.
pub(super) fn strftime_now(format: String) -> Result<Value, Error> {
    Ok(Value::from(strftime(&format, &now_utc())))
}

/// (year, month 1-12, day, hour, minute, second) of the current UTC time.
fn now_utc() -> (i64, u32, u32, u32, u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = crate::model::calendar::civil_from_days(days);
    let (h, m, s) = (rest / 3600, (rest % 3600) / 60, rest % 60);
    (year, month, day, h as u32, m as u32, s as u32)
}

/// The strftime directives chat templates use (`%d %b %Y`, `%Y-%m-%d`, ...).
fn strftime(format: &str, t: &(i64, u32, u32, u32, u32, u32)) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (year, month, day, hour, minute, second) = *t;
    let name = MONTHS[(month as usize).clamp(1, 12) - 1];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => {
                let _ = write!(out, "{day:02}");
            }
            Some('m') => {
                let _ = write!(out, "{month:02}");
            }
            Some('Y') => {
                let _ = write!(out, "{year}");
            }
            Some('y') => {
                let _ = write!(out, "{:02}", year.rem_euclid(100));
            }
            Some('b') => out.push_str(&name[..3]),
            Some('B') => out.push_str(name),
            Some('H') => {
                let _ = write!(out, "{hour:02}");
            }
            Some('M') => {
                let _ = write!(out, "{minute:02}");
            }
            Some('S') => {
                let _ = write!(out, "{second:02}");
            }
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Writes a value into the text as Jinja (Python's `str`) does: a float with Python's
/// repr, anything else as minijinja writes it (which already writes `None`, `True`).
pub(super) fn python_formatter(
    out: &mut Output,
    state: &mut State,
    value: &Value,
) -> Result<(), Error> {
    // most of what a template writes is text: straight into the output, not through
    // `Display` and the formatting machinery
    if let Some(text) = value.as_str() {
        return out.write_str(text).map_err(Error::from);
    }
    if value.is_number() && !value.is_integer() {
        if let Ok(x) = f64::try_from(value.clone()) {
            return out.write_str(&py_float(x)).map_err(Error::from);
        }
    }
    minijinja::escape_formatter(out, state, value)
}

/// Hugging Face's `tojson`: `json.dumps(value, ensure_ascii=False)` (", " and ": "
/// between items, no HTML escaping), or with `indent=N` its indented form.
pub(super) fn tojson(value: Value, kwargs: minijinja::value::Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let _: Option<bool> = kwargs.get("ensure_ascii")?;
    let _: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let json: Json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let mut out = String::new();
    python_dumps(&json, indent, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn python_dumps(value: &Json, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * depth));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match value {
        Json::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                python_dumps(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Json::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                out.push_str(&Json::String(key.clone()).to_string());
                out.push_str(": ");
                python_dumps(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        // Python writes a float with its repr: always a point or an exponent
        Json::Number(n) if n.is_f64() => out.push_str(&py_float(n.as_f64().unwrap_or(0.0))),
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::chat_template::{ChatTemplate, TemplateSource};
    use serde_json::json;

    fn jinja(text: &str) -> TemplateSource {
        TemplateSource::Jinja {
            origin: "t.jinja".into(),
            text: text.into(),
            special_tokens: vec![],
        }
    }

    #[test]
    fn tojson_writes_what_python_json_dumps_writes() {
        let t = ChatTemplate::compile(&jinja(
            "{{ messages | tojson }}|{{ messages[0] | tojson(indent=2) }}",
        ))
        .unwrap();
        let out = t
            .render(
                &[json!({"role": "user", "content": "<a> & é", "n": 1.0, "k": [1, 2]})],
                "t",
            )
            .unwrap();
        assert_eq!(
            out,
            "[{\"role\": \"user\", \"content\": \"<a> & é\", \"n\": 1.0, \"k\": [1, 2]}]|{\n  \"role\": \"user\",\n  \"content\": \"<a> & é\",\n  \"n\": 1.0,\n  \"k\": [\n    1,\n    2\n  ]\n}"
        );
    }

    #[test]
    fn strftime_formats_the_directives_templates_use() {
        let t = (2024, 7, 26, 9, 5, 3);
        assert_eq!(strftime("%d %b %Y", &t), "26 Jul 2024");
        assert_eq!(
            strftime("%Y-%m-%d %H:%M:%S %B %%", &t),
            "2024-07-26 09:05:03 July %"
        );
        let (y, m, d, ..) = now_utc();
        assert!(y >= 2024 && (1..=12).contains(&m) && (1..=31).contains(&d));
    }
}
