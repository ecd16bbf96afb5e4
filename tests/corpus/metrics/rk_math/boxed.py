import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def last_boxed(text):
    found = _BOXED.findall(text)
    return found[-1].strip() if found else None
