"""Keyword relevance: does the assistant's reply talk about what the user asked?

Three components, blended into one score:

* ``keyword_coverage`` (weight 0.5): share of the question's content words
  (stop words dropped, light stemming) that reappear in the reply.
* ``direct_answer`` (weight 0.3): whether the reply's opening sentence takes
  the question head on, instead of deflecting, hedging or refusing.
* ``length_sanity`` (weight 0.2): whether the reply is a plausible length for
  a chat answer (neither a one-word fragment nor an essay).

``messages`` is annotated ``List[Message]``, so the decorator hands us
``Message`` objects: read them with attribute access (``m.role``,
``m.content``), never ``m["role"]``.
"""

import re
from typing import Dict, List, Optional, Set

from reward_kit import EvaluateResult, Message, MetricResult, reward_function

WEIGHTS = {"keyword_coverage": 0.5, "direct_answer": 0.3, "length_sanity": 0.2}

STOP_WORDS = {
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "but", "by", "can", "could", "did", "do",
    "does", "doing", "for", "from", "get", "got", "had", "has", "have", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "keep", "me", "my",
    "no", "not", "of", "on", "or", "our", "should", "so", "some", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "up", "us", "was", "way", "ways", "we", "were", "what",
    "when", "where", "which", "while", "who", "why", "will", "with", "would",
    "you", "your", "explain", "tell", "please", "really", "actually", "isn",
    "doesn", "don", "difference", "between", "good", "thing", "things",
    "during", "okay", "make", "makes", "sense", "real", "over", "much", "same",
    "give", "every", "instead", "always", "never", "other", "know", "want",
    "new", "out", "down", "onto", "next", "mine", "still", "yet",
}

REFUSAL_PATTERNS = [
    r"\bi(?:'m| am) (?:sorry|afraid)\b.*\b(?:can(?:no|')t|unable|not able)\b",
    r"\bi can(?:no|')t (?:help|assist|answer|provide)\b",
    r"\bi(?:'m| am) not able to (?:help|answer|discuss)\b",
    r"\bas an ai\b",
]

HEDGE_PATTERNS = [
    r"^(?:hmm|well|honestly),? i(?:'m| am) not (?:sure|certain)\b",
    r"^i(?:'m| am) not (?:sure|certain)\b",
    r"^(?:that'?s|it'?s) (?:a )?(?:hard|difficult|tricky) (?:question|one)\b",
    r"^(?:great|good|interesting) question\b",
]

YES_NO_STARTERS = ("is", "are", "does", "do", "can", "should", "will", "was",
                   "were", "did", "could", "would", "has", "have")


def _words(text: str) -> List[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower().replace("\u2019", "'"))


def _stem(word: str) -> str:
    """Crude suffix stripping so 'seasons'/'season' and 'causes'/'caused' meet."""
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif re.search(r"(?:ss|x|z|ch|sh)es$", word):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    for suffix in ("ingly", "ing", "edly", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _content_words(text: str) -> Dict[str, str]:
    """Map stem -> first spelling seen, for the text's content words."""
    found: Dict[str, str] = {}
    for word in _words(text):
        base = word.split("'")[0]
        if base in STOP_WORDS or len(base) <= 2 or base.isdigit():
            continue
        found.setdefault(_stem(base), base)
    return found


def _content_stems(text: str) -> Set[str]:
    return set(_content_words(text))


def _first_sentence(text: str) -> str:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text.strip(), maxsplit=1)
    return parts[0] if parts else ""


def _last_turn(messages: List[Message]):
    """Return (question, answer) for the last assistant reply with text."""
    answer_index: Optional[int] = None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant" and (m.content or "").strip():
            answer_index = i
            break
    if answer_index is None:
        return None, None
    for j in range(answer_index - 1, -1, -1):
        m = messages[j]
        if m.role == "user" and (m.content or "").strip():
            return m.content, messages[answer_index].content
    return None, messages[answer_index].content


def _coverage(question: str, answer: str) -> MetricResult:
    spelled = _content_words(question)
    wanted = set(spelled)
    if not wanted:
        return MetricResult(
            score=0.5,
            reason="Question has no content words to look for; neutral 0.50",
        )
    found = wanted & _content_stems(answer)
    missing = sorted(spelled[stem] for stem in wanted - found)
    score = len(found) / len(wanted)
    reason = "Covers {}/{} question keywords ({})".format(
        len(found), len(wanted), ", ".join(sorted(spelled[stem] for stem in found)) or "none")
    if missing:
        shown = missing[:6]
        reason += "; missing: " + ", ".join(shown) + (" ..." if len(missing) > 6 else "")
    return MetricResult(score=round(score, 4), reason=reason)


def _direct(question: str, answer: str) -> MetricResult:
    text = answer.strip().lower()
    opening = _first_sentence(text)
    for pattern in REFUSAL_PATTERNS:
        if re.search(pattern, opening):
            return MetricResult(score=0.0, reason="Opens by refusing or deflecting the question")
    for pattern in HEDGE_PATTERNS:
        if re.search(pattern, opening):
            return MetricResult(score=0.3, reason="Opens with a hedge or filler instead of an answer")

    is_yes_no = False
    for sentence in re.split(r"(?<=[.!?])\s+", question.strip()):
        first = _words(sentence)[:1]
        if sentence.rstrip().endswith("?") and first and first[0] in YES_NO_STARTERS:
            is_yes_no = True
    if is_yes_no and re.match(r"^(?:yes|no|not really|not quite|nope|yep|sort of)\b", opening):
        return MetricResult(score=1.0, reason="Yes/no question answered with yes/no up front")
    if re.search(r"\b(?:the answer is|in short|short answer|simply put)\b", opening):
        return MetricResult(score=1.0, reason="Opening sentence states the answer explicitly")

    wanted = _content_stems(question)
    if not wanted:
        return MetricResult(score=0.5, reason="No question keywords to anchor a direct answer")
    hit = len(wanted & _content_stems(opening)) / len(wanted)
    if hit >= 0.34:
        return MetricResult(
            score=1.0,
            reason="Opening sentence addresses the question ({:.0%} of its keywords)".format(hit))
    if hit > 0:
        return MetricResult(
            score=0.6,
            reason="Opening sentence only touches the question ({:.0%} of its keywords)".format(hit))
    return MetricResult(score=0.2, reason="Opening sentence shares no keywords with the question")


def _length(answer: str) -> MetricResult:
    n = len(_words(answer))
    if n < 5:
        score, verdict = 0.1, "far too short"
    elif n < 20:
        score, verdict = 0.1 + 0.9 * (n - 5) / 15.0, "short"
    elif n <= 160:
        score, verdict = 1.0, "reasonable"
    elif n <= 320:
        score, verdict = 1.0 - 0.7 * (n - 160) / 160.0, "long"
    else:
        score, verdict = 0.3, "very long"
    return MetricResult(score=round(score, 4), reason="{} words: {}".format(n, verdict))


@reward_function
def evaluate(messages: List[Message], ground_truth=None, **kwargs) -> EvaluateResult:
    """Score how relevant the last assistant reply is to the last user question."""
    if not messages:
        return EvaluateResult(score=0.0, reason="No messages to evaluate", metrics={})
    question, answer = _last_turn(messages)
    if answer is None:
        return EvaluateResult(score=0.0, reason="No assistant reply with text content", metrics={})
    if question is None:
        return EvaluateResult(score=0.0, reason="No user question before the assistant reply", metrics={})

    metrics = {
        "keyword_coverage": _coverage(question, answer),
        "direct_answer": _direct(question, answer),
        "length_sanity": _length(answer),
    }
    score = sum(WEIGHTS[name] * metrics[name].score for name in WEIGHTS)
    weakest = min(WEIGHTS, key=lambda name: metrics[name].score)
    reason = "Relevance {:.2f} = 0.5*coverage {:.2f} + 0.3*direct {:.2f} + 0.2*length {:.2f}".format(
        score,
        metrics["keyword_coverage"].score,
        metrics["direct_answer"].score,
        metrics["length_sanity"].score,
    )
    if metrics[weakest].score < 0.5:
        reason += "; weakest: {} ({})".format(weakest, metrics[weakest].reason)
    return EvaluateResult(score=round(score, 4), reason=reason, metrics=metrics)
