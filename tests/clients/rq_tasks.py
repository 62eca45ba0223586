"""Job functions for the python-rq check in clients_test.py (rq imports them by module path)."""


def add(a, b):
    return a + b


def shout(word):
    return {"word": word.upper(), "length": len(word)}


def divide(a, b):
    return a / b
