"""OpenAI grader objects run as evaluators (SPEC §17): `string_check`,
`text_similarity`, `score_model`, `label_model`, `python` and `multi`, scored on each
sample as the graders guide defines them.

rwb checks a grader file before it starts (src/model/grader.rs: unknown types,
operations, metrics, formula names, a python source without `grade`); this module
checks the same again when it loads one (a file edited while the workbench runs),
then scores. text_similarity calls the reference libraries of the user's
interpreter (rapidfuzz, NLTK, rouge-score); the model graders post to the
OpenAI-compatible endpoint of `[graders]` in rwb.toml from this worker, so that a
multi grader's sub-graders all run in one place and the result cache and the
evaluator's `concurrency` apply to them as to any evaluator that calls a judge.
"""

import ast
import json
import math
import os
import re
import time
import warnings

from .results import InvalidResult
from .styles.calling import Pointwise
from .styles.samples import as_text, parts

TYPES = ("string_check", "text_similarity", "score_model", "label_model", "python", "multi")
OPERATIONS = ("eq", "ne", "like", "ilike")
METRICS = (
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "cosine",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
)
FUNCTIONS = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
# HTTP statuses tried again (with backoff), as `rwb generate` does; a refused or
# reset connection is tried again too
RETRIED = (429, 500, 502, 503, 504)
TRIES = 5
# the endpoints (roots) that answered in this process, and those that refused every
# try of a call before they ever answered: a call to one of those is not tried again
_ANSWERED = set()
_DOWN = set()


class TemplateError(Exception):
    """A `{{ ... }}` names something the sample lacks."""


class GraderError(ValueError):
    """A grader object that cannot run: `$.path: message`."""


class MissingPackage(ImportError):
    """A reference library (or its data) the user's interpreter lacks."""


# -- templates ----------------------------------------------------------------------
#
# A template is compiled once, when its grader is built: its text split around the
# `{{ variable }}`s, each variable a function of the sample. `sample.output_text` (the
# completion's text) and `item.X` (the column X) are read straight from the sample; the
# whole `item` and grader `sample` (output_json parsed, choices, tools) are made only
# when a template or a python grader asks for them (views, once per sample).

_TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_HEAD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_\-]*)|\[\s*(\d+)\s*\]|\[\s*[\"']([^\"']*)[\"']\s*\]")
_ABSENT = object()


def output_text(sample):
    """The completion's text (`sample.output_text`): for a chat sample the content of
    its final assistant turn ("" when the last turn is not the assistant's), as
    styles.samples reads the completion; any other form through `parts`."""
    messages = sample.get("messages")
    if type(messages) is not list:
        return as_text(parts(sample).completion, "assistant")
    last = messages[-1] if messages else None
    if type(last) is not dict or last.get("role") != "assistant":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content
    return "" if content is None else str(content)


# The sample whose views were made last, and its views: a multi grader's sub-graders
# and the templates of one row share them. One assignment swaps both (threads of a
# concurrent evaluator may each be on another sample).
_LAST_VIEWS = (None, None)


def views(sample):
    """(item, the grader's `sample`) of `sample`, as scope_of makes them, made once."""
    global _LAST_VIEWS
    last, made = _LAST_VIEWS
    if last is not sample:
        made = scope_of(sample, output_text(sample))
        _LAST_VIEWS = (sample, made)
    return made


def _raiser(message):
    def fail(sample):
        raise TemplateError(message)

    return fail


def _inserted(value):
    """A template variable's value as text: a string as it is, else compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def variable(text, inserted=False):
    """The function of a sample that `{{ text }}` (`item.a.b[0]`, `sample.output_text`)
    names: its value (`inserted`: as the template inserts it), or TemplateError naming
    what the sample lacks."""
    head = _HEAD.match(text)
    if head is None or head.group(0) not in ("item", "sample"):
        return _raiser("the template variable {{ %s }} is not item.* or sample.*" % text)
    steps = []  # (list index or None, key, the error when absent)
    broken = None
    at = head.end()
    while at < len(text):
        step = _STEP.match(text, at)
        if step is None:
            broken = "cannot read the template variable {{ %s }}" % text
            break
        key, index, quoted = step.groups()
        missing = "the sample has no %s (from the template variable {{ %s }})" % (text[: step.end()], text)
        steps.append((None if index is None else int(index), quoted if key is None else key, missing))
        at = step.end()
    if broken is None and len(steps) == 1 and steps[0][0] is None:
        # the common cases, one field: item.X (a column) and sample.output_text
        _, name, missing = steps[0]
        if head.group(0) == "sample" and name == "output_text":
            return output_text
        if head.group(0) == "item" and (name == "messages" or name.startswith("\x00")):
            return _raiser(missing)  # not a column
        if head.group(0) == "item":

            def column(sample):
                value = sample.get(name, _ABSENT)
                if value is _ABSENT:
                    raise TemplateError(missing)
                return value if not inserted or type(value) is str else _inserted(value)

            return column
    whole = head.group(0) == "item"

    def walk(sample):
        value = views(sample)[0 if whole else 1]
        for index, key, missing in steps:
            if index is not None:
                value = value[index] if isinstance(value, list) and index < len(value) else _ABSENT
            else:
                value = value.get(key, _ABSENT) if isinstance(value, dict) else _ABSENT
            if value is _ABSENT:
                raise TemplateError(missing)
        if broken is not None:
            raise TemplateError(broken)
        return _inserted(value) if inserted else value

    return walk


def template(text):
    """`text` compiled: a function of the sample giving the text with each `{{ variable
    }}` replaced (anything but a string with `{{` is given back as it is)."""
    if not isinstance(text, str) or "{{" not in text:
        return lambda sample: text
    pieces = _TEMPLATE.split(text)
    literals, names = pieces[0::2], pieces[1::2]
    if not names:
        return lambda sample: text
    if len(names) == 1 and literals == ["", ""]:
        return variable(names[0], inserted=True)
    tail = literals[-1]
    pairs = [(literal, variable(name, inserted=True)) for literal, name in zip(literals, names)]

    def joined(sample):
        out = []
        for literal, value in pairs:
            out.append(literal)
            out.append(value(sample))
        out.append(tail)
        return "".join(out)

    return joined


_COMPILED = {}


def render(text, sample):
    """`text` with each `{{ variable }}` replaced for `sample`, its template compiled
    on first use (the model graders' message contents)."""
    if not isinstance(text, str) or "{{" not in text:
        return text
    compiled = _COMPILED.get(text)
    if compiled is None:
        if len(_COMPILED) > 4096:
            _COMPILED.clear()
        compiled = _COMPILED[text] = template(text)
    return compiled(sample)


def scope_of(sample, text=None):
    """(item, the grader's `sample`) of an rwb sample: `item` is every column but
    `messages`; `sample` holds output_text, output_json and output_tools (when there
    are some) and choices."""
    conv = parts(sample)
    item = {k: v for k, v in sample.items() if k != "messages" and not k.startswith("\x00")}
    if text is None:
        text = as_text(conv.completion, "assistant")
    turn = None
    if isinstance(conv.completion, list):
        for message in reversed(conv.completion):
            if isinstance(message, dict) and message.get("role") == "assistant":
                turn = message
                break
    message = {"role": "assistant", "content": text}
    tools = turn.get("tool_calls") if turn else None
    if tools:
        message["tool_calls"] = tools
    finish = sample.get("finish_reason") or ("tool_calls" if tools else "stop")
    out = {"output_text": text, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    try:
        out["output_json"] = json.loads(text)
    except (TypeError, ValueError):
        pass
    if tools:
        out["output_tools"] = tools
    return item, out


# -- building -----------------------------------------------------------------------


def build(grader, settings, path="$"):
    """The scoring function of a grader object: sample -> (score, reason, metrics or
    None, usage or None), its templates compiled. A grader that gives nothing but a
    score has `plain` too: sample -> score. Raises GraderError for what cannot run."""
    if not isinstance(grader, dict):
        raise GraderError("%s: a grader is a JSON object" % path)
    kind = grader.get("type")
    if kind not in TYPES:
        raise GraderError('%s.type: unknown type %s (one of %s)' % (path, json.dumps(kind), ", ".join(TYPES)))
    return globals()["_" + kind](grader, settings or {}, path)


def _string_check(grader, settings, path):
    op = grader.get("operation")
    if op not in OPERATIONS:
        raise GraderError('%s.operation: unknown operation %s (one of %s)' % (path, json.dumps(op), ", ".join(OPERATIONS)))

    return _scored(_check(op, template(grader.get("input", "")), template(grader.get("reference", ""))))


def _check(op, given, reference):
    """string_check's operation on the templated input and reference: sample -> 1.0 or
    0.0."""
    if op == "eq":
        return lambda sample: 1.0 if given(sample) == reference(sample) else 0.0
    if op == "ne":
        return lambda sample: 1.0 if given(sample) != reference(sample) else 0.0
    # the input templated first: its error is the one a row shows
    if op == "like":

        def like(sample):
            text = given(sample)
            return 1.0 if reference(sample) in text else 0.0

        return like

    def ilike(sample):
        text = given(sample).lower()
        return 1.0 if reference(sample).lower() in text else 0.0

    return ilike


def _scored(plain):
    """The scoring function of a grader that gives only a score, `plain` on it."""

    def score(sample):
        return plain(sample), None, None, None

    score.plain = plain
    return score


def _text_similarity(grader, settings, path):
    metric = grader.get("evaluation_metric")
    if metric not in METRICS:
        raise GraderError(
            '%s.evaluation_metric: unknown evaluation_metric %s (one of %s)' % (path, json.dumps(metric), ", ".join(METRICS))
        )
    threshold = grader.get("pass_threshold") if path == "$" else None
    given = template(grader.get("input", ""))
    reference = template(grader.get("reference", ""))
    if metric == "cosine":

        def measure(sample):
            return _cosine(given(sample), reference(sample), settings)

    else:
        compute = _similarity(metric)

        def computed(sample):
            return compute(given(sample), reference(sample))

        if threshold is None:
            return _scored(computed)

        def measure(sample):
            return computed(sample), None

    def score(sample):
        value, usage = measure(sample)
        if threshold is None:
            return value, None, None, usage
        passed = {"score": 1.0 if value >= threshold else 0.0, "is_score_valid": True, "reason": None}
        return value, None, {"passed": passed}, usage

    return score


_MODULES = {}


def _need(module, package, metric):
    """The reference library's module (imported once), or MissingPackage saying how
    to install it: a row error, so that each row says it."""
    found = _MODULES.get(module)
    if found is not None:
        return found
    import importlib
    import sys

    try:
        found = _MODULES[module] = importlib.import_module(module)
        return found
    except ImportError:
        raise MissingPackage(
            "text_similarity %s needs %s, which %s cannot import: %s -m pip install %s"
            % (metric, package, sys.executable, sys.executable, package)
        ) from None


def _similarity(metric):
    """A metric computed in this interpreter: f(input, reference) -> score."""
    if metric == "fuzzy_match":
        ratio = None

        def fuzzy(given, reference):
            nonlocal ratio
            if ratio is None:
                ratio = _need("rapidfuzz.fuzz", "rapidfuzz", metric).ratio
            return ratio(given, reference) / 100.0

        return fuzzy
    if metric == "bleu":

        def bleu(given, reference):
            module = _need("nltk.translate.bleu_score", "nltk", metric)
            with warnings.catch_warnings():
                # NLTK warns of each missing n-gram order; the score is what it says
                warnings.simplefilter("ignore")
                return float(module.sentence_bleu([reference.split()], given.split()))

        return bleu
    if metric == "gleu":

        def gleu(given, reference):
            module = _need("nltk.translate.gleu_score", "nltk", metric)
            return float(module.sentence_gleu([reference.split()], given.split(), min_len=1, max_len=4))

        return gleu
    if metric == "meteor":

        def meteor(given, reference):
            module = _need("nltk.translate.meteor_score", "nltk", metric)
            try:
                value = module.meteor_score([reference.split()], given.split(), alpha=0.9, beta=3, gamma=0.5)
            except LookupError:
                import sys

                raise MissingPackage(
                    "text_similarity meteor needs NLTK's WordNet data, which %s cannot find: "
                    "%s -m nltk.downloader wordnet omw-1.4" % (sys.executable, sys.executable)
                ) from None
            return float(value)

        return meteor
    kind = "rougeL" if metric == "rouge_l" else "rouge" + metric[-1]
    scorers = {}

    def rouge(given, reference):
        scorer = scorers.get(kind)
        if scorer is None:
            module = _need("rouge_score.rouge_scorer", "rouge-score", metric)
            scorer = scorers[kind] = module.RougeScorer([kind], use_stemmer=False)
        return float(scorer.score(reference, given)[kind].fmeasure)

    return rouge


def _score_model(grader, settings, path):
    low, high = _range(grader, path)

    def score(sample):
        answer, usage, model = _ask_judge(grader, settings, sample)
        value = _result_of(answer)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InvalidResult("the model's answer has no numeric `result`: %s" % answer)
        try:
            number = float(value)
        except ValueError:
            raise InvalidResult("the model's answer has no numeric `result`: %s" % answer) from None
        if number != number:
            raise InvalidResult("the model's `result` is NaN: %s" % answer)
        return min(max(number, low), high), answer, None, [{"model": model, "usage": usage}]

    return score


def _range(grader, path):
    given = grader.get("range")
    if given is None:
        return 0.0, 1.0
    if not (isinstance(given, list) and len(given) == 2 and all(isinstance(x, (int, float)) for x in given)):
        raise GraderError("%s.range: give [low, high], two numbers" % path)
    return float(given[0]), float(given[1])


def _label_model(grader, settings, path):
    labels = grader.get("labels") or []
    passing = grader.get("passing_labels") or []

    def score(sample):
        answer, usage, model = _ask_judge(grader, settings, sample)
        label = _result_of(answer)
        if not isinstance(label, str) or label not in labels:
            raise InvalidResult(
                "the model's answer %s has no `result` among the labels %s" % (answer, json.dumps(labels))
            )
        return (1.0 if label in passing else 0.0), answer, None, [{"model": model, "usage": usage}]

    return score


def _python(grader, settings, path):
    source = grader.get("source")
    if not isinstance(source, str):
        raise GraderError("%s.source: a python grader needs `source`, Python text defining grade(sample, item)" % path)
    namespace = {"__name__": "rwb_python_grader"}
    exec(compile(source, "<grader %s.source>" % path, "exec"), namespace)
    grade = namespace.get("grade")
    if not callable(grade):
        raise GraderError("%s.source: defines no function grade(sample, item)" % path)

    def score(given):
        item, seen = views(given)
        sample = dict(seen)
        sample.setdefault("output_json", None)
        sample.setdefault("output_tools", None)
        value = grade(sample, item)
        if isinstance(value, bool):
            value = 1.0 if value else 0.0
        if isinstance(value, int):
            value = float(value)
        if not isinstance(value, float) or value != value or value in (math.inf, -math.inf):
            raise InvalidResult("grade() returned %r; a python grader returns a finite number" % (value,))
        return value, None, None, None

    return score


def _multi(grader, settings, path):
    subs = grader.get("graders")
    if not isinstance(subs, dict) or not subs:
        raise GraderError("%s.graders: a multi grader needs `graders`, an object of name -> grader" % path)
    built = {name: build(sub, settings, "%s.graders.%s" % (path, name)) for name, sub in subs.items()}
    formula = grader.get("calculate_output")
    if not isinstance(formula, str):
        raise GraderError("%s.calculate_output: give a formula over the graders' names" % path)
    tree = parse_formula(formula, set(subs), path + ".calculate_output")

    def score(sample):
        values, metrics, usage = {}, {}, None
        for name, run in built.items():
            value, reason, _, used = run(sample)
            values[name] = value
            metrics[name] = {"score": value, "is_score_valid": True, "reason": reason}
            if used:
                usage = (usage or []) + used
        return float(_evaluate(tree, values)), None, metrics, usage

    return score


# -- calculate_output -----------------------------------------------------------------

_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b}


def parse_formula(formula, names, path):
    """The formula's syntax tree, read by Python's own parser (`^` is the power, as
    `**`: right-associative, above `*`) and checked to hold only numbers, the
    graders' names, `+ - * / ^`, parentheses and the guide's functions."""
    try:
        tree = ast.parse(formula.replace("^", "**"), mode="eval").body
    except SyntaxError as exc:
        raise GraderError("%s: cannot read the formula %s: %s" % (path, json.dumps(formula), exc.msg)) from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names and node.id not in FUNCTIONS:
                raise GraderError(
                    "%s: the formula names %s, which is not a grader (graders: %s)"
                    % (path, json.dumps(node.id), ", ".join(sorted(names)))
                )
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise GraderError("%s: only %s may be called in a formula" % (path, ", ".join(FUNCTIONS)))
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise GraderError("%s: %r is not a number" % (path, node.value))
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _OPS:
                raise GraderError("%s: only + - * / ^ are operators in a formula" % path)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise GraderError("%s: only + - * / ^ are operators in a formula" % path)
        elif not isinstance(node, (ast.Load, ast.operator, ast.unaryop)):
            raise GraderError("%s: %s is not allowed in a formula" % (path, type(node).__name__))
    return tree


def _evaluate(node, values):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        inner = _evaluate(node.operand, values)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        return _OPS[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    return FUNCTIONS[node.func.id](*[_evaluate(a, values) for a in node.args])


# -- the OpenAI-compatible endpoint ---------------------------------------------------


def _post(root, route, body, settings):
    """POST JSON to root + route, tried again on 429 and 5xx (Retry-After honoured) and
    on a refused or reset connection (backoff). urllib is imported here: only model graders post, and it costs ~20 ms of start-up."""
    import urllib.error
    import urllib.request

    if not root:
        raise GraderError(
            "a model grader needs an OpenAI-compatible server: set endpoint under [graders] in rwb.toml (for example endpoint = \"http://127.0.0.1:8000\")"
        )
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(settings.get("api_key_env") or "OPENAI_API_KEY")
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode()
    url = root + route
    for attempt in range(TRIES):
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=settings.get("timeout") or 120) as answer:
                answered = answer.read()
            _ANSWERED.add(root)
            return json.loads(answered)
        except urllib.error.HTTPError as exc:
            _ANSWERED.add(root)
            text = exc.read().decode("utf-8", "replace")
            if exc.code in RETRIED and attempt + 1 < TRIES:
                time.sleep(_wait(exc.headers.get("Retry-After"), attempt))
                continue
            raise ConnectionError("POST %s answered %d: %s" % (url, exc.code, _message(text))) from None
        except (urllib.error.URLError, ConnectionError) as exc:
            # a refused connection comes wrapped in URLError, a reset while the answer
            # is read as it is: both are asked again like a 429, unless the server
            # refused every try of an earlier call and never answered (it is down)
            reason = getattr(exc, "reason", exc)
            dropped = isinstance(reason, ConnectionError)
            if dropped and attempt + 1 < TRIES and (root not in _DOWN or root in _ANSWERED):
                time.sleep(_wait(None, attempt))
                continue
            if isinstance(reason, ConnectionRefusedError) and attempt + 1 == TRIES and root not in _ANSWERED:
                _DOWN.add(root)
            tries = ", %d tries" % (attempt + 1) if attempt else ""
            raise ConnectionError("cannot reach %s: %s%s" % (url, reason, tries)) from None


def _wait(retry_after, attempt):
    try:
        return min(float(retry_after), 60.0)
    except (TypeError, ValueError):
        return min(0.25 * 2**attempt, 8.0)


def _message(text):
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if body.get("message"):
            return str(body["message"])
        if isinstance(error, str):
            return error
    return text[:500]


def _content(content, sample):
    """A message's content templated: text, or a list of parts (the Responses API's
    `input_text` parts become chat `text` parts)."""
    if isinstance(content, str):
        return render(content, sample)
    if isinstance(content, dict):
        text = content.get("text")
        return render(text, sample) if isinstance(text, str) else content
    if isinstance(content, list):
        return [_part(part, sample) for part in content]
    return content


def _part(part, sample):
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return {"type": "text", "text": render(part["text"], sample)}
    return render(part, sample) if isinstance(part, str) else part


def _ask_judge(grader, settings, sample):
    """(the model's answer text, usage, model) for a score_model or label_model."""
    messages = []
    for message in grader.get("input") or []:
        messages.append({"role": message.get("role", "user"), "content": _content(message.get("content", ""), sample)})
    body = {"model": grader.get("model"), "messages": messages}
    for key, value in (grader.get("sampling_params") or {}).items():
        body["max_completion_tokens" if key == "max_completions_tokens" else key] = value
    answer = _post(settings.get("endpoint"), "/v1/chat/completions", body, settings)
    try:
        text = answer["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise InvalidResult("the chat endpoint's answer has no choices[0].message.content: %s" % json.dumps(answer)[:500]) from None
    return text, answer.get("usage"), answer.get("model") or grader.get("model")


def _result_of(answer):
    text = answer.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed.get("result") if isinstance(parsed, dict) else None


def _cosine(given, reference, settings):
    root = settings.get("embeddings_endpoint") or settings.get("endpoint")
    model = settings.get("embeddings_model")
    if not model:
        raise GraderError("text_similarity cosine needs embeddings_model under [graders] in rwb.toml")
    answer = _post(root, "/v1/embeddings", {"model": model, "input": [given, reference]}, settings)
    try:
        data = sorted(answer["data"], key=lambda d: d.get("index", 0))
        a, b = data[0]["embedding"], data[1]["embedding"]
    except (KeyError, IndexError, TypeError):
        raise InvalidResult("the embeddings endpoint's answer has no two embeddings: %s" % json.dumps(answer)[:500]) from None
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    value = dot / norm if norm else 0.0
    return max(value, 0.0), [{"model": answer.get("model") or model, "usage": answer.get("usage")}]


# -- the evaluator ------------------------------------------------------------------


def load(spec):
    """The grader object of an evaluator: inline in the spec (the graders API), else
    read from its file (read at every load, so an edit is what runs)."""
    grader = spec.get("grader")
    if grader is None:
        with open(spec["file"], encoding="utf-8") as f:
            text = f.read()
        try:
            grader = json.loads(text)
        except ValueError as exc:
            raise GraderError("%s is not JSON: %s" % (spec["file"], exc)) from None
    return grader


def score_sample(run, sample):
    """One sample's result: `{"score", "reason"}` when the grader gives nothing else
    (string_check, text_similarity: the worker writes it as a plain reward's result),
    else the whole result dict, a model's usage as a `judge` step per model call."""
    value, reason, metrics, usage = run(sample)
    value = float(value)
    if value - value != 0.0:  # NaN and +-inf
        raise InvalidResult("the grader's score is %r" % value)
    if usage is None and not metrics:
        return {"score": value, "reason": reason}
    steps = None
    if usage is not None:
        steps = [{"step_index": "judge", "base_reward": value, "metrics": used, "reason": None} for used in usage]
    return {"score": value, "is_score_valid": True, "reason": reason, "metrics": metrics or {}, "step_outputs": steps}


class Caller(Pointwise):
    """A grader as an evaluator: one call per sample, the sample itself its argument.
    A plain result goes the direct way a plain reward's does (Worker.run_pointwise)."""

    style = "grader"

    def __init__(self, fn, extra_kwargs, spec):
        self.fn = fn
        self.extra = extra_kwargs
        self.accepted = (set(), True)

    def arguments(self, sample):
        return {"sample": sample}


def evaluator(spec):
    """The function a grader evaluator calls per sample: sample -> result dict. The
    grader is built once, here."""
    grader = load(spec)
    run = build(grader, spec.get("grader_settings") or {})
    plain = getattr(run, "plain", None)
    if plain is not None:
        # a score alone: written as a plain reward's (a NaN one is refused there)
        def grade_plain(sample):
            return {"score": plain(sample)}

        return grade_plain

    def grade_sample(sample):
        return score_sample(run, sample)

    return grade_sample
