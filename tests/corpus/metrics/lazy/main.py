"""Imports its helper inside the function, as many published evaluators do to keep
module import cheap."""


def evaluate(messages, ground_truth=None, **kwargs):
    import lazy_helper

    text = messages[-1]["content"]
    return {"score": lazy_helper.score(text), "reason": "%d words" % len(text.split())}
