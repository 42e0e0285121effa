"""Evaluates kern expression text ("ceil_div(mul(tokens, 4), 4)", "n", "16")
for the mining tests: parse once, evaluate at a symbol value."""
import re

_TOKEN = re.compile(r'\s*(ceil_div|mul|\(|\)|,|[A-Za-z_][A-Za-z0-9_]*|\d+)')


def parse(text):
    tokens = _TOKEN.findall(text)
    if ''.join(tokens).replace(' ', '') != text.replace(' ', ''):
        raise ValueError(f'not a kern expression: {text!r}')
    pos = 0

    def expr():
        nonlocal pos
        t = tokens[pos]
        pos += 1
        if t in ('ceil_div', 'mul'):
            assert tokens[pos] == '('
            pos += 1
            left = expr()
            assert tokens[pos] == ','
            pos += 1
            right = int(tokens[pos])
            pos += 1
            assert tokens[pos] == ')'
            pos += 1
            return (t, left, right)
        if t.isdigit():
            return ('const', int(t))
        return ('sym', t)

    tree = expr()
    if pos != len(tokens):
        raise ValueError(f'trailing text in {text!r}')
    return tree


def evaluate(tree, value):
    kind = tree[0]
    if kind == 'const':
        return tree[1]
    if kind == 'sym':
        return value
    left = evaluate(tree[1], value)
    return -(-left // tree[2]) if kind == 'ceil_div' else left * tree[2]


def same(a, b, lo, hi):
    """Whether expressions a and b (text) agree for every symbol value in [lo, hi]."""
    ta, tb = parse(a), parse(b)
    return all(evaluate(ta, v) == evaluate(tb, v) for v in range(lo, hi + 1))
