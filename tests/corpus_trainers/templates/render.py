"""Renders conversations with each chat template of this folder the way Hugging Face's
`tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)` does,
using transformers' own renderer: the reference rwb's template rendering is compared with.

    python render.py [CHATS.json [TEMPLATE.json ...]] -> one JSON object on stdout:
        {"qwen2.5.json": [rendered, ...], "llama3.json": [...], ...}
    a chat the template refuses (Gemma 2 raises on a system turn) gives
        {"error": "<the template's message>"} in its place.

CHATS.json is a list of message lists; without it the built-in CHATS below are used.
The templates are the four real models' below unless named (edge_cases.json is rwb's
own, a template that reads the turns every way a template can).

How: `apply_chat_template` (transformers 5.x, tokenization_utils_base.py) merges the
tokenizer's `special_tokens_map` (bos_token, eos_token, pad_token, ...) with the call's
kwargs and hands them to `transformers.utils.chat_template_utils.render_jinja_template`,
which compiles the template in a sandboxed Jinja environment with trim_blocks and
lstrip_blocks, `raise_exception`, `tojson` and `strftime_now`. Calling that function
directly with the same kwargs gives the same text without a tokenizer file (a
PreTrainedTokenizerFast cannot be built from a tokenizer_config.json alone). Older
transformers (4.4x) render inline in apply_chat_template with the same environment; this
script falls back to that shape when render_jinja_template is missing.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = ["qwen2.5.json", "llama3.json", "gemma.json", "deepseek-r1-distill.json"]

# Conversations a reward corpus holds: one user turn, a system turn, a multi-turn
# history with an earlier assistant answer (DeepSeek's template drops its reasoning),
# text with markers and non-ASCII characters, and content that needs trimming.
CHATS = [
    [{"role": "user", "content": "What is 7 * 6?"}],
    [
        {"role": "system", "content": "Reason inside <think></think>, answer inside <answer></answer>."},
        {"role": "user", "content": "Using the numbers [3, 5, 7], create an equation that equals 22."},
    ],
    [
        {"role": "user", "content": "Name a prime larger than 10."},
        {"role": "assistant", "content": "<think>11 has no divisors.</think>11"},
        {"role": "user", "content": "And one larger than 20?"},
    ],
    [{"role": "user", "content": "  Café au lait costs €3 — and ½ of it?\n\n"}],
]


def special_tokens(config):
    """What `special_tokens_map` holds for a tokenizer with this config: the string
    special tokens (an AddedToken dict gives its `content`)."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            out[key] = value
    return out


def renderer():
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError:  # transformers 4.4x: the same environment, rendered inline
        from transformers.utils.chat_template_utils import _compile_jinja_template

        def render_jinja_template(conversations, chat_template, add_generation_prompt, **kwargs):
            compiled = _compile_jinja_template(chat_template)
            texts = [compiled.render(messages=c, tools=None, documents=None,
                                     add_generation_prompt=add_generation_prompt, **kwargs)
                     for c in conversations]
            return texts, []

    return render_jinja_template


def render(config, chat, render_fn=None):
    """One conversation rendered as apply_chat_template(tokenize=False,
    add_generation_prompt=True) renders it."""
    render_fn = render_fn or renderer()
    texts, _ = render_fn(
        conversations=[chat],
        chat_template=config["chat_template"],
        add_generation_prompt=True,
        **special_tokens(config),
    )
    return texts[0]


def load(name):
    path = name if os.path.isabs(name) else os.path.join(HERE, name)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    chats = CHATS
    if len(argv) > 1:
        with open(argv[1], encoding="utf-8") as f:
            chats = json.load(f)
    render_fn = renderer()
    out = {}
    for name in argv[2:] or TEMPLATES:
        config = load(name)
        rows = []
        for chat in chats:
            try:
                rows.append(render(config, chat, render_fn))
            except Exception as e:  # a template's raise_exception: the message is the fact
                rows.append({"error": str(e)})
        out[name] = rows
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
