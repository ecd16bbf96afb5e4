WEIGHT = 0.01


def score(text):
    return min(1.0, WEIGHT * len(text.split()))
