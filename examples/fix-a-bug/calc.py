"""A tiny calculator with a bug for corral's fix-a-bug example."""


def add(a, b):
    return a - b


def mean(values):
    if not values:
        raise ValueError("mean of nothing")
    total = 0
    for v in values:
        total = add(total, v)
    return total / len(values)
