//! A sample line as Python's `marshal` writes the object `json.loads` reads from it,
//! for the worker to read with `marshal.loads`: about half the time of parsing the
//! JSON there, where a run over a file spends most of its time. rwb parses the line
//! instead, several times faster, as it writes it to the worker.
//!
//! The parser follows `json.loads` (Python's `json.scanner`, strict) on JSON text:
//! objects keep their keys in order and a repeated key keeps its first place and
//! its last value (both build a dict one pair after another); an integer is an int
//! of its exact value, any other number the correctly rounded float (Rust's
//! `f64::from_str`, as Python's `float`), written as its 8 bytes; strings are
//! decoded as Python decodes them. What it does not take goes as JSON, for the
//! worker to parse as before ([`write`] says no): anything that is not JSON, and
//! what it leaves to Python to be sure of: `NaN` and `Infinity`, numbers out of a
//! float's range or integers that do not fit in 128 bits, lone surrogates in `\u`
//! escapes, and nesting deeper than [`MAX_DEPTH`].

// The marshal type codes used (CPython's Python/marshal.c; stable since version 2).
const NONE: u8 = b'N';
const FALSE: u8 = b'F';
const TRUE: u8 = b'T';
const INT: u8 = b'i';
const LONG: u8 = b'l';
const BINARY_FLOAT: u8 = b'g';
const UNICODE: u8 = b'u';
const ASCII: u8 = b'a';
const SHORT_ASCII: u8 = b'z';
const LIST: u8 = b'[';
const DICT: u8 = b'{';
const NULL: u8 = b'0';

/// Arrays and objects nested deeper than this go as JSON.
const MAX_DEPTH: usize = 64;

/// Appends the marshal form of JSON text `line`'s value to `out`, or returns false
/// (and leaves `out` as it was) when it goes as JSON (see the module's notes).
pub fn write(line: &str, out: &mut Vec<u8>) -> bool {
    write_keys(line, out).is_some()
}

/// [`write`] for a line read as a sample: whether it is an object whose `messages`
/// is a list, which is all [`crate::model::check_sample`] would find of it (the
/// reader then does not parse it a second time to check it). `None`: not written.
pub fn write_sample(line: &str, out: &mut Vec<u8>) -> Option<bool> {
    let top = write_keys(line, out)?;
    Some(top.is_chat())
}

/// The keys of a line's top object that `check_sample` reads, as the parser saw
/// them.
#[derive(Default)]
struct TopKeys {
    /// The value is an object.
    object: bool,
    messages: u8,
    prompt: u8,
    completion: u8,
    /// `messages`' value opens a list.
    messages_list: bool,
    /// A key with an escape, which could spell one of the three.
    escaped: bool,
}

impl TopKeys {
    /// The form `check_sample` takes without a word: `messages` once, a list, and
    /// neither `prompt` nor `completion` twice (its probe fails on a repeated field).
    fn is_chat(&self) -> bool {
        self.object
            && !self.escaped
            && self.messages == 1
            && self.messages_list
            && self.prompt <= 1
            && self.completion <= 1
    }

    fn saw(&mut self, key: &[u8], value: Option<u8>) {
        let count = match key {
            b"messages" => {
                self.messages_list = value == Some(b'[');
                &mut self.messages
            }
            b"prompt" => &mut self.prompt,
            b"completion" => &mut self.completion,
            _ => {
                self.escaped |= key.contains(&b'\\');
                return;
            }
        };
        *count = count.saturating_add(1);
    }
}

fn write_keys(line: &str, out: &mut Vec<u8>) -> Option<TopKeys> {
    let start = out.len();
    let mut parser = Parser {
        line,
        s: line.as_bytes(),
        at: 0,
        out: &mut *out,
        depth: 0,
        text: String::new(),
        top: TopKeys::default(),
    };
    parser.space();
    parser.top.object = parser.peek() == Some(b'{');
    let whole = parser.value() && {
        parser.space();
        parser.at == parser.s.len()
    };
    let top = std::mem::take(&mut parser.top);
    if !whole {
        out.truncate(start);
        return None;
    }
    Some(top)
}

struct Parser<'a> {
    line: &'a str,
    s: &'a [u8],
    at: usize,
    out: &'a mut Vec<u8>,
    depth: usize,
    /// A string with escapes, decoded.
    text: String,
    /// What the top object's keys were.
    top: TopKeys,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    /// JSON's whitespace (not Unicode's).
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self) -> bool {
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string(),
            Some(b't') => self.literal(b"true", TRUE),
            Some(b'f') => self.literal(b"false", FALSE),
            Some(b'n') => self.literal(b"null", NONE),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8], code: u8) -> bool {
        if !self.s[self.at..].starts_with(word) {
            return false;
        }
        self.at += word.len();
        self.out.push(code);
        true
    }

    /// An object: its pairs, then marshal's end of a dict.
    fn object(&mut self) -> bool {
        self.out.push(DICT);
        let whole = self
            .members(b'}', |p| {
                let key = p.at + 1;
                p.peek() == Some(b'"')
                    && p.string()
                    && {
                        p.space();
                        p.peek() == Some(b':')
                    }
                    && {
                        p.at += 1;
                        p.space();
                        if p.depth == 1 {
                            let name = &p.s[key..p.at];
                            let name = &name[..name.iter().rposition(|&b| b == b'"').unwrap_or(0)];
                            p.top.saw(name, p.peek());
                        }
                        p.value()
                    }
            })
            .is_some();
        self.out.push(NULL);
        whole
    }

    /// An array: its length (written once its items are), then its items.
    fn array(&mut self) -> bool {
        self.out.push(LIST);
        let count_at = self.out.len();
        self.out.extend_from_slice(&[0; 4]);
        let Some(count) = self.members(b']', Parser::value) else {
            return false;
        };
        self.out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
        true
    }

    /// The members of the array or object opening at `at`, each read by `member`,
    /// separated by commas, up to `close`: how many, or `None` when they are not JSON
    /// or nest deeper than [`MAX_DEPTH`].
    fn members(&mut self, close: u8, mut member: impl FnMut(&mut Self) -> bool) -> Option<u32> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.space();
        let mut count = 0;
        if self.peek() == Some(close) {
            self.at += 1;
        } else {
            loop {
                if !member(self) {
                    return None;
                }
                count += 1;
                self.space();
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        self.space();
                    }
                    Some(c) if c == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(count)
    }

    /// A string at `"`. Its text between escapes is copied as it is: the line is
    /// UTF-8 and a quote or a backslash never falls inside a character. A control
    /// character in it is not JSON (Python's strict scanner says no too).
    fn string(&mut self) -> bool {
        self.at += 1;
        let start = self.at;
        let Some(end) = memchr::memchr2(b'"', b'\\', &self.s[start..]) else {
            return false;
        };
        let end = start + end;
        // the text between two ASCII bytes of a str: whole characters
        let plain = &self.line[start..end];
        let (control, ascii) = scan(plain.as_bytes());
        if control {
            return false;
        }
        if self.s[end] == b'"' {
            self.at = end + 1;
            write_text(self.out, plain, ascii);
            return true;
        }
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        text.push_str(plain);
        let written = self.escaped(end, &mut text);
        if written {
            write_text(self.out, &text, text.is_ascii());
        }
        self.text = text;
        written
    }

    /// The rest of a string from its first escape at `from`, decoded into `text`.
    fn escaped(&mut self, mut from: usize, text: &mut String) -> bool {
        loop {
            let Some(stop) = memchr::memchr2(b'"', b'\\', &self.s[from..]) else {
                return false;
            };
            let stop = from + stop;
            let part = &self.line[from..stop];
            if scan(part.as_bytes()).0 {
                return false;
            }
            text.push_str(part);
            if self.s[stop] == b'"' {
                self.at = stop + 1;
                return true;
            }
            let Some(&kind) = self.s.get(stop + 1) else {
                return false;
            };
            from = stop + 2;
            let c = match kind {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let Some(unit) = self.hex4(from) else {
                        return false;
                    };
                    from += 4;
                    match unit {
                        0xd800..=0xdbff => {
                            // a pair's first half: the second must follow
                            if self.s.get(from..from + 2) != Some(b"\\u") {
                                return false;
                            }
                            let Some(low @ 0xdc00..=0xdfff) = self.hex4(from + 2) else {
                                return false;
                            };
                            from += 6;
                            let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                            match char::from_u32(code) {
                                Some(c) => c,
                                None => return false,
                            }
                        }
                        0xdc00..=0xdfff => return false, // a lone second half
                        _ => match char::from_u32(unit) {
                            Some(c) => c,
                            None => return false,
                        },
                    }
                }
                _ => return false,
            };
            text.push(c);
        }
    }

    /// The four hex digits at `at`, as a number.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.s.get(at..at + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + (d as char).to_digit(16)?;
        }
        Some(n)
    }

    /// A number as JSON (and Python's scanner) spells it: `-?(0|[1-9][0-9]*)`, then
    /// `(\.[0-9]+)?([eE][-+]?[0-9]+)?`; an int without the last two.
    fn number(&mut self) -> bool {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return false;
            }
            self.digits();
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return false;
            }
            self.digits();
            float = true;
        }
        let token = &self.line[start..self.at];
        if float {
            match token.parse::<f64>() {
                Ok(v) if v.is_finite() => {
                    self.out.push(BINARY_FLOAT);
                    self.out.extend_from_slice(&v.to_le_bytes());
                    true
                }
                _ => false,
            }
        } else {
            match token.parse::<i128>() {
                Ok(v) => {
                    write_int(self.out, v);
                    true
                }
                Err(_) => false,
            }
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }
}

/// Whether `bytes` hold a control character (below U+0020), and whether they are
/// all ASCII: one pass, eight bytes at a time (a sample's text is most of what the
/// workers are sent, and a byte at a time this was a tenth of packing it).
fn scan(bytes: &[u8]) -> (bool, bool) {
    let (mut low, mut high) = (0u64, 0u64);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        low |= crate::model::some_byte_below(x, 0x20);
        high |= x;
    }
    let rest = words.remainder();
    let rest_low = rest.iter().any(|&b| b < 0x20);
    let rest_high = rest.iter().any(|&b| b >= 0x80);
    let ascii = high & (crate::model::ONES * 0x80) == 0 && !rest_high;
    (low != 0 || rest_low, ascii)
}

/// An int: 4 bytes when it fits in an i32, else as CPython's long (15-bit digits,
/// least significant first, their count negative for a negative number).
fn write_int(out: &mut Vec<u8>, v: i128) {
    if let Ok(small) = i32::try_from(v) {
        out.push(INT);
        out.extend_from_slice(&small.to_le_bytes());
        return;
    }
    let mut magnitude = v.unsigned_abs();
    let mut digits = Vec::with_capacity(9);
    while magnitude > 0 {
        digits.push((magnitude & 0x7fff) as u16);
        magnitude >>= 15;
    }
    let count = digits.len() as i32;
    out.push(LONG);
    out.extend_from_slice(&(if v < 0 { -count } else { count }).to_le_bytes());
    for d in digits {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

/// A str (`ascii` when it is all ASCII): ASCII text with the ASCII codes (read
/// without decoding), other text as UTF-8.
fn write_text(out: &mut Vec<u8>, v: &str, ascii: bool) {
    let bytes = v.as_bytes();
    if ascii && bytes.len() < 256 {
        out.push(SHORT_ASCII);
        out.push(bytes.len() as u8);
    } else {
        out.push(if ascii { ASCII } else { UNICODE });
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_finds_control_and_non_ascii_bytes_wherever_they_are() {
        let naive = |b: &[u8]| (b.iter().any(|&c| c < 0x20), b.iter().all(|&c| c < 0x80));
        for len in 0..20 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = byte;
                    assert_eq!(scan(&text), naive(&text), "{byte:#x} at {at} of {len}");
                    // next to a byte the subtraction borrows from
                    if at + 1 < len {
                        text[at + 1] = 0x20;
                        assert_eq!(scan(&text), naive(&text), "{byte:#x}, 0x20 at {at}");
                    }
                }
            }
        }
    }

    fn marshal(line: &str) -> Option<Vec<u8>> {
        let mut out = vec![b'x'];
        let written = write(line, &mut out);
        assert_eq!(out[0], b'x', "what was there stays");
        match written {
            true => Some(out[1..].to_vec()),
            false => {
                assert_eq!(out.len(), 1, "nothing is left of a line it says no to");
                None
            }
        }
    }

    #[test]
    fn values_are_written_with_their_marshal_codes() {
        assert_eq!(marshal(" null "), Some(b"N".to_vec()));
        assert_eq!(marshal("[true, false]").unwrap(), b"[\x02\0\0\0TF");
        assert_eq!(marshal("-2").unwrap(), b"i\xfe\xff\xff\xff");
        assert_eq!(marshal("-0").unwrap(), b"i\0\0\0\0", "the int 0");
        // 2^31 needs a long: 0 * 2^0 + 0 * 2^15 + 2 * 2^30
        assert_eq!(marshal("2147483648").unwrap(), b"l\x03\0\0\0\0\0\0\0\x02\0");
        assert_eq!(
            marshal("-2147483649").unwrap(),
            b"l\xfd\xff\xff\xff\x01\0\0\0\x02\0"
        );
        let float = |line| {
            let bytes = marshal(line).unwrap();
            assert_eq!(bytes[0], b'g');
            f64::from_le_bytes(bytes[1..].try_into().unwrap())
        };
        assert_eq!(float("0.5"), 0.5);
        assert_eq!(float("1E2"), 100.0);
        assert!(float("-0.0").is_sign_negative());
        assert_eq!(
            marshal(r#"{"a":"é"}"#).unwrap(),
            b"{z\x01au\x02\0\0\0\xc3\xa90"
        );
        assert_eq!(marshal(r#""\u00e9\n""#).unwrap(), b"u\x03\0\0\0\xc3\xa9\n");
        assert_eq!(
            marshal(r#""\ud83d\ude00""#).unwrap(),
            "u\x04\0\0\0😀".as_bytes()
        );
        let long = "x".repeat(300);
        let text = marshal(&format!("\"{long}\"")).unwrap();
        assert_eq!(&text[..5], b"a\x2c\x01\0\0");
    }

    #[test]
    fn what_it_leaves_to_python_goes_as_json() {
        for line in [
            r#"{"a": "\ud800"}"#, // a lone surrogate
            r#"{"a": "\udc00"}"#,
            r#"{"a": NaN}"#,
            "-Infinity",
            "1e400",
            &"9".repeat(39),
            "{} {}",
            "{",
            "01",
            "1.",
            "\"a\u{1}b\"", // a control character
            r#""\x""#,
            &("[".repeat(65) + &"]".repeat(65)),
        ] {
            assert_eq!(marshal(line), None, "{line}");
        }
        assert!(marshal(&("[".repeat(64) + &"]".repeat(64))).is_some());
        assert!(marshal(&"9".repeat(38)).is_some());
    }

    /// What Python's `marshal.loads` reads from each line's marshal data is what
    /// `json.loads` reads from the line, type for type and in the same order (run
    /// with the interpreter on PATH).
    #[test]
    fn python_reads_the_same_object_from_the_marshal_data_as_from_the_json() {
        let lines = [
            r#"{"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}], "ground_truth": "4"}"#,
            r#"{"a": 1, "b": 1.0, "c": -0.0, "d": -0, "e": 1e-400, "f": 0.1, "g": 2.5e-308, "h": 1.7976931348623157e308}"#,
            r#"{"big": 123456789012345678901234567890, "neg": -98765432109876543210, "i64": 9223372036854775808}"#,
            r#"{"k": 1, "j": 2, "k": 3, "": null, "t": true, "f": false}"#,
            r#"{"esc": "a\"b\\c\/d\b\f\n\r\t\u0000\u001f\u00e9\u20ac\ud83d\ude00", "raw": "é€😀 ünïcödé"}"#,
            r#"{"nested": [[[]], {}, [{"x": [1, [2, [3]]]}]], "num": [0, -1, 2147483647, -2147483648, 2147483648]}"#,
            r#"{"float": [3.141592653589793, 1e22, 1e23, 9007199254740993, 0.30000000000000004, 5e-324]}"#,
            "\t{ \"spaced\" :\r\n [ 1 , 2 ] }  ",
        ];
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        for line in lines {
            let mut out = Vec::new();
            assert!(write(line, &mut out), "{line}");
            data.extend_from_slice(&(line.len() as u32).to_le_bytes());
            data.extend_from_slice(line.as_bytes());
            data.extend_from_slice(&(out.len() as u32).to_le_bytes());
            data.extend_from_slice(&out);
        }
        let path = dir.path().join("pairs.bin");
        std::fs::write(&path, data).unwrap();
        let script = r#"
import json, marshal, struct, sys
def typed(v):
    # type for type, keys in order, floats by their bits
    if isinstance(v, dict):
        return ("dict", [(typed(k), typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [typed(x) for x in v])
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    return (type(v).__name__, v)
data = open(sys.argv[1], "rb").read()
at = n = 0
while at < len(data):
    size = struct.unpack_from("<I", data, at)[0]; line = data[at + 4: at + 4 + size]; at += 4 + size
    size = struct.unpack_from("<I", data, at)[0]; packed = data[at + 4: at + 4 + size]; at += 4 + size
    want, got = json.loads(line), marshal.loads(packed + b"\0")
    if typed(want) != typed(got):
        sys.exit("line %d: json %r, marshal %r" % (n, want, got))
    n += 1
print(n)
"#;
        let run = std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&run.stdout).trim(),
            lines.len().to_string()
        );
    }

    #[test]
    fn a_sample_line_says_whether_it_is_a_chat_sample_as_it_is_written() {
        let chat = |line: &str| {
            let mut out = Vec::new();
            let said = write_sample(line, &mut out);
            if said == Some(true) {
                // what the reader then skips must be what check_sample would say
                assert_eq!(crate::model::check_sample(line), Ok(()), "{line}");
            }
            said
        };
        assert_eq!(
            chat(r#"{"messages": [{"role": "user"}], "x": 1}"#),
            Some(true)
        );
        assert_eq!(chat(r#" {"id": 3, "messages" : []} "#), Some(true));
        assert_eq!(
            chat(r#"{"prompt": "p", "completion": "c", "messages": []}"#),
            Some(true),
            "messages settles it, as check_sample's probe has it"
        );
        // written, but left to check_sample's own words
        for line in [
            r#"{"prompt": "p", "completion": "c"}"#,
            r#"{"messages": "hi"}"#,
            r#"{"messages": [], "messages": []}"#,
            r#"{"messages": [], "prompt": "a", "prompt": "b"}"#,
            r#"{"messag\u0065s": []}"#,
            r#"{"\u006dessages": [], "messages": []}"#,
            r#"{"a": {"messages": []}}"#,
            r#"[{"messages": []}]"#,
            r#""messages""#,
            "{}",
        ] {
            assert_eq!(chat(line), Some(false), "{line}");
        }
        // not written: the workers parse it (and check_sample says why it is not one)
        for line in [
            r#"{"messages": [NaN]}"#,
            r#"{"messages": []"#,
            r#"{"messages": []} x"#,
        ] {
            assert_eq!(chat(line), None, "{line}");
        }
    }
}
