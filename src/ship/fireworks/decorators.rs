//! What a metric's `@reward_function(...)` decorator declares (its requirements).

/// A token of Python source, just enough to read decorator arguments.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Punct(char),
}

fn tokenize_python(source: &str) -> Vec<Tok> {
    let chars: Vec<char> = source.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_whitespace() || c == '\\' {
            i += 1;
        } else if c == '"' || c == '\'' {
            let (text, next) = read_string(&chars, i, false);
            toks.push(Tok::Str(text));
            i = next;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let is_prefix = word.len() <= 2
                && word.chars().all(|ch| "rRbBuUfF".contains(ch))
                && matches!(chars.get(i), Some('"' | '\''));
            if is_prefix {
                let raw = word.contains(['r', 'R']);
                let (text, next) = read_string(&chars, i, raw);
                toks.push(Tok::Str(text));
                i = next;
            } else {
                toks.push(Tok::Name(word));
            }
        } else {
            toks.push(Tok::Punct(c));
            i += 1;
        }
    }
    toks
}

/// Reads the string literal opening at `start`; returns its text and the index after it.
fn read_string(chars: &[char], start: usize, raw: bool) -> (String, usize) {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    let mut text = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let next = chars[i + 1];
            if raw {
                text.push(c);
                text.push(next);
            } else {
                text.push(match next {
                    'n' => '\n',
                    't' => '\t',
                    other => other,
                });
            }
            i += 2;
            continue;
        }
        if c == quote {
            if !triple {
                return (text, i + 1);
            }
            if chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                return (text, i + 3);
            }
        }
        if c == '\n' && !triple {
            return (text, i);
        }
        text.push(c);
        i += 1;
    }
    (text, i)
}

/// The string items of `requirements=[...]` in every `@reward_function(...)` (or
/// `@reward_kit.reward_function(...)`) decorator of `source`.
pub fn decorator_requirements(source: &str) -> Vec<String> {
    let toks = tokenize_python(source);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] != Tok::Punct('@') {
            i += 1;
            continue;
        }
        // @a.b.reward_function(
        let mut j = i + 1;
        let mut last = None;
        while let Some(Tok::Name(n)) = toks.get(j) {
            last = Some(n.as_str());
            if toks.get(j + 1) == Some(&Tok::Punct('.')) {
                j += 2;
            } else {
                j += 1;
                break;
            }
        }
        if last != Some("reward_function") || toks.get(j) != Some(&Tok::Punct('(')) {
            i += 1;
            continue;
        }
        let mut depth = 0usize;
        let mut k = j;
        while k < toks.len() {
            match &toks[k] {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Name(n)
                    if depth == 1
                        && n == "requirements"
                        && toks.get(k + 1) == Some(&Tok::Punct('='))
                        && toks.get(k + 2) != Some(&Tok::Punct('=')) =>
                {
                    if let Some(Tok::Punct(open @ ('[' | '('))) = toks.get(k + 2) {
                        let close = if *open == '[' { ']' } else { ')' };
                        let mut m = k + 3;
                        while let Some(t) = toks.get(m) {
                            match t {
                                Tok::Punct(c) if *c == close => break,
                                Tok::Str(s) => {
                                    let s = s.trim().to_string();
                                    if !s.is_empty() && !out.contains(&s) {
                                        out.push(s);
                                    }
                                }
                                _ => {}
                            }
                            m += 1;
                        }
                    }
                }
                _ => {}
            }
            k += 1;
        }
        i = k.max(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decorator_requirements_are_read() {
        let src = r#"
import x
from reward_kit import reward_function

@reward_function(mode="pointwise", requirements=["numpy>=1.0", 'scipy',  # sci
    "numpy>=1.0"], id="r")
def evaluate(messages, **kwargs):
    s = "@reward_function(requirements=['fake'])"
    return {"score": 1.0}

@reward_kit.reward_function(requirements=("regex",))
def other(messages, **kwargs):
    pass

@reward_function
def third(messages, **kwargs):
    requirements = ["not", "these"]
"#;
        assert_eq!(
            decorator_requirements(src),
            ["numpy>=1.0", "scipy", "regex"]
        );
        assert!(decorator_requirements("def f(): pass").is_empty());
    }
}
