"""kern-mine's expression text ("ceil_div(mul(n, 2), 4)", docs/mining.md)
as a manifest expression object (docs/manifest.md "Expressions":
u64 | {"sym"} | {"ceil_div": [e, u64]} | {"mul": [e, u64]}), the reference
`n` renamed to the manifest's symbol."""
import re

_TOKEN = re.compile(r'\s*(ceil_div|mul|\(|\)|,|[A-Za-z_][A-Za-z_0-9]*|\d+)')


def parse(text, sym_name, ref='n'):
    """The expression object; ValueError for text outside the closed set."""
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f'unexpected text at {pos} in {text!r}')
        tokens.append(m.group(1))
        pos = m.end()
    expr, rest = _expr(tokens, sym_name, ref, text)
    if rest:
        raise ValueError(f'trailing text in {text!r}')
    return expr


def _expr(t, sym_name, ref, text):
    if not t:
        raise ValueError(f'{text!r} ends early')
    head, rest = t[0], t[1:]
    if head.isdigit():
        return int(head), rest
    if head == ref:
        return {'sym': sym_name}, rest
    if head in ('ceil_div', 'mul'):
        if not rest or rest[0] != '(':
            raise ValueError(f'{head} without "(" in {text!r}')
        inner, rest = _expr(rest[1:], sym_name, ref, text)
        if len(rest) < 3 or rest[0] != ',' or not rest[1].isdigit() or rest[2] != ')':
            raise ValueError(f'{head} needs a constant right operand in {text!r}')
        return {head: [inner, int(rest[1])]}, rest[3:]
    raise ValueError(f'unknown name {head!r} in {text!r}')


def evaluate(e, value):
    """The expression object at symbol value `value` (for checks)."""
    if isinstance(e, int):
        return e
    if 'sym' in e:
        return value
    if 'mul' in e:
        return evaluate(e['mul'][0], value) * e['mul'][1]
    inner = evaluate(e['ceil_div'][0], value)
    return -(-inner // e['ceil_div'][1])
